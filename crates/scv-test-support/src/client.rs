//! Driving the real `scv-server` binary: over the pipes of `--stdio`, or
//! over a connection to the daemon's socket.
//!
//! Events are read as raw JSON values so tests assert on exactly what went
//! over the wire. Every read has a generous guard timeout so a broken server
//! fails the test instead of hanging it; no test asserts on elapsed time.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

type Reader = Box<dyn AsyncRead + Unpin + Send>;
type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// Upper bound for any single wait in a test (a hang guard, not a timing).
pub const GUARD: Duration = Duration::from_secs(30);

/// A temporary `$SCV_HOME` with a `config.toml` pointing at a provider, and
/// a temporary workspace directory.
pub struct TestHome {
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
}

impl TestHome {
    /// `base_url` goes into config.toml with model `mock-model`; `extra`
    /// lines are appended verbatim.
    pub fn new(base_url: &str, extra: &str) -> TestHome {
        TestHome::new_in(&std::env::temp_dir(), base_url, extra)
    }

    /// Like [`TestHome::new`], with both directories made in `parent`
    /// (sandbox tests keep them out of the temp directory, which a
    /// sandboxed command may write).
    pub fn new_in(parent: &Path, base_url: &str, extra: &str) -> TestHome {
        let home = tempfile::tempdir_in(parent).expect("temp home");
        let workspace = tempfile::tempdir_in(parent).expect("temp workspace");
        let config = format!("model = \"mock-model\"\nbase_url = \"{base_url}\"\n{extra}\n");
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        TestHome { home, workspace }
    }

    pub fn path(&self) -> &Path {
        self.home.path()
    }

    /// The test's `~/.claude` (see [`claude_dir`]).
    pub fn claude_dir(&self) -> std::path::PathBuf {
        claude_dir(self.path())
    }

    /// The workspace, canonical (as the server reports it).
    pub fn workspace(&self) -> PathBuf {
        self.workspace.path().canonicalize().unwrap()
    }

    /// Trusts the workspace (`trusted_workspaces` in config.toml, as a
    /// user writes it by hand): its repository configuration — hooks,
    /// MCP servers, rules — runs as it is when the server first reads it.
    pub fn trust_workspace(&self) {
        trust_in(self.path(), &self.workspace());
    }
}

/// The Claude Code user folder (`CLAUDE_CONFIG_DIR`, standing for
/// `~/.claude`) of the servers the tests spawn with `SCV_HOME=home`.
pub fn claude_dir(home: &Path) -> std::path::PathBuf {
    home.join("claude-user")
}

/// Puts `trusted_workspaces = [dir]` in `home`'s config.toml (first, so
/// no table of the file takes it).
pub fn trust_in(home: &Path, dir: &Path) {
    let path = home.join("config.toml");
    let config = std::fs::read_to_string(&path).unwrap_or_default();
    let config = format!("trusted_workspaces = [\"{}\"]\n{config}", dir.display());
    std::fs::write(path, config).unwrap();
}

/// A protocol peer under test: a spawned `--stdio` server (which it owns)
/// or a connection to a daemon socket.
pub struct TestServer {
    child: Option<Child>,
    stdin: Option<Writer>,
    reader: BufReader<Reader>,
}

impl TestServer {
    /// Spawns `bin --stdio` with `SCV_HOME=home` and no API key.
    pub fn spawn(bin: &str, home: &Path) -> TestServer {
        TestServer::spawn_with(bin, home, &[])
    }

    pub fn spawn_with(bin: &str, home: &Path, env: &[(&str, &str)]) -> TestServer {
        TestServer::spawn_command(Command::new(bin), home, env)
    }

    /// Like [`TestServer::spawn_with`], with the server's address space
    /// limited to `bytes` (`RLIMIT_AS`), so a runaway allocation fails the
    /// test at once instead of eating the machine.
    pub fn spawn_limited(bin: &str, home: &Path, env: &[(&str, &str)], bytes: u64) -> TestServer {
        let mut command = Command::new(bin);
        // SAFETY: setrlimit is async-signal-safe and touches only the child.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        TestServer::spawn_command(command, home, env)
    }

    /// Spawns `command --stdio` (a command set up by the caller) as
    /// [`TestServer::spawn_with`] does.
    pub fn spawn_command(mut command: Command, home: &Path, env: &[(&str, &str)]) -> TestServer {
        command
            .arg("--stdio")
            .env("SCV_HOME", home)
            // Claude Code's user folder: the test's own, never the
            // machine's `~/.claude`.
            .env("CLAUDE_CONFIG_DIR", claude_dir(home))
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("spawn scv-server");
        let stdin: Writer = Box::new(child.stdin.take().unwrap());
        let stdout: Reader = Box::new(child.stdout.take().unwrap());
        TestServer {
            child: Some(child),
            stdin: Some(stdin),
            reader: BufReader::new(stdout),
        }
    }

