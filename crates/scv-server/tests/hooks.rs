#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Hooks end to end through the real binary, in Claude Code's schema and
//! with its exit codes and JSON: what blocks, what allows, what asks, and
//! that every way a hook can fail to answer — it cannot start, it times
//! out, a signal kills it, it prints invalid JSON or megabytes, it gives a
//! decision that is not one of the three — blocks the call or the prompt
//! with a reason naming the hook (fail closed). Two community hooks,
//! installed from PyPI and npm, run unmodified in `community_hooks.rs`.

mod common;
use common::*;
use std::path::Path;

/// The tool result messages of a recorded request (Chat Completions).
fn tool_result(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

/// Writes `WORKSPACE/.scv/hooks.json`.
fn workspace_hooks(workspace: &Path, hooks: Value) {
    let dir = workspace.join(".scv");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("hooks.json"), hooks.to_string()).unwrap();
}

/// One `PreToolUse` hook for `matcher`, running `command`.
fn pre_tool(matcher: &str, command: &str, timeout: Option<u64>) -> Value {
    let mut hook = json!({"type": "command", "command": command});
    if let Some(timeout) = timeout {
        hook["timeout"] = json!(timeout);
    }
    json!({"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [hook]}]}})
}

/// A rig whose workspace holds `hooks` before the session starts, with
/// capability `hooks` asked for.
async fn rig_with(extra: &str, hooks: Value) -> (Rig, String) {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), extra);
    workspace_hooks(&home.workspace(), hooks);
    // The repository's hooks run in a workspace the user trusts.
    home.trust_workspace();
    let mut server = TestServer::spawn(BIN, home.path());
    server
        .send(
            json!({"type":"initialize","request_id":"i","protocol_version":2,
                     "capabilities":{"hooks":true}}),
        )
        .await;
    server.expect("initialized").await;
    let mut rig = Rig { mock, home, server };
    let session = rig.session().await;
    (rig, session)
}

/// A bash call that would leave a marker file, blocked by `hook`: the
/// command never runs, the model reads why, the user hears of it.
async fn assert_blocks(hook: Value, why: &str) {
    let (mut rig, session) = rig_with("auto_approve = [\"process\"]", hook).await;
    let marker = rig.home.workspace().join("ran");
    rig.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": format!("touch {}", marker.display())}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    assert!(!marker.exists(), "a blocked call must not run");
    assert!(
        !types(&events).contains(&"tool.started"),
        "{:?}",
        types(&events)
    );
    let completed = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    assert_eq!(completed["success"], false);
    let output = completed["output"].as_str().unwrap();
    assert!(output.contains("PreToolUse hook blocked"), "{output}");
    assert!(output.contains(why), "{output} lacks {why}");
    let message = events.iter().find(|e| e["type"] == "hook.message").unwrap();
    assert_eq!(message["event"], "PreToolUse");
    assert_eq!(message["blocked"], true);
    assert_eq!(message["call_id"], "c1");
    let requests = rig.mock.requests();
    assert!(tool_result(&requests[1].body).contains(why));
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn exit_2_blocks_the_call_and_feeds_stderr_to_the_model() {
    assert_blocks(
        pre_tool("Bash", "echo 'no touching today' >&2; exit 2", None),
        "no touching today",
    )
    .await;
}

#[tokio::test]
async fn permission_decision_deny_blocks_by_either_name() {
    let deny = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"denied by policy"}}'"#;
    assert_blocks(pre_tool("bash", deny, None), "denied by policy").await;
}

#[tokio::test]
async fn a_hook_that_cannot_start_blocks_and_is_named() {
    assert_blocks(
        pre_tool("Bash", "/nonexistent/hook-script.sh", None),
        "/nonexistent/hook-script.sh",
    )
    .await;
}

#[tokio::test]
async fn a_hook_that_times_out_blocks() {
    assert_blocks(pre_tool("Bash", "sleep 30", Some(1)), "timed out").await;
}

#[tokio::test]
async fn a_hook_killed_by_a_signal_blocks() {
    assert_blocks(pre_tool("Bash", "kill -KILL $$", None), "signal").await;
}

