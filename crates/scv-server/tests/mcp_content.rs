#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! MCP prompts and resources, end to end: the prompts and resources of an
//! MCP server written with the official Python SDK
//! (`tests/mcp/fake_server.py`, FastMCP's `@mcp.prompt` and
//! `@mcp.resource`) through the real `scv-server`: a prompt run as the
//! command `/mcp__fake__review …` (`turn.start.command`), a resource
//! attached by `@fake:guide://intro`, a prompt the server adds while
//! running (after `prompts/list_changed`) usable at once.
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

async fn rig() -> Option<(Rig, String)> {
    let python = python()?;
    let table = format!(
        "[mcp_servers.fake]\ncommand = {}\nargs = [{}, \"stdio\"]\nauto_approve = true\n",
        serde_json::to_string(&python.display().to_string()).unwrap(),
        serde_json::to_string(&script()).unwrap(),
    );
    let mut rig = Rig::new(&table).await;
    let session = rig.session().await;
    for _ in 0..80 {
        rig.mock.push(Reply::text(["hello"]));
        rig.turn(&session, "are the tools there").await;
        let tools = offered(&rig.mock, rig.mock.requests().len() - 1);
        if tools.iter().any(|t| t == "mcp__fake__add_prompt") {
            return Some((rig, session));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the fake server's tools were never offered");
}

/// Runs `prompt` as a command; the turn's events.
async fn command(rig: &mut Rig, session: &str, rid: &str, prompt: &str) -> Vec<Value> {
    rig.server
        .send(
            json!({"type":"turn.start","request_id":rid,"session_id":session,
                     "prompt":prompt,"command":true}),
        )
        .await;
    rig.server.until_terminal().await
}

/// The last user message the provider was sent.
fn last_user_message(rig: &Rig) -> String {
    let requests = rig.mock.requests();
    let body = &requests.last().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap()
}

#[tokio::test]
async fn a_servers_prompt_runs_as_a_command_with_its_arguments() {
    let Some((mut rig, session)) = rig().await else {
        return;
    };
    rig.mock.push(Reply::text(["ok"]));
    let events = command(
        &mut rig,
        &session,
        "p",
        "/mcp__fake__review src/main.rs tone=stern",
    )
    .await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    assert_eq!(
        last_user_message(&rig),
        "Review src/main.rs in a stern tone."
    );

    // A required argument missing, an unknown prompt: refused, said.
    rig.server
        .send(
            json!({"type":"turn.start","request_id":"m","session_id":session,
                     "prompt":"/mcp__fake__review","command":true}),
        )
        .await;
    let refused = rig.server.expect_error("invalid_request", "m").await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("missing path"),
        "{refused}"
    );
    rig.server
        .send(
            json!({"type":"turn.start","request_id":"u","session_id":session,
                     "prompt":"/mcp__fake__nope","command":true}),
        )
        .await;
    let refused = rig.server.expect_error("invalid_request", "u").await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("has no prompt `nope`"),
        "{refused}"
    );

    // A prompt the server adds while running is there at once.
    rig.mock.push(Reply::tool_calls(&[(
        "a",
        "mcp__fake__add_prompt",
        json!({"name": "essay"}),
    )]));
    rig.mock.push(Reply::text(["added"]));
    rig.turn(&session, "add one").await;
    rig.mock.push(Reply::text(["ok"]));
    let events = command(
        &mut rig,
        &session,
        "e",
        "/mcp__fake__essay the sea and the sky",
    )
    .await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    assert_eq!(last_user_message(&rig), "Write about the sea and the sky.");
}

#[tokio::test]
async fn a_mentioned_resource_is_attached_to_the_prompt() {
    let Some((mut rig, session)) = rig().await else {
        return;
    };
    rig.mock.push(Reply::text(["ok"]));
    rig.turn(
        &session,
        "summarize @fake:guide://intro, and mail me@example:x",
    )
    .await;
    let sent = last_user_message(&rig);
    assert!(
        sent.starts_with("summarize @fake:guide://intro, and mail me@example:x"),
        "{sent}"
    );
    assert!(
        sent.contains(
            "<mcp-resource server=\"fake\" uri=\"guide://intro\">\nThe intro text: read the guide first.\n</mcp-resource>"
        ),
        "{sent}"
    );
    // One that does not exist is said so, and the turn goes on.
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "and @fake:guide://missing").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let sent = last_user_message(&rig);
    assert!(
        sent.contains("(@fake:guide://missing could not be attached:"),
        "{sent}"
    );
}
