#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `scv clawbot …` against the fake iLink server and the real daemon.

mod common;
use common::*;
use scv_ilink::{AccountStore, Credentials};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::{Output, Stdio};

fn login(home: &Home, ilink: &FakeIlink, account: &str, stdin: &str) -> Output {
    let mut child = home
        .clawbot_login(ilink, account)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn login_follows_every_status_to_confirmed() {
    let mock = MockProvider::start().await;
    let ilink = FakeIlink::start().await;
    ilink.allow_token("tok-1");
    let home = Home::new(&mock, "");
    for status in [
        json!({"status":"wait"}),
        json!({"status":"scaned"}),
        json!({"status":"need_verifycode"}),
        json!({"status":"scaned_but_redirect","redirect_host":ilink.host()}),
        qr_confirmed(&ilink, "bot@im.bot"),
    ] {
        ilink.qr_status(status);
    }
    let output = login(&home, &ilink, "default", "424242\n");
    let out = text(&output);
    assert!(output.status.success(), "{out}");
    assert!(
        out.contains("https://liteapp.weixin.qq.com/q/fake-1"),
        "the URL is shown under the code: {out}"
    );
    assert!(
        out.contains('█') || out.contains('▀'),
        "a QR code is drawn: {out}"
    );
    assert!(out.contains("Scanned"), "{out}");
    assert!(out.contains("Enter the digits"), "{out}");
    assert!(
        out.contains("Logged in: bot bot@im.bot (owner owner@im.wechat)"),
        "{out}"
    );
    assert!(
        out.contains("clawbot:default"),
        "the daemon was asked to reload: {out}"
    );
    let polls = ilink.calls("ilink/bot/get_qrcode_status");
    assert!(
        polls.iter().any(|c| c.query.contains("verify_code=424242")),
        "the code was sent"
    );
    let store = AccountStore::new(home.path());
    let credentials = store.credentials("default").unwrap();
    assert_eq!(credentials.bot_token, "tok-1");
    assert_eq!(credentials.user_id.as_deref(), Some("owner@im.wechat"));
    assert_eq!(credentials.base_url, ilink.base_url());
    let mode = std::fs::metadata(store.dir("default").join("credentials.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(store.settings("default").enabled);
    // The daemon picked the account up and made contact.
    assert!(
        ilink
            .wait_until(|f| !f.calls("ilink/bot/getupdates").is_empty())
            .await
    );
}

/// l03: the login server chooses the QR URL; what it puts there is shown,
/// never sent to the terminal raw (OSC 52, a screen clear, a title).
#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_qr_url_reaches_the_terminal_only_as_visible_symbols() {
    let mock = MockProvider::start().await;
    let ilink = FakeIlink::start().await;
    ilink.allow_token("tok-1");
    let home = Home::new(&mock, "");
    let hostile = "https://x.example/q\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}[2J\u{9b}0m";
    ilink.fault(
        "ilink/bot/get_bot_qrcode",
        scv_test_support::fake_ilink::Fault::Reply(
            json!({"ret": 0, "qrcode": "qr-h", "qrcode_img_content": hostile}),
        ),
    );
    ilink.qr_status(qr_confirmed(&ilink, "bot@im.bot"));
    let output = login(&home, &ilink, "default", "");
    let out = text(&output);
    assert!(output.status.success(), "{out}");
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{9b}') && !out.contains('\u{7}'),
        "{out:?}"
    );
    assert!(
        out.contains("https://x.example/q␛]52;c;cHduZWQ=␇␛[2J"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_codes_are_renewed_at_most_three_times() {
    let mock = MockProvider::start().await;
    let ilink = FakeIlink::start().await;
    let home = Home::new(&mock, "");
    for _ in 0..3 {
        ilink.qr_status(json!({"status":"expired"}));
    }
    let output = login(&home, &ilink, "default", "");
    assert!(!output.status.success());
    assert!(
        text(&output).contains("expired 3 times"),
        "{}",
        text(&output)
    );
    assert_eq!(ilink.calls("ilink/bot/get_bot_qrcode").len(), 3);

    ilink.allow_token("tok-1");
    ilink.qr_status(json!({"status":"expired"}));
    ilink.qr_status(qr_confirmed(&ilink, "bot@im.bot"));
    let output = login(&home, &ilink, "default", "");
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("here is a new one"));
}

#[tokio::test(flavor = "multi_thread")]
async fn already_bound_changes_nothing_and_a_blocked_code_starts_over() {
    let mock = MockProvider::start().await;
    let ilink = FakeIlink::start().await;
    let home = Home::new(&mock, "");
    ilink.qr_status(json!({"status":"verify_code_blocked"}));
    ilink.qr_status(json!({"status":"binded_redirect"}));
    let output = login(&home, &ilink, "default", "");
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("starting over"));
    assert!(text(&output).contains("already bound"));
    assert_eq!(ilink.calls("ilink/bot/get_bot_qrcode").len(), 2);
    assert!(AccountStore::new(home.path())
        .credentials("default")
        .is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_login_for_a_bot_another_account_holds_replaces_it() {
    let mock = MockProvider::start().await;
    let ilink = FakeIlink::start().await;
    ilink.allow_token("tok-1");
    let home = Home::new(&mock, "");
    let store = AccountStore::new(home.path());
    store
        .save_credentials(
            "old",
            &Credentials {
                bot_token: "stale".into(),
                bot_id: "bot@im.bot".into(),
                user_id: None,
                base_url: ilink.base_url(),
                saved_at: 1,
            },
        )
        .unwrap();
    ilink.qr_status(qr_confirmed(&ilink, "bot@im.bot"));
    let output = login(&home, &ilink, "work", "");
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("Account `old` held this bot"));
    assert_eq!(store.accounts(), ["work"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn enable_disable_status_and_logout_go_through_the_daemon() {
    let mock = MockProvider::start().await;
    let ilink = FakeIlink::start().await;
    ilink.allow_token("tok-1");
    let home = Home::new(&mock, "");
    let store = AccountStore::new(home.path());
    store
        .save_credentials(
            "default",
            &Credentials {
                bot_token: "tok-1".into(),
                bot_id: "bot@im.bot".into(),
                user_id: Some("o@im.wechat".into()),
                base_url: ilink.base_url(),
                saved_at: 1,
            },
        )
        .unwrap();
    let workspace = home.workspace();
    let output = home
        .scv()
        .args([
            "clawbot",
            "enable",
            "--workspace",
            workspace.to_str().unwrap(),
            "--remote-tools",
            "owner",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("clawbot:default"));
    let settings = store.settings("default");
    assert!(settings.enabled);
    assert_eq!(settings.remote_tools, "owner");
    assert_eq!(
        settings.workspace.as_deref(),
        Some(workspace.to_str().unwrap())
    );

    let output = home
        .scv()
        .args(["clawbot", "status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(status["status"]["components"][0]["remote_tools"], "owner");
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("tok-1"),
        "no token in status"
    );

    let output = home.scv().args(["clawbot", "disable"]).output().unwrap();
    assert!(text(&output).contains("Disabled"), "{}", text(&output));
    assert!(!store.settings("default").enabled);

    let output = home
        .scv()
        .args(["clawbot", "enable", "--workspace", "/definitely/not/here"])
        .output()
        .unwrap();
    assert!(!output.status.success());

    let output = home.scv().args(["clawbot", "logout"]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).contains("components: none"));
    assert!(store.accounts().is_empty());
}
