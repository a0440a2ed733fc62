//! `scv daemon status|reload|stop` through the control helper.

use crate::control::control;
use anyhow::{bail, Result};
use scv_client::ControlError;
use scv_protocol::{DaemonCommand, DaemonStatus, Event, EventBody};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

pub async fn status(socket: &Path, json: bool, command: DaemonCommand) -> Result<ExitCode> {
    let reload = command == DaemonCommand::Reload;
    let status = control(socket, command).await?;
    // A reload of a file that does not parse failed: the daemon runs on
    // with what it had, and a script must see that.
    let broken = reload && status.config.as_ref().is_some_and(|c| c.error.is_some());
    if json {
        let event = Event::reply(None, EventBody::DaemonStatus { status });
        println!("{}", serde_json::to_string(&event)?);
    } else {
        // Component errors come from servers SCV talks to: shown, never obeyed.
        print!(
            "{}",
            scv_client::text::visible(&describe(&status, socket, reload))
        );
    }
    Ok(if broken {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The status in words.
pub fn describe(status: &DaemonStatus, socket: &Path, reload: bool) -> String {
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
    if let Some(config) = &status.config {
        out.push_str(&describe_config(config, reload));
    }
    out
}

/// The configuration file's part of a status; after `reload`, what
/// changed, what waits for a restart, or that nothing changed.
fn describe_config(config: &scv_protocol::ConfigState, reload: bool) -> String {
    let mut out = String::new();
    if !config.changed.is_empty() {
        out.push_str(&format!(
            "{}: changed {} (sessions started from now on use them; running ones keep theirs)\n",
            config.path,
            quoted(&config.changed)
        ));
    }
    if !config.needs_restart.is_empty() {
        out.push_str(&format!(
            "{}: changed {} (read when the daemon starts: `scv daemon stop`, then start it again)\n",
            config.path,
            quoted(&config.needs_restart)
        ));
    }
    if let Some(error) = &config.error {
        out.push_str(&format!(
            "{error}\n  not applied: the daemon runs on with the configuration it had\n"
        ));
    } else if reload && config.changed.is_empty() && config.needs_restart.is_empty() {
        out.push_str(&format!(
            "{}: unchanged since the last reload\n",
            config.path
        ));
    }
    for warning in &config.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    out
}

fn quoted(keys: &[String]) -> String {
    keys.iter()
        .map(|key| format!("`{key}`"))
        .collect::<Vec<_>>()
        .join(", ")
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
/// `scv daemon restart`: stopped, then started from this shell (its
/// environment: the provider keys it has).
pub async fn restart(home: &Path, socket: &Path) -> Result<ExitCode> {
    stop(socket).await?;
    start(home, socket).await
}

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
