//! The session host: the sessions of one connection, their running turn
//! tasks and the bookkeeping between them. Session state is private here
//! and changes only through these methods: start, submit, finish (with the
//! dequeue that follows), cancel, approvals, queue edits, pause, clear, and
//! the bounded drain at cleanup.
//!
//! No actor per session (docs/DESIGN.md): an idle session is a struct.
//! While a turn runs, its task owns the history and hands it back with its
//! terminal event; the host marks the session idle, emits that event, then
//! starts the next queued prompt. So `turn.started` is emitted before the
//! task is spawned, a client answering a terminal event with `turn.start`
//! gets a new turn, and the terminal event precedes `queue.dequeued`.

use crate::agent::session_mcp::SessionMcp;
use crate::agent::{
    add_usage, Approvals, EmitError, SessionSettings, SessionSink, Turn, TurnOutcome, Warned,
};
use crate::context::History;
use crate::journal::LiveJournal;
use crate::server::Shared;
use crate::session::factory::SessionFactory;
use crate::session::queue::PromptQueue;
use crate::session::reject::{check_prompt, invalid, queue_reject, Handled, Reject};
use crate::transport::Outbound;
use scv_protocol::limits::MAX_SESSIONS_PER_CONNECTION;
use scv_protocol::{
    ClientMessage, ErrorCode, Event, EventBody, FailureCode, QueueMove, QueueRemove, QueueUpdate,
    SessionClear, SessionConfigure, SessionPause, SessionStart, TurnCancel, TurnStart, Usage,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::{JoinError, JoinHandle};
use tokio_util::sync::CancellationToken;

mod checkpoints;
mod close;
mod detached;
mod effort;
mod keeper;
mod mcp;
mod permissions;
mod processes;
mod spending;
mod stored;
mod trust;
mod turns;

/// How long active work gets to finish during cleanup.
pub(crate) const CLEANUP_GRACE: Duration = Duration::from_secs(3);

struct Session {
    sink: Arc<SessionSink>,
    settings: Arc<SessionSettings>,
    approvals: Arc<Approvals>,
    mcp_state: SessionMcp,
    /// `None` while a turn owns it.
    history: Option<History>,
    queue: PromptQueue,
    paused: bool,
    active: Option<ActiveTurn>,
    /// Provider usage summed over the session (cleared by `session.clear`).
    usage: Option<Usage>,
    /// The same, by kind.
    detail: crate::model::Usage,
    /// USD over the session's priced turns (`None`: none was priced).
    cost_usd: Option<f64>,
    /// The budget warnings already given.
    warned: Warned,
    /// `max_session_cost_usd` as `session.configure` set it for this
    /// session (`None`: config.toml's, as it is at each turn's start).
    max_session_cost_usd: Option<f64>,
    /// The session's own MCP hub when `session.start` brought servers;
    /// stopped when the session ends.
    mcp: Option<Arc<scv_mcp::Hub>>,
    /// Its journal in the session store (none when the store is off or
    /// could not take it).
    journal: Option<LiveJournal>,
    /// Its checkpoints (none when `checkpoints = false`).
    checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// The connection asked for capability `sessions`: it hears of the
    /// journal's state (`session.warning`).
    journal_warnings: bool,
}

struct ActiveTurn {
    turn_id: Arc<str>,
    /// The prompt, kept for the journal's record of the turn's end.
    prompt: Option<String>,
    /// The request that started it (its events answer that request).
    request_id: Arc<str>,
    token: CancellationToken,
    /// The turn's task (`None` once joined). Held by the session, so a
    /// detached session takes its running turn along.
    handle: Option<JoinHandle<TurnOutcome>>,
}

impl Drop for ActiveTurn {
    fn drop(&mut self) {
        // As a `JoinSet` would: a turn whose session is gone stops.
        if let Some(handle) = &self.handle {
            handle.abort();
        }
    }
}

/// A turn task that ended (or was aborted): its session and outcome.
pub(crate) type Joined = (Arc<str>, Result<TurnOutcome, JoinError>);

pub(crate) struct SessionHost {
    shared: Arc<Shared>,
    out: Outbound,
    /// Boxed: a map holding one session (the usual connection) reserves
    /// four slots, so unboxed it cost 800 bytes per connection.
    sessions: HashMap<Arc<str>, Box<Session>>,
    /// Capability `detach`: the detached sessions this connection is
    /// attached to (their keepers answer their messages).
    attached: HashMap<Arc<str>, crate::attach::Keeper>,
    /// This connection among those attached to detached sessions (0:
    /// none yet).
    conn: u64,
    /// What the connection opted into (`initialize.capabilities`); every
    /// extension event and field is gated on it.
    caps: scv_protocol::Capabilities,
    /// Its sessions' live subagents, by session id.
    children: Arc<crate::agent::subagent::ChildIndex>,
}

impl SessionHost {
    pub(crate) fn new(shared: Arc<Shared>, out: Outbound) -> Self {
        SessionHost {
            shared,
            out,
            sessions: HashMap::new(),
            attached: HashMap::new(),
            conn: 0,
            caps: scv_protocol::Capabilities::default(),
            children: Arc::default(),
        }
    }

    /// The one dispatch of a session message (the connection answers
    /// `initialize` and `daemon.control` itself).
    pub(crate) async fn handle(&mut self, rid: &str, message: ClientMessage) -> Handled {
        match self.forward(rid, message).await {
            Ok(handled) => handled,
            Err(message) => self.dispatch(rid, message).await,
        }
    }

    /// A message for a session of this connection's own.
    async fn dispatch(&mut self, rid: &str, message: ClientMessage) -> Handled {
        match message {
            ClientMessage::SessionStart(start) => self.start(rid, start).await,
            ClientMessage::TurnStart(TurnStart {
                session_id,
                prompt,
                command,
            }) => {
                let prompt = if command {
                    self.expand(&session_id, prompt).await?
                } else {
                    prompt
                };
                self.submit(rid, &session_id, prompt).await
            }
            ClientMessage::TurnCancel(TurnCancel {
                session_id,
                turn_id,
            }) => self.cancel(&session_id, &turn_id),
            ClientMessage::ApprovalResolve(r) => {
                self.resolve(&r.session_id, &r.approval_id, r.approved)
            }
            ClientMessage::ElicitationResolve(answer) => self.answer(answer),
            ClientMessage::QueueUpdate(QueueUpdate {
                session_id,
                queue_id,
                revision,
                prompt,
            }) => {
                self.queue_update(rid, &session_id, &queue_id, revision, prompt)
                    .await
            }
            ClientMessage::QueueMove(QueueMove {
                session_id,
                queue_id,
                revision,
                before_queue_id,
            }) => {
                self.queue_move(
                    rid,
                    &session_id,
                    &queue_id,
                    revision,
                    before_queue_id.as_deref(),
                )
                .await
            }
            ClientMessage::QueueRemove(QueueRemove {
                session_id,
                queue_id,
                revision,
            }) => {
                self.queue_remove(rid, &session_id, &queue_id, revision)
                    .await
            }
            ClientMessage::SessionPause(SessionPause { session_id, paused }) => {
                self.pause(rid, &session_id, paused).await
            }
            ClientMessage::SessionClear(SessionClear { session_id }) => {
                self.clear(rid, &session_id).await
            }
            ClientMessage::SessionConfigure(SessionConfigure {
                session_id,
                provider,
                model,
                max_session_cost_usd,
                mode,
                reasoning_effort,
            }) => {
                if let Some(effort) = reasoning_effort {
                    let switching = provider.is_some() || model.is_some();
                    self.set_effort(&session_id, &effort, switching)?;
                }
                self.configure(
                    rid,
                    &session_id,
                    provider,
                    model,
                    max_session_cost_usd,
                    mode,
                )
                .await
            }
            ClientMessage::SessionList(_)
            | ClientMessage::SessionResume(_)
            | ClientMessage::SessionFork(_)
            | ClientMessage::SessionDelete(_)
            | ClientMessage::SessionClose(_)
                if !self.caps.sessions =>
            {
                Err(invalid(format!(
                    "{} needs capability `sessions` (ask for it in initialize)",
                    message.type_name()
                )))
            }
            ClientMessage::CheckpointList(_)
            | ClientMessage::CheckpointDiff(_)
            | ClientMessage::CheckpointRestore(_)
                if !self.caps.checkpoints =>
            {
                Err(invalid(format!(
                    "{} needs capability `checkpoints` (ask for it in initialize)",
                    message.type_name()
                )))
            }
            ClientMessage::CheckpointList(list) => self.checkpoint_list(rid, list).await,
            ClientMessage::CheckpointDiff(diff) => self.checkpoint_diff(rid, diff).await,
            ClientMessage::CheckpointRestore(restore) => {
                self.checkpoint_restore(rid, restore).await
            }
            ClientMessage::ModelsList(list) => self.models(rid, &list.session_id).await,
            ClientMessage::SessionList(list) => self.list(rid, list).await,
            ClientMessage::SessionResume(resume) => self.resume(rid, resume).await,
            ClientMessage::SessionFork(fork) => self.fork(rid, fork).await,
            ClientMessage::SessionDelete(delete) => self.delete(rid, delete).await,
            ClientMessage::SessionClose(close) => self.close_one(rid, &close.session_id).await,
            ClientMessage::WorkspaceTrust(_) if !self.caps.trust => Err(invalid(
                "workspace.trust needs capability `trust` (ask for it in initialize)",
            )),
            ClientMessage::WorkspaceTrust(request) => {
                self.trust_workspace(rid, &request.session_id).await
            }
            ClientMessage::PermissionsList(_)
            | ClientMessage::PermissionsKeep(_)
            | ClientMessage::PermissionsRemove(_)
                if !self.caps.permissions =>
            {
                Err(invalid(format!(
                    "{} needs capability `permissions` (ask for it in initialize)",
                    message.type_name()
                )))
            }
            ClientMessage::PermissionsList(list) => {
                self.permissions_list(rid, &list.session_id).await
            }
            ClientMessage::PermissionsKeep(edit) => self.permissions_edit(rid, edit, true).await,
            ClientMessage::PermissionsRemove(edit) => self.permissions_edit(rid, edit, false).await,
            ClientMessage::ProcessKill(request) => self.process(rid, request, true).await,
            ClientMessage::ProcessPeek(request) => self.process(rid, request, false).await,
            ClientMessage::ProcessList(list) => self.processes(rid, list).await,
            // The connection's own, and `detach`'s (`forward`).
            _ => Err(Reject::new(
                ErrorCode::InternalError,
                "not a session message",
            )),
        }
    }

    /// `models.list`: the session's provider's models, or a
    /// `provider_error`-worded `invalid_request` saying why not. Bounded
    /// (5 s) so the connection is held no longer.
    async fn models(&mut self, rid: &str, session_id: &str) -> Result<(), Reject> {
        let provider = self.session(session_id)?.settings.provider.clone();
        let models = provider
            .list_models()
            .await
            .map_err(|why| invalid(format!("cannot list the models: {why}")))?;
        let listed = EventBody::ModelsListed {
            provider: provider.name.clone(),
            models,
        };
        self.reply(rid, Some(session_id.to_string()), listed).await;
        Ok(())
    }

    fn session(&mut self, session_id: &str) -> Result<&mut Session, Reject> {
        if !self.sessions.contains_key(session_id) && self.children.get(session_id).is_some() {
            return Err(invalid(format!(
                "session {session_id} is a subagent; it takes no messages but approvals and cancels"
            )));
        }
        self.sessions
            .get_mut(session_id)
            .map(|s| &mut **s)
            .ok_or_else(|| {
                Reject::new(
                    ErrorCode::SessionNotFound,
                    format!("session {session_id} does not exist on this connection"),
                )
            })
    }

    /// `session.start`: `session.started`, then the empty queue snapshot.
    async fn start(&mut self, rid: &str, start: SessionStart) -> Handled {
        if self.sessions.len() >= MAX_SESSIONS_PER_CONNECTION {
            return Err(invalid(format!(
                "this connection already holds {MAX_SESSIONS_PER_CONNECTION} sessions, its limit; use another connection"
            )));
        }
        let base_url = start.base_url.clone();
        let no_tools = start.no_tools;
        let made = SessionFactory::new(&self.shared)
            .start(start, "startup")
            .await?;
        let session_id: Arc<str> = uuid::Uuid::new_v4().to_string().into();
        let journal = self
            .create_journal(&session_id, &made.started, base_url, no_tools)
            .await;
        self.open_session(
            rid,
            Opened {
                session_id,
                made,
                history: History::default(),
                journal,
                first_seq: 0,
                stored: false,
            },
        )
        .await;
        // A journal whose header waits for room says so with the first
        // turn (`session.started` and its snapshot come together).
        Ok(())
    }

    /// Makes a session live on this connection: `session.started`, then
    /// its (empty) queue's snapshot. Returns the snapshot's `seq`.
    async fn open_session(&mut self, rid: &str, opened: Opened) -> Option<u64> {
        let Opened {
            session_id,
            mut made,
            history,
            journal,
            first_seq,
            stored,
        } = opened;
        if self.caps.commands {
            made.started.commands = Some(std::mem::take(&mut made.commands));
        } else {
            made.started.drop_commands_fields();
        }
        if !self.caps.trust {
            made.started.trust = None;
        }
        // The budget as the session opens (a resumed one's own, set above,
        // over config's).
        made.started.max_session_cost_usd = if self.caps.usage {
            let configured = made.settings.config.cost.budgets.max_session_cost_usd;
            made.started.max_session_cost_usd.or(configured)
        } else {
            None
        };
        let checkpoints = match &self.shared.checkpoints {
            Some(store) => Some(
                crate::checkpoint::Checkpoints::open(
                    store.clone(),
                    session_id.clone(),
                    made.settings.cwd.clone(),
                    stored,
                )
                .await,
            ),
            None => None,
        };
        let sink = Arc::new(SessionSink::new(
            session_id.clone(),
            self.out.clone(),
            first_seq,
        ));
        let started = Event {
            body: EventBody::SessionStarted(Box::new(made.started)),
            request_id: Some(rid.to_string()),
            session_id: Some(session_id.to_string()),
            turn_id: None,
            seq: None,
            parent: None,
        };
        // A failed send trips the writer's token; the connection sees it.
        let _ = self
            .out
            .send(crate::transport::encode(started.as_ref()))
            .await;
        let session = Session {
            sink: sink.clone(),
            settings: Arc::new(made.settings),
            approvals: Arc::new(Approvals::default()),
            mcp_state: SessionMcp::new(self.caps.elicitation),
            history: Some(history),
            queue: PromptQueue::default(),
            paused: false,
            active: None,
            usage: None,
            detail: crate::model::Usage::default(),
            cost_usd: None,
            warned: Warned::default(),
            max_session_cost_usd: None,
            mcp: made.mcp,
            journal,
            checkpoints,
            journal_warnings: self.caps.sessions,
        };
        let snapshot = EventBody::QueueSnapshot {
            entries: session.queue.snapshot(),
        };
        self.sessions.insert(session_id, Box::new(session));
        self.shared.detached.went_live(&sink);
        sink.emit(Some(rid), None, &snapshot).await.ok()
    }

    /// What the connection opted into.
    pub(crate) fn caps(&self) -> &scv_protocol::Capabilities {
        &self.caps
    }

    /// What the connection opted into (`initialize.capabilities`).
    pub(crate) fn grant(&mut self, granted: scv_protocol::Capabilities) {
        self.caps = granted;
    }

    /// `session.configure` (extension): another provider and/or model for
    /// the next turns of an idle session; the history is kept, reasoning
    /// data of another wire dropped.
    async fn configure(
        &mut self,
        rid: &str,
        session_id: &str,
        provider: Option<String>,
        model: Option<String>,
        max_session_cost_usd: Option<f64>,
        mode: Option<scv_protocol::Mode>,
    ) -> Handled {
        if let Some(max) = max_session_cost_usd {
            if !self.caps.usage {
                return Err(invalid(
                    "max_session_cost_usd needs capability `usage` (ask for it in initialize)",
                ));
            }
            if !max.is_finite() || max <= 0.0 {
                return Err(invalid(format!(
                    "max_session_cost_usd must be a positive number of USD (got {max})"
                )));
            }
        }
        if provider.is_none() && model.is_none() {
            // Only the budget or the mode changes, which a running turn
            // may see (the mode applies from its next step or call); the
            // provider and model stay.
            let configured_budget = self.shared.live.current().config.cost.budgets;
            let session = self.session(session_id)?;
            if max_session_cost_usd.is_some() {
                session.max_session_cost_usd = max_session_cost_usd;
            }
            if let Some(mode) = mode {
                session.settings.mode.set(mode);
            }
            let configured = EventBody::SessionConfigured {
                provider: session.settings.provider.name.clone(),
                model: session.settings.provider.model.clone(),
                context_max_tokens: session.settings.context_max_tokens,
                max_session_cost_usd: max_session_cost_usd
                    .or(session.max_session_cost_usd)
                    .or(configured_budget.max_session_cost_usd),
                mode: Some(session.settings.mode.get()),
            };
            if let Some(seq) = session.emit(rid, &configured).await {
                if let Some(journal) = &mut session.journal {
                    // Its `seq` is journaled like every session event's.
                    let settings = &session.settings.provider;
                    journal.configured(
                        &settings.name,
                        &settings.model,
                        seq,
                        None,
                        max_session_cost_usd,
                    );
                }
                session.tell_journal(Some(rid)).await;
            }
            return Ok(());
        }
        let current = {
            let session = self.session(session_id)?;
            if session.active.is_some() {
                return Err(Reject::new(
                    ErrorCode::TurnActive,
                    "a turn is running; configure the session when it is idle",
                ));
            }
            session.settings.clone()
        };
        // A switch takes what config.toml says now.
        self.shared.live.refresh().await;
        let (settings, mut configured) =
            SessionFactory::new(&self.shared).configure(&current, provider, model)?;
        let session = self.session(session_id)?;
        if let Some(mode) = mode {
            settings.mode.set(mode);
            if let EventBody::SessionConfigured { mode: answer, .. } = &mut configured {
                *answer = Some(mode);
            }
        }
        if max_session_cost_usd.is_some() {
            session.max_session_cost_usd = max_session_cost_usd;
            if let EventBody::SessionConfigured {
                max_session_cost_usd: answer,
                ..
            } = &mut configured
            {
                *answer = max_session_cost_usd;
            }
        }
        let changed = session
            .history
            .as_mut()
            .is_some_and(|history| history.keep_provider_data_of(settings.provider.wire));
        let (provider, model) = (
            settings.provider.name.clone(),
            settings.provider.model.clone(),
        );
        session.settings = Arc::new(settings);
        if let Some(seq) = session.emit(rid, &configured).await {
            if let Some(journal) = &mut session.journal {
                let history = session.history.as_ref().filter(|_| changed);
                journal.configured(&provider, &model, seq, history, max_session_cost_usd);
            }
            session.tell_journal(Some(rid)).await;
        }
        Ok(())
    }

    /// `turn.start` with `command`: `/NAME args` as the custom command or
    /// skill NAME expands it (a prompt not of that form is sent as it is).
    async fn expand(&mut self, session_id: &str, prompt: String) -> Result<String, Reject> {
        let session = self.session(session_id)?;
        if session.settings.no_tools {
            return Err(invalid(
                "custom commands and skills are not available in a session without tools",
            ));
        }
        let (own, settings) = (session.mcp.clone(), session.settings.clone());
        if let Some(expanded) = mcp::prompt(own, &self.shared, &prompt).await {
            return expanded;
        }
        let mcp = self.shared.mcp.clone();
        crate::inline::expand(settings, &mcp, prompt)
            .await
            .map_err(invalid)
    }

    /// `turn.start`: runs at once on an idle session, else is queued.
    async fn submit(&mut self, rid: &str, session_id: &str, prompt: String) -> Handled {
        check_prompt(&prompt)?;
        let session = self.session(session_id)?;
        if session.active.is_none() {
            let session_id = session.sink.session_id().clone();
            self.start_turn(&session_id, rid.into(), prompt).await;
            return Ok(());
        }
        let (entry, position) = session
            .queue
            .push(prompt, &session.settings.submitter, rid.into())
            .map_err(queue_reject)?;
        let seq = session
            .emit(rid, &EventBody::QueueEnqueued { entry, position })
            .await;
        session.journal_queue(rid, seq).await;
        Ok(())
    }

    /// Starts a turn on an idle session: `turn.started` first, then the task.
    async fn start_turn(&mut self, session_id: &Arc<str>, request_id: Arc<str>, prompt: String) {
        // The budgets config.toml holds now: an edit reaches open sessions
        // from their next turn (a session's own `max_session_cost_usd`,
        // set by `session.configure`, stays over config's).
        self.shared.live.refresh().await;
        let budgets = self.shared.live.current().config.cost.budgets;
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        let turn_id: Arc<str> = uuid::Uuid::new_v4().to_string().into();
        let token = CancellationToken::new();
        let mut history = session.history.take().unwrap_or_default();
        history.mark();
        let sink = session.sink.clone();
        if let Some(journal) = &mut session.journal {
            // Recorded before the client hears of it: a turn it saw start
            // is in the journal, as interrupted at worst.
            journal.turn_started(&turn_id, &prompt, sink.next_seq().await);
        }
        session.active = Some(ActiveTurn {
            turn_id: turn_id.clone(),
            prompt: session.journal.is_some().then(|| prompt.clone()),
            request_id: request_id.clone(),
            token: token.clone(),
            handle: None,
        });
        sink.fan().set_running(true);
        let started = sink
            .emit(
                Some(&request_id),
                Some(&turn_id),
                &EventBody::TurnStarted {},
            )
            .await;
        if started.is_err() {
            // The writer is gone; the connection is ending.
            sink.fan().set_running(false);
            session.active = None;
            session.history = Some(history);
            return;
        }
        // The journal's state, once the turn is under way: it could not
        // take the turn's start (or caught up with it), or it could not
        // be written since the session opened.
        session.tell_journal(Some(&request_id)).await;
        let settings = turn_settings(&session.settings, &prompt);
        let model = settings.provider.model.clone();
        let spending = session.spending(budgets, self.caps.usage);
        let trace = self.shared.telemetry.as_ref().map(|t| {
            t.turn(
                session_id,
                &turn_id,
                &session.settings.provider.name,
                &model,
                &prompt,
            )
        });
        let turn = Turn {
            trace,
            spending,
            limits: session.settings.limits.clone(),
            reasoning: self.caps.reasoning,
            checkpoints: session.checkpoints.clone(),
            announce_checkpoints: self.caps.checkpoints,
            prompt: prompt.as_str().into(),
            settings,
            sink,
            approvals: session.approvals.clone(),
            session_mcp: session.mcp_state.clone(),
            request_id,
            turn_id,
            token,
            hook_events: self.caps.hooks,
            session_warnings: self.caps.sessions,
            retries: self.caps.retries,
            step_usage: self.caps.step_usage,
            subagents: (!session.settings.no_tools)
                .then(|| {
                    let server = crate::agent::subagent::Server {
                        limits: session.settings.limits.clone(),
                        config: session.settings.config.clone(),
                        store: self.shared.store.clone(),
                    };
                    crate::agent::subagent::Subagents::for_turn(
                        &server,
                        0,
                        session_id.clone(),
                        self.caps.subagents,
                        self.children.clone(),
                        session.settings.custom.agents.clone(),
                    )
                })
                .flatten(),
            child: None,
            mcp: session
                .mcp
                .clone()
                .unwrap_or_else(|| self.shared.mcp.clone()),
        };
        let handle = tokio::spawn(turn.run(history, prompt));
        if let Some(active) = &mut session.active {
            active.handle = Some(handle);
        }
    }

    /// A turn task ended: its terminal event, then the next queued prompt.
    pub(crate) async fn finish(&mut self, joined: Joined) {
        if let Some(session_id) = self.settle(joined).await {
            self.dequeue_next(&session_id).await;
        }
    }

    /// Takes a finished turn's history back and emits its terminal event
    /// once the session is idle again; returns the session.
    async fn settle(&mut self, joined: Joined) -> Option<Arc<str>> {
        let (session_id, outcome) = joined;
        let session = self.sessions.get_mut(&session_id)?;
        let active = session.active.take()?;
        session.sink.fan().set_running(false);
        let mut spent = None;
        let mut budget_reached = false;
        let terminal = match outcome {
            Ok(outcome) => {
                budget_reached = outcome.budget_reached;
                if let Some(usage) = outcome.detail {
                    spent = Some(scv_store::Spent {
                        model: session.settings.provider.model.clone(),
                        usage_detail: usage.detail(),
                        cost_usd: outcome.cost_usd,
                    });
                }
                session.history = Some(outcome.history);
                if let Some(usage) = outcome.usage {
                    add_usage(&mut session.usage, usage);
                }
                if let Some(detail) = outcome.detail {
                    session.detail.add(detail);
                }
                if let Some(cost) = outcome.cost_usd {
                    session.cost_usd = Some(session.cost_usd.unwrap_or(0.0) + cost);
                }
                session.warned = outcome.warned;
                let mut terminal = outcome.terminal;
                if let Some(EventBody::TurnCompleted { cost, .. }) = &mut terminal {
                    // By kind and priced: for a connection that asked, and
                    // for the journal (whose record `scv usage` reads).
                    *cost = Some(scv_protocol::TurnCost {
                        usage_detail: outcome.detail.unwrap_or_default().detail(),
                        session_usage_detail: session.detail.detail(),
                        cost_usd: outcome.cost_usd,
                        session_cost_usd: session.cost_usd,
                    });
                }
                terminal
            }
            Err(err) => {
                // A turn that panicked or was aborted loses the history it held.
                tracing::error!("turn task ended abnormally: {err}");
                session.history = Some(History::emptied());
                Some(if err.is_cancelled() {
                    EventBody::TurnCancelled {}
                } else {
                    EventBody::TurnFailed {
                        code: FailureCode::InternalError,
                        message: "the turn stopped unexpectedly; the conversation was reset".into(),
                    }
                })
            }
        };
        let mut no_undo = None;
        let checkpoints = session.checkpoints.clone();
        let mut ending = None;
        if let Some(checkpoints) = &checkpoints {
            no_undo = checkpoints.missed_in(&active.turn_id).await;
            // Held now, recorded once the terminal event is out.
            ending = checkpoints.turn_ending(&active.turn_id).await;
        }
        let sink = session.sink.clone();
        let mut bounds_due = false;
        if let (Some(journal), Some(history)) = (&mut session.journal, &session.history) {
            // Durable before the client hears the turn ended.
            let prompt = active.prompt.as_deref().unwrap_or_default();
            let seq = sink.next_seq().await;
            bounds_due = journal
                .turn_ended(
                    &active.turn_id,
                    prompt,
                    seq,
                    history,
                    crate::journal::TurnEnd {
                        terminal: terminal.as_ref(),
                        spent,
                        no_undo,
                    },
                )
                .await;
        }
        // A journal that could not take the turn says so before its end.
        session.tell_journal(Some(&active.request_id)).await;
        if let Some(mut terminal) = terminal {
            if !self.caps.usage {
                if let EventBody::TurnCompleted { cost, .. } = &mut terminal {
                    *cost = None;
                }
            }
            // A budget's refusal: its own code for a connection that asked.
            let code = (budget_reached && self.caps.budgets).then_some(spending::BUDGET_EXCEEDED);
            let _ = sink
                .emit_coded(
                    Some(&active.request_id),
                    Some(&active.turn_id),
                    &terminal,
                    code,
                )
                .await;
        }
        if let Some(ending) = ending {
            ending.record().await;
        }
        if bounds_due {
            if let Some(store) = session.journal.as_ref().map(|j| j.store().clone()) {
                if let Err(err) = crate::blocking::run(move || store.enforce()).await {
                    tracing::warn!("session store bounds not enforced: {err}");
                }
            }
        }
        Some(session_id)
    }

    /// Starts the next queued prompt if the session is idle and not paused.
    async fn dequeue_next(&mut self, session_id: &Arc<str>) {
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        if session.paused || session.active.is_some() {
            return;
        }
        let Some(next) = session.queue.pop_front() else {
            return;
        };
        let dequeued = EventBody::QueueDequeued {
            queue_id: next.entry.queue_id,
        };
        let Ok(seq) = session
            .sink
            .emit(Some(&next.request_id), None, &dequeued)
            .await
        else {
            return;
        };
        session.journal_queue(&next.request_id, Some(seq)).await;
        self.start_turn(session_id, next.request_id.into(), next.entry.prompt)
            .await;
    }

    fn cancel(&mut self, session_id: &str, turn_id: &str) -> Handled {
        if let Some(child) = self.child(session_id) {
            // That subagent alone: its call fails, the parent goes on.
            if &*child.turn_id != turn_id {
                return Err(Reject::new(
                    ErrorCode::TurnNotFound,
                    format!("turn {turn_id} is not running in this session"),
                ));
            }
            child.token.cancel();
            return Ok(());
        }
        let session = self.session(session_id)?;
        match &session.active {
            Some(active) if &*active.turn_id == turn_id => {
                active.token.cancel();
                Ok(())
            }
            _ => Err(Reject::new(
                ErrorCode::TurnNotFound,
                format!("turn {turn_id} is not running in this session"),
            )),
        }
    }

    /// A live subagent of this connection's sessions.
    fn child(&self, session_id: &str) -> Option<crate::agent::subagent::Live> {
        if self.sessions.contains_key(session_id) {
            return None;
        }
        self.children.get(session_id)
    }

    fn resolve(&mut self, session_id: &str, approval_id: &str, approved: bool) -> Handled {
        // A subagent's approvals wait with its root session's.
        let session_id = match self.child(session_id) {
            Some(child) => child.root,
            None => session_id.into(),
        };
        let session = self.session(&session_id)?;
        if session.approvals.resolve(approval_id, approved) {
            Ok(())
        } else {
            Err(Reject::new(
                ErrorCode::ApprovalNotFound,
                format!("approval {approval_id} is not pending"),
            ))
        }
    }

    async fn queue_update(
        &mut self,
        rid: &str,
        session_id: &str,
        queue_id: &str,
        revision: u64,
        prompt: String,
    ) -> Handled {
        check_prompt(&prompt)?;
        let session = self.session(session_id)?;
        let entry = session
            .queue
            .update(queue_id, revision, prompt)
            .map_err(queue_reject)?;
        let seq = session.emit(rid, &EventBody::QueueUpdated { entry }).await;
        session.journal_queue(rid, seq).await;
        Ok(())
    }

    async fn queue_move(
        &mut self,
        rid: &str,
        session_id: &str,
        queue_id: &str,
        revision: u64,
        before: Option<&str>,
    ) -> Handled {
        let session = self.session(session_id)?;
        let (entry, position) = session
            .queue
            .move_entry(queue_id, revision, before)
            .map_err(queue_reject)?;
        let seq = session
            .emit(rid, &EventBody::QueueMoved { entry, position })
            .await;
        session.journal_queue(rid, seq).await;
        Ok(())
    }

    async fn queue_remove(
        &mut self,
        rid: &str,
        session_id: &str,
        queue_id: &str,
        revision: u64,
    ) -> Handled {
        let session = self.session(session_id)?;
        let entry = session
            .queue
            .remove(queue_id, revision)
            .map_err(queue_reject)?;
        let removed = EventBody::QueueRemoved {
            queue_id: entry.queue_id,
        };
        let seq = session.emit(rid, &removed).await;
        session.journal_queue(rid, seq).await;
        Ok(())
    }

    /// `session.pause`, confirmed by a snapshot of the queue as it stands
    /// (the protocol has no event of its own for it).
    async fn pause(&mut self, rid: &str, session_id: &str, paused: bool) -> Handled {
        let session = self.session(session_id)?;
        session.paused = paused;
        let snapshot = EventBody::QueueSnapshot {
            entries: session.queue.snapshot(),
        };
        let sink = session.sink.clone();
        if let Err(EmitError::TooLarge(bytes)) = sink.emit(Some(rid), None, &snapshot).await {
            // The queue's byte bound makes this unreachable; a pause is
            // still always answered.
            return Err(Reject::new(
                ErrorCode::InternalError,
                format!(
                    "the session is {}paused, but its queue snapshot ({bytes} bytes) exceeds the frame limit",
                    if paused { "" } else { "un" }
                ),
            ));
        }
        if !paused {
            let session_id = sink.session_id().clone();
            self.dequeue_next(&session_id).await;
        }
        Ok(())
    }

    async fn clear(&mut self, rid: &str, session_id: &str) -> Handled {
        let session = self.session(session_id)?;
        if session.active.is_some() {
            return Err(Reject::new(
                ErrorCode::TurnActive,
                "a turn is running; cancel it or wait before clearing",
            ));
        }
        if let Some(history) = &mut session.history {
            history.clear();
        }
        session.queue.clear();
        session.usage = None;
        session.detail = crate::model::Usage::default();
        session.cost_usd = None;
        session.warned = Warned::default();
        if let Some(seq) = session.emit(rid, &EventBody::SessionCleared {}).await {
            if let Some(journal) = &mut session.journal {
                journal.cleared(seq);
            }
            session.tell_journal(Some(rid)).await;
        }
        Ok(())
    }

    /// Cancels every active turn and lets each emit its terminal event
    /// within the grace period; then aborts and joins what is left. Queued
    /// prompts are dropped, never replayed.
    pub(crate) async fn close(&mut self) {
        for session in self.sessions.values() {
            if let Some(active) = &session.active {
                active.token.cancel();
            }
        }
        let drained = tokio::time::timeout(CLEANUP_GRACE, async {
            while let Some(joined) = self.next_finished().await {
                self.settle(joined).await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!("turns did not stop within {CLEANUP_GRACE:?}; aborting them");
            for session in self.sessions.values_mut() {
                if let Some(handle) = session.active.as_mut().and_then(|a| a.handle.take()) {
                    handle.abort();
                    let _ = handle.await;
                }
            }
        }
        self.leave_attached();
        for session in self.sessions.values() {
            if let Some(hub) = &session.mcp {
                hub.shutdown().await;
            }
        }
        self.session_end_hooks().await;
        for session in self.sessions.values_mut() {
            if let Some(journal) = &mut session.journal {
                // What waited for room: one more try now.
                journal.last_try().await;
            }
        }
        // Sessions nobody used leave nothing behind (their lock goes with
        // the journal, then the file).
        let unused: Vec<(Arc<crate::journal::Store>, String)> = self
            .sessions
            .values()
            .filter_map(|s| s.journal.as_ref())
            .filter(|j| j.untouched())
            .map(|j| (j.store().clone(), j.session_id().to_string()))
            .collect();
        for session in self.sessions.values_mut() {
            match session.journal.take() {
                Some(journal) if !journal.untouched() => {
                    // Records still waiting for room stay with the store.
                    journal.close();
                }
                _ => {}
            }
        }
        for id in self.sessions.keys() {
            self.shared.detached.ended(id);
        }
        self.sessions.clear();
        if !unused.is_empty() {
            let _ = crate::blocking::run(move || {
                for (store, id) in unused {
                    let _ = store.sessions.delete(&id);
                }
            })
            .await;
        }
    }
}

impl SessionHost {
    /// `SessionEnd` hooks of the sessions closing, at once, within the
    /// cleanup grace (a hook cannot hold the connection's end).
    async fn session_end_hooks(&self) {
        let ends = self
            .sessions
            .values()
            .filter(|s| !s.settings.custom.hooks.is_empty())
            .map(|session| async move {
                let settings = &session.settings;
                let cx = settings.hook_context(session.sink.session_id());
                let input = scv_hooks::Input::SessionEnd { reason: "other" };
                let ended = crate::hooks::run(
                    &settings.custom.hooks,
                    &cx,
                    scv_hooks::Event::SessionEnd,
                    None,
                    &input,
                )
                .await;
                for note in ended.iter().flat_map(|h| &h.notes) {
                    tracing::info!("SessionEnd {}: {}", note.hook, note.message);
                }
            });
        let all = futures_util::future::join_all(ends);
        if tokio::time::timeout(CLEANUP_GRACE, all).await.is_err() {
            tracing::warn!("SessionEnd hooks did not end within {CLEANUP_GRACE:?}; stopped them");
        }
    }
}

impl Session {
    /// Emits a session event answering `rid`; its `seq` once sent (a
    /// failed send trips the writer's token; the connection sees it).
    async fn emit(&self, rid: &str, body: &EventBody) -> Option<u64> {
        self.sink.emit(Some(rid), None, body).await.ok()
    }

    /// Journals the queue as it stands after the event of `seq` (none:
    /// it was not sent, the connection is ending).
    async fn journal_queue(&mut self, rid: &str, seq: Option<u64>) {
        if let (Some(journal), Some(seq)) = (&mut self.journal, seq) {
            journal.queue(self.queue.prompts(), seq);
            self.tell_journal(Some(rid)).await;
        }
    }

    /// Tells the session's client what became of its journal
    /// (`session.warning`: `journal_failed` once when writes fail,
    /// `journal_recovered` once it caught up), if it asked for capability
    /// `sessions`; the log has it either way.
    pub(super) async fn tell_journal(&mut self, rid: Option<&str>) {
        let Some(journal) = &mut self.journal else {
            return;
        };
        let warnings = journal.warnings().await;
        if !self.journal_warnings {
            return;
        }
        for warning in warnings {
            let body = EventBody::SessionWarning(warning);
            // A failed send trips the writer's token; the connection sees it.
            let _ = self.sink.emit(rid, None, &body).await;
        }
    }
}

/// A session about to go live on this connection.
struct Opened {
    session_id: Arc<str>,
    made: crate::session::factory::Made,
    history: History,
    journal: Option<LiveJournal>,
    /// The first `seq` its events get.
    first_seq: u64,
    /// A session with an earlier life (resumed): its checkpoints are in
    /// the store.
    stored: bool,
}

/// The session's settings for the turn of `prompt`: the `model:` of the
/// command that expanded to it (`inline::grant`), for that turn alone.
fn turn_settings(settings: &Arc<SessionSettings>, prompt: &str) -> Arc<SessionSettings> {
    match settings.custom.grant_of(prompt).and_then(|g| g.model) {
        Some(model) => {
            let mut next = (**settings).clone();
            crate::customize::use_model(&mut next.provider, &model);
            Arc::new(next)
        }
        None => settings.clone(),
    }
}
