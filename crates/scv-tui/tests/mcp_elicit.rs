#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! MCP elicitation in the front ends of `scv`, end to end: an MCP server
//! written with the official Python SDK (`scv-server/tests/mcp/
//! fake_server.py`: FastMCP's `ctx.elicit` and `ctx.elicit_url`) asks
//! during a tool call the mock model makes; `scv exec --elicit` asks on
//! the terminal (answers piped into its stdin), `scv exec` without it
//! declines and says so, and the terminal UI (in tmux) shows a form.
//! What the server got back is what its tool answers, which the model
//! sees in its next request.
//!
//! Without the Python SDK the tests skip with a message; with
//! `SCV_REQUIRE_MCP` set (CI) they fail instead.

mod common;
use common::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn fake_server() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scv-server/tests/mcp/fake_server.py")
        .display()
        .to_string()
}

/// A home whose config runs the fake server as `fake`, once the daemon
/// has it connected.
async fn home_with_fake(mock: &MockProvider) -> Option<Home> {
    let python = scv_test_support::mcp_python::python()?;
    let table = format!(
        "[mcp_servers.fake]\ncommand = {}\nargs = [{}, \"stdio\"]\nauto_approve = true\n",
        serde_json::to_string(&python.display().to_string()).unwrap(),
        serde_json::to_string(&fake_server()).unwrap(),
    );
    let home = Home::new(mock, &table);
    for _ in 0..150 {
        let output = home.scv().args(["mcp", "list"]).output().unwrap();
        let listed = stdout(&output);
        if listed
            .lines()
            .any(|l| l.starts_with("fake ") && l.contains("connected"))
        {
            return Some(home);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the fake MCP server never connected");
}

/// `scv exec ARGS` with `stdin` piped in; its stdout and stderr.
fn exec(home: &Home, args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = home
        .scv()
        .arg("exec")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (output.status.success(), stdout(&output), stderr(&output))
}

/// The tool result the model got in its last request.
fn tool_result(mock: &MockProvider) -> String {
    let requests = mock.requests();
    let body = &requests.last().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("no tool result in {body}"))
}

fn asks(mock: &MockProvider, tool: &str, arguments: Value) {
    mock.push(Reply::tool_calls(&[("q", tool, arguments)]));
    mock.push(Reply::text(["done"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_with_elicit_fills_the_form_on_the_terminal_field_by_field() {
    let mock = MockProvider::start().await;
    let Some(home) = home_with_fake(&mock).await else {
        return;
    };
    asks(
        &mock,
        "mcp__fake__ask_form",
        json!({"question": "Who are you?"}),
    );
    // y fills it in, field by field by key (age, name): age "old" is not
    // a whole number, name "A" too short.
    let (ok, out, err) = exec(&home, &["--elicit", "ask me"], "y\nold\n36\nA\nAda\n");
    assert!(ok, "{err}");
    assert_eq!(out, "done\n");
    assert!(
        err.contains("[elicitation] MCP server `fake` asks: Who are you?"),
        "{err}"
    );
    assert!(err.contains("`age` must be a whole number"), "{err}");
    assert!(
        err.contains("`name` must be at least 2 characters"),
        "{err}"
    );
    assert_eq!(
        tool_result(&mock),
        r#"form: accept {"age": 36, "name": "Ada"}"#
    );

    // A link: shown, and `n` declines it.
    asks(&mock, "mcp__fake__ask_url", json!({}));
    let (ok, _, err) = exec(&home, &["--elicit", "connect"], "n\n");
    assert!(ok, "{err}");
    assert!(err.contains("https://example.com/connect?id=7"), "{err}");
    assert_eq!(tool_result(&mock), "url: decline");

    // No answer at all (the input ends): cancelled.
    asks(&mock, "mcp__fake__ask_form", json!({"question": "Name?"}));
    let (ok, _, err) = exec(&home, &["--elicit", "ask again"], "");
    assert!(ok, "{err}");
    assert_eq!(tool_result(&mock), "form: cancel null");
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_without_elicit_declines_at_once_and_says_how_to_answer() {
    let mock = MockProvider::start().await;
    let Some(home) = home_with_fake(&mock).await else {
        return;
    };
    asks(
        &mock,
        "mcp__fake__ask_form",
        json!({"question": "Who are you?"}),
    );
    // Input there to read: none of it is taken as an answer.
    let (ok, out, err) = exec(&home, &["ask me"], "y\n36\nAda\n");
    assert!(ok, "{err}");
    assert_eq!(out, "done\n");
    assert!(
        err.contains("MCP server `fake` asked: Who are you? — declined (scv exec --elicit"),
        "{err}"
    );
    assert_eq!(tool_result(&mock), "form: decline null");
}

/// `scv` in a tmux pane, read with capture-pane.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new(name: &str) -> Tmux {
        Tmux {
            socket: format!("scv-elicit-{}-{name}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux is required for this test (.ci/run installs it)");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Waits (bounded) until the screen contains `text`.
    async fn wait_for(&self, text: &str) -> String {
        for _ in 0..600 {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("screen never showed {text:?}:\n{}", self.screen());
    }

    /// Ctrl+D once the session is idle.
    async fn quit(&self) {
        self.wait_for("idle").await;
        self.keys(&["C-d"]);
    }

    fn start_scv(&self, home: &Home) {
        self.start_scv_line(home, "", "");
    }

    /// `INPUT scv ARGS` (shell words) in `home`'s workspace; the exit
    /// code is printed after it.
    fn start_scv_line(&self, home: &Home, input: &str, args: &str) {
        let command = format!(
            "{input} env SCV_HOME={} SCV_SERVER_BIN={} {SCV} {args}; echo SCV-EXIT=$?; sleep 60",
            home.path().display(),
            server_bin().display()
        );
        self.run(&[
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            "100",
            "-y",
            "30",
            "-c",
            home.workspace().to_str().unwrap(),
            &command,
        ]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_terminal_ui_shows_a_form_checks_it_and_answers() {
    let mock = MockProvider::start().await;
    let Some(home) = home_with_fake(&mock).await else {
        return;
    };
    let tmux = Tmux::new("form");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;

    asks(
        &mock,
        "mcp__fake__ask_form",
        json!({"question": "Who are you?"}),
    );
    tmux.keys(&["ask me", "Enter"]);
    let screen = tmux.wait_for("MCP server `fake` asks:").await;
    assert!(screen.contains("a whole number"), "{screen}");
    // The fields by key: age, then name. Not a number, then too short a
    // name: not sent, said on the form.
    tmux.keys(&["x", "Enter"]);
    tmux.wait_for("Not sent: `age` must be a whole number")
        .await;
    tmux.keys(&["BSpace"]);
    tmux.keys(&["-l", "36"]);
    tmux.keys(&["Tab"]);
    tmux.keys(&["A", "Enter"]);
    tmux.wait_for("Not sent: `name` must be at least 2 characters")
        .await;
    tmux.keys(&["-l", "da"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("MCP server `fake`'s question answered").await;
    // The turn over: the model had the tool's result.
    let screen = tmux.wait_for("idle").await;
    assert!(screen.contains("done"), "{screen}");
    // What was typed is not in the transcript, only in the tool's result.
    assert!(!screen.contains("Not sent"), "{screen}");
    assert_eq!(
        tool_result(&mock),
        r#"form: accept {"age": 36, "name": "Ada"}"#
    );

    // A link: shown, never opened; Ctrl+N declines.
    asks(&mock, "mcp__fake__ask_url", json!({}));
    tmux.keys(&["connect it", "Enter"]);
    let screen = tmux.wait_for("https://example.com/connect?id=7").await;
    assert!(screen.contains("Connect your account"), "{screen}");
    tmux.keys(&["C-n"]);
    tmux.wait_for("MCP server `fake`'s question declined").await;
    tmux.wait_for("idle").await;
    assert_eq!(tool_result(&mock), "url: decline");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// `scv exec --elicit -` reads its prompt from stdin, so the answers come
/// from the terminal itself (`/dev/tty`), typed here into the pane.
#[tokio::test(flavor = "multi_thread")]
async fn exec_reads_the_answers_from_the_terminal_when_stdin_held_the_prompt() {
    let mock = MockProvider::start().await;
    let Some(home) = home_with_fake(&mock).await else {
        return;
    };
    asks(&mock, "mcp__fake__ask_form", json!({"question": "Who?"}));
    let tmux = Tmux::new("tty");
    tmux.start_scv_line(&home, "echo 'ask me' |", "exec --elicit -");
    tmux.wait_for("Answer it? y fills it in").await;
    tmux.keys(&["y", "Enter"]);
    tmux.wait_for("Age (a whole number, required):").await;
    tmux.keys(&["36", "Enter"]);
    tmux.wait_for("Name (text, required):").await;
    tmux.keys(&["Ada", "Enter"]);
    let screen = tmux.wait_for("SCV-EXIT=").await;
    assert!(screen.contains("SCV-EXIT=0"), "{screen}");
    assert!(screen.contains("done"), "{screen}");
    assert_eq!(
        tool_result(&mock),
        r#"form: accept {"age": 36, "name": "Ada"}"#
    );
}
