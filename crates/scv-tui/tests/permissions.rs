#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `/permissions` in the App: keeping the newest "always allow" rule in
//! Claude Code's syntax, for every project or this one, removing one, and
//! the listing the server answers with.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use scv_client::rules::Rule;
use scv_protocol::{ClientMessage, Event, RuleScope};
use scv_tui::tui::app::{App, Outgoing};
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

fn run(app: &mut App, line: &str) -> Vec<Outgoing> {
    for c in line.chars() {
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE))
}

fn one(out: &[Outgoing]) -> (String, ClientMessage) {
    match out {
        [Outgoing::Send {
            request_id,
            message,
        }] => (request_id.clone(), message.clone()),
        other => panic!("{other:?}"),
    }
}

fn shown(app: &App) -> String {
    app.transcript
        .items()
        .iter()
        .map(|item| match &item.kind {
            ItemKind::Notice(text) => text.clone(),
            ItemKind::Note(lines) => lines.join("\n"),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn keep_sends_the_newest_session_rule_in_claude_codes_syntax() {
    let mut app = app();
    // Nothing to keep yet: a hint, nothing sent.
    assert!(run(&mut app, "/permissions keep").is_empty());
    app.rules.add(Rule::Command {
        env: vec![],
        words: vec!["cargo".into(), "test".into()],
    });
    // A rule with assignments cannot be written in Claude Code's syntax:
    // the newest that can is kept.
    app.rules.add(Rule::Command {
        env: vec!["RUSTC_WRAPPER=x".into()],
        words: vec!["cargo".into(), "build".into()],
    });
    let (rid, message) = one(&run(&mut app, "/permissions keep --project"));
    let ClientMessage::PermissionsKeep(edit) = message else {
        panic!("{message:?}")
    };
    assert_eq!(edit.rule, "Bash(cargo test:*)");
    assert_eq!(edit.scope, RuleScope::Project);
    app.apply(event(json!({"type":"permissions.listed","request_id":rid,"session_id":S,
        "rules":[{"rule":"Bash(cargo test:*)","kind":"allow","path":"/w/.claude/settings.local.json","scope":"project"},
                 {"rule":"Bash(rm:*)","kind":"deny","path":"/h/.claude/settings.json"}]})));
    let text = shown(&app);
    assert!(
        text.contains("kept: allow Bash(cargo test:*) — in /w/.claude/settings.local.json"),
        "{text}"
    );
    assert!(
        text.contains("deny Bash(rm:*) — /h/.claude/settings.json"),
        "{text}"
    );

    // A named rule, for every project; and removing one.
    let (_, message) = one(&run(&mut app, "/permissions keep Read(./src/**)"));
    assert!(
        matches!(&message, ClientMessage::PermissionsKeep(e) if e.rule == "Read(./src/**)" && e.scope == RuleScope::User),
        "{message:?}"
    );
    let (_, message) = one(&run(
        &mut app,
        "/permissions remove Bash(cargo test:*) --project",
    ));
    assert!(
        matches!(&message, ClientMessage::PermissionsRemove(e) if e.rule == "Bash(cargo test:*)" && e.scope == RuleScope::Project),
        "{message:?}"
    );
    let (_, message) = one(&run(&mut app, "/permissions"));
    assert!(matches!(message, ClientMessage::PermissionsList(_)));
    assert!(run(&mut app, "/permissions frob").is_empty());
}
