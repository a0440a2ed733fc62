#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Streamed turns end to end: exact event sequences, seq numbers, the
//! provider request on the wire, cancel, and client EOF.

mod common;
use common::*;

#[tokio::test]
async fn a_streamed_turn_emits_the_exact_sequence() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.mock.push(Reply::text(["I found ", "the issue", "."]));
    rig.server
        .start_turn(&session, "3", "Fix the failing test.")
        .await;
    let events = rig.server.until_terminal().await;
    assert_eq!(
        types(&events),
        [
            "turn.started",
            "assistant.delta",
            "assistant.delta",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
    let turn_id = events[0]["turn_id"].as_str().unwrap().to_string();
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["session_id"], session.as_str());
        assert_eq!(event["turn_id"], turn_id.as_str());
        assert_eq!(event["request_id"], "3");
        assert_eq!(event["seq"], i as u64 + 1, "{event}");
    }
    assert_eq!(events[1]["content"], "I found ");
    assert_eq!(events[4]["content"], "I found the issue.");
    assert_eq!(
        events[5],
        json!({"type":"turn.completed","request_id":"3","session_id":session,"turn_id":turn_id,"seq":6,
               "steps":1,"usage":{"input_tokens":11,"output_tokens":7}})
    );

    let request = &rig.mock.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.body["stream"], true);
    assert_eq!(
        request.body["stream_options"],
        json!({"include_usage": true})
    );
    assert_eq!(request.body["model"], "mock-model");
    let messages = request.body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert!(messages[0]["content"]
        .as_str()
        .unwrap()
        .contains(&rig.home.workspace().display().to_string()));
    assert_eq!(
        messages[1],
        json!({"role":"user","content":"Fix the failing test."})
    );
    assert!(
        !request.headers.contains_key("authorization"),
        "no key, no header"
    );
}

#[tokio::test]
async fn the_next_turn_carries_the_conversation_and_seq_goes_on() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.mock.push(Reply::text(["one"]));
    rig.mock.push(Reply::text(["two"]).without_usage());
    let first = rig.turn(&session, "first").await;
    let second = rig.turn(&session, "second").await;
    let all: Vec<Value> = first.iter().chain(&second).cloned().collect();
    assert_seq_contiguous(&all);
    assert_ne!(first[0]["turn_id"], second[0]["turn_id"]);
    let done = second.last().unwrap();
    assert_eq!(done["type"], "turn.completed");
    assert!(
        done.get("usage").is_none(),
        "usage omitted when not reported: {done}"
    );
    let messages = rig.mock.requests()[1].body["messages"].clone();
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(messages[2]["content"], "one");
}

#[tokio::test]
async fn cancel_aborts_the_provider_read_and_the_session_goes_on() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.mock
        .push(Reply::text(["a", "b", "c", "d"]).then(3, Ending::Stall));
    rig.server.start_turn(&session, "t1", "go").await;
    let started = rig.server.expect("turn.started").await;
    let turn_id = started["turn_id"].as_str().unwrap().to_string();
    rig.server.expect("assistant.delta").await;
    rig.server.expect("assistant.delta").await;

    rig.server
        .send(json!({"type":"turn.cancel","request_id":"c1","session_id":session,"turn_id":"not-this-turn"}))
        .await;
    rig.server.expect_error("turn_not_found", "c1").await;

    rig.server
        .send(
            json!({"type":"turn.cancel","request_id":"c2","session_id":session,"turn_id":turn_id}),
        )
        .await;
    let cancelled = rig.server.expect("turn.cancelled").await;
    assert_eq!(cancelled["turn_id"], turn_id.as_str());
    assert_eq!(cancelled["request_id"], "t1");
    assert!(rig.mock.wait_dropped(1).await, "the HTTP body was dropped");

    // The same turn id is no longer cancellable; the session takes a new turn.
    rig.server
        .send(
            json!({"type":"turn.cancel","request_id":"c3","session_id":session,"turn_id":turn_id}),
        )
        .await;
    assert_eq!(rig.server.expect("error").await["code"], "turn_not_found");
    rig.mock.push(Reply::text(["again"]));
    let events = rig.turn(&session, "again").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn client_eof_cancels_the_active_turn_and_exits_zero() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.mock
        .push(Reply::text(["x", "y"]).then(2, Ending::Stall));
    rig.server.start_turn(&session, "t", "go").await;
    rig.server.expect("turn.started").await;
    rig.server.expect("assistant.delta").await;
    rig.server.close_stdin().await;
    let cancelled = rig.server.expect("turn.cancelled").await;
    assert_eq!(cancelled["session_id"], session.as_str());
    assert_eq!(rig.server.next_opt().await, None);
    let Rig { server, mock, .. } = rig;
    assert!(server.wait().await.success());
    assert!(mock.wait_dropped(1).await);
}

#[tokio::test]
async fn api_key_is_sent_as_bearer_and_never_shown() {
    let mut rig = Rig::with_env("", &[("OPENAI_API_KEY", "sk-test-secret-4242")]).await;
    let session = rig.session().await;
    rig.mock.push(Reply::error(
        401,
        "Incorrect API key provided: sk-test-secret-4242.",
    ));
    let events = rig.turn(&session, "hi").await;
    let failed = events.last().unwrap();
    assert_eq!(failed["type"], "turn.failed");
    assert_eq!(failed["code"], "provider_error");
    let message = failed["message"].as_str().unwrap();
    assert!(message.contains("401"), "{message}");
    assert!(message.contains("Incorrect API key"), "{message}");
    assert!(!message.contains("sk-test-secret-4242"), "{message}");
    assert_eq!(
        rig.mock.requests()[0].headers["authorization"],
        "Bearer sk-test-secret-4242"
    );
}

#[tokio::test]
async fn api_key_env_names_the_variable() {
    let mut rig = Rig::with_env(
        "api_key_env = \"MY_LLM_KEY\"",
        &[("MY_LLM_KEY", "k-123456")],
    )
    .await;
    let session = rig.session().await;
    rig.mock.push(Reply::text(["hi"]));
    rig.turn(&session, "hi").await;
    assert_eq!(
        rig.mock.requests()[0].headers["authorization"],
        "Bearer k-123456"
    );
}
