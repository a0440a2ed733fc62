//! Shared set-up for the integration tests: a mock provider, a temporary
//! home and workspace, and the real `scv-server --stdio` binary.
#![allow(dead_code, unused_imports)]

pub(crate) mod sandbox;
pub(crate) mod stored;
pub(crate) use scv_test_support::tmpfs;

pub(crate) use scv_test_support::client::{types, TestHome, TestServer};
pub(crate) use scv_test_support::mock_provider::{Ending, MockProvider, Reply};
pub(crate) use serde_json::{json, Value};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_scv-server");

/// A directory sandboxed commands may not write: beside the build — unless
/// the build itself is in a temporary directory (a checkout under /tmp),
/// which the sandbox leaves writable; then under the home.
pub(crate) fn outside_dir() -> tempfile::TempDir {
    let build = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let temporary = ["/tmp", "/var/tmp", "/dev/shm"]
        .iter()
        .any(|t| build.starts_with(t));
    match (temporary, std::env::var_os("HOME")) {
        (true, Some(home)) => tempfile::tempdir_in(home).unwrap(),
        _ => tempfile::tempdir_in(build).unwrap(),
    }
}

pub(crate) struct Rig {
    pub mock: MockProvider,
    pub home: TestHome,
    pub server: TestServer,
}

impl Rig {
    /// Mock provider + home with `extra` config lines + server, initialized.
    pub(crate) async fn new(extra: &str) -> Rig {
        Rig::with_env(extra, &[]).await
    }

    pub(crate) async fn with_env(extra: &str, env: &[(&str, &str)]) -> Rig {
        let mock = MockProvider::start().await;
        let home = TestHome::new(&mock.base_url(), extra);
        let mut server = TestServer::spawn_with(BIN, home.path(), env);
        server.initialize().await;
        Rig { mock, home, server }
    }

    /// Like [`Rig::new`], initialized asking for `capabilities`.
    pub(crate) async fn with_capabilities(extra: &str, capabilities: Value) -> Rig {
        let mock = MockProvider::start().await;
        let home = TestHome::new(&mock.base_url(), extra);
        let mut server = TestServer::spawn(BIN, home.path());
        server
            .send(
                json!({"type":"initialize","request_id":"i","protocol_version":2,
                         "capabilities": capabilities}),
            )
            .await;
        server.expect("initialized").await;
        Rig { mock, home, server }
    }

    /// `session.start` with `fields` in the rig's workspace: its
    /// `session.started` and id (the queue snapshot consumed).
    pub(crate) async fn start(&mut self, fields: Value) -> (Value, String) {
        let mut message = fields;
        message["type"] = json!("session.start");
        message["request_id"] = json!("s");
        message["cwd"] = json!(self.home.workspace());
        self.server.send(message).await;
        let started = self.server.expect("session.started").await;
        self.server.expect("queue.snapshot").await;
        let id = started["session_id"].as_str().unwrap().to_string();
        (started, id)
    }

    /// Starts a session in the rig's workspace.
    pub(crate) async fn session(&mut self) -> String {
        let workspace = self.home.workspace();
        self.server.start_session(&workspace).await
    }

    /// Starts a turn and returns every event through its terminal one.
    pub(crate) async fn turn(&mut self, session: &str, prompt: &str) -> Vec<Value> {
        self.server.start_turn(session, "t", prompt).await;
        self.server.until_terminal().await
    }
}

/// The names of the tools the provider was offered in request `n`.
pub(crate) fn offered(mock: &MockProvider, n: usize) -> Vec<String> {
    mock.requests()[n].body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Asserts seq is present and strictly increasing by one.
pub(crate) fn assert_seq_contiguous(events: &[Value]) {
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e["seq"].as_u64().unwrap_or_else(|| panic!("no seq: {e}")))
        .collect();
    for pair in seqs.windows(2) {
        assert_eq!(pair[1], pair[0] + 1, "seq not contiguous: {seqs:?}");
    }
}

/// The pid a command wrote to `path` (waits, bounded, for it to appear).
pub(crate) async fn read_pid(path: &std::path::Path) -> i32 {
    for _ in 0..400 {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("no pid written to {}", path.display());
}

/// Waits (bounded) until `pid` is gone; false if it is still running.
pub(crate) async fn gone(pid: i32) -> bool {
    scv_test_support::eventually(|| !scv_test_support::procfs::is_running(pid)).await
}

/// `(call_id, success, output)` of each `tool.completed`.
pub(crate) fn completed(events: &[Value]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .map(|e| {
            (
                e["call_id"].as_str().unwrap().to_string(),
                e["success"].as_bool().unwrap(),
                e["output"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A command that starts four processes that leave bash's process group
/// or session in different ways, waits until each wrote its pid, then runs
/// `tail` (empty, or `sleep 1000` to keep the call going).
pub(crate) fn escaping(dir: &std::path::Path, tail: &str) -> String {
    let d = dir.display();
    format!(
        "cd {d}\n\
         setsid sleep 1000 & echo $! > p1\n\
         setsid -f sh -c 'echo $$ > p2; exec sleep 1000'\n\
         python3 -c 'import os, time\nif os.fork() == 0:\n    os.setpgid(0, 0)\n    open(\"p3\", \"w\").write(str(os.getpid()))\n    time.sleep(1000)'\n\
         (sleep 1000 & echo $! > p4)\n\
         while [ ! -s p1 ] || [ ! -s p2 ] || [ ! -s p3 ] || [ ! -s p4 ]; do sleep 0.02; done\n\
         echo spawned\n\
         {tail}"
    )
}

pub(crate) async fn escaped_pids(dir: &std::path::Path) -> Vec<i32> {
    let mut pids = Vec::new();
    for name in ["p1", "p2", "p3", "p4"] {
        pids.push(read_pid(&dir.join(name)).await);
    }
    pids
}

pub(crate) async fn all_gone(pids: &[i32]) {
    for pid in pids {
        assert!(gone(*pid).await, "process {pid} outlived its tool call");
    }
}

/// A port nothing listens on now (the OS picked it, then let it go).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
