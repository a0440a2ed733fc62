//! bash: one command in the workspace, stdin closed, stdout and stderr
//! through one pipe (so their order is kept), below a reaper (`reaper`).
//!
//! The reaper is this server's own binary in `--tool-process` mode, in its
//! own process group, with a parent-death signal. When the call ends for
//! any reason (exit, timeout, cancel, the future being dropped, the server
//! dying) the reaper kills every process the command left — whatever
//! process group or session it moved to — and reports how many. The output
//! says so.

use super::builtin::{parse, schema_of, Builtin, ToolContext, ToolError, ToolOutput, ToolResult};
use super::command::{read_report, start, Started};
use crate::reaper::Report;
use schemars::JsonSchema;
use scv_protocol::Risk;
use serde::Deserialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::io::AsyncReadExt;

pub(crate) const TOOL: Builtin = Builtin {
    name: "bash",
    risk: Risk::Process,
    description: "Run a shell command with bash in the workspace directory. stdin is closed; stdout and stderr are returned together with the exit code. Long output is cut in the middle. Commands usually run in a sandbox: they can read files (not credentials), but write only inside the workspace and the temp directory, and may be unable to use the network. When a command fails because the sandbox forbids what it needs (\"Permission denied\" or \"Operation not permitted\" writing outside the workspace, e.g. to ~/.cargo, or opening a network connection), run it again with unsandboxed: true; the user is then asked to approve it.",
    parameters: schema_of::<BashArgs>,
    // The whole command, every line: a second line is a second command.
    summary: |arguments| {
        let command = super::builtin::arg(arguments, "command");
        let background = arguments
            .get("background")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let what = if background {
            "Run shell command in the background"
        } else {
            "Run shell command"
        };
        if stays_sandboxed(arguments) {
            format!("{what}: {command}")
        } else {
            format!("{what} outside the sandbox: {command}")
        }
    },
    stays_sandboxed: Some(stays_sandboxed),
    run: |arguments, ctx| Box::pin(run(arguments, ctx)),
};

#[derive(Deserialize, JsonSchema)]
struct BashArgs {
    /// The command line to run.
    command: String,
    /// Kill the command after this many milliseconds.
    #[schemars(range(min = 1))]
    timeout_ms: Option<u64>,
    // An attribute, not a doc comment: a doc comment's line break would
    // reach the model.
    #[schemars(
        description = "Run outside the sandbox (asks the user first). Only after a command failed \
                       because the sandbox forbade it."
    )]
    #[serde(default)]
    unsandboxed: bool,
    #[schemars(
        description = "Start it in the background and return at once with its process_id (a dev server, \
                       a watcher); read its output with bash_output, stop it with bash_kill."
    )]
    #[serde(default)]
    background: bool,
}

/// False when the call asks to leave the sandbox (`unsandboxed: true`).
fn stays_sandboxed(arguments: &Value) -> bool {
    !arguments
        .get("unsandboxed")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Room kept at the end of the output for the status lines, and in the
/// middle for the "omitted" marker, so the whole stays within the cap.
const STATUS_ROOM: usize = 256;
const MARKER_ROOM: usize = 64;

async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
    let args: BashArgs = parse(arguments)?;
    if args.command.trim().is_empty() {
        return Err(ToolError::Model("command is empty".into()));
    }
    if args.background {
        return super::background::run(&args.command, args.unsandboxed, ctx).await;
    }
    let timeout = args
        .timeout_ms
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
        .unwrap_or(ctx.bash_timeout)
        .min(ctx.bash_max_timeout);
    let Started {
        reaper,
        policy,
        mut pipe,
        report_read,
    } = start(&args.command, args.unsandboxed, ctx).await?;
    let budget = ctx
        .max_output_bytes
        .saturating_sub(STATUS_ROOM + MARKER_ROOM)
        .max(2);
    let mut capture = Capture::new(budget);
    let mut buf = vec![0u8; 16 * 1024];

    // Output until the pipe closes, which happens once the reaper and
    // everything below it are gone: the reaper kills stragglers as soon
    // as the command exits. A timeout or a cancel asks the reaper to end
    // it all, and the call waits (bounded) until it has.
    let ended = tokio::select! {
        () = drain(&mut pipe, &mut capture, &mut buf) => Ended::Closed,
        () = tokio::time::sleep(timeout) => Ended::TimedOut,
        () = ctx.cancel.cancelled() => Ended::Cancelled,
    };
    if ended != Ended::Closed {
        reaper.stop();
        let drained = tokio::time::timeout(
            crate::reaper::GRACE,
            drain(&mut pipe, &mut capture, &mut buf),
        )
        .await;
        if drained.is_err() {
            reaper.kill_group();
        }
    }
    reaper.finish(false).await;
    let report = read_report(report_read).await;

    let (mut out, truncated) = capture.finish();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    let success = status_line(&mut out, ended, timeout, report.as_ref());
    if let Some(note) = policy
        .as_ref()
        .filter(|_| !success)
        .and_then(|p| refusal_note(&p.policy, &out, ctx.sandbox.as_ref()))
    {
        out.push('\n');
        out.push_str(&note);
    }
    if policy.is_some() {
        egress_notes(&mut out, ctx.sandbox.as_ref());
    }
    if let Some(killed) = report.map(|r| r.killed).filter(|k| *k > 0) {
        let noun = if killed == 1 { "process" } else { "processes" };
        out.push_str(&format!(
            "\n[{killed} {noun} it left running were killed when it ended]"
        ));
    }
    Ok(ToolOutput {
        success,
        output: out,
        truncated,
    })
}

