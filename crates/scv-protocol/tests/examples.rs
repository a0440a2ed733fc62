#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Round trips for every example line of the protocol document: each parses
//! into its typed form and serializes back to the same JSON value.
//!
//! The lines are copied here so the test needs nothing outside the repo;
//! `document_examples_are_all_listed` checks the copy against the document
//! when `shared/` sits beside the checkout.

use scv_protocol::{ClientFrame, Event};
use serde_json::Value;

const CLIENT_EXAMPLES: &[&str] = &[
    r#"{"type":"initialize","request_id":"1","protocol_version":2,"client":{"name":"scv-tui","version":"0.1.19"}}"#,
    r#"{"type":"daemon.control","request_id":"d1","command":{"action":"status"}}"#,
    r#"{"type":"daemon.control","request_id":"d2","command":{"action":"reload"}}"#,
    r#"{"type":"daemon.control","request_id":"d3","command":{"action":"clawbot_set","account":"default","enabled":true,"workspace":"/workspace/project","remote_tools":"owner"}}"#,
    r#"{"type":"daemon.control","request_id":"d4","command":{"action":"clawbot_set","account":"default","enabled":false,"workspace":null}}"#,
    r#"{"type":"daemon.control","request_id":"d5","command":{"action":"clawbot_logout","account":"default"}}"#,
    r#"{"type":"session.start","request_id":"2","cwd":"/workspace/project"}"#,
    r#"{"type":"turn.start","request_id":"3","session_id":"...","prompt":"Fix the failing test."}"#,
    r#"{"type":"queue.update","request_id":"4","session_id":"...","queue_id":"...","revision":2,"prompt":"Run the focused tests after the fix."}"#,
    r#"{"type":"queue.move","request_id":"5","session_id":"...","queue_id":"...","revision":3,"before_queue_id":"..."}"#,
    r#"{"type":"queue.remove","request_id":"6","session_id":"...","queue_id":"...","revision":3}"#,
    r#"{"type":"session.pause","request_id":"7","session_id":"...","paused":true}"#,
    r#"{"type":"turn.cancel","request_id":"4","session_id":"...","turn_id":"..."}"#,
    r#"{"type":"approval.resolve","request_id":"5","session_id":"...","approval_id":"...","approved":true}"#,
    r#"{"type":"session.clear","request_id":"6","session_id":"..."}"#,
];

const SERVER_EXAMPLES: &[&str] = &[
    r#"{"type":"initialized","request_id":"1","protocol_version":2,"server":{"name":"scv-server","version":"0.1.19"}}"#,
    r#"{"type":"session.started","request_id":"2","session_id":"...","cwd":"/workspace/project","model":"gpt-4.1-mini","context_max_tokens":128000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,"max_transcript_items":10000,"max_prompt_history_bytes":1048576,"max_prompt_history_items":200}"#,
    r#"{"type":"daemon.status","request_id":"d1","status":{"version":"0.1.19","pid":1234,"components":[{"id":"clawbot:default","account":"default","bot_id":"bot-example","user_id":"user-example","enabled":true,"state":"connected","last_success_unix_seconds":1750000000,"error":null,"restarts":0,"remote_tools":"none"}]}}"#,
    r#"{"type":"turn.started","request_id":"3","session_id":"...","turn_id":"...","seq":1}"#,
    r#"{"type":"assistant.delta","request_id":"3","session_id":"...","turn_id":"...","seq":2,"content":"I found "}"#,
    r#"{"type":"assistant.delta","request_id":"3","session_id":"...","turn_id":"...","seq":3,"content":"the issue."}"#,
    r#"{"type":"assistant.completed","request_id":"3","session_id":"...","turn_id":"...","seq":4,"content":"I found the issue."}"#,
    r#"{"type":"tool.proposed","request_id":"3","session_id":"...","turn_id":"...","seq":5,"call_id":"call_123","name":"bash","arguments":{"command":"cargo test"}}"#,
    r#"{"type":"approval.requested","request_id":"3","session_id":"...","turn_id":"...","seq":6,"approval_id":"...","call_id":"call_123","name":"bash","risk":"process","cwd":"/workspace/project","summary":"Run shell command: cargo test"}"#,
    r#"{"type":"tool.started","request_id":"3","session_id":"...","turn_id":"...","seq":7,"call_id":"call_123","name":"bash"}"#,
    r#"{"type":"tool.completed","request_id":"3","session_id":"...","turn_id":"...","seq":8,"call_id":"call_123","name":"bash","success":true,"output":"...","truncated":false}"#,
    r#"{"type":"context.compacted","request_id":"3","session_id":"...","turn_id":"...","seq":9,"before_tokens":130000,"after_tokens":96000,"removed_messages":42}"#,
    r#"{"type":"turn.completed","request_id":"3","session_id":"...","turn_id":"...","seq":10,"steps":4,"usage":{"input_tokens":1200,"output_tokens":240}}"#,
    r#"{"type":"turn.cancelled","request_id":"3","session_id":"...","turn_id":"...","seq":11}"#,
    r#"{"type":"turn.failed","request_id":"3","session_id":"...","turn_id":"...","seq":11,"code":"step_limit","message":"agent reached 32 steps"}"#,
    r#"{"type":"session.trimmed","request_id":"3","session_id":"...","seq":12,"removed_messages":250,"history_bytes":12000000}"#,
    r#"{"type":"session.cleared","request_id":"6","session_id":"...","seq":13}"#,
    r#"{"type":"error","request_id":"2","code":"invalid_request","message":"cwd is not a directory","fatal":false}"#,
];

#[test]
fn client_examples_round_trip() {
    for line in CLIENT_EXAMPLES {
        let frame = ClientFrame::parse(line.as_bytes())
            .unwrap_or_else(|err| panic!("{line}: {}", err.message));
        let back = serde_json::to_value(&frame).unwrap();
        let mut original: Value = serde_json::from_str(line).unwrap();
        // `workspace: null` means "leave unchanged", the same as absent.
        if let Some(command) = original.get_mut("command").and_then(Value::as_object_mut) {
            if command.get("workspace") == Some(&Value::Null) {
                command.remove("workspace");
            }
        }
        assert_eq!(back, original, "{line}");
    }
}

#[test]
fn server_examples_round_trip() {
    for line in SERVER_EXAMPLES {
        let event: Event = serde_json::from_str(line).unwrap_or_else(|err| panic!("{line}: {err}"));
        let back = serde_json::to_value(&event).unwrap();
        let borrowed = serde_json::to_value(event.as_ref()).unwrap();
        let original: Value = serde_json::from_str(line).unwrap();
        assert_eq!(back, original, "{line}");
        assert_eq!(borrowed, original, "{line}");
    }
}

#[test]
fn document_examples_are_all_listed() {
    let doc = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/seed/000_ff212dfe77432932.txt"
    );
    let Ok(text) = std::fs::read_to_string(doc) else {
        eprintln!("protocol document not beside the checkout; skipping the cross-check");
        return;
    };
    let listed: Vec<&str> = CLIENT_EXAMPLES
        .iter()
        .chain(SERVER_EXAMPLES)
        .copied()
        .collect();
    for line in text.lines().filter(|l| l.starts_with("{\"type\"")) {
        assert!(
            listed.contains(&line),
            "example missing from this test: {line}"
        );
    }
}
