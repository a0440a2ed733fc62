#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The 2026-07-28 revision of MCP, negotiated: a server written with the
//! official Python SDK's 2.x line (`mcp==2.3.0`, `tests/mcp/modern_server.py`,
//! which serves both eras) is reached without `initialize`, over stdio and
//! over streamable HTTP, and its tool reports the revision each call came
//! in; a 1.x server (`mcp==1.30.0`, `fake_server.py`) in the same session
//! keeps 2025-11-25 and its handshake. A question asked mid-call comes
//! back as an `input_required` result, is asked of the session's client
//! as any elicitation is, and the call is made again with the answer. A
//! tool the server adds is told on SCV's `subscriptions/listen` stream.
//!
//! Without the SDKs the tests skip with a message; with `SCV_REQUIRE_MCP`
//! set (CI) they fail instead.

mod common;
use common::*;
use scv_test_support::mcp_python::{python, python2};
use std::path::Path;
use std::time::Duration;

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(name)
        .display()
        .to_string()
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// Turns until `tool` is offered (the servers start in the background).
async fn ready(rig: &mut Rig, session: &str, tools: &[&str]) {
    for _ in 0..120 {
        rig.mock.push(Reply::text(["hello"]));
        rig.turn(session, "are the tools there").await;
        let offered = offered(&rig.mock, rig.mock.requests().len() - 1);
        if tools.iter().all(|t| offered.iter().any(|o| o == t)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{tools:?} were never all offered");
}

/// One turn whose model calls `calls` (auto-approved); each call's
/// `(id, success, output)`.
async fn call(
    rig: &mut Rig,
    session: &str,
    calls: &[(&str, &str, Value)],
) -> Vec<(String, bool, String)> {
    rig.mock.push(Reply::tool_calls(calls));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(session, "use the tools").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    completed(&events)
}

struct HttpServer(std::process::Child);

impl HttpServer {
    async fn start(python: &Path, port: u16) -> HttpServer {
        let child = std::process::Command::new(python)
            .args([&script("modern_server.py"), "http", &port.to_string()])
            .stderr(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let server = HttpServer(child);
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the HTTP MCP server did not listen on {port}");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn stdio_table(name: &str, python: &Path, script_name: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}, \"stdio\"]\nauto_approve = true\n",
        quoted(&python.display().to_string()),
        quoted(&script(script_name)),
    )
}

#[tokio::test]
async fn a_2026_server_is_reached_without_initialize_and_a_2025_one_keeps_it() {
    let (Some(modern), Some(legacy)) = (python2(), python()) else {
        return;
    };
    let table = format!(
        "{}{}",
        stdio_table("modern", &modern, "modern_server.py"),
        stdio_table("old", &legacy, "fake_server.py"),
    );
    let mut rig = Rig::new(&table).await;
    let session = rig.session().await;
    ready(&mut rig, &session, &["mcp__modern__era", "mcp__old__echo"]).await;
    let results = call(
        &mut rig,
        &session,
        &[
            ("r", "mcp__modern__era", json!({})),
            ("a", "mcp__modern__add", json!({"a": 2, "b": 3})),
            ("o", "mcp__old__echo", json!({"text": "still here"})),
        ],
    )
    .await;
    assert_eq!(results[0], ("r".into(), true, "era: 2026-07-28".into()));
    assert_eq!(results[1], ("a".into(), true, "5".into()));
    assert_eq!(results[2], ("o".into(), true, "still here".into()));
}

#[tokio::test]
async fn a_2026_server_over_streamable_http_is_reached_without_initialize() {
    let Some(modern) = python2() else { return };
    let port = free_port();
    let _http = HttpServer::start(&modern, port).await;
    let table =
        format!("[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nauto_approve = true\n");
    let mut rig = Rig::new(&table).await;
    let session = rig.session().await;
    ready(&mut rig, &session, &["mcp__web__era"]).await;
    let results = call(&mut rig, &session, &[("r", "mcp__web__era", json!({}))]).await;
    assert_eq!(results[0], ("r".into(), true, "era: 2026-07-28".into()));
}

#[tokio::test]
async fn an_input_required_result_is_asked_of_the_client_and_the_call_retried() {
    let Some(modern) = python2() else { return };
    let table = stdio_table("modern", &modern, "modern_server.py");
    let mut rig = Rig::with_capabilities(&table, json!({"elicitation": true})).await;
    let (_, session) = rig.start(json!({"cwd": rig.home.workspace()})).await;
    ready(&mut rig, &session, &["mcp__modern__greet"]).await;

    rig.mock
        .push(Reply::tool_calls(&[("g", "mcp__modern__greet", json!({}))]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(&session, "t", "greet me").await;
    let asked = rig
        .server
        .until("elicitation.requested")
        .await
        .pop()
        .unwrap();
    assert_eq!(asked["server"], "modern");
    assert_eq!(asked["message"], "What is your name?");
    assert_eq!(asked["schema"]["properties"]["name"]["type"], "string");
    rig.server
        .send(
            json!({"type":"elicitation.resolve","request_id":"e","session_id":session,
            "elicitation_id":asked["elicitation_id"],"action":"accept","content":{"name":"Ada"}}),
        )
        .await;
    let events = rig.server.until_terminal().await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    assert_eq!(
        completed(&events)[0],
        ("g".into(), true, "hello Ada".into())
    );

    // Declined: the server's call ends without a name, and says so.
    rig.mock
        .push(Reply::tool_calls(&[("g", "mcp__modern__greet", json!({}))]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(&session, "t2", "greet me").await;
    let asked = rig
        .server
        .until("elicitation.requested")
        .await
        .pop()
        .unwrap();
    rig.server
        .send(
            json!({"type":"elicitation.resolve","request_id":"e2","session_id":session,
            "elicitation_id":asked["elicitation_id"],"action":"decline"}),
        )
        .await;
    let events = rig.server.until_terminal().await;
    let done = completed(&events);
    assert!(!done[0].1 || !done[0].2.contains("hello"), "{done:?}");
}

#[tokio::test]
async fn a_tool_added_at_run_time_is_told_on_the_subscription_and_offered() {
    let Some(modern) = python2() else { return };
    let table = stdio_table("modern", &modern, "modern_server.py");
    let mut rig = Rig::new(&table).await;
    let session = rig.session().await;
    ready(&mut rig, &session, &["mcp__modern__grow"]).await;
    let results = call(
        &mut rig,
        &session,
        &[("g", "mcp__modern__grow", json!({"name": "sprout"}))],
    )
    .await;
    assert_eq!(results[0], ("g".into(), true, "added sprout".into()));
    ready(&mut rig, &session, &["mcp__modern__sprout"]).await;
    let results = call(
        &mut rig,
        &session,
        &[("s", "mcp__modern__sprout", json!({}))],
    )
    .await;
    assert_eq!(results[0], ("s".into(), true, "sprout is here".into()));
}
