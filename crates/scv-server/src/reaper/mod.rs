//! The tool-process reaper:
//! `scv-server --tool-process FD [--sandbox POLICY] -- PROGRAM ARGS…`.
//!
//! Every `bash` call runs below one of these: a small child of the server
//! that makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`). Whatever
//! the command starts — background jobs, `setsid`, double forks, a new
//! process group — stays below it, because the kernel re-parents orphans to
//! the nearest subreaper instead of to init. When the command exits, or the
//! server asks (SIGTERM: cancel, timeout, disconnect, shutdown), or the
//! server dies (the parent-death signal the server set before `exec`), the
//! reaper kills and reaps every process left below it, then writes a report
//! on `FD` — the command's status and how many processes it killed — and
//! exits. So no process outlives its tool call, whatever it does to its
//! process group.
//!
//! Every command starts detached (`scv_sandbox::detach`): a session of its
//! own without a controlling terminal, and no descriptor above stderr.
//! With `--sandbox` (a JSON `scv_sandbox::Policy`) the reaper prepares the
//! Landlock ruleset, seccomp filters, mounts and process bound and applies
//! them in the command's child before `exec`; the reaper itself stays
//! unconfined, so the command can neither signal it nor read its `/proc`
//! entry. A sandbox that cannot be built or applied means the command does
//! not run (exit code 126).

pub(crate) mod client;
pub mod host;

pub(crate) use client::ToolHost;

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The first argument that selects this mode.
pub const FLAG: &str = "--tool-process";
/// Followed by the command's sandbox policy.
pub const SANDBOX_FLAG: &str = "--sandbox";
/// The exit code when the sandbox could not be set up.
pub(super) const SANDBOX_FAILED: i32 = 126;

/// What the reaper reports when it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// The command's exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// Processes still running below it that the reaper killed.
    pub killed: usize,
}

impl Report {
    fn encode(&self) -> String {
        format!(
            "{} {} {}\n",
            self.code.unwrap_or(-1),
            self.signal.unwrap_or(0),
            self.killed
        )
    }

    pub fn decode(text: &str) -> Option<Report> {
        let mut parts = text.split_whitespace().map(str::parse::<i64>);
        let (code, signal, killed) = (
            parts.next()?.ok()?,
            parts.next()?.ok()?,
            parts.next()?.ok()?,
        );
        Some(Report {
            code: (code >= 0).then_some(code as i32),
            signal: (signal > 0).then_some(signal as i32),
            killed: killed.max(0) as usize,
        })
    }
}

static STOP: AtomicBool = AtomicBool::new(false);
/// The command's pid, once started.
pub(super) static MAIN: AtomicI32 = AtomicI32::new(0);

/// SIGTERM and friends: stop, and kill the command at once so a `waitpid`
/// that was about to block returns (no missed wake-up).
extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    let main = MAIN.load(Ordering::SeqCst);
    if main > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(main, libc::SIGKILL) };
    }
}

