#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Tools from MCP servers, end to end: real MCP servers written with the
//! official Python SDK (`mcp` 1.30, installed by `.ci/run` into
//! `target/mcp-venv`) over stdio and streamable HTTP — plus a raw JSON-RPC
//! one for what no SDK does on purpose — driven through the real
//! `scv-server` by the scripted mock provider's tool calls.
//!
//! Without the Python SDK the tests skip with a message; with
//! `SCV_REQUIRE_MCP` set (CI) they fail instead.

mod common;
use common::*;
use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use std::path::{Path, PathBuf};
use std::time::Duration;

use scv_test_support::mcp_python::python;

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(name)
        .display()
        .to_string()
}

/// A TOML string.
fn toml(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// `[mcp_servers.NAME]` for a stdio server: `python SCRIPT ARGS…`, events
/// to `log`, and `extra` lines.
fn stdio_server(name: &str, python: &Path, args: &[&str], log: &Path, extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| toml(a)).collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\nenv = {{ SCV_MCP_LOG = {} }}\n{extra}\n",
        toml(&python.display().to_string()),
        args.join(", "),
        toml(&log.display().to_string()),
    )
}

/// The events a test server recorded.
fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Waits (bounded) until the server recorded `event`.
async fn recorded(log: &Path, event: &str) -> Value {
    for _ in 0..400 {
        if let Some(found) = events(log).into_iter().find(|e| e["event"] == event) {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the server never recorded {event}: {:?}", events(log));
}

/// The fake server's stdio table and its log, in `dir`.
fn fake(python: &Path, dir: &Path, extra: &str) -> (String, PathBuf) {
    let log = dir.join("events.jsonl");
    let table = stdio_server(
        "fake",
        python,
        &[&script("fake_server.py"), "stdio"],
        &log,
        extra,
    );
    (table, log)
}

/// A `--stdio` rig whose fake server (stdio) is up: its tools offered.
struct Fake {
    rig: Rig,
    session: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Fake {
    /// `None` (skip) without the Python SDK.
    async fn start(extra: &str) -> Option<Fake> {
        let python = python()?;
        let dir = tempfile::tempdir().unwrap();
        let (table, log) = fake(&python, dir.path(), extra);
        let mut rig = Rig::new(&table).await;
        let session = rig.session().await;
        ready(&mut rig, &session, "mcp__fake__echo").await;
        Some(Fake {
            rig,
            session,
            log,
            _dir: dir,
        })
    }
}

/// Runs plain turns until the model is offered `tool` (a Python server
/// takes a second or two to start; a turn waits for it at most one) and
/// returns the tools offered then.
async fn ready(rig: &mut Rig, session: &str, tool: &str) -> Vec<String> {
    for _ in 0..80 {
        rig.mock.push(Reply::text(["hello"]));
        rig.turn(session, "are the tools there").await;
        let tools = offered(&rig.mock, rig.mock.requests().len() - 1);
        if tools.iter().any(|t| t == tool || t.starts_with(tool)) {
            return tools;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{tool} was never offered");
}

/// Runs one turn whose model calls `calls` (auto-approved) and returns
/// each call's `(id, success, output)`.
async fn call(
    rig: &mut Rig,
    session: &str,
    calls: &[(&str, &str, Value)],
) -> Vec<(String, bool, String)> {
    rig.mock.push(Reply::tool_calls(calls));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(session, "use the tools").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    completed(&events)
}

/// Calls `tool` (an echo) every 250 ms, at most `tries` times, until a
/// call succeeds (a restarted server is back); its output.
async fn echo_once_back(
    rig: &mut Rig,
    session: &str,
    tool: &str,
    text: &str,
    tries: usize,
) -> Option<String> {
    for _ in 0..tries {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let results = call(rig, session, &[("e", tool, json!({"text": text}))]).await;
        if results[0].1 {
            return Some(results[0].2.clone());
        }
    }
    None
}

#[tokio::test]
async fn mcp_tools_are_offered_by_mapped_name_asked_for_as_mcp_and_answered() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (table, _) = fake(&python, dir.path(), "");
    let mut rig = Rig::new(&table).await;
    let session = rig.session().await;
    let tools = ready(&mut rig, &session, "mcp__fake__echo").await;
    let first = rig.mock.requests().len() - 1;
    rig.mock.push(Reply::tool_calls(&[(
        "c1",
        "mcp__fake__echo",
        json!({"text": "hi", "times": 2}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(&session, "t", "echo").await;
    let events = rig.server.until("approval.requested").await;
    let proposed = events
        .iter()
        .find(|e| e["type"] == "tool.proposed")
        .unwrap();
    assert_eq!(proposed["name"], "mcp__fake__echo");
    let asked = events.last().unwrap();
    assert_eq!(asked["risk"], "mcp");
    assert_eq!(asked["name"], "mcp__fake__echo");
    assert_eq!(
        asked["summary"],
        "Call MCP tool `echo` of server `fake` (the server says it only reads): {\"text\":\"hi\",\"times\":2}"
    );
    assert!(asked.get("sandboxed").is_none());
    rig.server
        .send(json!({"type":"approval.resolve","request_id":"a","session_id":session,"approval_id":asked["approval_id"],"approved":true}))
        .await;
    let events = rig.server.until_terminal().await;
    assert_eq!(
        completed(&events),
        [("c1".to_string(), true, "hihi".to_string())]
    );
    assert!(tools.contains(&"bash".to_string()), "{tools:?}");
    let requests = rig.mock.requests();
    let schema = &requests[first].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__fake__echo")
        .unwrap()["function"]["parameters"];
    assert_eq!(schema["properties"]["text"]["type"], "string");
}

#[tokio::test]
async fn auto_approved_calls_carry_every_kind_of_result() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (table, _) = fake(&python, dir.path(), "auto_approve = true");
    let mut rig = Rig::new(&table).await;
    let session = rig.session().await;
    let tools = ready(&mut rig, &session, "mcp__fake__dotted_name_").await;
    let dotted = tools
        .iter()
        .find(|t| t.starts_with("mcp__fake__dotted_name_"))
        .unwrap()
        .clone();
    let results = call(
        &mut rig,
        &session,
        &[
            ("dotted", &dotted, json!({"x": 7})),
            ("fail", "mcp__fake__fail", json!({"message": "it broke"})),
            ("image", "mcp__fake__image", json!({})),
            ("big", "mcp__fake__big", json!({"n": 200000})),
        ],
    )
    .await;
    assert_eq!(results[0], ("dotted".into(), true, "dotted 7".into()));
    assert!(!results[1].1);
    assert!(results[1].2.contains("it broke"), "{:?}", results[1]);
    assert!(results[2].1);
    assert!(
        results[2].2.starts_with("[image image/png, "),
        "{:?}",
        results[2]
    );
    let events = rig.mock.requests();
    let last = events.last().unwrap().body.to_string();
    assert!(
        last.contains("output was truncated"),
        "the big result is capped"
    );
    let (_, success, output) = &results[3];
    assert!(*success && output.len() <= 64 * 1024, "{}", output.len());
}

#[tokio::test]
async fn a_call_past_tool_timeout_fails_and_the_server_is_told_to_cancel() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (table, log) = fake(
        &python,
        dir.path(),
        "auto_approve = true\ntool_timeout_ms = 700",
    );
    let mut rig = Rig::new(&table).await;
    let session = rig.session().await;
    ready(&mut rig, &session, "mcp__fake__echo").await;
    let results = call(
        &mut rig,
        &session,
        &[("s", "mcp__fake__slow", json!({"seconds": 30}))],
    )
    .await;
    let (_, success, output) = &results[0];
    assert!(!success);
    assert!(output.contains("timed out after 700 ms"), "{output}");
    let started = recorded(&log, "slow_started").await;
    let cancelled = recorded(&log, "cancelled").await;
    assert_eq!(started["id"], cancelled["id"]);
}

#[tokio::test]
async fn turn_cancel_reaches_the_server_at_once() {
    let Some(Fake {
        mut rig,
        session,
        log,
        _dir,
    }) = Fake::start("auto_approve = true").await
    else {
        return;
    };
    rig.mock.push(Reply::tool_calls(&[(
        "s",
        "mcp__fake__slow",
        json!({"seconds": 60}),
    )]));
    rig.server.start_turn(&session, "t", "slow").await;
    let events = rig.server.until("tool.started").await;
    recorded(&log, "slow_started").await;
    rig.server
        .send(json!({"type":"turn.cancel","request_id":"c","session_id":session,"turn_id":events[0]["turn_id"]}))
        .await;
    assert_eq!(
        types(&rig.server.until_terminal().await),
        ["turn.cancelled"]
    );
    recorded(&log, "cancelled").await;
}

#[tokio::test]
async fn server_requests_get_roots_and_clear_refusals_and_list_changes_are_seen() {
    let Some(Fake {
        mut rig,
        session,
        log: _log,
        _dir,
    }) = Fake::start("auto_approve = true").await
    else {
        return;
    };
    let results = call(
        &mut rig,
        &session,
        &[
            ("roots", "mcp__fake__roots", json!({})),
            ("sampling", "mcp__fake__ask_llm", json!({"question": "hi"})),
            ("elicit", "mcp__fake__ask_user", json!({"question": "ok?"})),
            ("log", "mcp__fake__log_things", json!({})),
            ("add", "mcp__fake__add_tool", json!({"name": "late"})),
        ],
    )
    .await;
    let workspace = rig.home.workspace();
    assert_eq!(
        results[0],
        (
            "roots".into(),
            true,
            format!("file://{}", workspace.display())
        )
    );
    let (id, success, output) = &results[1];
    assert!(!success, "{id}: {output}");
    assert!(output.contains("not supported by SCV"), "{id}: {output}");
    // A client that did not ask for elicitation: declined at once.
    assert_eq!(
        results[2],
        ("elicit".into(), true, "elicited: decline".into())
    );
    assert_eq!(results[3], ("log".into(), true, "logged".into()));
    assert!(results[4].1);
    // A request soon after offers the tool the server added (the hub
    // lists the tools again when the server says they changed; under load
    // that round trip can finish after the very next request is built).
    ready(&mut rig, &session, "mcp__fake__late").await;
}

#[tokio::test]
async fn a_server_that_dies_mid_call_fails_the_call_and_comes_back() {
    let Some(Fake {
        mut rig,
        session,
        log,
        _dir,
    }) = Fake::start("auto_approve = true").await
    else {
        return;
    };
    let results = call(
        &mut rig,
        &session,
        &[("x", "mcp__fake__exit_now", json!({}))],
    )
    .await;
    assert!(!results[0].1, "{:?}", results[0]);
    recorded(&log, "exiting").await;
    // Restarted after the 2 s backoff: its tools come back.
    let mut back = false;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let starts = events(&log)
            .iter()
            .filter(|e| e["event"] == "start")
            .count();
        if starts >= 2 {
            back = true;
            break;
        }
    }
    assert!(back, "the server was not restarted: {:?}", events(&log));
    let answered = echo_once_back(&mut rig, &session, "mcp__fake__echo", "again", 20).await;
    assert_eq!(answered.as_deref(), Some("again"));
}

#[tokio::test]
async fn misbehaving_servers_get_clear_errors_and_never_stall_a_turn() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("unused.jsonl");
    let raw = script("raw_server.py");
    let mut tables = String::new();
    for mode in ["garbage", "unknown_id", "no_init", "huge"] {
        let extra = if mode == "no_init" {
            "auto_approve = true\nstartup_timeout_ms = 400"
        } else {
            "auto_approve = true"
        };
        tables.push_str(&stdio_server(mode, &python, &[&raw, mode], &log, extra));
    }
    tables.push_str(&stdio_server(
        "many",
        &python,
        &[&script("many_tools_server.py")],
        &log,
        "auto_approve = true",
    ));
    let mut rig = Rig::new(&tables).await;
    let session = rig.session().await;
    rig.mock.push(Reply::text(["first"]));
    let started = std::time::Instant::now();
    rig.turn(&session, "hello").await;
    // Waited for the starting servers, but not for the one that never
    // answers initialize beyond its own startup timeout.
    assert!(started.elapsed() < Duration::from_secs(20));
    let mut tools = offered(&rig.mock, 0);
    for _ in 0..40 {
        if tools
            .iter()
            .filter(|t| t.starts_with("mcp__many__"))
            .count()
            == 100
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        rig.mock.push(Reply::text(["again"]));
        rig.turn(&session, "hello").await;
        tools = offered(&rig.mock, rig.mock.requests().len() - 1);
    }
    assert!(
        tools.contains(&"mcp__garbage__echo".to_string()),
        "{tools:?}"
    );
    assert!(tools.contains(&"mcp__unknown_id__echo".to_string()));
    assert!(!tools.iter().any(|t| t.starts_with("mcp__no_init__")));
    let many: Vec<&String> = tools
        .iter()
        .filter(|t| t.starts_with("mcp__many__"))
        .collect();
    assert_eq!(many.len(), 100, "200 tools, the first 100 kept");
    assert!(
        !tools.iter().any(|t| t.contains("schema_")),
        "invalid schemas are left out"
    );
    let results = call(
        &mut rig,
        &session,
        &[
            ("g", "mcp__garbage__echo", json!({"text": "a"})),
            ("u", "mcp__unknown_id__echo", json!({"text": "b"})),
            ("h", "mcp__huge__echo", json!({"text": "c"})),
            ("m", "mcp__many__t005", json!({"x": 1})),
        ],
    )
    .await;
    assert_eq!(results[0], ("g".into(), true, "raw echo a".into()));
    assert_eq!(results[1], ("u".into(), true, "raw echo b".into()));
    let (_, success, output) = &results[2];
    assert!(!success, "{output}");
    assert!(output.contains("broke"), "{output}");
    assert_eq!(results[3], ("m".into(), true, "t005 got {'x': 1}".into()));
}

/// A daemon against the mock with `extra` config, and a client.
struct DaemonRig {
    mock: MockProvider,
    home: TestHome,
    daemon: tokio::process::Child,
    log: DaemonLog,
    client: TestServer,
}

impl DaemonRig {
    async fn start(extra: &str) -> DaemonRig {
        let mock = MockProvider::start().await;
        let home = TestHome::new(&mock.base_url(), extra);
        let socket = home.path().join("server.sock");
        let log = DaemonLog::default();
        let daemon = spawn_daemon(BIN, home.path(), &socket, &log);
        wait_for_socket(&socket).await;
        let mut client = TestServer::connect(&socket).await;
        // The MCP servers' `tools` / `tool_names` are extension fields.
        client
            .send(
                json!({"type": "initialize", "request_id": "init", "protocol_version": 2,
                "capabilities": {"daemon_status": true}}),
            )
            .await;
        client.expect("initialized").await;
        DaemonRig {
            mock,
            home,
            daemon,
            log,
            client,
        }
    }

    async fn control(&mut self, action: &str) -> Value {
        self.client
            .send(json!({"type":"daemon.control","request_id":"c","command":{"action":action}}))
            .await;
        self.client.next().await
    }

    async fn mcp(&mut self, name: &str) -> Value {
        let status = self.control("status").await;
        status["status"]["components"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == format!("mcp:{name}"))
            .cloned()
            .unwrap_or(Value::Null)
    }

    async fn wait_state(&mut self, name: &str, state: &str) -> Value {
        for _ in 0..200 {
            let component = self.mcp(name).await;
            if component["state"] == state {
                return component;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("mcp:{name} never reached {state}: {}", self.mcp(name).await);
    }
}

#[tokio::test]
async fn the_daemon_lists_servers_reloads_them_and_leaves_nothing_behind() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (table, log) = fake(&python, dir.path(), "");
    let raw = script("raw_server.py");
    let never = stdio_server(
        "never",
        &python,
        &[&raw, "no_init"],
        &dir.path().join("never.jsonl"),
        "startup_timeout_ms = 300",
    );
    let off = stdio_server("off", &python, &[&raw, "ok"], &log, "enabled = false");
    let mut rig = DaemonRig::start(&format!("{table}{never}{off}")).await;
    let fake = rig.wait_state("fake", "connected").await;
    assert_eq!(fake["account"], Value::Null);
    assert_eq!(fake["bot_id"], Value::Null);
    assert_eq!(fake["user_id"], Value::Null);
    assert_eq!(fake["enabled"], true);
    assert_eq!(fake["restarts"], 0);
    assert!(fake["last_success_unix_seconds"].as_u64().unwrap() > 0);
    assert_eq!(fake["tools"], 16);
    // Their names too, as the server gives them.
    let names = fake["tool_names"].as_array().unwrap();
    assert_eq!(names.len(), 16, "{fake}");
    assert!(
        names
            .iter()
            .all(|n| n.as_str().is_some_and(|n| !n.is_empty())),
        "{fake}"
    );
    // A client that asked for nothing: exactly the document's fields.
    let mut plain = TestServer::connect(&rig.home.path().join("server.sock")).await;
    plain.initialize().await;
    plain
        .send(json!({"type":"daemon.control","request_id":"p","command":{"action":"status"}}))
        .await;
    let status = plain.expect("daemon.status").await;
    let components = status["status"]["components"].as_array().unwrap();
    assert!(!components.is_empty(), "{status}");
    for component in components {
        let mut keys: Vec<&String> = component.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "account",
                "bot_id",
                "enabled",
                "error",
                "id",
                "last_success_unix_seconds",
                "restarts",
                "state",
                "user_id"
            ],
            "{component}"
        );
    }
    let never = rig.wait_state("never", "failed").await;
    assert_eq!(never["error"], "did not finish starting within 300 ms");
    let off = rig.mcp("off").await;
    assert_eq!(off["state"], "disabled");
    assert_eq!(off["enabled"], false);
    let pid = recorded(&log, "start").await["pid"].as_i64().unwrap() as i32;
    assert!(scv_test_support::procfs::is_running(pid));

    // Its stderr went to the daemon log.
    assert!(
        rig.log.wait_for("fake server starting").await,
        "{:?}",
        rig.log.lines()
    );

    // Reload without it: it stops and its process is gone.
    let config = rig.home.path().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let kept: String = text.split("[mcp_servers.fake]").next().unwrap().to_string();
    std::fs::write(&config, kept).unwrap();
    let status = rig.control("reload").await;
    let ids: Vec<&str> = status["status"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert!(!ids.contains(&"mcp:fake"), "{ids:?}");
    assert!(gone(pid).await, "the removed server outlived the reload");

    // Back again, then SIGTERM: nothing outlives the daemon.
    std::fs::write(&config, &text).unwrap();
    rig.control("reload").await;
    rig.wait_state("fake", "connected").await;
    let pids: Vec<i32> = events(&log)
        .iter()
        .filter(|e| e["event"] == "start")
        .map(|e| e["pid"].as_i64().unwrap() as i32)
        .collect();
    let latest = *pids.last().unwrap();
    assert!(scv_test_support::procfs::is_running(latest));
    unsafe { libc::kill(rig.daemon.id().unwrap() as i32, libc::SIGTERM) };
    assert!(rig.daemon.wait().await.unwrap().success());
    assert!(gone(latest).await, "an MCP server outlived the daemon");
    let _ = &rig.mock;
}

#[tokio::test]
async fn stdio_eof_stops_every_server() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (table, log) = fake(&python, dir.path(), "");
    let mut rig = Rig::new(&table).await;
    rig.session().await;
    let pid = recorded(&log, "start").await["pid"].as_i64().unwrap() as i32;
    rig.server.close_stdin().await;
    let status = rig.server.wait().await;
    assert!(status.success());
    assert!(gone(pid).await, "an MCP server outlived scv-server --stdio");
}

/// The fake server over streamable HTTP on `port`, until dropped.
struct HttpServer(std::process::Child);

impl HttpServer {
    async fn start(python: &Path, port: u16, log: &Path) -> HttpServer {
        let child = std::process::Command::new(python)
            .args([&script("fake_server.py"), "http", &port.to_string()])
            .env("SCV_MCP_LOG", log)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Owned at once, so a panic below still kills and reaps it.
        let server = HttpServer(child);
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the HTTP MCP server did not listen on {port}");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn streamable_http_servers_get_their_token_and_come_back_after_losing_the_session() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("http.jsonl");
    let port = free_port();
    let http = HttpServer::start(&python, port, &log).await;
    let table = format!(
        "[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env = \"WEB_MCP_PAT\"\nheaders = {{ X-Team = \"scv\" }}\nauto_approve = true\n"
    );
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), &table);
    let mut server = TestServer::spawn_with(BIN, home.path(), &[("WEB_MCP_PAT", "pat-secret-1")]);
    server.initialize().await;
    let mut rig = Rig { mock, home, server };
    let session = rig.session().await;
    ready(&mut rig, &session, "mcp__web__echo").await;
    let results = call(
        &mut rig,
        &session,
        &[
            ("e", "mcp__web__echo", json!({"text": "over http"})),
            ("w", "mcp__web__whoami", json!({})),
        ],
    )
    .await;
    assert_eq!(results[0], ("e".into(), true, "over http".into()));
    assert_eq!(results[1], ("w".into(), true, "Bearer pat-secret-1".into()));

    // The server restarts and forgets the session: the next call fails,
    // SCV reconnects, and calls work again.
    drop(http);
    let _http = HttpServer::start(&python, port, &log).await;
    let results = call(
        &mut rig,
        &session,
        &[("e", "mcp__web__echo", json!({"text": "lost"}))],
    )
    .await;
    assert!(!results[0].1, "{:?}", results[0]);
    let answered = echo_once_back(&mut rig, &session, "mcp__web__echo", "back", 40).await;
    assert_eq!(answered.as_deref(), Some("back"));
}

/// `session.start.mcp_servers` (extension): a server for one session only,
/// next to the daemon's; refused with `invalid_request` when malformed or
/// clashing; stopped when the session's connection ends.
#[tokio::test]
async fn a_session_brings_its_own_servers_and_only_it_sees_them() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (table, _) = fake(&python, dir.path(), "");
    let mut rig = Rig::new(&table).await;
    let workspace = rig.home.workspace();
    let log = dir.path().join("own.jsonl");
    let own = json!({"own": {"command": python, "args": [script("fake_server.py"), "stdio"],
        "env": {"SCV_MCP_LOG": log}}});

    // Malformed, or named like the daemon's: refused, the connection goes on.
    rig.server
        .send(
            json!({"type":"session.start","request_id":"bad","cwd":workspace,
            "mcp_servers": {"own": {"command": "x", "url": "http://127.0.0.1:1/mcp"}}}),
        )
        .await;
    let err = rig.server.expect_error("invalid_request", "bad").await;
    assert!(
        err["message"].as_str().unwrap().contains("mcp_servers.own"),
        "{err}"
    );
    rig.server
        .send(
            json!({"type":"session.start","request_id":"clash","cwd":workspace,
            "mcp_servers": {"fake": {"command": "x"}}}),
        )
        .await;
    let err = rig.server.expect_error("invalid_request", "clash").await;
    assert!(
        err["message"].as_str().unwrap().contains("already has"),
        "{err}"
    );

    let with = rig
        .server
        .start_session_with(json!({"cwd": workspace, "mcp_servers": own}))
        .await;
    let plain = rig.session().await;
    ready(&mut rig, &with, "mcp__own__echo").await;
    // The daemon's servers too (they start in the session's hub as well,
    // maybe a moment after its own on a loaded machine).
    let tools = ready(&mut rig, &with, "mcp__fake__echo").await;
    assert!(tools.contains(&"mcp__own__echo".to_string()), "{tools:?}");
    let pid = recorded(&log, "start").await["pid"].as_i64().unwrap() as i32;
    rig.mock.push(Reply::text(["hello"]));
    rig.turn(&plain, "and here").await;
    let others = offered(&rig.mock, rig.mock.requests().len() - 1);
    assert!(
        others.contains(&"mcp__fake__echo".to_string()),
        "{others:?}"
    );
    assert!(
        !others.iter().any(|t| t.starts_with("mcp__own__")),
        "another session's server leaked: {others:?}"
    );

    rig.mock.push(Reply::tool_calls(&[(
        "c1",
        "mcp__own__echo",
        json!({"text": "own"}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(&with, "t", "echo").await;
    let asked = rig.server.until("approval.requested").await.pop().unwrap();
    assert_eq!(asked["risk"], "mcp");
    rig.server
        .send(json!({"type":"approval.resolve","request_id":"a","session_id":with,"approval_id":asked["approval_id"],"approved":true}))
        .await;
    let events = rig.server.until_terminal().await;
    assert_eq!(
        completed(&events),
        [("c1".to_string(), true, "own".to_string())]
    );

    rig.server.close_stdin().await;
    assert!(rig.server.wait().await.success());
    assert!(
        gone(pid).await,
        "a session's MCP server outlived its session"
    );
}

/// `[mcp_servers.NAME]` errors name the file and the line however the
/// table is written, and say what is wrong in words, not Rust types.
#[tokio::test]
async fn a_malformed_mcp_servers_table_names_the_file_and_the_line() {
    // TestHome writes two lines (model, base_url) before these.
    let cases = [
        (
            "[mcp_servers.\"my server\"]\ncommand = \"x\"",
            "line 3: mcp_servers.my server: a server name is",
        ),
        (
            "[mcp_servers]\nfs = { command = \"x\", url = \"http://x/mcp\" }",
            "line 4: mcp_servers.fs: set either `command` or `url`, not both",
        ),
        (
            "mcp_servers.fs.url = \"ftp://x\"",
            "line 3: mcp_servers.fs: `url` must start with",
        ),
        (
            "[mcp_servers]\n\nfs = 3",
            "line 5: mcp_servers: invalid type: integer `3`, expected a table of server settings",
        ),
        (
            "[mcp_servers.x__y]\ncommand = \"x\"",
            "line 3: mcp_servers.x__y: a server name may not contain `__`",
        ),
        (
            "[mcp_servers.a_]\ncommand = \"x\"",
            "line 3: mcp_servers.a_: a server name may not contain `__` or end in `_`",
        ),
    ];
    for (table, expected) in cases {
        let home = TestHome::new("http://127.0.0.1:9/v1", table);
        let out = tokio::process::Command::new(BIN)
            .arg("--stdio")
            .env("SCV_HOME", home.path())
            .env(
                "CLAUDE_CONFIG_DIR",
                scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
            )
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{table}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let file = home.path().join("config.toml");
        assert!(
            stderr.contains(&format!("{}: {expected}", file.display())),
            "{table}\n{stderr}"
        );
        assert!(!stderr.contains("RawServer"), "{stderr}");
    }
}

/// The parent of `pid`, from `/proc/PID/stat`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Every process of a `stubborn_server.py` that recorded its start in
/// `log`: the reaper SCV ran it under, the server, and its helper (in a
/// session of its own, ignoring SIGTERM like the server).
async fn stubborn_processes(log: &Path) -> Vec<i32> {
    let start = recorded(log, "start").await;
    let pid = start["pid"].as_i64().unwrap() as i32;
    let helper = start["helper"].as_i64().unwrap() as i32;
    let reaper = parent_of(pid).unwrap();
    let cmdline = std::fs::read(format!("/proc/{reaper}/cmdline")).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&cmdline).contains("--tool-process"),
        "the server's parent is its reaper: {}",
        String::from_utf8_lossy(&cmdline)
    );
    for pid in [reaper, pid, helper] {
        assert!(scv_test_support::procfs::is_running(pid), "{pid} runs");
    }
    vec![reaper, pid, helper]
}

/// Servers that ignore SIGTERM, one still starting, and helpers of both in
/// sessions of their own: after the daemon's SIGTERM, not one process of
/// theirs is left.
#[tokio::test]
async fn the_daemons_sigterm_ends_every_mcp_process_even_stubborn_and_starting_ones() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let stubborn = script("stubborn_server.py");
    let (serving, starting) = (
        dir.path().join("serve.jsonl"),
        dir.path().join("start.jsonl"),
    );
    let config = format!(
        "{}{}",
        stdio_server("stubborn", &python, &[&stubborn, "serve"], &serving, ""),
        stdio_server(
            "starting",
            &python,
            &[&stubborn, "starting"],
            &starting,
            "startup_timeout_ms = 120000"
        ),
    );
    let mut rig = DaemonRig::start(&config).await;
    rig.wait_state("stubborn", "connected").await;
    let mut pids = stubborn_processes(&serving).await;
    pids.extend(stubborn_processes(&starting).await);
    assert_eq!(rig.mcp("starting").await["state"], "starting");

    let sent = std::time::Instant::now();
    unsafe { libc::kill(rig.daemon.id().unwrap() as i32, libc::SIGTERM) };
    let status = tokio::time::timeout(Duration::from_secs(30), rig.daemon.wait())
        .await
        .expect("the daemon did not exit after SIGTERM")
        .unwrap();
    eprintln!("the daemon exited {:?} after SIGTERM", sent.elapsed());
    assert!(status.success());
    for pid in pids {
        assert!(
            gone(pid).await,
            "process {pid} of an MCP server outlived the daemon"
        );
    }
}

/// `--stdio` whose servers never answer `initialize` — one still starting
/// (not reading its stdin, its helper holding stderr), one reading but not
/// answering — next to a connected one that ignores SIGTERM: stdin's EOF
/// ends it promptly (far inside the two-minute startup timeout), and
/// every process of every server with it.
#[tokio::test]
async fn stdio_eof_while_servers_never_answer_initialize_exits_at_once_and_ends_them_all() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let stubborn = script("stubborn_server.py");
    let (serving, starting) = (
        dir.path().join("serve.jsonl"),
        dir.path().join("start.jsonl"),
    );
    let config = format!(
        "{}{}{}",
        stdio_server("stubborn", &python, &[&stubborn, "serve"], &serving, ""),
        stdio_server(
            "starting",
            &python,
            &[&stubborn, "starting"],
            &starting,
            "startup_timeout_ms = 120000"
        ),
        stdio_server(
            "no_init",
            &python,
            &[&script("raw_server.py"), "no_init"],
            &dir.path().join("unused.jsonl"),
            "startup_timeout_ms = 120000"
        ),
    );
    let mut rig = Rig::new(&config).await;
    let session = rig.session().await;
    ready(&mut rig, &session, "mcp__stubborn__echo").await;
    let mut pids = stubborn_processes(&serving).await;
    pids.extend(stubborn_processes(&starting).await);

    let closed = std::time::Instant::now();
    rig.server.close_stdin().await;
    let status = rig.server.wait().await;
    let took = closed.elapsed();
    eprintln!("scv-server --stdio exited {took:?} after EOF");
    assert!(status.success());
    assert!(took < Duration::from_secs(20), "{took:?}");
    for pid in pids {
        assert!(
            gone(pid).await,
            "process {pid} of an MCP server outlived scv-server --stdio"
        );
    }
}

/// A daemon (stderr captured) and a [`Rig`] whose server is a client of
/// its socket, for the turn helpers.
async fn daemon_and_client(extra: &str) -> (Rig, tokio::process::Child, DaemonLog) {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), extra);
    let socket = home.path().join("server.sock");
    let log = DaemonLog::default();
    let daemon = spawn_daemon(BIN, home.path(), &socket, &log);
    wait_for_socket(&socket).await;
    let mut server = TestServer::connect(&socket).await;
    server.initialize().await;
    (Rig { mock, home, server }, daemon, log)
}

/// A result over the 16 MiB cap on one message (the SDK's own server
/// sending 20 MB of text): the call and the log say so, and the server
/// is restarted.
#[tokio::test]
async fn an_oversized_result_says_it_exceeded_the_limit_and_the_server_comes_back() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (table, log) = fake(&python, dir.path(), "auto_approve = true");
    let (mut rig, _daemon, daemon_log) = daemon_and_client(&table).await;
    let session = rig.session().await;
    ready(&mut rig, &session, "mcp__fake__big").await;
    let results = call(
        &mut rig,
        &session,
        &[("big", "mcp__fake__big", json!({"n": 20 * 1024 * 1024}))],
    )
    .await;
    let (_, success, output) = &results[0];
    assert!(!success, "{output}");
    assert!(
        output.contains("result exceeded the 16 MiB limit on one message"),
        "{output}"
    );
    assert!(output.contains("restarted"), "{output}");
    assert!(
        daemon_log
            .wait_for("the result of tool `big` exceeded the 16 MiB limit")
            .await,
        "{:?}",
        daemon_log.lines()
    );
    let answered = echo_once_back(&mut rig, &session, "mcp__fake__echo", "back", 40).await;
    let ours: Vec<String> = daemon_log
        .lines()
        .into_iter()
        .filter(|l| l.contains("mcp"))
        .collect();
    assert_eq!(answered.as_deref(), Some("back"), "{ours:#?}");
    let starts = events(&log)
        .iter()
        .filter(|e| e["event"] == "start")
        .count();
    assert_eq!(starts, 2, "restarted once: {:?}", events(&log));
}

