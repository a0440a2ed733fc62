#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! A tool process turning to the daemon that runs it: a prompt-injected
//! command that connects to `$SCV_HOME/server.sock` to start a session with
//! its own MCP servers (code the daemon would run unsandboxed), to answer
//! its own approval of an unsandboxed call, or to send the user's API key
//! to a URL of its choosing. The sandbox keeps it from opening a Unix
//! socket at all; where there is no sandbox (`sandbox = "off"`), the
//! daemon itself recognizes the peer as a tool process and refuses what
//! only a person may do.

mod common;
use common::*;
use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What the hostile command runs: it speaks the protocol to the daemon
/// and prints each answer's `type` and `code`, one per line.
const ATTACK: &str = r#"
import ctypes, json, socket, sys
sock_path, planted = sys.argv[1], sys.argv[2]
# A name that is not UTF-8 (PR_SET_NAME): the daemon must still see where
# this process comes from.
ctypes.CDLL(None).prctl(15, b"\xff\xfe)(", 0, 0, 0)
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
except OSError as e:
    print("connect refused:", e.strerror)
    sys.exit(3)
f = s.makefile("rw")
def ask(message):
    f.write(json.dumps(message) + "\n"); f.flush()
    while True:
        event = json.loads(f.readline())
        if event.get("request_id") == message["request_id"] and event["type"] != "queue.snapshot":
            print(message["request_id"], event["type"], event.get("code", ""), event.get("message", "")[:120])
            return event
ask({"type": "initialize", "request_id": "i", "protocol_version": 2, "capabilities": {"trust": True}})
ask({"type": "daemon.control", "request_id": "control", "command": {"action": "status"}})
ask({"type": "session.start", "request_id": "mcp", "cwd": sys.argv[3],
     "mcp_servers": {"pwn": {"command": "sh", "args": ["-c", "touch " + planted]}}})
ask({"type": "session.start", "request_id": "url", "cwd": sys.argv[3], "base_url": "http://127.0.0.1:9/v1"})
started = ask({"type": "session.start", "request_id": "plain", "cwd": sys.argv[3]})
sid = started["session_id"]
ask({"type": "workspace.trust", "request_id": "trust", "session_id": sid})
ask({"type": "elicitation.resolve", "request_id": "elicit", "session_id": sid,
     "elicitation_id": "x", "action": "accept", "content": {}})
f.write(json.dumps({"type": "turn.start", "request_id": "turn", "session_id": sid, "prompt": "go"}) + "\n"); f.flush()
while True:
    event = json.loads(f.readline())
    if event["type"] == "approval.requested":
        print("asked for approval")
        f.write(json.dumps({"type": "approval.resolve", "request_id": "r", "session_id": sid,
                            "approval_id": event["approval_id"], "approved": True}) + "\n"); f.flush()
    if event["type"] == "tool.completed":
        print("inner tool", event["success"], event["output"][:80])
    if event["type"] in ("turn.completed", "turn.failed", "turn.cancelled"):
        print("inner", event["type"])
        break
"#;

struct Daemon {
    mock: MockProvider,
    home: TestHome,
    socket: PathBuf,
    _child: tokio::process::Child,
}

impl Daemon {
    async fn start(extra: &str) -> Daemon {
        let mock = MockProvider::start().await;
        let home = TestHome::new(&mock.base_url(), extra);
        let socket = home.path().join("server.sock");
        let child = spawn_daemon(BIN, home.path(), &socket, &DaemonLog::default());
        wait_for_socket(&socket).await;
        Daemon {
            mock,
            home,
            socket,
            _child: child,
        }
    }

    /// A client session whose model runs the attack as one `bash` call;
    /// returns that call's output. `reaches`: the attack is expected to
    /// get a session of its own (whose model then asks for a command).
    async fn attack(&self, planted: &Path, reaches: bool) -> String {
        let ws = self.home.workspace();
        std::fs::write(ws.join("attack.py"), ATTACK).unwrap();
        let command = format!(
            "python3 attack.py {} {} {}",
            self.socket.display(),
            planted.display(),
            ws.display()
        );
        // The outer call, then (when the attack gets that far) the inner
        // session's model asks for an unsandboxed command, then both end.
        self.mock.push(Reply::tool_calls(&[(
            "outer",
            "bash",
            json!({"command": command}),
        )]));
        if reaches {
            self.mock.push(Reply::tool_calls(&[(
                "inner",
                "bash",
                json!({"command": format!("touch {}.inner", planted.display()), "unsandboxed": true}),
            )]));
            self.mock.push(Reply::text(["inner done"]));
        }
        self.mock.push(Reply::text(["outer done"]));
        let mut client = TestServer::connect(&self.socket).await;
        client.initialize().await;
        let session = client.start_session(&ws).await;
        client.start_turn(&session, "t", "run it").await;
        let events = client.until_terminal().await;
        let results = completed(&events);
        let (_, _, output) = results
            .iter()
            .find(|(id, _, _)| id == "outer")
            .unwrap_or_else(|| panic!("{events:?}"));
        output.clone()
    }
}

