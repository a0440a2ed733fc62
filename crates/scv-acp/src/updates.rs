//! SCV tool events as ACP tool calls. `tool.proposed` becomes a
//! `tool_call` (status `pending`) with a kind, a title, locations for file
//! tools and, for `write_file` / `edit_file`, the change as a `diff`;
//! `tool.started` and `tool.completed` become `tool_call_update`s. The
//! diff's old text is the file as it was when the call was proposed,
//! before it ran (read here, relative to the session's workspace); its new
//! text is the file after the call completed (or, before, what the
//! arguments will make of it).
//!
//! Only files inside the session's workspace are read (symbolic links
//! resolved), only regular files, at most [`MAX_DIFF_FILE_BYTES`] of
//! UTF-8 text; otherwise the call has no diff, only its output.

use agent_client_protocol::v1::schema::{
    Diff, ToolCall, ToolCallContent, ToolCallId, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Tool calls tracked per session: the daemon runs a turn's calls one at
/// a time and asks a model response for at most 32, so this is never
/// reached by a well-behaved daemon; past it the oldest is forgotten.
pub const MAX_TRACKED_CALLS: usize = scv_protocol::limits::MAX_TOOL_CALLS_PER_RESPONSE;

/// Largest file read for a diff's old or new text.
pub const MAX_DIFF_FILE_BYTES: u64 = 1024 * 1024;

/// Longest title, in characters.
const MAX_TITLE_CHARS: usize = 200;

/// The ACP kind of an SCV tool.
pub fn kind(name: &str) -> ToolKind {
    match name {
        "read_file" | "list_dir" | "bash_output" => ToolKind::Read,
        "write_file" | "edit_file" => ToolKind::Edit,
        "bash" | "bash_kill" => ToolKind::Execute,
        "search" => ToolKind::Search,
        // A subagent thinks the task through (see `subagents`).
        "task" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// A call's title before the daemon's summary is known: the first line
/// of what SCV's approval summary says of it, or the tool's name.
pub fn title(name: &str, arguments: &Value) -> String {
    let arg = |key: &str| arguments.get(key).and_then(Value::as_str).unwrap_or("");
    let text = match name {
        "bash" if arguments.get("unsandboxed").and_then(Value::as_bool) == Some(true) => {
            format!("Run shell command outside the sandbox: {}", arg("command"))
        }
        "bash" if arguments.get("background").and_then(Value::as_bool) == Some(true) => {
            format!("Run shell command in the background: {}", arg("command"))
        }
        "bash" => format!("Run shell command: {}", arg("command")),
        "bash_output" => format!(
            "Read the output of background process {}",
            arg("process_id")
        ),
        "bash_kill" => format!("Stop background process {}", arg("process_id")),
        "read_file" => format!("Read file: {}", arg("path")),
        "write_file" => format!("Write file: {}", arg("path")),
        "edit_file" => format!("Edit file: {}", arg("path")),
        "list_dir" => format!("List directory: {}", arg("path")),
        "search" => format!("Search for: {}", arg("pattern")),
        "task" => format!("subagent: {}", arg("description")),
        _ => name.to_string(),
    };
    first_line(&text)
}

/// The first line of `text`, at most [`MAX_TITLE_CHARS`], marked `…` when
/// anything was left out.
pub fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(MAX_TITLE_CHARS).collect();
    if out.len() < text.trim_end().len() {
        out.push_str(" …");
    }
    out
}

/// `path` (relative to `cwd`, or absolute) resolved with its symbolic
/// links, when it lies inside `cwd` (canonical). A path that does not
/// exist yet resolves through its nearest existing ancestor.
pub fn resolve(cwd: &Path, path: &str) -> Option<PathBuf> {
    if path.is_empty() {
        return None;
    }
    let joined = cwd.join(path);
    let mut existing = joined.as_path();
    let mut rest = Vec::new();
    let base = loop {
        match existing.canonicalize() {
            Ok(real) => break real,
            Err(_) => {
                rest.push(existing.file_name()?);
                existing = existing.parent()?;
            }
        }
    };
    let mut resolved = base;
    for part in rest.iter().rev() {
        if Path::new(part)
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return None;
        }
        resolved.push(part);
    }
    resolved.starts_with(cwd).then_some(resolved)
}

/// A file's text as far as a diff can show it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Snapshot {
    Absent,
    Text(String),
    /// Too large, not a regular file, not UTF-8, or unreadable.
    Unknown,
}