/// Runs the reaper; `args` are the arguments after [`FLAG`]. With
/// `host FD POLICY…` first, a session's tool host instead (`host`).
pub fn main(args: Vec<OsString>) -> ExitCode {
    if args.first().is_some_and(|a| a == host::HOST) {
        return host::main(args.into_iter().skip(1).collect());
    }
    let mut args = args.into_iter();
    // `-`: no report (an MCP server's reaper; its end is seen on the pipes).
    let report_fd = match args.next().as_deref().and_then(|fd| fd.to_str()) {
        Some("-") => None,
        Some(fd) => match fd.parse::<i32>() {
            Ok(fd) => Some(fd),
            Err(_) => {
                eprintln!("scv-server {FLAG}: expected a report descriptor or `-`");
                return ExitCode::from(2);
            }
        },
        None => {
            eprintln!("scv-server {FLAG}: expected a report descriptor or `-`");
            return ExitCode::from(2);
        }
    };
    let mut next = args.next();
    let mut policy = None;
    if next.as_deref() == Some(SANDBOX_FLAG.as_ref()) {
        let parsed = args
            .next()
            .and_then(|arg| arg.into_string().ok())
            .map(|arg| scv_sandbox::Policy::from_arg(&arg));
        match parsed {
            Some(Ok(parsed)) => policy = Some(parsed),
            Some(Err(err)) => {
                eprintln!("scv-server {FLAG}: {err}");
                return ExitCode::from(2);
            }
            None => {
                eprintln!("scv-server {FLAG}: expected a policy after {SANDBOX_FLAG}");
                return ExitCode::from(2);
            }
        }
        next = args.next();
    }
    if next.as_deref() != Some("--".as_ref()) {
        eprintln!("scv-server {FLAG}: expected `--` before the command");
        return ExitCode::from(2);
    }
    let command: Vec<OsString> = args.collect();
    let Some((program, rest)) = command.split_first() else {
        eprintln!("scv-server {FLAG}: no command");
        return ExitCode::from(2);
    };
    // SAFETY: plain syscalls on our own process; the handler only stores
    // to an atomic. No SA_RESTART, so a blocked waitpid returns EINTR.
    unsafe {
        if let Some(fd) = report_fd {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        become_reaper();
    }
    let mut command = std::process::Command::new(program);
    command.args(rest);
    // SAFETY: `detach` only makes system calls (setsid, close_range).
    unsafe { command.pre_exec(scv_sandbox::detach) };
    // Kept until everything below us is gone: it owns the private temp
    // directory.
    let mut prepared = None;
    if let Some(policy) = &policy {
        match scv_sandbox::Prepared::new(policy) {
            Ok(mut ready) => {
                command.env("TMPDIR", ready.tmpdir());
                if let Some(mut confinement) = ready.take_confinement() {
                    // SAFETY: `apply` only makes the kernel calls that
                    // apply the sandbox (no allocation, no lock).
                    unsafe { command.pre_exec(move || confinement.apply()) };
                }
                prepared = Some(ready);
            }
            Err(err) => {
                eprintln!("cannot set up the sandbox: {err}");
                return finish(report_fd, failed(SANDBOX_FAILED));
            }
        }
    }
    let report = match command.spawn() {
        Ok(child) => {
            let main = child.id() as i32;
            MAIN.store(main, Ordering::SeqCst);
            supervise(main)
        }
        Err(err) if policy.is_some() => {
            eprintln!(
                "cannot start {} in the sandbox: {err}",
                program.to_string_lossy()
            );
            failed(SANDBOX_FAILED)
        }
        Err(err) => {
            eprintln!("cannot start {}: {err}", program.to_string_lossy());
            failed(127)
        }
    };
    drop(prepared);
    finish(report_fd, report)
}

fn failed(code: i32) -> Report {
    Report {
        code: Some(code),
        signal: None,
        killed: 0,
    }
}

/// Writes the report and ends the reaper.
pub(super) fn finish(report_fd: Option<i32>, report: Report) -> ExitCode {
    if let Some(fd) = report_fd {
        // SAFETY: the server passed this descriptor for us to own.
        let mut out = unsafe { std::fs::File::from_raw_fd(fd) };
        let _ = out.write_all(report.encode().as_bytes());
    }
    ExitCode::SUCCESS
}

/// `scv-server --tool-process FD|-` (this binary), for the caller to add
/// `[--sandbox POLICY] -- PROGRAM ARGS…`. The reaper gets a parent-death
/// signal, so it cleans up if this server dies; if the server is already
/// gone it does not start. `report_fd` stays open across `exec`.
pub(crate) fn command(report_fd: Option<i32>) -> tokio::process::Command {
    command_with(&[report_fd.map_or_else(|| "-".to_string(), |fd| fd.to_string())])
}

/// `scv-server --tool-process ARGS…` (this binary), with a parent-death
/// signal and a report descriptor kept open where `ARGS` names one.
fn command_with(args: &[String]) -> tokio::process::Command {
    let server = std::process::id() as i32;
    let report_fd = args.first().and_then(|a| a.parse::<i32>().ok());
    let mut command = tokio::process::Command::new("/proc/self/exe");
    command.arg(FLAG).args(args);
    // SAFETY: only async-signal-safe calls between fork and exec: prctl,
    // getppid, fcntl.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
            if libc::getppid() != server {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(fd) = report_fd {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
            Ok(())
        });
    }
    command
}

/// How long the reaper gets to clean up after SIGTERM before the whole
/// group is killed outright.
pub(crate) const GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The reaper's process — a child of ours, or one a session's tool host
/// forked — told to clean up (SIGTERM) if dropped early.
pub(crate) enum Reaper {
    Child(tokio::process::Child),
    Hosted(client::Hosted),
}

impl Reaper {
    pub(crate) fn stop(&self) {
        match self {
            Reaper::Child(child) => {
                if let Some(pid) = child.id() {
                    // SAFETY: kill only sends a signal to our own child.
                    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
                }
            }
            Reaper::Hosted(hosted) => hosted.signal(libc::SIGTERM),
        }
    }