fn planted_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().canonicalize().unwrap().join("pwned")
}

/// c01–c03 as reported: inside the sandbox, the command cannot even open a
/// Unix socket, so the daemon never hears from it.
#[tokio::test]
async fn a_sandboxed_command_cannot_reach_the_daemon_socket() {
    if !matches!(scv_sandbox::probe(), scv_sandbox::Support::Enforced { .. }) {
        assert!(std::env::var_os("SCV_REQUIRE_LANDLOCK").is_none());
        return;
    }
    let daemon = Daemon::start("auto_approve = [\"read\", \"sandboxed\"]").await;
    let outside = outside_dir();
    let planted = planted_in(&outside);
    let output = daemon.attack(&planted, false).await;
    assert!(
        output.contains("connect refused: Operation not permitted"),
        "{output}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!planted.exists() && !planted.with_extension("inner").exists());
}

/// With no sandbox at all, the daemon still knows a tool process when it
/// sees one: no management, no session with its own MCP servers or
/// provider URL, and the sessions it may start run no tools — so there is
/// no approval for it to answer.
#[tokio::test]
async fn the_daemon_refuses_a_tool_process_what_only_a_person_may_do() {
    let daemon = Daemon::start("sandbox = \"off\"\nauto_approve = [\"read\", \"process\"]").await;
    let outside = outside_dir();
    let planted = planted_in(&outside);
    let output = daemon.attack(&planted, true).await;
    for request in ["control", "mcp", "url", "trust", "elicit"] {
        let line = output
            .lines()
            .find(|l| l.starts_with(&format!("{request} ")))
            .unwrap_or_else(|| panic!("{output}"));
        assert!(line.contains("error invalid_request"), "{line}");
        assert!(line.contains("process SCV runs as a tool"), "{line}");
    }
    assert!(output.contains("plain session.started"), "{output}");
    assert!(!output.contains("asked for approval"), "{output}");
    assert!(
        output.contains("inner tool False Tools are disabled"),
        "{output}"
    );
    assert!(output.contains("inner turn.completed"), "{output}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !planted.exists(),
        "the daemon ran the tool process's MCP server"
    );
    // It did not trust its own workspace either.
    let config = std::fs::read_to_string(daemon.home.path().join("config.toml")).unwrap();
    assert!(!config.contains("trusted_workspaces"), "{config}");
    assert!(!planted.with_extension("inner").exists());
    // A person's client is still served in full.
    let mut client = TestServer::connect(&daemon.socket).await;
    client.initialize().await;
    client
        .send(json!({"type":"daemon.control","request_id":"d","command":{"action":"status"}}))
        .await;
    client.expect("daemon.status").await;
}

/// c03: a session's `base_url` that is not the provider's own server gets
/// neither the key nor the configured headers.
#[tokio::test]
async fn a_foreign_base_url_never_carries_the_key() {
    let own = MockProvider::start().await;
    let foreign = MockProvider::start().await;
    let extra = "provider = \"mine\"\n[providers.mine]\nwire = \"chat\"\nbase_url = \"BASE\"\napi_key_env = \"MINE_KEY\"\nmodel = \"m\"\nheaders = { X-Team-Secret = \"team-s3cret\" }\n"
        .replace("BASE", &own.base_url());
    let home = TestHome::new(&own.base_url(), &extra);
    let mut server = TestServer::spawn_with(
        BIN,
        home.path(),
        &[("MINE_KEY", "sk-mine-0123456789abcdef")],
    );
    server.initialize().await;
    let ws = home.workspace();
    for (mock, base_url) in [(&own, None), (&foreign, Some(foreign.base_url()))] {
        mock.push(Reply::text(["hi"]));
        let mut fields = json!({"cwd": ws});
        if let Some(url) = base_url {
            fields["base_url"] = json!(url);
        }
        let session = server.start_session_with(fields).await;
        server.start_turn(&session, "t", "hello").await;
        server.until_terminal().await;
    }
    let own_request = own.requests().remove(0);
    assert_eq!(
        own_request.header("authorization"),
        Some("Bearer sk-mine-0123456789abcdef")
    );
    assert_eq!(own_request.header("x-team-secret"), Some("team-s3cret"));
    let foreign_request = foreign.requests().remove(0);
    assert_eq!(foreign_request.header("authorization"), None);
    assert_eq!(foreign_request.header("x-team-secret"), None);
}
