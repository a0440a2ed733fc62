#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The daemon over a real Unix socket in a temporary `$SCV_HOME`: files and
//! permissions, one daemon per socket, stale sockets, independent
//! connections, backpressure, SIGTERM, daemon.control and the client
//! helpers.

mod common;
use common::*;
use scv_protocol::DaemonCommand;
use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

struct Daemon {
    mock: MockProvider,
    home: TestHome,
    socket: PathBuf,
    child: Child,
    log: DaemonLog,
}

impl Daemon {
    async fn start(extra: &str) -> Daemon {
        let mock = MockProvider::start().await;
        let home = TestHome::new(&mock.base_url(), extra);
        // The socket's directory does not exist yet: the daemon creates it.
        let socket = home.path().join("run").join("server.sock");
        let log = DaemonLog::default();
        let child = spawn_daemon(BIN, home.path(), &socket, &log);
        wait_for_socket(&socket).await;
        Daemon {
            mock,
            home,
            socket,
            child,
            log,
        }
    }

    async fn client(&self) -> TestServer {
        let mut client = TestServer::connect(&self.socket).await;
        client.initialize().await;
        client
    }

    /// A client that asked for capability `daemon_status` (the extension
    /// fields of `daemon.status`).
    async fn extended_client(&self) -> TestServer {
        let mut client = TestServer::connect(&self.socket).await;
        client
            .send(
                json!({"type": "initialize", "request_id": "init", "protocol_version": 2,
                "capabilities": {"daemon_status": true}}),
            )
            .await;
        let initialized = client.expect("initialized").await;
        assert_eq!(initialized["capabilities"]["daemon_status"], true);
        client
    }

    fn sigterm(&self) {
        let pid = self.child.id().unwrap() as i32;
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }

    async fn exit_status(&mut self) -> std::process::ExitStatus {
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("daemon did not exit")
            .unwrap()
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn the_daemon_creates_a_private_home_and_socket_and_reports_status() {
    let mut daemon = Daemon::start("").await;
    assert_eq!(mode(daemon.socket.parent().unwrap()), 0o700);
    assert_eq!(mode(&daemon.socket), 0o600);
    let mut client = daemon.client().await;
    client
        .send(json!({"type":"daemon.control","request_id":"d1","command":{"action":"status"}}))
        .await;
    let status = client.expect("daemon.status").await;
    assert_eq!(
        status,
        json!({"type":"daemon.status","request_id":"d1","status":{
            "version": env!("CARGO_PKG_VERSION"), "pid": daemon.child.id().unwrap(), "components": []}})
    );
    client
        .send(json!({"type":"daemon.control","request_id":"d2","command":{"action":"reload"}}))
        .await;
    assert_eq!(client.expect("daemon.status").await["request_id"], "d2");
    client
        .send(json!({"type":"daemon.control","request_id":"d3","command":{"action":"explode"}}))
        .await;
    client.expect_error("invalid_request", "d3").await;
    // Sessions work over the socket too.
    let workspace = daemon.home.workspace();
    let session = client.start_session(&workspace).await;
    daemon.mock.push(Reply::text(["over the socket"]));
    client.start_turn(&session, "t", "hi").await;
    assert_eq!(
        client.until_terminal().await.last().unwrap()["type"],
        "turn.completed"
    );

    daemon.sigterm();
    assert!(daemon.exit_status().await.success());
    assert!(!daemon.socket.exists(), "the socket is removed on exit");
}

#[tokio::test]
async fn a_second_daemon_on_the_same_socket_exits_and_leaves_the_first_alone() {
    let mut daemon = Daemon::start("").await;
    let output = Command::new(BIN)
        .arg("--socket")
        .arg(&daemon.socket)
        .env("SCV_HOME", daemon.home.path())
        .env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(std::path::Path::new(&daemon.home.path())),
        )
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("already serving"), "{stderr}");
    assert!(
        stderr.contains(&format!("pid {}", daemon.child.id().unwrap())),
        "{stderr}"
    );
    let mut client = daemon.client().await;
    client
        .send(json!({"type":"daemon.control","request_id":"s","command":{"action":"status"}}))
        .await;
    client.expect("daemon.status").await;
    daemon.sigterm();
    assert!(daemon.exit_status().await.success());
}

#[tokio::test]
async fn a_stale_socket_file_is_replaced() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let socket = home.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists() && std::os::unix::net::UnixStream::connect(&socket).is_err());
    let mut child = spawn_daemon(BIN, home.path(), &socket, &DaemonLog::default());
    wait_for_socket(&socket).await;
    let mut client = TestServer::connect(&socket).await;
    client.initialize().await;
    unsafe { libc::kill(child.id().unwrap() as i32, libc::SIGTERM) };
    assert!(child.wait().await.unwrap().success());
}

