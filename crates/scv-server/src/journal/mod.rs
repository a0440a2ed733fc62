//! Sessions that outlive their connection: the store as this server uses
//! it (opened once, its bounds kept), each live session's journal, and
//! what a stored session becomes again — its history for the next
//! request and its transcript for the client.
//!
//! The store's format and its crash safety are `scv-store`'s; here is only
//! what the server's types make of it.

mod live;
mod restore;

pub(crate) use live::{LiveJournal, TurnEnd, NOT_SAVED_DISK_FULL};
pub(crate) use restore::history_of;

use crate::config::StoreConfig;
use scv_store::SessionStore;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How often the age bound is checked while the store does not grow past
/// its byte bound (seconds).
const RETENTION_CHECK_SECS: u64 = 3600;

/// The session store of this server process, and its bounds.
pub(crate) struct Store {
    pub(crate) sessions: SessionStore,
    retention_days: u64,
    max_bytes: u64,
    /// What a journal may lack while writes fail (bytes, per session).
    pub(crate) backlog_bytes: u64,
    /// The store's bytes as last counted, plus what was appended since.
    bytes: AtomicU64,
    /// When the bounds were last enforced (unix seconds).
    enforced_at: AtomicU64,
}

impl Store {
    /// The store under `scv_home`, its bounds enforced once; `None` when
    /// `session_store = false` or it cannot be used (said on stderr; the
    /// server runs on, journaling nothing).
    pub(crate) fn open(config: &StoreConfig, scv_home: &Path) -> Option<Arc<Store>> {
        if !config.enabled {
            return None;
        }
        let sessions = match SessionStore::open(scv_home) {
            Ok(sessions) => sessions,
            Err(err) => {
                tracing::warn!("sessions will not be kept: {err}");
                return None;
            }
        };
        let store = Store {
            sessions,
            retention_days: config.retention_days,
            max_bytes: config.max_bytes,
            backlog_bytes: config.backlog_bytes,
            bytes: AtomicU64::new(0),
            enforced_at: AtomicU64::new(0),
        };
        store.enforce();
        Some(Arc::new(store))
    }

    /// Counts `bytes` just appended; true when the bounds are due (the
    /// byte bound passed, or the age bound not checked for an hour).
    pub(crate) fn grew(&self, bytes: u64) -> bool {
        let total = self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let since = scv_store::now_unix().saturating_sub(self.enforced_at.load(Ordering::Relaxed));
        total > self.max_bytes || since >= RETENTION_CHECK_SECS
    }

    /// Deletes what the bounds say must go (blocking: the store's
    /// directory is listed).
    pub(crate) fn enforce(&self) {
        let now = scv_store::now_unix();
        self.enforced_at.store(now, Ordering::Relaxed);
        let enforced = self
            .sessions
            .enforce(self.retention_days, self.max_bytes, now);
        self.bytes.store(enforced.bytes, Ordering::Relaxed);
        if !enforced.deleted.is_empty() {
            tracing::info!(
                "session store: deleted {} session(s) past its bounds ({} days, {} bytes)",
                enforced.deleted.len(),
                self.retention_days,
                self.max_bytes
            );
        }
    }
}
