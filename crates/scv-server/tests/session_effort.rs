#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `session.configure.reasoning_effort` through the real binary: the
//! next provider request carries it, `default` brings config.toml's back,
//! and what is refused.

mod common;
use common::*;

#[tokio::test]
async fn reasoning_effort_reaches_the_next_request() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let configure = |rid: &str, effort: &str| json!({"type":"session.configure","request_id":rid,"session_id":session,"reasoning_effort":effort});
    rig.server.send(configure("e1", "high")).await;
    let configured = rig.server.expect("session.configured").await;
    assert_eq!(configured["request_id"], "e1");
    assert!(
        configured.get("reasoning_effort").is_none(),
        "v2's event unchanged: {configured}"
    );
    rig.mock.push(Reply::text(["thinking hard"]));
    rig.turn(&session, "one").await;
    rig.server.send(configure("e2", "default")).await;
    rig.server.expect("session.configured").await;
    rig.mock.push(Reply::text(["as configured"]));
    rig.turn(&session, "two").await;
    let requests = rig.mock.requests();
    assert_eq!(requests[0].body["reasoning_effort"], "high");
    assert!(
        requests[1].body.get("reasoning_effort").is_none(),
        "{}",
        requests[1].body
    );

    rig.server.send(configure("bad", "max")).await;
    let refused = rig.server.expect_error("invalid_request", "bad").await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("low, medium, high"),
        "{refused}"
    );
    rig.server
        .send(
            json!({"type":"session.configure","request_id":"both","session_id":session,
            "model":"other-model","reasoning_effort":"low"}),
        )
        .await;
    rig.server.expect_error("invalid_request", "both").await;
    // The connection carries on.
    rig.mock.push(Reply::text(["still"]));
    let events = rig.turn(&session, "three").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}