#[tokio::test]
async fn one_clients_eof_cancels_only_its_own_turn() {
    let daemon = Daemon::start("").await;
    let workspace = daemon.home.workspace();
    let mut a = daemon.client().await;
    let mut b = daemon.client().await;
    let session_a = a.start_session(&workspace).await;
    let session_b = b.start_session(&workspace).await;

    daemon
        .mock
        .push(Reply::text(["a1", "a2", "a3"]).then(2, Ending::Stall));
    a.start_turn(&session_a, "ta", "stall").await;
    a.until("assistant.delta").await;
    // B cannot see A's session: sessions belong to their connection.
    b.start_turn(&session_a, "x", "hijack").await;
    b.expect_error("session_not_found", "x").await;

    a.close_stdin().await;
    assert_eq!(
        a.until_terminal().await.last().unwrap()["type"],
        "turn.cancelled"
    );
    assert_eq!(a.next_opt().await, None, "A's connection is closed");
    assert!(daemon.mock.wait_dropped(1).await);

    daemon.mock.push(Reply::text(["b fine"]));
    b.start_turn(&session_b, "tb", "hello").await;
    assert_eq!(
        b.until_terminal().await.last().unwrap()["type"],
        "turn.completed"
    );
    let mut c = daemon.client().await;
    c.start_session(&workspace).await;
}

#[tokio::test]
async fn a_client_that_stops_reading_is_cut_off_and_others_carry_on() {
    let daemon = Daemon::start("").await;
    let workspace = daemon.home.workspace();
    let mut slow = daemon.client().await;
    let mut fast = daemon.client().await;
    let slow_session = slow.start_session(&workspace).await;
    let fast_session = fast.start_session(&workspace).await;

    // 20,000 deltas: far more than the socket buffer and the writer queue.
    let flood: Vec<String> = (0..20_000).map(|i| format!("w{i} ")).collect();
    daemon.mock.push(Reply::text(&flood).batched(200));
    slow.start_turn(&slow_session, "flood", "flood me").await;
    // The slow client never reads. The fast one completes turns meanwhile.
    for i in 0..3 {
        daemon
            .mock
            .push_matching(&format!("fast {i}"), Reply::text(["quick"]));
        fast.start_turn(&fast_session, "f", &format!("fast {i}"))
            .await;
        let events = fast.until_terminal().await;
        assert_eq!(events.last().unwrap()["type"], "turn.completed");
        assert_seq_contiguous(&events);
    }
    // After the 3-second backpressure timeout the slow connection is
    // cleaned up (the daemon says so); what was buffered then drains and
    // the connection is closed.
    assert!(
        daemon.log.wait_for("the client stopped reading").await,
        "{:?}",
        daemon.log.lines()
    );
    let mut delivered = 0;
    while let Some(event) = slow.next_opt().await {
        delivered += 1;
        assert_ne!(
            event["type"], "turn.completed",
            "after {delivered} events: {event}"
        );
    }
    assert!(
        delivered < 20_000,
        "the flood was cut off ({delivered} events)"
    );
    let mut again = daemon.client().await;
    again.start_session(&workspace).await;
}

