//! Reaching the daemon, starting it when it is not running.
//!
//! `ensure_daemon` connects, or spawns `scv-server` detached (its own
//! session, stdin and stdout closed, diagnostics to `$SCV_HOME/server.log`)
//! and waits, bounded, for its socket to accept.

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
    let mut running = start_daemon(binary, home, socket)?;
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(stream) = UnixStream::connect(socket).await {
            return Ok(stream);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "started scv-server but {} did not accept within {}s; see {}",
                socket.display(),
                START_TIMEOUT.as_secs(),
                home.join("server.log").display()
            );
        }
        if running.load(std::sync::atomic::Ordering::Acquire) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        } else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            running = start_daemon(binary, home, socket)?;
        }
    }
}

/// Starts a detached daemon; the flag turns false when it has exited.
fn start_daemon(
    binary: &Path,
    home: &Path,
    socket: &Path,
) -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
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
        .stderr(Stdio::null());
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
    let child = command
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    // Reap it in the background if it exits early (e.g. another daemon won).
    let running = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = running.clone();
    std::thread::spawn(move || {
        let mut child = child;
        let _ = child.wait();
        flag.store(false, std::sync::atomic::Ordering::Release);
    });
    Ok(running)
}
