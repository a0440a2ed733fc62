//! Running the real `scv-server` daemon in tests and benchmarks: spawn it
//! on a socket with its stderr captured, and wait until it accepts.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The daemon's stderr lines so far.
#[derive(Clone, Default)]
pub struct DaemonLog(Arc<Mutex<Vec<String>>>);

impl DaemonLog {
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// Waits (bounded) for a line containing `needle`.
    pub async fn wait_for(&self, needle: &str) -> bool {
        crate::eventually(|| self.0.lock().unwrap().iter().any(|l| l.contains(needle))).await
    }
}

/// Spawns `bin --socket socket` with `SCV_HOME=home`, started in `home`
/// (which makes `home` the daemon workspace), no API key, and stderr
/// appended to `log`.
pub fn spawn_daemon(bin: &str, home: &Path, socket: &Path, log: &DaemonLog) -> Child {
    let mut child = Command::new(bin)
        .current_dir(home)
        .arg("--socket")
        .arg(socket)
        .env("SCV_HOME", home)
        .env("CLAUDE_CONFIG_DIR", crate::client::claude_dir(home))
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn scv-server");
    let stderr = child.stderr.take().expect("piped stderr");
    let lines = log.0.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            lines.lock().unwrap().push(line);
        }
    });
    child
}

/// Waits (bounded) until the daemon's socket accepts a connection.
pub async fn wait_for_socket(socket: &Path) {
    let accepted =
        crate::eventually(|| std::os::unix::net::UnixStream::connect(socket).is_ok()).await;
    assert!(
        accepted,
        "daemon socket {} never accepted",
        socket.display()
    );
}
