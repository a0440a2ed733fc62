#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `scv acp` as an editor sees it: the real binary over its stdin and
//! stdout (JSON-RPC lines), the real daemon it starts, the scripted mock
//! provider behind it. Then the official TypeScript SDK's client against
//! it (tests/acp-interop/).

mod common;
use common::*;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How the SDK writes a `session/update` line; `scv acp` counts these to
/// bound what waits for stdout (crates/scv-acp/src/stdio.rs).
const UPDATE_PREFIX: &str = r#"{"jsonrpc":"2.0","method":"session/update""#;

/// A hang guard, not a timing assertion.
const WAIT: Duration = Duration::from_secs(30);

/// One `scv acp` process and the editor's end of its pipes.
struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    stderr: std::path::PathBuf,
}

impl Acp {
    fn spawn(home: &Home) -> Acp {
        Acp::spawn_with(home, &[])
    }

    fn spawn_with(home: &Home, args: &[&str]) -> Acp {
        let stderr = home.path().join(format!("acp-{}.log", rand_suffix()));
        let mut command = tokio::process::Command::from(home.scv());
        command
            .arg("acp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Acp {
            child,
            stdin,
            stdout,
            next_id: 0,
            stderr,
        }
    }

    /// `scv acp` as an editor may start it: a trimmed environment with no
    /// `HOME` (and `SCV_HOME` only when `scv_home`), nothing but what
    /// finds the test's server binary and Claude settings besides.
    fn spawn_trimmed(home: &Home, scv_home: bool) -> Acp {
        let stderr = home.path().join(format!("acp-{}.log", rand_suffix()));
        let mut std_command = home.scv();
        std_command.env_clear();
        std_command.env("SCV_SERVER_BIN", server_bin()).env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(home.path()),
        );
        if scv_home {
            std_command.env("SCV_HOME", home.path());
        }
        let mut command = tokio::process::Command::from(std_command);
        command
            .arg("acp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Acp {
            child,
            stdin,
            stdout,
            next_id: 0,
            stderr,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn send(&mut self, message: Value) {
        self.send_line(&message.to_string()).await;
    }

    /// Sends a request; returns its id.
    async fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// Answers a request `scv acp` sent.
    async fn respond(&mut self, id: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    /// The next line of stdout, which must be one JSON-RPC 2.0 message;
    /// `None` at EOF.
    async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(WAIT, self.stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("no output from scv acp; stderr:\n{}", self.stderr()))
            .unwrap()?;
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|err| panic!("stdout carried a non-JSON line ({err}): {line}"));
        assert_eq!(value["jsonrpc"], "2.0", "{line}");
        if value["method"] == "session/update" {
            assert!(line.starts_with(UPDATE_PREFIX), "{line}");
        }
        Some(value)
    }

    /// Everything up to the message `stop` accepts, and that message.
    async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> (Vec<Value>, Value) {
        let mut seen = Vec::new();
        loop {
            let message = self.next().await.expect("stdout ended");
            if stop(&message) {
                return (seen, message);
            }
            seen.push(message);
        }
    }

    /// Everything up to the response to `id`, and that response.
    async fn answer(&mut self, id: u64) -> (Vec<Value>, Value) {
        self.until(|m| m["id"] == id && m.get("method").is_none())
            .await
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        self.answer(id).await.1
    }

    async fn initialize(&mut self) -> Value {
        let init = self
            .call(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}, "clientInfo": {"name": "acp-test", "version": "1"}}),
            )
            .await;
        assert!(init.get("result").is_some(), "{init}");
        init
    }

    async fn new_session(&mut self, cwd: &std::path::Path) -> String {
        let answer = self
            .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        answer["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_string()
    }

    /// `initialize` and one session in the workspace.
    async fn open(home: &Home) -> (Acp, String) {
        let mut acp = Acp::spawn(home);
        acp.initialize().await;
        let session = acp.new_session(&home.workspace()).await;
        (acp, session)
    }

    async fn prompt(&mut self, session: &str, text: &str) -> u64 {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    async fn exit_code(&mut self) -> Option<i32> {
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("scv acp exits")
            .unwrap()
            .code()
    }
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// The `update` objects of `session/update` notifications.
fn updates(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"]["update"].clone())
        .collect()
}

/// The text of every chunk of `kind` (`agent_message_chunk` …), joined.
fn chunks(messages: &[Value], kind: &str) -> String {
    updates(messages)
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect()
}

fn of_kind(messages: &[Value], kind: &str) -> Vec<Value> {
    updates(messages)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// A JSON-RPC error's code.
fn code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("{answer}"))
}

fn is_permission(m: &Value) -> bool {
    m["method"] == "session/request_permission"
}

fn stop_reason(response: &Value) -> &str {
    response["result"]["stopReason"]
        .as_str()
        .unwrap_or_else(|| panic!("no stop reason: {response}"))
}

/// The last user message the provider got.
fn last_user_message(mock: &MockProvider) -> String {
    let requests = mock.requests();
    let messages = requests.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    messages.iter().rev().find(|m| m["role"] == "user").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A mock provider, a home configured for it (plus `extra` config lines),
/// and `scv acp` initialized with one session in the workspace.
async fn opened(extra: &str) -> (MockProvider, Home, Acp, String) {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, extra);
    let (acp, session) = Acp::open(&home).await;
    (mock, home, acp, session)
}

/// The answer choosing "Allow".
fn allow() -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}})
}

/// A long answer, one word every 50 ms (about 20 s in all): a turn that is
/// still streaming whenever a test acts on it.
fn slow_answer() -> Reply {
    let words: Vec<String> = (0..400).map(|n| format!("w{n} ")).collect();
    Reply::text(words).drip(Duration::from_millis(50))
}

fn is_answer_chunk(m: &Value) -> bool {
    m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
}

/// Sends `text` to be answered slowly; returns once the answer streams.
async fn start_talking(acp: &mut Acp, mock: &MockProvider, session: &str, text: &str) -> u64 {
    mock.push(slow_answer());
    let id = acp.prompt(session, text).await;
    acp.until(is_answer_chunk).await;
    id
}

