//! `/diff`: the workspace's `git diff`, coloured, for the overlay.
//!
//! The workspace is written by the model, and a repository's configuration
//! and attributes can make git run programs (filter drivers, the
//! file-system monitor, an external diff, text conversion). So git runs in
//! the read-only sandbox with no network, as a `bash` call would, with the
//! knobs that start programs turned off too. Where the kernel cannot
//! enforce the sandbox, `/diff` refuses a repository whose configuration
//! names a filter driver rather than run it unconfined.

use super::wrap::clean;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// At most this much of the diff is shown.
const MAX_DIFF_BYTES: usize = 4 * 1024 * 1024;

/// The diff's lines (empty when nothing changed), or why there is none.
pub fn git_diff(cwd: &Path) -> Result<Vec<Line<'static>>, String> {
    let inside = git(cwd, &["rev-parse", "--is-inside-work-tree"])?;
    if !inside.status.success() || inside.stdout.trim_ascii() != b"true" {
        return Err("not a git repository".into());
    }
    let output = git(
        cwd,
        &["diff", "--no-color", "--no-ext-diff", "--no-textconv"],
    )?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().next().unwrap_or("git diff failed");
        return Err(clean(first).into_owned());
    }
    let cut = output.stdout.len() > MAX_DIFF_BYTES;
    let text = String::from_utf8_lossy(&output.stdout[..output.stdout.len().min(MAX_DIFF_BYTES)]);
    let mut lines: Vec<Line<'static>> = text.lines().map(diff_line).collect();
    if cut {
        lines.push(Line::styled(
            "[the diff is longer; shown up to 4 MiB]",
            Style::default().fg(Color::DarkGray),
        ));
    }
    Ok(lines)
}

/// Runs `git ARGS` in `cwd`: in the read-only sandbox where the kernel
/// enforces one; elsewhere only when the repository configures no filter
/// driver.
fn git(cwd: &Path, args: &[&str]) -> Result<Output, String> {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(cwd)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .stdin(Stdio::null())
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0");
    let sandbox = match scv_sandbox::probe() {
        scv_sandbox::Support::Enforced {
            mount_namespace, ..
        } => Some(read_only(cwd, mount_namespace)?),
        scv_sandbox::Support::Unavailable(_) => {
            let filters = Command::new("git")
                .arg("-C")
                .arg(cwd)
                .args([
                    "config",
                    "--get-regexp",
                    r"^filter\..*\.(clean|smudge|process)$",
                ])
                .stdin(Stdio::null())
                .output()
                .map_err(|err| format!("cannot run git: {err}"))?;
            if !filters.stdout.trim_ascii().is_empty() {
                return Err("the repository configures filter drivers, and without a sandbox /diff does not run them; use git diff in your shell".into());
            }
            None
        }
    };
    let mut prepared = sandbox;
    if let Some(confinement) = prepared.as_mut().and_then(|p| p.take_confinement()) {
        let mut confinement = Some(confinement);
        // SAFETY: `detach` and `apply` only make system calls.
        unsafe {
            command.pre_exec(move || {
                scv_sandbox::detach()?;
                match confinement.as_mut() {
                    Some(confinement) => confinement.apply(),
                    None => Err(std::io::Error::from_raw_os_error(libc::EALREADY)),
                }
            });
        }
    }
    let output = command
        .output()
        .map_err(|err| format!("cannot run git: {err}"));
    drop(prepared);
    output
}

/// The read-only sandbox for a git run in `cwd`: no network, nothing
/// written but a private temp directory.
fn read_only(cwd: &Path, mount_namespace: bool) -> Result<scv_sandbox::Prepared, String> {
    let settings = scv_sandbox::Settings {
        mode: scv_sandbox::Mode::ReadOnly,
        network: scv_sandbox::Network::Off,
        protect_git: true,
        max_processes: 64,
        mount_namespace,
        scv_home: std::path::absolute(scv_client::scv_home()).unwrap_or_default(),
        user_home: std::env::var_os("HOME").map(PathBuf::from),
        ..Default::default()
    };
    let policy = scv_sandbox::Policy::new(&settings, cwd);
    scv_sandbox::Prepared::new(&policy).map_err(|err| format!("cannot set up the sandbox: {err}"))
}

/// One line of a unified diff, coloured by its kind.
pub fn diff_line(line: &str) -> Line<'static> {
    let style = if line.starts_with("diff --git") {
        Style::default().add_modifier(Modifier::BOLD)
    } else if line.starts_with("+++") || line.starts_with("---") {
        Style::default()
            .fg(Color::White)
            .add_modifier(Modifier::BOLD)
    } else if line.starts_with("@@") {
        Style::default().fg(Color::Cyan)
    } else if line.starts_with('+') {
        Style::default().fg(Color::Green)
    } else if line.starts_with('-') {
        Style::default().fg(Color::Red)
    } else {
        Style::default().fg(Color::Gray)
    };
    Line::styled(clean(line).into_owned(), style)
}
