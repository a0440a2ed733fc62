#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The shared prompt queue, pause and clear, through the real binary. A
//! turn is held active deterministically by leaving a tool call waiting for
//! approval.

mod common;
use common::*;

/// Starts a turn that waits on a bash approval; returns (turn.started,
/// approval.requested).
async fn park(rig: &mut Rig, session: &str, request_id: &str) -> (Value, Value) {
    rig.mock.push(Reply::tool_calls(&[(
        "park",
        "bash",
        json!({"command": "true"}),
    )]));
    rig.server.start_turn(session, request_id, "parked").await;
    let events = rig.server.until("approval.requested").await;
    (events[0].clone(), events.last().unwrap().clone())
}

fn resolve(session: &str, approval: &Value, approved: bool) -> Value {
    json!({"type":"approval.resolve","request_id":"ap","session_id":session,"approval_id":approval["approval_id"],"approved":approved})
}

fn prompts(rig: &Rig) -> Vec<String> {
    rig.mock
        .requests()
        .iter()
        .map(|r| {
            let messages = r.body["messages"].as_array().unwrap();
            let last_user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
            last_user["content"].as_str().unwrap().to_string()
        })
        .collect()
}

#[tokio::test]
async fn queued_prompts_are_edited_by_revision_and_run_in_order() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let (started, approval) = park(&mut rig, &session, "a").await;
    let mut all = vec![started];

    rig.server.start_turn(&session, "b", "B").await;
    let b = rig.server.expect("queue.enqueued").await;
    assert_eq!(b["request_id"], "b");
    assert_eq!(b["position"], 0);
    assert!(b.get("turn_id").is_none());
    let b_entry = b["entry"].clone();
    assert_eq!(
        (
            b_entry["revision"].as_u64(),
            b_entry["prompt"].as_str(),
            b_entry["submitter"].as_str()
        ),
        (Some(1), Some("B"), Some("client"))
    );
    rig.server.start_turn(&session, "c", "C").await;
    let c = rig.server.expect("queue.enqueued").await;
    assert_eq!(c["position"], 1);
    let c_id = c["entry"]["queue_id"].clone();
    let b_id = b_entry["queue_id"].clone();

    // A stale revision is a conflict carrying the current entry.
    rig.server
        .send(json!({"type":"queue.update","request_id":"u1","session_id":session,"queue_id":b_id,"revision":2,"prompt":"B2"}))
        .await;
    let conflict = rig.server.expect_error("queue_conflict", "u1").await;
    assert_eq!(conflict["entry"], b_entry);

    rig.server
        .send(json!({"type":"queue.update","request_id":"u2","session_id":session,"queue_id":b_id,"revision":1,"prompt":"B2"}))
        .await;
    let updated = rig.server.expect("queue.updated").await;
    assert_eq!(
        (
            updated["entry"]["revision"].as_u64(),
            updated["entry"]["prompt"].as_str()
        ),
        (Some(2), Some("B2"))
    );

    rig.server
        .send(json!({"type":"queue.move","request_id":"m1","session_id":session,"queue_id":c_id,"revision":1,"before_queue_id":b_id}))
        .await;
    let moved = rig.server.expect("queue.moved").await;
    assert_eq!(
        (
            moved["position"].as_u64(),
            moved["entry"]["revision"].as_u64()
        ),
        (Some(0), Some(2))
    );

    rig.server
        .send(json!({"type":"queue.remove","request_id":"r0","session_id":session,"queue_id":"nope","revision":1}))
        .await;
    rig.server.expect_error("queue_not_found", "r0").await;
    rig.server
        .send(json!({"type":"queue.remove","request_id":"r1","session_id":session,"queue_id":b_id,"revision":1}))
        .await;
    assert_eq!(rig.server.expect("error").await["code"], "queue_conflict");
    rig.server
        .send(json!({"type":"queue.remove","request_id":"r2","session_id":session,"queue_id":b_id,"revision":2}))
        .await;
    let removed = rig.server.expect("queue.removed").await;
    assert_eq!(removed["queue_id"], b_id);

    rig.server.start_turn(&session, "d", "D").await;
    let d = rig.server.expect("queue.enqueued").await;
    assert_eq!(d["position"], 1);
    all.extend([b, c, updated, moved, removed, d.clone()]);

    rig.mock.push(Reply::text(["A done"]));
    rig.mock.push(Reply::text(["C done"]));
    rig.mock.push(Reply::text(["D done"]));
    rig.server.send(resolve(&session, &approval, true)).await;
    let a_rest = rig.server.until_terminal().await;
    assert_eq!(a_rest.last().unwrap()["type"], "turn.completed");
    let c_turn = rig.server.until_terminal().await;
    assert_eq!(types(&c_turn)[..2], ["queue.dequeued", "turn.started"]);
    assert_eq!(c_turn[0]["queue_id"], c_id);
    assert_eq!(c_turn[0]["request_id"], "c");
    assert_eq!(
        c_turn[1]["request_id"], "c",
        "the dequeued turn answers its own request"
    );
    let d_turn = rig.server.until_terminal().await;
    assert_eq!(d_turn[0]["queue_id"], d["entry"]["queue_id"]);
    assert_eq!(d_turn.last().unwrap()["type"], "turn.completed");
    assert_eq!(prompts(&rig), ["parked", "parked", "C", "D"]);

    all.extend(a_rest);
    all.extend(c_turn);
    all.extend(d_turn);
    // approval.requested etc. were consumed by park(); check the rest.
    let seqs: Vec<u64> = all.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] > w[0]), "{seqs:?}");
}

