#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `session.close` (capability `sessions`) through the real binary: one
//! session of a connection ends — its turn cancelled first, its queue
//! dropped, its journal let go so it resumes at once — while the
//! connection's other session goes on; the errors, and the refusal
//! without the capability.

mod common;
use common::stored::{server, setup};
use common::*;
use std::time::Duration;

fn slow_answer() -> Reply {
    let words: Vec<String> = (0..400).map(|n| format!("w{n} ")).collect();
    Reply::text(words).drip(Duration::from_millis(50))
}

#[tokio::test]
async fn session_close_ends_one_session_and_the_other_goes_on() {
    let (mock, home, workspace) = setup("").await;
    let mut server = server(home.path()).await;
    let a = server.start_session(&workspace).await;
    let b = server.start_session(&workspace).await;
    let idle = server.start_session(&workspace).await;

    mock.push(slow_answer());
    server.start_turn(&a, "ta", "talk slowly").await;
    server.until("assistant.delta").await;
    server.start_turn(&a, "tq", "queued behind").await;
    server.until("queue.enqueued").await;

    server
        .send(json!({"type":"session.close","request_id":"c","session_id":a}))
        .await;
    let events = server.until("session.closed").await;
    let kinds = types(&events);
    let cancelled = kinds.iter().position(|k| *k == "turn.cancelled");
    assert!(cancelled.is_some(), "{kinds:?}");
    assert!(
        !kinds.contains(&"turn.started"),
        "the queued prompt ran: {kinds:?}"
    );
    let closed = events.last().unwrap();
    assert_eq!(
        (closed["session_id"].as_str(), closed["request_id"].as_str()),
        (Some(a.as_str()), Some("c"))
    );
    assert!(closed.get("seq").is_none(), "{closed}");
    assert_eq!(
        mock.requests().len(),
        1,
        "the queued prompt never reached the provider"
    );

    // Gone from this connection.
    server.start_turn(&a, "t2", "hello?").await;
    server.expect_error("session_not_found", "t2").await;
    server
        .send(json!({"type":"session.close","request_id":"c2","session_id":a}))
        .await;
    server.expect_error("session_not_found", "c2").await;

    // The other session goes on.
    mock.push(Reply::text(["B is fine."]));
    server.start_turn(&b, "tb", "and you?").await;
    let events = server.until_terminal().await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert_eq!(events.last().unwrap()["session_id"], b.as_str());

    // A session nobody prompted leaves nothing behind.
    server
        .send(json!({"type":"session.close","request_id":"ci","session_id":idle}))
        .await;
    server.expect("session.closed").await;
    server
        .send(json!({"type":"session.list","request_id":"ls"}))
        .await;
    let listed = server.expect("session.listed").await;
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&a.as_str()) && !ids.contains(&idle.as_str()),
        "{ids:?}"
    );
    let open_a = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == a.as_str())
        .unwrap()["open"]
        .clone();
    assert_eq!(open_a, false);

    // Its journal was let go: it resumes here at once.
    server
        .send(json!({"type":"session.resume","request_id":"r","session_id":a}))
        .await;
    let started = server.expect("session.started").await;
    assert_eq!(started["session_id"], a.as_str());
    assert_eq!(started["resumed"], true);
}

#[tokio::test]
async fn session_close_needs_the_capability() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.server
        .send(json!({"type":"session.close","request_id":"c","session_id":session}))
        .await;
    let refused = rig.server.expect_error("invalid_request", "c").await;
    assert!(
        refused["message"].as_str().unwrap().contains("sessions"),
        "{refused}"
    );
    // The session is still there.
    rig.mock.push(Reply::text(["still here"]));
    let events = rig.turn(&session, "hi").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}
