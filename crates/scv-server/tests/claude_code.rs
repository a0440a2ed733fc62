#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! A Claude Code user's files, read where Claude Code reads them, through
//! the real binary: hooks in a project's committed `.claude/settings.json`
//! and `.claude/settings.local.json` (in a trusted workspace only) and in
//! the user's `~/.claude/settings.json` (here `CLAUDE_CONFIG_DIR`, which
//! the test support points at the test's own folder); an event SCV does
//! not fire and a `prompt` hook are warnings, never a refused session; a
//! hook's `if` narrows the calls it runs for, and one SCV cannot read
//! refuses the session naming the file and line.

mod common;
use common::*;
use std::path::Path;

/// A team's guard, as a project commits it: `.claude/hooks/guard.sh`
/// logs each run to `guard.log` and blocks (exit 2) any `rm` whose flags
/// hold `-r`/`-f` together, as `rm -rf` does; wired in
/// `.claude/settings.json` for `Bash` calls, scoped by `if` to `rm`
/// commands. The same file carries what SCV does not run: a
/// `PermissionRequest` hook (an event SCV does not fire) and a `prompt`
/// hook.
fn commit_guard(workspace: &Path) {
    let dir = workspace.join(".claude");
    std::fs::create_dir_all(dir.join("hooks")).unwrap();
    let guard = r#"#!/bin/bash
input=$(cat)
echo "ran" >> "$CLAUDE_PROJECT_DIR/guard.log"
if printf '%s' "$input" | grep -Eq '"command": *"[^"]*rm +-[a-zA-Z]*(rf|fr)'; then
  echo "guard: rm -rf is not allowed in this repository" >&2
  exit 2
fi
exit 0
"#;
    let script = dir.join("hooks/guard.sh");
    std::fs::write(&script, guard).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let settings = "{\n  \"permissions\": {\"allow\": [\"Bash(ls:*)\"]},\n  \"hooks\": {\n    \"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [\n      {\"type\": \"command\", \"if\": \"Bash(rm *)\",\n       \"command\": \"\\\"$CLAUDE_PROJECT_DIR\\\"/.claude/hooks/guard.sh\"}]}],\n    \"PermissionRequest\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send hi\"}]}],\n    \"Stop\": [{\"hooks\": [{\"type\": \"prompt\", \"prompt\": \"Are the tests green?\"}]}]\n  }\n}\n";
    std::fs::write(dir.join("settings.json"), settings).unwrap();
}

/// The model's bash call `command` (id `call`), then "done".
fn bash_then_done(mock: &MockProvider, call: &str, command: &str) {
    mock.push(Reply::tool_calls(&[(
        call,
        "bash",
        json!({ "command": command }),
    )]));
    mock.push(Reply::text(["done"]));
}

fn completed_of<'a>(events: &'a [Value], call: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["call_id"] == call)
        .unwrap_or_else(|| panic!("no tool.completed for {call}: {:?}", types(events)))
}

/// The guard committed in `.claude/settings.json` blocks `rm -rf` once the
/// workspace is trusted (and runs nothing before); its `if` keeps it from
/// running for `ls`; the `PermissionRequest` and `prompt` hooks beside it are
/// named in `config_warnings` and the session starts.
#[tokio::test]
async fn a_committed_guard_in_claude_settings_blocks_rm_rf_in_a_trusted_workspace() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "auto_approve = [\"process\"]");
    let ws = home.workspace();
    commit_guard(&ws);
    std::fs::create_dir_all(ws.join("victim/inner")).unwrap();
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;

    // Untrusted: the file is named, its hooks do not run.
    server
        .send(json!({"type":"session.start","request_id":"s0","cwd": ws}))
        .await;
    let started = server.expect("session.started").await;
    server.expect("queue.snapshot").await;
    let warnings = started["config_warnings"].to_string();
    assert!(
        warnings.contains(".claude/settings.json") && warnings.contains("scv trust"),
        "{warnings}"
    );
    let session = started["session_id"].as_str().unwrap().to_string();
    bash_then_done(&mock, "l0", "ls");
    server.start_turn(&session, "t0", "list").await;
    server.until_terminal().await;
    assert!(!ws.join("guard.log").exists(), "an untrusted hook ran");

    // Trusted: the session starts despite what SCV does not run, and says
    // what it skipped, with the file and line.
    home.trust_workspace();
    server
        .send(json!({"type":"session.start","request_id":"s1","cwd": ws}))
        .await;
    let started = server.expect("session.started").await;
    server.expect("queue.snapshot").await;
    let warnings: Vec<String> = started["config_warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    let settings = ws.join(".claude/settings.json").display().to_string();
    assert!(
        warnings.iter().any(
            |w| w.starts_with(&format!("{settings}:7:")) && w.contains("\"PermissionRequest\"")
        ),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with(&format!("{settings}:8:"))
                && w.contains("\"prompt\" hook is skipped")),
        "{warnings:?}"
    );
    let session = started["session_id"].as_str().unwrap().to_string();

    // `ls`: the `if` does not hold, the guard does not run.
    bash_then_done(&mock, "l1", "ls");
    server.start_turn(&session, "t1", "list").await;
    let events = server.until_terminal().await;
    assert_eq!(completed_of(&events, "l1")["success"], true);
    assert!(!ws.join("guard.log").exists(), "the guard ran for `ls`");

    // `cd victim && rm -rf inner`: a part is an `rm`; the guard blocks.
    bash_then_done(&mock, "r1", "cd victim && rm -rf inner");
    server.start_turn(&session, "t2", "clean up").await;
    let events = server.until_terminal().await;
    let done = completed_of(&events, "r1");
    assert_eq!(done["success"], false, "{done}");
    let output = done["output"].as_str().unwrap();
    assert!(output.contains("PreToolUse hook blocked"), "{output}");
    assert!(output.contains("rm -rf is not allowed"), "{output}");
    assert!(ws.join("victim/inner").is_dir(), "rm -rf went through");
    let log = std::fs::read_to_string(ws.join("guard.log")).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");

    // `rm` of one file: the guard runs (the `if` holds) and lets it by.
    std::fs::write(ws.join("victim/file"), "x").unwrap();
    bash_then_done(&mock, "r2", "rm victim/file");
    server.start_turn(&session, "t3", "remove the file").await;
    let events = server.until_terminal().await;
    assert_eq!(completed_of(&events, "r2")["success"], true);
    assert!(!ws.join("victim/file").exists());
    let log = std::fs::read_to_string(ws.join("guard.log")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
}

