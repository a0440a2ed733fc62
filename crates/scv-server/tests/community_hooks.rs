#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Two community hooks written for Claude Code, published on npm and PyPI,
//! run unmodified through the real binary: each is wired with the command
//! its own documentation gives, reads Claude Code's `PreToolUse` stdin
//! JSON, and blocks what it is meant to block — one by exit 2 with stderr,
//! one by `permissionDecision: "deny"` — while a harmless call runs.
//!
//! The packages are not in this repository: `.ci/run` installs them, pinned,
//! into `target/community-hooks/` (`SCV_COMMUNITY_HOOKS_DIR` overrides the
//! place). Without them a test prints "skipped: …" and passes, unless
//! `SCV_REQUIRE_COMMUNITY_HOOKS` is set (CI sets it); then it fails.

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// Where `.ci/run` installs the community hooks.
fn install_dir() -> PathBuf {
    match std::env::var_os("SCV_COMMUNITY_HOOKS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/community-hooks"),
    }
}

/// The installed entry point `relative` under the install directory, or
/// `None` after printing why the test is skipped; panics instead when
/// `SCV_REQUIRE_COMMUNITY_HOOKS` is set.
fn installed(package: &str, relative: &str) -> Option<PathBuf> {
    let path = install_dir().join(relative);
    if path.is_file() {
        return Some(path.canonicalize().unwrap());
    }
    let why = format!(
        "{package} is not installed at {} (the install step of .ci/run puts it there)",
        path.display()
    );
    if std::env::var_os("SCV_REQUIRE_COMMUNITY_HOOKS").is_some() {
        panic!("SCV_REQUIRE_COMMUNITY_HOOKS is set but {why}");
    }
    eprintln!("skipped: {why}");
    None
}

/// `path` quoted for `bash -c`.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// A rig whose workspace holds `WORKSPACE/.scv/hooks.json` = `hooks`
/// before the session starts; approvals are automatic.
async fn rig_with_hooks(hooks: Value) -> (Rig, String) {
    // The packages are where the build is; a checkout in the home needs
    // them named readable, as a user would name such a tool's folder.
    let readable = serde_json::to_string(&install_dir().display().to_string()).unwrap();
    let mut rig = Rig::new(&format!(
        "auto_approve = [\"process\", \"read\", \"write\"]\nsandbox_readable_roots = [{readable}]"
    ))
    .await;
    let dir = rig.home.workspace().join(".scv");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hooks.json"), hooks.to_string()).unwrap();
    rig.home.trust_workspace();
    let session = rig.session().await;
    (rig, session)
}

/// The `tool.completed` event of `call_id`.
fn completed_of<'a>(events: &'a [Value], call_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool.completed for {call_id}: {:?}", types(events)))
}