#[tokio::test]
async fn sigterm_during_a_tool_call_stops_everything_and_exits_zero() {
    let mut daemon = Daemon::start("auto_approve = [\"read\", \"process\"]").await;
    let workspace = daemon.home.workspace();
    let pidfile = workspace.join("sleep.pid");

    let mut runner = daemon.client().await;
    let session = runner.start_session(&workspace).await;
    // One process left in bash's group, one that escaped it.
    let escaped = workspace.join("escaped.pid");
    let command = format!(
        "sleep 300 & echo $! > {}; setsid sleep 300 & echo $! > {}; wait",
        pidfile.display(),
        escaped.display()
    );
    daemon.mock.push(Reply::tool_calls(&[(
        "c",
        "bash",
        json!({"command": command}),
    )]));
    runner.start_turn(&session, "t", "sleep").await;
    runner.until("tool.started").await;

    // A second client stuck on a silent provider, a third not reading.
    let mut stuck = daemon.client().await;
    let stuck_session = stuck.start_session(&workspace).await;
    daemon
        .mock
        .push_matching("stuck please", Reply::text(["x"]).then(1, Ending::Stall));
    stuck.start_turn(&stuck_session, "s", "stuck please").await;
    stuck.expect("turn.started").await;
    let mut deaf = daemon.client().await;
    let deaf_session = deaf.start_session(&workspace).await;
    let flood: Vec<String> = (0..20_000).map(|i| format!("d{i} ")).collect();
    daemon
        .mock
        .push_matching("deaf please", Reply::text(&flood).batched(200));
    deaf.start_turn(&deaf_session, "d", "deaf please").await;

    let mut pid = None;
    for _ in 0..400 {
        if let Ok(text) = std::fs::read_to_string(&pidfile) {
            pid = text.trim().parse::<i32>().ok();
            if pid.is_some() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let pid = pid.expect("sleep started");
    assert!(scv_test_support::procfs::is_running(pid));

    let escaped = read_pid(&escaped).await;
    daemon.sigterm();
    assert!(daemon.exit_status().await.success());
    for pid in [pid, escaped] {
        assert!(
            !scv_test_support::procfs::is_running(pid),
            "tool process {pid} outlived the daemon"
        );
    }
    assert!(!daemon.socket.exists());
    assert_eq!(
        runner.until_terminal().await.last().unwrap()["type"],
        "turn.cancelled"
    );
}

#[tokio::test]
async fn the_control_helper_reports_status_and_bounds_its_wait() {
    let mut daemon = Daemon::start("").await;
    let status = scv_client::control(&daemon.socket, DaemonCommand::Status)
        .await
        .unwrap();
    assert_eq!(status.pid, daemon.child.id().unwrap());
    assert!(status.components.is_empty());
    let refused = scv_client::control(
        &daemon.socket,
        DaemonCommand::ClawbotLogout {
            account: "../escape".into(),
        },
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            refused,
            scv_client::ControlError::Refused {
                code: scv_protocol::ErrorCode::InvalidRequest,
                ..
            }
        ),
        "{refused}"
    );
    daemon.sigterm();
    daemon.exit_status().await;

    // A listener that accepts and never answers: the outcome is unknown.
    let silent = daemon.home.path().join("silent.sock");
    let listener = tokio::net::UnixListener::bind(&silent).unwrap();
    let _hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let err = scv_client::control::control_within(
        &silent,
        DaemonCommand::Reload,
        Duration::from_millis(300),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, scv_client::ControlError::UnknownOutcome(_)));
    assert!(
        err.to_string().contains("query status before retrying"),
        "{err}"
    );

    let missing = daemon.home.path().join("nobody.sock");
    let err = scv_client::control(&missing, DaemonCommand::Status)
        .await
        .unwrap_err();
    assert!(matches!(err, scv_client::ControlError::NotRunning(_)));
}

#[tokio::test]
async fn ensure_daemon_starts_it_in_the_background_with_a_log() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let socket = home.path().join("server.sock");
    let bin = Path::new(BIN);
    let stream = scv_client::daemon::ensure_daemon_with(bin, home.path(), &socket)
        .await
        .unwrap();
    drop(stream);
    let status = scv_client::control(&socket, DaemonCommand::Status)
        .await
        .unwrap();
    // A second call connects to the same daemon.
    drop(
        scv_client::daemon::ensure_daemon_with(bin, home.path(), &socket)
            .await
            .unwrap(),
    );
    let again = scv_client::control(&socket, DaemonCommand::Status)
        .await
        .unwrap();
    assert_eq!(status.pid, again.pid);
    let log = std::fs::read_to_string(home.path().join("server.log")).unwrap();
    assert!(log.contains("listening on"), "{log}");
    unsafe { libc::kill(status.pid as i32, libc::SIGTERM) };
    for _ in 0..400 {
        if !socket.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(!socket.exists());
}

#[tokio::test]
async fn an_autostarted_daemon_makes_a_private_home_and_log() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("fresh").join("home");
    let socket = home.join("server.sock");
    let stream = scv_client::daemon::ensure_daemon_with(Path::new(BIN), &home, &socket)
        .await
        .unwrap();
    drop(stream);
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(&home.join("server.log")), 0o600);
    let status = scv_client::control(&socket, DaemonCommand::Status)
        .await
        .unwrap();
    unsafe { libc::kill(status.pid as i32, libc::SIGTERM) };
    assert!(scv_test_support::eventually(|| !socket.exists()).await);
}

#[tokio::test]
async fn a_home_others_can_write_is_refused_by_server_and_client() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let socket = home.path().join("server.sock");
    for args in [vec!["--socket", socket.to_str().unwrap()], vec!["--stdio"]] {
        let out = Command::new(BIN)
            .args(&args)
            .env("SCV_HOME", home.path())
            .env(
                "CLAUDE_CONFIG_DIR",
                scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
            )
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("others can write to it (mode 777)"),
            "{stderr}"
        );
    }
    let err = scv_client::daemon::ensure_daemon_with(Path::new(BIN), home.path(), &socket)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("others can write"), "{err}");
    assert!(!socket.exists());
}

