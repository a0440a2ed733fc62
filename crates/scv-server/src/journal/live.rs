//! A live session's journal: what the session host records as the session
//! lives — each turn's start and end, `session.clear`, `session.configure`,
//! the queue — and the summary beside it.
//!
//! Records are written as the events they stand for happen, before the
//! client is told; the end of a turn is made durable (`fdatasync`, off the
//! async threads) before its terminal event goes out.
//!
//! When the disk is full a write fails, and the session goes on: what the
//! journal lacks waits in the journal's bounded backlog (`scv-store`) and
//! is written ahead of the next record, the moment one fits. The first
//! failure is said once (the log, and [`LiveJournal::warnings`] for the
//! session's clients: `session.warning` `journal_failed`); once the
//! journal has caught up and is durable again, `journal_recovered`. A
//! failed write is tried again with the next record, never in a loop.

use super::Store;
use crate::context::History;
use crate::model::Message;
use scv_protocol::{EventBody, SessionWarning, SessionWarningCode};
use scv_store::{Header, HistoryChange, Journal, Meta, Outcome, Record, Recorded, SyncHandle};
use serde_json::Value;
use std::sync::Arc;

/// What the TUI's status line and `scv exec` say while a session's
/// journal cannot be written for want of room.
pub(crate) const NOT_SAVED_DISK_FULL: &str = "not saved: the disk under SCV_HOME is full";

/// How a turn ended, for its record.
pub(crate) struct TurnEnd<'a> {
    /// Its terminal event (`None`: the client was gone).
    pub(crate) terminal: Option<&'a EventBody>,
    /// What it spent.
    pub(crate) spent: Option<scv_store::Spent>,
    /// It changed files without a checkpoint, and why.
    pub(crate) no_undo: Option<String>,
}

pub(crate) struct LiveJournal {
    store: Arc<Store>,
    journal: Journal,
    sync: Arc<SyncHandle>,
    session_id: Arc<str>,
    meta: Meta,
    /// Made by this connection, and nothing recorded since its header: a
    /// session nobody used, removed when it closes (so every `scv` start
    /// does not leave one behind).
    untouched: bool,
    /// A write or a sync failed and the journal has not caught up since
    /// (`journal_failed` was given).
    failing: bool,
    /// The last sync failed: what was written may not be on the disk.
    sync_failed: bool,
    /// Records written from the backlog since the failure.
    caught_up: usize,
    /// What the session's clients are to be told, in order.
    notices: Vec<SessionWarning>,
}

impl LiveJournal {
    /// A new session's journal. A disk too full for its header still
    /// gives one: the header waits with the records that follow.
    pub(crate) fn create(
        store: &Arc<Store>,
        header: &Header,
    ) -> Result<LiveJournal, scv_store::StoreError> {
        let (journal, waiting) = store.sessions.create_waiting(header)?;
        let meta = Meta {
            cwd: header.cwd.clone(),
            title: String::new(),
            created: header.created,
            updated: header.created,
            turns: 0,
            provider: header.provider.clone(),
            model: header.model.clone(),
            len: journal.len(),
            parent: header.parent.clone(),
            forked_from: header.forked_from.clone(),
        };
        let mut live = LiveJournal::new(store, journal, meta, &header.session_id)?;
        live.untouched = true;
        if let Some(err) = waiting {
            live.failed(&err);
        }
        Ok(live)
    }

    /// A new session's journal, made off the async threads; `None` (said
    /// in the log: the session runs, unjournaled) when the store refuses.
    pub(crate) async fn start(store: Arc<Store>, header: Header) -> Option<LiveJournal> {
        let session_id = header.session_id.clone();
        match crate::blocking::run(move || LiveJournal::create(&store, &header)).await {
            Ok(Ok(journal)) => Some(journal),
            Ok(Err(err)) => {
                tracing::warn!("session {session_id} will not be kept: {err}");
                None
            }
            Err(err) => {
                tracing::warn!("session {session_id} will not be kept: {err}");
                None
            }
        }
    }

