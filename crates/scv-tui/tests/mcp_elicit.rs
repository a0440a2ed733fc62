#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! MCP elicitation in the front ends of `scv`, end to end: an MCP server
//! written with the official Python SDK (`scv-server/tests/mcp/
//! fake_server.py`: FastMCP's `ctx.elicit` and `ctx.elicit_url`) asks
//! during a tool call the mock model makes; `scv exec --elicit` asks on
//! the terminal (answers piped into its stdin), `scv exec` without it
//! declines and says so, and the terminal UI (in tmux) shows a form.
//! What the server got back is what its tool answers, which the model
//! sees in its next request.
//!
//! Without the Python SDK the tests skip with a message; with
//! `SCV_REQUIRE_MCP` set (CI) they fail instead.

mod common;
use common::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn fake_server() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scv-server/tests/mcp/fake_server.py")
        .display()
        .to_string()
}

/// A home whose config runs the fake server as `fake`, once the daemon
/// has it connected.
async fn home_with_fake(mock: &MockProvider) -> Option<Home> {
    let python = scv_test_support::mcp_python::python()?;
    let table = format!(
        "[mcp_servers.fake]\ncommand = {}\nargs = [{}, \"stdio\"]\nauto_approve = true\n",
        serde_json::to_string(&python.display().to_string()).unwrap(),
        serde_json::to_string(&fake_server()).unwrap(),
    );
    let home = Home::new(mock, &table);
    for _ in 0..150 {
        let output = home.scv().args(["mcp", "list"]).output().unwrap();
        let listed = stdout(&output);
        if listed
            .lines()
            .any(|l| l.starts_with("fake ") && l.contains("connected"))
        {
            return Some(home);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the fake MCP server never connected");
}

/// `scv exec ARGS` with `stdin` piped in; its stdout and stderr.
fn exec(home: &Home, args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = home
        .scv()
        .arg("exec")
        .args(args)
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
    let output = child.wait_with_output().unwrap();
    (output.status.success(), stdout(&output), stderr(&output))
}

/// The tool result the model got in its last request.
fn tool_result(mock: &MockProvider) -> String {
    let requests = mock.requests();
    let body = &requests.last().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("no tool result in {body}"))
}

fn asks(mock: &MockProvider, tool: &str, arguments: Value) {
    mock.push(Reply::tool_calls(&[("q", tool, arguments)]));
    mock.push(Reply::text(["done"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_with_elicit_fills_the_form_on_the_terminal_field_by_field() {
    let mock = MockProvider::start().await;
    let Some(home) = home_with_fake(&mock).await else {
        return;
    };
    asks(
        &mock,
        "mcp__fake__ask_form",
        json!({"question": "Who are you?"}),
    );
    // y fills it in, field by field in the schema's order (name, age):
    // name "A" is too short, age "old" not a whole number.
    let (ok, out, err) = exec(&home, &["--elicit", "ask me"], "y\nA\nAda\nold\n36\n");
    assert!(ok, "{err}");
    assert_eq!(out, "done\n");
    assert!(
        err.contains("[elicitation] MCP server `fake` asks: Who are you?"),
        "{err}"
    );
    assert!(err.contains("`age` must be a whole number"), "{err}");
    assert!(
        err.contains("`name` must be at least 2 characters"),
        "{err}"
    );
    assert_eq!(
        tool_result(&mock),
        r#"form: accept {"age": 36, "name": "Ada"}"#
    );

    // A link: shown, and `n` declines it.
    asks(&mock, "mcp__fake__ask_url", json!({}));
    let (ok, _, err) = exec(&home, &["--elicit", "connect"], "n\n");
    assert!(ok, "{err}");
    assert!(err.contains("https://example.com/connect?id=7"), "{err}");
    assert_eq!(tool_result(&mock), "url: decline");

    // No answer at all (the input ends): cancelled.
    asks(&mock, "mcp__fake__ask_form", json!({"question": "Name?"}));
    let (ok, _, err) = exec(&home, &["--elicit", "ask again"], "");
    assert!(ok, "{err}");
    assert_eq!(tool_result(&mock), "form: cancel null");
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_without_elicit_declines_at_once_and_says_how_to_answer() {
    let mock = MockProvider::start().await;
    let Some(home) = home_with_fake(&mock).await else {
        return;
    };
    asks(
        &mock,
        "mcp__fake__ask_form",
        json!({"question": "Who are you?"}),
    );
    // Input there to read: none of it is taken as an answer.
    let (ok, out, err) = exec(&home, &["ask me"], "y\n36\nAda\n");
    assert!(ok, "{err}");
    assert_eq!(out, "done\n");
    assert!(
        err.contains("MCP server `fake` asked: Who are you? — declined (scv exec --elicit"),
        "{err}"
    );
    assert_eq!(tool_result(&mock), "form: decline null");
}