#[tokio::test]
async fn invalid_json_blocks_with_a_named_error() {
    assert_blocks(
        pre_tool("Bash", "echo '{\"hookSpecificOutput\": '", None),
        "invalid JSON",
    )
    .await;
}

#[tokio::test]
async fn a_decision_not_one_of_the_three_blocks() {
    let maybe = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"maybe"}}'"#;
    assert_blocks(pre_tool("Bash", maybe, None), "maybe").await;
}

#[tokio::test]
async fn megabytes_of_output_block_and_stay_bounded() {
    let (mut rig, session) = rig_with(
        "auto_approve = [\"process\"]",
        pre_tool("Bash", "head -c 8000000 /dev/zero | tr '\\0' 'x'", None),
    )
    .await;
    rig.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "true"}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    let completed = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    let output = completed["output"].as_str().unwrap();
    assert_eq!(completed["success"], false);
    assert!(output.contains("PreToolUse hook blocked"), "{output}");
    assert!(output.len() < 16 * 1024, "{} bytes", output.len());
    for event in &events {
        assert!(event.to_string().len() < 64 * 1024);
    }
}

#[tokio::test]
async fn allow_skips_the_approval_and_ask_asks_where_auto_approve_would_not() {
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"fine"}}'"#;
    let ask = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"look first"}}'"#;
    let hooks = json!({"hooks": {"PreToolUse": [
        {"matcher": "Write", "hooks": [{"type": "command", "command": allow}]},
        {"matcher": "Read", "hooks": [{"type": "command", "command": ask}]},
    ]}});
    // The user's own hooks: a repository's `allow` skips no approval.
    let mut rig = Rig::new("auto_approve = [\"read\"]").await;
    std::fs::write(rig.home.path().join("hooks.json"), hooks.to_string()).unwrap();
    let session = rig.session().await;
    std::fs::write(rig.home.workspace().join("a.txt"), "hello").unwrap();
    rig.mock.push(Reply::tool_calls(&[(
        "w",
        "write_file",
        json!({"path": "b.txt", "content": "written"}),
    )]));
    rig.mock.push(Reply::tool_calls(&[(
        "r",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(&session, "t", "go").await;
    let events = rig.server.until("approval.requested").await;
    // The write ran without asking (the hook allowed it) …
    assert_eq!(
        std::fs::read_to_string(rig.home.workspace().join("b.txt")).unwrap(),
        "written"
    );
    let asked: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "approval.requested")
        .collect();
    assert_eq!(asked.len(), 1);
    // … and the read, auto-approved by config, asks (the hook said so).
    assert_eq!(asked[0]["call_id"], "r");
    assert!(asked[0]["summary"].as_str().unwrap().contains("look first"));
    let approval_id = asked[0]["approval_id"].clone();
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"a","session_id":session,
                     "approval_id":approval_id,"approved":true}),
        )
        .await;
    let events = rig.server.until_terminal().await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

/// A workspace's hooks.json may have been written by the model: its
/// `allow` never skips the approval of a call that leaves the sandbox.
#[tokio::test]
async fn a_workspace_allow_does_not_skip_asking_for_an_unsandboxed_command() {
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'"#;
    let (mut rig, session) = rig_with("", pre_tool("*", allow, None)).await;
    rig.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "true", "unsandboxed": true}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    rig.server.start_turn(&session, "t", "go").await;
    let events = rig.server.until("approval.requested").await;
    assert!(!types(&events).contains(&"tool.started"));
    rig.server
        .send(
            json!({"type":"turn.cancel","request_id":"c","session_id":session,
                            "turn_id": events[0]["turn_id"]}),
        )
        .await;
    rig.server.until_terminal().await;
}