async fn snapshot(path: PathBuf) -> Snapshot {
    tokio::task::spawn_blocking(move || match std::fs::metadata(&path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Snapshot::Absent,
        Err(_) => Snapshot::Unknown,
        Ok(meta) if !meta.is_file() || meta.len() > MAX_DIFF_FILE_BYTES => Snapshot::Unknown,
        Ok(_) => {
            use std::io::Read;
            let mut bytes = Vec::new();
            let read = std::fs::File::open(&path)
                .and_then(|f| f.take(MAX_DIFF_FILE_BYTES + 1).read_to_end(&mut bytes));
            match read {
                Ok(n) if n as u64 <= MAX_DIFF_FILE_BYTES => {
                    String::from_utf8(bytes).map_or(Snapshot::Unknown, Snapshot::Text)
                }
                _ => Snapshot::Unknown,
            }
        }
    })
    .await
    .unwrap_or(Snapshot::Unknown)
}

/// What a file tool will change.
#[derive(Debug, Clone)]
struct FileChange {
    path: PathBuf,
    /// Before the call ran; `None` when the file did not exist.
    old: Option<String>,
    /// What the arguments will make of it, when that can be worked out.
    preview: Option<String>,
}

impl FileChange {
    fn diff(&self, new: String) -> ToolCallContent {
        Diff::new(self.path.clone(), new)
            .old_text(self.old.clone())
            .into()
    }
}

/// The new text an edit will produce, as `edit_file` does it: one
/// occurrence (which must be unique) or all of them.
fn edited(old: &str, arguments: &Value) -> Option<String> {
    let find = arguments.get("old_string").and_then(Value::as_str)?;
    let replace = arguments.get("new_string").and_then(Value::as_str)?;
    if find.is_empty() {
        return None;
    }
    if arguments.get("replace_all").and_then(Value::as_bool) == Some(true) {
        return old.contains(find).then(|| old.replace(find, replace));
    }
    (old.matches(find).count() == 1).then(|| old.replacen(find, replace, 1))
}

#[derive(Debug)]
struct Tracked {
    id: ToolCallId,
    order: u64,
    kind: ToolKind,
    file: Option<FileChange>,
}

/// The tool calls of one session's running turn, by SCV call id.
#[derive(Debug, Default)]
pub struct ToolCalls {
    calls: HashMap<String, Tracked>,
    /// Numbers ACP tool call ids: model call ids repeat across turns.
    next: u64,
}

impl ToolCalls {
    /// `tool.proposed` as a `tool_call`; reads a file tool's target first.
    pub async fn proposed(
        &mut self,
        cwd: &Path,
        call_id: &str,
        name: &str,
        arguments: &Value,
    ) -> ToolCall {
        self.next += 1;
        let id = ToolCallId::new(format!("{}-{call_id}", self.next));
        let kind = kind(name);
        let path = arguments.get("path").and_then(Value::as_str);
        let resolved = path.and_then(|p| resolve(cwd, p));
        let mut file = None;
        if let (Some(target), "write_file" | "edit_file") = (&resolved, name) {
            let old = snapshot(target.clone()).await;
            let old = match old {
                Snapshot::Absent => Some(None),
                Snapshot::Text(text) => Some(Some(text)),
                Snapshot::Unknown => None,
            };
            if let Some(old) = old {
                let preview = match name {
                    "write_file" => arguments
                        .get("content")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    _ => old.as_deref().and_then(|o| edited(o, arguments)),
                };
                file = Some(FileChange {
                    path: target.clone(),
                    old,
                    preview,
                });
            }
        }
        let location = match (name, path) {
            ("read_file" | "write_file" | "edit_file" | "list_dir" | "search", Some(p)) => {
                Some(resolved.clone().unwrap_or_else(|| cwd.join(p)))
            }
            ("search" | "list_dir", None) => Some(cwd.to_path_buf()),
            _ => None,
        };
        let mut call = ToolCall::new(id.clone(), title(name, arguments))
            .kind(kind)
            .status(ToolCallStatus::Pending)
            .raw_input(arguments.clone());
        if let Some(location) = location {
            call = call.locations(vec![ToolCallLocation::new(location)]);
        }
        if let Some(change) = &file {
            if let Some(preview) = &change.preview {
                call = call.content(vec![change.diff(preview.clone())]);
            }
        }
        if self.calls.len() >= MAX_TRACKED_CALLS {
            if let Some(oldest) = self
                .calls
                .iter()
                .min_by_key(|(_, t)| t.order)
                .map(|(k, _)| k.clone())
            {
                self.calls.remove(&oldest);
            }
        }
        self.calls.insert(
            call_id.to_string(),
            Tracked {
                id,
                order: self.next,
                kind,
                file,
            },
        );
        call
    }

