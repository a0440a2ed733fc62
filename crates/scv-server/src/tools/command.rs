//! Starting a `bash -c LINE` as the `bash` tool runs it — below its
//! reaper, in the session's sandbox unless `unsandboxed`, after the
//! session's `CLAUDE_ENV_FILE` — for a foreground call (`bash`) and a
//! background one (`background`) alike, and reading the reaper's report.

use super::builtin::{ToolContext, ToolError};
use crate::reaper::Report;
use std::io::Read;
use std::os::fd::OwnedFd;

/// `command`, after sourcing the session's `CLAUDE_ENV_FILE` (what its
/// `SessionStart` hooks exported) when that file has something — only
/// where the hooks' own confinement holds (`confined`: sandboxed, or no
/// sandbox at all): a call that leaves the sandbox never runs what a
/// sandboxed hook wrote.
fn with_env_file<'a>(
    command: &'a str,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    confined: bool,
) -> std::borrow::Cow<'a, str> {
    let file = env
        .iter()
        .find(|(name, _)| name == "CLAUDE_ENV_FILE")
        .map(|(_, value)| std::path::Path::new(value));
    match file {
        Some(file) if confined && std::fs::metadata(file).is_ok_and(|m| m.len() > 0) => {
            format!(". \"$CLAUDE_ENV_FILE\" >/dev/null 2>&1\n{command}").into()
        }
        _ => command.into(),
    }
}

/// A `bash -c LINE` started below its reaper: stdout and stderr through
/// one pipe (their order kept), stdin closed.
pub(super) struct Started {
    pub reaper: crate::reaper::Reaper,
    pub policy: Option<crate::sandbox::CallPolicy>,
    pub pipe: tokio::net::unix::pipe::Receiver,
    /// Where the reaper's report is read once it has ended.
    pub report_read: std::io::PipeReader,
}

/// Starts `command` as a `bash` call does: in the session's sandbox
/// unless `unsandboxed`, after its `CLAUDE_ENV_FILE`.
pub(super) async fn start(
    command: &str,
    unsandboxed: bool,
    ctx: &ToolContext<'_>,
) -> Result<Started, ToolError> {
    let (reader, writer) = std::io::pipe().map_err(|err| format!("cannot create pipe: {err}"))?;
    let writer_err = writer
        .try_clone()
        .map_err(|err| format!("cannot create pipe: {err}"))?;
    let (report_read, report_write) =
        std::io::pipe().map_err(|err| format!("cannot create pipe: {err}"))?;
    let null =
        std::fs::File::open("/dev/null").map_err(|err| format!("cannot open /dev/null: {err}"))?;
    let sandbox = ctx
        .sandbox
        .as_ref()
        .filter(|_| !unsandboxed)
        .map(|view| (view, crate::sandbox::Runs::Command));
    let line = with_env_file(command, ctx.env, sandbox.is_some() || ctx.sandbox.is_none());
    let started = crate::launch::bash(
        sandbox,
        crate::launch::Bash {
            line: &line,
            cwd: ctx.workspace,
            env: ctx.env.to_vec(),
            stdin: OwnedFd::from(null),
            stdout: OwnedFd::from(writer),
            stderr: OwnedFd::from(writer_err),
            report: OwnedFd::from(report_write),
        },
    )
    .await;
    let (reaper, policy) = match started {
        Ok(started) => started,
        Err(err) if sandbox.is_some() => {
            return Err(ToolError::Model(format!(
                "the sandbox could not be set up, so the command did not run: {err}"
            )))
        }
        Err(err) => return Err(ToolError::Internal(err)),
    };
    let pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|err| format!("cannot read command output: {err}"))?;
    Ok(Started {
        reaper,
        policy,
        pipe,
        report_read,
    })
}

/// The reaper's report, once it has ended.
pub(super) async fn read_report(mut report_read: std::io::PipeReader) -> Option<Report> {
    crate::blocking::run(move || {
        let mut text = String::new();
        let _ = report_read.read_to_string(&mut text);
        Report::decode(&text)
    })
    .await
    .ok()
    .flatten()
}
