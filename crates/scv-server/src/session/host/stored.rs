//! The session host's side of the store (capability `sessions`): a new
//! session's journal, and `session.list`, `session.resume`,
//! `session.fork` and `session.delete`.
//!
//! What the store does (locks, torn tails, bounds) is `scv-store`'s; the
//! history and transcript a stored session becomes are `journal`'s. Store
//! I/O runs off the async threads.

use super::{Opened, SessionHost};
use crate::context::History;
use crate::journal::{history_of, LiveJournal, Store};
use crate::session::factory::SessionFactory;
use crate::session::reject::{invalid, Handled, Reject};
use scv_protocol::limits::MAX_SESSIONS_PER_CONNECTION;
use scv_protocol::{
    ErrorCode, Event, EventBody, ForkedFrom, SessionDelete, SessionFork, SessionList,
    SessionResume, SessionStart, SessionStarted, StoredSession, DEFAULT_SESSION_LIST_LIMIT,
    MAX_SESSION_LIST_LIMIT,
};
use scv_store::{Header, Journal, Replay, StoreError, FORMAT_VERSION};
use std::sync::Arc;

impl SessionHost {
    /// The journal of a session just made; none when the store is off or
    /// refuses (said on stderr: the session runs, unjournaled).
    pub(super) async fn create_journal(
        &self,
        session_id: &str,
        started: &SessionStarted,
        base_url: Option<String>,
        no_tools: bool,
    ) -> Option<LiveJournal> {
        let store = self.shared.store.clone()?;
        let header = Header {
            v: FORMAT_VERSION,
            session_id: session_id.to_string(),
            cwd: started.cwd.clone(),
            created: scv_store::now_unix(),
            provider: started.provider.clone().unwrap_or_default(),
            model: started.model.clone(),
            base_url: base_url.map(|url| without_credentials(&url)),
            no_tools,
            forked_from: None,
            parent: None,
        };
        LiveJournal::start(store, header).await
    }

    /// `session.list`: stored sessions, most recently updated first.
    pub(super) async fn list(&mut self, rid: &str, list: SessionList) -> Handled {
        let limit = match list.limit {
            None => DEFAULT_SESSION_LIST_LIMIT,
            Some(limit) if (1..=MAX_SESSION_LIST_LIMIT).contains(&limit) => limit,
            Some(limit) => {
                return Err(invalid(format!(
                    "limit {limit} is out of range: 1 to {MAX_SESSION_LIST_LIMIT}"
                )))
            }
        };
        let mut sessions = match self.shared.store.clone() {
            None => Vec::new(),
            Some(store) => off_thread(move || listed(&store, list.cwd, limit)).await?,
        };
        // The live fields go to a connection with capability `detach`
        // (`gate::shape`).
        {
            let mut live = self.live_infos();
            for session in &mut sessions {
                let elsewhere = || {
                    self.shared
                        .detached
                        .live_on_a_connection(&session.session_id)
                };
                session.live = Some(
                    live.remove(&session.session_id)
                        .or_else(elsewhere)
                        .unwrap_or(scv_protocol::LiveInfo {
                            // Live on a connection that did not detach it:
                            // what it does is that connection's to know.
                            state: scv_protocol::LiveState::Idle,
                            attached: u32::from(session.open),
                            live: session.open,
                            detached: false,
                            waiting_for: None,
                            cost_usd: None,
                        }),
                );
            }
        }
        self.reply(rid, None, EventBody::SessionListed { sessions })
            .await;
        Ok(())
    }

    /// `session.delete`: a stored session that is not open, gone.
    pub(super) async fn delete(&mut self, rid: &str, delete: SessionDelete) -> Handled {
        let SessionDelete { session_id } = delete;
        if self.sessions.contains_key(session_id.as_str()) {
            return Err(invalid(format!(
                "session {session_id} is open on this connection; it cannot be deleted while it lives"
            )));
        }
        let store = self.store(&session_id)?;
        let id = session_id.clone();
        off_thread(move || {
            // A closed session's journal held for want of room goes too.
            drop(store.take_waiting(&id));
            store.sessions.delete(&id).map_err(store_reject)
        })
        .await??;
        if let Some(checkpoints) = &self.shared.checkpoints {
            checkpoints.delete_session(&session_id).await;
        }
        self.reply(rid, Some(session_id), EventBody::SessionDeleted {})
            .await;
        Ok(())
    }

