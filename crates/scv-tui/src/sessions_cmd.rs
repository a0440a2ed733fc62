//! `scv sessions list | delete ID | export ID`: the session store read
//! directly (`$SCV_HOME/sessions`, the daemon need not run). Locks are the
//! store's: a session open on some connection is listed as open and is
//! not deleted.

use anyhow::{anyhow, Result};
use scv_client::text::visible;
use scv_client::time::utc;
use scv_protocol::{TranscriptItem, TurnOutcome};
use scv_store::{Listed, SessionStore, StoreError};
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// How `export` writes a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Json,
}

fn store(home: &Path) -> Result<SessionStore> {
    SessionStore::open(home).map_err(|err| anyhow!("{err}"))
}

fn refusal(err: StoreError) -> anyhow::Error {
    match err {
        StoreError::NotFound(id) => {
            anyhow!("no stored session {id} (`scv sessions list` shows them)")
        }
        other => anyhow!("{other}"),
    }
}

/// `scv sessions list`: most recently updated first.
pub fn list(home: &Path, json: bool) -> Result<ExitCode> {
    let (sessions, _) = store(home)?.list();
    if json {
        let listed: Vec<scv_protocol::StoredSession> =
            sessions.into_iter().map(Into::into).collect();
        println!("{}", serde_json::to_string_pretty(&listed)?);
    } else {
        print!("{}", visible(&table(&sessions, scv_store::now_unix())));
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per session after a header.
pub fn table(sessions: &[Listed], now: u64) -> String {
    if sessions.is_empty() {
        return "no stored sessions\n".into();
    }
    let mut out = format!(
        "{:<36}  {:>8}  {:>5}  {}\n",
        "SESSION", "UPDATED", "TURNS", "DIRECTORY · TITLE"
    );
    for s in sessions {
        let what = match &s.damaged {
            Some(why) => format!("[cannot be read: {why}]"),
            None => format!(
                "{} · {}{}{}",
                s.cwd,
                s.title,
                if s.open { "  [open]" } else { "" },
                s.parent
                    .as_ref()
                    .map(|p| format!("  [subagent of {}]", p.session_id))
                    .or_else(|| s
                        .forked_from
                        .as_ref()
                        .map(|f| format!("  [fork of {}]", short_id(&f.session_id))))
                    .unwrap_or_default()
            ),
        };
        let _ = writeln!(
            out,
            "{:<36}  {:>8}  {:>5}  {}",
            s.session_id,
            age(now.saturating_sub(s.updated)),
            s.turns,
            what
        );
    }
    out
}

/// A session id as the TUI prints it: its UUID's first group (8 hex
/// digits); any unique start of an id names it where one is asked.
pub fn short_id(id: &str) -> &str {
    id.split('-').next().unwrap_or(id)
}

/// `3m ago`, `5h ago`, `2d ago`.
pub fn age(seconds: u64) -> String {
    match seconds {
        0..=59 => "just now".into(),
        60..=3599 => format!("{}m ago", seconds / 60),
        3600..=86_399 => format!("{}h ago", seconds / 3600),
        _ => format!("{}d ago", seconds / 86_400),
    }
}

/// `scv sessions delete ID` (or the start of one: its short id).
pub fn delete(home: &Path, session_id: &str) -> Result<ExitCode> {
    let store = store(home)?;
    let session_id = store.resolve(session_id).map_err(refusal)?;
    store.delete(&session_id).map_err(|err| match err {
        // Open: where it lives, and how to let it go.
        StoreError::Open(id) => anyhow!(
            "session {id} is open in a running scv, scv exec, editor or chat; end it there (Ctrl+D, /new or /resume in the TUI), then run `scv sessions delete {}` again",
            short_id(&id)
        ),
        other => refusal(other),
    })?;
    eprintln!("deleted session {session_id}");
    Ok(ExitCode::SUCCESS)
}

/// `scv sessions export ID --format md|json` to stdout.
pub fn export(home: &Path, session_id: &str, format: Format) -> Result<ExitCode> {
    let store = store(home)?;
    let session_id = &store.resolve(session_id).map_err(refusal)?;
    let replay = store.read(session_id, None).map_err(refusal)?;
    let items = scv_store::transcript_whole(&replay.turns);
    let title = replay.title.clone().unwrap_or_default();
    match format {
        Format::Json => {
            let value = serde_json::json!({
                "session_id": session_id, "cwd": replay.header.cwd, "title": title,
                "created_unix_seconds": replay.header.created,
                "updated_unix_seconds": replay.updated,
                "provider": replay.provider, "model": replay.model,
                "forked_from": replay.header.forked_from, "items": items,
            });
            println!("{}", serde_json::to_string_pretty(&value)?);
        }
        Format::Markdown => {
            let header = Header {
                session_id,
                title: &title,
                cwd: &replay.header.cwd,
                model: &format!("{}/{}", replay.provider, replay.model),
                created: replay.header.created,
            };
            // Nothing in a stored answer acts on the terminal it is read in.
            print!("{}", visible(&markdown(&header, &items)));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What an export's heading says.
pub struct Header<'a> {
    pub session_id: &'a str,
    pub title: &'a str,
    pub cwd: &'a str,
    pub model: &'a str,
    pub created: u64,
}

/// The conversation as Markdown: prompts and answers as sections, tool
/// calls with their arguments and output in fenced blocks.
pub fn markdown(header: &Header<'_>, items: &[TranscriptItem]) -> String {
    let mut out = String::new();
    let title = if header.title.is_empty() {
        "SCV session"
    } else {
        header.title
    };
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(out, "- Session: `{}`", header.session_id);
    let _ = writeln!(out, "- Directory: `{}`", header.cwd);
    let _ = writeln!(out, "- Model: {}", header.model);
    let _ = writeln!(out, "- Started: {}\n", utc(header.created));
    for item in items {
        match item {
            TranscriptItem::User { text, .. } => {
                let _ = writeln!(out, "## User\n\n{}\n", text.trim_end());
            }
            TranscriptItem::Assistant { text, .. } => {
                let _ = writeln!(out, "## Assistant\n\n{}\n", text.trim_end());
            }
            TranscriptItem::Tool {
                name,
                arguments,
                output,
                success,
                truncated,
                ..
            } => {
                let status = if *success { "done" } else { "failed" };
                let _ = writeln!(out, "### Tool `{name}` ({status})\n");
                let _ = writeln!(out, "{}", fenced(arguments, "json"));
                let cut = if *truncated {
                    "\n[output cut for the transcript]"
                } else {
                    ""
                };
                let _ = writeln!(out, "{}", fenced(&format!("{output}{cut}"), ""));
            }
            TranscriptItem::TurnEnded {
                outcome, message, ..
            } => {
                let note = match outcome {
                    TurnOutcome::Completed => continue,
                    TurnOutcome::Cancelled => "The turn was cancelled.".to_string(),
                    TurnOutcome::Failed => {
                        format!("The turn failed: {}", message.as_deref().unwrap_or(""))
                    }
                    TurnOutcome::Interrupted => {
                        "The turn was interrupted (SCV stopped while it ran; it was not run again)."
                            .to_string()
                    }
                };
                let _ = writeln!(out, "_{}_\n", note.trim());
            }
        }
    }
    out
}

/// `text` in a fence longer than any run of backticks inside it.
fn fenced(text: &str, lang: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages() {
        assert_eq!(age(30), "just now");
        assert_eq!(age(7_200), "2h ago");
        assert_eq!(age(3 * 86_400), "3d ago");
    }

    #[test]
    fn a_fence_outlasts_the_backticks_inside() {
        assert_eq!(fenced("a ``` b", ""), "````\na ``` b\n````\n");
        assert_eq!(fenced("{}", "json"), "```json\n{}\n```\n");
    }
}