#[tokio::test]
async fn the_queue_moves_on_after_a_cancel_and_after_a_failure() {
    let mut rig = Rig::new("provider_max_retries = 0").await;
    let session = rig.session().await;

    let (started, _) = park(&mut rig, &session, "a").await;
    rig.server.start_turn(&session, "b", "B").await;
    rig.server.expect("queue.enqueued").await;
    rig.mock.push(Reply::text(["B done"]));
    rig.server
        .send(json!({"type":"turn.cancel","request_id":"x","session_id":session,"turn_id":started["turn_id"]}))
        .await;
    let events = rig.server.until_terminal().await;
    assert_eq!(types(&events), ["turn.cancelled"]);
    let events = rig.server.until_terminal().await;
    assert_eq!(types(&events)[..2], ["queue.dequeued", "turn.started"]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");

    let (_, approval) = park(&mut rig, &session, "c").await;
    rig.server.start_turn(&session, "d", "D").await;
    rig.server.expect("queue.enqueued").await;
    rig.mock.push(Reply::error(400, "bad request"));
    rig.mock.push(Reply::text(["D done"]));
    rig.server.send(resolve(&session, &approval, true)).await;
    let events = rig.server.until_terminal().await;
    assert_eq!(events.last().unwrap()["code"], "provider_error");
    let events = rig.server.until_terminal().await;
    assert_eq!(
        events[0]["type"], "queue.dequeued",
        "the terminal event comes before the dequeue"
    );
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn pause_holds_the_queue_and_resume_starts_it() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let (_, approval) = park(&mut rig, &session, "a").await;
    rig.server.start_turn(&session, "b", "B").await;
    let b = rig.server.expect("queue.enqueued").await;
    rig.server
        .send(json!({"type":"session.pause","request_id":"p","session_id":session,"paused":true}))
        .await;
    let snapshot = rig.server.expect("queue.snapshot").await;
    assert_eq!(snapshot["request_id"], "p");
    assert_eq!(snapshot["entries"], json!([b["entry"]]));

    rig.mock.push(Reply::text(["A done"]));
    rig.server.send(resolve(&session, &approval, true)).await;
    assert_eq!(
        rig.server.until_terminal().await.last().unwrap()["type"],
        "turn.completed"
    );
    // Nothing was dequeued: the next event answers this probe.
    rig.server
        .send(json!({"type":"queue.remove","request_id":"probe","session_id":session,"queue_id":"none","revision":1}))
        .await;
    assert_eq!(rig.server.expect("error").await["request_id"], "probe");

    rig.mock.push(Reply::text(["B done"]));
    rig.server
        .send(json!({"type":"session.pause","request_id":"r","session_id":session,"paused":false}))
        .await;
    rig.server.expect("queue.snapshot").await;
    let events = rig.server.until_terminal().await;
    assert_eq!(types(&events)[..2], ["queue.dequeued", "turn.started"]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn clear_needs_an_idle_session_and_forgets_everything() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.mock.push(Reply::text(["remember 42"]));
    rig.turn(&session, "the number is 42").await;

    let (_, approval) = park(&mut rig, &session, "a").await;
    rig.server
        .send(json!({"type":"session.clear","request_id":"c1","session_id":session}))
        .await;
    rig.server.expect_error("turn_active", "c1").await;
    // Queue one prompt, pause, and let the parked turn end.
    rig.server.start_turn(&session, "b", "B").await;
    rig.server.expect("queue.enqueued").await;
    rig.server
        .send(json!({"type":"session.pause","request_id":"p","session_id":session,"paused":true}))
        .await;
    rig.server.expect("queue.snapshot").await;
    rig.mock.push(Reply::text(["A done"]));
    rig.server.send(resolve(&session, &approval, true)).await;
    let last_turn = rig.server.until_terminal().await;

    rig.server
        .send(json!({"type":"session.clear","request_id":"c2","session_id":session}))
        .await;
    let cleared = rig.server.expect("session.cleared").await;
    assert_eq!(cleared["request_id"], "c2");
    assert_eq!(
        cleared["seq"].as_u64().unwrap(),
        last_turn.last().unwrap()["seq"].as_u64().unwrap() + 1,
        "seq goes on"
    );
    rig.server
        .send(json!({"type":"session.pause","request_id":"p2","session_id":session,"paused":false}))
        .await;
    assert_eq!(
        rig.server.expect("queue.snapshot").await["entries"],
        json!([]),
        "queued prompts were dropped"
    );

    rig.mock.push(Reply::text(["fresh"]));
    rig.turn(&session, "what is the number?").await;
    let messages = rig.mock.requests().last().unwrap().body["messages"].clone();
    let roles: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user"],
        "no earlier message survives a clear"
    );
}

#[tokio::test]
async fn queue_requests_for_unknown_sessions_and_bad_prompts_are_rejected() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    for message in [
        json!({"type":"queue.update","request_id":"1","session_id":"zz","queue_id":"q","revision":1,"prompt":"x"}),
        json!({"type":"queue.move","request_id":"2","session_id":"zz","queue_id":"q","revision":1}),
        json!({"type":"queue.remove","request_id":"3","session_id":"zz","queue_id":"q","revision":1}),
        json!({"type":"session.pause","request_id":"4","session_id":"zz","paused":true}),
        json!({"type":"session.clear","request_id":"5","session_id":"zz"}),
    ] {
        rig.server.send(message.clone()).await;
        let error = rig.server.expect("error").await;
        assert_eq!(error["code"], "session_not_found", "{message}");
        assert_eq!(error["request_id"], message["request_id"]);
    }
    rig.server
        .send(json!({"type":"queue.update","request_id":"6","session_id":session,"queue_id":"q","revision":1,"prompt":""}))
        .await;
    assert_eq!(rig.server.expect("error").await["code"], "invalid_request");
}

