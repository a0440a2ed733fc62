#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Subagents in the TUI (capability `subagents`): the App driven by a
//! parent turn's `task` calls and its children's events (each with
//! `parent`), rendered into ratatui's TestBackend.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use scv_protocol::{ApprovalResolve, ClientMessage, Event, TurnCancel};
use scv_tui::tui::app::{App, Outgoing};
use scv_tui::tui::overlays::OverlayKind;
use scv_tui::tui::subagents::MAX_CHILDREN;
use scv_tui::tui::transcript::{ItemKind, SubagentStatus, ToolState};
use scv_tui::tui::{highlight, view};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const S: &str = "sess-1";
/// The two children of the parent's two `task` calls.
const A: &str = "child-a";
const B: &str = "child-b";

fn event(value: Value) -> Event {
    serde_json::from_value(value).expect("a valid event")
}

fn started_app() -> App {
    highlight::load();
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":"/work/project",
        "model":"gpt-4.1-mini","context_max_tokens":128000,"max_server_frame_bytes":8388608,
        "max_transcript_bytes":8388608,"max_transcript_items":10000,"max_prompt_history_bytes":1048576,
        "max_prompt_history_items":200})));
    app.apply(event(
        json!({"type":"queue.snapshot","request_id":"s","session_id":S,"seq":0,"entries":[]}),
    ));
    app
}

