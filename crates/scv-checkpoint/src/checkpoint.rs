//! A checkpoint as a session's index lists it, and the bound on what a
//! snapshot stores of one file. A leaf, so every module can use them.

use crate::snapshot::SnapshotId;
use serde::{Deserialize, Serialize};

/// Files with more than this to store are recorded by metadata only (no
/// content): their length, or for a file with holes, its data.
pub const MAX_CONTENT_BYTES: u64 = 64 * 1024 * 1024;

/// One agent turn's checkpoint: the workspace before it and after it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub checkpoint_id: String,
    pub turn_id: String,
    pub prompt: String,
    pub created_unix_seconds: u64,
    pub before: SnapshotId,
    /// None if the turn never ended.
    pub after: Option<SnapshotId>,
    /// Paths `after` found changed after the turn's end (it is taken once
    /// the turn's terminal event is out): someone else's, so conflicts of
    /// a restore to this checkpoint or an earlier one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub late: Vec<String>,
}

/// A fresh checkpoint id: `ck-` and 16 hex digits of a hash of the
/// snapshot, the clock and this process.
pub fn new_checkpoint_id(before: &SnapshotId) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = format!(
        "{}:{}:{}:{}",
        before.0,
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    format!("ck-{}", &crate::hash::Hash::of(seed.as_bytes()).hex()[..16])
}
