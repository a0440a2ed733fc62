//! SCV's session store: every session's life in an append-only journal
//! under `$SCV_HOME/sessions/` (directory 0700, files 0600), so a session
//! survives the client, the connection, a daemon restart or a crash, and
//! can be resumed, forked, listed, exported or deleted.
//!
//! - [`Record`]: what a journal line is (`record.rs`).
//! - [`Journal`]: one session's journal, open for appending and locked
//!   while the session is live somewhere (`journal.rs`); what a full disk
//!   refuses waits in its bounded backlog and is written with the next
//!   record (`backlog.rs`).
//! - [`Replay`]: a journal read back — history, transcript, queue
//!   (`replay.rs`).
//! - [`SessionStore`]: the directory: create, resume, fork, list, delete,
//!   and its bounds (`store.rs`).
//! - [`transcript`]: what a client draws of a stored conversation
//!   (`transcript.rs`).
//!
//! The store knows nothing of the server's message types: history
//! messages and usage are opaque JSON here (the transcript reads the few
//! fields it shows).

mod backlog;
mod error;
mod journal;
mod record;
mod replay;
mod spending;
mod store;
mod transcript;

pub use backlog::STRIPPED_PROMPT_BYTES;
pub use error::StoreError;
pub use journal::{Journal, Recorded, SyncHandle, DEFAULT_BACKLOG_BYTES};
pub use record::{
    title_of, ForkedFrom, Header, HistoryChange, Outcome, Record, Spent, FORMAT_VERSION,
};
pub use replay::{Damage, Ended, Replay, Turn};
pub use spending::{spending, SpentTurn};
pub use store::{valid_id, Enforced, Listed, Meta, SessionStore};
pub use transcript::{transcript, transcript_whole, TRANSCRIPT_TOOL_OUTPUT_BYTES};

/// Seconds since the epoch (0 if the clock is before it).
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
