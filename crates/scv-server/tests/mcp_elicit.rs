#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Elicitation, end to end: an MCP server written with the official
//! Python SDK (`tests/mcp/fake_server.py`, FastMCP's `ctx.elicit` and
//! `ctx.elicit_url`) asks during a tool call; the real `scv-server` sends
//! `elicitation.requested` to a connection that asked for capability
//! `elicitation` and passes its `elicitation.resolve` back; content that
//! does not match the form is refused and the question stays open.
//!
//! Without the Python SDK the tests skip with a message; with
//! `SCV_REQUIRE_MCP` set (CI) they fail instead.

mod common;
use common::*;
use scv_test_support::mcp_python::python;
use std::path::Path;
use std::time::Duration;

fn script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp/fake_server.py")
        .display()
        .to_string()
}

/// A rig (asking for `capabilities`) whose fake server is up, and a
/// session in it.
async fn rig(capabilities: Value) -> Option<(Rig, String)> {
    let python = python()?;
    let table = format!(
        "[mcp_servers.fake]\ncommand = {}\nargs = [{}, \"stdio\"]\nauto_approve = true\n",
        serde_json::to_string(&python.display().to_string()).unwrap(),
        serde_json::to_string(&script()).unwrap(),
    );
    let mut rig = Rig::with_capabilities(&table, capabilities).await;
    let (_, session) = rig.start(json!({"cwd": rig.home.workspace()})).await;
    for _ in 0..80 {
        rig.mock.push(Reply::text(["hello"]));
        rig.turn(&session, "are the tools there").await;
        let tools = offered(&rig.mock, rig.mock.requests().len() - 1);
        if tools.iter().any(|t| t == "mcp__fake__ask_form") {
            return Some((rig, session));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the fake server's tools were never offered");
}

/// Starts a turn whose model calls `tool` once, and waits for the
/// server's question.
async fn ask(rig: &mut Rig, session: &str, tool: &str, arguments: Value) -> Value {
    rig.mock.push(Reply::tool_calls(&[("q", tool, arguments)]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(session, "t", "ask me").await;
    let event = rig
        .server
        .until("elicitation.requested")
        .await
        .pop()
        .unwrap();
    assert_eq!(event["session_id"], session);
    assert!(event["turn_id"].is_string(), "{event}");
    assert!(event["seq"].is_u64(), "{event}");
    assert_eq!(event["server"], "fake");
    event
}

async fn resolve(rig: &mut Rig, session: &str, id: &Value, rid: &str, answer: Value) {
    let mut message = json!({"type":"elicitation.resolve","request_id":rid,
        "session_id":session,"elicitation_id":id});
    for (key, value) in answer.as_object().unwrap() {
        message[key] = value.clone();
    }
    rig.server.send(message).await;
}

/// The turn's tool result, once it ends.
async fn result(rig: &mut Rig) -> (bool, String) {
    let events = rig.server.until_terminal().await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    let done = completed(&events);
    assert_eq!(done.len(), 1, "{events:?}");
    (done[0].1, done[0].2.clone())
}

#[tokio::test]
async fn a_form_is_asked_checked_against_its_schema_and_answered() {
    let Some((mut rig, session)) = rig(json!({"elicitation": true})).await else {
        return;
    };
    let asked = ask(
        &mut rig,
        &session,
        "mcp__fake__ask_form",
        json!({"question": "Who are you?"}),
    )
    .await;
    assert_eq!(asked["message"], "Who are you?");
    let schema = &asked["schema"];
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["properties"]["age"]["type"], "integer");
    assert!(asked.get("url").is_none(), "{asked}");
    let id = asked["elicitation_id"].clone();

    // Content that does not match: refused, the question stays open.
    resolve(
        &mut rig,
        &session,
        &id,
        "bad",
        json!({"action":"accept","content":{"name":"Ada","age":"old"}}),
    )
    .await;
    let refused = rig.server.expect_error("invalid_request", "bad").await;
    assert!(
        refused["message"].as_str().unwrap().contains("`age`"),
        "{refused}"
    );
    // An unknown id: refused too, nothing else changes.
    resolve(
        &mut rig,
        &session,
        &json!("nope"),
        "unknown",
        json!({"action":"decline"}),
    )
    .await;
    rig.server.expect_error("invalid_request", "unknown").await;

    resolve(
        &mut rig,
        &session,
        &id,
        "good",
        json!({"action":"accept","content":{"name":"Ada","age":36}}),
    )
    .await;
    let (success, output) = result(&mut rig).await;
    assert!(success, "{output}");
    assert_eq!(output, r#"form: accept {"age": 36, "name": "Ada"}"#);
    // Answered: the id is gone.
    resolve(
        &mut rig,
        &session,
        &id,
        "again",
        json!({"action":"decline"}),
    )
    .await;
    rig.server.expect_error("invalid_request", "again").await;
}

#[tokio::test]
async fn a_link_is_passed_on_and_a_decline_or_cancel_reaches_the_server() {
    let Some((mut rig, session)) = rig(json!({"elicitation": true})).await else {
        return;
    };
    let asked = ask(&mut rig, &session, "mcp__fake__ask_url", json!({})).await;
    assert_eq!(asked["url"], "https://example.com/connect?id=7");
    assert_eq!(asked["message"], "Connect your account");
    assert!(asked.get("schema").is_none(), "{asked}");
    resolve(
        &mut rig,
        &session,
        &asked["elicitation_id"],
        "r",
        json!({"action":"decline"}),
    )
    .await;
    assert_eq!(result(&mut rig).await, (true, "url: decline".into()));

    let asked = ask(
        &mut rig,
        &session,
        "mcp__fake__ask_form",
        json!({"question": "Name?"}),
    )
    .await;
    resolve(
        &mut rig,
        &session,
        &asked["elicitation_id"],
        "c",
        json!({"action":"cancel"}),
    )
    .await;
    assert_eq!(result(&mut rig).await, (true, "form: cancel null".into()));
}

#[tokio::test]
async fn without_the_capability_questions_are_declined_and_resolve_is_refused() {
    let Some((mut rig, session)) = rig(json!({"reasoning": true})).await else {
        return;
    };
    rig.mock.push(Reply::tool_calls(&[(
        "q",
        "mcp__fake__ask_form",
        json!({"question": "Who?"}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(&session, "ask me").await;
    assert!(
        events.iter().all(|e| e["type"] != "elicitation.requested"),
        "{events:?}"
    );
    let done = completed(&events);
    assert_eq!(done[0].2, "form: decline null");
    resolve(
        &mut rig,
        &session,
        &json!("x"),
        "r",
        json!({"action":"decline"}),
    )
    .await;
    let refused = rig.server.expect_error("invalid_request", "r").await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("capability `elicitation`"),
        "{refused}"
    );
}
