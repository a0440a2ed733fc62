//! Sessions that outlive their client (capability `detach`): the daemon's
//! register of detached sessions. A detached session lives in a keeper
//! task of its own (`session::host::keeper`); connections attached to it
//! send it their requests through its inbox, and its events go to each of
//! them (the session sink's fan-out). This module is only the register
//! and the messages: no session state lives here.

use crate::agent::SessionSink;
use crate::transport::Outbound;
use scv_protocol::{ClientMessage, ErrorCode, LiveInfo, LiveState, MAX_DETACHED_SESSIONS};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A refused request, as the keeper answers it (the connection turns it
/// into its `error` event).
pub(crate) struct Refusal {
    pub code: ErrorCode,
    pub message: String,
    pub entry: Option<Box<scv_protocol::QueueEntry>>,
    pub conflicts: Option<Box<[String]>>,
}

pub(crate) type Answer = Result<(), Refusal>;

/// Requests a keeper inbox holds before a sender waits.
pub(crate) const INBOX: usize = 64;

/// What a connection asks of a detached session's keeper.
pub(crate) enum Command {
    /// A session message from an attached connection; replies go to `out`.
    Request {
        rid: String,
        /// Boxed: the inbox's blocks hold 32 commands each, for the
        /// session's life.
        message: Box<ClientMessage>,
        out: Outbound,
        answer: oneshot::Sender<Answer>,
    },
    /// Attach connection `conn`: `session.attached`, the queue, the
    /// transcript and the waiting approvals to `out`, then live events.
    Attach {
        rid: String,
        conn: u64,
        out: Outbound,
        answer: oneshot::Sender<Answer>,
    },
    /// Connection `conn` closed: it follows the session no more.
    Gone { conn: u64 },
    /// `session.close`: cancel what runs, end the session's life.
    Close {
        rid: String,
        out: Outbound,
        answer: oneshot::Sender<Answer>,
    },
}

/// A live detached session as the register holds it.
#[derive(Clone)]
pub(crate) struct Keeper {
    pub inbox: mpsc::Sender<Command>,
    pub status: Arc<Status>,
}

/// What `session.listed` says of a detached session, read without asking
/// its keeper.
pub(crate) struct Status {
    pub sink: Arc<SessionSink>,
    /// Its live subagents: their approvals and cancels go to its keeper.
    pub children: Arc<crate::agent::subagent::ChildIndex>,
    /// USD spent since it went live, in millionths.
    pub cost_micros: AtomicU64,
    pub priced: AtomicBool,
}

impl Status {
    pub(crate) fn new(
        sink: Arc<SessionSink>,
        children: Arc<crate::agent::subagent::ChildIndex>,
    ) -> Status {
        Status {
            sink,
            children,
            cost_micros: AtomicU64::new(0),
            priced: AtomicBool::new(false),
        }
    }

    /// Its live fields for `session.listed`.
    pub(crate) fn info(&self) -> LiveInfo {
        LiveInfo {
            attached: u32::try_from(self.sink.fan().count()).unwrap_or(u32::MAX),
            detached: true,
            cost_usd: self
                .priced
                .load(Ordering::Acquire)
                .then(|| self.cost_micros.load(Ordering::Acquire) as f64 / 1e6),
            ..live_info(&self.sink)
        }
    }

    /// The keeper's view after a step of its loop.
    pub(crate) fn set(&self, cost_usd: Option<f64>) {
        if let Some(cost) = cost_usd {
            self.cost_micros
                .store((cost * 1e6).round() as u64, Ordering::Release);
            self.priced.store(true, Ordering::Release);
        }
    }
}

/// What `session.listed` says of a live session on its connection (a
/// detached one's status adds its own fields).
pub(crate) fn live_info(sink: &SessionSink) -> LiveInfo {
    let fan = sink.fan();
    let state = fan.state();
    LiveInfo {
        state,
        attached: 1,
        live: true,
        detached: false,
        waiting_for: (state == LiveState::AwaitingApproval)
            .then(|| fan.first_waiting())
            .flatten()
            .and_then(|frame| summary_of(&frame)),
        cost_usd: None,
    }
}

/// The `summary` of an `approval.requested` frame.
fn summary_of(frame: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(frame).ok()?;
    Some(value.get("summary")?.as_str()?.to_string())
}

/// The daemon's detached sessions, and the tasks keeping them.
pub(crate) struct Registry {
    keepers: Mutex<HashMap<Arc<str>, Keeper>>,
    /// Every live session of the daemon, detached or not (what
    /// `session.listed` says of one live on another connection).
    board: Mutex<HashMap<Arc<str>, std::sync::Weak<SessionSink>>>,
    next_conn: AtomicU64,
    tasks: TaskTracker,
    /// Trips every keeper: the daemon stops.
    pub shutdown: CancellationToken,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            keepers: Mutex::default(),
            board: Mutex::default(),
            next_conn: AtomicU64::new(1),
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
        }
    }
}