#[tokio::test]
async fn a_regular_file_at_the_socket_path_is_never_deleted() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let path = home.path().join("notes.txt");
    std::fs::write(&path, "precious").unwrap();
    let out = Command::new(BIN)
        .arg("--socket")
        .arg(&path)
        .env("SCV_HOME", home.path())
        .env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
        )
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("exists and is not a socket"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
}

#[tokio::test]
async fn a_connection_that_never_initializes_is_closed_and_others_carry_on() {
    let mut daemon = Daemon::start("initialize_timeout_ms = 300").await;
    let mut working = daemon.client().await;
    let mut silent = TestServer::connect(&daemon.socket).await;
    let event = silent.next().await;
    assert_eq!(event["type"], "error");
    assert_eq!(event["code"], "not_initialized");
    assert_eq!(event["fatal"], true);
    assert!(
        silent.next_opt().await.is_none(),
        "then the connection closes"
    );
    let session = working.start_session(&daemon.home.workspace()).await;
    daemon.mock.push(Reply::text(["fine"]));
    working.start_turn(&session, "t", "hi").await;
    let events = working.until_terminal().await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    daemon.sigterm();
    assert!(daemon.exit_status().await.success());
}

#[tokio::test]
async fn connections_over_the_limit_get_a_clear_error() {
    let mut daemon = Daemon::start("max_connections = 3").await;
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(daemon.client().await);
    }
    let mut over = TestServer::connect(&daemon.socket).await;
    let event = over.next().await;
    assert_eq!(event["type"], "error");
    assert_eq!(event["code"], "internal_error");
    assert_eq!(event["fatal"], true);
    assert!(
        event["message"]
            .as_str()
            .unwrap()
            .contains("serving 3 connections, its limit"),
        "{event}"
    );
    assert!(over.next_opt().await.is_none());
    // The others are unaffected, and a freed place can be taken.
    let session = clients[0].start_session(&daemon.home.workspace()).await;
    daemon.mock.push(Reply::text(["fine"]));
    clients[0].start_turn(&session, "t", "hi").await;
    assert_eq!(
        clients[0].until_terminal().await.last().unwrap()["type"],
        "turn.completed"
    );
    drop(clients.pop());
    let mut again = None;
    for _ in 0..200 {
        let mut client = TestServer::connect(&daemon.socket).await;
        client
            .send(json!({"type":"initialize","request_id":"i","protocol_version":2}))
            .await;
        if client.next().await["type"] == "initialized" {
            again = Some(client);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(again.is_some(), "a freed place was never given out");
    daemon.sigterm();
    assert!(daemon.exit_status().await.success());
}

/// The daemon's `config.toml` is live: an edit reaches the next
/// `session.start` (no reload needed), a running session keeps what it
/// started with, `reload` says what changed and what waits for a restart,
/// and an edit that does not parse keeps the last good configuration and
/// is told to every client that starts a session, with file and line.
#[tokio::test]
async fn an_edited_config_reaches_new_sessions_and_running_ones_keep_theirs() {
    let daemon = Daemon::start("").await;
    let config = daemon.home.path().join("config.toml");
    let workspace = daemon.home.workspace();
    let mut old = daemon.extended_client().await;
    let before = old.start_session(&workspace).await;

    std::fs::write(
        &config,
        format!(
            "model = \"edited-model\"\nbase_url = \"{}\"\nauto_aprove = [\"read\"]\n",
            daemon.mock.base_url()
        ),
    )
    .unwrap();
    let mut new = daemon.extended_client().await;
    new.send(json!({"type":"session.start","request_id":"s","cwd": workspace}))
        .await;
    let started = new.expect("session.started").await;
    new.expect("queue.snapshot").await;
    assert_eq!(started["model"], "edited-model");
    let warnings = started["config_warnings"].to_string();
    assert!(
        warnings.contains(
            "config.toml: line 3: unknown key `auto_aprove` ignored (did you mean `auto_approve`?)"
        ),
        "{warnings}"
    );
    let after = started["session_id"].as_str().unwrap().to_string();
    daemon.mock.push(Reply::text(["new"]));
    new.start_turn(&after, "t1", "hi").await;
    new.until_terminal().await;
    // The session started before the edit keeps its model.
    daemon.mock.push(Reply::text(["old"]));
    old.start_turn(&before, "t2", "hi").await;
    old.until_terminal().await;
    let models: Vec<Value> = daemon
        .mock
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, [json!("edited-model"), json!("mock-model")]);

    // Reload names what changed since the start (the first reload),
    // although new sessions took each edit already.
    std::fs::write(
        &config,
        format!(
            "model = \"edited-model\"\nbase_url = \"{}\"\nmax_steps = 9\nworkspace = \"/\"\n",
            daemon.mock.base_url()
        ),
    )
    .unwrap();
    new.send(json!({"type":"daemon.control","request_id":"r1","command":{"action":"reload"}}))
        .await;
    let status = new.expect("daemon.status").await;
    let state = &status["status"]["config"];
    assert_eq!(state["changed"], json!(["max_steps", "model"]));
    assert_eq!(state["needs_restart"], json!(["workspace"]));
    assert!(state.get("error").is_none(), "{state}");
    assert_eq!(state["warnings"], json!([]));

    // A broken edit: the last good configuration runs on, and says why.
    std::fs::write(&config, "model = \"broken\"\nmax_steps = [\n").unwrap();
    new.send(json!({"type":"daemon.control","request_id":"r2","command":{"action":"reload"}}))
        .await;
    let status = new.expect("daemon.status").await;
    let error = status["status"]["config"]["error"].as_str().unwrap();
    assert!(
        error.contains("config.toml: line 3: invalid array"),
        "{error}"
    );
    new.send(json!({"type":"daemon.control","request_id":"s1","command":{"action":"status"}}))
        .await;
    let status = new.expect("daemon.status").await;
    assert!(status["status"]["config"]["error"].is_string(), "{status}");
    let mut third = daemon.client().await;
    third
        .send(json!({"type":"session.start","request_id":"s","cwd": workspace}))
        .await;
    let started = third.expect("session.started").await;
    assert_eq!(started["model"], "edited-model");
    let warnings = started["config_warnings"][0].as_str().unwrap();
    assert!(
        warnings.contains("config.toml: line 3: invalid array"),
        "{warnings}"
    );
    assert!(
        warnings.contains("runs on with the configuration it had"),
        "{warnings}"
    );
    // The old session is untouched by all of it.
    daemon.mock.push(Reply::text(["still"]));
    old.start_turn(&before, "t3", "hi").await;
    assert_eq!(
        old.until_terminal().await.last().unwrap()["type"],
        "turn.completed"
    );
}