/// Ends a sandboxed call's `out` with the hosts its session's proxy
/// refused meanwhile, each with the line that allows it.
fn egress_notes(out: &mut String, view: Option<&crate::sandbox::SandboxView>) {
    for refused in view.map(|v| v.egress_refused()).unwrap_or_default() {
        out.push_str(&format!(
            "\n[network: the sandbox's allowlist refused {refused}]"
        ));
    }
}

/// What a command refused by the read-only sandbox of plan mode (or of
/// an agent that only reads) is told: not to run it again unsandboxed,
/// which is refused there, but to put it in the plan.
const READ_ONLY_NOTE: &str = "[sandbox: plan mode — this command ran in the read-only sandbox, which refuses every write; the refusal above is most likely that. Do not run it again with unsandboxed: true (it is refused here). Put the command in the plan you present: it runs when the user leaves plan mode and asks you to carry the plan out]";

/// [`sandbox_note`], or in the read-only sandbox (`view`'s) [`READ_ONLY_NOTE`].
fn refusal_note(
    policy: &scv_sandbox::Policy,
    out: &str,
    view: Option<&crate::sandbox::SandboxView>,
) -> Option<String> {
    let note = sandbox_note(policy, out)?;
    let read_only = view.is_some_and(|v| v.is_read_only());
    Some(if read_only {
        READ_ONLY_NOTE.into()
    } else {
        note
    })
}

/// Ends `out` with how the command ended; whether it succeeded.
fn status_line(out: &mut String, ended: Ended, timeout: Duration, report: Option<&Report>) -> bool {
    if ended == Ended::Cancelled {
        out.push_str("[cancelled; the command was killed]");
        false
    } else if ended == Ended::TimedOut {
        out.push_str(&format!(
            "[command timed out after {} ms and was killed]",
            timeout.as_millis()
        ));
        false
    } else {
        match report {
            Some(Report {
                code: Some(code), ..
            }) => {
                out.push_str(&format!("[exit code: {code}]"));
                *code == 0
            }
            Some(Report {
                signal: Some(signal),
                ..
            }) => {
                out.push_str(&format!("[killed by signal {signal}]"));
                false
            }
            _ => {
                out.push_str("[the command's status is unknown]");
                false
            }
        }
    }
}

/// What a sandboxed command that failed the way the sandbox makes
/// commands fail is told (and the user sees on its card): that the sandbox
/// most likely refused it, and how to allow it. `None` when its output
/// shows no such refusal.
pub(crate) fn sandbox_note(policy: &scv_sandbox::Policy, out: &str) -> Option<String> {
    const REFUSALS: [&str; 3] = [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ];
    if !REFUSALS.iter().any(|refusal| out.contains(refusal)) {
        // dash says "Directory nonexistent" where others say ENOENT.
        let missing =
            out.contains("No such file or directory") || out.contains("Directory nonexistent");
        if missing && names_hidden_path(policy, out) {
            return Some(
                "[sandbox: this command ran in the sandbox, which shows commands a made-up machine — the workspace, the system's software, the toolchains and caches of the home, a /tmp of the session's own — so a path outside those does not exist for it. If the command needs one, run it again with unsandboxed: true (the user is asked), or the user adds it to sandbox_readable_roots or sandbox_writable_roots in config.toml]".into(),
            );
        }
        return None;
    }
    if policy.protect_git && (out.contains(".git/") || out.contains(".git'")) {
        return Some(
            "[sandbox: this command ran in the sandbox, where every repository's .git is read-only (a command that could write it could make your next plain `git` run its code); git commands that write — commit, add, fetch, checkout, stash — need unsandboxed: true (the user is asked), or the user sets sandbox_protect_git = false in config.toml]".into(),
        );
    }
    let writes = match policy.mode {
        scv_sandbox::Mode::ReadOnly => "every write (the sandbox is read-only)",
        _ => "writes outside the workspace, the temp directory and sandbox_writable_roots",
    };
    let (network, allow_network) = if !policy.refuses_ip() {
        ("", "")
    } else {
        (
            " and network connections (sandbox_network = false)",
            ", or sets sandbox_network = true",
        )
    };
    Some(format!(
        "[sandbox: this command ran in the sandbox, which refuses {writes}{network}; the refusal above is most likely the sandbox's. To allow it, run it again with unsandboxed: true (the user is asked), or the user adds the path to sandbox_writable_roots{allow_network} in config.toml]"
    ))
}