#[tokio::test]
async fn the_queue_is_bounded_by_count_with_a_clear_error() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    park(&mut rig, &session, "p").await;
    for i in 0..64 {
        rig.server
            .start_turn(&session, &format!("q{i}"), &format!("prompt {i}"))
            .await;
        rig.server.expect("queue.enqueued").await;
    }
    rig.server
        .start_turn(&session, "over", "one too many")
        .await;
    let error = rig.server.expect_error("invalid_request", "over").await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("the queue holds 64 prompts, its limit"),
        "{error}"
    );
    rig.server
        .send(
            json!({"type":"session.pause","request_id":"pause","session_id":session,"paused":true}),
        )
        .await;
    let snapshot = rig.server.expect("queue.snapshot").await;
    assert_eq!(snapshot["entries"].as_array().unwrap().len(), 64);
}

#[tokio::test]
async fn queued_bytes_are_bounded_so_a_pause_is_always_answered() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    park(&mut rig, &session, "p").await;
    // Control characters are escaped to six bytes each, in the request and
    // in every snapshot: each of these prompts is about 1 MB on the wire.
    let heavy = "\u{1}".repeat(170 * 1024);
    for i in 0..4 {
        rig.server
            .start_turn(&session, &format!("q{i}"), &heavy)
            .await;
        rig.server.expect("queue.enqueued").await;
    }
    rig.server.start_turn(&session, "over", &heavy).await;
    let error = rig.server.expect_error("invalid_request", "over").await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("a session queues at most 4194304"),
        "{error}"
    );
    rig.server
        .send(
            json!({"type":"session.pause","request_id":"pause","session_id":session,"paused":true}),
        )
        .await;
    let snapshot = rig.server.expect("queue.snapshot").await;
    assert_eq!(snapshot["request_id"], "pause");
    assert_eq!(snapshot["entries"].as_array().unwrap().len(), 4);
}
