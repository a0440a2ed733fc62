#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Snapshots of the main screens: the real App state, driven by protocol
//! events and keys, rendered into ratatui's TestBackend.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use scv_protocol::Event;
use scv_protocol::{ApprovalResolve, DaemonControl, QueueMove};
use scv_tui::tui::app::{App, Outgoing};
use scv_tui::tui::{highlight, view};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const S: &str = "sess-1";

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

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// Types a prompt, sends it, and plays back `turn.started` for it.
fn start_turn(app: &mut App, prompt: &str) {
    type_text(app, prompt);
    let sent = key(app, KeyCode::Enter);
    let Some(Outgoing::Send { request_id, .. }) = sent.first() else {
        panic!("nothing sent: {sent:?}")
    };
    app.apply(event(json!({"type":"turn.started","request_id":request_id,"session_id":S,"turn_id":"turn-1","seq":1})));
    app.now += Duration::from_secs(12);
}

fn turn_event(mut value: Value) -> Event {
    value["session_id"] = json!(S);
    value["turn_id"] = json!("turn-1");
    value["request_id"] = json!("tui-1");
    event(value)
}

fn render(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|frame| view::draw(frame, app)).unwrap();
    terminal.backend().to_string()
}

#[test]
fn empty() {
    let app = started_app();
    insta::assert_snapshot!(render(&app));
}

#[test]
fn streaming() {
    let mut app = started_app();
    start_turn(&mut app, "Why does the build fail?");
    for part in [
        "The build fails because ",
        "`serde` is missing the ",
        "`derive` feature",
    ] {
        app.apply(turn_event(
            json!({"type":"assistant.delta","seq":2,"content":part}),
        ));
    }
    insta::assert_snapshot!(render(&app));
}

#[test]
fn markdown_with_code() {
    let mut app = started_app();
    start_turn(&mut app, "Show me");
    let answer = "## Fix\n\nAdd the feature in **Cargo.toml**:\n\n```toml\nserde = { version = \"1\", features = [\"derive\"] }\n```\n\nThen:\n\n1. run `cargo build`\n2. run *the tests*\n\n```rust\nfn main() {\n    println!(\"ok\");\n}\n```";
    app.apply(turn_event(
        json!({"type":"assistant.delta","seq":2,"content":answer}),
    ));
    app.apply(turn_event(
        json!({"type":"assistant.completed","seq":3,"content":answer}),
    ));
    app.apply(turn_event(json!({"type":"turn.completed","seq":4,"steps":1,"usage":{"input_tokens":1200,"output_tokens":240}})));
    insta::assert_snapshot!(render(&app));
}

fn with_tool_output(app: &mut App) {
    start_turn(app, "Run the tests");
    app.apply(turn_event(
        json!({"type":"assistant.completed","seq":2,"content":""}),
    ));
    app.apply(turn_event(json!({"type":"tool.proposed","seq":3,"call_id":"c1","name":"bash","arguments":{"command":"cargo test"}})));
    app.apply(turn_event(
        json!({"type":"tool.started","seq":4,"call_id":"c1","name":"bash"}),
    ));
    let output: String = (1..=9)
        .map(|i| format!("test case_{i} ... ok\n"))
        .collect::<String>()
        + "[exit code: 0]";
    app.apply(turn_event(json!({"type":"tool.completed","seq":5,"call_id":"c1","name":"bash","success":true,"output":output,"truncated":false})));
    app.apply(turn_event(json!({"type":"tool.proposed","seq":6,"call_id":"c2","name":"edit_file","arguments":{"path":"src/lib.rs","old_string":"let x = 1;","new_string":"let x = 2;"}})));
    app.apply(turn_event(
        json!({"type":"tool.started","seq":7,"call_id":"c2","name":"edit_file"}),
    ));
    app.apply(turn_event(json!({"type":"tool.completed","seq":8,"call_id":"c2","name":"edit_file","success":true,"output":"Replaced 1 occurrence in src/lib.rs","truncated":false})));
}

