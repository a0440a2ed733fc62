//! `/diff`: the workspace's `git diff`, coloured, for the overlay.
//!
//! Git runs with what could make it run programs from a repository's
//! configuration turned off (an external diff, text conversion, the
//! file-system monitor), since the workspace is written by the model.

use super::wrap::clean;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use std::path::Path;
use std::process::{Command, Stdio};

/// At most this much of the diff is shown.
const MAX_DIFF_BYTES: usize = 4 * 1024 * 1024;

/// The diff's lines (empty when nothing changed), or why there is none.
pub fn git_diff(cwd: &Path) -> Result<Vec<Line<'static>>, String> {
    let inside = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["rev-parse", "--is-inside-work-tree"])
        .stdin(Stdio::null())
        .output()
        .map_err(|err| format!("cannot run git: {err}"))?;
    if !inside.status.success() || inside.stdout.trim_ascii() != b"true" {
        return Err("not a git repository".into());
    }
    let output = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args([
            "-c",
            "core.fsmonitor=false",
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
        ])
        .stdin(Stdio::null())
        .env("GIT_PAGER", "cat")
        .output()
        .map_err(|err| format!("cannot run git: {err}"))?;
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