    /// The tool call a permission request is about, titled by the
    /// daemon's summary: the change as a diff for file edits, the whole
    /// summary (every line of a command) otherwise.
    pub fn permission(&self, call_id: &str, name: &str, summary: &str) -> ToolCallUpdate {
        let tracked = self.calls.get(call_id);
        let id = tracked.map_or_else(|| ToolCallId::new(call_id), |t| t.id.clone());
        let diff = tracked
            .and_then(|t| t.file.as_ref())
            .and_then(|f| f.preview.clone().map(|p| f.diff(p)));
        let content = diff.unwrap_or_else(|| summary.to_string().into());
        ToolCallUpdate::new(
            id,
            ToolCallUpdateFields::new()
                .title(first_line(summary))
                .kind(tracked.map_or_else(|| kind(name), |t| t.kind))
                .status(ToolCallStatus::Pending)
                .content(vec![content]),
        )
    }

    /// The ACP id of a tracked call.
    pub fn id(&self, call_id: &str) -> Option<ToolCallId> {
        self.calls.get(call_id).map(|t| t.id.clone())
    }

    /// `tool.started` as `in_progress`.
    pub fn started(&self, call_id: &str) -> Option<ToolCallUpdate> {
        let tracked = self.calls.get(call_id)?;
        Some(ToolCallUpdate::new(
            tracked.id.clone(),
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        ))
    }

    /// `tool.completed` as `completed` or `failed` with the output; a
    /// successful file edit also shows its diff.
    pub async fn completed(
        &mut self,
        call_id: &str,
        success: bool,
        output: &str,
        truncated: bool,
    ) -> Option<ToolCallUpdate> {
        let tracked = self.calls.remove(call_id)?;
        let mut content = Vec::new();
        if let (true, Some(change)) = (success, &tracked.file) {
            let new = match snapshot(change.path.clone()).await {
                Snapshot::Text(text) => Some(text),
                _ => change.preview.clone(),
            };
            if let Some(new) = new {
                content.push(change.diff(new));
            }
        }
        let mut text = output.to_string();
        if truncated {
            text.push_str("\n[output was truncated]");
        }
        if !text.is_empty() {
            content.push(text.into());
        }
        let status = if success {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        };
        Some(ToolCallUpdate::new(
            tracked.id,
            ToolCallUpdateFields::new()
                .status(status)
                .content(content)
                .raw_output(json!({ "success": success, "truncated": truncated })),
        ))
    }