/// `.claude/settings.local.json` is the project's too (trusted like the
/// rest), and the user's own `~/.claude/settings.json` runs in any
/// workspace; an `if` SCV cannot read in it refuses the session with the
/// file and line, and the connection goes on.
#[tokio::test]
async fn the_users_claude_settings_and_the_local_settings_run_and_a_bad_if_is_named() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let ws = home.workspace();
    let user = home.claude_dir();
    std::fs::create_dir_all(&user).unwrap();
    let context = |word: &str| {
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": format!("echo {word}")}]}]}})
        .to_string()
    };
    std::fs::write(
        user.join("settings.json"),
        context("from-the-users-settings"),
    )
    .unwrap();
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    std::fs::write(
        ws.join(".claude/settings.local.json"),
        context("from-the-local-settings"),
    )
    .unwrap();
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;

    // Untrusted: only the user's own hook adds its context.
    let session = server.start_session(&ws).await;
    mock.push(Reply::text(["ok"]));
    server.start_turn(&session, "t0", "hi").await;
    server.until_terminal().await;
    let sent = mock.requests().last().unwrap().body.to_string();
    assert!(sent.contains("from-the-users-settings"), "{sent}");
    assert!(!sent.contains("from-the-local-settings"), "{sent}");

    // Trusted: both.
    home.trust_workspace();
    let session = server.start_session(&ws).await;
    mock.push(Reply::text(["ok"]));
    server.start_turn(&session, "t1", "hi").await;
    server.until_terminal().await;
    let sent = mock.requests().last().unwrap().body.to_string();
    assert!(sent.contains("from-the-users-settings"), "{sent}");
    assert!(sent.contains("from-the-local-settings"), "{sent}");

    // The user's `if` that is not a rule (a made-up expression).
    std::fs::write(
        user.join("settings.json"),
        "{\"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [\n  {\"type\": \"command\", \"command\": \"x\",\n   \"if\": \"tool_input.command matches 'git push'\"}]}]}}",
    )
    .unwrap();
    server
        .send(json!({"type":"session.start","request_id":"bad","cwd": ws}))
        .await;
    let error = server.expect_error("invalid_request", "bad").await;
    let message = error["message"].as_str().unwrap();
    let file = user.join("settings.json").display().to_string();
    assert!(message.contains(&format!("{file}:3:")), "{message}");
    assert!(message.contains("\"if\" is not a rule"), "{message}");
    // The connection carries on.
    std::fs::remove_file(user.join("settings.json")).unwrap();
    server.start_session(&ws).await;
}

