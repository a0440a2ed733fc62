#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The `web_fetch` tool through the real `scv-server`: web servers on
//! loopback named through `SCV_TEST_RESOLVE`, HTTPS with a test CA the
//! daemon trusts through `SSL_CERT_FILE`.

mod common;
#[path = "common/web.rs"]
mod web;
use common::*;

const RESOLVE: &str = "allowed.test=127.0.0.1,other.test=127.0.0.1,evil.wild.test=127.0.0.1";

/// A rig allowing `allowed.test` (exactly: it resolves to loopback) and
/// `*.wild.test`, trusting `ca`.
async fn rig(extra: &str, ca: Option<&str>) -> (Rig, String, Option<tempfile::TempDir>) {
    let dir = ca.map(|pem| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), pem).unwrap();
        dir
    });
    let ca_file = dir
        .as_ref()
        .map(|d| d.path().join("ca.pem").display().to_string());
    let mut env = vec![("SCV_TEST_RESOLVE", RESOLVE)];
    if let Some(file) = &ca_file {
        env.push(("SSL_CERT_FILE", file.as_str()));
    }
    let config = format!("sandbox_allowed_domains = [\"allowed.test\", \"*.wild.test\"]\n{extra}");
    let mut rig = Rig::with_env(&config, &env).await;
    let session = rig.session().await;
    (rig, session, dir)
}

/// Runs `web_fetch` calls without approvals; `(id, success, output)`.
async fn fetch_all(
    rig: &mut Rig,
    session: &str,
    urls: &[(&str, String)],
) -> Vec<(String, bool, String)> {
    let calls: Vec<(&str, &str, serde_json::Value)> = urls
        .iter()
        .map(|(id, url)| (*id, "web_fetch", json!({ "url": url })))
        .collect();
    rig.mock.push(Reply::tool_calls(&calls));
    rig.mock.push(Reply::text(["read"]));
    let events = rig.turn(session, "fetch").await;
    assert!(
        !types(&events).contains(&"approval.requested"),
        "an allowed host asked: {events:?}"
    );
    completed(&events)
}

fn find<'a>(results: &'a [(String, bool, String)], id: &str) -> &'a (String, bool, String) {
    results.iter().find(|(i, _, _)| i == id).unwrap()
}

#[tokio::test]
async fn pages_of_allowed_hosts_are_read_as_markdown_and_text_without_asking() {
    let (ca, tls) = web::test_ca(&["allowed.test"]);
    let http = web::serve(None).await;
    let https = web::serve(Some(tls)).await;
    let (mut rig, session, _ca) = rig("", Some(&ca)).await;
    let (p, s) = (http.port, https.port);
    let results = fetch_all(
        &mut rig,
        &session,
        &[
            ("page", format!("http://allowed.test:{p}/page")),
            ("tls", format!("https://allowed.test:{s}/hello")),
            ("binary", format!("http://allowed.test:{p}/binary")),
        ],
    )
    .await;
    let &(_, ok, ref page) = find(&results, "page");
    assert!(ok, "{page}");
    assert!(page.contains("# Release notes"), "{page}");
    assert!(
        page.contains("[the docs](https://example.org/docs)"),
        "{page}"
    );
    assert!(page.contains("```\ncargo build --release\n```"), "{page}");
    assert!(
        page.contains("| name  | size |") && page.contains("| alpha | 12   |"),
        "{page}"
    );
    assert!(!page.contains("var x"), "a script survived: {page}");
    let &(_, ok, ref tls) = find(&results, "tls");
    assert!(ok && tls.starts_with("hello over https"), "{tls}");
    let &(_, ok, ref binary) = find(&results, "binary");
    assert!(
        !ok && binary.contains("is `application/octet-stream`, not a web page or text"),
        "{binary}"
    );
    // No cookie is kept: every answer set one, none is sent back.
    let results = fetch_all(
        &mut rig,
        &session,
        &[("text", format!("http://allowed.test:{p}/text"))],
    )
    .await;
    let &(_, ok, ref text) = find(&results, "text");
    assert!(
        ok && text.starts_with("plain text, cookie sent: false"),
        "{text}"
    );
}