/// A command that is not there, or a server that exits before answering,
/// is said as such in `daemon.status` and the log — and no log line of
/// SCV's about MCP names a Rust type or dumps a message.
#[tokio::test]
async fn a_missing_command_or_an_early_exit_is_said_as_such() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let quits = stdio_server(
        "quits",
        &python,
        &[&script("stubborn_server.py"), "exit"],
        &dir.path().join("unused.jsonl"),
        "",
    );
    let config = format!(
        "[mcp_servers.missing]\ncommand = \"/nonexistent\"\n[mcp_servers.unknown]\ncommand = \"scv-no-such-command\"\n{quits}"
    );
    let mut rig = DaemonRig::start(&config).await;
    let missing = rig.wait_state("missing", "failed").await;
    assert_eq!(
        missing["error"],
        "cannot start `/nonexistent`: no such file or directory"
    );
    let unknown = rig.wait_state("unknown", "failed").await;
    assert_eq!(
        unknown["error"],
        "cannot start `scv-no-such-command`: not found in the server's PATH"
    );
    let quits = rig.wait_state("quits", "failed").await;
    assert_eq!(
        quits["error"],
        "the server exited before answering initialize (its stderr is in the log)"
    );
    assert!(
        rig.log
            .wait_for("cannot start `/nonexistent`: no such file or directory")
            .await,
        "{:?}",
        rig.log.lines()
    );
    assert!(
        rig.log.wait_for("no configuration, giving up").await,
        "{:?}",
        rig.log.lines()
    );
    let ours: Vec<String> = rig
        .log
        .lines()
        .into_iter()
        .filter(|line| line.contains("scv::mcp"))
        .collect();
    for line in &ours {
        for type_talk in ["Transport [", "rmcp::", "Some(", "os error"] {
            assert!(!line.contains(type_talk), "{line}");
        }
    }
    let _ = &rig.mock;
}