#[tokio::test]
async fn user_prompt_submit_blocks_before_any_request_and_adds_context() {
    let hooks = json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
        "command": "input=$(cat); case \"$input\" in *secret*) echo 'no secrets' >&2; exit 2;; esac; echo 'Today is release day.'"}]}]}});
    let (mut rig, session) = rig_with("", hooks).await;
    let events = rig.turn(&session, "tell me the secret").await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn.failed");
    assert_eq!(last["code"], "step_limit");
    assert!(last["message"].as_str().unwrap().contains("no secrets"));
    assert_eq!(
        rig.mock.request_count(),
        0,
        "a blocked prompt is never sent"
    );

    rig.mock.push(Reply::text(["hi"]));
    let events = rig.turn(&session, "hello").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let request = &rig.mock.requests()[0].body;
    let messages = request["messages"].as_array().unwrap();
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users.len(), 1, "the blocked prompt is not kept: {users:?}");
    assert!(users[0].starts_with("hello"));
    assert!(users[0].contains("Today is release day."));
}

#[tokio::test]
async fn post_tool_use_exit_2_feeds_stderr_to_the_model_after_the_call_ran() {
    let hooks = json!({"hooks": {"PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command",
        "command": "echo 'formatter: line 1 too long' >&2; exit 2"}]}]}});
    let (mut rig, session) = rig_with("auto_approve = [\"write\"]", hooks).await;
    rig.mock.push(Reply::tool_calls(&[(
        "w",
        "write_file",
        json!({"path": "f.txt", "content": "x"}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    rig.turn(&session, "go").await;
    assert!(rig.home.workspace().join("f.txt").exists());
    let result = tool_result(&rig.mock.requests()[1].body);
    assert!(result.contains("formatter: line 1 too long"), "{result}");
}

#[tokio::test]
async fn a_stop_hook_sends_the_model_back_once() {
    // Blocks the first stop, lets the second through (stop_hook_active).
    let hooks = json!({"hooks": {"Stop": [{"hooks": [{"type": "command",
        "command": "grep -q '\"stop_hook_active\":true' && exit 0; echo '{\"decision\":\"block\",\"reason\":\"run the tests first\"}'"}]}]}});
    let (mut rig, session) = rig_with("", hooks).await;
    rig.mock.push(Reply::text(["done"]));
    rig.mock.push(Reply::text(["tests pass"]));
    let events = rig.turn(&session, "go").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let requests = rig.mock.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert!(last["content"]
        .as_str()
        .unwrap()
        .contains("run the tests first"));
}

/// A Stop hook that always blocks sends the model back three times, then
/// the turn ends with its answer (completed, not a step limit), and the
/// user is told why.
#[tokio::test]
async fn a_stop_hook_that_always_blocks_ends_after_three_rounds() {
    let hooks = json!({"hooks": {"Stop": [{"hooks": [{"type": "command",
        "command": "echo '{\"decision\":\"block\",\"reason\":\"not yet\"}'"}]}]}});
    let (mut rig, session) = rig_with("max_steps = 20", hooks).await;
    for n in 1..=4 {
        rig.mock.push(Reply::text([format!("answer {n}")]));
    }
    let events = rig.turn(&session, "go").await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn.completed", "{last}");
    assert_eq!(
        rig.mock.requests().len(),
        4,
        "the first answer and three rounds"
    );
    let gave_up: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "hook.message" && e["blocked"] != true)
        .collect();
    assert_eq!(gave_up.len(), 1, "{events:?}");
    assert_eq!(
        gave_up[0]["message"],
        "a Stop hook kept the turn from ending 3 times; the turn ended anyway (the most SCV allows), its last reason: not yet"
    );
}

#[tokio::test]
async fn session_start_context_reaches_the_system_prompt() {
    let hooks = json!({"hooks": {"SessionStart": [{"hooks": [{"type": "command",
        "command": "echo \"branch: main; source=$(cat | grep -o '\"source\":\"[a-z]*\"')\""}]}]}});
    let (mut rig, session) = rig_with("", hooks).await;
    rig.mock.push(Reply::text(["hi"]));
    rig.turn(&session, "hello").await;
    let system = rig.mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("branch: main"), "{system}");
    assert!(system.contains("\"source\":\"startup\""), "{system}");
}

/// Hooks run in the tool sandbox with the tool environment: a hook cannot
/// write outside the workspace and does not see the provider's key.
#[tokio::test]
async fn hooks_run_sandboxed_without_credentials() {
    let outside = outside_dir();
    let target = outside.path().join("escaped");
    let command = format!("env > hook-env.txt; echo x > {}; exit 0", target.display());
    let hooks = json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}});
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    workspace_hooks(&home.workspace(), hooks);
    home.trust_workspace();
    let mut server = TestServer::spawn_with(
        BIN,
        home.path(),
        &[("OPENAI_API_KEY", "sk-hook-must-not-see-this")],
    );
    server.initialize().await;
    let mut rig = Rig { mock, home, server };
    let session = rig.session().await;
    rig.mock.push(Reply::text(["hi"]));
    rig.turn(&session, "hello").await;
    let env = std::fs::read_to_string(rig.home.workspace().join("hook-env.txt")).unwrap();
    assert!(!env.contains("sk-hook-must-not-see-this"));
    assert!(env.contains("CLAUDE_PROJECT_DIR="));
    if common::sandbox::enforced() {
        assert!(!target.exists(), "a hook wrote outside the workspace");
    }
}

