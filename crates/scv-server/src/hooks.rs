//! Running the user's hooks (`scv_hooks` says what they mean): each
//! matching command runs as `bash -c COMMAND` in the workspace, below a
//! reaper and under the session's tool sandbox, with the tool environment
//! (no credentials) plus `CLAUDE_PROJECT_DIR` — where the sandbox also
//! lets it read `$SCV_HOME/hooks/` and `~/.claude/hooks/`, so a user's
//! hook scripts run from there — its input JSON on stdin and
//! its stdout and stderr captured apart, each bounded. The hooks matching
//! one event run at once; their outcomes are combined.
//!
//! Nothing here runs when no hook is configured, and a tool call no hook
//! matches costs one lookup (`Hooks::matching`).

use crate::reaper::Report;
use scv_hooks::{Common, Event, Exit, HookCommand, Hooks, Input, Outcome, Run};
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// Where and how a session's hooks run.
pub(crate) struct HookContext<'a> {
    pub session_id: &'a str,
    pub cwd: &'a Path,
    /// The tool environment (no credentials).
    pub env: &'a [(OsString, OsString)],
    pub plan: bool,
    /// The session's sandbox (read-only in plan mode); `None`: unconfined,
    /// as the session's commands are.
    pub sandbox: Option<crate::sandbox::SandboxView>,
    /// The session's transcript in Claude Code's format, if it keeps one.
    pub transcript: Option<&'a Path>,
}

/// What the hooks of one event decided.
pub(crate) struct Hooked {
    /// Their outcomes combined.
    pub outcome: Outcome,
    /// What each said that the user should see.
    pub notes: Vec<Note>,
    /// A hook of the repository's said `allow`. Such an `allow` never
    /// skips an approval: the model can write a repository's hooks file.
    pub repository_allow: bool,
}

/// One thing a hook said that the user should see (`hook.message`).
pub(crate) struct Note {
    /// Names the hook.
    pub hook: String,
    pub message: String,
    /// It blocked what it ran for.
    pub blocked: bool,
}

/// Runs the hooks of `event` (for tool events, those matching `tool`);
/// `None` when none matches. Dropping the future ends every hook still
/// running (their reapers kill what they started).
pub(crate) async fn run(
    hooks: &Hooks,
    cx: &HookContext<'_>,
    event: Event,
    tool: Option<&str>,
    input: &Input<'_>,
) -> Option<Hooked> {
    if hooks.is_empty() {
        return None;
    }
    let arguments = match input {
        Input::PreToolUse { arguments, .. } | Input::PostToolUse { arguments, .. } => {
            Some(*arguments)
        }
        _ => None,
    };
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let places = scv_hooks::Places {
        cwd: cx.cwd,
        home: home.as_deref(),
    };
    let matching = hooks.matching_call(event, tool, arguments.map(|a| (a, &places)));
    if matching.is_empty() {
        return None;
    }
    let common = Common {
        session_id: cx.session_id,
        // Claude Code's format (`crate::transcript`), kept current.
        transcript_path: cx.transcript,
        cwd: cx.cwd,
        permission_mode: if cx.plan { "plan" } else { "default" },
    };
    let stdin: Arc<[u8]> = scv_hooks::input_json(&common, input).into();
    let runs = matching.iter().map(|hook| {
        let stdin = stdin.clone();
        async move {
            let run = cx.run_one(hook, &stdin).await;
            let outcome = scv_hooks::interpret(event, hook, run);
            let repository_allow = outcome.decision == scv_hooks::Decision::Allow
                && hook.origin == scv_hooks::Origin::Repository;
            (hook, outcome, repository_allow)
        }
    });
    let ran = futures_util::future::join_all(runs).await;
    let mut notes = Vec::new();
    let mut repository_allow = false;
    let mut outcomes = Vec::with_capacity(ran.len());
    for (hook, outcome, allow) in ran {
        let label = hook.label();
        for message in &outcome.user_messages {
            notes.push(Note {
                hook: label.clone(),
                message: message.clone(),
                blocked: false,
            });
        }
        if matches!(
            outcome.decision,
            scv_hooks::Decision::Deny | scv_hooks::Decision::Block
        ) {
            notes.push(Note {
                hook: label,
                message: outcome.reason.clone().unwrap_or_default(),
                blocked: true,
            });
        }
        repository_allow |= allow;
        outcomes.push(outcome);
    }
    Some(Hooked {
        outcome: scv_hooks::combine(event, outcomes),
        notes,
        repository_allow,
    })
}