/// A `bash` call proposed and waiting for its permission: the prompt's
/// id and the permission request.
async fn ask_to_run(
    acp: &mut Acp,
    mock: &MockProvider,
    session: &str,
    command: &str,
) -> (u64, Value) {
    mock.push(Reply::tool_calls(&[(
        "call_b",
        "bash",
        json!({"command": command}),
    )]));
    let id = acp.prompt(session, "Run it").await;
    let (_, permission) = acp.until(is_permission).await;
    (id, permission)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_handshake_starts_the_daemon_and_a_session() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let mut acp = Acp::spawn(&home);
    let init = acp.initialize().await;
    let result = &init["result"];
    assert_eq!(result["protocolVersion"], 1);
    assert_eq!(result["agentInfo"]["name"], "scv");
    assert_eq!(result["agentInfo"]["version"], env!("CARGO_PKG_VERSION"));
    let caps = &result["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert!(caps["sessionCapabilities"]["list"].is_object(), "{caps}");
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(caps["promptCapabilities"]["image"], true);
    assert_eq!(caps["promptCapabilities"]["audio"], false);
    // HTTP MCP servers from the editor run for the session; SSE ones not.
    assert_eq!(caps["mcpCapabilities"]["http"], true, "{caps}");
    assert_eq!(caps["mcpCapabilities"]["sse"], false, "{caps}");
    assert!(home.daemon_pid().is_none(), "no daemon before session/new");

    let answer = acp
        .call(
            "session/new",
            json!({"cwd": home.workspace(), "mcpServers": [
                {"name": "fs", "command": "/bin/true", "args": [], "env": []}
            ]}),
        )
        .await;
    let session = answer["result"]["sessionId"].as_str().unwrap();
    assert!(!session.is_empty());
    assert!(home.daemon_pid().is_some(), "scv acp started the daemon");
    let stderr = acp.stderr();
    assert!(
        stderr.contains("MCP servers from the editor for this session: fs"),
        "{stderr}"
    );

    // A second session shares the daemon connection.
    let second = acp.new_session(&home.workspace()).await;
    assert_ne!(second, session);
    acp.close_stdin();
    assert_eq!(acp.exit_code().await, Some(0));
    assert!(acp.stdout.next_line().await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn under_a_trimmed_environment_acp_names_its_home_and_works_in_it() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let mut acp = Acp::spawn_trimmed(&home, true);
    acp.initialize().await;
    let session = acp.new_session(&home.workspace()).await;
    assert!(home.daemon_pid().is_some(), "the daemon runs in SCV_HOME");
    mock.push(Reply::text(["trimmed but fine"]));
    let id = acp.prompt(&session, "hello").await;
    let (messages, done) = acp.answer(id).await;
    assert_eq!(stop_reason(&done), "end_turn", "{done}");
    assert_eq!(chunks(&messages, "agent_message_chunk"), "trimmed but fine");
    let stderr = acp.stderr();
    let named = format!(
        "scv acp: SCV home {} (from $SCV_HOME)",
        home.path().display()
    );
    assert!(stderr.contains(&named), "{stderr}");
    acp.close_stdin();
    assert_eq!(acp.exit_code().await, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn with_neither_home_variable_acp_names_the_user_databases_home() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    // Not `/.scv`: the home the user database gives this user, named.
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    let uid = String::from_utf8(uid.stdout).unwrap();
    let entry = std::process::Command::new("getent")
        .args(["passwd", uid.trim()])
        .output()
        .unwrap();
    let entry = String::from_utf8(entry.stdout).unwrap();
    let dir = entry.trim().split(':').nth(5).unwrap().to_string();
    let mut acp = Acp::spawn_trimmed(&home, false);
    // Said at start, before any session (none is opened here: the test
    // starts no daemon in the machine's real home).
    acp.initialize().await;
    let stderr = acp.stderr();
    let named = format!(
        "scv acp: SCV home {}/.scv (neither SCV_HOME nor HOME is set: the user database's home directory)",
        dir.trim_end_matches('/')
    );
    assert!(stderr.contains(&named), "{stderr}");
    acp.close_stdin();
    assert_eq!(acp.exit_code().await, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_and_its_thoughts_stream_as_chunks() {
    let (mock, _home, mut acp, session) = opened("").await;
    mock.push(Reply::text([
        "<think>Let me ",
        "think.</think>",
        "The answer ",
        "is 42.",
    ]));
    let id = acp
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [
                {"type": "text", "text": "What is in"},
                {"type": "resource", "resource": {"uri": "file:///p/notes.txt", "mimeType": "text/plain", "text": "forty-two\n"}},
            ]}),
        )
        .await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunks(&seen, "agent_message_chunk"), "The answer is 42.");
    assert_eq!(chunks(&seen, "agent_thought_chunk"), "Let me think.");
    assert!(
        of_kind(&seen, "agent_message_chunk").len() >= 2,
        "streamed, not at once"
    );
    for message in &seen {
        assert_eq!(
            message["params"]["sessionId"],
            session.as_str(),
            "{message}"
        );
    }
    assert_eq!(
        last_user_message(&mock),
        "What is in\n\n```file:///p/notes.txt\nforty-two\n```"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_tool_is_a_read_tool_call() {
    let (mock, home, mut acp, session) = opened("").await;
    std::fs::write(home.workspace().join("a.txt"), "alpha\n").unwrap();
    mock.push(Reply::tool_calls(&[(
        "call_r",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    mock.push(Reply::text(["It says alpha."]));
    let id = acp.prompt(&session, "Read a.txt").await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert!(!seen.iter().any(is_permission), "reads need no approval");
    let calls = of_kind(&seen, "tool_call");
    assert_eq!(calls.len(), 1, "{seen:?}");
    let call = &calls[0];
    assert_eq!(call["kind"], "read");
    assert_eq!(call["title"], "Read file: a.txt");
    assert!(
        call["status"].is_null() || call["status"] == "pending",
        "{call}"
    );
    assert_eq!(call["rawInput"], json!({"path": "a.txt"}));
    assert_eq!(
        call["locations"][0]["path"],
        home.workspace().join("a.txt").display().to_string()
    );
    let id = call["toolCallId"].clone();
    let done = of_kind(&seen, "tool_call_update");
    assert_eq!(done.len(), 2, "{done:?}");
    assert_eq!(done[0]["toolCallId"], id);
    assert_eq!(done[0]["status"], "in_progress");
    assert_eq!(done[1]["toolCallId"], id);
    assert_eq!(done[1]["status"], "completed");
    let text = done[1]["content"][0]["content"]["text"].as_str().unwrap();
    assert!(text.contains("alpha"), "{text}");
    assert_eq!(chunks(&seen, "agent_message_chunk"), "It says alpha.");
}

/// An `edit_file` call up to its permission request: the messages seen,
/// the request.
async fn propose_edit(
    acp: &mut Acp,
    mock: &MockProvider,
    session: &str,
) -> (Vec<Value>, Value, u64) {
    mock.push(Reply::tool_calls(&[(
        "call_e",
        "edit_file",
        json!({"path": "f.txt", "old_string": "two", "new_string": "2"}),
    )]));
    mock.push(Reply::text(["Done."]));
    let id = acp.prompt(session, "Edit f.txt").await;
    let (seen, permission) = acp.until(is_permission).await;
    (seen, permission, id)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_allowed_edit_shows_its_diff() {
    let (mock, home, mut acp, session) = opened("").await;
    let file = home.workspace().join("f.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    let (seen, permission, id) = propose_edit(&mut acp, &mock, &session).await;
    let path = file.display().to_string();

    let call = &of_kind(&seen, "tool_call")[0];
    assert_eq!(call["kind"], "edit");
    assert_eq!(call["title"], "Edit file: f.txt");
    assert_eq!(call["locations"][0]["path"], path.as_str());
    let preview = &call["content"][0];
    assert_eq!(preview["type"], "diff");
    assert_eq!(preview["path"], path.as_str());
    assert_eq!(preview["oldText"], "one\ntwo\nthree\n");
    assert_eq!(preview["newText"], "one\n2\nthree\n");

    let params = &permission["params"];
    assert_eq!(params["sessionId"], session.as_str());
    assert_eq!(params["toolCall"]["toolCallId"], call["toolCallId"]);
    // The summary's first line; the rest is in the diff.
    assert_eq!(params["toolCall"]["title"], "Edit file: f.txt …");
    assert_eq!(
        params["toolCall"]["content"][0]["oldText"],
        "one\ntwo\nthree\n"
    );
    assert_eq!(
        params["options"],
        json!([
            {"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
            {"optionId": "allow_always",
             "name": "Always allow edits to files in this workspace (write_file, edit_file) in this session",
             "kind": "allow_always"},
            {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        ])
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "one\ntwo\nthree\n",
        "not before approval"
    );

    acp.respond(&permission["id"], allow()).await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n2\nthree\n");
    let updates = of_kind(&seen, "tool_call_update");
    assert_eq!(updates[0]["status"], "in_progress");
    let done = &updates[1];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["content"][0]["type"], "diff");
    assert_eq!(done["content"][0]["path"], path.as_str());
    assert_eq!(done["content"][0]["oldText"], "one\ntwo\nthree\n");
    assert_eq!(done["content"][0]["newText"], "one\n2\nthree\n");
    assert_eq!(done["content"][1]["type"], "content");
}

/// "Always allow" approves the call and adds the session rule the TUI
/// would: the next edit in the workspace is approved without asking, a
/// command still asks; another session asks again.
#[tokio::test(flavor = "multi_thread")]
async fn always_allow_answers_later_calls_of_its_kind_in_the_session() {
    let (mock, home, mut acp, session) = opened("").await;
    let file = home.workspace().join("f.txt");
    std::fs::write(&file, "one\ntwo\nthree\n").unwrap();
    let (_, permission, id) = propose_edit(&mut acp, &mock, &session).await;
    acp.respond(
        &permission["id"],
        json!({"outcome": {"outcome": "selected", "optionId": "allow_always"}}),
    )
    .await;
    let (_, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\n2\nthree\n");

    mock.push(Reply::tool_calls(&[(
        "call_w",
        "write_file",
        json!({"path": "g.txt", "content": "new\n"}),
    )]));
    mock.push(Reply::text(["Written."]));
    let id = acp.prompt(&session, "Write g.txt").await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert!(
        !seen.iter().any(is_permission),
        "the rule answered: {seen:?}"
    );
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("g.txt")).unwrap(),
        "new\n"
    );

    // A command is not an edit: it asks.
    mock.push(Reply::tool_calls(&[(
        "call_b",
        "bash",
        json!({"command": "echo hi"}),
    )]));
    mock.push(Reply::text(["Ran."]));
    let id = acp.prompt(&session, "Run it").await;
    let (_, permission) = acp.until(is_permission).await;
    acp.respond(&permission["id"], allow()).await;
    let (_, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
}

/// "Reject", and a permission request the editor cancelled (which counts
/// as rejected), deny the edit: it fails, changes nothing, shows no diff,
/// the model is told and the turn goes on.
#[tokio::test(flavor = "multi_thread")]
async fn a_rejected_or_cancelled_permission_denies_the_edit() {
    for answer in [
        json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}),
        json!({"outcome": {"outcome": "cancelled"}}),
    ] {
        let (mock, home, mut acp, session) = opened("").await;
        let file = home.workspace().join("f.txt");
        std::fs::write(&file, "one\ntwo\n").unwrap();
        let (_, permission, id) = propose_edit(&mut acp, &mock, &session).await;
        acp.respond(&permission["id"], answer.clone()).await;
        let (seen, response) = acp.answer(id).await;
        assert_eq!(stop_reason(&response), "end_turn", "{answer}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "one\ntwo\n");
        let updates = of_kind(&seen, "tool_call_update");
        assert_eq!(updates.len(), 1, "never in progress: {updates:?}");
        assert_eq!(updates[0]["status"], "failed");
        assert!(
            updates[0]["content"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["type"] != "diff"),
            "no diff for a change that did not happen"
        );
        let body = mock.requests()[1].body.to_string();
        assert!(body.contains("denied"), "the model is told: {body}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bash_call_runs_once_allowed() {
    let (mock, home, mut acp, session) = opened("").await;
    let command = "echo made > out.txt && cat out.txt";
    mock.push(Reply::tool_calls(&[(
        "call_b",
        "bash",
        json!({"command": command}),
    )]));
    mock.push(Reply::text(["Ran it."]));
    let id = acp.prompt(&session, "Run it").await;
    let (seen, permission) = acp.until(is_permission).await;
    let call = &of_kind(&seen, "tool_call")[0];
    assert_eq!(call["kind"], "execute");
    assert_eq!(call["title"], format!("Run shell command: {command}"));
    let asked = &permission["params"]["toolCall"];
    assert_eq!(asked["toolCallId"], call["toolCallId"]);
    assert_eq!(asked["title"], format!("Run shell command: {command}"));
    assert_eq!(
        asked["content"][0]["content"]["text"],
        format!("Run shell command: {command}"),
        "the whole summary"
    );
    acp.respond(&permission["id"], allow()).await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    let done = of_kind(&seen, "tool_call_update");
    assert_eq!(done[0]["status"], "in_progress");
    assert_eq!(done[1]["status"], "completed");
    let text = done[1]["content"][0]["content"]["text"].as_str().unwrap();
    assert!(text.contains("made"), "{text}");
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("out.txt")).unwrap(),
        "made\n"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_during_a_stream_answers_cancelled() {
    let (mock, _home, mut acp, session) = opened("").await;
    let id = start_talking(&mut acp, &mock, &session, "Talk").await;
    acp.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let (_, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "cancelled");
    assert!(
        mock.wait_dropped(1).await,
        "the provider stream was aborted"
    );
    // The session takes the next prompt.
    mock.push(Reply::text(["Still here."]));
    let id = acp.prompt(&session, "Again").await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunks(&seen, "agent_message_chunk"), "Still here.");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_during_a_permission_request_answers_cancelled() {
    let (mock, home, mut acp, session) = opened("").await;
    let (id, permission) = ask_to_run(&mut acp, &mock, &session, "touch never").await;
    acp.notify("session/cancel", json!({"sessionId": session}))
        .await;
    // As ACP asks, the client answers its open permission request.
    acp.respond(
        &permission["id"],
        json!({"outcome": {"outcome": "cancelled"}}),
    )
    .await;
    let (_, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "cancelled");
    assert!(!home.workspace().join("never").exists());
    assert_eq!(mock.request_count(), 1, "the turn went no further");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_cancelled_under_an_open_permission_request_withdraws_it() {
    // The client does not answer; the cancel alone ends the prompt, and
    // the withdrawn request gets a $/cancel_request.
    let (mock, _home, mut acp, session) = opened("").await;
    let (id, permission) = ask_to_run(&mut acp, &mock, &session, "touch never").await;
    acp.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "cancelled");
    let withdrawn = match seen.iter().find(|m| m["method"] == "$/cancel_request") {
        Some(withdrawn) => withdrawn.clone(),
        None => acp.until(|m| m["method"] == "$/cancel_request").await.1,
    };
    assert_eq!(withdrawn["params"]["requestId"], permission["id"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_sent_during_a_turn_waits_for_its_own_turn() {
    let (mock, _home, mut acp, session) = opened("").await;
    mock.push(Reply::text(["first ", "answer"]).drip(Duration::from_millis(100)));
    mock.push(Reply::text(["second answer"]));
    let first = acp.prompt(&session, "PROMPT-ONE").await;
    acp.until(is_answer_chunk).await;
    let second = acp.prompt(&session, "PROMPT-TWO").await;
    let (seen, response) = acp.answer(first).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert!(
        seen.iter().all(|m| m["id"] != second),
        "the second prompt is not answered before the first: {seen:?}"
    );
    let (seen, response) = acp.answer(second).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunks(&seen, "agent_message_chunk"), "second answer");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].body.to_string().contains("PROMPT-ONE"));
    assert!(requests[1].body.to_string().contains("PROMPT-TWO"));
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_also_takes_queued_prompts_off_the_queue() {
    let (mock, _home, mut acp, session) = opened("").await;
    let first = start_talking(&mut acp, &mock, &session, "PROMPT-ONE").await;
    let second = acp.prompt(&session, "PROMPT-TWO").await;
    acp.notify("session/cancel", json!({"sessionId": session}))
        .await;
    let mut answered = std::collections::HashMap::new();
    while answered.len() < 2 {
        let message = acp.next().await.unwrap();
        if let Some(id) = message["id"].as_u64() {
            if message.get("method").is_none() {
                answered.insert(id, stop_reason(&message).to_string());
            }
        }
    }
    assert_eq!(answered[&first], "cancelled");
    assert_eq!(answered[&second], "cancelled");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(mock.request_count(), 1, "the queued prompt never ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn eof_cancels_the_running_turn_and_exits_zero() {
    let (mock, home, mut acp, session) = opened("").await;
    let id = start_talking(&mut acp, &mock, &session, "Talk").await;
    acp.close_stdin();
    assert_eq!(acp.exit_code().await, Some(0));
    assert!(mock.wait_dropped(1).await, "the turn was cancelled");
    // What was written before exit: the prompt answered `cancelled`.
    let mut rest = Vec::new();
    while let Some(message) = acp.next().await {
        rest.push(message);
    }
    let response = rest.iter().find(|m| m["id"] == id).expect("answered");
    assert_eq!(stop_reason(response), "cancelled");
    assert!(home.daemon_pid().is_some(), "the daemon stays up");
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_use_standard_codes_and_the_connection_carries_on() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let mut acp = Acp::spawn(&home);
    // Before initialize.
    let answer = acp
        .call(
            "session/new",
            json!({"cwd": home.workspace(), "mcpServers": []}),
        )
        .await;
    assert_eq!(code(&answer), -32600);
    acp.initialize().await;

    // A prompt before session/new.
    let id = acp.prompt("nope", "hi").await;
    let answer = acp.answer(id).await.1;
    assert_eq!(code(&answer), -32600);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session/new"),
        "{answer}"
    );

    // Malformed JSON: a parse error without an id.
    acp.send_line("{not json").await;
    let answer = acp.next().await.unwrap();
    assert_eq!(code(&answer), -32700);
    assert!(answer["id"].is_null());

    // Missing params, wrong types, an unknown method, an unloadable session.
    let answer = acp.call("session/prompt", json!({"sessionId": 7})).await;
    assert_eq!(code(&answer), -32602);
    let answer = acp.call("session/new", json!({"mcpServers": []})).await;
    assert_eq!(code(&answer), -32602);
    let answer = acp.call("scv/unknown", json!({})).await;
    assert_eq!(code(&answer), -32601);
    let answer = acp
        .call(
            "session/load",
            json!({"sessionId": "x", "cwd": home.workspace(), "mcpServers": []}),
        )
        .await;
    assert_eq!(code(&answer), -32002, "{answer}");
    assert_eq!(answer["error"]["data"]["scvCode"], "session_not_found");
    let answer = acp
        .call(
            "session/load",
            json!({"sessionId": "x", "cwd": "relative", "mcpServers": []}),
        )
        .await;
    assert_eq!(code(&answer), -32602, "{answer}");
    let answer = acp.call("session/list", json!({"cursor": "c2"})).await;
    assert_eq!(code(&answer), -32602, "{answer}");

    // A relative or missing workspace.
    let answer = acp
        .call(
            "session/new",
            json!({"cwd": "relative/dir", "mcpServers": []}),
        )
        .await;
    assert_eq!(code(&answer), -32602);
    let missing = home.workspace().join("missing");
    let answer = acp
        .call("session/new", json!({"cwd": missing, "mcpServers": []}))
        .await;
    assert_eq!(code(&answer), -32602, "{answer}");
    assert_eq!(answer["error"]["data"]["scvCode"], "invalid_request");

    let session = acp.new_session(&home.workspace()).await;
    // An unknown session id once sessions exist.
    let id = acp.prompt("no-such-session", "hi").await;
    let answer = acp.answer(id).await.1;
    assert_eq!(code(&answer), -32002);
    assert_eq!(answer["error"]["data"]["sessionId"], "no-such-session");
    // Content the prompt capabilities exclude, an image that is none (by
    // its bytes), and an empty prompt.
    let answer = acp
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "audio", "mimeType": "audio/wav", "data": "AA=="}]}),
        )
        .await;
    assert_eq!(code(&answer), -32602);
    let answer = acp
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "image", "mimeType": "image/png", "data": "AA=="}]}),
        )
        .await;
    assert_eq!(code(&answer), -32602);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a PNG"),
        "{answer}"
    );
    let answer = acp
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": []}),
        )
        .await;
    assert_eq!(code(&answer), -32602);
    // A prompt over the daemon's cap.
    let long = "x".repeat(300 * 1024);
    let id = acp.prompt(&session, &long).await;
    assert_eq!(code(&acp.answer(id).await.1), -32602);
    // A line over the input cap is skipped with a parse error.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":99,"method":"x","params":"{}"}}"#,
        "y".repeat(scv_acp::stdio::MAX_LINE_BYTES + 1)
    );
    acp.send_line(&huge).await;
    let answer = acp.next().await.unwrap();
    assert_eq!(code(&answer), -32700);

    // And after all of it, a prompt works.
    mock.push(Reply::text(["fine"]));
    let id = acp.prompt(&session, "hi").await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunks(&seen, "agent_message_chunk"), "fine");
    assert_eq!(
        mock.request_count(),
        1,
        "no refused prompt reached the provider"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn turn_failures_become_stop_reasons_or_errors() {
    let (mock, _home, mut acp, session) = opened("max_steps = 2\nprovider_max_retries = 0\n").await;
    // The step limit: max_turn_requests.
    mock.push(Reply::tool_calls(&[(
        "call_r",
        "list_dir",
        json!({"path": "."}),
    )]));
    mock.push(Reply::tool_calls(&[(
        "call_s",
        "list_dir",
        json!({"path": "."}),
    )]));
    let id = acp.prompt(&session, "Look around").await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "max_turn_requests");
    let call = &of_kind(&seen, "tool_call")[0];
    assert_eq!(call["kind"], "read");
    assert_eq!(call["title"], "List directory: .");
    // A provider failure: a JSON-RPC error with the SCV code and message.
    mock.push(Reply::error(500, "the model is down"));
    let id = acp.prompt(&session, "Again").await;
    let (_, response) = acp.answer(id).await;
    assert_eq!(response["error"]["code"], -32603, "{response}");
    assert_eq!(response["error"]["data"]["scvCode"], "provider_error");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("the model provider returned an error: "),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lost_daemon_fails_the_prompt_and_the_next_session_reconnects() {
    let (mock, home, mut acp, session) = opened("").await;
    let id = start_talking(&mut acp, &mock, &session, "Talk").await;
    let pid = home.daemon_pid().unwrap();
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let (_, response) = acp.answer(id).await;
    assert_eq!(response["error"]["code"], -32603, "{response}");
    let message = response["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("SCV daemon") && message.contains("went away"),
        "{message}"
    );
    // Its session is gone.
    let id = acp.prompt(&session, "hi").await;
    assert_eq!(acp.answer(id).await.1["error"]["code"], -32002);
    // The next session/new starts a new daemon.
    let session = acp.new_session(&home.workspace()).await;
    assert!(home.daemon_pid().is_some_and(|p| p != pid), "a new daemon");
    mock.push(Reply::text(["back"]));
    let id = acp.prompt(&session, "hi").await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert_eq!(chunks(&seen, "agent_message_chunk"), "back");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_editors_mcp_server_serves_its_session() {
    let Some(python) = scv_test_support::mcp_python::python() else {
        return;
    };
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scv-server/tests/mcp/fake_server.py");
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let mut acp = Acp::spawn(&home);
    acp.initialize().await;
    let answer = acp
        .call(
            "session/new",
            json!({"cwd": home.workspace(), "mcpServers": [{"name": "ed", "command": python,
                "args": [server, "stdio"], "env": [{"name": "SCV_MCP_LOG", "value": "/dev/null"}]}]}),
        )
        .await;
    let session = answer["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string();
    // The server starts in the background; a turn waits for it at most 1 s.
    let mut offered = false;
    for _ in 0..60 {
        mock.push(Reply::text(["ok"]));
        let id = acp.prompt(&session, "are the tools there").await;
        acp.answer(id).await;
        let requests = mock.requests();
        let tools = &requests.last().unwrap().body["tools"];
        if tools
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "mcp__ed__echo"))
        {
            offered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        offered,
        "the editor's MCP server was never offered to the model"
    );
    mock.push(Reply::tool_calls(&[(
        "call_m",
        "mcp__ed__echo",
        json!({"text": "from the editor"}),
    )]));
    mock.push(Reply::text(["Echoed."]));
    let id = acp.prompt(&session, "Echo it").await;
    let (_, permission) = acp.until(is_permission).await;
    let title = permission["params"]["toolCall"]["title"].as_str().unwrap();
    assert!(title.contains("`echo` of server `ed`"), "{title}");
    acp.respond(&permission["id"], allow()).await;
    let (seen, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    let done = of_kind(&seen, "tool_call_update");
    let last = done.last().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(last["content"][0]["content"]["text"], "from the editor");
}

/// The official TypeScript SDK's client (tests/acp-interop/interop.mjs)
/// against `scv acp`: handshake, prompt, permission, cancel, then list and
/// load in a second `scv acp`. Skips when
/// node or the SDK is missing, unless `SCV_REQUIRE_INTEROP=1` (`.ci/run`
/// installs the SDK and sets it).
#[tokio::test(flavor = "multi_thread")]
async fn the_official_typescript_sdk_drives_scv_acp() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp-interop");
    let required = std::env::var("SCV_REQUIRE_INTEROP").as_deref() == Ok("1");
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let sdk = dir
        .join("node_modules/@agentclientprotocol/sdk/package.json")
        .exists();
    if !node || !sdk {
        let why = if !node {
            "node is not on PATH"
        } else {
            "the SDK is not installed (run `npm ci` in crates/scv-tui/tests/acp-interop)"
        };
        assert!(!required, "SCV_REQUIRE_INTEROP=1 but {why}");
        eprintln!("skipping the ACP interop test: {why}");
        return;
    }
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    std::fs::write(home.workspace().join("f.txt"), "before\n").unwrap();
    mock.push(Reply::text(["Hello ", "from SCV."]));
    mock.push(Reply::tool_calls(&[(
        "call_e",
        "edit_file",
        json!({"path": "f.txt", "old_string": "before", "new_string": "after"}),
    )]));
    mock.push(Reply::text(["Edited."]));
    mock.push(slow_answer());
    mock.push(Reply::text(["Back ", "again."]));
    let mut command = tokio::process::Command::new("node");
    command
        .arg(dir.join("interop.mjs"))
        .arg(SCV)
        .arg(home.workspace())
        .env("SCV_HOME", home.path())
        .env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
        )
        .env("SCV_SERVER_BIN", server_bin())
        .env_remove("OPENAI_API_KEY")
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("the interop client finishes")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    for check in [
        "ok: hello stopReason end_turn",
        "ok: Allow / Always allow / Reject options",
        "ok: the file changed",
        "ok: cancel stopReason cancelled",
        "ok: scv acp exited 0",
        "ok: replayed edit",
        "ok: loaded session stopReason end_turn",
        "ok: the second scv acp exited 0",
    ] {
        assert!(stderr.contains(check), "{check}:\n{stderr}");
    }
    assert!(!stderr.contains("FAIL"), "{stderr}");
    let bodies: Vec<String> = mock.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(bodies[0].contains("INTEROP-HELLO"));
    assert!(bodies[1].contains("INTEROP-EDIT") && bodies[1].contains("```file://"));
    assert!(bodies[3].contains("INTEROP-CANCEL"));
}

/// An editor closes and comes back: `session/list` shows the session,
/// `session/load` replays it (prompt, tool call, answer) before it
/// answers, nothing runs again, and the next prompt carries the history.
#[tokio::test(flavor = "multi_thread")]
async fn a_session_loads_in_the_next_scv_acp_with_its_conversation_replayed() {
    let (mock, home, mut acp, session) = opened("").await;
    std::fs::write(home.workspace().join("notes.txt"), "kiwi\n").unwrap();
    mock.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path": "notes.txt"}),
    )]));
    mock.push(Reply::text(["The notes say kiwi."]));
    let id = acp.prompt(&session, "what do the notes say").await;
    let (_, done) = acp.answer(id).await;
    assert_eq!(stop_reason(&done), "end_turn");
    acp.close_stdin();
    assert_eq!(acp.exit_code().await, Some(0));

    let mut acp = Acp::spawn(&home);
    acp.initialize().await;
    let listed = acp
        .call("session/list", json!({"cwd": home.workspace()}))
        .await;
    let sessions = listed["result"]["sessions"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["sessionId"], session.as_str());
    assert_eq!(sessions[0]["title"], "what do the notes say");
    assert!(
        sessions[0]["updatedAt"].as_str().unwrap().ends_with('Z'),
        "{listed}"
    );
    let elsewhere = acp
        .call("session/list", json!({"cwd": "/nonexistent-dir"}))
        .await;
    assert_eq!(elsewhere["result"]["sessions"], json!([]));

    let requests = mock.request_count();
    let load = acp
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": home.workspace(), "mcpServers": []}),
        )
        .await;
    let (before, loaded) = acp.answer(load).await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let replayed = updates(&before);
    let kinds: Vec<&str> = replayed
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["user_message_chunk", "tool_call", "agent_message_chunk"],
        "{replayed:?}"
    );
    assert_eq!(replayed[0]["content"]["text"], "what do the notes say");
    assert_eq!(replayed[1]["title"], "Read file: notes.txt");
    assert_eq!(replayed[1]["status"], "completed");
    assert_eq!(replayed[2]["content"]["text"], "The notes say kiwi.");
    assert_eq!(mock.request_count(), requests, "nothing ran again");
    // Loading it twice here is refused; the session works.
    let again = acp
        .call(
            "session/load",
            json!({"sessionId": session, "cwd": home.workspace(), "mcpServers": []}),
        )
        .await;
    assert_eq!(code(&again), -32602, "{again}");

    mock.push(Reply::text(["Still kiwi."]));
    let id = acp.prompt(&session, "and now?").await;
    let (seen, done) = acp.answer(id).await;
    assert_eq!(stop_reason(&done), "end_turn");
    assert_eq!(chunks(&seen, "agent_message_chunk"), "Still kiwi.");
    let history = mock.requests().last().unwrap().body["messages"].to_string();
    assert!(history.contains("what do the notes say"), "{history}");
    assert!(
        history.contains("kiwi\\n"),
        "the tool result too: {history}"
    );
    acp.close_stdin();
    assert_eq!(acp.exit_code().await, Some(0));
}

