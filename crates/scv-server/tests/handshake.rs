#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The handshake and request-level errors over stdio: exact codes, request
//! ids, and that the connection carries on after every non-fatal error.

mod common;
use common::*;

#[tokio::test]
async fn initialize_reports_version_and_server() {
    let home = TestHome::new("http://127.0.0.1:9/v1", "");
    let mut server = TestServer::spawn(BIN, home.path());
    server
        .send(json!({"type":"initialize","request_id":"1","protocol_version":2,"client":{"name":"scv-tui","version":"0.1.19"}}))
        .await;
    let event = server.next().await;
    assert_eq!(
        event,
        json!({"type":"initialized","request_id":"1","protocol_version":2,
               "server":{"name":"scv-server","version":env!("CARGO_PKG_VERSION")}})
    );
    assert!(server.wait().await.success());
}

#[tokio::test]
async fn messages_before_initialize_are_refused_and_the_connection_goes_on() {
    let home = TestHome::new("http://127.0.0.1:9/v1", "");
    let mut server = TestServer::spawn(BIN, home.path());
    server
        .send(json!({"type":"session.start","request_id":"a","cwd":"/"}))
        .await;
    let event = server.expect("error").await;
    assert_eq!(event["code"], "not_initialized");
    assert_eq!(event["request_id"], "a");
    assert_eq!(event["fatal"], false);
    server.initialize().await;
}

#[tokio::test]
async fn version_mismatch_is_fatal_and_stdio_exits_non_zero() {
    let home = TestHome::new("http://127.0.0.1:9/v1", "");
    let mut server = TestServer::spawn(BIN, home.path());
    server
        .send(json!({"type":"initialize","request_id":"v","protocol_version":3}))
        .await;
    let event = server.expect("error").await;
    assert_eq!(event["code"], "version_mismatch");
    assert_eq!(event["fatal"], true);
    assert_eq!(event["request_id"], "v");
    assert_eq!(
        server.next_opt().await,
        None,
        "the server closes the stream"
    );
    let status = server.wait().await;
    assert!(!status.success(), "{status:?}");
}

#[tokio::test]
async fn malformed_and_oversized_lines_are_errors_and_reading_goes_on() {
    let home = TestHome::new("http://127.0.0.1:9/v1", "");
    let mut server = TestServer::spawn(BIN, home.path());
    server.send_raw(b"{this is not json\n").await;
    let event = server.expect("error").await;
    assert_eq!(event["code"], "invalid_json");
    assert_eq!(event["fatal"], false);

    let mut big =
        br#"{"type":"initialize","request_id":"big","protocol_version":2,"pad":""#.to_vec();
    big.extend(std::iter::repeat_n(b'x', 1024 * 1024));
    big.extend_from_slice(b"\"}\n");
    server.send_raw(&big).await;
    let event = server.expect("error").await;
    assert_eq!(event["code"], "invalid_request");
    assert_eq!(event["fatal"], false);
    assert!(
        event["message"].as_str().unwrap().contains("1048576"),
        "{event}"
    );

    server.initialize().await;
    server.send_raw(b"[1,2,3]\n").await;
    assert_eq!(server.expect("error").await["code"], "invalid_request");
    assert!(server.wait().await.success());
}

#[tokio::test]
async fn unknown_types_and_bad_fields_are_invalid_requests_with_their_ids() {
    let mut rig = Rig::new("").await;
    rig.server
        .send(json!({"type":"session.teleport","request_id":"x1"}))
        .await;
    let event = rig.server.expect_error("invalid_request", "x1").await;
    assert!(event["message"]
        .as_str()
        .unwrap()
        .contains("session.teleport"));

    rig.server
        .send(json!({"type":"turn.start","request_id":"x2","session_id":"s"}))
        .await;
    rig.server.expect_error("invalid_request", "x2").await;

    rig.server
        .send(json!({"type":"initialize","request_id":"x3","protocol_version":2}))
        .await;
    rig.server.expect_error("invalid_request", "x3").await;
    // Still serving.
    rig.session().await;
}