    pub(crate) fn kill_group(&self) {
        match self {
            Reaper::Child(child) => {
                if let Some(pid) = child.id() {
                    // SAFETY: killpg only sends a signal; the group is the
                    // reaper's.
                    unsafe { libc::killpg(pid as i32, libc::SIGKILL) };
                }
            }
            Reaper::Hosted(hosted) => hosted.kill_group(),
        }
    }

    /// Waits until the reaper has ended.
    pub(crate) async fn wait(&mut self) {
        match self {
            Reaper::Child(child) => {
                let _ = child.wait().await;
            }
            Reaper::Hosted(hosted) => hosted.wait().await,
        }
    }

    /// Waits (bounded by [`GRACE`]) for the reaper, after telling it to
    /// clean up when `stop`; then kills its group.
    pub(crate) async fn finish(mut self, stop: bool) {
        if stop {
            self.stop();
        }
        if tokio::time::timeout(GRACE, self.wait()).await.is_err() {
            self.kill_group();
            self.wait().await;
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // Cancelled or dropped mid-run: the reaper kills everything below
        // it; tokio reaps it in the background.
        self.stop();
    }
}

/// Makes this process a child subreaper whose SIGTERM, SIGINT and
/// SIGHUP set `STOP` (no SA_RESTART, so a blocked waitpid returns EINTR).
///
/// # Safety
/// Plain system calls on this process; the handler only stores to
/// atomics and sends a signal.
pub(super) unsafe fn become_reaper() {
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    let mut action: libc::sigaction = std::mem::zeroed();
    action.sa_sigaction = on_stop as *const () as libc::sighandler_t;
    libc::sigemptyset(&mut action.sa_mask);
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

/// Waits for `main` (reaping orphans that exit meanwhile) until it exits
/// or we are told to stop; then kills everything left.
pub(super) fn supervise(main: i32) -> Report {
    let mut report = Report {
        code: None,
        signal: None,
        killed: 0,
    };
    let mut main_done = false;
    while !STOP.load(Ordering::SeqCst) {
        let mut status = 0;
        // SAFETY: waitpid on our own children.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == main {
            record(&mut report, status);
            main_done = true;
            break;
        }
        if pid < 0 && last_errno() == libc::ECHILD {
            break;
        }
    }
    let mut signalled = HashSet::new();
    loop {
        for child in children() {
            // SAFETY: kill only sends a signal; a stale pid fails harmlessly.
            if unsafe { libc::kill(child, libc::SIGKILL) } == 0 && child != main {
                signalled.insert(child);
            }
        }
        let mut status = 0;
        // SAFETY: waitpid on our own children.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid < 0 {
            match last_errno() {
                libc::EINTR => continue,
                _ => break, // ECHILD: nothing is left below us
            }
        }
        if pid == main && !main_done {
            record(&mut report, status);
            main_done = true;
        } else if signalled.contains(&pid) {
            report.killed += 1;
        }
    }
    report
}

fn record(report: &mut Report, status: libc::c_int) {
    if libc::WIFEXITED(status) {
        report.code = Some(libc::WEXITSTATUS(status));
    } else if libc::WIFSIGNALED(status) {
        report.signal = Some(libc::WTERMSIG(status));
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Our children: from `/proc/self/task/*/children`, or, where the kernel
/// lacks that file, by scanning every process's parent.
fn children() -> Vec<i32> {
    let me = std::process::id() as i32;
    if let Ok(text) = std::fs::read_to_string(format!("/proc/self/task/{me}/children")) {
        return text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| parent_of(*pid) == Some(me))
        .collect()
}

/// The parent of `pid`, from `/proc/PID/stat`.
pub(crate) fn parent_of(pid: i32) -> Option<i32> {
    // Bytes: the name a process gives itself need not be UTF-8.
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // The name is in parentheses and may hold spaces or `)`; the fields
    // after the last `)` are: state, ppid, …
    let close = stat.iter().rposition(|b| *b == b')')?;
    let after = std::str::from_utf8(&stat[close + 1..]).ok()?;
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip() {
        for report in [
            Report {
                code: Some(3),
                signal: None,
                killed: 2,
            },
            Report {
                code: None,
                signal: Some(9),
                killed: 0,
            },
        ] {
            assert_eq!(Report::decode(&report.encode()), Some(report));
        }
        assert_eq!(Report::decode("garbage"), None);
    }
}