/// Plan mode as ACP session modes, the workspace's custom commands as the
/// editor's command list, and `/NAME args` run as that command.
#[tokio::test(flavor = "multi_thread")]
async fn session_modes_and_custom_commands_reach_the_editor() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let commands = home.workspace().join(".scv/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("review.md"),
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $1 carefully.\n",
    )
    .unwrap();
    let mut acp = Acp::spawn(&home);
    acp.initialize().await;
    let answer = acp
        .call(
            "session/new",
            json!({"cwd": home.workspace(), "mcpServers": []}),
        )
        .await;
    let result = &answer["result"];
    let session = result["sessionId"].as_str().unwrap().to_string();
    assert_eq!(result["modes"]["currentModeId"], "default", "{answer}");
    let modes: Vec<&str> = result["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["default", "plan"]);
    let (_, listed) = acp
        .until(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .await;
    let available = &listed["params"]["update"]["availableCommands"];
    assert_eq!(available[0]["name"], "review", "{listed}");
    assert_eq!(available[0]["description"], "Review a file");
    assert_eq!(available[0]["input"]["hint"], "FILE");

    let id = acp
        .request(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "plan"}),
        )
        .await;
    let (seen, answer) = acp.answer(id).await;
    assert!(answer.get("result").is_some(), "{answer}");
    let is_mode = |m: &Value| m["params"]["update"]["sessionUpdate"] == "current_mode_update";
    let update = match seen.into_iter().find(is_mode) {
        Some(update) => update,
        None => acp.until(is_mode).await.1,
    };
    assert_eq!(update["params"]["update"]["currentModeId"], "plan");
    let bad = acp
        .call(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "yolo"}),
        )
        .await;
    assert_eq!(code(&bad), -32602, "{bad}");

    mock.push(Reply::text(["reviewed"]));
    let id = acp.prompt(&session, "/review src/lib.rs").await;
    let (_, done) = acp.answer(id).await;
    assert_eq!(stop_reason(&done), "end_turn");
    assert_eq!(last_user_message(&mock), "Review src/lib.rs carefully.");
    let tools: Vec<String> = mock.requests().last().unwrap().body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !tools.contains(&"write_file".to_string()),
        "plan mode: {tools:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subagent_shows_inside_its_task_call_and_asks_as_its_parent_does() {
    let (mock, home, mut acp, session) = opened("").await;
    std::fs::write(home.workspace().join("a.txt"), "forty-two\n").unwrap();
    mock.push(Reply::tool_calls(&[(
        "t1",
        "task",
        json!({"description": "find the answer", "prompt": "CHILD-PROMPT: read a.txt"}),
    )]));
    mock.push(Reply::tool_calls(&[
        ("k1", "read_file", json!({"path": "a.txt"})),
        ("k2", "bash", json!({"command": "echo child-ran > ran.txt"})),
    ]));
    mock.push(Reply::text(["CHILD-ANSWER: forty-two."]));
    mock.push(Reply::text(["It is 42."]));
    let id = acp.prompt(&session, "Ask a subagent").await;
    let (seen, permission) = acp.until(is_permission).await;
    let calls = of_kind(&seen, "tool_call");
    assert_eq!(calls.len(), 1, "only the parent's task call: {calls:?}");
    let task = &calls[0];
    assert_eq!(task["kind"], "think");
    assert_eq!(task["title"], "subagent: find the answer");
    let task_id = task["toolCallId"].clone();
    // The child's permission request is about the task call, in the
    // editor's session.
    assert_eq!(permission["params"]["sessionId"], session.as_str());
    let asked = &permission["params"]["toolCall"];
    assert_eq!(asked["toolCallId"], task_id);
    assert_eq!(
        asked["title"],
        "subagent «find the answer»: Run shell command: echo child-ran > ran.txt"
    );
    acp.respond(&permission["id"], allow()).await;
    let (rest, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    let all: Vec<Value> = seen.into_iter().chain(rest).collect();
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("ran.txt")).unwrap(),
        "child-ran\n",
        "allowed, answered with the child's session id"
    );
    // Every update names the editor's session; the child's text is never
    // the agent's message.
    for message in &all {
        if message["method"] == "session/update" {
            assert_eq!(message["params"]["sessionId"], session.as_str());
        }
    }
    assert_eq!(chunks(&all, "agent_message_chunk"), "It is 42.");
    let nested: Vec<Value> = of_kind(&all, "tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == task_id)
        .collect();
    let listing = |u: &Value| {
        u["content"][0]["content"]["text"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert!(
        nested
            .iter()
            .any(|u| listing(u).contains("- Read file: a.txt (done)")),
        "{nested:?}"
    );
    let before_end = &nested[nested.len() - 2];
    let texts: Vec<&str> = before_end["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["content"]["text"].as_str().unwrap())
        .collect();
    assert!(
        texts[1].starts_with("subagent completed (2 steps"),
        "{texts:?}"
    );
    assert_eq!(texts[2], "CHILD-ANSWER: forty-two.");
    assert_eq!(before_end["_meta"]["scv"]["subagent"]["depth"], 1);
    // The completed task call keeps the list above its output.
    let done = nested.last().unwrap();
    assert_eq!(done["status"], "completed");
    let listed = listing(done);
    assert!(listed.contains("- Read file: a.txt (done)"), "{listed}");
    assert!(
        listed.contains("- Run shell command: echo child-ran > ran.txt (done)"),
        "{listed}"
    );
    let output = done["content"].as_array().unwrap().last().unwrap()["content"]["text"]
        .as_str()
        .unwrap();
    assert!(output.contains("CHILD-ANSWER: forty-two."), "{output}");
}

/// Two subagents ask at once; "Always allow" on one adds the rule, which
/// answers the other's open request too (withdrawn from the editor).
#[tokio::test(flavor = "multi_thread")]
async fn always_allow_also_answers_a_request_still_open() {
    let (mock, _home, mut acp, session) = opened("").await;
    mock.push(Reply::tool_calls(&[
        (
            "t1",
            "task",
            json!({"description": "one", "prompt": "CHILD-ONE"}),
        ),
        (
            "t2",
            "task",
            json!({"description": "two", "prompt": "CHILD-TWO"}),
        ),
    ]));
    mock.push(Reply::tool_calls(&[(
        "k1",
        "bash",
        json!({"command": "true"}),
    )]));
    mock.push(Reply::tool_calls(&[(
        "k2",
        "bash",
        json!({"command": "true"}),
    )]));
    mock.push(Reply::text(["child done"]));
    mock.push(Reply::text(["child done"]));
    mock.push(Reply::text(["Both done."]));
    let id = acp.prompt(&session, "Two subagents").await;
    let (_, first) = acp.until(is_permission).await;
    let (_, second) = acp.until(is_permission).await;
    assert_ne!(first["id"], second["id"]);
    acp.respond(
        &first["id"],
        json!({"outcome": {"outcome": "selected", "optionId": "allow_always"}}),
    )
    .await;
    // No answer to the second: the rule gave it.
    let (rest, response) = acp.answer(id).await;
    assert_eq!(stop_reason(&response), "end_turn");
    assert!(
        rest.iter()
            .any(|m| m["method"] == "$/cancel_request" && m["params"]["requestId"] == second["id"]),
        "the second request is withdrawn: {rest:?}"
    );
}

/// What is wrong with config.toml reaches the editor's user as the session
/// opens (a key SCV does not know, with the nearest it does), as it
/// reaches the TUI's, and the session works.
#[tokio::test(flavor = "multi_thread")]
async fn config_warnings_reach_the_editor() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "auto_aprove = true\n");
    let mut acp = Acp::spawn(&home);
    acp.initialize().await;
    let answer = acp
        .call(
            "session/new",
            json!({"cwd": home.workspace(), "mcpServers": []}),
        )
        .await;
    let session = answer["result"]["sessionId"].as_str().unwrap().to_string();
    let (_, told) = acp
        .until(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .await;
    let text = told["params"]["update"]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("auto_aprove"), "{told}");
    assert!(text.contains("auto_approve"), "did you mean: {told}");
    assert_eq!(told["params"]["sessionId"], session.as_str());
    mock.push(Reply::text(["fine"]));
    let id = acp.prompt(&session, "hello").await;
    let (_, done) = acp.answer(id).await;
    assert_eq!(stop_reason(&done), "end_turn");
}

/// When the disk under `$SCV_HOME` fills, the editor's user is told in
/// the conversation that the session is no longer saved (once), and that
/// it is saved again once there is room; the prompts are answered
/// meanwhile. `$SCV_HOME` is a 600 KiB tmpfs (root only; skipped
/// otherwise).
#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_is_said_to_the_editor_and_so_is_its_recovery() {
    let Some(tmpfs) = common::tmpfs::Tmpfs::mount("600k") else {
        return;
    };
    let mock = MockProvider::start().await;
    // Dropped before the mount: its daemon stops first.
    let home = Home {
        home: TestHome::new_in(tmpfs.path(), &mock.base_url(), ""),
    };
    let mut acp = Acp::spawn(&home);
    acp.initialize().await;
    let answer = acp
        .call(
            "session/new",
            json!({"cwd": home.workspace(), "mcpServers": []}),
        )
        .await;
    let session = answer["result"]["sessionId"].as_str().unwrap().to_string();
    let chunks = |messages: &[Value]| -> String {
        messages
            .iter()
            .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
            .collect()
    };
    let mut said = String::new();
    common::tmpfs::fill(tmpfs.path());
    for n in 0..3 {
        mock.push(Reply::text([format!(
            "answer {n} {}",
            "lorem ipsum ".repeat(850)
        )]));
        let id = acp.prompt(&session, &format!("prompt {n}")).await;
        let (messages, done) = acp.answer(id).await;
        assert_eq!(stop_reason(&done), "end_turn");
        said.push_str(&chunks(&messages));
    }
    assert_eq!(
        said.matches("⚠ not saved: the disk under SCV_HOME is full")
            .count(),
        1,
        "{said:.2000}"
    );
    std::fs::remove_file(tmpfs.path().join("ballast")).unwrap();
    mock.push(Reply::text(["fine"]));
    let id = acp.prompt(&session, "again").await;
    let (messages, done) = acp.answer(id).await;
    assert_eq!(stop_reason(&done), "end_turn");
    assert!(chunks(&messages).contains("⚠ saved again"), "{messages:?}");
}