    /// `session.resume`: the stored session live again here under its own
    /// id — `session.started` (`resumed`, `unsent_prompts`), the empty
    /// queue's snapshot, then `session.transcript`. Nothing runs by itself.
    pub(super) async fn resume(&mut self, rid: &str, resume: SessionResume) -> Handled {
        let SessionResume {
            session_id,
            provider,
            model,
            additional_directories,
        } = resume;
        self.check_room()?;
        let session_id = self.stored_id(&session_id).await?;
        if self.sessions.contains_key(session_id.as_str()) {
            return Err(invalid(format!(
                "session {session_id} is already open on this connection"
            )));
        }
        if let crate::attach::Lookup::Found(..) = self.shared.detached.find(&session_id) {
            return Err(invalid(format!(
                "session {session_id} is live in the daemon (detached); attach to it (session.attach, `scv attach {session_id}`) or fork it"
            )));
        }
        let store = self.store(&session_id)?;
        let id = session_id.clone();
        let taken = store.clone();
        let (journal, replay, caught_up) = off_thread(move || {
            // Closed while the disk was full: its journal, still held
            // here, catches up now if it can, and is taken as it is if not.
            let mut caught_up = None;
            if let Some(mut held) = taken.take_waiting(&id) {
                let recorded = held.journal.retry();
                taken.grew(recorded.bytes);
                if recorded.error.is_some() {
                    return taken
                        .sessions
                        .resume_waiting(&id, held.journal)
                        .map(|(journal, replay)| (journal, replay, None))
                        .map_err(store_reject);
                }
                let _ = held.journal.sync();
                caught_up = Some(recorded.caught_up);
            }
            taken
                .sessions
                .resume(&id)
                .map(|(journal, replay)| (journal, replay, caught_up))
                .map_err(store_reject)
        })
        .await??;
        let mut replay = replay;
        let history = history_of(&mut replay).map_err(|why| damaged(&session_id, &why))?;
        let mut start = start_of(&replay, provider, model);
        start.additional_directories = additional_directories;
        let mut made = SessionFactory::new(&self.shared)
            .start(start, "resume")
            .await?;
        made.started.resumed = true;
        made.started.unsent_prompts = Some(replay.queue.clone());
        made.started.max_session_cost_usd = replay.max_session_cost_usd;
        // What it spent, so a client's counters and `/cost` come back
        // (capability `usage`, `gate::shape`).
        let (detail, cost) = super::spending::spent_in(&replay);
        made.started.spent = Some(Box::new(scv_protocol::SessionSpent {
            session_usage_detail: detail.detail(),
            session_cost_usd: cost,
        }));
        let mut live = live(&store, journal, &replay, &session_id)?;
        if let Some(records) = caught_up {
            live.caught_up_on_resume(records);
        } else if let Some(told) = store.take_caught_up(&session_id) {
            // It caught up after it closed (as it closed, or on another
            // session's write), and nobody heard.
            live.tell(told);
        }
        let (now_provider, now_model) = (
            made.settings.provider.name.clone(),
            made.settings.provider.model.clone(),
        );
        let mut history = history;
        let dropped = history.keep_provider_data_of(made.settings.provider.wire);
        if now_provider != replay.provider || now_model != replay.model || dropped {
            live.configured(
                &now_provider,
                &now_model,
                replay.seq,
                Some(&history).filter(|_| dropped),
                None,
            );
        }
        let history = rendered_ahead(&made, history).await?;
        let session_id: Arc<str> = session_id.into();
        self.open_stored(rid, session_id.clone(), made, history, live, &replay)
            .await;
        // The same session: what it spent since its last clear still
        // counts (for its budget too).
        if let Some(session) = self.sessions.get_mut(&session_id) {
            session.restore_spending(&replay);
            // A budget raised for the session holds for the rest of it.
            if replay.max_session_cost_usd.is_some() {
                session.max_session_cost_usd = replay.max_session_cost_usd;
            }
        }
        Ok(())
    }

