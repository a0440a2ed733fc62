#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `scv exec` with subagents, against the real daemon and the mock
//! provider: the parent's first response calls `task`, the child's
//! requests come next (with a system prompt of its own), then the
//! parent's answer.

mod common;
use common::*;

/// The parent calls `task`; the child reads a file, is denied a shell
/// command (exec's default), answers; the parent answers. `marker`: what
/// the denied command would have made.
fn script(mock: &MockProvider, marker: &std::path::Path) {
    mock.push(Reply::tool_calls(&[(
        "t1",
        "task",
        json!({"description": "find the answer", "prompt": "CHILD-PROMPT: what is in a.txt?"}),
    )]));
    mock.push(Reply::tool_calls(&[
        ("k1", "read_file", json!({"path": "a.txt"})),
        (
            "k2",
            "bash",
            json!({"command": format!("touch {}", marker.display())}),
        ),
    ]));
    mock.push(Reply::text(["CHILD-ANSWER: a.txt says forty-two."]));
    mock.push(Reply::text(["It is 42."]));
}

fn lines(output: &std::process::Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_json_carries_the_childs_events_with_their_parent() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    std::fs::write(home.workspace().join("a.txt"), "forty-two\n").unwrap();
    let marker = home.workspace().join("made-by-the-child");
    script(&mock, &marker);
    let output = home
        .scv()
        .args(["exec", "--json", "ask a subagent"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let events = lines(&output);
    let session = events
        .iter()
        .find(|e| e["type"] == "session.started")
        .unwrap()["session_id"]
        .clone();
    let (children, own): (Vec<&Value>, Vec<&Value>) =
        events.iter().partition(|e| e.get("parent").is_some());
    // The child's events, in order, all naming the task call.
    let first = children[0];
    assert_eq!(first["type"], "subagent.started", "{first}");
    assert_eq!(first["description"], "find the answer");
    assert_eq!(first["depth"], 1);
    assert_eq!(first["seq"], 0);
    let child = first["session_id"].clone();
    assert_ne!(child, session);
    for event in &children {
        assert_eq!(event["session_id"], child, "{event}");
        assert_eq!(event["parent"]["session_id"], session, "{event}");
        assert_eq!(event["parent"]["call_id"], "t1", "{event}");
    }
    let types: Vec<&str> = children
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types[1], "turn.started");
    assert_eq!(*types.last().unwrap(), "turn.completed");
    for kind in ["tool.proposed", "tool.started", "approval.requested"] {
        assert!(types.contains(&kind), "{types:?}");
    }
    // The parent's own events: the task call, then its answer; its turn
    // is the last line.
    assert!(own
        .iter()
        .all(|e| e["session_id"] == session || e["type"] == "initialized"));
    let task_done = own
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["call_id"] == "t1")
        .unwrap();
    assert_eq!(task_done["success"], true, "{task_done}");
    assert!(task_done["output"]
        .as_str()
        .unwrap()
        .contains("CHILD-ANSWER: a.txt says forty-two."));
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn.completed");
    assert!(last.get("parent").is_none());
    assert!(!marker.exists(), "the child's shell command was denied");
    // The child asked with a system prompt of its own.
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert_ne!(
        requests[0].body["messages"][0]["content"],
        requests[1].body["messages"][0]["content"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_text_shows_a_child_as_lines_on_stderr_and_only_the_parents_answer() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    std::fs::write(home.workspace().join("a.txt"), "forty-two\n").unwrap();
    let marker = home.workspace().join("made-by-the-child");
    script(&mock, &marker);
    let output = home
        .scv()
        .args(["exec", "ask a subagent"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "It is 42.\n", "never the child's text");
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().skip(1).collect(); // [session] ID
    assert_eq!(lines[0], "[tool] task running: «find the answer»", "{err}");
    assert!(
        lines[1].starts_with("[subagent] «find the answer» (agent general-purpose, model ")
            && lines[1].ends_with(") started"),
        "{err}"
    );
    let touch = format!("touch {}", marker.display());
    assert_eq!(
        lines[2..8],
        [
            "  «find the answer» [tool] read_file running: a.txt",
            "  «find the answer» [tool] read_file done: a.txt",
            "    |      1\tforty-two",
            &format!("  [denied] Run shell command: {touch}"),
            "  [denied: allow with --approve process]",
            &format!("  «find the answer» [tool] bash denied, not run: {touch}"),
        ],
        "{err}"
    );
    assert!(
        lines[8].starts_with("[subagent] «find the answer» completed (2 steps, ")
            && lines[8].ends_with(" tokens)"),
        "{err}"
    );
    assert_eq!(lines[9], "[tool] task done: «find the answer»", "{err}");
    assert_eq!(
        lines[10], "  | CHILD-ANSWER: a.txt says forty-two.",
        "{err}"
    );
    assert!(!marker.exists());
}
