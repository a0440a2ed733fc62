//! The session's transcript in Claude Code's line format, for hooks
//! (`transcript_path`): a Stop hook that reads the last assistant message
//! (ralph-loop, hookify's rules) reads it as it reads Claude Code's.
//!
//! One JSON object a line, as Claude Code writes its `~/.claude/projects/…`
//! files: `type` `user` or `assistant`, `message` {`role`, `content`} (an
//! assistant's `content` a list of `text` and `tool_use` blocks — Claude
//! Code's tool names and inputs — a tool result a `user` line with a
//! `tool_result` block), and `uuid`, `parentUuid`, `sessionId`, `cwd`,
//! `timestamp`, `isSidechain`, `userType`, `version`.
//!
//! Kept in `$SCV_HOME/transcripts/ID/transcript.jsonl` only for a session
//! that has hooks; brought up to date before its hooks run (new messages
//! appended; the whole rewritten when the history was trimmed or
//! compacted), so it is never bigger than the session's history
//! (`max_history_bytes`) plus Claude Code's framing; the session's sandbox
//! lets its commands and hooks read that folder (and only that one of
//! `$SCV_HOME`). Beside it, `env/claude-env.sh` is `CLAUDE_ENV_FILE`, which
//! the sandbox lets them write. Removed when the session ends.

use crate::model::Message;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Past this many folders in `$SCV_HOME/transcripts` (sessions of a
/// server that died kept theirs), those a day old are removed when the
/// next one is made.
const MAX_FOLDERS: usize = 256;

/// The name of `CLAUDE_ENV_FILE` in its folder.
const ENV_FILE: &str = "claude-env.sh";

/// One session's transcript file.
pub(crate) struct Transcript {
    dir: PathBuf,
    path: PathBuf,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// How many of the history's messages the file holds.
    written: usize,
    /// The first message written, to notice a history rewritten under it.
    first: Option<String>,
    /// The `uuid` of the last line.
    last_uuid: Option<String>,
}

impl Transcript {
    /// A new, empty transcript under `scv_home` (blocking). `None` when
    /// its folder cannot be made (hooks then get `""`, as before).
    pub(crate) fn create(scv_home: &Path) -> Option<Transcript> {
        use std::os::unix::fs::DirBuilderExt;
        let parent = scv_home.join("transcripts");
        sweep(&parent);
        let dir = parent.join(uuid::Uuid::new_v4().simple().to_string());
        let made = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir);
        if let Err(err) = made {
            tracing::warn!("hooks: no transcript for them ({}): {err}", dir.display());
            return None;
        }
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let path = dir.join("transcript.jsonl");
        let env = dir.join("env");
        let made = std::fs::write(&path, b"")
            .and_then(|()| std::fs::DirBuilder::new().mode(0o700).create(&env))
            .and_then(|()| std::fs::write(env.join(ENV_FILE), b""));
        if let Err(err) = made {
            tracing::warn!("hooks: no transcript for them ({}): {err}", path.display());
            return None;
        }
        Some(Transcript {
            dir,
            path,
            state: Mutex::new(State::default()),
        })
    }

    /// The file (`transcript_path`).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The folder the sandbox lets hooks read.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The folder of `CLAUDE_ENV_FILE`, which the sandbox lets hooks (and
    /// commands) write.
    pub(crate) fn env_dir(&self) -> PathBuf {
        self.dir.join("env")
    }

    /// `CLAUDE_ENV_FILE`: what a `SessionStart` hook writes there (`export
    /// NAME=value` lines) is sourced before each later sandboxed `bash`
    /// call of the session (`tools::bash`).
    pub(crate) fn env_file(&self) -> PathBuf {
        self.env_dir().join(ENV_FILE)
    }

    /// What of `messages` the file lacks (cheap: only the missing
    /// messages are cloned); `None` when it is up to date.
    pub(crate) fn pending(&self, messages: &[Message]) -> Option<Pending> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let first = messages.first().map(key);
        let rewrite = messages.len() < state.written || (state.written > 0 && first != state.first);
        let from = if rewrite { 0 } else { state.written };
        if !rewrite && from == messages.len() {
            return None;
        }
        Some(Pending {
            from,
            rewrite,
            messages: messages[from..].to_vec(),
            first,
        })
    }

    /// Writes what [`Transcript::pending`] found (blocking).
    pub(crate) fn write(&self, pending: Pending, session_id: &str, cwd: &Path) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if pending.rewrite {
            *state = State::default();
        } else if state.written != pending.from {
            // Another write got there first; the next sync catches up.
            return;
        }
        let mut text = String::new();
        let cwd = cwd.display().to_string();
        for message in &pending.messages {
            let uuid = uuid::Uuid::new_v4().to_string();
            let mut line = line(message, &cwd);
            line["uuid"] = json!(uuid);
            line["parentUuid"] = json!(state.last_uuid);
            line["sessionId"] = json!(session_id);
            line["cwd"] = json!(cwd);
            line["isSidechain"] = json!(false);
            line["userType"] = json!("external");
            line["version"] = json!(env!("CARGO_PKG_VERSION"));
            line["timestamp"] = json!(scv_client::time::rfc3339(scv_client::time::unix_seconds()));
            text.push_str(&line.to_string());
            text.push('\n');
            state.last_uuid = Some(uuid);
        }
        let written = if state.written == 0 {
            std::fs::write(&self.path, text.as_bytes())
        } else {
            std::fs::OpenOptions::new()
                .append(true)
                .open(&self.path)
                .and_then(|mut file| file.write_all(text.as_bytes()))
        };
        match written {
            Ok(()) => {
                state.written = pending.from + pending.messages.len();
                state.first = pending.first;
            }
            Err(err) => {
                tracing::warn!(
                    "hooks: the transcript {} was not written: {err}",
                    self.path.display()
                );
                *state = State::default();
            }
        }
    }
}

