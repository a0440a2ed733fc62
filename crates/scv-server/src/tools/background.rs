//! `bash {background: true}`: a background process started as a `bash`
//! call is (`command::start`), its output read into its ring by a task of
//! its own until all of it is gone. The table, its bounds and how nothing
//! outlives the session: `crate::background`.

use super::builtin::{ToolContext, ToolOutput, ToolResult};
use super::command::{read_report, start, Started};
use crate::background::Proc;
use crate::reaper::Report;
use std::sync::Arc;
use tokio::io::AsyncReadExt;

/// `bash {background: true}`: starts `command` and returns its
/// `process_id` at once.
pub(super) async fn run(command: &str, unsandboxed: bool, ctx: &ToolContext<'_>) -> ToolResult {
    let proc = ctx.background.admit(command)?;
    let started = match start(command, unsandboxed, ctx).await {
        Ok(started) => started,
        Err(err) => {
            ctx.background.forget(&proc);
            return Err(err);
        }
    };
    let sandboxed = started.policy.is_some();
    crate::tasks::spawn(watch(proc.clone(), started));
    let place = if sandboxed {
        "in the sandbox"
    } else {
        "outside the sandbox"
    };
    Ok(ToolOutput::ok(format!(
        "Started in the background {place}.\nprocess_id: {id}\nRead its output with bash_output {{\"process_id\": \"{id}\"}} (what is new since the last read; wait_ms waits for some), stop it with bash_kill {{\"process_id\": \"{id}\"}}. It runs until it exits, is killed, or the session ends; when its command exits, whatever it left running is killed.",
        id = proc.id
    )))
}

/// Reads the process's output into its ring until everything of it is
/// gone, or it is told to end; then records how it ended.
async fn watch(proc: Arc<Proc>, started: Started) {
    let Started {
        reaper,
        mut pipe,
        report_read,
        ..
    } = started;
    let mut buf = vec![0u8; 16 * 1024];
    let killed = tokio::select! {
        () = drain(&mut pipe, &proc, &mut buf) => false,
        () = proc.kill_requested() => true,
    };
    if killed {
        reaper.stop();
        let drained =
            tokio::time::timeout(crate::reaper::GRACE, drain(&mut pipe, &proc, &mut buf)).await;
        if drained.is_err() {
            reaper.kill_group();
        }
    }
    reaper.finish(false).await;
    let report = read_report(report_read).await;
    let status = describe(killed, report.as_ref());
    proc.finished(status);
}

async fn drain(pipe: &mut tokio::net::unix::pipe::Receiver, proc: &Proc, buf: &mut [u8]) {
    while let Ok(n) = pipe.read(buf).await {
        if n == 0 {
            break;
        }
        proc.push(&buf[..n]);
    }
}

/// How a process ended, in words.
fn describe(killed: bool, report: Option<&Report>) -> String {
    let mut text = match (killed, report) {
        (true, _) => "killed".to_string(),
        (
            false,
            Some(Report {
                code: Some(code), ..
            }),
        ) => format!("exited with code {code}"),
        (
            false,
            Some(Report {
                signal: Some(signal),
                ..
            }),
        ) => format!("killed by signal {signal}"),
        _ => "ended (its status is unknown)".to_string(),
    };
    if let Some(killed) = report.map(|r| r.killed).filter(|k| *k > 0) {
        let noun = if killed == 1 { "process" } else { "processes" };
        text.push_str(&format!(
            "; {killed} {noun} it left running were killed with it"
        ));
    }
    text
}
