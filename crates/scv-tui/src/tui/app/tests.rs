//! The App driven by protocol events and keys: custom commands and skills
//! as slash commands, and plan mode.

use super::{App, Outgoing};
use crate::tui::transcript::ItemKind;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use scv_protocol::{ClientMessage, Event, Mode, SessionConfigure, TurnStart};
use serde_json::{json, Value};
use std::time::Instant;

const S: &str = "sess-1";

fn event(value: Value) -> Event {
    serde_json::from_value(value).expect("a valid event")
}

/// A session that offers a workspace command, a user skill, and a command
/// named as a built-in; one command file was skipped.
fn app_with_commands() -> App {
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,
        "cwd":"/work/project","model":"gpt-4.1-mini","context_max_tokens":128000,
        "max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,"max_transcript_items":10000,
        "max_prompt_history_bytes":1048576,"max_prompt_history_items":200,
        "commands":[
            {"name":"review","kind":"command","description":"Review the changes","argument_hint":"[path]","scope":"workspace"},
            {"name":"pdf","kind":"skill","description":"Work with PDF files\nsecond line","scope":"user"},
            {"name":"model","kind":"command","description":"shadowed","scope":"workspace"}
        ],
        "command_diagnostics":[".scv/commands/bad.md:1: the front matter has no closing ---"]})));
    app.apply(event(
        json!({"type":"queue.snapshot","request_id":"s","session_id":S,"seq":0,"entries":[]}),
    ));
    app
}

fn key(app: &mut App, code: KeyCode) -> Vec<Outgoing> {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn shift_tab(app: &mut App) -> Vec<Outgoing> {
    app.on_key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT))
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
}

fn run(app: &mut App, text: &str) -> Vec<Outgoing> {
    type_text(app, text);
    key(app, KeyCode::Enter)
}

fn render(app: &App) -> String {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal
        .draw(|frame| crate::tui::view::draw(frame, app))
        .unwrap();
    terminal.backend().to_string()
}

/// The one message sent, and its request id.
fn sent(out: &[Outgoing]) -> (String, ClientMessage) {
    match out {
        [Outgoing::Send {
            request_id,
            message,
        }] => (request_id.clone(), message.clone()),
        other => panic!("expected one message, got {other:?}"),
    }
}

fn turn_start(out: &[Outgoing]) -> TurnStart {
    match sent(out).1 {
        ClientMessage::TurnStart(start) => start,
        other => panic!("expected turn.start, got {other:?}"),
    }
}