/// `CLAUDE.md` reaches the model beside `AGENTS.md`, in the documented
/// order — the user's `~/.claude/CLAUDE.md`, the repository root's, the
/// workspace's (its `@path` import right after it), then `AGENTS.md` —
/// and `session.started.instructions` (capability `commands`) names them
/// so; an import or a link leading out of the repository is not followed;
/// a client without the capability gets no such field.
#[tokio::test]
async fn claude_md_files_and_their_imports_reach_the_model_in_order() {
    let mut rig = Rig::with_capabilities("", json!({"commands": true})).await;
    let user = rig.home.claude_dir();
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("CLAUDE.md"), "user-rule: answer in English\n").unwrap();
    let repo = tempfile::tempdir().unwrap();
    let repo_path = repo.path().canonicalize().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.md"), "outside-secret").unwrap();
    std::fs::create_dir_all(repo_path.join(".git")).unwrap();
    std::fs::create_dir_all(repo_path.join("pkg/docs")).unwrap();
    std::fs::write(repo_path.join("CLAUDE.md"), "root-rule: use cargo\n").unwrap();
    let escape = format!(
        "@{}",
        outside
            .path()
            .join("secret.md")
            .canonicalize()
            .unwrap()
            .display()
    );
    std::fs::write(
        repo_path.join("pkg/CLAUDE.md"),
        format!("pkg-rule: see @docs/style.md\nNot this: `@docs/other.md`.\nNor {escape} nor @../../../../../../etc/hostname\n"),
    )
    .unwrap();
    std::fs::write(
        repo_path.join("pkg/docs/style.md"),
        "style-rule: short lines\n",
    )
    .unwrap();
    std::fs::write(repo_path.join("pkg/docs/other.md"), "other-rule\n").unwrap();
    std::fs::write(
        repo_path.join("pkg/AGENTS.md"),
        "agents-rule: run the tests\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        repo_path.join("pkg/CLAUDE.local.md"),
    )
    .unwrap();
    let ws = repo_path.join("pkg");
    rig.server
        .send(json!({"type":"session.start","request_id":"s","cwd": ws}))
        .await;
    let started = rig.server.expect("session.started").await;
    rig.server.expect("queue.snapshot").await;
    let listed: Vec<String> = started["instructions"]
        .as_array()
        .unwrap_or_else(|| panic!("{started}"))
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    let want: Vec<String> = [
        user.join("CLAUDE.md"),
        repo_path.join("CLAUDE.md"),
        ws.join("CLAUDE.md"),
        ws.join("docs/style.md"),
        ws.join("AGENTS.md"),
    ]
    .iter()
    .map(|p| p.display().to_string())
    .collect();
    assert_eq!(listed, want);
    let session = started["session_id"].as_str().unwrap().to_string();
    rig.mock.push(Reply::text(["ok"]));
    rig.turn(&session, "hi").await;
    let system = rig.mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let at = |needle: &str| {
        system
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing from {system}"))
    };
    assert!(at("user-rule") < at("root-rule"));
    assert!(at("root-rule") < at("pkg-rule"));
    assert!(at("pkg-rule") < at("style-rule"));
    assert!(at("style-rule") < at("agents-rule"));
    assert!(!system.contains("outside-secret"), "{system}");
    assert!(!system.contains("other-rule"), "{system}");

    // Without capability `commands`: no `instructions`, the same prompt.
    let mut plain = TestServer::spawn(BIN, rig.home.path());
    plain.initialize().await;
    plain
        .send(json!({"type":"session.start","request_id":"s","cwd": ws}))
        .await;
    let started = plain.expect("session.started").await;
    assert!(started.get("instructions").is_none(), "{started}");
}

/// Writes the user's `~/.claude/settings.json` (`CLAUDE_CONFIG_DIR`).
fn user_settings(home: &TestHome, settings: Value) {
    let dir = home.claude_dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
}

/// A Stop hook that works as ralph-loop's does: it reads
/// `transcript_path` from its input, takes the last line with
/// `"role":"assistant"`, and sends the model back until that message
/// holds the promise `<promise>DONE</promise>` (keeping a copy of what it
/// read). The transcript is in Claude Code's line format, current when
/// the hook runs, and readable in the hook's sandbox.
#[tokio::test]
async fn a_stop_hook_reads_the_transcript_and_loops_until_the_promise() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let stop = r#"input=$(cat)
t=$(printf '%s' "$input" | sed -n 's/.*"transcript_path":"\([^"]*\)".*/\1/p')
[ -f "$t" ] || { echo "no transcript at '$t'" >&2; exit 1; }
n=$(ls "$CLAUDE_PROJECT_DIR" | grep -c '^seen-')
cp "$t" "$CLAUDE_PROJECT_DIR/seen-$n.jsonl"
last=$(grep '"role":"assistant"' "$t" | tail -1)
if printf '%s' "$last" | grep -q '<promise>DONE</promise>'; then exit 0; fi
echo '{"decision":"block","reason":"Ralph: not done yet, keep going"}'"#;
    user_settings(
        &home,
        json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": stop}]}]}}),
    );
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    let ws = home.workspace();
    let session = server.start_session(&ws).await;
    mock.push(Reply::text(["still working"]));
    mock.push(Reply::text(["all green <promise>DONE</promise>"]));
    server.start_turn(&session, "t", "fix the build").await;
    let events = server.until_terminal().await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        2,
        "the Stop hook did not send the model back"
    );
    assert!(requests[1]
        .body
        .to_string()
        .contains("not done yet, keep going"));

    // What the hook read, the first time: Claude Code's lines.
    let first = std::fs::read_to_string(ws.join("seen-0.jsonl")).unwrap();
    let lines: Vec<Value> = first
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{first}");
    assert_eq!(lines[0]["type"], "user");
    assert_eq!(lines[0]["message"]["role"], "user");
    assert!(lines[0]["message"]["content"]
        .as_str()
        .unwrap()
        .contains("fix the build"));
    assert_eq!(lines[1]["type"], "assistant");
    assert_eq!(lines[1]["message"]["content"][0]["type"], "text");
    assert_eq!(lines[1]["message"]["content"][0]["text"], "still working");
    assert_eq!(lines[1]["parentUuid"], lines[0]["uuid"]);
    for line in &lines {
        assert_eq!(line["sessionId"], session.as_str());
        assert_eq!(line["cwd"], ws.display().to_string());
        assert!(line["timestamp"].as_str().unwrap().ends_with('Z'));
    }
    // The second time: kept current (appended, not rewritten).
    let second = std::fs::read_to_string(ws.join("seen-1.jsonl")).unwrap();
    assert!(second.starts_with(&first), "{second}");
    assert_eq!(second.lines().count(), 4, "{second}");
    assert!(second
        .lines()
        .last()
        .unwrap()
        .contains("<promise>DONE</promise>"));
}

