//! Reaching the daemon, starting it when it is not running.
//!
//! `ensure_daemon` connects, or spawns `scv-server` detached (its own
//! session, stdin and stdout closed, diagnostics to `$SCV_HOME/server.log`)
//! and waits, bounded, for its socket to accept. Until it listens its
//! stderr is a pipe read here, so a daemon that cannot start (a malformed
//! `config.toml`) is reported at once in its own words — and the moment
//! it lets go of the pipe (it listens) or exits is when the connection is
//! tried again: no fixed poll (a cold `scv exec` waited up to 20 ms more
//! on one).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::net::UnixStream;

/// How long a freshly started daemon gets to open its socket.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// The `scv-server` binary: `$SCV_SERVER_BIN`, else beside the running
/// executable, else `scv-server` on `PATH`.
pub fn server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("SCV_SERVER_BIN").filter(|v| !v.is_empty()) {
        return PathBuf::from(path);
    }
    if let Ok(exe) = std::env::current_exe() {
        let beside = exe.with_file_name("scv-server");
        if beside.is_file() {
            return beside;
        }
    }
    PathBuf::from("scv-server")
}

/// Connects to the daemon at `socket`, starting it first if needed.
pub async fn ensure_daemon(home: &Path, socket: &Path) -> Result<UnixStream> {
    ensure_daemon_with(&server_binary(), home, socket).await
}

/// [`ensure_daemon`] with an explicit `scv-server` binary.
///
/// A daemon that was killed a moment ago may still hold its lock when the
/// new one starts; that one then exits at once, so a started daemon that
/// exits before the socket accepts is started again (until the deadline).
pub async fn ensure_daemon_with(binary: &Path, home: &Path, socket: &Path) -> Result<UnixStream> {
    crate::home::check_home(home).map_err(anyhow::Error::msg)?;
    if let Ok(stream) = UnixStream::connect(socket).await {
        return Ok(stream);
    }
    let mut started = start_daemon(binary, home, socket)?;
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(stream) = UnixStream::connect(socket).await {
            return Ok(stream);
        }
        let exited = started.exited();
        if let Some(Exited {
            code: Some(CONFIG_EXIT),
            said,
        }) = &exited
        {
            // Its configuration or home is wrong: starting it again cannot
            // help; say what it said.
            bail!("{}", said.trim_end());
        }
        if tokio::time::Instant::now() >= deadline {
            let said = exited.map(|e| e.said).unwrap_or_default();
            bail!(
                "started scv-server but {} did not accept within {}s{}; see {}",
                socket.display(),
                START_TIMEOUT.as_secs(),
                if said.trim().is_empty() {
                    String::new()
                } else {
                    format!(" (it said: {})", said.trim_end())
                },
                home.join("server.log").display()
            );
        }
        if exited.is_none() {
            // Until it lets go of its stderr (it listens) or exits; the
            // bound is a safety net for a daemon whose own children still
            // hold the pipe.
            let _ = tokio::time::timeout(SAFETY_NET, started.changed()).await;
        } else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            started = start_daemon(binary, home, socket)?;
        }
    }
}

/// Longest wait for a starting daemon to say anything before its socket
/// is tried again.
const SAFETY_NET: Duration = Duration::from_millis(100);

/// `scv-server`'s exit code for a configuration or home it refuses.
const CONFIG_EXIT: i32 = 2;

/// What a daemon that exited before listening left.
#[derive(Debug, Clone)]
struct Exited {
    code: Option<i32>,
    /// Its stderr (bounded).
    said: String,
}

/// A daemon being started: its stderr as read so far, and how it ended.
#[derive(Default)]
struct Starting {
    said: String,
    code: Option<Option<i32>>,
}

#[derive(Clone, Default)]
struct Started(std::sync::Arc<(std::sync::Mutex<Starting>, tokio::sync::Notify)>);

impl Started {
    fn lock(&self) -> std::sync::MutexGuard<'_, Starting> {
        self.0 .0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves when it let go of its stderr or exited (at once when it
    /// did since the last call).
    async fn changed(&self) {
        self.0 .1.notified().await;
    }

    fn tell(&self) {
        self.0 .1.notify_one();
    }

    /// How it ended, if it has.
    fn exited(&self) -> Option<Exited> {
        let starting = self.lock();
        starting.code.map(|code| Exited {
            code,
            said: starting.said.clone(),
        })
    }
}

/// What of a starting daemon's stderr is kept.
const SAID_LIMIT: usize = 8 * 1024;

/// Starts a detached daemon, reading its stderr until it lets go of it.
fn start_daemon(binary: &Path, home: &Path, socket: &Path) -> Result<Started> {
    crate::home::create_private_dir(home)
        .with_context(|| format!("cannot create {}", home.display()))?;
    let log = home.join("server.log");
    let mut command = std::process::Command::new(binary);
    command
        .arg("--socket")
        .arg(socket)
        .arg("--log-file")
        .arg(&log)
        .env("SCV_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Its own session: no terminal signals reach it, and it outlives us.
    // It inherits no descriptor of ours beyond stdio (a `make` jobserver, a
    // shell's `exec 7>>file`): whatever it starts would hold them for good.
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid and close_range are async-signal-safe and touch no
    // parent state.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            );
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let started = Started::default();
    let state = started.clone();
    // Read what it says until it listens (it then lets go of the pipe) or
    // exits; reap it in the background if it exits early (e.g. another
    // daemon won).
    std::thread::spawn(move || {
        use std::io::Read;
        if let Some(mut stderr) = child.stderr.take() {
            let mut buf = [0u8; 1024];
            while let Ok(n @ 1..) = stderr.read(&mut buf) {
                let mut starting = state.lock();
                if starting.said.len() < SAID_LIMIT {
                    starting.said.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        }
        // It listens (or is gone): the socket is tried at once.
        state.tell();
        let code = child.wait().ok().and_then(|status| status.code());
        state.lock().code = Some(code);
        state.tell();
    });
    Ok(started)
}