/// A trusted workspace's malformed hooks file refuses the session (the
/// user trusted hooks that would not run); an untrusted one's is inert.
#[tokio::test]
async fn a_malformed_hooks_file_refuses_the_session_naming_file_and_line() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let dir = home.workspace().join(".scv");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("hooks.json"),
        "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash\", \"hooks\": [}\n",
    )
    .unwrap();
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    server
        .send(json!({"type":"session.start","request_id":"s0","cwd": home.workspace()}))
        .await;
    let started = server.expect("session.started").await;
    server.expect("queue.snapshot").await;
    let warnings = started["config_warnings"].to_string();
    assert!(warnings.contains("not a trusted workspace"), "{started}");
    home.trust_workspace();
    server
        .send(json!({"type":"session.start","request_id":"s1","cwd": home.workspace()}))
        .await;
    let error = server.expect_error("invalid_request", "s1").await;
    let message = error["message"].as_str().unwrap();
    assert!(message.contains(".scv/hooks.json:4"), "{message}");
    // The connection carries on: a session elsewhere starts.
    let other = tempfile::tempdir().unwrap();
    server.start_session(other.path()).await;

    // An `if` SCV cannot read is an error too, with its line (trusted
    // again, as `scv trust` would: the first reading is recorded anew).
    std::fs::write(
        dir.join("hooks.json"),
        "{\"hooks\": {\"PreToolUse\": [{\"hooks\": [\n{\"type\": \"command\", \"command\": \"x\", \"if\": \"Bash(rm -rf\"}]}]}}",
    )
    .unwrap();
    std::fs::remove_file(home.path().join("trust.json")).unwrap();
    server
        .send(json!({"type":"session.start","request_id":"s2","cwd": home.workspace()}))
        .await;
    let error = server.expect_error("invalid_request", "s2").await;
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("\"if\" is not a rule"), "{message}");
    assert!(message.contains(".scv/hooks.json:2"), "{message}");
}