fn key(app: &mut App, code: KeyCode) -> Vec<Outgoing> {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// Picks option `digit` of the approval prompt and answers with Enter (a
/// digit alone only picks).
fn answer(app: &mut App, digit: char) -> Vec<Outgoing> {
    let mut out = key(app, KeyCode::Char(digit));
    out.extend(key(app, KeyCode::Enter));
    out
}

fn ctrl(app: &mut App, c: char) -> Vec<Outgoing> {
    app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn start_turn(app: &mut App, prompt: &str) {
    for c in prompt.chars() {
        key(app, KeyCode::Char(c));
    }
    let sent = key(app, KeyCode::Enter);
    let Some(Outgoing::Send { request_id, .. }) = sent.first() else {
        panic!("nothing sent: {sent:?}")
    };
    app.apply(event(json!({"type":"turn.started","request_id":request_id,"session_id":S,"turn_id":"turn-1","seq":1})));
    app.now += Duration::from_secs(12);
}

/// An event of the parent's own turn.
fn turn_event(seq: u64, mut value: Value) -> Event {
    value["session_id"] = json!(S);
    value["turn_id"] = json!("turn-1");
    value["request_id"] = json!("tui-1");
    value["seq"] = json!(seq);
    event(value)
}

/// An event of `child`, started by the parent's call `call`.
fn child(child: &str, call: &str, seq: u64, mut value: Value) -> Event {
    value["session_id"] = json!(child);
    value["turn_id"] = json!(format!("{child}-turn"));
    value["request_id"] = json!("tui-1");
    value["seq"] = json!(seq);
    value["parent"] = json!({"session_id":S,"turn_id":"turn-1","call_id":call});
    event(value)
}

fn render(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|frame| view::draw(frame, app)).unwrap();
    terminal.backend().to_string()
}

/// The parent turn proposes and starts two `task` calls; their children
/// start, one explores files, the other asks to run a command.
fn two_children(app: &mut App) {
    start_turn(app, "Look into the auth code and its tests");
    app.apply(turn_event(
        2,
        json!({"type":"assistant.completed","content":"I'll split this up."}),
    ));
    app.apply(turn_event(3, json!({"type":"tool.proposed","call_id":"t1","name":"task",
        "arguments":{"description":"find the auth code","prompt":"Find where requests are authenticated.","agent":"explore"}})));
    app.apply(turn_event(4, json!({"type":"tool.proposed","call_id":"t2","name":"task",
        "arguments":{"description":"run the auth tests","prompt":"Run the auth tests and report."}})));
    app.apply(turn_event(
        5,
        json!({"type":"tool.started","call_id":"t1","name":"task"}),
    ));
    app.apply(turn_event(
        6,
        json!({"type":"tool.started","call_id":"t2","name":"task"}),
    ));
    app.apply(child(
        A,
        "t1",
        0,
        json!({"type":"subagent.started","agent":"explore","description":"find the auth code",
        "provider":"openai","model":"gpt-4.1","tools":["read_file","list_dir","search"],"depth":1}),
    ));
    app.apply(child(
        B,
        "t2",
        0,
        json!({"type":"subagent.started","description":"run the auth tests",
        "provider":"openai","model":"gpt-4.1","tools":["bash","read_file"],"depth":1}),
    ));
    app.apply(child(A, "t1", 1, json!({"type":"turn.started"})));
    app.apply(child(B, "t2", 1, json!({"type":"turn.started"})));
    app.apply(child(
        A,
        "t1",
        2,
        json!({"type":"assistant.delta","content":"Looking at src/auth.rs first."}),
    ));
    app.apply(child(
        A,
        "t1",
        3,
        json!({"type":"assistant.completed","content":"Looking at src/auth.rs first."}),
    ));
    app.apply(child(A, "t1", 4, json!({"type":"tool.proposed","call_id":"call_1","name":"read_file","arguments":{"path":"src/auth.rs"}})));
    app.apply(child(
        A,
        "t1",
        5,
        json!({"type":"tool.started","call_id":"call_1","name":"read_file"}),
    ));
    app.apply(child(
        B,
        "t2",
        2,
        json!({"type":"assistant.completed","content":""}),
    ));
    app.apply(child(B, "t2", 3, json!({"type":"tool.proposed","call_id":"call_1","name":"bash","arguments":{"command":"cargo test auth"}})));
    app.apply(child(
        B,
        "t2",
        4,
        json!({"type":"approval.requested","approval_id":"ap-b","call_id":"call_1","name":"bash",
        "risk":"process","cwd":"/work/project","summary":"Run shell command: cargo test auth"}),
    ));
}

/// The rest: A answers, B's command runs and then B fails.
fn children_end(app: &mut App) {
    app.apply(child(A, "t1", 6, json!({"type":"tool.completed","call_id":"call_1","name":"read_file","success":true,"output":"fn check() {}","truncated":false})));
    app.apply(child(
        A,
        "t1",
        7,
        json!({"type":"assistant.completed","content":"Auth is checked in src/auth.rs::check."}),
    ));
    app.apply(child(A, "t1", 8, json!({"type":"turn.completed","steps":2,"usage":{"input_tokens":3000,"output_tokens":200}})));
    app.apply(child(
        B,
        "t2",
        5,
        json!({"type":"tool.started","call_id":"call_1","name":"bash"}),
    ));
    app.apply(child(B, "t2", 6, json!({"type":"tool.completed","call_id":"call_1","name":"bash","success":true,"output":"test result: ok\n[exit code: 0]","truncated":false})));
    app.apply(child(
        B,
        "t2",
        7,
        json!({"type":"turn.failed","code":"provider_error","message":"the provider answered 500"}),
    ));
}

fn card_status(app: &App, child_id: &str) -> SubagentStatus {
    app.subagents
        .get(child_id)
        .expect("a child kept")
        .card()
        .status
        .clone()
}

/// The one message sent.
fn only(out: &[Outgoing]) -> ClientMessage {
    match out {
        [Outgoing::Send { message, .. }] => message.clone(),
        other => panic!("expected one message, got {other:?}"),
    }
}

#[test]
fn two_children_run_at_once_under_their_task_calls() {
    let mut app = started_app();
    two_children(&mut app);
    app.now += Duration::from_secs(1);
    let screen = render(&app);
    assert!(
        screen.contains("explore «find the auth code»  running"),
        "{screen}"
    );
    assert!(screen.contains("⚙ read_file src/auth.rs"), "{screen}");
    assert!(
        screen.contains("⏸ awaiting approval: $ cargo test auth"),
        "{screen}"
    );
    assert!(screen.contains("2 subagents"), "{screen}");
    insta::assert_snapshot!("two_children_running", screen);

    answer(&mut app, '1');
    children_end(&mut app);
    assert_eq!(card_status(&app, A), SubagentStatus::Completed);
    assert!(matches!(
        card_status(&app, B),
        SubagentStatus::Failed { code, .. } if code == "provider_error"
    ));
    app.apply(turn_event(7, json!({"type":"tool.completed","call_id":"t1","name":"task","success":true,
        "output":"Auth is checked in src/auth.rs::check.\n[subagent child-a: 2 steps, 3200 tokens]","truncated":false})));
    app.apply(turn_event(
        8,
        json!({"type":"tool.completed","call_id":"t2","name":"task","success":false,
        "output":"the subagent failed: the provider answered 500","truncated":false}),
    ));
    let screen = render(&app);
    assert!(
        screen.contains("✓ explore «find the auth code»  completed · 2 steps · 3.2k tokens"),
        "{screen}"
    );
    assert!(
        screen.contains("✗ subagent «run the auth tests»  failed (the model provider returned an"),
        "{screen}"
    );
    insta::assert_snapshot!("two_children_ended", screen);
}

#[test]
fn a_childs_approval_is_labelled_and_answered_with_its_session() {
    let mut app = started_app();
    two_children(&mut app);
    app.now += Duration::from_secs(1);
    let screen = render(&app);
    assert!(
        screen.contains("subagent «run the auth tests» wants to run:"),
        "{screen}"
    );
    assert!(
        screen.contains("Approval needed — a subagent asks"),
        "{screen}"
    );
    let front = app.approval.front().expect("waiting");
    assert_eq!(front.child_session.as_deref(), Some(B));
    let out = answer(&mut app, '1');
    match only(&out) {
        ClientMessage::ApprovalResolve(ApprovalResolve {
            session_id,
            approval_id,
            approved,
        }) => {
            assert_eq!(session_id, B, "the answer names the child's session");
            assert_eq!(approval_id, "ap-b");
            assert!(approved);
        }
        other => panic!("expected approval.resolve, got {other:?}"),
    }
    assert!(app.approval.is_empty());
}

#[test]
fn a_denied_child_call_shows_denied_in_its_transcript_only() {
    let mut app = started_app();
    two_children(&mut app);
    app.now += Duration::from_secs(1);
    let out = answer(&mut app, '3');
    assert!(matches!(
        only(&out),
        ClientMessage::ApprovalResolve(ApprovalResolve { ref session_id, approved: false, .. }) if session_id == B
    ));
    app.apply(child(B, "t2", 5, json!({"type":"tool.completed","call_id":"call_1","name":"bash","success":false,"output":"denied","truncated":false})));
    let state = |transcript: &scv_tui::tui::transcript::Transcript| {
        transcript.tool("call_1").map(|card| card.state)
    };
    assert_eq!(
        state(&app.subagents.get(B).unwrap().transcript),
        Some(ToolState::Denied)
    );
    // A's call of the same id is A's own, and still runs.
    assert_eq!(
        state(&app.subagents.get(A).unwrap().transcript),
        Some(ToolState::Running)
    );
    assert!(
        app.transcript.tool("call_1").is_none(),
        "never the parent's"
    );
}

#[test]
fn child_events_never_reach_the_parent_transcript_or_turn() {
    let mut app = started_app();
    two_children(&mut app);
    children_end(&mut app);
    let answers: Vec<String> = app
        .transcript
        .items()
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::Assistant { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        ["I'll split this up."],
        "a child's answer is not the parent's"
    );
    assert!(
        app.transcript.items().iter().all(|i| !matches!(
            &i.kind,
            ItemKind::Tool(card) if card.name != "task"
        )),
        "a child's calls are not the parent's"
    );
    assert!(
        app.transcript
            .items()
            .iter()
            .all(|i| !matches!(&i.kind, ItemKind::Error { .. })),
        "a child's failure is not the parent's"
    );
    assert!(
        app.turn.is_some(),
        "a child's turn.completed does not end the parent turn"
    );
    assert_eq!(
        app.meter.usage.input_tokens, 0,
        "nor counts as the parent's usage"
    );
    // The parent's own answer streams into an answer of its own.
    app.apply(turn_event(
        9,
        json!({"type":"assistant.delta","content":"Both are done."}),
    ));
    app.apply(turn_event(10, json!({"type":"turn.completed","steps":2,"usage":{"input_tokens":5000,"output_tokens":300}})));
    assert!(app.turn.is_none());
    assert_eq!(app.meter.usage.input_tokens, 5000);
    let child_a = &app.subagents.get(A).unwrap().transcript;
    let texts: Vec<String> = child_a
        .items()
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::User(text) | ItemKind::Assistant { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts,
        [
            "Find where requests are authenticated.",
            "Looking at src/auth.rs first.",
            "Auth is checked in src/auth.rs::check."
        ],
        "the child's own transcript opens with its task"
    );
}

#[test]
fn events_of_another_sessions_children_are_ignored() {
    let mut app = started_app();
    start_turn(&mut app, "Hello");
    let mut stranger = child(
        "other-child",
        "t9",
        0,
        json!({"type":"subagent.started","description":"not ours",
        "provider":"openai","model":"gpt-4.1","tools":[],"depth":1}),
    );
    stranger.parent.as_mut().unwrap().session_id = "sess-2".into();
    app.apply(stranger);
    let mut delta = child(
        "other-child",
        "t9",
        1,
        json!({"type":"assistant.delta","content":"leak"}),
    );
    delta.parent.as_mut().unwrap().session_id = "sess-2".into();
    app.apply(delta);
    assert!(app.subagents.is_empty());
    assert!(!render(&app).contains("leak"));
}

#[test]
fn session_rules_answer_a_childs_calls_as_the_parents() {
    let mut app = started_app();
    start_turn(&mut app, "Test it");
    // A rule made on the parent's own call...
    app.apply(turn_event(2, json!({"type":"tool.proposed","call_id":"c1","name":"bash","arguments":{"command":"cargo test"}})));
    app.apply(turn_event(
        3,
        json!({"type":"approval.requested","approval_id":"ap-1","call_id":"c1","name":"bash",
        "risk":"process","cwd":"/work/project","summary":"Run shell command: cargo test"}),
    ));
    app.now += Duration::from_secs(1);
    answer(&mut app, '2');
    assert_eq!(app.rules.len(), 1);
    app.apply(turn_event(
        4,
        json!({"type":"tool.completed","call_id":"c1","name":"bash","success":true,"output":"ok","truncated":false}),
    ));
    app.apply(turn_event(
        5,
        json!({"type":"tool.proposed","call_id":"t1","name":"task",
        "arguments":{"description":"test more","prompt":"Run the doc tests."}}),
    ));
    app.apply(turn_event(
        6,
        json!({"type":"tool.started","call_id":"t1","name":"task"}),
    ));
    app.apply(child(
        A,
        "t1",
        0,
        json!({"type":"subagent.started","description":"test more",
        "provider":"openai","model":"gpt-4.1","tools":["bash"],"depth":1}),
    ));
    app.apply(child(A, "t1", 1, json!({"type":"turn.started"})));
    // ...answers the child's call of the same kind, naming the child.
    app.apply(child(A, "t1", 2, json!({"type":"tool.proposed","call_id":"c1","name":"bash","arguments":{"command":"cargo test --doc"}})));
    app.apply(child(
        A,
        "t1",
        3,
        json!({"type":"approval.requested","approval_id":"ap-2","call_id":"c1","name":"bash",
        "risk":"process","cwd":"/work/project","summary":"Run shell command: cargo test --doc"}),
    ));
    assert!(app.approval.is_empty(), "the rule answered");
    match only(&app.take_outgoing()) {
        ClientMessage::ApprovalResolve(ApprovalResolve {
            session_id,
            approval_id,
            approved,
        }) => {
            assert_eq!((session_id.as_str(), approval_id.as_str()), (A, "ap-2"));
            assert!(approved);
        }
        other => panic!("expected approval.resolve, got {other:?}"),
    }
    let card = app
        .subagents
        .get(A)
        .unwrap()
        .transcript
        .tool("c1")
        .cloned()
        .unwrap();
    assert_eq!(card.approved_by.as_deref(), Some("cargo test"));
    // A call the rule does not cover still asks.
    app.apply(child(A, "t1", 4, json!({"type":"tool.proposed","call_id":"c2","name":"bash","arguments":{"command":"rm -rf target"}})));
    app.apply(child(
        A,
        "t1",
        5,
        json!({"type":"approval.requested","approval_id":"ap-3","call_id":"c2","name":"bash",
        "risk":"process","cwd":"/work/project","summary":"Run shell command: rm -rf target"}),
    ));
    assert_eq!(app.approval.len(), 1);
    assert!(app.take_outgoing().is_empty());
}

#[test]
fn a_rule_made_on_a_childs_call_answers_the_other_childs() {
    let mut app = started_app();
    two_children(&mut app);
    app.now += Duration::from_secs(1);
    // B asks for `cargo test auth`; `a` makes the rule `cargo test`.
    answer(&mut app, '2');
    assert_eq!(app.rules.len(), 1);
    app.apply(child(A, "t1", 6, json!({"type":"tool.proposed","call_id":"call_2","name":"bash","arguments":{"command":"cargo test login"}})));
    app.apply(child(
        A,
        "t1",
        7,
        json!({"type":"approval.requested","approval_id":"ap-a","call_id":"call_2","name":"bash",
        "risk":"process","cwd":"/work/project","summary":"Run shell command: cargo test login"}),
    ));
    assert!(app.approval.is_empty());
    assert!(matches!(
        only(&app.take_outgoing()),
        ClientMessage::ApprovalResolve(ApprovalResolve { ref session_id, approved: true, .. }) if session_id == A
    ));
}

#[test]
fn a_childs_approval_goes_when_the_child_ends() {
    let mut app = started_app();
    two_children(&mut app);
    assert_eq!(app.approval.len(), 1);
    app.apply(child(B, "t2", 5, json!({"type":"turn.cancelled"})));
    assert!(app.approval.is_empty(), "nothing waits for it any more");
    assert_eq!(card_status(&app, B), SubagentStatus::Cancelled);
    assert!(app.turn.is_some());
    assert!(render(&app).contains("◌ subagent «run the auth tests»  cancelled"));
}

#[test]
fn ctrl_o_opens_the_latest_subagent_and_esc_closes_it() {
    let mut app = started_app();
    two_children(&mut app);
    app.now += Duration::from_secs(1);
    answer(&mut app, '1');
    children_end(&mut app);
    assert!(ctrl(&mut app, 'o').is_empty());
    assert!(matches!(
        app.overlay.as_ref().map(|o| &o.kind),
        Some(OverlayKind::Subagent(id)) if id == B
    ));
    assert!(app.expanded, "the session's own cards expand too");
    let screen = render(&app);
    assert!(
        screen.contains("Run the auth tests and report."),
        "{screen}"
    );
    assert!(screen.contains("$ cargo test auth  [done]"), "{screen}");
    assert!(
        screen.contains("the model provider returned an error"),
        "{screen}"
    );
    insta::assert_snapshot!("subagent_overlay", screen);

    // ← goes to the other one, drawn as the session's transcript is.
    key(&mut app, KeyCode::Left);
    assert!(matches!(
        app.overlay.as_ref().map(|o| &o.kind),
        Some(OverlayKind::Subagent(id)) if id == A
    ));
    let screen = render(&app);
    assert!(screen.contains("read_file src/auth.rs  [done]"), "{screen}");
    assert!(
        screen.contains("Auth is checked in src/auth.rs::check."),
        "{screen}"
    );
    // Ctrl+O there folds tool output again; the overlay stays.
    ctrl(&mut app, 'o');
    assert!(!app.expanded);
    assert!(app.overlay.is_some());
    ctrl(&mut app, 'o');
    assert!(app.expanded);

    key(&mut app, KeyCode::Esc);
    assert!(app.overlay.is_none());
    assert!(app.turn.is_some(), "Esc closed the overlay, not the turn");
    // Expanded, a card shows the child's model and its answer's end.
    let screen = render(&app);
    assert!(screen.contains("      model openai/gpt-4.1"), "{screen}");
    assert!(
        screen.contains("      │ Auth is checked in src/auth.rs::check."),
        "{screen}"
    );
    assert!(
        !screen.contains("ctrl+o: subagent transcripts"),
        "the hint is for folded cards: {screen}"
    );
}

#[test]
fn ctrl_o_without_subagents_says_so_and_expands() {
    let mut app = started_app();
    start_turn(&mut app, "Hello");
    ctrl(&mut app, 'o');
    assert!(app.overlay.is_none());
    assert!(app.expanded, "it still expands tool output");
    assert_eq!(
        app.hint.as_deref(),
        Some("tool output and thinking expanded (no subagents to show)")
    );
}

#[test]
fn the_help_lists_ctrl_o_for_subagents() {
    let mut app = started_app();
    for c in "/help".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    let screen = render(&app);
    assert!(
        screen.contains("Ctrl+O               subagent transcripts (←/→ others, Ctrl+X cancels)"),
        "{screen}"
    );
}

#[test]
fn ctrl_x_in_the_overlay_cancels_that_subagent_alone() {
    let mut app = started_app();
    two_children(&mut app);
    ctrl(&mut app, 'o');
    key(&mut app, KeyCode::Left);
    let out = ctrl(&mut app, 'x');
    match only(&out) {
        ClientMessage::TurnCancel(TurnCancel {
            session_id,
            turn_id,
        }) => {
            assert_eq!(session_id, A);
            assert_eq!(turn_id, "child-a-turn");
        }
        other => panic!("expected turn.cancel, got {other:?}"),
    }
    assert!(app.overlay.is_some());
}

#[test]
fn a_child_of_a_child_is_a_line_on_its_parents_card() {
    let mut app = started_app();
    two_children(&mut app);
    // A starts a subagent of its own with its call `call_9`.
    app.apply(child(
        A,
        "t1",
        6,
        json!({"type":"tool.proposed","call_id":"call_9","name":"task",
        "arguments":{"description":"grep for tokens","prompt":"Find token checks."}}),
    ));
    app.apply(child(
        A,
        "t1",
        7,
        json!({"type":"tool.started","call_id":"call_9","name":"task"}),
    ));
    let grandchild = |seq: u64, mut value: Value| {
        value["session_id"] = json!("child-g");
        value["turn_id"] = json!("g-turn");
        value["seq"] = json!(seq);
        value["parent"] = json!({"session_id":A,"turn_id":"child-a-turn","call_id":"call_9"});
        event(value)
    };
    app.apply(grandchild(
        0,
        json!({"type":"subagent.started","description":"grep for tokens",
        "provider":"openai","model":"gpt-4.1","tools":["search"],"depth":2}),
    ));
    app.apply(grandchild(1, json!({"type":"turn.started"})));
    app.apply(grandchild(
        2,
        json!({"type":"assistant.completed","content":"Found 3."}),
    ));
    app.apply(grandchild(
        3,
        json!({"type":"turn.completed","steps":1,"usage":{"input_tokens":100,"output_tokens":20}}),
    ));
    let screen = render(&app);
    assert!(
        screen.contains("↳ ✓ subagent «grep for tokens»  completed · 1 step · 120 tokens"),
        "{screen}"
    );
    // Under its own `task` call in A's transcript too.
    let host = app
        .subagents
        .get(A)
        .unwrap()
        .transcript
        .tool("call_9")
        .cloned();
    assert_eq!(
        host.map(|card| card.subagents[0].session_id.clone())
            .as_deref(),
        Some("child-g")
    );
    assert_eq!(app.subagents.len(), 3);
}

#[test]
fn only_max_children_are_kept_and_their_cards_stay() {
    let mut app = started_app();
    start_turn(&mut app, "Fan out");
    let n = MAX_CHILDREN + 8;
    for i in 0..n {
        let call = format!("t{i}");
        let id = format!("c{i}");
        app.apply(turn_event(
            2 + 3 * i as u64,
            json!({"type":"tool.proposed","call_id":call,"name":"task",
            "arguments":{"description":format!("part {i}"),"prompt":"x".repeat(100_000)}}),
        ));
        app.apply(turn_event(
            3 + 3 * i as u64,
            json!({"type":"tool.started","call_id":call,"name":"task"}),
        ));
        app.apply(child(
            &id,
            &call,
            0,
            json!({"type":"subagent.started","description":format!("part {i}"),
            "provider":"openai","model":"gpt-4.1","tools":[],"depth":1}),
        ));
        app.apply(child(
            &id,
            &call,
            1,
            json!({"type":"turn.completed","steps":1}),
        ));
    }
    assert_eq!(app.subagents.len(), MAX_CHILDREN);
    assert!(app.subagents.get("c0").is_none());
    let prompt_bytes = app.subagents.latest().unwrap().transcript.bytes();
    assert!(
        prompt_bytes <= scv_tui::tui::subagents::MAX_PROMPT_BYTES + 4,
        "the task prompt is cut: {prompt_bytes}"
    );
    // The first child's card is still under its call, as it last was.
    let first = app.transcript.tool("t0").cloned().unwrap();
    assert_eq!(first.subagents.len(), 1);
    assert_eq!(first.subagents[0].status, SubagentStatus::Completed);
    // Ctrl+O shows the latest; one dropped is said so.
    ctrl(&mut app, 'o');
    assert!(matches!(
        app.overlay.as_ref().map(|o| &o.kind),
        Some(OverlayKind::Subagent(id)) if *id == format!("c{}", n - 1)
    ));
    app.overlay = Some(scv_tui::tui::overlays::OpenOverlay::new(
        OverlayKind::Subagent("c0".into()),
    ));
    assert!(render(&app).contains("no longer kept here"));
}

#[test]
fn a_childs_approval_takes_arrows_and_enter_and_never_letters() {
    let mut app = started_app();
    two_children(&mut app);
    app.now += Duration::from_secs(1);
    for c in "yes".chars() {
        assert!(key(&mut app, KeyCode::Char(c)).is_empty());
    }
    assert_eq!(app.approval.len(), 1, "typing answers nothing");
    for _ in 0..3 {
        key(&mut app, KeyCode::Backspace);
    }
    app.now += Duration::from_secs(1);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    let out = key(&mut app, KeyCode::Enter);
    assert!(matches!(
        only(&out),
        ClientMessage::ApprovalResolve(ApprovalResolve { ref session_id, approved: false, .. }) if session_id == B
    ));
    assert!(app.approval.is_empty());
}