fn notices(app: &App) -> Vec<String> {
    app.transcript
        .items()
        .iter()
        .filter_map(|i| match &i.kind {
            ItemKind::Notice(text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The server's answer to a `session.configure`.
fn configured(app: &mut App, request_id: &str, mode: &str) {
    app.apply(event(json!({"type":"session.configured","request_id":request_id,"session_id":S,
        "seq":3,"provider":"openai","model":"gpt-4.1-mini","context_max_tokens":128000,"mode":mode})));
}

fn status_line(app: &App) -> String {
    render(app).lines().last().unwrap().to_string()
}

#[test]
fn the_popup_and_help_list_custom_commands_after_the_builtins() {
    let mut app = app_with_commands();
    type_text(&mut app, "/");
    let names: Vec<String> = app.slash_matches().into_iter().map(|(n, _)| n).collect();
    let builtins = super::commands::SLASH_COMMANDS.len();
    assert_eq!(names[builtins..], ["/review", "/pdf"], "{names:?}");
    assert_eq!(
        names.iter().filter(|n| *n == "/model").count(),
        1,
        "a built-in's name is listed once"
    );

    app.input.set("");
    type_text(&mut app, "/re");
    insta::assert_snapshot!(render(&app));
    // Tab completes a custom name as it does a built-in's.
    type_text(&mut app, "vi");
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.input.text(), "/review");

    app.input.set("");
    assert!(run(&mut app, "/help").is_empty());
    let help = app.overlay_data().commands;
    let custom: Vec<_> = help[builtins..].to_vec();
    assert_eq!(
        custom,
        [
            (
                "/review".to_string(),
                "[path] · Review the changes (workspace command)".to_string()
            ),
            (
                "/pdf".to_string(),
                "Work with PDF files (user skill)".to_string()
            ),
        ]
    );
    key(&mut app, KeyCode::End);
    let screen = render(&app);
    assert!(screen.contains("/pdf"), "{screen}");
    assert!(screen.contains("(user skill)"), "{screen}");
}

#[test]
fn enter_sends_a_custom_command_as_one_and_the_rest_as_before() {
    let mut app = app_with_commands();
    let out = run(&mut app, "/review src");
    let start = turn_start(&out);
    assert_eq!(
        (start.prompt.as_str(), start.command),
        ("/review src", true)
    );
    // Shown as typed once its turn starts, like any prompt.
    let (request_id, _) = sent(&out);
    app.apply(event(
        json!({"type":"turn.started","request_id":request_id,"session_id":S,
        "turn_id":"turn-1","seq":1}),
    ));
    assert!(app
        .transcript
        .items()
        .iter()
        .any(|i| matches!(&i.kind, ItemKind::User(t) if t == "/review src")));
    app.apply(event(
        json!({"type":"turn.completed","session_id":S,"turn_id":"turn-1","seq":2,"steps":1}),
    ));

    // Without arguments too.
    let start = turn_start(&run(&mut app, "/pdf"));
    assert_eq!((start.prompt.as_str(), start.command), ("/pdf", true));

    // A built-in wins over the session's command of the same name.
    let (_, message) = sent(&run(&mut app, "/model gpt-4o"));
    assert_eq!(
        message,
        ClientMessage::SessionConfigure(SessionConfigure {
            session_id: S.into(),
            model: Some("gpt-4o".into()),
            ..SessionConfigure::default()
        })
    );

    // A path is a prompt.
    let start = turn_start(&run(&mut app, "/usr/bin/x slow"));
    assert_eq!(
        (start.prompt.as_str(), start.command),
        ("/usr/bin/x slow", false)
    );
    // A built-in that takes no words, with words, is a prompt (as before).
    let start = turn_start(&run(&mut app, "/help me with this"));
    assert!(!start.command);
    // An unknown lone `/word` is refused here, as before.
    assert!(run(&mut app, "/bogus").is_empty());
    assert!(app
        .hint
        .as_deref()
        .unwrap()
        .contains("unknown command /bogus; try /help"));
    let start = turn_start(&run(&mut app, "/bogus with words"));
    assert!(!start.command);
}

#[test]
fn skipped_command_files_are_noticed_once() {
    let app = app_with_commands();
    let skipped: Vec<String> = notices(&app)
        .into_iter()
        .filter(|n| n.starts_with("skipped: "))
        .collect();
    assert_eq!(
        skipped,
        ["skipped: .scv/commands/bad.md:1: the front matter has no closing ---"]
    );
}

#[test]
fn shift_tab_asks_for_plan_mode_and_the_server_says_when_it_is_on() {
    let mut app = app_with_commands();
    let (request_id, message) = sent(&shift_tab(&mut app));
    assert_eq!(
        message,
        ClientMessage::SessionConfigure(SessionConfigure {
            session_id: S.into(),
            mode: Some(Mode::Plan),
            ..SessionConfigure::default()
        })
    );
    assert!(
        !status_line(&app).contains("plan"),
        "not before the server says so"
    );
    assert!(!app.plan_mode());

    configured(&mut app, &request_id, "plan");
    assert!(app.plan_mode());
    insta::assert_snapshot!(render(&app));
    assert!(
        !notices(&app).iter().any(|n| n.starts_with("now using")),
        "a mode switch is no news about the model"
    );

    let (request_id, message) = sent(&shift_tab(&mut app));
    let ClientMessage::SessionConfigure(configure) = message else {
        panic!("{message:?}")
    };
    assert_eq!(configure.mode, Some(Mode::Default));
    configured(&mut app, &request_id, "default");
    assert!(!status_line(&app).contains("plan mode"));
    assert!(
        app.input.is_empty(),
        "no plan was made: nothing to carry out"
    );
    assert_eq!(notices(&app).last().unwrap(), "plan mode off");
}

#[test]
fn leaving_plan_mode_after_a_plan_offers_to_carry_it_out() {
    let mut app = app_with_commands();
    let (request_id, _) = sent(&run(&mut app, "/plan"));
    configured(&mut app, &request_id, "plan");

    let (request_id, _) = sent(&run(&mut app, "plan the refactor"));
    app.apply(event(
        json!({"type":"turn.started","request_id":request_id,"session_id":S,
        "turn_id":"turn-1","seq":1}),
    ));
    // Shift+Tab works while the turn runs; the turn completes first here.
    let (mode_request, message) = sent(&shift_tab(&mut app));
    let ClientMessage::SessionConfigure(configure) = message else {
        panic!("{message:?}")
    };
    assert_eq!(configure.mode, Some(Mode::Default));
    app.apply(event(
        json!({"type":"turn.completed","session_id":S,"turn_id":"turn-1","seq":2,"steps":1}),
    ));
    configured(&mut app, &mode_request, "default");

    assert_eq!(app.input.text(), super::plan::CARRY_OUT);
    assert_eq!(
        notices(&app).last().unwrap(),
        "plan mode off — press Enter to carry out the plan"
    );
    assert!(app.take_outgoing().is_empty(), "never sent by itself");
    let start = turn_start(&key(&mut app, KeyCode::Enter));
    assert_eq!(
        (start.prompt.as_str(), start.command),
        ("Carry out the plan.", false)
    );
}

#[test]
fn shift_tab_twice_before_the_answer_asks_for_each_mode_in_turn() {
    let mut app = app_with_commands();
    let modes: Vec<Option<Mode>> = (0..2)
        .map(|_| match sent(&shift_tab(&mut app)).1 {
            ClientMessage::SessionConfigure(c) => c.mode,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(modes, [Some(Mode::Plan), Some(Mode::Default)]);
}

#[test]
fn a_session_that_starts_in_plan_mode_says_so() {
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,
        "cwd":"/work/project","model":"gpt-4.1-mini","context_max_tokens":128000,
        "max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,"max_transcript_items":10000,
        "max_prompt_history_bytes":1048576,"max_prompt_history_items":200,"mode":"plan"})));
    assert!(app.plan_mode());
    assert!(status_line(&app).contains("⏸ plan mode"));
    let (_, message) = sent(&shift_tab(&mut app));
    let ClientMessage::SessionConfigure(configure) = message else {
        panic!("{message:?}")
    };
    assert_eq!(configure.mode, Some(Mode::Default));
}

#[test]
fn shift_tab_without_a_session_says_not_connected() {
    let mut app = App::new(Instant::now());
    assert!(shift_tab(&mut app).is_empty());
    assert_eq!(app.hint.as_deref(), Some("not connected"));
}

#[test]
fn enter_in_the_slash_popup_runs_the_highlighted_match() {
    let mut app = app_with_commands();
    type_text(&mut app, "/st");
    let first = app.slash_matches().first().map(|(n, _)| n.clone());
    assert_eq!(first.as_deref(), Some("/status"), "highlighted first");
    key(&mut app, KeyCode::Enter);
    assert!(
        matches!(&app.overlay, Some(o) if matches!(o.kind, crate::tui::overlays::OverlayKind::Status)),
        "/status runs"
    );
    assert_eq!(app.hint, None, "not an unknown command");
    assert_eq!(app.input.text(), "");
    // A custom command's partial name runs it, as a command.
    app.overlay = None;
    let start = turn_start(&run(&mut app, "/rev"));
    assert_eq!((start.prompt.as_str(), start.command), ("/review", true));
    // Nothing matching: still unknown; an exact name runs as typed.
    assert!(run(&mut app, "/zz").is_empty());
    assert!(app
        .hint
        .as_deref()
        .unwrap_or("")
        .contains("unknown command /zz"));
    app.input.set("");
    assert!(run(&mut app, "/help").is_empty());
    assert!(
        matches!(&app.overlay, Some(o) if matches!(o.kind, crate::tui::overlays::OverlayKind::Help))
    );
}

#[test]
fn the_status_line_says_a_session_is_not_saved_until_its_journal_recovers() {
    let mut app = app_with_commands();
    assert!(!status_line(&app).contains("not saved"));
    app.apply(event(json!({"type":"session.warning","session_id":S,"seq":3,"code":"journal_failed",
        "message":"not saved: the disk under SCV_HOME is full: turns go on, and what the session's journal lacks is kept and written as soon as there is room (No space left on device)"})));
    assert!(
        status_line(&app).contains("not saved: the disk under SCV_HOME is full"),
        "{}",
        status_line(&app)
    );
    assert!(notices(&app)
        .iter()
        .any(|n| n.starts_with("not saved: the disk under SCV_HOME is full: turns go on")));
    app.apply(event(json!({"type":"session.warning","session_id":S,"seq":4,"code":"journal_recovered",
        "message":"saved again: the session's journal caught up (6 record(s) written that had waited for room); it resumes whole"})));
    assert!(
        !status_line(&app).contains("not saved"),
        "{}",
        status_line(&app)
    );
    assert!(notices(&app).iter().any(|n| n.starts_with("saved again")));
}

/// `/budget AMOUNT` sends `session.configure` {`max_session_cost_usd`}; the
/// server's answer sets it (no "now using" notice: the model did not
/// change), clears the 80 % warning, and `/budget` then says it. A bad
/// amount sends nothing.
#[test]
fn budget_sets_the_sessions_budget_through_session_configure() {
    let mut app = app_with_commands();
    assert!(run(&mut app, "/budget lots").is_empty());
    assert!(app
        .hint
        .as_deref()
        .unwrap()
        .starts_with("/budget takes an amount in USD"));
    assert!(run(&mut app, "/budget 0").is_empty());

    app.apply(event(
        json!({"type":"budget.warning","request_id":"r","session_id":S,
        "turn_id":"t","seq":2,"budget":"max_session_cost_usd","limit":0.5,"spent":0.45,
        "message":"90% of budget max_session_cost_usd ($0.5000) spent: $0.4500"}),
    ));
    assert!(
        status_line(&app).contains("budget 80%"),
        "{}",
        status_line(&app)
    );

    let (request_id, message) = sent(&run(&mut app, "/budget $2.50"));
    let ClientMessage::SessionConfigure(configure) = message else {
        panic!("{message:?}")
    };
    assert_eq!(configure.max_session_cost_usd, Some(2.5));
    assert_eq!((configure.provider, configure.model), (None, None));
    let before = notices(&app).len();
    app.apply(event(
        json!({"type":"session.configured","request_id":request_id,
        "session_id":S,"seq":3,"provider":"openai","model":"gpt-4.1-mini",
        "context_max_tokens":128000,"max_session_cost_usd":2.5,"mode":"default"}),
    ));
    let added = &notices(&app)[before..];
    assert_eq!(added, ["budget: $2.50 for this session (spent $0.00)"]);
    assert!(!status_line(&app).contains("budget 80%"));
    assert!(run(&mut app, "/budget").is_empty());
    assert_eq!(
        app.hint.as_deref(),
        Some("budget: $2.50 for this session, spent nothing priced (/budget AMOUNT changes it)")
    );

    // `/status` names it.
    run(&mut app, "/status");
    let screen = render(&app);
    assert!(
        screen.contains("$2.50 for this session (/budget changes it)"),
        "{screen}"
    );
    key(&mut app, KeyCode::Esc);

    // A refused request sets nothing.
    let (request_id, _) = sent(&run(&mut app, "/budget 9"));
    app.apply(event(
        json!({"type":"error","request_id":request_id,"code":"invalid_request",
        "message":"no","fatal":false}),
    ));
    assert!(run(&mut app, "/budget").is_empty());
    assert!(app.hint.as_deref().unwrap().starts_with("budget: $2.50"));
}

/// In plan mode a `bash` approval says it runs read-only and offers no
/// "always allow" rule (one would hold outside plan mode too, where the
/// command may write); outside plan mode the same call offers one.
#[test]
fn a_plan_mode_approval_says_read_only_and_offers_no_rule() {
    let approval = |app: &mut App, id: &str| {
        app.apply(event(
            json!({"type":"tool.proposed","request_id":"t","session_id":S,
            "turn_id":"turn-1","seq":5,"call_id":id,"name":"bash",
            "arguments":{"command":"ls src"}}),
        ));
        app.apply(event(
            json!({"type":"approval.requested","request_id":"t","session_id":S,
            "turn_id":"turn-1","seq":6,"approval_id":id,"call_id":id,"name":"bash",
            "risk":"process","cwd":"/work/project","summary":"Run shell command: ls src",
            "sandboxed":true}),
        ));
    };
    let mut app = app_with_commands();
    let (request_id, _) = sent(&run(&mut app, "/plan"));
    configured(&mut app, &request_id, "plan");
    let (request_id, _) = sent(&run(&mut app, "look around"));
    app.apply(event(
        json!({"type":"turn.started","request_id":request_id,"session_id":S,"turn_id":"turn-1","seq":4}),
    ));
    approval(&mut app, "a1");
    let screen = render(&app);
    assert!(screen.contains("read-only (plan mode)"), "{screen}");
    assert!(!screen.contains("always allow"), "{screen}");
    assert!(screen.contains("(no rule in plan mode"), "{screen}");
    assert!(!screen.contains("  sandboxed"), "{screen}");

    // Out of plan mode the same call is "sandboxed" and may become a rule.
    let mut app = app_with_commands();
    let (request_id, _) = sent(&run(&mut app, "look around"));
    app.apply(event(
        json!({"type":"turn.started","request_id":request_id,"session_id":S,"turn_id":"turn-1","seq":4}),
    ));
    approval(&mut app, "a2");
    let screen = render(&app);
    assert!(screen.contains("sandboxed"), "{screen}");
    assert!(screen.contains("always allow"), "{screen}");
}

#[test]
fn init_asks_the_model_to_write_agents_md() {
    let mut app = app_with_commands();
    let start = turn_start(&run(&mut app, "/init"));
    assert!(
        start.prompt.contains("create an AGENTS.md"),
        "{}",
        start.prompt
    );
    assert!(start.prompt.contains("CLAUDE.md"), "{}", start.prompt);
    assert!(!start.command, "/init is SCV's, not a custom command");
}

#[test]
fn compact_sends_the_servers_command_with_its_focus() {
    let mut app = app_with_commands();
    let start = turn_start(&run(&mut app, "/compact the failing test"));
    assert_eq!(start.prompt, "/compact the failing test");
    assert!(start.command, "/compact is the server's command");
    let mut app = app_with_commands();
    let start = turn_start(&run(&mut app, "/compact"));
    assert_eq!((start.prompt.as_str(), start.command), ("/compact", true));
}

/// Background processes, known from the tool results: counted on the
/// status line while they run, listed by `/ps`; `/ps ID` asks the server
/// for the end of one's output, `/ps kill ID` stops it.
#[test]
fn background_processes_show_on_the_status_line_and_in_ps() {
    let mut app = app_with_commands();
    let (request_id, _) = sent(&run(&mut app, "serve it"));
    let mut seq = 4;
    let mut apply = |app: &mut App, mut body: Value| {
        body["request_id"] = json!(request_id);
        body["session_id"] = json!(S);
        body["turn_id"] = json!("turn-1");
        body["seq"] = json!(seq);
        seq += 1;
        app.apply(event(body));
    };
    apply(&mut app, json!({"type":"turn.started"}));
    apply(
        &mut app,
        json!({"type":"tool.proposed","call_id":"c1","name":"bash",
        "arguments":{"command":"python3 -m http.server 8000","background":true}}),
    );
    apply(
        &mut app,
        json!({"type":"tool.completed","call_id":"c1","name":"bash","success":true,"truncated":false,
        "output":"Started in the background in the sandbox.\nprocess_id: bg1\nRead its output with bash_output."}),
    );
    let wide = |app: &App| {
        let mut terminal = Terminal::new(TestBackend::new(200, 24)).unwrap();
        terminal
            .draw(|frame| crate::tui::view::draw(frame, app))
            .unwrap();
        terminal
            .backend()
            .to_string()
            .lines()
            .last()
            .unwrap()
            .to_string()
    };
    assert!(wide(&app).contains("1 bg (/ps)"), "{}", wide(&app));
    apply(
        &mut app,
        json!({"type":"tool.proposed","call_id":"c2","name":"bash_output",
        "arguments":{"process_id":"bg1"}}),
    );
    apply(
        &mut app,
        json!({"type":"tool.completed","call_id":"c2","name":"bash_output","success":true,"truncated":false,
        "output":"Serving HTTP on 127.0.0.1 port 8000\n\"GET / HTTP/1.1\" 200 -\n[process bg1: running]"}),
    );
    // `/ps` asks the server; its list holds one the tool results did not
    // show (this client came late).
    let (list_id, message) = sent(&run(&mut app, "/ps"));
    assert!(
        matches!(&message, ClientMessage::ProcessList(l) if l.session_id == S),
        "{message:?}"
    );
    app.apply(event(
        json!({"type":"process.listed","request_id":list_id,"session_id":S,
        "processes":[
            {"process_id":"bg1","command":"python3 -m http.server 8000","running":true},
            {"process_id":"bg2","command":"npm run watch","running":true}]}),
    ));
    let listed = notices(&app).last().unwrap().clone();
    assert!(
        listed.contains("bg1  running  python3 -m http.server 8000")
            && listed.contains("bg2  running  npm run watch"),
        "{listed}"
    );
    assert!(wide(&app).contains("2 bg (/ps)"), "{}", wide(&app));
    // `/ps bg1` asks the server for the end of its output.
    let (peek_id, message) = sent(&run(&mut app, "/ps bg1"));
    match message {
        ClientMessage::ProcessPeek(request) => {
            assert_eq!(
                (request.session_id.as_str(), request.process_id.as_str()),
                (S, "bg1")
            )
        }
        other => panic!("expected process.peek, got {other:?}"),
    }
    app.apply(event(
        json!({"type":"process.state","request_id":peek_id,"session_id":S,
        "process_id":"bg1","command":"python3 -m http.server 8000","running":true,
        "output":"Serving HTTP on 127.0.0.1 port 8000\n\"GET /new HTTP/1.1\" 200 -\n"}),
    ));
    let detail = notices(&app).last().unwrap().clone();
    assert!(detail.starts_with("bg1 (running): python3"), "{detail}");
    assert!(detail.contains("\"GET /new HTTP/1.1\" 200"), "{detail}");

    // `/ps kill bg1` stops it; the answer ends it on the status line.
    let (kill_id, message) = sent(&run(&mut app, "/ps kill bg1"));
    assert!(
        matches!(&message, ClientMessage::ProcessKill(r) if r.process_id == "bg1"),
        "{message:?}"
    );
    app.apply(event(
        json!({"type":"process.state","request_id":kill_id,"session_id":S,
        "process_id":"bg1","command":"python3 -m http.server 8000","running":false,
        "status":"killed"}),
    ));
    assert!(notices(&app).last().unwrap().starts_with("bg1 (killed)"));
    assert!(wide(&app).contains("1 bg (/ps)"), "{}", wide(&app));
    let (list_id, _) = sent(&run(&mut app, "/ps"));
    app.apply(event(json!({"type":"process.listed","request_id":list_id,"session_id":S,
        "processes":[
            {"process_id":"bg1","command":"python3 -m http.server 8000","running":false,"status":"killed"},
            {"process_id":"bg2","command":"npm run watch","running":false,"status":"exited with code 0"}]})));
    assert!(notices(&app).last().unwrap().contains("bg1  killed"));
    assert!(!wide(&app).contains("bg (/ps)"), "{}", wide(&app));
}
