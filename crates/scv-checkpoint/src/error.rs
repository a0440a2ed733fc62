//! What the store refuses or fails at. A leaf.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The store's directory (or something in it) is not what it must be:
    /// a link, another user's, open to others.
    #[error("the checkpoint store is refused: {0}")]
    Unsafe(String),
    /// A stored file that does not hold what its name says (bad zlib, bad
    /// JSON, a hash that does not match, a link or a directory where a file
    /// must be).
    #[error("the checkpoint store holds a damaged file: {0}")]
    Corrupt(String),
    /// An object a snapshot needs is not in the store (evicted, deleted).
    #[error("the checkpoint store lacks {0}")]
    Missing(String),
    /// An id that is not one (a snapshot's hex, a session's, a checkpoint's).
    #[error("not a valid {what}: {id:?}")]
    InvalidId { what: &'static str, id: String },
    /// The workspace cannot be recorded at all (its root cannot be opened).
    #[error("cannot record the workspace {path}: {source}")]
    Workspace {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("checkpoint index out of range: {0}")]
    OutOfRange(usize),
    /// The workspace is past a snapshot's bounds (`SnapshotLimits`).
    #[error("the workspace is too large to checkpoint: {0}")]
    TooLarge(String),
}

impl CheckpointError {
    pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> CheckpointError {
        CheckpointError::Io {
            what,
            path: path.display().to_string(),
            source,
        }
    }

    /// Whether the store's disk (or the user's quota) had no room.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, CheckpointError::Io { source, .. }
            if matches!(source.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT)))
    }

    /// Whether this is damage (planted, corrupt, missing), as opposed to
    /// an I/O failure that might pass.
    pub fn is_damage(&self) -> bool {
        matches!(
            self,
            CheckpointError::Corrupt(_) | CheckpointError::Missing(_) | CheckpointError::Unsafe(_)
        )
    }
}

/// Why a restore did not happen or did not finish.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// It would need the content of files recorded by metadata only (more
    /// than [`crate::checkpoint::MAX_CONTENT_BYTES`] to store); nothing
    /// was changed.
    #[error("cannot restore: these files were recorded without their content (over 64 MiB of it): {}", .0.join(", "))]
    NeedsContent(Vec<String>),
    /// It failed part-way; what it had changed was put back if
    /// `rolled_back`.
    #[error("the restore failed: {why}; {}", if *.rolled_back { "everything it changed was put back" } else { "putting back what it changed failed too: the workspace is partly restored" })]
    Failed { why: String, rolled_back: bool },
    /// The store could not give what the restore needs; nothing was changed.
    #[error("cannot restore: {0}")]
    Store(#[from] CheckpointError),
}