#[tokio::test]
async fn daemon_control_is_unsupported_on_stdio() {
    let mut rig = Rig::new("").await;
    rig.server
        .send(json!({"type":"daemon.control","request_id":"d1","command":{"action":"status"}}))
        .await;
    let event = rig.server.expect("error").await;
    assert_eq!(event["code"], "unsupported");
    assert_eq!(event["request_id"], "d1");
    assert!(event.get("session_id").is_none() && event.get("seq").is_none());
}

#[tokio::test]
async fn malformed_config_is_a_startup_error_naming_file_and_line() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "model = \"m\"\nmax_steps = \"lots\"\n",
    )
    .unwrap();
    let output = std::process::Command::new(BIN)
        .arg("--stdio")
        .env("SCV_HOME", home.path())
        .env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
        )
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let file = home.path().join("config.toml");
    assert!(
        stderr.contains(&format!("{}: line 2", file.display())),
        "{stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "stdout carries protocol frames only"
    );
}

/// Every request of an extension a connection did not ask for is refused
/// with `invalid_request` naming the capability it needs (one table on
/// the server), and the connection and its session go on.
#[tokio::test]
async fn extension_requests_name_the_capability_they_need() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let s = session.as_str();
    let cases = [
        (json!({"type": "session.list"}), "sessions"),
        (
            json!({"type": "session.resume", "session_id": s}),
            "sessions",
        ),
        (json!({"type": "session.fork", "session_id": s}), "sessions"),
        (
            json!({"type": "session.delete", "session_id": s}),
            "sessions",
        ),
        (
            json!({"type": "session.close", "session_id": s}),
            "sessions",
        ),
        (json!({"type": "session.detach", "session_id": s}), "detach"),
        (json!({"type": "session.attach", "session_id": s}), "detach"),
        (
            json!({"type": "checkpoint.list", "session_id": s}),
            "checkpoints",
        ),
        (
            json!({"type": "checkpoint.diff", "session_id": s, "checkpoint_id": "c"}),
            "checkpoints",
        ),
        (
            json!({"type": "checkpoint.restore", "session_id": s, "checkpoint_id": "c"}),
            "checkpoints",
        ),
        (json!({"type": "workspace.trust", "session_id": s}), "trust"),
        (
            json!({"type": "permissions.list", "session_id": s}),
            "permissions",
        ),
        (
            json!({"type": "permissions.keep", "session_id": s, "rule": "Bash(ls)", "scope": "user"}),
            "permissions",
        ),
        (
            json!({"type": "permissions.remove", "session_id": s, "rule": "Bash(ls)", "scope": "user"}),
            "permissions",
        ),
        (
            json!({"type": "elicitation.resolve", "session_id": s, "elicitation_id": "e", "action": "decline"}),
            "elicitation",
        ),
        (
            json!({"type": "process.list", "session_id": s}),
            "processes",
        ),
        (
            json!({"type": "process.kill", "session_id": s, "process_id": "bg1"}),
            "processes",
        ),
        (
            json!({"type": "process.peek", "session_id": s, "process_id": "bg1"}),
            "processes",
        ),
    ];
    for (n, (mut message, capability)) in cases.into_iter().enumerate() {
        let rid = format!("r{n}");
        let name = message["type"].as_str().unwrap().to_string();
        message["request_id"] = json!(rid);
        rig.server.send(message).await;
        let error = rig.server.expect_error("invalid_request", &rid).await;
        assert_eq!(
            error["message"],
            format!("{name} needs capability `{capability}` (ask for it in initialize)")
        );
    }
    rig.server
        .send(
            json!({"type": "session.configure", "request_id": "b", "session_id": s,
            "max_session_cost_usd": 1.0}),
        )
        .await;
    let error = rig.server.expect_error("invalid_request", "b").await;
    assert_eq!(
        error["message"],
        "max_session_cost_usd needs capability `usage` (ask for it in initialize)"
    );
    rig.mock.push(Reply::text(["still here"]));
    let events = rig.turn(&session, "hi").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}