/// `CLAUDE_ENV_FILE`: a `SessionStart` hook written as Claude Code's
/// documentation shows (`set -u`, `export` lines appended to the file)
/// runs, and what it exported reaches the session's later `bash` calls.
#[tokio::test]
async fn a_session_start_hook_exports_through_claude_env_file_to_later_bash_calls() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "auto_approve = [\"process\"]");
    let start = r#"set -euo pipefail
if [ -n "$CLAUDE_ENV_FILE" ]; then
  echo 'export PROJECT_FLAVOUR="from session start"' >> "$CLAUDE_ENV_FILE"
  echo 'export PATH="$PATH:/opt/made-up-bin"' >> "$CLAUDE_ENV_FILE"
fi
exit 0"#;
    user_settings(
        &home,
        json!({"hooks": {"SessionStart": [{"matcher": "startup",
            "hooks": [{"type": "command", "command": start}]}]}}),
    );
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    let ws = home.workspace();
    let session = server.start_session(&ws).await;
    mock.push(Reply::tool_calls(&[(
        "e1",
        "bash",
        json!({"command": "echo \"flavour=$PROJECT_FLAVOUR\"; echo \"path=$PATH\""}),
    )]));
    mock.push(Reply::text(["done"]));
    server.start_turn(&session, "t", "go").await;
    let events = server.until_terminal().await;
    let done = completed_of(&events, "e1");
    let output = done["output"].as_str().unwrap();
    assert_eq!(done["success"], true, "{output}");
    assert!(output.contains("flavour=from session start"), "{output}");
    assert!(output.contains(":/opt/made-up-bin"), "{output}");
    assert!(!output.contains("path=$PATH"), "{output}");
}

/// The user's `~/.claude/commands/`, `skills/` and `agents/` load in every
/// workspace: `/review` expands, `/deploy` runs the skill rather than the
/// command of its name (as Claude Code does), a skill's long description
/// reaches the index whole (its "Use when" past the first 160 bytes), and
/// an agent naming tools SCV lacks loads with those it has, the dropped
/// ones named in `command_diagnostics`.
#[tokio::test]
async fn the_users_claude_commands_skills_and_agents_load_and_a_skill_wins() {
    let mut rig = Rig::with_capabilities("", json!({"commands": true, "subagents": true})).await;
    let user = rig.home.claude_dir();
    let write = |rel: &str, text: &str| {
        let path = user.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "commands/review.md",
        "---\ndescription: Review a file\n---\nREVIEW-BODY: review $ARGUMENTS carefully.\n",
    );
    write("commands/deploy.md", "DEPLOY-COMMAND-BODY\n");
    let trigger = format!(
        "{} Use when the user asks to ship a release.",
        "Deploys the service to production with the team's checklist.".repeat(4)
    );
    write(
        "skills/deploy/SKILL.md",
        &format!("---\nname: deploy\ndescription: {trigger}\n---\nDEPLOY-SKILL-BODY\n"),
    );
    write(
        "agents/code-explorer.md",
        "---\nname: code-explorer\ndescription: Traces how a feature works\ntools: Glob, Grep, LS, Read, NotebookRead, WebFetch, TodoWrite, WebSearch\n---\nEXPLORER-PROMPT\n",
    );
    let (started, session) = rig.start(json!({})).await;
    let commands = started["commands"].as_array().unwrap();
    let review = commands.iter().find(|c| c["name"] == "review").unwrap();
    assert_eq!(review["scope"], "user");
    let diagnostics = started["command_diagnostics"].to_string();
    assert!(
        diagnostics.contains("code-explorer.md")
            && diagnostics.contains("NotebookRead, TodoWrite, WebSearch")
            && diagnostics.contains("runs without them"),
        "{diagnostics}"
    );
    assert!(diagnostics.contains("runs the skill"), "{diagnostics}");

    rig.mock.push(Reply::text(["ok"]));
    rig.server
        .send(
            json!({"type":"turn.start","request_id":"d","session_id": session,
                     "prompt":"/deploy now","command":true}),
        )
        .await;
    rig.server.until_terminal().await;
    let first = rig.mock.requests()[0].body.to_string();
    assert!(first.contains("DEPLOY-SKILL-BODY"), "{first}");
    assert!(!first.contains("DEPLOY-COMMAND-BODY"), "{first}");
    let system = rig.mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains(&format!("- deploy: {trigger}")), "{system}");

    rig.mock.push(Reply::text(["ok"]));
    rig.server
        .send(
            json!({"type":"turn.start","request_id":"r","session_id": session,
                     "prompt":"/review src/lib.rs","command":true}),
        )
        .await;
    rig.server.until_terminal().await;
    let second = rig.mock.requests()[1].body.to_string();
    assert!(
        second.contains("REVIEW-BODY: review src/lib.rs carefully."),
        "{second}"
    );

    // The agent runs, with the tools SCV has of those it named.
    rig.mock.push(Reply::tool_calls(&[(
        "x",
        "task",
        json!({"description": "trace", "prompt": "CHILD-TRACE", "agent": "code-explorer"}),
    )]));
    rig.mock
        .push_matching("CHILD-TRACE", Reply::text(["traced"]));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(&session, "trace it").await;
    assert_eq!(completed_of(&events, "x")["success"], true, "{events:?}");
    let child = rig
        .mock
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("CHILD-TRACE"))
        .unwrap();
    let mut tools: Vec<String> = child.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    tools.sort();
    // Claude Code's WebFetch is SCV's web_fetch.
    assert_eq!(tools, ["list_dir", "read_file", "search", "web_fetch"]);
    assert!(child.body.to_string().contains("EXPLORER-PROMPT"));
}