/// `--stdio` reads an edited config.toml at its next `session.start` too.
#[tokio::test]
async fn a_stdio_server_takes_an_edit_at_its_next_session() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    server.start_session(&home.workspace()).await;
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "model = \"second-model\"\nbase_url = \"{}\"\n",
            mock.base_url()
        ),
    )
    .unwrap();
    server
        .send(json!({"type":"session.start","request_id":"s2","cwd": home.workspace()}))
        .await;
    assert_eq!(
        server.expect("session.started").await["model"],
        "second-model"
    );
}

/// The protocol document: `status` "contains exactly `version`, `pid`,
/// and `components`". With a configuration that has a warning and a
/// broken edit (both of which `config` would report), a client that asked
/// for nothing gets exactly those three keys from `status` and `reload`;
/// one that asked for `daemon_status` gets `config` as well.
#[tokio::test]
async fn daemon_status_is_exactly_the_documents_for_a_client_that_asked_for_nothing() {
    let mut daemon = Daemon::start("auto_aprove = [\"read\"]\n").await;
    let config = daemon.home.path().join("config.toml");
    let mut plain = daemon.client().await;
    let mut extended = daemon.extended_client().await;
    let keys = |status: &Value| -> Vec<String> {
        let mut keys: Vec<String> = status["status"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    };
    for action in ["status", "reload"] {
        plain
            .send(json!({"type":"daemon.control","request_id":"p","command":{"action":action}}))
            .await;
        let status = plain.expect("daemon.status").await;
        assert_eq!(keys(&status), ["components", "pid", "version"], "{status}");
        extended
            .send(json!({"type":"daemon.control","request_id":"e","command":{"action":action}}))
            .await;
        let status = extended.expect("daemon.status").await;
        assert_eq!(
            keys(&status),
            ["components", "config", "pid", "version"],
            "{status}"
        );
        assert!(
            status["status"]["config"]["warnings"]
                .to_string()
                .contains("auto_aprove"),
            "{status}"
        );
    }
    std::fs::write(&config, "max_steps = [\n").unwrap();
    plain
        .send(json!({"type":"daemon.control","request_id":"p","command":{"action":"reload"}}))
        .await;
    let status = plain.expect("daemon.status").await;
    assert_eq!(keys(&status), ["components", "pid", "version"], "{status}");
    daemon.sigterm();
    assert!(daemon.exit_status().await.success());
}
