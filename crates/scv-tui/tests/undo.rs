#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `/undo` and `/rewind` in the App: what they send, what the answers
//! do to the transcript, and how a conflict is asked about.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use scv_protocol::{CheckpointList, CheckpointRestore, ClientMessage, Event};
use scv_tui::tui::app::{App, Outgoing};
use scv_tui::tui::overlay::OverlayKind;
use scv_tui::tui::transcript::ItemKind;
use serde_json::{json, Value};
use std::time::Instant;

const S: &str = "s1";

fn event(value: Value) -> Event {
    serde_json::from_value(value).unwrap()
}

fn app() -> App {
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":"/w","model":"m",
        "context_max_tokens":1000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,
        "max_transcript_items":10000,"max_prompt_history_bytes":1048576,"max_prompt_history_items":200})));
    app
}

fn key(app: &mut App, code: KeyCode) -> Vec<Outgoing> {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn run(app: &mut App, line: &str) -> Vec<Outgoing> {
    for c in line.chars() {
        key(app, KeyCode::Char(c));
    }
    key(app, KeyCode::Enter)
}

/// The one message sent, with its request id.
fn one(out: &[Outgoing]) -> (String, ClientMessage) {
    match out {
        [Outgoing::Send {
            request_id,
            message,
        }] => (request_id.clone(), message.clone()),
        other => panic!("{other:?}"),
    }
}

/// A whole turn with `prompt` and `answer`, as the server sends it.
fn turn(app: &mut App, turn: &str, prompt: &str, answer: &str) {
    let (rid, _) = one(&run(app, prompt));
    app.apply(event(
        json!({"type":"turn.started","request_id":rid,"session_id":S,"turn_id":turn,"seq":1}),
    ));
    app.apply(event(json!({"type":"checkpoint.created","request_id":rid,"session_id":S,"turn_id":turn,"seq":2,"checkpoint_id":format!("ck-{turn}")})));
    app.apply(event(json!({"type":"assistant.completed","request_id":rid,"session_id":S,"turn_id":turn,"seq":3,"content":answer})));
    app.apply(event(json!({"type":"turn.completed","request_id":rid,"session_id":S,"turn_id":turn,"seq":4,"steps":1})));
}

fn texts(app: &App) -> Vec<String> {
    app.transcript
        .items()
        .iter()
        .filter_map(|item| match &item.kind {
            ItemKind::User(text) => Some(format!("> {text}")),
            ItemKind::Assistant { text, .. } => Some(text.clone()),
            ItemKind::Notice(text) => Some(format!("· {text}")),
            ItemKind::Error { message, .. } => Some(format!("! {message}")),
            _ => None,
        })
        .collect()
}

fn listed(turns: &[&str]) -> Value {
    let checkpoints: Vec<Value> = turns
        .iter()
        .map(|t| json!({"checkpoint_id":format!("ck-{t}"),"turn_id":t,"prompt":format!("prompt {t}"),"created_unix_seconds":1}))
        .collect();
    json!(checkpoints)
}

#[test]
fn undo_restores_the_last_checkpoint_and_cuts_the_conversation_back() {
    let mut app = app();
    turn(&mut app, "t1", "first", "one");
    turn(&mut app, "t2", "second", "two");
    assert!(
        texts(&app)
            .iter()
            .filter(|t| t.contains("/undo puts it back"))
            .count()
            == 1,
        "the first checkpoint says how to undo, once: {:?}",
        texts(&app)
    );
    let (rid, message) = one(&run(&mut app, "/undo"));
    assert_eq!(
        message,
        ClientMessage::CheckpointList(CheckpointList {
            session_id: S.into()
        })
    );
    app.apply(event(json!({"type":"checkpoint.listed","request_id":rid,"session_id":S,"seq":5,"checkpoints":listed(&["t1","t2"])})));
    let (rid, message) = one(&app.take_outgoing());
    assert_eq!(
        message,
        ClientMessage::CheckpointRestore(CheckpointRestore {
            session_id: S.into(),
            checkpoint_id: "ck-t2".into(),
            files: true,
            conversation: true,
            force: false,
        })
    );
    app.apply(event(json!({"type":"checkpoint.restored","request_id":rid,"session_id":S,"seq":6,"checkpoint_id":"ck-t2",
        "files_restored":true,"files":[{"path":"a.rs","change":"modified"},{"path":"new.rs","change":"deleted"}],"conversation_restored":true})));
    let shown = texts(&app);
    assert!(
        shown.contains(&"> first".to_string()) && shown.contains(&"one".to_string()),
        "{shown:?}"
    );
    assert!(
        !shown.contains(&"> second".to_string()),
        "the undone turn is gone: {shown:?}"
    );
    let note = shown.last().unwrap();
    assert!(
        note.contains("2 files") && note.contains("1 put back") && note.contains("1 removed"),
        "{note}"
    );
    assert!(
        note.contains("a.rs, new.rs") && note.contains("conversation is back"),
        "{note}"
    );
}

#[test]
fn a_conflicting_undo_says_which_paths_and_how_to_force_it() {
    let mut app = app();
    turn(&mut app, "t1", "first", "one");
    let (rid, _) = one(&run(&mut app, "/undo"));
    app.apply(event(json!({"type":"checkpoint.listed","request_id":rid,"session_id":S,"seq":5,"checkpoints":listed(&["t1"])})));
    let (rid, _) = one(&app.take_outgoing());
    app.apply(event(json!({"type":"error","request_id":rid,"session_id":S,"code":"invalid_request","fatal":false,
        "message":"1 path(s) changed","conflicts":["notes.md"]})));
    let last = texts(&app).pop().unwrap();
    assert!(
        last.contains("notes.md") && last.contains("/undo force"),
        "{last}"
    );
    let (_, message) = one(&run(&mut app, "/undo force"));
    assert!(matches!(message, ClientMessage::CheckpointList(_)));
    // Nothing to undo is said, not sent.
    let mut fresh = self::app();
    let (rid, _) = one(&run(&mut fresh, "/undo"));
    fresh.apply(event(json!({"type":"checkpoint.listed","request_id":rid,"session_id":S,"seq":1,"checkpoints":[]})));
    assert!(fresh.take_outgoing().is_empty());
    assert!(texts(&fresh).pop().unwrap().contains("nothing to undo"));
}

#[test]
fn rewind_picks_a_checkpoint_shows_its_changes_and_asks_before_forcing() {
    let mut app = app();
    turn(&mut app, "t1", "first", "one");
    turn(&mut app, "t2", "second", "two");
    let (rid, _) = one(&run(&mut app, "/rewind"));
    app.apply(event(json!({"type":"checkpoint.listed","request_id":rid,"session_id":S,"seq":5,"checkpoints":listed(&["t1","t2"])})));
    assert!(matches!(&app.overlay, Some(o) if matches!(o.kind, OverlayKind::Rewind(_))));
    // The newest is selected; its changes are asked for.
    let (rid, message) = one(&app.take_outgoing());
    assert!(
        matches!(&message, ClientMessage::CheckpointDiff(d) if d.checkpoint_id == "ck-t2"),
        "{message:?}"
    );
    app.apply(event(json!({"type":"checkpoint.diffed","request_id":rid,"session_id":S,"seq":6,"checkpoint_id":"ck-t2",
        "files":[{"path":"src/lib.rs","change":"modified"}],"diff":"","truncated":false})));
    let Some(open) = &app.overlay else { panic!() };
    let OverlayKind::Rewind(rewind) = &open.kind else {
        panic!()
    };
    assert_eq!(rewind.changes["ck-t2"][0].path, "src/lib.rs");
    // Down to the older one: its changes are asked for too; Enter restores it.
    let (_, message) = one(&key(&mut app, KeyCode::Down));
    assert!(matches!(&message, ClientMessage::CheckpointDiff(d) if d.checkpoint_id == "ck-t1"));
    let (rid, message) = one(&key(&mut app, KeyCode::Enter));
    assert!(
        matches!(&message, ClientMessage::CheckpointRestore(r) if r.checkpoint_id == "ck-t1" && !r.force)
    );
    // A conflict: the picker asks; y forces.
    app.apply(event(json!({"type":"error","request_id":rid,"session_id":S,"code":"invalid_request","fatal":false,
        "message":"changed","conflicts":["README.md"]})));
    let Some(open) = &app.overlay else {
        panic!("the picker stays to ask")
    };
    let OverlayKind::Rewind(rewind) = &open.kind else {
        panic!()
    };
    assert_eq!(rewind.conflicts.as_ref().unwrap().2, ["README.md"]);
    let (rid, message) = one(&key(&mut app, KeyCode::Char('y')));
    assert!(
        matches!(&message, ClientMessage::CheckpointRestore(r) if r.checkpoint_id == "ck-t1" && r.force)
    );
    app.apply(event(json!({"type":"checkpoint.restored","request_id":rid,"session_id":S,"seq":7,"checkpoint_id":"ck-t1",
        "files_restored":true,"files":[],"conversation_restored":true})));
    assert!(app.overlay.is_none());
    let shown = texts(&app);
    assert!(
        !shown.iter().any(|t| t == "> first" || t == "> second"),
        "{shown:?}"
    );
}

/// Opens `/rewind` on checkpoints of t1 and t2 and answers the newest's
/// diff; the picker is left on the newest.
fn rewind_open(app: &mut App) {
    let (rid, _) = one(&run(app, "/rewind"));
    app.apply(event(json!({"type":"checkpoint.listed","request_id":rid,"session_id":S,"seq":5,"checkpoints":listed(&["t1","t2"])})));
    let (rid, _) = one(&app.take_outgoing());
    app.apply(event(json!({"type":"checkpoint.diffed","request_id":rid,"session_id":S,"seq":6,"checkpoint_id":"ck-t2",
        "files":[],"diff":"","truncated":false})));
}

#[test]
fn rewind_offers_files_only_and_conversation_only() {
    // `c`: the conversation goes back, the files stay.
    let mut app = app();
    turn(&mut app, "t1", "first", "one");
    turn(&mut app, "t2", "second", "two");
    rewind_open(&mut app);
    let (rid, message) = one(&key(&mut app, KeyCode::Char('c')));
    assert!(
        matches!(&message, ClientMessage::CheckpointRestore(r) if r.checkpoint_id == "ck-t2" && !r.files && r.conversation),
        "{message:?}"
    );
    app.apply(event(json!({"type":"checkpoint.restored","request_id":rid,"session_id":S,"seq":7,"checkpoint_id":"ck-t2",
        "files_restored":false,"files":[],"conversation_restored":true})));
    let shown = texts(&app);
    assert!(!shown.iter().any(|t| t == "> second"), "{shown:?}");
    assert!(shown.iter().any(|t| t == "> first"), "{shown:?}");
    assert!(
        shown.last().unwrap().contains("the files stay as they are"),
        "{shown:?}"
    );

    // `f`: the files go back, the conversation stays (and no prompt comes
    // back to the input box).
    let mut app = crate::app();
    turn(&mut app, "t1", "first", "one");
    turn(&mut app, "t2", "second", "two");
    rewind_open(&mut app);
    let (rid, message) = one(&key(&mut app, KeyCode::Char('f')));
    assert!(
        matches!(&message, ClientMessage::CheckpointRestore(r) if r.checkpoint_id == "ck-t2" && r.files && !r.conversation),
        "{message:?}"
    );
    // A conflict asks; `y` forces the same scope.
    app.apply(event(json!({"type":"error","request_id":rid,"session_id":S,"code":"invalid_request","fatal":false,
        "message":"changed","conflicts":["README.md"]})));
    let (rid, message) = one(&key(&mut app, KeyCode::Char('y')));
    assert!(
        matches!(&message, ClientMessage::CheckpointRestore(r) if r.force && r.files && !r.conversation),
        "{message:?}"
    );
    app.apply(event(json!({"type":"checkpoint.restored","request_id":rid,"session_id":S,"seq":7,"checkpoint_id":"ck-t2",
        "files_restored":true,"files":[{"path":"src/lib.rs","change":"modified"}],"conversation_restored":false})));
    let shown = texts(&app);
    assert!(shown.iter().any(|t| t == "> second"), "{shown:?}");
    let last = shown.last().unwrap();
    assert!(
        last.contains("1 put back") && last.contains("the conversation stays as it is"),
        "{shown:?}"
    );
    assert!(app.input.is_empty());
}

#[test]
fn a_call_without_an_undo_point_says_so_and_undo_says_why_it_cannot() {
    let mut app = app();
    turn(&mut app, "t1", "first", "one");
    let (rid, _) = one(&run(&mut app, "second"));
    app.apply(event(
        json!({"type":"turn.started","request_id":rid,"session_id":S,"turn_id":"t2","seq":5}),
    ));
    app.apply(event(json!({"type":"checkpoint.failed","request_id":rid,"session_id":S,"turn_id":"t2","seq":6,
        "message":"no undo point: disk full — the checkpoint store under SCV_HOME has no room; this call runs without one"})));
    app.apply(event(json!({"type":"turn.completed","request_id":rid,"session_id":S,"turn_id":"t2","seq":7,"steps":1})));
    assert!(
        texts(&app)
            .iter()
            .any(|t| t.starts_with("· no undo point: disk full")),
        "{:?}",
        texts(&app)
    );
    let (rid, _) = one(&run(&mut app, "/undo"));
    app.apply(event(json!({"type":"checkpoint.listed","request_id":rid,"session_id":S,"seq":8,
        "checkpoints":listed(&["t1"]),
        "missed":{"turn_id":"t2","message":"no undo point: disk full — the checkpoint store under SCV_HOME has no room"}})));
    assert!(
        app.take_outgoing().is_empty(),
        "an older checkpoint is not restored in its place"
    );
    let last = texts(&app).last().cloned().unwrap();
    assert!(
        last.starts_with("! cannot undo: the last turn that changed files ran without an undo point (no undo point: disk full"),
        "{last}"
    );
}