/// `permissions` of a trusted project's `.claude/settings.json`, in Claude
/// Code's syntax: `allow` runs a sandboxed call without asking (every
/// part of a compound command must be covered), never one that leaves the
/// sandbox; `deny` refuses the call naming the rule; `ask` asks although
/// an `allow` matches too. Untrusted, the rules do nothing.
#[tokio::test]
async fn claude_permission_rules_allow_deny_and_ask_inside_the_sandbox() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "auto_approve = [\"read\"]");
    let ws = home.workspace();
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    std::fs::write(
        ws.join(".claude/settings.json"),
        json!({"permissions": {
            "allow": ["Bash(echo allowed:*)", "Bash(touch *)"],
            "deny": ["Bash(rm *)"],
            "ask": ["Bash(touch asked*)"],
        }})
        .to_string(),
    )
    .unwrap();
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;

    // Untrusted: the allow rule does not apply; the call is asked.
    let session = server.start_session(&ws).await;
    mock.push(Reply::tool_calls(&[(
        "u",
        "bash",
        json!({"command": "echo allowed one"}),
    )]));
    mock.push(Reply::text(["done"]));
    server.start_turn(&session, "t0", "go").await;
    let events = server.until("approval.requested").await;
    let asked = events.last().unwrap().clone();
    assert_eq!(asked["call_id"], "u");
    server
        .send(
            json!({"type":"approval.resolve","request_id":"a","session_id": session,
                     "approval_id": asked["approval_id"],"approved":false}),
        )
        .await;
    server.until_terminal().await;

    home.trust_workspace();
    let session = server.start_session(&ws).await;
    mock.push(Reply::tool_calls(&[
        ("a1", "bash", json!({"command": "echo allowed two"})),
        ("d1", "bash", json!({"command": "cd . && rm -rf victim"})),
        (
            "c1",
            "bash",
            json!({"command": "echo allowed three && touch planted"}),
        ),
        ("s1", "bash", json!({"command": "touch asked-file"})),
        (
            "o1",
            "bash",
            json!({"command": "echo allowed out", "unsandboxed": true}),
        ),
    ]));
    mock.push(Reply::text(["done"]));
    std::fs::create_dir_all(ws.join("victim")).unwrap();
    server.start_turn(&session, "t1", "go").await;
    let mut asked_ids = Vec::new();
    let events = loop {
        let event = server.next().await;
        match event["type"].as_str().unwrap() {
            "approval.requested" => {
                asked_ids.push(event["call_id"].as_str().unwrap().to_string());
                server
                    .send(json!({"type":"approval.resolve","request_id":"a",
                                 "session_id": session, "approval_id": event["approval_id"],
                                 "approved": false}))
                    .await;
            }
            "turn.completed" | "turn.failed" => break vec![event],
            _ => {}
        }
    };
    assert_eq!(events[0]["type"], "turn.completed");
    // Allowed whole (both parts covered), so not asked; refused by the
    // deny rule, so not asked; asked: the `ask` rule and the call that
    // leaves the sandbox.
    assert_eq!(asked_ids, ["s1", "o1"]);
    assert!(
        ws.join("planted").exists(),
        "the allowed compound call did not run"
    );
    assert!(ws.join("victim").is_dir(), "the denied rm ran");
    assert!(!ws.join("asked-file").exists());
    let sent = mock.requests().last().unwrap().body.to_string();
    assert!(sent.contains("allowed two"), "{sent}");
    assert!(sent.contains("permission rule `Bash(rm *)`"), "{sent}");
}