/// `session/load` of a live session (one `scv --bg` runs) attaches to it:
/// its conversation so far is replayed, its running turn's answer streams
/// in, nothing is asked of the provider twice, and the editor's prompt
/// then runs in it.
#[tokio::test(flavor = "multi_thread")]
async fn loading_a_live_session_attaches_to_it() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let words: Vec<String> = (0..30).map(|n| format!("bg{n} ")).collect();
    mock.push(Reply::text(words.clone()).drip(std::time::Duration::from_millis(80)));
    let bg = home
        .scv()
        .args(["--bg", "count in the background"])
        .output()
        .unwrap();
    assert!(bg.status.success(), "{}", stderr(&bg));
    let session = stdout(&bg).trim().to_string();

    let mut acp = Acp::spawn(&home);
    acp.initialize().await;
    let load = acp
        .request(
            "session/load",
            json!({"sessionId": session, "cwd": home.workspace(), "mcpServers": []}),
        )
        .await;
    let (before, loaded) = acp.answer(load).await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    let replayed = updates(&before);
    assert_eq!(
        replayed[0]["sessionUpdate"], "user_message_chunk",
        "{replayed:?}"
    );
    assert_eq!(replayed[0]["content"]["text"], "count in the background");
    // The running turn's answer streams in, to its last word (or, on a
    // slow machine, it ended first and is in the replay).
    let last = |m: &Value| {
        m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            && m["params"]["update"]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("bg29"))
    };
    if !before.iter().any(last) {
        acp.until(last).await;
    }
    assert_eq!(mock.request_count(), 1, "the turn ran once");

    mock.push(Reply::text(["Editor here."]));
    let id = acp.prompt(&session, "and from the editor?").await;
    let (seen, done) = acp.answer(id).await;
    assert_eq!(stop_reason(&done), "end_turn");
    assert_eq!(chunks(&seen, "agent_message_chunk"), "Editor here.");
    let history = mock.requests().last().unwrap().body["messages"].to_string();
    assert!(history.contains("count in the background"), "{history}");
    acp.close_stdin();
    assert_eq!(acp.exit_code().await, Some(0));
}
/// `session/close` and `session/delete` on the wire (the TypeScript SDK
/// takes `-32002` for them as success, so the codes are checked here):
/// a second close of a session is `-32002` Resource not found, a prompt
/// to it too; a delete of an unknown id succeeds; closing the session
/// answers the prompt queued in it `cancelled`; the connection carries on.
#[tokio::test(flavor = "multi_thread")]
async fn session_close_and_delete_codes_on_the_wire() {
    let (mock, _home, mut acp, session) = opened("").await;
    let running = start_talking(&mut acp, &mock, &session, "talk").await;
    let queued = acp.prompt(&session, "then this").await;
    let close = acp
        .request("session/close", json!({"sessionId": session}))
        .await;
    // The three answers, in whatever order they come.
    let mut answers = std::collections::HashMap::new();
    while answers.len() < 3 {
        let message = acp.next().await.expect("stdout ended");
        if let Some(id) = message["id"]
            .as_u64()
            .filter(|_| message.get("method").is_none())
        {
            answers.insert(id, message);
        }
    }
    assert_eq!(answers[&close]["result"], json!({}), "{answers:?}");
    for id in [running, queued] {
        assert_eq!(stop_reason(&answers[&id]), "cancelled", "{answers:?}");
    }
    let again = acp
        .call("session/close", json!({"sessionId": session}))
        .await;
    assert_eq!(code(&again), -32002);
    let id = acp.prompt(&session, "hello?").await;
    assert_eq!(code(&acp.answer(id).await.1), -32002);
    let deleted = acp
        .call("session/delete", json!({"sessionId": "0000-never-was"}))
        .await;
    assert_eq!(deleted["result"], json!({}), "{deleted}");
    let resumed = acp
        .call(
            "session/resume",
            json!({"sessionId": "0000-never-was", "cwd": "/"}),
        )
        .await;
    assert_eq!(code(&resumed), -32002);
}
