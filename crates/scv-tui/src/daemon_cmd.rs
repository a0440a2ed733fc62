//! `scv daemon status|reload|stop` through the control helper.

use anyhow::{bail, Result};
use scv_client::control::control;
use scv_client::ControlError;
use scv_protocol::{DaemonCommand, DaemonStatus, Event, EventBody};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

pub async fn status(socket: &Path, json: bool, command: DaemonCommand) -> Result<ExitCode> {
    let status = control(socket, command).await?;
    if json {
        let event = Event::reply(None, EventBody::DaemonStatus { status });
        println!("{}", serde_json::to_string(&event)?);
    } else {
        // Component errors come from servers SCV talks to: shown, never obeyed.
        print!("{}", scv_client::text::visible(&describe(&status, socket)));
    }
    Ok(ExitCode::SUCCESS)
}

/// The status in words.
pub fn describe(status: &DaemonStatus, socket: &Path) -> String {
    let mut out = format!(
        "scv-server {} (pid {}) on {}\n",
        status.version,
        status.pid,
        socket.display()
    );
    if status.components.is_empty() {
        out.push_str("components: none\n");
    }
    for c in &status.components {
        out.push_str(&format!(
            "{}: {:?}{}{}, restarts {}{}\n",
            c.id,
            c.state,
            if c.enabled { "" } else { " (disabled)" },
            c.last_success_unix_seconds
                .map(|t| format!(", last contact at unix {t}"))
                .unwrap_or_default(),
            c.restarts,
            c.error
                .as_ref()
                .map(|e| format!(", error: {e}"))
                .unwrap_or_default(),
        ));
    }
    out
}

/// Starts the daemon when it is not running (as `scv` would), then says
/// which one answers.
pub async fn start(home: &Path, socket: &Path) -> Result<ExitCode> {
    let running = control(socket, DaemonCommand::Status).await.is_ok();
    if !running {
        drop(scv_client::ensure_daemon(home, socket).await?);
    }
    let status = control(socket, DaemonCommand::Status).await?;
    println!(
        "scv-server {} {} (pid {}) on {}",
        status.version,
        if running {
            "is already running"
        } else {
            "started"
        },
        status.pid,
        socket.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Asks the daemon its pid, sends SIGTERM, waits (bounded) for the socket
/// to go.
pub async fn stop(socket: &Path) -> Result<ExitCode> {
    let status = match control(socket, DaemonCommand::Status).await {
        Ok(status) => status,
        Err(ControlError::NotRunning(_)) => {
            println!("scv-server is not running on {}", socket.display());
            return Ok(ExitCode::SUCCESS);
        }
        Err(err) => return Err(err.into()),
    };
    // SAFETY: kill only sends a signal.
    if unsafe { libc::kill(status.pid as i32, libc::SIGTERM) } != 0 {
        bail!(
            "cannot signal scv-server (pid {}): {}",
            status.pid,
            std::io::Error::last_os_error()
        );
    }
    for _ in 0..300 {
        if !socket.exists() {
            println!("stopped scv-server (pid {})", status.pid);
            return Ok(ExitCode::SUCCESS);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bail!("scv-server (pid {}) did not stop within 15 s", status.pid)
}