#[test]
fn tool_card_collapsed() {
    let mut app = started_app();
    with_tool_output(&mut app);
    insta::assert_snapshot!(render(&app));
}

#[test]
fn tool_card_expanded() {
    let mut app = started_app();
    with_tool_output(&mut app);
    app.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    insta::assert_snapshot!(render(&app));
}

#[test]
fn approval_prompt() {
    let mut app = started_app();
    start_turn(&mut app, "Clean the build");
    app.apply(turn_event(json!({"type":"tool.proposed","seq":2,"call_id":"c1","name":"bash","arguments":{"command":"rm -rf target && cargo build"}})));
    app.apply(turn_event(json!({"type":"approval.requested","seq":3,"approval_id":"ap-1","call_id":"c1","name":"bash","risk":"process","cwd":"/work/project","summary":"Run shell command: rm -rf target && cargo build"})));
    // Up for a second: armed, and its keys say so.
    app.now += Duration::from_secs(1);
    insta::assert_snapshot!(render(&app));
    // Empty box: Enter chooses the highlighted `1 Yes, once`.
    let sent = key(&mut app, KeyCode::Enter);
    assert!(matches!(
        &sent[..],
        [Outgoing::Send {
            message: scv_protocol::ClientMessage::ApprovalResolve(ApprovalResolve {
                approved: true,
                ..
            }),
            ..
        }]
    ));
}

#[test]
fn approval_prompt_while_typing() {
    let mut app = started_app();
    start_turn(&mut app, "Clean the build");
    app.apply(turn_event(json!({"type":"tool.proposed","seq":2,"call_id":"c1","name":"bash","arguments":{"command":"cargo test"}})));
    app.apply(turn_event(json!({"type":"approval.requested","seq":3,"approval_id":"ap-1","call_id":"c1","name":"bash","risk":"process","cwd":"/work/project","summary":"Run shell command: cargo test"})));
    // Keys typed as it appears stay in the input, y and n included; the
    // prompt says to empty the box to answer.
    type_text(&mut app, "then try the other fix, yes");
    app.now += Duration::from_secs(1);
    insta::assert_snapshot!(render(&app));
}

#[test]
fn approval_prompt_long_call() {
    let mut app = started_app();
    start_turn(&mut app, "Run the script");
    let lines: Vec<String> = (1..=30).map(|i| format!("echo step {i}")).collect();
    let command = lines.join("\n");
    app.apply(turn_event(json!({"type":"tool.proposed","seq":2,"call_id":"c1","name":"bash","arguments":{"command":command}})));
    app.apply(turn_event(json!({"type":"approval.requested","seq":3,"approval_id":"ap-1","call_id":"c1","name":"bash","risk":"process","cwd":"/work/project","summary":format!("Run shell command: {command}\u{1b}[8m hidden?")})));
    app.now += Duration::from_secs(1);
    insta::assert_snapshot!(render(&app));
}