/// A tool whose own name is another tool's mapped name (`dotted.name` is
/// offered as `mcp__fake__dotted_name_HASH`; the server then adds a tool
/// called `dotted_name_HASH`): each is offered under a name of its own,
/// the first keeps its name, and a call reaches the tool it named. Server
/// names that could make two servers' names meet are refused.
#[tokio::test]
async fn a_tool_named_like_another_tools_mapped_name_gets_a_name_of_its_own() {
    let Some(Fake {
        mut rig,
        session,
        log: _log,
        _dir,
    }) = Fake::start("auto_approve = true").await
    else {
        return;
    };
    let tools = ready(&mut rig, &session, "mcp__fake__dotted_name_").await;
    let dotted = tools
        .iter()
        .find(|t| t.starts_with("mcp__fake__dotted_name_"))
        .unwrap()
        .clone();
    let twin = dotted.strip_prefix("mcp__fake__").unwrap().to_string();
    let results = call(
        &mut rig,
        &session,
        &[("add", "mcp__fake__add_tool", json!({"name": twin}))],
    )
    .await;
    assert!(results[0].1, "{:?}", results[0]);
    let renamed = format!("{dotted}_2");
    let tools = ready(&mut rig, &session, &renamed).await;
    let mut unique = tools.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), tools.len(), "a name offered twice: {tools:?}");
    assert!(tools.contains(&dotted), "{tools:?}");
    let results = call(
        &mut rig,
        &session,
        &[
            ("old", &dotted, json!({"x": 7})),
            ("new", &renamed, json!({"x": 8})),
        ],
    )
    .await;
    assert_eq!(results[0], ("old".into(), true, "dotted 7".into()));
    assert_eq!(results[1], ("new".into(), true, "added tool got 8".into()));

    let workspace = rig.home.workspace();
    rig.server
        .send(
            json!({"type":"session.start","request_id":"bad","cwd":workspace,
            "mcp_servers": {"x__y": {"command": "x"}}}),
        )
        .await;
    let err = rig.server.expect_error("invalid_request", "bad").await;
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("mcp_servers.x__y") && message.contains("`__`"),
        "{err}"
    );
}