/// A client that did not ask for capability `hooks` never sees
/// `hook.message`; the blocked call still completes as the document says.
#[tokio::test]
async fn hook_messages_only_to_a_client_that_asked() {
    let mut rig = Rig::new("auto_approve = [\"process\"]").await;
    workspace_hooks(
        &rig.home.workspace(),
        pre_tool("Bash", "echo nope >&2; exit 2", None),
    );
    rig.home.trust_workspace();
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "true"}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    assert!(!types(&events).contains(&"hook.message"));
    assert_seq_contiguous(&events);
    assert_eq!(
        types(&events),
        [
            "turn.started",
            "assistant.completed",
            "tool.proposed",
            "tool.completed",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
}

/// The daemon reads `$SCV_HOME/hooks.json` when it starts and on `reload`:
/// a malformed one shows in `daemon.status` as `hooks:user`, `failed`,
/// naming the file and line, and the fixed one as `connected`.
#[tokio::test]
async fn the_daemon_reports_a_malformed_user_hooks_file_at_start_and_on_reload() {
    use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let file = home.path().join("hooks.json");
    std::fs::write(&file, "{\"hooks\": {\n  \"Stop\": [\n}}").unwrap();
    let socket = home.path().join("server.sock");
    let log = DaemonLog::default();
    let mut daemon = spawn_daemon(BIN, home.path(), &socket, &log);
    wait_for_socket(&socket).await;
    let mut client = TestServer::connect(&socket).await;
    client.initialize().await;
    let hooks_of = |status: &Value| -> Value {
        status["status"]["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "hooks:user")
            .cloned()
            .unwrap_or_else(|| panic!("no hooks component: {status}"))
    };
    client
        .send(json!({"type":"daemon.control","request_id":"s","command":{"action":"status"}}))
        .await;
    let status = client.expect("daemon.status").await;
    let hooks = hooks_of(&status);
    assert_eq!(hooks["state"], "failed");
    let error = hooks["error"].as_str().unwrap();
    assert!(error.contains("hooks.json:3"), "{error}");
    assert!(log.wait_for("hooks.json:3").await, "{:?}", log.lines());

    std::fs::write(
        &file,
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#,
    )
    .unwrap();
    client
        .send(json!({"type":"daemon.control","request_id":"r","command":{"action":"reload"}}))
        .await;
    let status = client.expect("daemon.status").await;
    assert_eq!(hooks_of(&status)["state"], "connected");
    let _ = daemon.kill().await;
}

/// A gate that fails closed names itself by the script it runs and its
/// place in the hooks file, not by the start of its command line: a hook
/// run as `"/bin/sh" "/…/check.sh"` that prints half a JSON object is
/// "hook `/…/check.sh` (/…/.scv/hooks.json:LINE)", to the model and the user.
#[tokio::test]
async fn a_failing_gate_is_named_by_its_script_and_its_line_in_the_hooks_file() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "auto_approve = [\"process\"]");
    let workspace = home.workspace();
    let script = workspace.join(".scv").join("check.sh");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, "echo '{\"hookSpecificOutput\": '\n").unwrap();
    let hooks = pre_tool(
        "Bash",
        &format!("\"/bin/sh\" \"{}\"", script.display()),
        None,
    );
    let text = serde_json::to_string_pretty(&hooks).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("\"command\":"))
        .unwrap()
        + 1;
    let file = workspace.join(".scv").join("hooks.json");
    std::fs::write(&file, &text).unwrap();
    home.trust_workspace();
    let mut server = TestServer::spawn(BIN, home.path());
    server
        .send(
            json!({"type":"initialize","request_id":"i","protocol_version":2,
                     "capabilities":{"hooks":true}}),
        )
        .await;
    server.expect("initialized").await;
    let mut rig = Rig { mock, home, server };
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "echo never"}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    let name = format!("hook `{}` ({}:{line})", script.display(), file.display());
    let message = events.iter().find(|e| e["type"] == "hook.message").unwrap();
    assert_eq!(message["hook"], name.as_str(), "{message}");
    assert_eq!(message["blocked"], true);
    let completed = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    assert_eq!(completed["success"], false);
    let output = completed["output"].as_str().unwrap();
    assert!(output.contains(&name), "{output}");
}

/// Claude Code: "Other exit codes: Non-blocking error. stderr is shown to
/// the user and execution continues." A `PreToolUse` hook that exits 1:
/// the call runs, the user gets its stderr (`hook.message`, not blocked),
/// and the model never reads it.
#[tokio::test]
async fn exit_1_shows_stderr_to_the_user_and_not_to_the_model() {
    let (mut rig, session) = rig_with(
        "auto_approve = [\"process\"]",
        pre_tool(
            "Bash",
            "echo 'style: prefer rg over grep' >&2; exit 1",
            None,
        ),
    )
    .await;
    let marker = rig.home.workspace().join("ran");
    rig.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": format!("touch {}", marker.display())}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    assert!(marker.exists(), "a non-blocking error lets the call run");
    let message = events.iter().find(|e| e["type"] == "hook.message").unwrap();
    assert_ne!(message["blocked"], true, "{message}");
    assert_eq!(message["call_id"], "c1");
    let text = message["message"].as_str().unwrap();
    assert!(
        text.ends_with("exited 1: style: prefer rg over grep"),
        "{text}"
    );
    for request in rig.mock.requests() {
        assert!(
            !request.body.to_string().contains("prefer rg"),
            "the model read it: {}",
            request.body
        );
    }
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}