#[test]
fn queue_panel() {
    let mut app = started_app();
    start_turn(&mut app, "First task");
    for (i, prompt) in ["Then update the README", "Then run clippy"]
        .iter()
        .enumerate()
    {
        app.apply(event(json!({"type":"queue.enqueued","request_id":format!("q{i}"),"session_id":S,"seq":2+i,
            "entry":{"queue_id":format!("q{i}"),"revision":1,"prompt":prompt,"submitter":"client"},"position":i})));
    }
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Down);
    insta::assert_snapshot!(render(&app));
    // Moving the selected entry up sends queue.move with its revision.
    let sent = key(&mut app, KeyCode::Char('u'));
    match &sent[..] {
        [Outgoing::Send {
            message:
                scv_protocol::ClientMessage::QueueMove(QueueMove {
                    queue_id,
                    revision,
                    before_queue_id,
                    ..
                }),
            ..
        }] => {
            assert_eq!(
                (queue_id.as_str(), *revision, before_queue_id.as_deref()),
                ("q1", 1, Some("q0"))
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn failed_turn() {
    let mut app = started_app();
    start_turn(&mut app, "Do it");
    app.apply(turn_event(json!({"type":"turn.failed","seq":2,"code":"provider_error","message":"provider returned HTTP 401 Unauthorized: Incorrect API key provided"})));
    insta::assert_snapshot!(render(&app));
}

#[test]
fn disconnected() {
    let mut app = started_app();
    start_turn(&mut app, "Long job");
    app.disconnected();
    insta::assert_snapshot!(render(&app));
}

#[test]
fn slash_completion() {
    let mut app = started_app();
    type_text(&mut app, "/p");
    insta::assert_snapshot!(render(&app));
    // `/plan` and `/pause`: Tab goes no further than they agree.
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.input.text(), "/p");
    type_text(&mut app, "a");
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.input.text(), "/pause");
}

#[test]
fn code_blocks_are_highlighted() {
    highlight::load();
    let lines = scv_tui::tui::markdown::render("```rust\nfn main() {}\n```");
    let colored = lines
        .iter()
        .flat_map(|l| &l.spans)
        .any(|s| matches!(s.style.fg, Some(ratatui::style::Color::Rgb(..))));
    assert!(colored, "{lines:?}");
}

#[test]
fn approval_outside_an_unavailable_sandbox() {
    highlight::load();
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":"/work/project",
        "model":"gpt-4.1-mini","context_max_tokens":128000,"max_server_frame_bytes":8388608,
        "max_transcript_bytes":8388608,"max_transcript_items":10000,"max_prompt_history_bytes":1048576,
        "max_prompt_history_items":200,"sandbox":"unavailable"})));
    start_turn(&mut app, "Install the deps");
    app.apply(turn_event(json!({"type":"tool.proposed","seq":2,"call_id":"c1","name":"bash","arguments":{"command":"cargo fetch","unsandboxed":true}})));
    app.apply(turn_event(json!({"type":"approval.requested","seq":3,"approval_id":"ap-1","call_id":"c1","name":"bash","risk":"process","cwd":"/work/project","summary":"Run shell command outside the sandbox: cargo fetch","sandboxed":false})));
    app.now += Duration::from_secs(1);
    let screen = render(&app);
    assert!(screen.contains("sandbox unavailable"), "{screen}");
    assert!(screen.contains("outside the sandbox"), "{screen}");
    insta::assert_snapshot!(screen);
}

fn ask_bash(app: &mut App, id: &str, command: &str) {
    app.apply(turn_event(json!({"type":"tool.proposed","seq":2,"call_id":format!("c-{id}"),"name":"bash","arguments":{"command":command}})));
    app.apply(turn_event(json!({"type":"approval.requested","seq":3,"approval_id":id,"call_id":format!("c-{id}"),"name":"bash","risk":"process","cwd":"/work/project","summary":format!("Run shell command: {command}")})));
}