impl HookContext<'_> {
    /// The tool environment plus Claude Code's variables: the project
    /// (and SCV's name of it), and a plugin hook's own folder.
    fn hook_env(&self, hook: &HookCommand) -> Vec<(OsString, OsString)> {
        let mut env = self.env.to_vec();
        for name in ["CLAUDE_PROJECT_DIR", "SCV_PROJECT_DIR"] {
            env.push((name.into(), self.cwd.as_os_str().to_os_string()));
        }
        if let Some(root) = &hook.plugin_root {
            env.push(("CLAUDE_PLUGIN_ROOT".into(), root.as_os_str().to_os_string()));
        }
        env
    }

    async fn run_one(&self, hook: &HookCommand, stdin: &[u8]) -> Run {
        match self.spawn_and_wait(hook, stdin).await {
            Ok(run) => run,
            Err(err) => failed(Exit::FailedToStart(err)),
        }
    }

    async fn spawn_and_wait(&self, hook: &HookCommand, stdin: &[u8]) -> Result<Run, String> {
        let pipe =
            |what| move |err: std::io::Error| format!("cannot create the {what} pipe: {err}");
        let (out_read, out_write) = std::io::pipe().map_err(pipe("stdout"))?;
        let (err_read, err_write) = std::io::pipe().map_err(pipe("stderr"))?;
        let (mut report_read, report_write) = std::io::pipe().map_err(pipe("report"))?;
        // The session's sandbox; a hook of the user's own also sees the
        // folders its scripts live in (the home and `$SCV_HOME` are closed
        // to tools), a repository's hook nothing more than `bash` does.
        let runs = match hook.origin {
            scv_hooks::Origin::User => crate::sandbox::Runs::UserHook,
            scv_hooks::Origin::Repository => crate::sandbox::Runs::Command,
        };
        let (in_read, in_write) = std::io::pipe().map_err(pipe("stdin"))?;
        let env = self.hook_env(hook);
        let (reaper, policy) = crate::launch::bash(
            self.sandbox.as_ref().map(|view| (view, runs)),
            crate::launch::Bash {
                line: &hook.command,
                cwd: self.cwd,
                env,
                stdin: OwnedFd::from(in_read),
                stdout: OwnedFd::from(out_write),
                stderr: OwnedFd::from(err_write),
                report: OwnedFd::from(report_write),
            },
        )
        .await
        .map_err(|err| {
            if self.sandbox.is_some() {
                format!("the sandbox could not be set up, so it did not run: {err}")
            } else {
                err
            }
        })?;
        let mut input = Some(
            tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(in_write))
                .map_err(|err| format!("cannot write the hook's input: {err}"))?,
        );
        let receiver = |fd: std::io::PipeReader| {
            tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(fd))
                .map_err(|err| format!("cannot read the hook's output: {err}"))
        };
        let mut stdout = receiver(out_read)?;
        let mut stderr = receiver(err_read)?;
        let feed = async {
            if let Some(input) = &mut input {
                // A hook that reads nothing closes its end: not an error.
                let _ = input.write_all(stdin).await;
            }
            drop(input.take());
        };
        let work = async {
            let ((), out, err) = tokio::join!(
                feed,
                capture(&mut stdout, scv_hooks::MAX_STDOUT_BYTES),
                capture(&mut stderr, scv_hooks::MAX_STDERR_BYTES),
            );
            (out, err)
        };
        let captured = tokio::time::timeout(hook.timeout, work).await;
        let Ok(((stdout, stdout_truncated), (stderr, stderr_truncated))) = captured else {
            reaper.finish(true).await;
            return Ok(failed(Exit::TimedOut));
        };
        reaper.finish(false).await;
        let report = crate::blocking::run(move || {
            let mut text = String::new();
            let _ = report_read.read_to_string(&mut text);
            Report::decode(&text)
        })
        .await
        .ok()
        .flatten();
        let exit = match report {
            // bash's own codes for a command it could not run; 126 is also
            // the reaper's when the sandbox could not be set up.
            Some(Report {
                code: Some(127), ..
            }) => Exit::FailedToStart(format!(
                "command not found (exit 127){}",
                first_line(&stderr)
            )),
            Some(Report {
                code: Some(126), ..
            }) => Exit::FailedToStart(format!(
                "it could not be executed, or its sandbox could not be set up (exit 126){}",
                first_line(&stderr)
            )),
            Some(Report {
                code: Some(code), ..
            }) => Exit::Code(code),
            Some(Report {
                signal: Some(signal),
                ..
            }) => Exit::Signal(signal),
            _ => Exit::FailedToStart("its status is unknown (the reaper sent no report)".into()),
        };
        // A hook the sandbox refused says so, as `bash` does.
        let mut stderr = stderr;
        if !matches!(exit, Exit::Code(0)) {
            let text = String::from_utf8_lossy(&stderr).into_owned();
            if let Some(note) = policy
                .as_ref()
                .and_then(|p| crate::tools::bash::sandbox_note(&p.policy, &text))
            {
                stderr.extend_from_slice(
                    format!("\n{}", note.replace("this command ran", "this hook ran")).as_bytes(),
                );
            }
        }
        Ok(Run {
            exit,
            stdout,
            stderr,
            stdout_truncated,
            stderr_truncated,
        })
    }
}

/// A run that produced nothing.
fn failed(exit: Exit) -> Run {
    Run {
        exit,
        stdout: Vec::new(),
        stderr: Vec::new(),
        stdout_truncated: false,
        stderr_truncated: false,
    }
}

/// `: LINE` of stderr's first line, for a failure's reason.
fn first_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    match text.lines().find(|line| !line.trim().is_empty()) {
        Some(line) => format!(": {}", crate::text::cut(line.trim(), 200)),
        None => String::new(),
    }
}

/// Reads `pipe` to its end, keeping at most `max` bytes (the rest is read
/// and dropped, so the hook never blocks on a full pipe).
async fn capture(pipe: &mut (impl AsyncRead + Unpin), max: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let room = max - kept.len();
        if n > room {
            truncated = true;
        }
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    (kept, truncated)
}
