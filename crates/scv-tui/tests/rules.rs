#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Session approval rules through the App: `a` in the approval prompt,
//! what a rule then answers by itself (a table of commands that must and
//! must not match), refused rules, `/approvals`, and the type-ahead
//! safety the prompt keeps for `a`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use scv_protocol::ApprovalResolve;
use scv_protocol::{ClientMessage, Event};
use scv_tui::tui::app::{App, Outgoing};
use scv_tui::tui::overlay::OverlayKind;
use scv_tui::tui::transcript::ItemKind;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const S: &str = "s1";
const CWD: &str = "/w";

fn event(value: Value) -> Event {
    serde_json::from_value(value).unwrap()
}

fn app() -> App {
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":CWD,"model":"m",
        "context_max_tokens":1000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,
        "max_transcript_items":10000,"max_prompt_history_bytes":1048576,"max_prompt_history_items":200})));
    app.apply(event(
        json!({"type":"turn.started","request_id":"r","session_id":S,"turn_id":"t1","seq":1}),
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

fn sent(out: &[Outgoing]) -> Vec<ClientMessage> {
    out.iter()
        .filter_map(|o| match o {
            Outgoing::Send { message, .. } => Some(message.clone()),
            Outgoing::Quit | Outgoing::Open(_) => None,
        })
        .collect()
}

fn approved(id: &str) -> ClientMessage {
    ClientMessage::ApprovalResolve(ApprovalResolve {
        session_id: S.into(),
        approval_id: id.into(),
        approved: true,
    })
}

/// A call of `name` with `arguments` proposed and waiting for approval.
fn ask(app: &mut App, id: &str, name: &str, risk: &str, arguments: Value, summary: &str) {
    let turn = |mut v: Value| {
        v["request_id"] = json!("r");
        v["session_id"] = json!(S);
        v["turn_id"] = json!("t1");
        event(v)
    };
    app.apply(turn(json!({"type":"tool.proposed","seq":2,"call_id":format!("c-{id}"),"name":name,"arguments":arguments})));
    app.apply(turn(
        json!({"type":"approval.requested","seq":3,"approval_id":id,"call_id":format!("c-{id}"),
        "name":name,"risk":risk,"cwd":CWD,"summary":summary}),
    ));
}

fn ask_bash(app: &mut App, id: &str, command: &str) {
    ask(
        app,
        id,
        "bash",
        "process",
        json!({ "command": command }),
        &format!("Run shell command: {command}"),
    );
}

/// Whether a rule answered approval `id` by itself (nothing was pressed).
fn answered_by_rule(app: &mut App, id: &str) -> bool {
    let out = sent(&app.take_outgoing());
    let answered = out.contains(&approved(id));
    assert!(
        answered || out.is_empty(),
        "a rule only ever approves: {out:?}"
    );
    if !answered {
        // Leave the prompt empty for the next call: deny this one.
        app.now += Duration::from_secs(1);
        let out = sent(&answer(app, '3'));
        assert!(
            matches!(
                &out[..],
                [ClientMessage::ApprovalResolve(ApprovalResolve {
                    approved: false,
                    ..
                })]
            ),
            "{out:?}"
        );
    }
    answered
}

/// Asks for `command` and presses `a` once the prompt is armed.
fn add_rule_from(app: &mut App, command: &str) -> Vec<ClientMessage> {
    ask_bash(app, "first", command);
    assert!(app.take_outgoing().is_empty(), "no rule yet");
    app.now += Duration::from_secs(1);
    sent(&answer(app, '2'))
}

#[test]
fn a_approves_and_adds_a_rule_that_answers_only_simple_matching_commands() {
    let mut app = app();
    assert_eq!(add_rule_from(&mut app, "cargo test"), [approved("first")]);
    let labels: Vec<String> = app.rules.list().iter().map(|r| r.label()).collect();
    assert_eq!(labels, ["cargo test"]);
    assert!(app.approval.is_empty());

    let must_match = [
        "cargo test",
        "cargo test --release",
        "cargo test -p scv-tui -- --nocapture",
        "cargo   test",
        "'cargo' test",
        "cargo \"test\" it",
        "cargo test 'a; b && c | d > e'",
        "cargo test \"quoted $HOME\"",
        "cargo test\tspaced-with-a-tab",
    ];
    let must_not_match = [
        "cargo test; rm -rf x",
        "cargo test;rm -rf x",
        "cargo test && rm -rf x",
        "cargo test || rm -rf x",
        "cargo test | sh",
        "cargo test & rm -rf x",
        "cargo test > /etc/passwd",
        "cargo test 2>&1",
        "cargo test < input",
        "cargo test >> log",
        "cargo test `rm -rf x`",
        "cargo test $(rm -rf x)",
        "cargo test \"$(rm -rf x)\"",
        "cargo test\nrm -rf x",
        "cargo test \\\nrm -rf x",
        "cargo test\rrm -rf x",
        "(cargo test)",
        "cargo test 'unterminated",
        "FOO=1 cargo test",
        "RUSTC_WRAPPER=/tmp/evil cargo test",
        "cargo build",
        "cargo testing",
        "cargo",
        "echo cargo test",
        "/tmp/cargo test",
        "sh -c 'cargo test'",
        "cargo test \u{202e}x",
        "cargo\u{200b} test",
    ];
    let mut wrong = Vec::new();
    for (i, command) in must_match.iter().enumerate() {
        ask_bash(&mut app, &format!("m{i}"), command);
        if !answered_by_rule(&mut app, &format!("m{i}")) {
            wrong.push(format!("should match: {command:?}"));
        }
    }
    for (i, command) in must_not_match.iter().enumerate() {
        ask_bash(&mut app, &format!("x{i}"), command);
        if answered_by_rule(&mut app, &format!("x{i}")) {
            wrong.push(format!("must not match: {command:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");

    // The transcript says which rule answered.
    let said = app.transcript.items().iter().any(|item| {
        matches!(&item.kind, ItemKind::Tool(card)
            if card.approved_by.as_deref() == Some("cargo test"))
    });
    assert!(said);
}

#[test]
fn a_call_outside_the_sandbox_never_matches_and_makes_no_rule() {
    let mut app = app();
    add_rule_from(&mut app, "cargo test");
    ask(
        &mut app,
        "u1",
        "bash",
        "process",
        json!({"command": "cargo test", "unsandboxed": true}),
        "Run shell command outside the sandbox: cargo test",
    );
    assert!(!answered_by_rule(&mut app, "u1"));

    let mut app = self::app();
    ask(
        &mut app,
        "u2",
        "bash",
        "process",
        json!({"command": "cargo fetch", "unsandboxed": true}),
        "Run shell command outside the sandbox: cargo fetch",
    );
    app.now += Duration::from_secs(1);
    assert!(key(&mut app, KeyCode::Char('2')).is_empty());
    assert!(app.rules.is_empty());
    assert!(app.hint.as_deref().unwrap().contains("outside the sandbox"));
}

#[test]
fn leading_assignments_are_part_of_the_rule() {
    let mut app = app();
    assert_eq!(
        add_rule_from(&mut app, "RUST_LOG=debug cargo test --lib"),
        [approved("first")]
    );
    assert_eq!(app.rules.list()[0].label(), "RUST_LOG=debug cargo test");
    for (i, (command, expected)) in [
        ("RUST_LOG=debug cargo test", true),
        ("RUST_LOG=debug cargo test -q", true),
        ("cargo test", false),
        ("RUST_LOG=trace cargo test", false),
        ("LD_PRELOAD=/tmp/x.so RUST_LOG=debug cargo test", false),
        ("RUST_LOG=debug LD_PRELOAD=/tmp/x.so cargo test", false),
    ]
    .into_iter()
    .enumerate()
    {
        ask_bash(&mut app, &format!("e{i}"), command);
        assert_eq!(
            answered_by_rule(&mut app, &format!("e{i}")),
            expected,
            "{command}"
        );
    }
}

#[test]
fn rules_take_the_program_and_its_subcommand() {
    for (command, label, matching, other) in [
        (
            "npm run build",
            "npm run build",
            "npm run build -- --watch",
            "npm run test",
        ),
        ("git status --short", "git status", "git status", "git push"),
        ("ls -la src", "ls", "ls target", "rm -rf src"),
        ("make test", "make test", "make test V=1", "make install"),
        // A program without subcommands: its first argument is no
        // subcommand (`echo hello` allows `echo` with any arguments).
        ("echo hello", "echo", "echo bye", "cat x"),
        ("cat notes.txt", "cat", "cat other.txt", "echo x"),
        ("cargo --version", "cargo", "cargo build", "make"),
    ] {
        let mut app = app();
        assert_eq!(
            add_rule_from(&mut app, command),
            [approved("first")],
            "{command}"
        );
        assert_eq!(app.rules.list()[0].label(), label);
        ask_bash(&mut app, "y", matching);
        assert!(
            answered_by_rule(&mut app, "y"),
            "{label} answers {matching}"
        );
        ask_bash(&mut app, "n", other);
        assert!(!answered_by_rule(&mut app, "n"), "{label} leaves {other}");
    }
}

/// m05: a rule for a program run through a runner names that program, so
/// `uv run pytest` never approves `uv run sh -c …`.
#[test]
fn a_runners_rule_covers_only_the_program_it_ran() {
    for (first, rule, matching, not_matching) in [
        (
            "uv run pytest -q",
            "uv run pytest",
            "uv run pytest tests/x.py",
            "uv run sh -c 'rm -rf ~'",
        ),
        (
            "npx eslint .",
            "npx eslint",
            "npx eslint src",
            "npx node -e 1",
        ),
        (
            "bundle exec rspec",
            "bundle exec rspec",
            "bundle exec rspec spec/a",
            "bundle exec irb",
        ),
        (
            "poetry run pytest",
            "poetry run pytest",
            "poetry run pytest -x",
            "poetry run python -c 1",
        ),
    ] {
        let mut app = app();
        assert_eq!(
            add_rule_from(&mut app, first),
            [approved("first")],
            "{first}"
        );
        let labels: Vec<String> = app.rules.list().iter().map(|r| r.label()).collect();
        assert_eq!(labels, [rule]);
        ask_bash(&mut app, "m", matching);
        assert!(
            answered_by_rule(&mut app, "m"),
            "{rule} should answer {matching}"
        );
        ask_bash(&mut app, "x", not_matching);
        assert!(
            !answered_by_rule(&mut app, "x"),
            "{rule} answered {not_matching}"
        );
    }
}

/// Shells, interpreters and runners get no prefix rule (it would allow
/// anything), but the exact command line can be allowed, labelled as
/// exact: the same line again is answered, any other is asked.
#[test]
fn shells_interpreters_and_runners_get_only_an_exact_rule() {
    for (command, other) in [
        ("python3 test_calc.py", "python3 test_other.py"),
        ("bash -c 'cargo test'", "bash -c 'cargo test && rm -rf x'"),
        ("sh build.sh", "sh build.sh --force"),
        ("python3 -m pytest", "python3 -m pytest -x"),
        ("/usr/bin/python3.12 x.py", "/usr/bin/python3.12 y.py"),
        ("node script.js", "node other.js"),
        ("env FOO=1 cargo test", "env FOO=2 cargo test"),
        ("xargs rm", "xargs rm -rf"),
        ("sudo cargo test", "sudo cargo build"),
        ("uv run python x.py", "uv run python y.py"),
        ("npx bash", "npx bash -c id"),
        ("docker run --rm ubuntu sh", "docker run --rm alpine sh"),
        ("go run /tmp/x.go", "go run /tmp/y.go"),
        ("npm exec -- node x.js", "npm exec -- node y.js"),
        // sed's `e` and awk's `system()` run shell commands; rm, mv, kill
        // with any arguments would reach anything.
        ("sed -n 1,5p notes.txt", "sed -i 1e\\ id notes.txt"),
        ("awk -f report.awk data.txt", "awk -f evil.awk data.txt"),
        ("rm build.log", "rm -rf src"),
        ("kill 1234", "kill 1"),
    ] {
        let mut app = app();
        ask_bash(&mut app, "q", command);
        app.now += Duration::from_secs(1);
        let screen = render(&app);
        assert!(screen.contains("exactly"), "the prompt says so: {screen}");
        assert_eq!(sent(&answer(&mut app, '2')), [approved("q")]);
        assert_eq!(app.rules.list()[0].label(), format!("exactly `{command}`"));
        ask_bash(&mut app, "again", &format!("  {command} "));
        assert!(answered_by_rule(&mut app, "again"), "{command}");
        ask_bash(&mut app, "other", other);
        assert!(
            !answered_by_rule(&mut app, "other"),
            "{command} answered {other}"
        );
    }
}

/// What is more than one command, or would expand to something else
/// another time, gets no rule at all.
#[test]
fn no_rule_for_compound_or_expanding_commands() {
    for (command, reason) in [
        ("cargo test && rm -rf x", "more than one command"),
        ("cargo test > log", "redirection"),
        ("echo $(id)", "command substitution"),
        ("$TOOL test", "not a plain word"),
        ("cargo\u{202e} test", "reordering characters"),
        ("find . -name '*.rs'", "`find` runs other programs"),
        ("python3 $SCRIPT", "`python3` is an interpreter"),
        ("uv run sh -c 'echo ~'", "`sh` is a shell"),
        ("pnpm dlx *", "not a plain word"),
    ] {
        let mut app = app();
        ask_bash(&mut app, "q", command);
        app.now += Duration::from_secs(1);
        let screen = render(&app);
        assert!(
            screen.contains("no rule"),
            "the prompt says so first: {screen}"
        );
        assert!(key(&mut app, KeyCode::Char('2')).is_empty(), "{command}");
        assert!(app.rules.is_empty(), "{command}");
        assert_eq!(app.approval.len(), 1, "still waiting: {command}");
        let hint = app.hint.clone().unwrap_or_default();
        assert!(hint.contains(reason), "{command}: {hint}");
        assert!(!hint.contains('\n'), "one line: {hint}");
    }
}

fn render(app: &App) -> String {
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 30)).unwrap();
    terminal
        .draw(|frame| scv_tui::tui::view::draw(frame, app))
        .unwrap();
    terminal.backend().to_string()
}

#[test]
fn edits_and_mcp_tools_get_their_own_rules() {
    let mut app = app();
    let edit = json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b"});
    ask(
        &mut app,
        "w1",
        "edit_file",
        "write",
        edit.clone(),
        "Edit src/lib.rs",
    );
    app.now += Duration::from_secs(1);
    assert_eq!(sent(&answer(&mut app, '2')), [approved("w1")]);
    assert_eq!(
        app.rules.list()[0].label(),
        "edits to files in this workspace"
    );
    ask(
        &mut app,
        "w2",
        "write_file",
        "write",
        json!({"path": "new.rs", "content": "x"}),
        "Write new.rs",
    );
    assert!(answered_by_rule(&mut app, "w2"));
    ask_bash(&mut app, "b1", "cargo test");
    assert!(
        !answered_by_rule(&mut app, "b1"),
        "an edit rule runs no command"
    );

    let tool = "mcp__github__get_issue";
    ask(
        &mut app,
        "m1",
        tool,
        "mcp",
        json!({"number": 1}),
        "Call MCP tool `get_issue` of server `github`",
    );
    app.now += Duration::from_secs(1);
    assert_eq!(sent(&answer(&mut app, '2')), [approved("m1")]);
    assert_eq!(app.rules.list()[1].label(), "MCP tool get_issue of github");
    ask(
        &mut app,
        "m2",
        tool,
        "mcp",
        json!({"number": 2}),
        "Call MCP tool `get_issue` of server `github`",
    );
    assert!(answered_by_rule(&mut app, "m2"));
    ask(
        &mut app,
        "m3",
        "mcp__github__create_issue",
        "mcp",
        json!({}),
        "Call MCP tool `create_issue` of server `github`",
    );
    assert!(!answered_by_rule(&mut app, "m3"));
}

#[test]
fn two_keeps_the_type_ahead_rules_of_the_prompt() {
    // Pressed before the prompt was up for half a second: typed, not an answer.
    let mut app = app();
    ask_bash(&mut app, "t1", "cargo test");
    app.now += Duration::from_millis(100);
    assert!(key(&mut app, KeyCode::Char('2')).is_empty());
    assert_eq!(app.input.text(), "2");
    assert!(app.rules.is_empty());
    // With text in the input, `2` keeps typing even once armed, and so do
    // the letters that used to answer.
    app.now += Duration::from_secs(1);
    assert!(key(&mut app, KeyCode::Char('2')).is_empty());
    assert!(key(&mut app, KeyCode::Char('a')).is_empty());
    assert_eq!(app.input.text(), "22a");
    assert!(app.rules.is_empty());
    // Emptied, the box lets `2` answer — but not right after the typing.
    for _ in 0..3 {
        key(&mut app, KeyCode::Backspace);
    }
    assert!(key(&mut app, KeyCode::Char('2')).is_empty());
    assert_eq!(app.input.text(), "2", "just after typing: typed");
    key(&mut app, KeyCode::Backspace);
    app.now += Duration::from_secs(1);
    assert_eq!(sent(&answer(&mut app, '2')), [approved("t1")]);
    assert_eq!(app.rules.len(), 1);
    assert_eq!(app.input.text(), "");
}

#[test]
fn always_is_previewed_as_option_two_and_chosen_with_arrows_and_enter() {
    let mut app = app();
    ask_bash(&mut app, "t1", "cargo test");
    app.now += Duration::from_secs(1);
    let screen = render(&app);
    assert!(screen.contains("1 Yes, once"), "{screen}");
    assert!(
        screen.contains("2 Yes, and always allow `cargo test"),
        "{screen}"
    );
    assert!(screen.contains("3 No"), "{screen}");
    key(&mut app, KeyCode::Down);
    assert_eq!(sent(&key(&mut app, KeyCode::Enter)), [approved("t1")]);
    assert_eq!(app.rules.len(), 1);
}

#[test]
fn a_new_rule_answers_the_calls_already_waiting() {
    let mut app = app();
    ask_bash(&mut app, "p1", "cargo test");
    ask_bash(&mut app, "p2", "cargo test --doc");
    ask_bash(&mut app, "p3", "cargo build");
    assert_eq!(app.approval.len(), 3);
    app.now += Duration::from_secs(1);
    assert_eq!(
        sent(&answer(&mut app, '2')),
        [approved("p1"), approved("p2")]
    );
    assert_eq!(app.approval.len(), 1);
    assert_eq!(app.approval.front().unwrap().approval_id, "p3");
    // The next call is armed afresh.
    assert!(key(&mut app, KeyCode::Char('1')).is_empty());
}

#[test]
fn approvals_lists_the_rules_and_removes_them() {
    let mut app = app();
    add_rule_from(&mut app, "cargo test");
    ask_bash(&mut app, "g", "git status");
    app.now += Duration::from_secs(1);
    answer(&mut app, '2');
    assert_eq!(app.rules.len(), 2);
    for c in "/approvals".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    assert!(key(&mut app, KeyCode::Enter).is_empty(), "nothing is sent");
    assert!(matches!(&app.overlay, Some(o) if matches!(o.kind, OverlayKind::Approvals)));
    let screen = render(&app);
    assert!(
        screen.contains("`cargo test …`") && screen.contains("`git status …`"),
        "{screen}"
    );
    key(&mut app, KeyCode::Char('x'));
    let labels: Vec<String> = app.rules.list().iter().map(|r| r.label()).collect();
    assert_eq!(labels, ["git status"]);
    key(&mut app, KeyCode::Esc);
    assert!(app.overlay.is_none());
    ask_bash(&mut app, "again", "cargo test");
    assert!(
        !answered_by_rule(&mut app, "again"),
        "a removed rule answers nothing"
    );
}
