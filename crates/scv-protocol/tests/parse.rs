#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! How client lines become frames or the exact error the protocol names.

use scv_protocol::{ClientFrame, ClientMessage, ErrorCode};

fn err(line: &str) -> (ErrorCode, Option<String>, String) {
    let e = ClientFrame::parse(line.as_bytes()).expect_err(line);
    (e.code, e.request_id, e.message)
}

#[test]
fn not_json_is_invalid_json() {
    assert_eq!(err("{nope").0, ErrorCode::InvalidJson);
    assert_eq!(err("").0, ErrorCode::InvalidJson);
}

#[test]
fn shapes_that_are_not_messages_are_invalid_requests() {
    assert_eq!(err("[1,2]").0, ErrorCode::InvalidRequest);
    assert_eq!(
        err(r#"{"request_id":"1"}"#),
        (
            ErrorCode::InvalidRequest,
            Some("1".into()),
            "missing field `type`".into()
        )
    );
    let (code, id, message) = err(r#"{"type":"bogus.thing","request_id":"9"}"#);
    assert_eq!(
        (code, id.as_deref()),
        (ErrorCode::InvalidRequest, Some("9"))
    );
    assert!(message.contains("bogus.thing"), "{message}");
    assert_eq!(
        err(r#"{"type":"turn.start","session_id":"s","prompt":"p"}"#).0,
        ErrorCode::InvalidRequest
    );
    let (code, id, message) = err(r#"{"type":"turn.start","request_id":"4","session_id":"s"}"#);
    assert_eq!(
        (code, id.as_deref()),
        (ErrorCode::InvalidRequest, Some("4"))
    );
    assert!(message.contains("prompt"), "{message}");
}

#[test]
fn unknown_fields_are_ignored() {
    let frame = ClientFrame::parse(
        br#"{"type":"turn.cancel","request_id":"7","session_id":"s","turn_id":"t","extra":{"x":1}}"#,
    )
    .unwrap();
    assert_eq!(frame.request_id, "7");
    assert_eq!(
        frame.message,
        ClientMessage::TurnCancel(scv_protocol::TurnCancel {
            session_id: "s".into(),
            turn_id: "t".into()
        })
    );
}

#[test]
fn unknown_daemon_action_is_invalid_request() {
    let (code, id, _) =
        err(r#"{"type":"daemon.control","request_id":"d","command":{"action":"explode"}}"#);
    assert_eq!(
        (code, id.as_deref()),
        (ErrorCode::InvalidRequest, Some("d"))
    );
}

#[test]
fn session_warnings_and_checkpoint_failures_round_trip_and_unknown_codes_parse() {
    for line in [
        r#"{"type":"session.warning","session_id":"s","seq":9,"code":"journal_failed","message":"not saved: the disk under SCV_HOME is full"}"#,
        r#"{"type":"session.warning","session_id":"s","seq":12,"code":"journal_recovered","message":"saved again"}"#,
        r#"{"type":"checkpoint.failed","request_id":"3","session_id":"s","turn_id":"t","seq":7,"message":"no undo point: disk full"}"#,
    ] {
        let event: scv_protocol::Event = serde_json::from_str(line).unwrap();
        let back = serde_json::to_value(&event).unwrap();
        let original: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(back, original, "{line}");
    }
    let newer: scv_protocol::Event = serde_json::from_str(
        r#"{"type":"session.warning","session_id":"s","code":"something_new","message":"m"}"#,
    )
    .unwrap();
    assert!(matches!(
        newer.body,
        scv_protocol::EventBody::SessionWarning(scv_protocol::SessionWarning {
            code: scv_protocol::SessionWarningCode::Other,
            ..
        })
    ));
}