/// The content of the tool message answering `call_id` in the last request.
fn tool_message(rig: &Rig, call_id: &str) -> String {
    let requests = rig.mock.requests();
    let body = &requests.last().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Asserts `call_id` was blocked by a `PreToolUse` hook, never started, and
/// that its output (which the model reads) contains `why`.
fn assert_blocked(rig: &Rig, events: &[Value], call_id: &str, why: &str) {
    let done = completed_of(events, call_id);
    assert_eq!(done["success"], false, "{done}");
    let output = done["output"].as_str().unwrap();
    assert!(output.contains("PreToolUse hook blocked"), "{output}");
    assert!(output.contains(why), "{output} lacks {why}");
    assert!(
        !events
            .iter()
            .any(|e| e["type"] == "tool.started" && e["call_id"] == call_id),
        "a blocked call must not start"
    );
    let message = tool_message(rig, call_id);
    assert!(message.contains(why), "the model read {message:?}");
}

/// npm `@coo-quack/sensitive-canary` 0.8.1 (MIT), "Claude Code hooks that
/// block secrets and PII before they reach the Anthropic API" —
/// <https://github.com/coo-quack/sensitive-canary>,
/// <https://coo-quack.github.io/sensitive-canary/>. Wired as its README's
/// npm install says (`node …/@coo-quack/sensitive-canary/dist/pre-tool-use-hook.js`)
/// with the matcher of its own `hooks/hooks.json`. It blocks by exit 2
/// with the reason on stderr: a command line holding an AWS access key,
/// and a read of `.env`.
#[tokio::test]
async fn sensitive_canary_blocks_a_secret_and_a_dotenv_read_by_exit_2() {
    let Some(entry) = installed(
        "@coo-quack/sensitive-canary@0.8.1",
        "npm/node_modules/@coo-quack/sensitive-canary/dist/pre-tool-use-hook.js",
    ) else {
        return;
    };
    let hooks = json!({"hooks": {"PreToolUse": [{
        "matcher": "Read|NotebookRead|Bash|Grep|mcp__.*",
        "hooks": [{"type": "command", "command": format!("node {}", quoted(&entry))}],
    }]}});
    let (mut rig, session) = rig_with_hooks(hooks).await;
    let workspace = rig.home.workspace();
    std::fs::write(workspace.join(".env"), "NOT_A_SECRET=1\n").unwrap();
    let blocked = workspace.join("blocked-ran");
    let allowed = workspace.join("allowed-ran");
    // An AWS-format access key that is not AWS's documented example (the
    // hook lets keys ending in EXAMPLE through), built here so that no
    // scanner mistakes this file for a leak.
    let key = format!("AKIA{}", "Z7QW3RT5YU8IOP2K");
    rig.mock.push(Reply::tool_calls(&[(
        "secret",
        "bash",
        json!({"command": format!("touch {} && echo {key}", quoted(&blocked))}),
    )]));
    rig.mock.push(Reply::tool_calls(&[(
        "dotenv",
        "read_file",
        json!({"path": ".env"}),
    )]));
    rig.mock.push(Reply::tool_calls(&[(
        "fine",
        "bash",
        json!({"command": format!("touch {} && echo no secrets here", quoted(&allowed))}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(&session, "go").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{:?}",
        types(&events)
    );

    assert!(!blocked.exists(), "the call holding a key must not run");
    assert_blocked(&rig, &events, "secret", "AWS Access Key ID");
    assert_blocked(
        &rig,
        &events,
        "dotenv",
        ".env and .env.* files contain secrets",
    );
    let dotenv = completed_of(&events, "dotenv");
    assert!(!dotenv["output"].as_str().unwrap().contains("NOT_A_SECRET"));

    assert!(allowed.exists(), "the harmless call must run");
    let fine = completed_of(&events, "fine");
    assert_eq!(fine["success"], true, "{fine}");
    assert!(fine["output"].as_str().unwrap().contains("no secrets here"));
}

/// PyPI `cervellaswarm-agent-hooks` 0.1.0 (Apache-2.0), "Ready-to-use hooks
/// for Claude Code: bash validation, …" —
/// <https://github.com/rafapra3008/cervellaswarm/tree/main/packages/agent-hooks>.
/// Wired as its README says (`"matcher": "Bash"`, command
/// `cervella-bash-validator`, timeout 5), by the console script's absolute
/// path in the venv. It blocks by printing `permissionDecision: "deny"`
/// and exiting 0: here a command that mentions `DROP TABLE` (harmless if it
/// ran, which it must not).
#[tokio::test]
async fn cervella_bash_validator_denies_a_destructive_command_by_json() {
    let Some(entry) = installed(
        "cervellaswarm-agent-hooks==0.1.0",
        "venv/bin/cervella-bash-validator",
    ) else {
        return;
    };
    let hooks = json!({"hooks": {"PreToolUse": [{
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": quoted(&entry), "timeout": 5}],
    }]}});
    let (mut rig, session) = rig_with_hooks(hooks).await;
    let workspace = rig.home.workspace();
    let blocked = workspace.join("blocked-ran");
    let allowed = workspace.join("allowed-ran");
    rig.mock.push(Reply::tool_calls(&[(
        "drop",
        "bash",
        json!({"command": format!("touch {}; echo 'DROP TABLE users;'", quoted(&blocked))}),
    )]));
    rig.mock.push(Reply::tool_calls(&[(
        "fine",
        "bash",
        json!({"command": format!("touch {} && echo created", quoted(&allowed))}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(&session, "go").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{:?}",
        types(&events)
    );

    assert!(!blocked.exists(), "the denied call must not run");
    assert_blocked(&rig, &events, "drop", "BLOCKED: DROP TABLE");

    assert!(allowed.exists(), "the harmless call must run");
    let fine = completed_of(&events, "fine");
    assert_eq!(fine["success"], true, "{fine}");
    assert!(fine["output"].as_str().unwrap().contains("created"));
}