    /// The journal of a resumed or forked session, `meta` its summary so far.
    pub(crate) fn new(
        store: &Arc<Store>,
        mut journal: Journal,
        meta: Meta,
        session_id: &str,
    ) -> Result<LiveJournal, scv_store::StoreError> {
        let sync = Arc::new(journal.sync_handle()?);
        journal.set_backlog_limit(store.backlog_bytes);
        store.grew(journal.len());
        let mut live = LiveJournal {
            store: store.clone(),
            journal,
            sync,
            session_id: session_id.into(),
            meta,
            untouched: false,
            failing: false,
            sync_failed: false,
            caught_up: 0,
            notices: Vec::new(),
        };
        if live.journal.backlog_len() > 0 {
            // A session that closed while records waited for room: they
            // still wait (one more try says why).
            let recorded = live.journal.retry();
            live.wrote(recorded);
        }
        Ok(live)
    }

    fn append(&mut self, record: &Record) {
        self.untouched = false;
        match self.journal.record(record) {
            Ok(recorded) => self.wrote(recorded),
            Err(err) => {
                // Cannot happen (every record encodes); said, not hidden.
                tracing::error!(
                    "session {}: a record was not journaled: {err}",
                    self.session_id
                );
            }
        }
    }

    /// Books what a write did: the store's growth, the summary's length,
    /// and a failure or a catch-up.
    fn wrote(&mut self, recorded: Recorded) {
        self.store.grew(recorded.bytes);
        self.meta.len = self.journal.len();
        if recorded.bytes > 0 && recorded.error.is_none() {
            // There is room again: closed sessions' journals that wait
            // for it catch up too.
            self.store.retry_waiting();
        }
        if self.failing {
            self.caught_up += recorded.caught_up;
        }
        if let Some(err) = recorded.error {
            self.failed(&err);
        }
    }

    /// A write or sync failed: said once, until the journal recovers.
    fn failed(&mut self, err: &scv_store::StoreError) {
        if self.failing {
            return;
        }
        self.failing = true;
        self.caught_up = 0;
        tracing::error!(
            "session {}: its journal cannot be written ({err}); turns go on, and what the journal lacks is kept and written as soon as there is room",
            self.session_id
        );
        let message = if err.is_disk_full() {
            format!("{NOT_SAVED_DISK_FULL}: turns go on, and what the session's journal lacks is kept and written as soon as there is room ({err})")
        } else {
            format!("not saved: the session's journal cannot be written ({err}); turns go on, and what it lacks is kept and written as soon as a write succeeds")
        };
        self.notices.push(SessionWarning {
            code: SessionWarningCode::JournalFailed,
            message,
        });
    }

    /// Whether the journal lacks something or its last sync failed.
    fn lacking(&self) -> bool {
        self.journal.backlog_len() > 0 || self.sync_failed
    }

    /// What the session's clients are to hear of its journal
    /// (`session.warning`), in order: `journal_failed` once when a write
    /// fails, `journal_recovered` once what it lacked is written and made
    /// durable (synced here when it caught up since the last sync).
    pub(crate) async fn warnings(&mut self) -> Vec<SessionWarning> {
        if self.failing && self.journal.backlog_len() == 0 {
            self.flush().await;
        }
        std::mem::take(&mut self.notices)
    }

    /// Whether the journal still lacks records after one more try at
    /// what waits (the file is about to be read back).
    pub(crate) fn lacks_records(&mut self) -> bool {
        if self.journal.backlog_len() > 0 {
            let recorded = self.journal.retry();
            self.wrote(recorded);
        }
        self.journal.backlog_len() > 0
    }

    /// One more try at what the journal lacks (the session is closing:
    /// no later record of it will bring it).
    pub(crate) async fn last_try(&mut self) {
        if self.journal.backlog_len() == 0 {
            return;
        }
        let recorded = self.journal.retry();
        self.wrote(recorded);
        if self.journal.backlog_len() == 0 {
            self.flush().await;
        }
    }

    /// The session closes: a journal whose records still wait for room is
    /// held by the store (`Store::keep_waiting`) until a write succeeds
    /// again or the session is resumed; otherwise it is let go.
    pub(crate) fn close(self) {
        if self.journal.backlog_len() == 0 {
            // It caught up as it closed (its last try): nobody heard; its
            // next resume says so.
            let told = self
                .notices
                .iter()
                .rfind(|n| n.code == SessionWarningCode::JournalRecovered);
            if let Some(warning) = told {
                self.store
                    .remember_caught_up(&self.session_id, warning.clone());
            }
            return;
        }
        let store = self.store.clone();
        store.keep_waiting(super::Waiting {
            journal: self.journal,
            meta: self.meta,
            session_id: self.session_id,
        });
    }

