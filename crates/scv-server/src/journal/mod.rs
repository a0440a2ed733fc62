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
use scv_protocol::SessionWarning;
use scv_store::{Journal, Meta, SessionStore};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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
    /// Journals of sessions that closed while records still waited for
    /// room (a full disk), oldest first: held (and locked) until the next
    /// write anywhere in this store succeeds, or the session is resumed.
    waiting: Mutex<Vec<Waiting>>,
    /// How many are held (checked without the lock on every write).
    waiting_count: AtomicUsize,
    /// Held journals that caught up after their session closed, and how
    /// many records they wrote (at most [`MAX_CAUGHT_UP`], oldest dropped):
    /// the session's next resume says it is saved again, as a resume that
    /// took the journal itself would.
    caught_up: Mutex<std::collections::VecDeque<(Arc<str>, scv_protocol::SessionWarning)>>,
}

/// Closed sessions remembered as caught up until they are resumed.
const MAX_CAUGHT_UP: usize = 64;

/// A closed session's journal whose records still wait for room.
pub(crate) struct Waiting {
    pub(crate) journal: Journal,
    pub(crate) meta: Meta,
    pub(crate) session_id: Arc<str>,
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
            waiting: Mutex::new(Vec::new()),
            waiting_count: AtomicUsize::new(0),
            caught_up: Mutex::new(std::collections::VecDeque::new()),
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

    fn waiting(&self) -> std::sync::MutexGuard<'_, Vec<Waiting>> {
        crate::sync::lock(&self.waiting)
    }

    /// Holds a closed session's journal until its records can be written.
    /// All such journals together hold at most `backlog_bytes` (what one
    /// session may): past it the oldest are let go, their records lost
    /// (said in the log).
    pub(crate) fn keep_waiting(&self, held: Waiting) {
        tracing::warn!(
            "session {}: closed with {} journal record(s) waiting for room; they are written when a write succeeds again (lost if this server stops first)",
            held.session_id,
            held.journal.backlog_len()
        );
        let mut waiting = self.waiting();
        waiting.push(held);
        let mut total: u64 = waiting.iter().map(|w| w.journal.backlog_bytes()).sum();
        while total > self.backlog_bytes && waiting.len() > 1 {
            let lost = waiting.remove(0);
            total -= lost.journal.backlog_bytes();
            tracing::error!(
                "session {}: {} journal record(s) that waited for room are lost (closed sessions may hold {} bytes)",
                lost.session_id,
                lost.journal.backlog_len(),
                self.backlog_bytes
            );
        }
        self.waiting_count.store(waiting.len(), Ordering::Relaxed);
    }

    /// A closed session's journal still held here (it is resumed, or
    /// deleted).
    pub(crate) fn take_waiting(&self, session_id: &str) -> Option<Waiting> {
        if self.waiting_count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut waiting = self.waiting();
        let at = waiting.iter().position(|w| &*w.session_id == session_id)?;
        let taken = waiting.remove(at);
        self.waiting_count.store(waiting.len(), Ordering::Relaxed);
        Some(taken)
    }

    /// Closed session `session_id`'s journal caught up, and nobody was
    /// told: its next resume tells `warning`.
    pub(crate) fn remember_caught_up(&self, session_id: &Arc<str>, warning: SessionWarning) {
        let mut caught_up = crate::sync::lock(&self.caught_up);
        caught_up.retain(|(id, _)| id != session_id);
        if caught_up.len() >= MAX_CAUGHT_UP {
            caught_up.pop_front();
        }
        caught_up.push_back((session_id.clone(), warning));
    }

    /// What closed session `session_id` is to hear of its journal that
    /// caught up after it closed (once).
    pub(crate) fn take_caught_up(&self, session_id: &str) -> Option<SessionWarning> {
        let mut caught_up = crate::sync::lock(&self.caught_up);
        let at = caught_up.iter().position(|(id, _)| &**id == session_id)?;
        caught_up.remove(at).map(|(_, warning)| warning)
    }

    /// The summary of a closed session whose journal is held here for
    /// want of room (what it holds, the records waiting included).
    pub(crate) fn waiting_meta(&self, session_id: &str) -> Option<Meta> {
        if self.waiting_count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.waiting()
            .iter()
            .find(|w| &*w.session_id == session_id)
            .map(|w| w.meta.clone())
    }

    /// A write in this store succeeded: the closed sessions' journals
    /// try theirs (once each); those that caught up are synced, their
    /// summaries written, and let go. Blocking (a write and a sync per
    /// journal that caught up); nothing when none is held.
    pub(crate) fn retry_waiting(&self) {
        if self.waiting_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut waiting = self.waiting();
        while let Some(held) = waiting.first_mut() {
            let recorded = held.journal.retry();
            self.grew(recorded.bytes);
            if recorded.error.is_some() {
                // Still no room: the others would fail too.
                break;
            }
            let held = waiting.remove(0);
            let synced = held.journal.sync();
            self.remember_caught_up(
                &held.session_id,
                live::recovered_warning(recorded.caught_up),
            );
            let mut meta = held.meta;
            meta.len = held.journal.len();
            let _ = self.sessions.write_meta(&held.session_id, &meta);
            match synced {
                Ok(()) => tracing::info!(
                    "session {}: its journal caught up after it closed",
                    held.session_id
                ),
                Err(err) => tracing::error!("session {}: {err}", held.session_id),
            }
        }
        self.waiting_count.store(waiting.len(), Ordering::Relaxed);
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