    /// `session.fork`: a new session holding the stored one's history up
    /// to and including `turn_id` (all of it without), said by
    /// `forked_from`; then its queue's snapshot and `session.transcript`.
    pub(super) async fn fork(&mut self, rid: &str, fork: SessionFork) -> Handled {
        let SessionFork {
            session_id: source,
            turn_id,
        } = fork;
        self.check_room()?;
        let source = self.stored_id(&source).await?;
        let store = self.store(&source)?;
        let new_id = uuid::Uuid::new_v4().to_string();
        let (from, until, id, forking) = (
            source.clone(),
            turn_id.clone(),
            new_id.clone(),
            store.clone(),
        );
        let (journal, mut replay) = off_thread(move || {
            forking
                .sessions
                .fork(&from, until.as_deref(), &id, scv_store::now_unix())
                .map_err(store_reject)
        })
        .await??;
        let opened = async {
            let history = history_of(&mut replay).map_err(|why| damaged(&source, &why))?;
            let mut made = SessionFactory::new(&self.shared)
                .start(start_of(&replay, None, None), "resume")
                .await?;
            made.started.forked_from = Some(ForkedFrom {
                session_id: source.clone(),
                turn_id: turn_id.clone(),
            });
            let mut live = live(&store, journal, &replay, &new_id)?;
            if !replay.queue.is_empty() {
                // The source's waiting prompts are the source's.
                live.queue(Vec::new(), replay.seq);
            }
            Ok::<_, Reject>((made, history, live))
        }
        .await;
        let (made, mut history, live) = match opened {
            Ok(opened) => opened,
            Err(reject) => {
                // A fork that cannot live is not kept.
                let id = new_id.clone();
                let _ = off_thread(move || store.sessions.delete(&id)).await;
                return Err(reject);
            }
        };
        history.keep_provider_data_of(made.settings.provider.wire);
        let history = rendered_ahead(&made, history).await?;
        self.open_stored(rid, new_id.into(), made, history, live, &replay)
            .await;
        Ok(())
    }

    /// A stored session live on this connection: `session.started`, the
    /// queue's snapshot, then the transcript.
    async fn open_stored(
        &mut self,
        rid: &str,
        session_id: Arc<str>,
        made: crate::session::factory::Made,
        history: History,
        journal: LiveJournal,
        replay: &Replay,
    ) {
        // A resume (not a fork) continues a session whose checkpoints
        // are in the store.
        let stored = made.started.resumed;
        let opened = Opened {
            session_id: session_id.clone(),
            made,
            history,
            journal: Some(journal),
            first_seq: replay.seq + 1,
            stored,
        };
        if self.open_session(rid, opened).await.is_none() {
            return;
        }
        self.remember_missed(&session_id, replay).await;
        let (items, truncated) = scv_store::transcript(&replay.turns);
        if let Some(session) = self.sessions.get(&session_id) {
            let body = EventBody::SessionTranscript { items, truncated };
            let _ = session.sink.emit(Some(rid), None, &body).await;
        }
        // Records still waiting for room, or written as it resumed: said
        // with the next turn (the resume's events come together).
    }

    /// The newest turn of a stored session that changed files without a
    /// checkpoint (its journal says so), unless a later turn has one:
    /// `/undo` says why it cannot undo it.
    async fn remember_missed(&self, session_id: &str, replay: &Replay) {
        let Some(checkpoints) = self
            .sessions
            .get(session_id)
            .and_then(|s| s.checkpoints.clone())
        else {
            return;
        };
        let Some(at) = replay
            .turns
            .iter()
            .rposition(|t| t.ended.as_ref().is_some_and(|e| e.no_undo.is_some()))
        else {
            return;
        };
        let turn = &replay.turns[at];
        let Some(message) = turn.ended.as_ref().and_then(|e| e.no_undo.clone()) else {
            return;
        };
        let later: std::collections::HashSet<&str> = replay.turns[at + 1..]
            .iter()
            .map(|t| t.turn_id.as_str())
            .collect();
        let missed = scv_protocol::MissedCheckpoint {
            turn_id: turn.turn_id.clone(),
            message,
        };
        checkpoints.remember_missed(missed, &later).await;
    }

    fn check_room(&self) -> Result<(), Reject> {
        if self.sessions.len() >= MAX_SESSIONS_PER_CONNECTION {
            return Err(invalid(format!(
                "this connection already holds {MAX_SESSIONS_PER_CONNECTION} sessions, its limit; use another connection"
            )));
        }
        Ok(())
    }

    /// The store, or `session_not_found` when there is none.
    /// A full session id, or the stored session's whose id starts with
    /// `id` (the short ids front ends print).
    async fn stored_id(&self, id: &str) -> Result<String, Reject> {
        let store = self.store(id)?;
        let id = id.to_string();
        off_thread(move || store.sessions.resolve(&id).map_err(store_reject)).await?
    }