#[tokio::test]
async fn redirects_are_followed_only_to_allowed_hosts() {
    let http = web::serve(None).await;
    let (mut rig, session, _) = rig("", None).await;
    let p = http.port;
    let results = fetch_all(
        &mut rig,
        &session,
        &[
            (
                "inside",
                format!("http://allowed.test:{p}/redirect?to=/hello"),
            ),
            (
                "outside",
                format!("http://allowed.test:{p}/redirect?to=http://other.test:{p}/hello"),
            ),
            (
                "private",
                format!("http://allowed.test:{p}/redirect?to=http://evil.wild.test:{p}/hello"),
            ),
            (
                "userinfo",
                format!("http://allowed.test:{p}/redirect?to=http://me:pw@allowed.test:{p}/hello"),
            ),
        ],
    )
    .await;
    let &(_, ok, ref inside) = find(&results, "inside");
    assert!(ok && inside.starts_with("hello over http"), "{inside}");
    let &(_, ok, ref outside) = find(&results, "outside");
    assert!(!ok, "{outside}");
    assert!(
        outside.contains("refused other.test: not in sandbox_allowed_domains; to allow it, add \"other.test\" to sandbox_allowed_domains"),
        "{outside}"
    );
    let &(_, ok, ref private) = find(&results, "private");
    assert!(
        !ok && private.contains("resolves to 127.0.0.1, a private, loopback or link-local address"),
        "{private}"
    );
    let &(_, ok, ref userinfo) = find(&results, "userinfo");
    assert!(
        !ok && userinfo.contains("web_fetch sends no credentials"),
        "{userinfo}"
    );
    // Four redirects and the one allowed target: nothing else arrived.
    assert_eq!(http.hits(), 5);
}

#[tokio::test]
async fn huge_pages_are_cut_and_slow_ones_time_out() {
    let http = web::serve(None).await;
    let (mut rig, session, _) = rig(
        "web_fetch_max_bytes = 4096\nweb_fetch_timeout_ms = 1500",
        None,
    )
    .await;
    let p = http.port;
    let results = fetch_all(
        &mut rig,
        &session,
        &[
            ("huge", format!("http://allowed.test:{p}/huge")),
            ("slow", format!("http://allowed.test:{p}/slow")),
        ],
    )
    .await;
    let &(_, ok, ref huge) = find(&results, "huge");
    assert!(ok, "{huge}");
    assert!(huge.starts_with("0123456789abcdef\n"), "{huge}");
    assert!(
        huge.contains("[truncated: the page is longer than web_fetch_max_bytes (4096 bytes)"),
        "{huge}"
    );
    assert!(huge.len() < 4096 + 200, "{}", huge.len());
    let &(_, ok, ref slow) = find(&results, "slow");
    assert!(
        !ok && slow.contains("did not answer within web_fetch_timeout_ms (1500 ms)"),
        "{slow}"
    );
}

/// A host the list does not name asks first (risk `network`); once
/// approved, a name or address on loopback is still refused.
#[tokio::test]
async fn other_hosts_ask_and_private_addresses_are_refused_even_when_approved() {
    let http = web::serve(None).await;
    let (mut rig, session, _) = rig("", None).await;
    let p = http.port;
    for (id, url) in [
        ("name", format!("http://other.test:{p}/hello")),
        ("ip", format!("http://127.0.0.1:{p}/hello")),
    ] {
        rig.mock.push(Reply::tool_calls(&[(
            id,
            "web_fetch",
            json!({ "url": url }),
        )]));
        rig.mock.push(Reply::text(["read"]));
        rig.server.start_turn(&session, id, "fetch").await;
        let events = rig.server.until("approval.requested").await;
        let asked = events.last().unwrap().clone();
        assert_eq!(asked["risk"], "network", "{asked}");
        assert_eq!(asked["summary"], format!("Fetch {url}"), "{asked}");
        rig.server
            .send(
                json!({"type":"approval.resolve","request_id":"a","session_id": session,
                         "approval_id": asked["approval_id"],"approved":true}),
            )
            .await;
        let events = rig.server.until_terminal().await;
        let (_, ok, out) = completed(&events)[0].clone();
        assert!(!ok, "{out}");
        assert!(
            out.contains("a private, loopback or link-local address"),
            "{out}"
        );
    }
    assert_eq!(http.hits(), 0);
}
