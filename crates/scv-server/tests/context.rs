#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Context compaction and history trimming through the real binary. The
//! mock reports 11 input tokens per request, an implausible calibration
//! that the server ignores, so estimates use the default of ~4 bytes per
//! token and these small limits are deterministic.

mod common;
use common::*;

fn roles(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

fn body_len(body: &Value) -> usize {
    body.to_string().len()
}

async fn no_tools_session(rig: &mut Rig) -> String {
    let workspace = rig.home.workspace();
    rig.server
        .start_session_with(json!({"cwd": workspace, "no_tools": true}))
        .await
}

#[tokio::test]
async fn compaction_summarizes_old_exchanges_before_the_request() {
    let mut rig = Rig::new("context_max_tokens = 1000").await;
    let session = no_tools_session(&mut rig).await;
    let long = "word ".repeat(300); // 1500 bytes
    rig.mock.push(Reply::text([long.as_str()]));
    rig.turn(&session, "first question about parsing").await;
    rig.mock.push(Reply::text([long.as_str()]));
    rig.turn(&session, "second question").await;

    rig.mock
        .push(Reply::text(["SUMMARY: user asked about parsing twice."]));
    rig.mock.push(Reply::text(["third answer"]));
    let events = rig.turn(&session, "third question").await;
    assert_eq!(
        types(&events),
        [
            "turn.started",
            "context.compacted",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
    let compacted = &events[1];
    assert_eq!(compacted["removed_messages"], 4);
    let before = compacted["before_tokens"].as_u64().unwrap();
    let after = compacted["after_tokens"].as_u64().unwrap();
    assert!(before > 800, "past 80% of 1000: {before}");
    assert!(after < before / 2, "{after} vs {before}");
    assert_eq!(compacted["turn_id"], events[0]["turn_id"]);

    let requests = rig.mock.requests();
    assert_eq!(requests.len(), 4);
    let summary_request = &requests[2].body;
    assert!(summary_request["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("You compact the conversation"));
    assert!(summary_request.get("tools").is_none());
    let transcript = summary_request["messages"][1]["content"].as_str().unwrap();
    assert!(
        transcript.contains("first question about parsing")
            && transcript.contains("second question")
    );
    assert!(
        !transcript.contains("third question"),
        "the latest prompt is kept, not summarized"
    );

    let next = &requests[3].body;
    assert_eq!(roles(next), ["system", "user", "user"]);
    assert!(next["messages"][1]["content"]
        .as_str()
        .unwrap()
        .contains("SUMMARY: user asked about parsing twice."));
    assert_eq!(next["messages"][2]["content"], "third question");
    assert!(
        body_len(next) < body_len(&requests[1].body),
        "the request after compaction is smaller"
    );
}

/// `/compact [focus]` as a command: a turn that only compacts, at once
/// and whatever the history's size, its focus in the summary request; the
/// next turn starts from the summary. Sent as a plain prompt it is one.
#[tokio::test]
async fn compact_as_a_command_summarizes_now_and_asks_the_model_nothing_else() {
    let mut rig = Rig::new("").await;
    let session = no_tools_session(&mut rig).await;
    rig.mock.push(Reply::text(["parsing answer"]));
    rig.turn(&session, "first question about parsing").await;
    rig.mock.push(Reply::text(["second answer"]));
    rig.turn(&session, "second question").await;

    rig.mock.push(Reply::text(["SUMMARY: parsing, twice."]));
    rig.server
        .send(
            json!({"type":"turn.start","request_id":"c","session_id":session,
                     "prompt":"/compact the parser","command":true}),
        )
        .await;
    let events = rig.server.until_terminal().await;
    assert_eq!(
        types(&events),
        ["turn.started", "context.compacted", "turn.completed"]
    );
    assert_eq!(events[2]["steps"], 0);
    let requests = rig.mock.requests();
    assert_eq!(requests.len(), 3, "one summary request, no model step");
    let transcript = requests[2].body["messages"][1]["content"].as_str().unwrap();
    assert!(
        transcript.starts_with("Summarize this transcript (focus on: the parser):"),
        "{transcript}"
    );
    assert!(transcript.contains("first question about parsing"));

    rig.mock.push(Reply::text(["third answer"]));
    rig.turn(&session, "third question").await;
    let next = rig.mock.requests().pop().unwrap().body.to_string();
    assert!(next.contains("SUMMARY: parsing, twice."), "{next}");
    assert!(!next.contains("first question about parsing"), "{next}");

    // While a turn runs: refused with `turn_active`, nothing queued; the
    // turn and the connection go on.
    let words: Vec<String> = (0..40).map(|n| format!("w{n} ")).collect();
    rig.mock
        .push(Reply::text(words).drip(std::time::Duration::from_millis(20)));
    rig.server
        .start_turn(&session, "busy", "a long answer")
        .await;
    rig.server.until("turn.started").await;
    rig.server
        .send(
            json!({"type":"turn.start","request_id":"c2","session_id":session,
                     "prompt":"/compact","command":true}),
        )
        .await;
    rig.server.expect_error("turn_active", "c2").await;
    let events = rig.server.until_terminal().await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(!types(&events).contains(&"context.compacted"));

    // Not a command: an ordinary prompt.
    rig.mock.push(Reply::text(["ok"]));
    rig.turn(&session, "/compact").await;
    let plain = rig.mock.requests().pop().unwrap().body.to_string();
    assert!(plain.contains("\"/compact\""), "{plain}");
}

#[tokio::test]
async fn compaction_keeps_tool_calls_with_their_results() {
    // The offered tools' specs take part of the context; the reads fill
    // the rest.
    let mut rig = Rig::new("context_max_tokens = 3300").await;
    let session = rig.session().await;
    let workspace = rig.home.workspace();
    std::fs::write(workspace.join("big.txt"), "data line\n".repeat(250)).unwrap();
    // Each step reads the 2.5 KB file; the context fills during one turn.
    for i in 0..3 {
        rig.mock.push(Reply::tool_calls(&[(
            &format!("r{i}"),
            "read_file",
            json!({"path": "big.txt"}),
        )]));
    }
    rig.mock.push(Reply::text(["done"]));
    // Answer the summary request whenever compaction happens.
    for _ in 0..3 {
        rig.mock.push_matching(
            "You compact the conversation",
            Reply::text(["SUMMARY of reads"]),
        );
    }
    let events = rig.turn(&session, "read it thrice").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{:?}",
        events.last()
    );
    let compactions = events
        .iter()
        .filter(|e| e["type"] == "context.compacted")
        .count();
    let summaries = rig
        .mock
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("You compact the conversation"))
        .count();
    assert!(compactions >= 1);
    assert_eq!(compactions, summaries, "one summary request per compaction");
    for request in rig.mock.requests() {
        let messages = request.body["messages"].as_array().unwrap().clone();
        // Every tool result follows an assistant message that made the call.
        for (i, message) in messages.iter().enumerate() {
            if message["role"] == "tool" {
                let id = &message["tool_call_id"];
                let caller = messages[..i]
                    .iter()
                    .rev()
                    .find(|m| m["role"] == "assistant")
                    .unwrap();
                assert!(
                    caller["tool_calls"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|c| &c["id"] == id),
                    "orphaned tool result {id}"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_request_that_cannot_fit_fails_with_context_limit() {
    let mut rig = Rig::new("context_max_tokens = 300").await;
    let session = no_tools_session(&mut rig).await;
    let events = rig.turn(&session, &"x".repeat(4000)).await;
    let failed = events.last().unwrap();
    assert_eq!(failed["type"], "turn.failed");
    assert_eq!(failed["code"], "context_limit");
    assert_eq!(
        rig.mock.request_count(),
        0,
        "nothing is sent that cannot fit"
    );
    rig.mock.push(Reply::text(["small is fine"]));
    let events = rig.turn(&session, "hi").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn a_context_overflow_from_the_provider_compacts_once_and_retries() {
    let mut rig = Rig::new("").await;
    let session = no_tools_session(&mut rig).await;
    rig.mock.push(Reply::text(["earlier answer"]));
    rig.turn(&session, "earlier question").await;

    let overflow = json!({"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}).to_string();
    rig.mock.push(Reply::status(400, overflow.clone()));
    rig.mock.push(Reply::text(["SUMMARY"]));
    rig.mock.push(Reply::text(["after retry"]));
    let events = rig.turn(&session, "now").await;
    assert_eq!(
        types(&events),
        [
            "turn.started",
            "context.compacted",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
    assert_eq!(
        rig.mock.request_count(),
        4,
        "first, overflow, summary, retry"
    );

    // When the retry overflows too, the turn fails with context_limit.
    rig.mock.push(Reply::status(400, overflow.clone()));
    rig.mock.push(Reply::text(["SUMMARY 2"]));
    rig.mock.push(Reply::status(400, overflow));
    let events = rig.turn(&session, "again").await;
    let failed = events.last().unwrap();
    assert_eq!(
        (failed["type"].as_str(), failed["code"].as_str()),
        (Some("turn.failed"), Some("context_limit"))
    );
    assert_eq!(
        rig.mock.request_count(),
        7,
        "exactly one compaction and one retry"
    );
}

#[tokio::test]
async fn the_history_is_trimmed_to_max_history_bytes() {
    let mut rig = Rig::new("max_history_bytes = 4000").await;
    let session = no_tools_session(&mut rig).await;
    let chunk = "z".repeat(1000);
    let mut trimmed = Vec::new();
    for i in 0..4 {
        rig.mock.push(Reply::text([chunk.as_str()]));
        let events = rig.turn(&session, &format!("question {i}")).await;
        trimmed.extend(
            events
                .into_iter()
                .filter(|e| e["type"] == "session.trimmed"),
        );
    }
    assert!(!trimmed.is_empty(), "a trim was reported");
    let event = &trimmed[0];
    assert!(
        event.get("turn_id").is_none(),
        "session.trimmed is a session event: {event}"
    );
    assert!(event["seq"].is_u64());
    assert_eq!(event["request_id"], "t");
    assert_eq!(
        event["removed_messages"].as_u64().unwrap() % 2,
        0,
        "whole exchanges go"
    );
    assert!(event["history_bytes"].as_u64().unwrap() <= 4000);
    rig.mock.push(Reply::text(["last"]));
    rig.turn(&session, "final").await;
    let last = rig.mock.requests().last().unwrap().body.clone();
    let text = last.to_string();
    assert!(!text.contains("question 0"), "the oldest exchange is gone");
    assert!(text.contains("question 3"));
}

#[tokio::test]
async fn a_turn_larger_than_the_history_bound_fails_with_history_limit() {
    let mut rig = Rig::new("max_history_bytes = 3000").await;
    let session = no_tools_session(&mut rig).await;
    rig.mock.push(Reply::text(["small"]));
    rig.turn(&session, "keep me").await;
    rig.mock.push(Reply::text(["q".repeat(5000)]));
    let events = rig.turn(&session, "too big").await;
    let failed = events.last().unwrap();
    assert_eq!(
        (failed["type"].as_str(), failed["code"].as_str()),
        (Some("turn.failed"), Some("history_limit"))
    );
    rig.mock.push(Reply::text(["ok"]));
    rig.turn(&session, "next").await;
    let text = rig.mock.requests().last().unwrap().body.to_string();
    assert!(text.contains("keep me"), "earlier history survives");
    assert!(!text.contains("qqqq"), "the oversized turn is dropped");
}

#[tokio::test]
async fn compaction_is_cancellable_like_any_provider_request() {
    let mut rig = Rig::new("context_max_tokens = 1000").await;
    let session = no_tools_session(&mut rig).await;
    let long = "word ".repeat(300);
    for prompt in ["first", "second"] {
        rig.mock.push(Reply::text([long.as_str()]));
        rig.turn(&session, prompt).await;
    }
    // The summary request stalls; cancelling the turn aborts it.
    rig.mock.push_matching(
        "You compact the conversation",
        Reply::text(["SUM"]).then(1, Ending::Stall),
    );
    rig.server.start_turn(&session, "t3", "third").await;
    let started = rig.server.expect("turn.started").await;
    while rig.mock.request_count() < 3 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    rig.server
        .send(json!({"type":"turn.cancel","request_id":"c","session_id":session,"turn_id":started["turn_id"]}))
        .await;
    assert_eq!(
        types(&rig.server.until_terminal().await),
        ["turn.cancelled"]
    );
    assert!(
        rig.mock.wait_dropped(1).await,
        "the summary stream was dropped"
    );
    // Nothing was compacted: the next request still carries the history.
    rig.mock
        .push_matching("You compact the conversation", Reply::text(["SUMMARY"]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "fourth").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(types(&events).contains(&"context.compacted"));
}
