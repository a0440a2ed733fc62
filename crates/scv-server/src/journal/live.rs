//! A live session's journal: what the session host records as the session
//! lives — each turn's start and end, `session.clear`, `session.configure`,
//! the queue — and the summary beside it.
//!
//! Records are written as the events they stand for happen, before the
//! client is told; the end of a turn is made durable (`fdatasync`, off the
//! async threads) before its terminal event goes out. A write that fails
//! (a full disk) stops this session's journal where it is, said once on
//! stderr: a journal is never continued past a gap.

use super::Store;
use crate::context::History;
use crate::model::Message;
use scv_protocol::EventBody;
use scv_store::{Header, HistoryChange, Journal, Meta, Outcome, Record, SyncHandle};
use serde_json::Value;
use std::sync::Arc;

pub(crate) struct LiveJournal {
    store: Arc<Store>,
    journal: Journal,
    sync: Arc<SyncHandle>,
    session_id: Arc<str>,
    meta: Meta,
    broken: bool,
    /// Made by this connection, and nothing recorded since its header: a
    /// session nobody used, removed when it closes (so every `scv` start
    /// does not leave one behind).
    untouched: bool,
}

impl LiveJournal {
    /// A new session's journal.
    pub(crate) fn create(
        store: &Arc<Store>,
        header: &Header,
    ) -> Result<LiveJournal, scv_store::StoreError> {
        let journal = store.sessions.create(header)?;
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
        };
        let mut live = LiveJournal::new(store, journal, meta, &header.session_id)?;
        live.untouched = true;
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
        journal: Journal,
        meta: Meta,
        session_id: &str,
    ) -> Result<LiveJournal, scv_store::StoreError> {
        let sync = Arc::new(journal.sync_handle()?);
        store.grew(journal.len());
        Ok(LiveJournal {
            store: store.clone(),
            journal,
            sync,
            session_id: session_id.into(),
            meta,
            broken: false,
            untouched: false,
        })
    }

    fn append(&mut self, record: &Record) {
        if self.broken {
            return;
        }
        self.untouched = false;
        match self.journal.append(record) {
            Ok(bytes) => {
                self.meta.len = self.journal.len();
                self.store.grew(bytes);
            }
            Err(err) => {
                self.broken = true;
                tracing::error!(
                    "session {}: journaling stopped, later turns will not be resumable: {err}",
                    self.session_id
                );
            }
        }
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

    /// A turn ended with `terminal` (`None`: the client was gone) leaving
    /// `history`; `prompt` is the one it started with. Durable when this
    /// returns. True when the store's bounds are due.
    pub(crate) async fn turn_ended(
        &mut self,
        turn_id: &str,
        prompt: &str,
        seq: u64,
        terminal: Option<&EventBody>,
        history: &History,
        spent: Option<scv_store::Spent>,
    ) -> bool {
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
        let (messages, change) = changes(history, prompt);
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
    /// rewrites the summary on the same thread; returns once the journal
    /// is durable (the summary, a cache, is not waited for: it cost every
    /// turn's end a file write and a rename). True when the store's
    /// bounds are due.
    async fn flush(&mut self) -> bool {
        if self.broken {
            return false;
        }
        let sync = self.sync.clone();
        let store = self.store.clone();
        let meta = self.meta.clone();
        let session_id = self.session_id.clone();
        let (durable, synced) = tokio::sync::oneshot::channel();
        let work = crate::blocking::run(move || {
            let _ = durable.send(sync.sync());
            if let Err(err) = store.sessions.write_meta(&session_id, &meta) {
                // The summary is a cache: a stale one is recomputed.
                tracing::warn!("{err}");
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
        match flushed {
            Ok(Ok(())) => self.store.grew(0),
            Ok(Err(err)) => {
                tracing::error!(
                    "session {}: cannot sync its journal: {err}",
                    self.session_id
                );
                false
            }
            Err(err) => {
                tracing::error!(
                    "session {}: cannot sync its journal: {err}",
                    self.session_id
                );
                false
            }
        }
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
            .rposition(|m| matches!(m, Message::User { content } if content == prompt))
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