    /// The turn ended: nothing more will happen to its calls.
    pub fn clear(&mut self) {
        self.calls.clear();
    }

    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn kinds_and_titles() {
        assert_eq!(kind("read_file"), ToolKind::Read);
        assert_eq!(kind("list_dir"), ToolKind::Read);
        assert_eq!(kind("edit_file"), ToolKind::Edit);
        assert_eq!(kind("write_file"), ToolKind::Edit);
        assert_eq!(kind("bash"), ToolKind::Execute);
        assert_eq!(kind("search"), ToolKind::Search);
        assert_eq!(kind("mcp__github__issues"), ToolKind::Other);
        assert_eq!(
            title("bash", &json!({"command": "cargo test\nrm -rf x"})),
            "Run shell command: cargo test …"
        );
        assert_eq!(
            title("read_file", &json!({"path": "a.rs"})),
            "Read file: a.rs"
        );
        assert_eq!(title("mcp__x__y", &json!({})), "mcp__x__y");
        assert_eq!(kind("task"), ToolKind::Think);
        assert_eq!(
            title(
                "task",
                &json!({"description": "find the auth code", "prompt": "…"})
            ),
            "subagent: find the auth code"
        );
        assert_eq!(
            first_line(&"é".repeat(300)).chars().count(),
            MAX_TITLE_CHARS + 2
        );
    }

    #[test]
    fn edits_as_edit_file_makes_them() {
        let args = json!({"old_string": "a", "new_string": "b"});
        assert_eq!(edited("xax", &args).as_deref(), Some("xbx"));
        assert_eq!(edited("aa", &args), None, "not unique");
        let all = json!({"old_string": "a", "new_string": "b", "replace_all": true});
        assert_eq!(edited("aa", &all).as_deref(), Some("bb"));
        assert_eq!(edited("x", &all), None);
    }

    #[test]
    fn resolution_stays_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        std::fs::write(cwd.join("f.txt"), "x").unwrap();
        assert_eq!(resolve(&cwd, "f.txt"), Some(cwd.join("f.txt")));
        assert_eq!(
            resolve(&cwd, "new/dir/g.txt"),
            Some(cwd.join("new/dir/g.txt"))
        );
        assert_eq!(resolve(&cwd, "../outside.txt"), None);
        assert_eq!(resolve(&cwd, "/etc/passwd"), None);
        assert_eq!(resolve(&cwd, "new/../../x"), None);
        std::os::unix::fs::symlink("/etc", cwd.join("link")).unwrap();
        assert_eq!(resolve(&cwd, "link/passwd"), None);
    }

    #[tokio::test]
    async fn an_edit_shows_old_and_new_text() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        std::fs::write(cwd.join("f.txt"), "one\ntwo\n").unwrap();
        let mut calls = ToolCalls::default();
        let args = json!({"path": "f.txt", "old_string": "two", "new_string": "2"});
        let call = calls.proposed(&cwd, "c1", "edit_file", &args).await;
        let value = serde_json::to_value(&call).unwrap();
        assert_eq!(value["toolCallId"], "1-c1");
        assert_eq!(value["kind"], "edit");
        assert_eq!(
            value["locations"][0]["path"],
            cwd.join("f.txt").display().to_string()
        );
        assert_eq!(value["content"][0]["oldText"], "one\ntwo\n");
        assert_eq!(value["content"][0]["newText"], "one\n2\n");
        // The tool ran (differently from the preview, as a racing writer would).
        std::fs::write(cwd.join("f.txt"), "one\nTWO\n").unwrap();
        let done = calls.completed("c1", true, "edited", false).await.unwrap();
        let value = serde_json::to_value(&done).unwrap();
        assert_eq!(value["status"], "completed");
        assert_eq!(value["content"][0]["oldText"], "one\ntwo\n");
        assert_eq!(value["content"][0]["newText"], "one\nTWO\n");
        assert_eq!(value["content"][1]["content"]["text"], "edited");
        assert!(calls.is_empty());
    }

    #[tokio::test]
    async fn tracking_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        let mut calls = ToolCalls::default();
        for n in 0..MAX_TRACKED_CALLS + 5 {
            calls
                .proposed(&cwd, &format!("c{n}"), "bash", &json!({"command": "true"}))
                .await;
        }
        assert_eq!(calls.len(), MAX_TRACKED_CALLS);
        assert!(calls.started("c0").is_none(), "the oldest went first");
        assert!(calls
            .started(&format!("c{}", MAX_TRACKED_CALLS + 4))
            .is_some());
    }
}