    /// A turn began (`seq`: its `turn.started`).
    pub(crate) fn turn_started(&mut self, turn_id: &str, prompt: &str, seq: u64) {
        let at = scv_store::now_unix();
        if self.meta.title.is_empty() {
            self.meta.title = scv_store::title_of(prompt);
        }
        self.meta.updated = at;
        self.append(&Record::TurnStarted {
            turn_id: turn_id.into(),
            prompt: prompt.into(),
            at,
            seq,
        });
    }

    /// A turn ended as `end` says, leaving `history`; `prompt` is the one
    /// it started with. Durable when this returns. True when the store's
    /// bounds are due.
    pub(crate) async fn turn_ended(
        &mut self,
        turn_id: &str,
        prompt: &str,
        seq: u64,
        history: &History,
        end: TurnEnd<'_>,
    ) -> bool {
        let TurnEnd {
            terminal,
            spent,
            no_undo,
        } = end;
        let (outcome, code, message, usage) = match terminal {
            Some(EventBody::TurnCompleted { usage, .. }) => (
                Outcome::Completed,
                None,
                None,
                usage.and_then(|u| serde_json::to_value(u).ok()),
            ),
            Some(EventBody::TurnFailed { code, message }) => (
                Outcome::Failed,
                serde_json::to_value(code)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from)),
                Some(message.clone()),
                None,
            ),
            _ => (Outcome::Cancelled, None, None, None),
        };
        let (messages, mut change) = changes(history, prompt);
        if self.journal.backlog_bytes() >= self.store.backlog_bytes / 2 {
            // What waits is getting near its bound: this end carries the
            // whole history, so what waits before it may be stripped
            // (`scv-store`'s backlog) and the session still resumes whole.
            change = HistoryChange::Snapshot(encode(history.messages()));
        }
        let at = scv_store::now_unix();
        self.append(&Record::TurnEnded {
            turn_id: turn_id.into(),
            at,
            seq,
            outcome,
            code,
            message,
            messages,
            history: change,
            usage,
            tokens_per_byte: Some(history.tokens_per_byte()),
            spent,
            no_undo,
        });
        self.meta.turns += 1;
        self.meta.updated = at;
        self.flush().await
    }

    /// `session.clear` (`seq`: its `session.cleared`).
    pub(crate) fn cleared(&mut self, seq: u64) {
        let at = scv_store::now_unix();
        self.meta.updated = at;
        self.append(&Record::Cleared { at, seq });
    }

    /// `session.configure` took effect; `history` when the switch changed
    /// it.
    pub(crate) fn configured(
        &mut self,
        provider: &str,
        model: &str,
        seq: u64,
        history: Option<&History>,
        max_session_cost_usd: Option<f64>,
    ) {
        let at = scv_store::now_unix();
        self.meta.provider = provider.into();
        self.meta.model = model.into();
        self.meta.updated = at;
        self.append(&Record::Configured {
            provider: provider.into(),
            model: model.into(),
            at,
            seq,
            history: history.map(|h| encode(h.messages())),
            max_session_cost_usd,
        });
    }

    /// A checkpoint's conversation was restored: the turns from `turn_id`
    /// on are gone and `history` is what the session holds now. Durable
    /// when this returns (the client is told after).
    pub(crate) async fn rewound(&mut self, turn_id: &str, seq: u64, history: &History) {
        // The undone turns leave the summary's count (as a replay counts
        // them), counted in the journal as it is, once per restore, and
        // before the flush that writes the summary.
        let (store, session_id) = (self.store.clone(), self.session_id.clone());
        let replay =
            crate::blocking::run(move || store.sessions.read(&session_id, None).ok()).await;
        if let Ok(Some(replay)) = replay {
            if let Some(at) = replay.turns.iter().position(|t| t.turn_id == turn_id) {
                let undone = replay.turns[at..]
                    .iter()
                    .filter(|t| t.ended.is_some())
                    .count();
                self.meta.turns = self.meta.turns.saturating_sub(undone as u64);
            }
        }
        let at = scv_store::now_unix();
        self.meta.updated = at;
        self.append(&Record::Rewound {
            turn_id: turn_id.into(),
            at,
            seq,
            history: encode(history.messages()),
        });
        self.flush().await;
    }

    /// The queue is now `prompts` (`seq`: the event that said so).
    pub(crate) fn queue(&mut self, prompts: Vec<String>, seq: u64) {
        self.append(&Record::Queue { prompts, seq });
    }

    /// Makes what was written durable, off the async threads, then
    /// rewrites the summary on the same thread (not while records wait:
    /// it would count turns the file lacks); returns once the journal is
    /// durable (the summary, a cache, is not waited for: it cost every
    /// turn's end a file write and a rename). True when the store's
    /// bounds are due. A journal that caught up and is durable again
    /// recovers here.
    async fn flush(&mut self) -> bool {
        let sync = self.sync.clone();
        let store = self.store.clone();
        let meta = (self.journal.backlog_len() == 0).then(|| self.meta.clone());
        let session_id = self.session_id.clone();
        let (durable, synced) = tokio::sync::oneshot::channel();
        let work = crate::blocking::run(move || {
            let _ = durable.send(sync.sync());
            if let Some(meta) = meta {
                if let Err(err) = store.sessions.write_meta(&session_id, &meta) {
                    // The summary is a cache: a stale one is recomputed.
                    tracing::warn!("{err}");
                }
            }
        });
        let mut work = std::pin::pin!(work);
        // The blocking work runs whether or not its handle is polled; it
        // is polled here so a refused thread (no sync at all) is seen.
        let mut synced = synced;
        let stopped = || crate::blocking::Failed("the journal sync stopped".into());
        let flushed = tokio::select! {
            biased;
            synced = &mut synced => synced.map_err(|_| stopped()),
            ran = &mut work => ran.and_then(|()| synced.try_recv().map_err(|_| stopped())),
        };
        let source = match flushed {
            Ok(Ok(())) => {
                self.sync_failed = false;
                self.recovered();
                return self.store.grew(0);
            }
            Ok(Err(err)) => err,
            Err(err) => std::io::Error::other(err.to_string()),
        };
        let err = scv_store::StoreError::Io {
            what: "cannot sync the journal",
            path: self.journal.path().display().to_string(),
            source,
        };
        tracing::error!("session {}: {err}", self.session_id);
        self.sync_failed = true;
        self.failed(&err);
        false
    }

    /// The session's journal caught up after it closed: said now that it
    /// is resumed.
    pub(crate) fn tell(&mut self, warning: SessionWarning) {
        self.notices.push(warning);
    }

    /// The session closed while records waited for room, and they were
    /// written as it was resumed: its client hears it is saved again.
    pub(crate) fn caught_up_on_resume(&mut self, records: usize) {
        self.failing = true;
        self.caught_up = records;
        self.recovered();
    }

    /// The journal lacks nothing and is durable: said once.
    fn recovered(&mut self) {
        if !self.failing || self.lacking() {
            return;
        }
        self.failing = false;
        tracing::info!(
            "session {}: its journal caught up ({} record(s) written since writes failed) and is durable again",
            self.session_id,
            self.caught_up
        );
        self.notices.push(recovered_warning(self.caught_up));
        self.caught_up = 0;
    }

    /// A session made here that never recorded anything.
    pub(crate) fn untouched(&self) -> bool {
        self.untouched
    }

    /// The session's id.
    pub(crate) fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The store, for enforcing its bounds.
    pub(crate) fn store(&self) -> &Arc<Store> {
        &self.store
    }
}