#[test]
fn approval_with_a_rule_preview() {
    let mut app = started_app();
    start_turn(&mut app, "Run the tests");
    ask_bash(&mut app, "ap-1", "cargo test --workspace");
    app.now += Duration::from_secs(1);
    let screen = render(&app);
    assert!(
        screen.contains("always allow `cargo test …` (any arguments)"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn approval_with_a_refused_rule() {
    let mut app = started_app();
    start_turn(&mut app, "Run the script");
    ask_bash(&mut app, "ap-1", "python3 scripts/gen.py *.txt");
    app.now += Duration::from_secs(1);
    key(&mut app, KeyCode::Char('2'));
    let screen = render(&app);
    assert!(
        screen.contains("no rule: `python3` is an interpreter"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

/// A rule made with `a`, then a matching call answered by it.
fn with_a_rule(app: &mut App) {
    start_turn(app, "Run the tests twice");
    ask_bash(app, "ap-1", "cargo test");
    app.now += Duration::from_secs(1);
    answer(app, '2');
    app.apply(turn_event(
        json!({"type":"tool.started","seq":4,"call_id":"c-ap-1","name":"bash"}),
    ));
    app.apply(turn_event(json!({"type":"tool.completed","seq":5,"call_id":"c-ap-1","name":"bash","success":true,"output":"test result: ok. 3 passed\n[exit code: 0]","truncated":false})));
    ask_bash(app, "ap-2", "cargo test --doc");
    assert_eq!(app.take_outgoing().len(), 1, "the rule answered");
    app.apply(turn_event(
        json!({"type":"tool.started","seq":7,"call_id":"c-ap-2","name":"bash"}),
    ));
    app.apply(turn_event(json!({"type":"tool.completed","seq":8,"call_id":"c-ap-2","name":"bash","success":true,"output":"test result: ok. 1 passed\n[exit code: 0]","truncated":false})));
}

#[test]
fn approved_by_rule() {
    let mut app = started_app();
    with_a_rule(&mut app);
    let screen = render(&app);
    assert!(
        screen.contains("✓ approved by rule `cargo test`"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn approvals_overlay() {
    let mut app = started_app();
    with_a_rule(&mut app);
    ask_bash(&mut app, "ap-3", "git status");
    app.now += Duration::from_secs(1);
    answer(&mut app, '2');
    type_text(&mut app, "/approvals");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Down);
    insta::assert_snapshot!(render(&app));
}

#[test]
fn help_overlay() {
    let mut app = started_app();
    type_text(&mut app, "/help");
    key(&mut app, KeyCode::Enter);
    insta::assert_snapshot!(render(&app));
}

#[test]
fn status_overlay() {
    highlight::load();
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":"/work/project",
        "model":"claude-sonnet-4-5","context_max_tokens":200000,"max_server_frame_bytes":8388608,
        "max_transcript_bytes":8388608,"max_transcript_items":10000,"max_prompt_history_bytes":1048576,
        "max_prompt_history_items":200,"provider":"anthropic","sandbox":"workspace-write"})));
    with_a_rule(&mut app);
    app.apply(turn_event(json!({"type":"turn.completed","seq":9,"steps":2,"usage":{"input_tokens":24000,"output_tokens":1300}})));
    type_text(&mut app, "/status");
    let sent = key(&mut app, KeyCode::Enter);
    let Some(Outgoing::Send {
        request_id,
        message: scv_protocol::ClientMessage::DaemonControl(DaemonControl { .. }),
    }) = sent.first()
    else {
        panic!("/status asks the daemon for its MCP servers: {sent:?}")
    };
    app.apply(event(json!({"type":"daemon.status","request_id":request_id,"status":{"version":"0.1.0","pid":1,"components":[
        {"id":"clawbot:default","account":"default","bot_id":null,"user_id":null,"enabled":false,"state":"disabled","last_success_unix_seconds":null,"error":null,"restarts":0},
        {"id":"mcp:github","account":null,"bot_id":null,"user_id":null,"enabled":true,"state":"connected","last_success_unix_seconds":1764590000,"error":null,"restarts":0,"tools":3,
         "tool_names":["get_issue","list_issues","create_issue"]}
    ]}})));
    let screen = render(&app);
    assert!(screen.contains("github: connected · 3 tools"), "{screen}");
    assert!(
        screen.contains("get_issue, list_issues, create_issue"),
        "{screen}"
    );
    assert!(!screen.contains("clawbot"), "{screen}");
    insta::assert_snapshot!(screen);
}

/// A machine without the sandbox's second wall: the status line says the
/// sandbox is partial, `/status` what is missing, and a warning about the
/// workspace is a notice in the transcript.
#[test]
fn a_partial_sandbox_is_said_on_the_status_line_and_in_status() {
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":"/home/me",
        "model":"m","context_max_tokens":1000,"max_server_frame_bytes":8388608,
        "max_transcript_bytes":8388608,"max_transcript_items":10000,"max_prompt_history_bytes":1048576,
        "max_prompt_history_items":200,"sandbox":"workspace-write",
        "sandbox_gaps":["user namespaces are unavailable (EPERM): commands can change file modes"],
        "sandbox_warnings":["the workspace /home/me holds your home directory"]})));
    let screen = render(&app);
    assert!(screen.contains("sandbox partial (see /status)"), "{screen}");
    assert!(
        screen.contains("sandbox: the workspace /home/me holds your home directory"),
        "{screen}"
    );
    type_text(&mut app, "/status");
    key(&mut app, KeyCode::Enter);
    let screen = render(&app);
    assert!(
        screen.contains("user namespaces are unavailable"),
        "{screen}"
    );
}

