//! What the store refuses or fails at. A leaf.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("session {0} does not exist")]
    NotFound(String),
    #[error("session {0} is open on another connection; fork it to continue it here")]
    Open(String),
    #[error("session {session_id} cannot be read: {why}")]
    Damaged { session_id: String, why: String },
    #[error("more than one session id starts with {0}; give more of it")]
    Ambiguous(String),
    #[error("turn {0} is not a turn of that session that ended")]
    NoSuchTurn(String),
    #[error("the session store is refused: {0}")]
    Unsafe(String),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot encode a journal record: {0}")]
    Encode(serde_json::Error),
}

impl StoreError {
    /// Whether the disk (or the user's quota) had no room.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::Io { source, .. }
            if matches!(source.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT)))
    }

    pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> StoreError {
        StoreError::Io {
            what,
            path: path.display().to_string(),
            source,
        }
    }
}
