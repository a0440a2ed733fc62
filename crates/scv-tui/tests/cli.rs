#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The `scv` command line against the real daemon and the mock provider.

mod common;
use common::*;

#[test]
fn help_describes_every_command() {
    let home = TestHome::new("http://127.0.0.1:9/v1", "");
    let run = |args: &[&str]| {
        let output = std::process::Command::new(SCV)
            .args(args)
            .env("SCV_HOME", home.path())
            .env(
                "CLAUDE_CONFIG_DIR",
                scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
            )
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}");
        stdout(&output)
    };
    let top = run(&["--help"]);
    for word in ["exec", "daemon", "--socket"] {
        assert!(top.contains(word), "{top}");
    }
    let exec = run(&["exec", "--help"]);
    for word in ["--json", "--approve", "PROMPT", "read", "process"] {
        assert!(exec.contains(word), "{exec}");
    }
    let daemon = run(&["daemon", "--help"]);
    for word in ["status", "reload", "stop"] {
        assert!(daemon.contains(word), "{daemon}");
    }
    assert!(run(&["--version"]).contains(env!("CARGO_PKG_VERSION")));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ui_refuses_a_non_terminal_stdout_in_one_line() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let output = home.scv().output().unwrap();
    assert!(!output.status.success());
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not a terminal"), "{err}");
    assert!(output.stdout.is_empty(), "no screen drawn");
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_prints_the_answer_and_starts_the_daemon() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    mock.push(Reply::text(["The answer ", "is 42."]));
    let output = home.scv().args(["exec", "What is it?"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "The answer is 42.\n");
    assert!(home.daemon_pid().is_some(), "the daemon was started");
    let body = &mock.requests()[0].body;
    assert_eq!(
        body["messages"].as_array().unwrap().last().unwrap()["content"],
        "What is it?"
    );
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains(&home.workspace().display().to_string()),
        "runs in the current directory"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_json_prints_protocol_events() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    mock.push(Reply::text(["hi"]));
    let output = home
        .scv()
        .args(["exec", "--json", "hello"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let types: Vec<String> = stdout(&output)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        types,
        [
            "initialized",
            "session.started",
            "queue.snapshot",
            "turn.started",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_denies_approvals_unless_approve_names_the_class() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let marker = home.workspace().join("made-by-exec");
    let call = [(
        "c1",
        "bash",
        json!({"command": format!("touch {}", marker.display())}),
    )];

    mock.push(Reply::tool_calls(&call));
    mock.push(Reply::text(["ok, not done"]));
    let output = home.scv().args(["exec", "touch it"]).output().unwrap();
    assert!(output.status.success());
    assert!(
        stderr(&output).contains("[denied] Run shell command: touch"),
        "{}",
        stderr(&output)
    );
    assert!(!marker.exists());

    // A command of two lines is printed as two lines, whole.
    mock.push(Reply::tool_calls(&[(
        "c2",
        "bash",
        json!({"command": "git status\ntouch PWNED"}),
    )]));
    mock.push(Reply::text(["not done either"]));
    let output = home.scv().args(["exec", "status"]).output().unwrap();
    assert!(
        stderr(&output).contains("[denied] Run shell command: git status\ntouch PWNED\n"),
        "{}",
        stderr(&output)
    );

    mock.push(Reply::tool_calls(&call));
    mock.push(Reply::text(["done"]));
    let output = home
        .scv()
        .args(["exec", "--approve", "process,write", "touch it"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(marker.exists());
    assert_eq!(stdout(&output), "done\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_exit_code_says_the_turn_failed() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "provider_max_retries = 0");
    mock.push(Reply::error(400, "no such model"));
    let output = home.scv().args(["exec", "hi"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("the turn failed: the model provider returned an error"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_daemon_is_a_one_line_error() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let output = home
        .scv()
        .env("SCV_SERVER_BIN", "/nonexistent/scv-server")
        .args(["exec", "hi"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let err = stderr(&output);
    // The error, then how to install the daemon.
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(
        err.lines()
            .next()
            .unwrap()
            .contains("/nonexistent/scv-server"),
        "{err}"
    );
    assert!(
        err.contains("cargo install --path crates/scv-server"),
        "{err}"
    );
}

/// `scv` copied somewhere without `scv-server` beside it or on `PATH`
/// says how to install both.
#[tokio::test(flavor = "multi_thread")]
async fn scv_without_scv_server_says_how_to_install_both() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let bin = tempfile::tempdir().unwrap();
    let alone = bin.path().join("scv");
    std::fs::copy(SCV, &alone).unwrap();
    let output = std::process::Command::new(&alone)
        .env_clear()
        .env("HOME", home.path())
        .env("SCV_HOME", home.path())
        .env("PATH", "/usr/bin:/bin")
        .current_dir(home.workspace())
        .args(["exec", "hi"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "scv needs scv-server, the daemon it starts: put it beside {} or on PATH",
            alone.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(
            "cargo install --path crates/scv-server && cargo install --path crates/scv-tui"
        ),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn daemon_status_reload_and_stop() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let output = home.scv().args(["daemon", "status"]).output().unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("not running"),
        "{}",
        stderr(&output)
    );

    mock.push(Reply::text(["up"]));
    assert!(home
        .scv()
        .args(["exec", "start it"])
        .output()
        .unwrap()
        .status
        .success());
    let pid = home.daemon_pid().unwrap();

    let output = home.scv().args(["daemon", "status"]).output().unwrap();
    assert!(output.status.success());
    let text = stdout(&output);
    assert!(
        text.contains(&format!("(pid {pid})")) && text.contains("components: none"),
        "{text}"
    );

    let output = home
        .scv()
        .args(["daemon", "reload", "--json"])
        .output()
        .unwrap();
    let event: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(event["type"], "daemon.status");
    assert_eq!(event["status"]["pid"], pid);

    let output = home.scv().args(["daemon", "stop"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains(&format!("stopped scv-server (pid {pid})")));
    assert!(!home.socket().exists());
    let output = home.scv().args(["daemon", "stop"]).output().unwrap();
    assert!(output.status.success());
    assert!(stdout(&output).contains("not running"));

    // `daemon start` starts one, and says so again when it runs.
    let output = home.scv().args(["daemon", "start"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let started = home.daemon_pid().expect("a daemon runs");
    assert!(
        stdout(&output).contains(&format!("started (pid {started})")),
        "{}",
        stdout(&output)
    );
    let output = home.scv().args(["daemon", "start"]).output().unwrap();
    assert!(
        stdout(&output).contains(&format!("is already running (pid {started})")),
        "{}",
        stdout(&output)
    );
    assert!(home
        .scv()
        .args(["daemon", "stop"])
        .status()
        .unwrap()
        .success());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_daemon_of_another_protocol_version_is_a_one_line_error() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    // A "daemon" that speaks protocol 3 and refuses version 2.
    let listener = tokio::net::UnixListener::bind(home.socket()).unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (reader, mut writer) = stream.into_split();
            let mut lines = BufReader::new(reader).lines();
            if let Ok(Some(line)) = lines.next_line().await {
                let id = serde_json::from_str::<Value>(&line).unwrap()["request_id"].clone();
                let reply = json!({"type":"error","request_id":id,"code":"version_mismatch","message":"this server speaks protocol version 3","fatal":true});
                let _ = writer.write_all(format!("{reply}\n").as_bytes()).await;
            }
        }
    });
    let output = tokio::task::spawn_blocking({
        let mut command = home.scv();
        command.args(["exec", "hi"]);
        move || command.output().unwrap()
    })
    .await
    .unwrap();
    assert!(!output.status.success());
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("another protocol version") && err.contains("version 3"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_takes_a_provider_and_a_model() {
    let mock = MockProvider::start().await;
    let home = Home::new(
        &mock,
        &format!(
            "[providers.anthropic]\nbase_url = \"{}\"\n",
            mock.base_url()
        ),
    );
    mock.push(Reply::anthropic_text(["Hi from the Messages wire."]));
    let output = home
        .scv()
        .args([
            "exec",
            "--provider",
            "anthropic",
            "--model",
            "claude-x",
            "hello",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "Hi from the Messages wire.\n"
    );
    let request = &mock.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.body["model"], "claude-x");
    // An unknown provider is one clear line.
    let output = home
        .scv()
        .args(["exec", "--provider", "nope", "hello"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("unknown provider `nope` (known: anthropic"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_approve_sandboxed_runs_sandboxed_commands_only() {
    if !matches!(scv_sandbox::probe(), scv_sandbox::Support::Enforced { .. }) {
        assert!(std::env::var_os("SCV_REQUIRE_LANDLOCK").is_none());
        eprintln!("skipped: the sandbox is unavailable here");
        return;
    }
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let marker = home.workspace().join("made-in-the-sandbox");
    mock.push(Reply::tool_calls(&[
        (
            "c1",
            "bash",
            json!({"command": format!("touch {}", marker.display())}),
        ),
        (
            "c2",
            "bash",
            json!({"command": "touch ~/.cache/outside", "unsandboxed": true}),
        ),
    ]));
    mock.push(Reply::text(["done"]));
    let output = home
        .scv()
        .args(["exec", "--approve", "sandboxed", "touch it"])
        .output()
        .unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert!(marker.exists(), "{err}");
    assert!(err.contains("[approved] Run shell command: touch"), "{err}");
    assert!(
        err.contains("[denied] Run shell command outside the sandbox: touch ~/.cache/outside"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_list_prints_each_server_with_its_state_and_tools() {
    let mock = MockProvider::start().await;
    let empty = Home::new(&mock, "");
    let output = empty.scv().args(["mcp", "list"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).starts_with("no MCP servers configured"),
        "{}",
        stdout(&output)
    );

    // A raw JSON-RPC server needs only python3 (no SDK).
    let raw = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scv-server/tests/mcp/raw_server.py")
        .canonicalize()
        .unwrap();
    let home = Home::new(
        &mock,
        &format!(
            "[mcp_servers.raw]\ncommand = \"python3\"\nargs = [{:?}, \"ok\"]\n[mcp_servers.never]\ncommand = \"python3\"\nargs = [{:?}, \"no_init\"]\nstartup_timeout_ms = 200\n",
            raw.display().to_string(),
            raw.display().to_string()
        ),
    );
    let mut listed = String::new();
    for _ in 0..100 {
        let output = home.scv().args(["mcp", "list"]).output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        listed = stdout(&output);
        if listed.contains("connected") && listed.contains("failed") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let lines: Vec<&str> = listed.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{listed}");
    let never = lines.iter().find(|l| l.starts_with("never ")).unwrap();
    assert!(
        never.contains("failed") && never.contains("did not finish starting within 200 ms"),
        "{listed}"
    );
    let raw_line = lines.iter().find(|l| l.starts_with("raw ")).unwrap();
    let fields: Vec<&str> = raw_line.split_whitespace().collect();
    assert_eq!(fields[..5], ["raw", "connected", "-", "1", "0"], "{listed}");
    let json = home.scv().args(["mcp", "list", "--json"]).output().unwrap();
    let event: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let components = event["status"]["components"].as_array().unwrap();
    assert_eq!(components.len(), 2);
    assert!(components.iter().all(|c| c["account"].is_null()));
}

/// m02: a component's error comes from a server SCV talks to (here a
/// command name with an OSC 52 and a screen clear in it): `scv daemon
/// status` and `scv mcp list` show it as visible symbols, never raw.
#[tokio::test(flavor = "multi_thread")]
async fn status_printers_show_a_hostile_error_as_visible_symbols() {
    let mock = MockProvider::start().await;
    let home = Home::new(
        &mock,
        "[mcp_servers.evil]\ncommand = \"/nonexistent\\u001b]52;c;cHduZWQ=\\u0007\\u001b[2J\"\n",
    );
    let mut printed = String::new();
    for _ in 0..100 {
        let output = home.scv().args(["mcp", "list"]).output().unwrap();
        printed = stdout(&output);
        if printed.contains("failed") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let status = home.scv().args(["daemon", "status"]).output().unwrap();
    for text in [printed, stdout(&status)] {
        assert!(
            text.contains("cannot start `/nonexistent␛]52;c;cHduZWQ=␇␛[2J`"),
            "{text}"
        );
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
    }
}

fn types_of(output: &std::process::Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect()
}

/// The last user message the provider was sent.
fn last_prompt(mock: &MockProvider) -> String {
    let requests = mock.requests();
    let body = &requests.last().expect("a request").body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_reads_the_prompt_from_stdin() {
    use std::io::Write;
    use std::process::Stdio;
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    for args in [&["exec", "-"][..], &["exec"][..]] {
        mock.push(Reply::text(["read it"]));
        let mut child = home
            .scv()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"a prompt\nfrom a pipe\n").unwrap();
        drop(stdin);
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        assert_eq!(stdout(&output), "read it\n");
        assert_eq!(last_prompt(&mock), "a prompt\nfrom a pipe\n", "{args:?}");
    }
    // An empty pipe is an error, not an empty turn.
    let output = home
        .scv()
        .args(["exec", "-"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("the prompt is empty"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_cwd_chooses_the_workspace() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let sub = home.workspace().join("sub");
    std::fs::create_dir(&sub).unwrap();
    mock.push(Reply::text(["ok"]));
    let output = home
        .scv()
        .current_dir(home.path())
        .args(["exec", "--json", "--cwd", sub.to_str().unwrap(), "where?"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let events = types_of(&output);
    let started = events
        .iter()
        .find(|e| e["type"] == "session.started")
        .unwrap();
    assert_eq!(
        started["cwd"].as_str().unwrap(),
        sub.canonicalize().unwrap().to_str().unwrap()
    );
    let output = home
        .scv()
        .args(["exec", "--cwd", "/no/such/dir", "where?"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("--cwd /no/such/dir"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_json_has_reasoning_only_with_the_flag() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let think = ["<think>weighing ", "the options</think>", "the answer"];
    for reasoning in [false, true] {
        mock.push(Reply::text(think));
        let mut command = home.scv();
        command.args(["exec", "--json"]);
        if reasoning {
            command.arg("--reasoning");
        }
        let output = command.arg("think").output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        let events = types_of(&output);
        let thought: String = events
            .iter()
            .filter(|e| e["type"] == "reasoning.delta")
            .map(|e| e["content"].as_str().unwrap().to_string())
            .collect();
        let answer = events
            .iter()
            .find(|e| e["type"] == "assistant.completed")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(answer, "the answer", "reasoning={reasoning}");
        if reasoning {
            assert_eq!(thought, "weighing the options");
        } else {
            assert_eq!(thought, "", "no reasoning.delta without --reasoning");
        }
    }
    // Without --json the thinking goes to stderr, the answer to stdout.
    mock.push(Reply::text(think));
    let output = home
        .scv()
        .args(["exec", "--reasoning", "think"])
        .output()
        .unwrap();
    assert_eq!(stdout(&output), "the answer\n");
    assert!(
        stderr(&output).contains("weighing the options"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_json_carries_usage_by_kind_and_cost() {
    let mock = MockProvider::start().await;
    let home = Home::new(
        &mock,
        "[pricing.\"mock-model\"]\ninput = 1.0\noutput = 4.0\n",
    );
    mock.push(Reply::text(["hi"]));
    let output = home
        .scv()
        .args(["exec", "--json", "hello"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let events = types_of(&output);
    assert_eq!(events[0]["capabilities"]["usage"], true, "{events:?}");
    let done = events.last().unwrap();
    assert_eq!(done["type"], "turn.completed");
    // The mock reports 11 in, 7 out: (11 × 1 + 7 × 4) per million.
    assert_eq!(
        done["usage_detail"],
        json!({"input": 11, "cache_read": 0, "cache_write": 0, "output": 7, "reasoning": 0})
    );
    let cost = done["cost_usd"].as_f64().unwrap();
    assert!((cost - 39e-6).abs() < 1e-12, "{done}");
    assert!((done["session_cost_usd"].as_f64().unwrap() - 39e-6).abs() < 1e-12);
}

/// `scv usage` reads what the daemon journaled: two turns on a priced
/// model, one on a model without a price, by model and by day.
#[tokio::test(flavor = "multi_thread")]
async fn usage_tables_what_the_store_journaled() {
    let mock = MockProvider::start().await;
    let home = Home::new(
        &mock,
        "[pricing.\"mock-model\"]\ninput = 1.0\noutput = 4.0\n",
    );
    for prompt in ["one", "two"] {
        mock.push(Reply::text(["hi"]));
        let output = home.scv().args(["exec", prompt]).output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    }
    mock.push(Reply::text(["hi"]));
    let output = home
        .scv()
        .args(["exec", "--model", "unpriced-model", "three"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    let output = home
        .scv()
        .args(["usage", "--by", "model"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let table = stdout(&output);
    let row = |key: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} row: {table}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    // Each turn: 11 in, 7 out; at $1 / $4 per million: $0.000039.
    assert_eq!(
        row("mock-model"),
        ["mock-model", "2", "22", "0", "0", "14", "0", "$0.0001"],
        "{table}"
    );
    assert_eq!(
        row("unpriced-model"),
        [
            "unpriced-model",
            "1",
            "11",
            "0",
            "0",
            "7",
            "0",
            "no",
            "price"
        ],
        "{table}"
    );
    assert_eq!(
        row("TOTAL"),
        ["TOTAL", "3", "33", "0", "0", "21", "0", "$0.0001", "+", "1", "turns", "no", "price"],
        "{table}"
    );

    // By session: the short id, then the directory and title after the
    // figures.
    let output = home
        .scv()
        .args(["usage", "--by", "session"])
        .output()
        .unwrap();
    let table = stdout(&output);
    let header = table.lines().next().unwrap();
    assert!(header.ends_with("DIRECTORY · TITLE"), "{table}");
    let workspace = home
        .workspace()
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.contains(&format!("{workspace} · ")))
        .collect();
    assert_eq!(rows.len(), 3, "one row per exec session: {table}");
    assert!(
        rows.iter()
            .all(|r| r.split_whitespace().next().unwrap().len() == 8),
        "{table}"
    );
    assert!(table.contains(" · three"), "the title: {table}");

    let output = home
        .scv()
        .args(["usage", "--since", "1d", "--by", "day"])
        .output()
        .unwrap();
    let table = stdout(&output);
    let today = &scv_client::time::utc(scv_store::now_unix())[..10];
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(today) && l.contains(" 3 ")),
        "{table}"
    );

    let output = home
        .scv()
        .args(["usage", "--since", "soon"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("not a duration"),
        "{}",
        stderr(&output)
    );
}

/// The newcomer's path: edit config.toml while the daemon runs and the
/// next `scv exec` uses it; `scv daemon reload` says what changed, what
/// waits for a restart, and what is wrong with a broken edit (which
/// changes nothing); a daemon that cannot start says why at once.
#[tokio::test(flavor = "multi_thread")]
async fn config_edits_reach_the_running_daemon_and_reload_says_what_changed() {
    let first = MockProvider::start().await;
    let second = MockProvider::start().await;
    let home = Home::new(&first, "");
    let config = home.path().join("config.toml");
    first.push(Reply::text(["from the first"]));
    let output = home.scv().args(["exec", "hi"]).output().unwrap();
    assert_eq!(stdout(&output), "from the first\n", "{}", stderr(&output));

    std::fs::write(
        &config,
        format!(
            "model = \"edited-model\"\nbase_url = \"{}\"\nauto_aprove = [\"read\"]\n",
            second.base_url()
        ),
    )
    .unwrap();
    second.push(Reply::text(["from the second"]));
    let output = home.scv().args(["exec", "hi"]).output().unwrap();
    assert_eq!(stdout(&output), "from the second\n", "{}", stderr(&output));
    assert_eq!(second.requests()[0].body["model"], "edited-model");
    let err = stderr(&output);
    assert!(
        err.contains("[config]") && err.contains("did you mean `auto_approve`?"),
        "{err}"
    );

    std::fs::write(
        &config,
        format!(
            "model = \"edited-model\"\nbase_url = \"{}\"\nworkspace = \"/\"\nmax_steps = 5\n",
            second.base_url()
        ),
    )
    .unwrap();
    let output = home.scv().args(["daemon", "reload"]).output().unwrap();
    let text = stdout(&output);
    assert!(
        text.contains(
            "changed `base_url`, `max_steps`, `model` (sessions started from now on use them"
        ),
        "{text}"
    );
    assert!(
        text.contains("changed `workspace` (read when the daemon starts"),
        "{text}"
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let output = home.scv().args(["daemon", "reload"]).output().unwrap();
    assert!(
        stdout(&output).contains("unchanged since the last reload"),
        "{}",
        stdout(&output)
    );

    std::fs::write(&config, "model = [\n").unwrap();
    let output = home.scv().args(["daemon", "reload"]).output().unwrap();
    let text = stdout(&output);
    assert!(text.contains("config.toml: line"), "{text}");
    assert!(text.contains("not applied"), "{text}");
    // A broken file is a failed reload: a script sees it.
    assert_eq!(output.status.code(), Some(1), "{text}");
    second.push(Reply::text(["the old one runs on"]));
    let output = home.scv().args(["exec", "hi"]).output().unwrap();
    assert_eq!(stdout(&output), "the old one runs on\n");
    assert!(stderr(&output).contains("[config]"), "{}", stderr(&output));

    // Stopped, the daemon cannot start with that file: the client says
    // the server's own words at once instead of waiting out its timeout.
    assert!(home
        .scv()
        .args(["daemon", "stop"])
        .status()
        .unwrap()
        .success());
    let output = home.scv().args(["exec", "hi"]).output().unwrap();
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(err.contains("config.toml: line 2: invalid array"), "{err}");
    assert!(!err.contains("did not accept"), "{err}");
    assert!(home.daemon_pid().is_none() || !home.socket().exists());
}

/// Workspace trust from the command line: `scv exec` in a repository
/// whose hooks are not trusted runs none and says so on stderr; `scv
/// trust` trusts it as it is (the daemon, already running, uses it from
/// the next session); a hooks file changed since is skipped again and
/// `--list` says which; `--revoke` takes it back.
#[tokio::test(flavor = "multi_thread")]
async fn trust_runs_a_repositorys_hooks_only_as_they_were_trusted() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "sandbox = \"off\"");
    let ws = home.workspace();
    let hooks = |marker: &str| {
        std::fs::create_dir_all(ws.join(".scv")).unwrap();
        std::fs::write(
            ws.join(".scv/hooks.json"),
            json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                "command": format!("touch \"$CLAUDE_PROJECT_DIR/{marker}\"")}]}]}})
            .to_string(),
        )
        .unwrap();
    };
    hooks("first-ran");
    mock.push(Reply::text(["one"]));
    let output = home.scv().args(["exec", "hi"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("not a trusted workspace") && err.contains("scv trust"),
        "{err}"
    );
    assert!(!ws.join("first-ran").exists(), "an untrusted hook ran");

    let output = home.scv().args(["trust"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(
        out.contains("trusted") && out.contains("UserPromptSubmit (1)"),
        "{out}"
    );
    mock.push(Reply::text(["two"]));
    let output = home.scv().args(["exec", "hi"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        ws.join("first-ran").exists(),
        "the trusted hook did not run"
    );

    hooks("second-ran");
    let list = stdout(&home.scv().args(["trust", "--list"]).output().unwrap());
    assert!(
        list.contains(".scv/hooks.json (changed since trusted)"),
        "{list}"
    );
    mock.push(Reply::text(["three"]));
    let output = home.scv().args(["exec", "hi"]).output().unwrap();
    assert!(
        stderr(&output).contains("changed since you trusted"),
        "{}",
        stderr(&output)
    );
    assert!(!ws.join("second-ran").exists(), "a changed hooks file ran");

    let output = home
        .scv()
        .args(["trust", "--revoke", "."])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let list = stdout(&home.scv().args(["trust", "--list"]).output().unwrap());
    assert!(list.contains("no trusted workspaces"), "{list}");
    // Revoking what is not trusted is a one-line error.
    let output = home
        .scv()
        .args(["trust", "--revoke", "."])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("is not trusted"),
        "{}",
        stderr(&output)
    );
}