    fn store(&self, session_id: &str) -> Result<Arc<Store>, Reject> {
        self.shared.store.clone().ok_or_else(|| {
            Reject::new(
                ErrorCode::SessionNotFound,
                format!("no stored session {session_id}: this server keeps no sessions (session_store = false)"),
            )
        })
    }

    /// A reply carrying `rid` (and the session it is about), no `seq`.
    /// An event the connection did not ask for is not sent, and one
    /// leaves without the extension fields it did not ask for
    /// ([`crate::gate::shape`]).
    pub(super) async fn reply(&self, rid: &str, session_id: Option<String>, body: EventBody) {
        let Some(body) = crate::gate::shape_owned(&self.caps, body) else {
            return;
        };
        let event = Event {
            session_id,
            ..Event::reply(Some(rid.to_string()), body)
        };
        // A failed send trips the writer's token; the connection sees it.
        let _ = self
            .out
            .send(crate::transport::encode(event.as_ref()))
            .await;
    }
}

/// What `session.start` would have made this stored session, with a
/// resume's provider / model on top (a provider alone takes its model and
/// URL, as `session.configure` does).
fn start_of(replay: &Replay, provider: Option<String>, model: Option<String>) -> SessionStart {
    let header = &replay.header;
    let switched = provider.is_some();
    SessionStart {
        cwd: header.cwd.clone(),
        model: model.or_else(|| (!switched).then(|| replay.model.clone())),
        provider: provider.or_else(|| Some(replay.provider.clone())),
        base_url: if switched {
            None
        } else {
            header.base_url.clone()
        },
        no_tools: header.no_tools,
        mcp_servers: None,
        mode: None,
        additional_directories: Vec::new(),
    }
}

fn live(
    store: &Arc<Store>,
    journal: Journal,
    replay: &Replay,
    session_id: &str,
) -> Result<LiveJournal, Reject> {
    LiveJournal::new(store, journal, replay.meta(0), session_id).map_err(store_reject)
}

/// The stored sessions `session.list` shows.
fn listed(store: &Store, cwd: Option<String>, limit: usize) -> Vec<StoredSession> {
    let (mut sessions, skipped) = store.sessions.list();
    for diagnostic in skipped {
        tracing::debug!("session store: {diagnostic}");
    }
    // A closed session whose journal this server holds for want of room
    // is not open anywhere (a resume here takes it), and holds what its
    // waiting records add.
    let mut changed = false;
    for session in &mut sessions {
        if let Some(meta) = store.waiting_meta(&session.session_id) {
            session.open = false;
            session.turns = meta.turns;
            session.updated = meta.updated;
            session.title = meta.title;
            changed = true;
        }
    }
    if changed {
        sessions.sort_by_key(|s| std::cmp::Reverse(s.updated));
    }
    let cwd = cwd.map(|cwd| {
        std::fs::canonicalize(&cwd)
            .map(|p| p.display().to_string())
            .unwrap_or(cwd)
    });
    sessions
        .into_iter()
        .filter(|s| cwd.as_ref().is_none_or(|cwd| s.cwd == *cwd))
        .take(limit)
        .map(StoredSession::from)
        .collect()
}

/// `history` with every message rendered for the session's provider, on
/// the blocking pool: the first request after a resume or fork then sends
/// what is kept, as a live session's does.
async fn rendered_ahead(
    made: &crate::session::factory::Made,
    history: History,
) -> Result<History, Reject> {
    let provider = made.settings.provider.clone();
    off_thread(move || {
        provider.render_ahead(history.messages(), history.rendered());
        history
    })
    .await
}

/// Store work on the blocking pool.
async fn off_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Reject> {
    crate::blocking::run(work)
        .await
        .map_err(|err| Reject::new(ErrorCode::InternalError, err.to_string()))
}

/// What a store refusal tells the client.
fn store_reject(err: StoreError) -> Reject {
    match err {
        StoreError::NotFound(id) => Reject::new(
            ErrorCode::SessionNotFound,
            format!("no stored session {id}"),
        ),
        StoreError::Open(_)
        | StoreError::Damaged { .. }
        | StoreError::NoSuchTurn(_)
        | StoreError::Ambiguous(_)
        | StoreError::Unsafe(_) => invalid(err.to_string()),
        StoreError::Io { .. } | StoreError::Encode(_) => {
            Reject::new(ErrorCode::InternalError, err.to_string())
        }
    }
}

fn damaged(session_id: &str, why: &str) -> Reject {
    invalid(format!("session {session_id} cannot be read: {why}"))
}

/// `url` without a user or password (never written to the store).
fn without_credentials(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}
