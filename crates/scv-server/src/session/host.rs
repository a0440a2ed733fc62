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
//!
//! [`SessionHost::handle`] takes each message as the typed value the
//! protocol crate parsed (`ClientMessage`), refuses one that needs a
//! capability the connection did not ask for (`crate::gate::needs`), and
//! hands it whole to its handler, one module per job: `turns.rs` (start,
//! end, cancel, approvals, and the settings a turn runs with),
//! `queueing.rs`, `configure.rs`, `stored.rs`, `checkpoints.rs`,
//! `detached.rs` / `keeper.rs`, `permissions.rs`, `processes.rs`,
//! `trust.rs`, `mcp.rs`, `close.rs` and `cleanup.rs`. What leaves for the
//! client is gated once more where it leaves: the session's sink, and
//! [`SessionHost::reply`] (`crate::gate::shape`).

use crate::agent::session_mcp::SessionMcp;
use crate::agent::{Approvals, SessionSettings, SessionSink, TurnOutcome, Warned};
use crate::context::History;
use crate::journal::LiveJournal;
use crate::server::Shared;
use crate::session::factory::SessionFactory;
use crate::session::queue::PromptQueue;
use crate::session::reject::{invalid, Handled, Reject};
use crate::transport::Outbound;
use scv_protocol::limits::MAX_SESSIONS_PER_CONNECTION;
use scv_protocol::{ClientMessage, ErrorCode, EventBody, SessionStart, Usage};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::{JoinError, JoinHandle};
use tokio_util::sync::CancellationToken;

mod checkpoints;
mod cleanup;
mod close;
mod configure;
mod detached;
mod effort;
mod images;
mod keeper;
mod mcp;
mod permissions;
mod processes;
mod queueing;
mod spending;
mod stored;
mod trust;
mod turn_settings;
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

    /// A message for a session of this connection's own: refused when it
    /// needs a capability the connection did not ask for
    /// ([`crate::gate::needs`]), else handed, whole, to its handler.
    async fn dispatch(&mut self, rid: &str, message: ClientMessage) -> Handled {
        if let Some(needed) = crate::gate::needs(&message) {
            if !needed.granted(&self.caps) {
                return Err(invalid(needed.refusal(message.type_name())));
            }
        }
        match message {
            ClientMessage::SessionStart(start) => self.start(rid, start).await,
            ClientMessage::TurnStart(start) => self.turn_start(rid, start).await,
            ClientMessage::TurnCancel(cancel) => self.cancel(cancel),
            ClientMessage::ApprovalResolve(resolve) => self.resolve(resolve),
            ClientMessage::ElicitationResolve(answer) => self.answer(answer),
            ClientMessage::QueueUpdate(update) => self.queue_update(rid, update).await,
            ClientMessage::QueueMove(moved) => self.queue_move(rid, moved).await,
            ClientMessage::QueueRemove(remove) => self.queue_remove(rid, remove).await,
            ClientMessage::SessionPause(pause) => self.pause(rid, pause).await,
            ClientMessage::SessionClear(clear) => self.clear(rid, &clear.session_id).await,
            ClientMessage::SessionConfigure(configure) => self.configure(rid, configure).await,
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
            ClientMessage::WorkspaceTrust(request) => {
                self.trust_workspace(rid, &request.session_id).await
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
        // What a connection that asked for them gets (`gate::shape`):
        // the commands, and the budget as the session opens (a resumed
        // one's own, set above, over config's).
        made.started.commands = Some(std::mem::take(&mut made.commands));
        let configured = made.settings.config.cost.budgets.max_session_cost_usd;
        made.started.max_session_cost_usd = made.started.max_session_cost_usd.or(configured);
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
            self.caps,
        ));
        let started = EventBody::SessionStarted(Box::new(made.started));
        self.reply(rid, Some(session_id.to_string()), started).await;
        let session = Session {
            sink: sink.clone(),
            settings: Arc::new(made.settings),
            approvals: Arc::new(Approvals::default()),
            mcp_state: SessionMcp::new(),
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

    /// A live subagent of this connection's sessions.
    fn child(&self, session_id: &str) -> Option<crate::agent::subagent::Live> {
        if self.sessions.contains_key(session_id) {
            return None;
        }
        self.children.get(session_id)
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
