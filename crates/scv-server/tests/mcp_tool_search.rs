#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! MCP tools loaded when needed, end to end: a server written with the
//! official Python SDK carrying 100 tools (about 90 KiB of definitions,
//! `tests/mcp/wide_server.py`) through the real `scv-server` and the
//! scripted mock provider: the model is offered `mcp_tool_search`
//! instead of the tools, loads a few with it, calls one, and the offered
//! list keeps one order from request to request.
//!
//! Without the Python SDK the tests skip with a message; with
//! `SCV_REQUIRE_MCP` set (CI) they fail instead.

mod common;
use common::*;
use scv_test_support::mcp_python::python;
use std::path::Path;
use std::time::Duration;

const BUILTINS: [&str; 10] = [
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "search",
    "bash_output",
    "bash_kill",
    "web_fetch",
    "task",
];

#[tokio::test]
async fn many_mcp_tools_are_found_and_loaded_through_the_search_tool() {
    let Some(python) = python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/wide_server.py");
    let table = format!(
        "[mcp_servers.wide]\ncommand = {}\nargs = [{}]\nauto_approve = true\n",
        serde_json::to_string(&python.display().to_string()).unwrap(),
        serde_json::to_string(&script.display().to_string()).unwrap(),
    );
    let mut rig = Rig::new(&table).await;
    let session = rig.session().await;
    let mut first = Vec::new();
    for _ in 0..80 {
        rig.mock.push(Reply::text(["hello"]));
        rig.turn(&session, "are the tools there").await;
        first = offered(&rig.mock, rig.mock.requests().len() - 1);
        if first.iter().any(|t| t == "mcp_tool_search") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut expected: Vec<String> = BUILTINS.iter().map(|s| s.to_string()).collect();
    expected.push("mcp_tool_search".into());
    assert_eq!(first, expected, "none of the 100 tools is offered yet");

    rig.mock.push(Reply::tool_calls(&[(
        "s",
        "mcp_tool_search",
        json!({"query": "create invoice", "limit": 3}),
    )]));
    rig.mock.push(Reply::tool_calls(&[(
        "c",
        "mcp__wide__invoice_create",
        json!({"x": 7}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    let before = rig.mock.requests().len();
    let events = rig.turn(&session, "bill the customer").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    let results = completed(&events);
    assert!(results[0].1, "{results:?}");
    let listed = &results[0].2;
    assert!(listed.starts_with("Loaded"), "{listed}");
    assert!(listed.contains("mcp__wide__invoice_create"), "{listed}");
    assert_eq!(
        listed.lines().filter(|l| l.starts_with("- ")).count(),
        3,
        "{listed}"
    );
    assert_eq!(results[1], ("c".into(), true, "create invoice 7".into()));

    // The request after the search offers the loaded tools, by name,
    // after the search tool; the next turn offers the same list.
    let after = offered(&rig.mock, before + 1);
    assert_eq!(after[..expected.len()], expected[..], "{after:?}");
    let loaded = &after[expected.len()..];
    assert_eq!(loaded.len(), 3, "{after:?}");
    let mut sorted = loaded.to_vec();
    sorted.sort();
    assert_eq!(loaded, &sorted[..]);
    assert!(loaded.contains(&"mcp__wide__invoice_create".to_string()));
    rig.mock.push(Reply::text(["again"]));
    rig.turn(&session, "and now").await;
    let next = offered(&rig.mock, rig.mock.requests().len() - 1);
    assert_eq!(next, after);
}