/// The messages a turn added, and what the history became, from what
/// changed since the turn began.
fn changes(history: &History, prompt: &str) -> (Vec<Value>, HistoryChange) {
    let since = history.since();
    let all = history.messages();
    if since.rewritten || since.kept > all.len() {
        // Compacted: the whole history, and as the turn's own messages
        // those from its prompt on (if the turn is still in it).
        let own = all
            .iter()
            .rposition(|m| matches!(m, Message::User { content, .. } if content == prompt))
            .map_or(&all[all.len()..], |start| &all[start..]);
        return (encode(own), HistoryChange::Snapshot(encode(all)));
    }
    let added = encode(&all[since.kept..]);
    if since.dropped == 0 && since.kept == since.marked {
        (added, HistoryChange::Append)
    } else {
        (
            added,
            HistoryChange::Edit {
                drop: since.dropped as u64,
                keep: since.kept as u64,
            },
        )
    }
}

fn encode(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .collect()
}

/// `journal_recovered`, once `records` that waited for room are written.
pub(crate) fn recovered_warning(records: usize) -> SessionWarning {
    SessionWarning {
        code: SessionWarningCode::JournalRecovered,
        message: format!(
            "saved again: the session's journal caught up ({records} record(s) written that had waited for room); it resumes whole"
        ),
    }
}