fn thinking(app: &mut App) {
    start_turn(app, "Why is add wrong?");
    for part in [
        "The user asks about add. ",
        "Let me look at the function first:\nit returns a - b, ",
        "which is subtraction.\nSo the fix is to return a + b.",
    ] {
        app.apply(turn_event(
            json!({"type":"reasoning.delta","seq":2,"content":part}),
        ));
    }
}

#[test]
fn thinking_streaming() {
    let mut app = started_app();
    thinking(&mut app);
    let screen = render(&app);
    assert!(screen.contains("✻ thinking…"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn thinking_collapsed_then_expanded() {
    let mut app = started_app();
    thinking(&mut app);
    app.now += Duration::from_secs(12);
    app.apply(turn_event(
        json!({"type":"assistant.delta","seq":3,"content":"`add` subtracts: it returns `a - b`."}),
    ));
    let screen = render(&app);
    assert!(screen.contains("✻ thought for 12 s · 29 words"), "{screen}");
    assert!(!screen.contains("Let me look"), "{screen}");
    insta::assert_snapshot!("thinking_collapsed", screen);
    app.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let screen = render(&app);
    assert!(
        screen.contains("Let me look at the function first:"),
        "{screen}"
    );
    insta::assert_snapshot!("thinking_expanded", screen);
}

#[test]
fn tabs_expand_to_tab_stops() {
    let mut app = started_app();
    start_turn(&mut app, "Show add");
    app.apply(turn_event(json!({"type":"tool.proposed","seq":2,"call_id":"r1","name":"read_file","arguments":{"path":"app.py"}})));
    app.apply(turn_event(json!({"type":"tool.completed","seq":3,"call_id":"r1","name":"read_file","success":true,
        "output":"     1\tdef add(a, b):\n     2\t\treturn a - b\n     3\tx = 1\t# bell\u{7} here","truncated":false})));
    app.apply(turn_event(json!({"type":"tool.proposed","seq":4,"call_id":"e1","name":"edit_file","arguments":{"path":"main.go","old_string":"\treturn a - b","new_string":"\treturn a + b"}})));
    let answer = "Fixed:\n\n```go\nfunc add(a, b int) int {\n\treturn a + b\n}\n```";
    app.apply(turn_event(
        json!({"type":"assistant.completed","seq":5,"content":answer}),
    ));
    let screen = render(&app);
    assert!(screen.contains("     1  def add(a, b):"), "{screen}");
    assert!(screen.contains("     2      return a - b"), "{screen}");
    assert!(screen.contains("│     return a + b"), "{screen}");
    assert!(screen.contains("␇"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn at_path_completion() {
    highlight::load();
    let dir = tempfile::tempdir().unwrap();
    for path in ["src/main.rs", "src/lib.rs", "src/tui/app.rs"] {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
    }
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":dir.path(),
        "model":"gpt-4.1-mini","context_max_tokens":128000,"max_server_frame_bytes":8388608,
        "max_transcript_bytes":8388608,"max_transcript_items":10000,"max_prompt_history_bytes":1048576,
        "max_prompt_history_items":200})));
    type_text(&mut app, "explain @src/");
    let screen = render(&app);
    // The workspace path is a temporary one: the status line is cut.
    let screen: String = screen.lines().take(23).collect::<Vec<_>>().join("\n");
    assert!(screen.contains("@src/lib.rs"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn a_long_thought_streams_its_last_lines() {
    let mut app = started_app();
    start_turn(&mut app, "Think hard");
    for i in 1..=40 {
        app.apply(turn_event(json!({"type":"reasoning.delta","seq":1+i,"content":format!("step {i} of the reasoning\n")})));
    }
    let screen = render(&app);
    assert!(screen.contains("ctrl+o shows all"), "{screen}");
    assert!(screen.contains("step 40 of the reasoning"), "{screen}");
    assert!(
        !screen.contains("step 34 of"),
        "only the last lines: {screen}"
    );
    app.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let screen = render(&app);
    assert!(screen.contains("step 34 of"), "expanded: {screen}");
}

/// Two priced turns and a budget warning (capability `usage`): the status
/// line has the session's cost and the warned budget; `/cost` breaks the
/// session down by turn.
fn app_with_costs() -> App {
    let mut app = started_app();
    app.apply(turn_event(json!({"type":"turn.completed","seq":1,"steps":2,
        "usage":{"input_tokens":24000,"output_tokens":1300},
        "usage_detail":{"input":4000,"cache_read":18000,"cache_write":2000,"output":1300,"reasoning":300},
        "session_usage_detail":{"input":4000,"cache_read":18000,"cache_write":2000,"output":1300,"reasoning":300},
        "cost_usd":0.0123,"session_cost_usd":0.0123})));
    app.apply(turn_event(json!({"type":"budget.warning","seq":2,"budget":"max_session_cost_usd",
        "limit":0.02,"spent":0.0171,"message":"85% of budget max_session_cost_usd ($0.0200) spent: $0.0171"})));
    app.apply(turn_event(json!({"type":"turn.completed","seq":3,"steps":1,
        "usage":{"input_tokens":1200,"output_tokens":240},
        "usage_detail":{"input":1200,"cache_read":0,"cache_write":0,"output":240,"reasoning":0},
        "session_usage_detail":{"input":5200,"cache_read":18000,"cache_write":2000,"output":1540,"reasoning":300},
        "cost_usd":0.0048,"session_cost_usd":0.0171})));
    app
}

#[test]
fn cost_on_the_status_line_and_by_turn_in_cost() {
    let mut app = app_with_costs();
    let screen = render(&app);
    let status_line = screen.lines().rev().find(|l| l.contains("↑")).unwrap();
    assert!(status_line.contains("$0.0171"), "{screen}");
    assert!(status_line.contains("budget 80%"), "{screen}");
    type_text(&mut app, "/cost");
    key(&mut app, KeyCode::Enter);
    let screen = render(&app);
    assert!(screen.contains("#1"), "{screen}");
    assert!(screen.contains("$0.0048"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn status_shows_the_session_cost_or_no_price() {
    let mut app = app_with_costs();
    type_text(&mut app, "/status");
    key(&mut app, KeyCode::Enter);
    let screen = render(&app);
    assert!(screen.contains("$0.0171 over 2 turns"), "{screen}");
    insta::assert_snapshot!(screen);

    // A model without a price: tokens, and "no price", never $0.
    let mut app = started_app();
    app.apply(turn_event(json!({"type":"turn.completed","seq":1,"steps":1,
        "usage":{"input_tokens":1200,"output_tokens":240},
        "usage_detail":{"input":1200,"cache_read":0,"cache_write":0,"output":240,"reasoning":0},
        "session_usage_detail":{"input":1200,"cache_read":0,"cache_write":0,"output":240,"reasoning":0},
        "cost_usd":null,"session_cost_usd":null})));
    let screen = render(&app);
    assert!(screen.contains("no price"), "{screen}");
    assert!(!screen.contains("$0"), "{screen}");
    type_text(&mut app, "/status");
    key(&mut app, KeyCode::Enter);
    let screen = render(&app);
    assert!(
        screen.contains("no price for this model (tokens only)"),
        "{screen}"
    );
}

/// At 40 columns the welcome lines wrap at words; nothing is cut.
#[test]
fn the_welcome_wraps_on_a_narrow_screen() {
    let mut app = started_app();
    app.resize(40, 24);
    let mut terminal = Terminal::new(TestBackend::new(40, 24)).unwrap();
    terminal.draw(|frame| view::draw(frame, &app)).unwrap();
    let screen = terminal.backend().to_string();
    let text: String = screen
        .lines()
        .map(|line| line.trim_matches('"').trim_end())
        .collect::<Vec<_>>()
        .join(" ");
    for words in [
        "/help lists keys and commands.",
        "and plans, and changes nothing.",
    ] {
        assert!(text.contains(words), "{screen}");
    }
}

/// The status line's counters move with each step's usage, before the
/// turn ends (`usage.updated`).
#[test]
fn the_counters_move_while_the_turn_runs() {
    let mut app = started_app();
    start_turn(&mut app, "Look around");
    assert!(render(&app).contains("0↑ 0↓"));
    app.apply(turn_event(json!({"type":"usage.updated","seq":2,
        "step":{"input_tokens":1500,"output_tokens":40},
        "turn":{"input_tokens":1500,"output_tokens":40},"steps":1})));
    let screen = render(&app);
    assert!(screen.contains("1.5k↑ 40↓"), "{screen}");
    assert!(screen.contains("ctx 1.5k/"), "{screen}");
}

/// A paste of more lines than the input box shows says how many it holds;
/// a one-line message says nothing.
#[test]
fn a_pasted_message_counts_its_lines_in_the_box() {
    let mut app = started_app();
    type_text(&mut app, "one line");
    assert!(!render(&app).contains(" lines "), "{}", render(&app));
    let mut app = started_app();
    let pasted: Vec<String> = (1..=40).map(|n| format!("log line {n}")).collect();
    app.on_paste(&pasted.join("\n"));
    let screen = render(&app);
    assert!(screen.contains(" 40 lines "), "{screen}");
    assert!(screen.contains("log line 40"), "the end shows: {screen}");
}

/// `scv --remote HOST`: the status line names the host the session's
/// commands run on.
#[test]
fn the_remote_host_is_on_the_status_line() {
    let mut app = started_app();
    app.remote_host = Some("build-box".into());
    let screen = render(&app);
    let status = screen.lines().rev().find(|l| l.contains("idle")).unwrap();
    assert!(status.contains("on build-box"), "{screen}");
}

/// At 50 columns the approval's options and keys wrap instead of being
/// cut: the whole rule and "No" are on screen.
#[test]
fn a_narrow_approval_wraps_its_options() {
    let mut app = started_app();
    app.resize(50, 30);
    start_turn(&mut app, "Test it");
    app.apply(turn_event(json!({"type":"tool.proposed","seq":2,"call_id":"c1","name":"bash","arguments":{"command":"cargo test --workspace --all-targets"}})));
    app.apply(turn_event(json!({"type":"approval.requested","seq":3,"approval_id":"ap-1","call_id":"c1","name":"bash","risk":"process","cwd":"/work/project/with/a/long/path","summary":"Run shell command: cargo test --workspace --all-targets"})));
    app.now += Duration::from_secs(1);
    let mut terminal = Terminal::new(TestBackend::new(50, 30)).unwrap();
    terminal.draw(|frame| view::draw(frame, &app)).unwrap();
    let screen = terminal.backend().to_string();
    let text: String = screen
        .lines()
        .map(|l| l.trim_matches('"').trim_matches('┃').trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains("(any arguments)"), "{screen}");
    assert!(text.contains("while scv runs"), "{screen}");
    assert!(text.contains("3 No"), "{screen}");
    assert!(text.contains("/work/project/with/a/long/path"), "{screen}");
}