/// Messages the transcript file lacks.
pub(crate) struct Pending {
    from: usize,
    rewrite: bool,
    messages: Vec<Message>,
    first: Option<String>,
}

/// Removes the day-old folders of `parent` when it holds more than
/// [`MAX_FOLDERS`]: those whose transcript was last written a day ago (a
/// live session's is written before each of its hooks).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let entries: Vec<_> = entries.flatten().take(MAX_FOLDERS * 4).collect();
    if entries.len() <= MAX_FOLDERS {
        return;
    }
    let day = std::time::Duration::from_secs(24 * 3600);
    for entry in entries {
        let file = entry.path().join("transcript.jsonl");
        let old = std::fs::metadata(&file)
            .or_else(|_| entry.metadata())
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > day);
        if old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Drop for Transcript {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What tells one message from another cheaply (its kind and start).
fn key(message: &Message) -> String {
    let text = match message {
        Message::User { content, .. } => content.as_str().into_owned(),
        Message::Assistant(a) => a
            .text
            .as_ref()
            .map(|t| t.as_str().into_owned())
            .unwrap_or_default(),
        Message::Tool { call_id, .. } => call_id.clone(),
    };
    crate::text::cut(&text, 256).to_string()
}

/// A message as Claude Code's line (without the framing fields).
fn line(message: &Message, cwd: &str) -> Value {
    match message {
        Message::User { content, .. } => json!({
            "type": "user",
            "message": {"role": "user", "content": content.as_str()},
        }),
        Message::Assistant(assistant) => {
            let mut content = Vec::new();
            if let Some(text) = &assistant.text {
                content.push(json!({"type": "text", "text": text.as_str()}));
            }
            for call in &assistant.tool_calls {
                let arguments: Value =
                    serde_json::from_str(&call.arguments.as_str()).unwrap_or(Value::Null);
                content.push(json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": scv_hooks::claude_tool_name(&call.name),
                    "input": scv_hooks::tool_input(Path::new(cwd), &call.name, &arguments),
                }));
            }
            json!({
                "type": "assistant",
                "message": {"type": "message", "role": "assistant", "content": content},
            })
        }
        Message::Tool {
            call_id,
            content,
            success,
        } => json!({
            "type": "user",
            "message": {"role": "user", "content": [{
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": content.as_str(),
                "is_error": !success,
            }]},
        }),
    }
}