/// A trusted workspace's `.mcp.json` (Claude Code's project MCP file)
/// brings its servers to the session, `${VAR}` and `${VAR:-default}`
/// expanded from SCV's environment; an `sse` server is skipped with a
/// warning. Untrusted, none starts and the session says so. The server is
/// `tests/mcp/raw_server.py` (plain JSON-RPC, no SDK).
#[tokio::test]
async fn a_trusted_mcp_json_brings_its_servers_with_variables_expanded() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let ws = home.workspace();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/raw_server.py");
    std::fs::write(
        ws.join(".mcp.json"),
        json!({"mcpServers": {
            "raw": {"command": "${SCV_TEST_PYTHON}",
                    "args": [script, "${SCV_TEST_UNSET_MODE:-ok}"]},
            "old": {"type": "sse", "url": "https://example.invalid/sse"},
        }})
        .to_string(),
    )
    .unwrap();
    let mut server = TestServer::spawn_with(BIN, home.path(), &[("SCV_TEST_PYTHON", "python3")]);
    server.initialize().await;
    server
        .send(json!({"type":"session.start","request_id":"u","cwd": ws}))
        .await;
    let started = server.expect("session.started").await;
    server.expect("queue.snapshot").await;
    let warnings = started["config_warnings"].to_string();
    assert!(
        warnings.contains(".mcp.json") && warnings.contains("not a trusted workspace"),
        "{warnings}"
    );

    home.trust_workspace();
    server
        .send(json!({"type":"session.start","request_id":"t","cwd": ws}))
        .await;
    let started = server.expect("session.started").await;
    server.expect("queue.snapshot").await;
    let warnings = started["config_warnings"].to_string();
    assert!(
        warnings.contains("`old`") && warnings.contains("sse"),
        "{warnings}"
    );
    let session = started["session_id"].as_str().unwrap().to_string();
    // The server takes a moment to start: plain turns until it is offered.
    let mut offered_raw = false;
    for _ in 0..80 {
        mock.push(Reply::text(["hello"]));
        server
            .start_turn(&session, "w", "are the tools there")
            .await;
        server.until_terminal().await;
        let n = mock.requests().len() - 1;
        if offered(&mock, n).iter().any(|t| t == "mcp__raw__echo") {
            offered_raw = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(offered_raw, "mcp__raw__echo was never offered");
    mock.push(Reply::tool_calls(&[(
        "m",
        "mcp__raw__echo",
        json!({"text": "hi"}),
    )]));
    mock.push(Reply::text(["done"]));
    server.start_turn(&session, "c", "call it").await;
    let events = server.until("approval.requested").await;
    let asked = events.last().unwrap().clone();
    server
        .send(
            json!({"type":"approval.resolve","request_id":"a","session_id": session,
                     "approval_id": asked["approval_id"],"approved":true}),
        )
        .await;
    let events = server.until_terminal().await;
    let done = completed_of(&events, "m");
    assert_eq!(done["success"], true, "{done}");
    assert!(
        done["output"].as_str().unwrap().contains("raw echo hi"),
        "{done}"
    );
}

/// A Claude Code plugin named in config.toml (`plugins = [...]`): its
/// command runs as `/NAME`, and its `PreToolUse` hook — which finds its
/// own code through `CLAUDE_PLUGIN_ROOT`, as hookify's does — runs in the
/// sandbox, reads its rule file there and blocks `rm -rf`; a folder that
/// is not a plugin is a warning.
#[tokio::test]
async fn a_plugins_hook_finds_its_root_and_blocks_and_its_command_runs() {
    let plugin = tempfile::tempdir().unwrap();
    let root = plugin.path().canonicalize().unwrap();
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    write(
        ".claude-plugin/plugin.json",
        r#"{"name": "guard", "version": "0.1.0", "description": "blocks what rules/blocked.txt names"}"#,
    );
    write(
        "hooks/hooks.json",
        r#"{"description": "guard", "hooks": {"PreToolUse": [{"matcher": "Bash",
            "hooks": [{"type": "command", "command": "bash \"${CLAUDE_PLUGIN_ROOT}/hooks/pretooluse.sh\""}]}]}}"#,
    );
    write(
        "hooks/pretooluse.sh",
        "input=$(cat)\nwhile read -r pattern; do\n  if printf '%s' \"$input\" | grep -q -- \"$pattern\"; then\n    echo \"guard plugin: '$pattern' is blocked\" >&2; exit 2\n  fi\ndone < \"$CLAUDE_PLUGIN_ROOT/rules/blocked.txt\"\nexit 0\n",
    );
    write("rules/blocked.txt", "rm -rf\n");
    // A command as ralph-loop writes its own: a ```! block running the
    // plugin's setup script with the arguments on a here-document,
    // allowed by an `allowed-tools` rule naming `${CLAUDE_PLUGIN_ROOT}`.
    write(
        "commands/loop.md",
        "---\ndescription: \"Start a loop\"\nargument-hint: \"PROMPT\"\nallowed-tools: [\"Bash(${CLAUDE_PLUGIN_ROOT}/scripts/setup.sh:*)\"]\n---\n\n# Loop\n\n```!\n\"${CLAUDE_PLUGIN_ROOT}/scripts/setup.sh\" --from-stdin <<'__ARGS_END__'\n$ARGUMENTS\n__ARGS_END__\n```\n\nPlease work on the task.\n",
    );
    write(
        "scripts/setup.sh",
        "#!/bin/bash\nset -euo pipefail\nprompt=$(cat)\nmkdir -p .claude\nprintf 'prompt: %s\\n' \"$prompt\" > .claude/loop.local.md\necho \"Loop set up for: $prompt\"\n",
    );
    write(
        "commands/greet.md",
        "---\ndescription: Greets\n---\nPLUGIN-GREETING for $ARGUMENTS\n",
    );
    let mock = MockProvider::start().await;
    let not_a_plugin = tempfile::tempdir().unwrap();
    let home = TestHome::new(
        &mock.base_url(),
        &format!(
            "auto_approve = [\"process\"]\nplugins = [{:?}, {:?}]",
            root.display().to_string(),
            not_a_plugin.path().display().to_string()
        ),
    );
    let ws = home.workspace();
    std::fs::create_dir_all(ws.join("victim")).unwrap();
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    server
        .send(json!({"type":"session.start","request_id":"s","cwd": ws}))
        .await;
    let started = server.expect("session.started").await;
    server.expect("queue.snapshot").await;
    let warnings = started["config_warnings"].to_string();
    assert!(
        warnings.contains(&not_a_plugin.path().display().to_string())
            && warnings.contains("plugin.json"),
        "{warnings}"
    );
    let session = started["session_id"].as_str().unwrap().to_string();

    mock.push(Reply::text(["hi"]));
    server
        .send(
            json!({"type":"turn.start","request_id":"g","session_id": session,
                     "prompt":"/greet the team","command":true}),
        )
        .await;
    server.until_terminal().await;
    let sent = mock.requests()[0].body.to_string();
    assert!(sent.contains("PLUGIN-GREETING for the team"), "{sent}");

    mock.push(Reply::text(["looping"]));
    server
        .send(
            json!({"type":"turn.start","request_id":"l","session_id": session,
                     "prompt":"/loop fix the build","command":true}),
        )
        .await;
    server.until_terminal().await;
    let sent = mock.requests()[1].body.to_string();
    if common::sandbox::enforced() {
        assert!(sent.contains("Loop set up for: fix the build"), "{sent}");
        assert!(!sent.contains("```!"), "{sent}");
        let state = std::fs::read_to_string(ws.join(".claude/loop.local.md")).unwrap();
        assert_eq!(state, "prompt: fix the build\n");
    }

    mock.push(Reply::tool_calls(&[
        ("ok", "bash", json!({"command": "ls victim"})),
        ("rm", "bash", json!({"command": "rm -rf victim"})),
    ]));
    mock.push(Reply::text(["done"]));
    server.start_turn(&session, "t", "clean").await;
    let events = server.until_terminal().await;
    assert_eq!(completed_of(&events, "ok")["success"], true, "{events:?}");
    let blocked = completed_of(&events, "rm");
    assert_eq!(blocked["success"], false);
    assert!(
        blocked["output"]
            .as_str()
            .unwrap()
            .contains("guard plugin: 'rm -rf' is blocked"),
        "{blocked}"
    );
    assert!(ws.join("victim").is_dir());
}