/// Why a session cannot be found or taken.
pub(crate) enum Lookup {
    Found(Arc<str>, Keeper),
    None,
    Ambiguous,
}

impl Registry {
    /// A number naming one connection among those attached to sessions.
    pub(crate) fn connection_id(&self) -> u64 {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers a detached session; `Err` at [`MAX_DETACHED_SESSIONS`].
    pub(crate) fn insert(&self, session_id: Arc<str>, keeper: Keeper) -> Result<(), String> {
        let mut keepers = crate::sync::lock(&self.keepers);
        if keepers.len() >= MAX_DETACHED_SESSIONS {
            return Err(format!(
                "the daemon keeps {MAX_DETACHED_SESSIONS} detached sessions, its limit; close one (session.close, `scv stop ID`)"
            ));
        }
        keepers.insert(session_id, keeper);
        Ok(())
    }

    pub(crate) fn remove(&self, session_id: &str) {
        crate::sync::lock(&self.keepers).remove(session_id);
    }

    /// The detached session `id`, or the one whose id starts with it
    /// (at least 4 characters, as short ids are printed).
    pub(crate) fn find(&self, id: &str) -> Lookup {
        let keepers = crate::sync::lock(&self.keepers);
        if let Some((key, keeper)) = keepers.get_key_value(id) {
            return Lookup::Found(key.clone(), keeper.clone());
        }
        if id.len() < 4 {
            return Lookup::None;
        }
        let mut found = keepers.iter().filter(|(key, _)| key.starts_with(id));
        match (found.next(), found.next()) {
            (Some((key, keeper)), None) => Lookup::Found(key.clone(), keeper.clone()),
            (Some(_), Some(_)) => Lookup::Ambiguous,
            _ => Lookup::None,
        }
    }

    /// A session went live (on a connection).
    pub(crate) fn went_live(&self, sink: &Arc<SessionSink>) {
        crate::sync::lock(&self.board).insert(sink.session_id().clone(), Arc::downgrade(sink));
    }

    /// A session's life in the daemon ended.
    pub(crate) fn ended(&self, session_id: &str) {
        crate::sync::lock(&self.board).remove(session_id);
    }

    /// The live fields of a session live on some connection.
    pub(crate) fn live_on_a_connection(&self, session_id: &str) -> Option<LiveInfo> {
        let sink = crate::sync::lock(&self.board).get(session_id)?.upgrade()?;
        Some(live_info(&sink))
    }

    /// Every detached session's live fields, by id.
    pub(crate) fn infos(&self) -> HashMap<String, LiveInfo> {
        crate::sync::lock(&self.keepers)
            .iter()
            .map(|(id, k)| (id.to_string(), k.status.info()))
            .collect()
    }

    /// Runs a keeper task, tracked so the daemon's stop waits for it.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn(task);
    }

    /// The daemon stops: every keeper cancels its turn (journaled as
    /// interrupted; nothing runs again by itself) and is joined.
    pub(crate) async fn stop(&self, within: std::time::Duration) {
        self.shutdown.cancel();
        self.tasks.close();
        if tokio::time::timeout(within, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("detached sessions did not stop within {within:?}");
        }
    }
}

/// The session a message is about (its `session_id`), for those a
/// detached session's keeper answers.
pub(crate) fn target(message: &ClientMessage) -> Option<&str> {
    Some(match message {
        ClientMessage::TurnStart(m) => &m.session_id,
        ClientMessage::TurnCancel(m) => &m.session_id,
        ClientMessage::QueueUpdate(m) => &m.session_id,
        ClientMessage::QueueMove(m) => &m.session_id,
        ClientMessage::QueueRemove(m) => &m.session_id,
        ClientMessage::SessionPause(m) => &m.session_id,
        ClientMessage::ApprovalResolve(m) => &m.session_id,
        ClientMessage::SessionClear(m) => &m.session_id,
        ClientMessage::SessionConfigure(m) => &m.session_id,
        ClientMessage::CheckpointList(m) => &m.session_id,
        ClientMessage::CheckpointDiff(m) => &m.session_id,
        ClientMessage::CheckpointRestore(m) => &m.session_id,
        ClientMessage::ModelsList(m) => &m.session_id,
        ClientMessage::WorkspaceTrust(m) => &m.session_id,
        ClientMessage::ElicitationResolve(m) => &m.session_id,
        _ => return None,
    })
}