    /// The spawned server's exit status, if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// The spawned server's pid (0 for a socket connection).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().and_then(|c| c.id()).unwrap_or(0)
    }

    /// Connects to a daemon socket.
    pub async fn connect(socket: &Path) -> TestServer {
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .unwrap_or_else(|e| panic!("connect {}: {e}", socket.display()));
        let (reader, writer) = stream.into_split();
        TestServer {
            child: None,
            stdin: Some(Box::new(writer)),
            reader: BufReader::new(Box::new(reader) as Reader),
        }
    }

    pub async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.send_raw(line.as_bytes()).await;
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).await.expect("write to server");
        stdin.flush().await.unwrap();
    }

    pub async fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Appends the next raw line to `line` (no parse, no timeout: for
    /// benchmarks that must not measure the client); 0 at EOF.
    pub async fn next_raw(&mut self, line: &mut Vec<u8>) -> usize {
        self.reader
            .read_until(b'\n', line)
            .await
            .expect("read from server")
    }

    /// The next event, or `None` at EOF. A last line without its newline
    /// (a frame cut off by a closed connection) counts as EOF.
    pub async fn next_opt(&mut self) -> Option<Value> {
        let mut line = Vec::new();
        tokio::time::timeout(GUARD, self.reader.read_until(b'\n', &mut line))
            .await
            .expect("timed out waiting for an event")
            .expect("read from server");
        if line.last() != Some(&b'\n') {
            return None;
        }
        Some(
            serde_json::from_slice(&line)
                .unwrap_or_else(|e| panic!("bad frame {}: {e}", String::from_utf8_lossy(&line))),
        )
    }

    pub async fn next(&mut self) -> Value {
        self.next_opt().await.expect("server closed stdout")
    }

    /// The next event, asserting its type.
    pub async fn expect(&mut self, kind: &str) -> Value {
        let event = self.next().await;
        assert_eq!(event["type"], kind, "unexpected event: {event}");
        event
    }

    /// The next event, asserting it is a non-fatal `error` with `code`
    /// answering `request_id`.
    pub async fn expect_error(&mut self, code: &str, request_id: &str) -> Value {
        let event = self.expect("error").await;
        assert_eq!(
            (
                event["code"].as_str(),
                event["request_id"].as_str(),
                event["fatal"].as_bool()
            ),
            (Some(code), Some(request_id), Some(false)),
            "unexpected error: {event}"
        );
        event
    }

    /// Events up to and including the first of type `kind`.
    pub async fn until(&mut self, kind: &str) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let event = self.next().await;
            let done = event["type"] == kind;
            events.push(event);
            if done {
                return events;
            }
        }
    }

    /// Events up to and including the turn's terminal event.
    pub async fn until_terminal(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let event = self.next().await;
            let kind = event["type"].as_str().unwrap_or_default().to_string();
            // A subagent's turn ends inside its parent's.
            let child = event.get("parent").is_some();
            events.push(event);
            if !child
                && matches!(
                    kind.as_str(),
                    "turn.completed" | "turn.cancelled" | "turn.failed"
                )
            {
                return events;
            }
        }
    }

    pub async fn initialize(&mut self) -> Value {
        self.send(
            json!({"type": "initialize", "request_id": "init", "protocol_version": 2,
            "client": {"name": "scv-tests", "version": "0"}}),
        )
        .await;
        self.expect("initialized").await
    }

    /// Starts a session in `cwd`; returns its id (snapshot consumed).
    pub async fn start_session(&mut self, cwd: &Path) -> String {
        self.start_session_with(json!({"cwd": cwd})).await
    }

    pub async fn start_session_with(&mut self, mut fields: Value) -> String {
        fields["type"] = json!("session.start");
        fields["request_id"] = json!("start");
        self.send(fields).await;
        let started = self.expect("session.started").await;
        self.expect("queue.snapshot").await;
        started["session_id"].as_str().unwrap().to_string()
    }

    pub async fn start_turn(&mut self, session_id: &str, request_id: &str, prompt: &str) {
        self.send(json!({"type": "turn.start", "request_id": request_id,
            "session_id": session_id, "prompt": prompt}))
            .await;
    }

    /// Closes stdin and waits for the spawned server to exit.
    pub async fn wait(mut self) -> ExitStatus {
        self.stdin.take();
        let child = self.child.as_mut().expect("a spawned server");
        tokio::time::timeout(GUARD, child.wait())
            .await
            .expect("server did not exit")
            .unwrap()
    }
}

/// Types of a list of events, for compact sequence assertions.
pub fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?"))
        .collect()
}