/// A command's ``!`…` `` lines run as sandboxed `bash` calls when its
/// `allowed-tools` covers them and the command is the user's (or its
/// workspace trusted), their output inlined; anything else stays text
/// with a note saying why; `@file` attaches the workspace's file.
#[tokio::test]
async fn a_commands_bang_lines_run_when_allowed_and_at_files_attach() {
    let mut rig = Rig::new("").await;
    let user = rig.home.claude_dir();
    std::fs::create_dir_all(user.join("commands")).unwrap();
    std::fs::write(
        user.join("commands/context.md"),
        "---\nallowed-tools: Bash(echo:*), Read\ndescription: Gathers context\n---\nState: !`echo gathered-$ARGUMENTS`\nHost: !`cat /etc/hostname`\nNotes: @notes.txt\n",
    )
    .unwrap();
    let ws = rig.home.workspace();
    std::fs::create_dir_all(ws.join(".claude/commands")).unwrap();
    std::fs::write(
        ws.join(".claude/commands/repo.md"),
        "---\nallowed-tools: Bash(echo:*)\n---\nRepo: !`echo from-the-repo`\n",
    )
    .unwrap();
    std::fs::write(ws.join("notes.txt"), "NOTES-CONTENT\n").unwrap();
    let session = rig.session().await;
    let command = |rid: &str, prompt: &str| {
        json!({"type":"turn.start","request_id": rid,"session_id": session,
               "prompt": prompt,"command":true})
    };
    rig.mock.push(Reply::text(["ok"]));
    rig.server.send(command("c", "/context today")).await;
    rig.server.until_terminal().await;
    let sent = rig.mock.requests()[0].body.to_string();
    if common::sandbox::enforced() {
        assert!(sent.contains("State: gathered-today"), "{sent}");
        assert!(!sent.contains("!`echo"), "{sent}");
    } else {
        assert!(sent.contains("outside a sandbox"), "{sent}");
    }
    assert!(
        sent.contains("[SCV did not run `cat /etc/hostname`"),
        "{sent}"
    );
    assert!(sent.contains("allowed-tools"), "{sent}");
    assert!(
        sent.contains("<file path=\\\"notes.txt\\\">\\nNOTES-CONTENT"),
        "{sent}"
    );

    // The workspace's command, untrusted: its `!` line stays text.
    rig.mock.push(Reply::text(["ok"]));
    rig.server.send(command("r", "/repo")).await;
    rig.server.until_terminal().await;
    let sent = rig.mock.requests()[1].body.to_string();
    assert!(sent.contains("!`echo from-the-repo`"), "{sent}");
    assert!(sent.contains("not trusted"), "{sent}");
}

