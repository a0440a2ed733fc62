#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The session client attaching to a live session (capability `detach`):
//! `session.attached` names the session, the running turn and the last
//! `seq`, so live events from `seq + 1` are no gap; the replays (queue,
//! transcript, a waiting approval) carry no `seq`; the approval can be
//! answered; `session.closed` ends what ran.

use scv_client::session::{SessionClient, Update};
use scv_protocol::{Event, EventBody, LiveState, Risk, SessionAttached};

fn event(body: EventBody, seq: Option<u64>, turn: Option<&str>) -> Event {
    Event {
        body,
        request_id: Some("x-1".into()),
        session_id: Some("live".into()),
        turn_id: turn.map(str::to_string),
        seq,
        parent: None,
    }
}

#[test]
fn attaching_mid_turn_follows_on_without_a_gap_and_can_answer() {
    let mut client = SessionClient::new("x-");
    let attach = client.request(scv_protocol::ClientMessage::SessionAttach(
        scv_protocol::SessionAttach {
            session_id: "live".into(),
        },
    ));
    assert_eq!(attach.request_id, "x-1");
    let attached = SessionAttached {
        state: LiveState::AwaitingApproval,
        cwd: Some("/w".into()),
        provider: None,
        model: Some("m".into()),
        context_max_tokens: None,
    };
    let applied = client.apply(&event(
        EventBody::SessionAttached(attached.clone()),
        Some(41),
        Some("t1"),
    ));
    assert_eq!(
        applied.updates,
        [Update::Attached {
            attached,
            seq: Some(41),
            turn_id: Some("t1".into())
        }]
    );
    assert_eq!(client.session_id(), Some("live"));
    assert_eq!(client.running_turn(), Some("t1"));
    // Replays: no seq, no gap.
    let snapshot = client.apply(&event(
        EventBody::QueueSnapshot { entries: vec![] },
        None,
        None,
    ));
    assert!(!snapshot
        .updates
        .iter()
        .any(|u| matches!(u, Update::SeqGap { .. })));
    let approval = client.apply(&event(
        EventBody::ApprovalRequested {
            approval_id: "a1".into(),
            call_id: "c1".into(),
            name: "bash".into(),
            risk: Risk::Process,
            cwd: "/w".into(),
            summary: "Run shell command: ls".into(),
            sandboxed: None,
        },
        None,
        Some("t1"),
    ));
    assert!(
        matches!(&approval.updates[..], [Update::ApprovalRequested(a)] if a.approval_id == "a1")
    );
    assert!(client.resolve("a1", true).is_some());
    // Live: the next seq is 42.
    let live = client.apply(&event(
        EventBody::ToolStarted {
            call_id: "c1".into(),
            name: "bash".into(),
        },
        Some(42),
        Some("t1"),
    ));
    assert!(
        !live
            .updates
            .iter()
            .any(|u| matches!(u, Update::SeqGap { .. })),
        "{live:?}"
    );
    let gap = client.apply(&event(
        EventBody::ToolCompleted {
            call_id: "c1".into(),
            name: "bash".into(),
            success: true,
            output: String::new(),
            truncated: false,
        },
        Some(44),
        Some("t1"),
    ));
    assert!(gap.updates.contains(&Update::SeqGap {
        expected: 43,
        got: 44
    }));
    let closed = client.apply(&event(EventBody::SessionClosed {}, None, None));
    assert_eq!(closed.updates, [Update::Closed]);
    assert_eq!(client.running_turn(), None);
    assert!(client.approvals().is_empty());
}