/// A `PreToolUse` hook matches an MCP tool by its `mcp__SERVER__TOOL` name
/// and blocks it: hooks sit on the one path every call takes.
#[tokio::test]
async fn a_hook_blocks_an_mcp_call_by_its_claude_code_name() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (table, log) = fake(&python, dir.path(), "auto_approve = true");
    let mut rig = Rig::new(&table).await;
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "mcp__fake__.*",
        "hooks": [{"type": "command", "command": "echo 'no MCP today' >&2; exit 2"}]}]}});
    std::fs::create_dir_all(rig.home.workspace().join(".scv")).unwrap();
    std::fs::write(
        rig.home.workspace().join(".scv/hooks.json"),
        hooks.to_string(),
    )
    .unwrap();
    rig.home.trust_workspace();
    let session = rig.session().await;
    ready(&mut rig, &session, "mcp__fake__echo").await;
    rig.mock.push(Reply::tool_calls(&[(
        "m1",
        "mcp__fake__echo",
        json!({"text": "zebra-42"}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "echo").await;
    let completed = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    assert_eq!(completed["success"], false);
    let output = completed["output"].as_str().unwrap();
    assert!(output.contains("no MCP today"), "{output}");
    assert!(!output.contains("zebra-42"), "the call ran: {output}");
    let _ = log;
}