/// `Notification` fires while SCV waits for an approval
/// (`notification_type` `permission_prompt`, matched by the matcher) and
/// never holds the approval up, and as a turn ends (`idle_prompt`); `SubagentStart` fires as a `task` child
/// starts, with its `agent_type`.
#[tokio::test]
async fn notification_and_subagent_start_hooks_fire() {
    let mut rig = Rig::with_capabilities("", json!({"subagents": true})).await;
    user_settings(
        &rig.home,
        json!({"hooks": {
            "Notification": [{"matcher": "permission_prompt", "hooks": [{"type": "command",
                "command": "cat > \"$CLAUDE_PROJECT_DIR/notified.json\""}]},
                {"matcher": "idle_prompt", "hooks": [{"type": "command",
                "command": "cat > \"$CLAUDE_PROJECT_DIR/idle.json\""}]}],
            "SubagentStart": [{"hooks": [{"type": "command",
                "command": "cat > \"$CLAUDE_PROJECT_DIR/subagent-started.json\""}]}],
        }}),
    );
    let ws = rig.home.workspace();
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": "echo hi"}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    rig.server.start_turn(&session, "t", "go").await;
    let events = rig.server.until("approval.requested").await;
    let asked = events.last().unwrap().clone();
    let notified = ws.join("notified.json");
    assert!(
        scv_test_support::eventually(|| std::fs::metadata(&notified).is_ok_and(|m| m.len() > 0))
            .await,
        "no Notification hook ran"
    );
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"a","session_id": session,
                     "approval_id": asked["approval_id"],"approved":true}),
        )
        .await;
    let events = rig.server.until_terminal().await;
    assert_eq!(completed_of(&events, "b")["success"], true);
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&notified).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "Notification");
    assert_eq!(input["notification_type"], "permission_prompt");
    // The finished turn told the `idle_prompt` hook before its end.
    let idle: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join("idle.json")).unwrap()).unwrap();
    assert_eq!(idle["notification_type"], "idle_prompt");
    assert_eq!(idle["message"], "SCV is waiting for your input");
    assert!(
        input["message"].as_str().unwrap().contains("bash"),
        "{input}"
    );

    rig.mock.push(Reply::tool_calls(&[(
        "x",
        "task",
        json!({"description": "look", "prompt": "CHILD-LOOK"}),
    )]));
    rig.mock.push_matching("CHILD-LOOK", Reply::text(["seen"]));
    rig.mock.push(Reply::text(["done"]));
    rig.turn(&session, "delegate").await;
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join("subagent-started.json")).unwrap())
            .unwrap();
    assert_eq!(input["hook_event_name"], "SubagentStart");
    assert_eq!(input["agent_type"], "general-purpose");
    assert!(!input["agent_id"].as_str().unwrap().is_empty());
}

/// A command's `allowed-tools` lets its own turn make the calls it covers
/// without asking (inside the sandbox); another call of that turn, and
/// the same call in a plain turn, are asked.
#[tokio::test]
async fn a_commands_allowed_tools_pre_approve_its_turn_only() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "auto_approve = [\"read\"]");
    let dir = home.claude_dir().join("commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("greet.md"),
        "---\nallowed-tools: Bash(echo:*)\n---\nGreet $ARGUMENTS with echo.\n",
    )
    .unwrap();
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    let ws = home.workspace();
    let session = server.start_session(&ws).await;
    // Runs every approval asked for to its end, denying each; the ids
    // of the calls asked about.
    async fn asked_in(server: &mut TestServer, session: &str) -> Vec<String> {
        let mut asked = Vec::new();
        loop {
            let event = server.next().await;
            match event["type"].as_str().unwrap() {
                "approval.requested" => {
                    asked.push(event["call_id"].as_str().unwrap().to_string());
                    server
                        .send(json!({"type":"approval.resolve","request_id":"a",
                                     "session_id": session, "approval_id": event["approval_id"],
                                     "approved": false}))
                        .await;
                }
                "turn.completed" | "turn.failed" => return asked,
                _ => {}
            }
        }
    }
    mock.push(Reply::tool_calls(&[
        ("e1", "bash", json!({"command": "echo hello team"})),
        ("t1", "bash", json!({"command": "touch made"})),
    ]));
    mock.push(Reply::text(["done"]));
    server
        .send(
            json!({"type":"turn.start","request_id":"c","session_id": session,
                     "prompt":"/greet the team","command":true}),
        )
        .await;
    let asked = asked_in(&mut server, &session).await;
    if common::sandbox::enforced() {
        assert_eq!(asked, ["t1"], "the command's echo was asked");
    } else {
        // Outside a sandbox nothing is pre-approved.
        assert_eq!(asked, ["e1", "t1"]);
    }
    // A plain turn: the same echo is asked.
    mock.push(Reply::tool_calls(&[(
        "e2",
        "bash",
        json!({"command": "echo hello team"}),
    )]));
    mock.push(Reply::text(["done"]));
    server.start_turn(&session, "p", "greet them").await;
    assert_eq!(asked_in(&mut server, &session).await, ["e2"]);
}

/// A command's `model:` picks the model of its own turn (as Claude Code's
/// does); the next plain turn is the session's model again. A repository
/// command's model applies in an untrusted workspace too (a prompt's
/// choice, not code), and `inherit` keeps the session's.
#[tokio::test]
async fn a_commands_model_is_used_for_its_turn_only() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let ws = home.workspace();
    let dir = ws.join(".claude/commands");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("quick.md"),
        "---\nmodel: gpt-quick-1\n---\nAnswer $ARGUMENTS briefly.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("same.md"),
        "---\nmodel: inherit\n---\nSame $ARGUMENTS.\n",
    )
    .unwrap();
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    let session = server.start_session(&ws).await;
    let session_model = mock.requests().len();
    for (rid, prompt, command) in [
        ("c", "/quick what time", true),
        ("p", "plain", false),
        ("s", "/same thing", true),
    ] {
        mock.push(Reply::text(["ok"]));
        server
            .send(
                json!({"type":"turn.start","request_id": rid,"session_id": session,
                         "prompt": prompt,"command": command}),
            )
            .await;
        let events = server.until_terminal().await;
        assert_eq!(
            events.last().unwrap()["type"],
            "turn.completed",
            "{events:?}"
        );
    }
    let models: Vec<String> = mock.requests()[session_model..]
        .iter()
        .map(|r| r.body["model"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(models[0], "gpt-quick-1");
    assert_ne!(models[1], "gpt-quick-1");
    assert_eq!(models[1], models[2], "inherit keeps the session's model");
}
