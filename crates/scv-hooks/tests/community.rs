#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Real Claude Code hooks (see tests/community/README.md), run unmodified
//! with python3 on SCV's input JSON; their runs go through `interpret`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use scv_hooks::{
    input_json, interpret, Common, Decision, Event, Exit, HookCommand, Hooks, Input, Run,
    MAX_STDERR_BYTES, MAX_STDOUT_BYTES,
};
use serde_json::{json, Value};

fn script(name: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/community")
        .join(name);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("SCV_REQUIRE_COMMUNITY_HOOKS").is_none(),
        "{} is missing (tests/community/README.md says where to get it)",
        path.display()
    );
    eprintln!(
        "skipped: {} is absent (tests/community/README.md says where to get it)",
        path.display()
    );
    None
}

/// Runs `script` as the server would (stdin = the input JSON, output
/// captured up to the bounds) and interprets the run.
fn run_hook(script: &Path, cwd: &Path, tool: &str, arguments: Value) -> scv_hooks::Outcome {
    let common = Common {
        session_id: "community-test",
        transcript_path: None,
        cwd,
        permission_mode: "default",
    };
    let stdin = input_json(
        &common,
        &Input::PreToolUse {
            tool,
            arguments: &arguments,
        },
    );
    let hook = HookCommand {
        command: format!("python3 {}", script.display()),
        timeout: Duration::from_secs(30),
        source: PathBuf::from("/test/.scv/hooks.json"),
    };
    // The matcher the scripts' own documentation gives selects them.
    let hooks = Hooks::parse(
        &hook.source,
        &format!(
            r#"{{"hooks": {{"PreToolUse": [{{"matcher": "Bash|Read|Write|Edit", "hooks": [{{"type": "command", "command": {}}}]}}]}}}}"#,
            json!(hook.command)
        ),
    )
    .unwrap();
    assert_eq!(hooks.matching(Event::PreToolUse, Some(tool)).len(), 1);

    let mut child = Command::new("python3")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child.stdin.take().unwrap().write_all(&stdin).unwrap();
    let output = child.wait_with_output().unwrap();
    let exit = match output.status.code() {
        Some(code) => Exit::Code(code),
        None => Exit::Signal(-1),
    };
    let run = Run {
        exit,
        stdout_truncated: output.stdout.len() > MAX_STDOUT_BYTES,
        stderr_truncated: output.stderr.len() > MAX_STDERR_BYTES,
        stdout: output.stdout,
        stderr: output.stderr,
    };
    interpret(Event::PreToolUse, &hook, run)
}

fn python3() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: no python3");
    }
    ok
}

#[test]
fn anthropics_bash_command_validator() {
    let Some(script) = script("bash_command_validator_example.py") else {
        return;
    };
    if !python3() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();

    // It reads tool_name == "Bash" and tool_input.command: SCV's bash call
    // must reach it under Claude Code's names, and its exit 2 must deny.
    let o = run_hook(
        &script,
        dir.path(),
        "bash",
        json!({"command": "grep -r foo src"}),
    );
    assert_eq!(o.decision, Decision::Deny, "{o:?}");
    assert!(
        o.reason.as_deref().unwrap().contains("Use 'rg' (ripgrep)"),
        "{o:?}"
    );

    let o = run_hook(
        &script,
        dir.path(),
        "bash",
        json!({"command": "find . -name '*.rs'", "timeout_ms": 1000}),
    );
    assert_eq!(o.decision, Decision::Deny, "{o:?}");

    let o = run_hook(
        &script,
        dir.path(),
        "bash",
        json!({"command": "rg foo src"}),
    );
    assert_eq!(o.decision, Decision::None, "{o:?}");
    assert!(o.reason.is_none() && o.user_messages.is_empty(), "{o:?}");

    // Not Bash (tool_name "Read"): it lets it be.
    let o = run_hook(&script, dir.path(), "read_file", json!({"path": "grep"}));
    assert_eq!(o.decision, Decision::None, "{o:?}");
}

#[test]
fn disler_pre_tool_use_guard() {
    let Some(script) = script("pre_tool_use.py") else {
        return;
    };
    if !python3() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();

    let o = run_hook(&script, dir.path(), "bash", json!({"command": "rm -rf /"}));
    assert_eq!(o.decision, Decision::Deny, "{o:?}");
    assert!(
        o.reason
            .as_deref()
            .unwrap()
            .contains("Dangerous rm command"),
        "{o:?}"
    );

    // It reads tool_input.file_path: SCV's relative `path` must arrive as
    // Claude Code's absolute file_path.
    let o = run_hook(&script, dir.path(), "read_file", json!({"path": ".env"}));
    assert_eq!(o.decision, Decision::Deny, "{o:?}");
    assert!(o.reason.as_deref().unwrap().contains(".env files"), "{o:?}");
    let o = run_hook(
        &script,
        dir.path(),
        "edit_file",
        json!({"path": "config/.env", "old_string": "a", "new_string": "b"}),
    );
    assert_eq!(o.decision, Decision::Deny, "{o:?}");
    let o = run_hook(&script, dir.path(), "bash", json!({"command": "cat .env"}));
    assert_eq!(o.decision, Decision::Deny, "{o:?}");

    // Harmless calls pass (and it logs them where it runs).
    let o = run_hook(&script, dir.path(), "bash", json!({"command": "ls -la"}));
    assert_eq!(o, scv_hooks::Outcome::default());
    let o = run_hook(
        &script,
        dir.path(),
        "write_file",
        json!({"path": "notes.txt", "content": "hi"}),
    );
    assert_eq!(o, scv_hooks::Outcome::default());
    let o = run_hook(
        &script,
        dir.path(),
        "read_file",
        json!({"path": ".env.sample"}),
    );
    assert_eq!(o.decision, Decision::None, "{o:?}");

    let log: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("logs/pre_tool_use.json")).unwrap())
            .unwrap();
    let logged = log.as_array().unwrap();
    assert_eq!(logged.len(), 3);
    assert_eq!(logged[0]["tool_name"], "Bash");
    assert_eq!(logged[1]["tool_name"], "Write");
    assert_eq!(
        logged[1]["tool_input"]["file_path"],
        dir.path().join("notes.txt").display().to_string()
    );
    assert_eq!(logged[1]["hook_event_name"], "PreToolUse");
}
