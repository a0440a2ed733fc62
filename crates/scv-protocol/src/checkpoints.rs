//! Checkpoints (extension, capability `checkpoints`): the workspace as it
//! was before each turn that changed files, listed, compared with the
//! workspace now, and restored (files, conversation or both).
//! docs/PROTOCOL-EXTENSIONS.md describes each.

use serde::{Deserialize, Serialize};

/// Largest `diff` a `checkpoint.diffed` carries (bytes); past it the diff
/// is cut and `truncated` is true.
pub const MAX_CHECKPOINT_DIFF_BYTES: usize = 256 * 1024;

/// `checkpoint.list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointList {
    pub session_id: String,
}

/// `checkpoint.diff`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointDiff {
    pub session_id: String,
    pub checkpoint_id: String,
}

fn yes() -> bool {
    true
}

/// `checkpoint.restore`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRestore {
    pub session_id: String,
    pub checkpoint_id: String,
    /// Put the workspace's files back (default true).
    #[serde(default = "yes")]
    pub files: bool,
    /// Drop the turns from the checkpoint's turn on (default true).
    #[serde(default = "yes")]
    pub conversation: bool,
    /// Restore over paths changed since by someone other than the agent.
    #[serde(default)]
    pub force: bool,
}

/// One checkpoint as `checkpoint.listed` shows it, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointInfo {
    pub checkpoint_id: String,
    /// The turn it was taken before.
    pub turn_id: String,
    /// That turn's prompt.
    pub prompt: String,
    pub created_unix_seconds: u64,
}

/// `checkpoint.listed.missed`: the newest turn that changed files had no
/// checkpoint (newer than every one listed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissedCheckpoint {
    pub turn_id: String,
    /// Why (what `checkpoint.failed` said: "no undo point: disk full …").
    pub message: String,
}

/// How a path differs from the checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChangeKind {
    Added,
    Modified,
    Deleted,
}

/// A path that differs, relative to the workspace (`/`-separated).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    pub change: FileChangeKind,
}