/// Whether `out` names an absolute path the sandbox does not show: not in
/// the workspace, the roots it was given or the system's software.
fn names_hidden_path(policy: &scv_sandbox::Policy, out: &str) -> bool {
    out.split(|c: char| c.is_whitespace() || matches!(c, ':' | '\'' | '"' | '`' | '‘' | '’'))
        .filter_map(|word| {
            if word.starts_with('/') && word.len() > 1 {
                Some(std::path::PathBuf::from(word))
            } else if word.contains('/') {
                // Commands start in the workspace; a relative path that
                // climbs out of it, or through a link out of it, is
                // judged from there.
                Some(followed(&policy.workspace, word))
            } else {
                None
            }
        })
        .any(|path| {
            !path.starts_with(&policy.workspace)
                && !path.starts_with("/tmp")
                && !policy.writable_roots.iter().any(|r| path.starts_with(r))
                && !policy.readable_roots.iter().any(|r| path.starts_with(r))
                && !scv_sandbox::SYSTEM.iter().any(|s| path.starts_with(s))
                && !path.starts_with("/proc")
                && !path.starts_with("/dev")
        })
}

/// `base` joined with `relative`, `..` resolved and symbolic links
/// followed (a few hops), as the host sees them: only to word a note, so
/// a link that changed since does no harm.
fn followed(base: &std::path::Path, relative: &str) -> std::path::PathBuf {
    let mut path = base.to_path_buf();
    let mut hops = 0;
    for part in std::path::Path::new(relative).components() {
        match part {
            std::path::Component::ParentDir => {
                path.pop();
            }
            std::path::Component::Normal(name) => {
                path.push(name);
                while hops < 8 {
                    let Ok(target) = std::fs::read_link(&path) else {
                        break;
                    };
                    hops += 1;
                    path.pop();
                    path = path.join(target);
                }
            }
            _ => {}
        }
    }
    path
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Closed,
    TimedOut,
    Cancelled,
}

/// Reads the output pipe to its end into `capture`.
async fn drain(pipe: &mut tokio::net::unix::pipe::Receiver, capture: &mut Capture, buf: &mut [u8]) {
    while let Ok(n) = pipe.read(buf).await {
        if n == 0 {
            break;
        }
        capture.push(&buf[..n]);
    }
}

/// Keeps the first and last halves of the budget, counting what is skipped,
/// so a chatty command never grows memory.
struct Capture {
    half: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    skipped: usize,
}

impl Capture {
    fn new(max: usize) -> Self {
        Capture {
            half: (max / 2).max(1),
            head: Vec::new(),
            tail: VecDeque::new(),
            skipped: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        let room = self.half - self.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.half);
        if excess > 0 {
            self.tail.drain(..excess);
            self.skipped += excess;
        }
    }

    fn finish(self) -> (String, bool) {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.skipped > 0 {
            text.push_str(&format!("\n[... {} bytes omitted ...]\n", self.skipped));
        }
        let tail: Vec<u8> = self.tail.into();
        text.push_str(&String::from_utf8_lossy(&tail));
        (text, self.skipped > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut capture = Capture::new(10);
        for chunk in [b"01234".as_slice(), b"56789", b"abcdef"] {
            capture.push(chunk);
        }
        let (text, truncated) = capture.finish();
        assert!(truncated);
        assert_eq!(text, "01234\n[... 6 bytes omitted ...]\nbcdef");
    }
}
