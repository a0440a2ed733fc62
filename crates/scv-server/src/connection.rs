//! One client connection, over stdio or a socket.
//!
//! The connection task owns its sessions. It selects concurrently over
//! client input, finished turns and writer failure (the protocol's
//! "Ordering and backpressure"); turn tasks run beside it and are joined
//! through a `JoinSet`. Cleanup cancels active turns, gives them and the
//! writer a grace period, then aborts and joins whatever is left.

use crate::agent::{Turn, TurnOutcome};
use crate::context::History;
use crate::daemon::supervisor::Refusal;
use crate::provider::OpenAi;
use crate::server::{ServerContext, SERVER_NAME, SERVER_VERSION};
use crate::session::queue::QueueError;
use crate::session::{ActiveTurn, Approvals, EmitError, Session, SessionSettings, SessionSink};
use crate::transport::{encode, spawn_writer, Outbound};
use futures_util::StreamExt;
use scv_protocol::limits::{
    MAX_CLIENT_FRAME_BYTES, MAX_PROMPT_BYTES, MAX_PROMPT_HISTORY_BYTES, MAX_PROMPT_HISTORY_ITEMS,
    MAX_SERVER_FRAME_BYTES, MAX_SESSIONS_PER_CONNECTION, MAX_TRANSCRIPT_BYTES,
    MAX_TRANSCRIPT_ITEMS,
};
use scv_protocol::{
    ClientFrame, ClientMessage, DaemonCommand, ErrorBody, ErrorCode, Event, EventBody, FailureCode,
    Frame, FrameCodec, Initialize, PeerInfo, QueueEntry, SessionStart, SessionStarted, Usage,
    PROTOCOL_VERSION,
};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::{Id as TaskId, JoinError, JoinSet};
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;

/// How long active work and the writer get to finish during cleanup.
pub const CLEANUP_GRACE: Duration = Duration::from_secs(3);

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The client closed its side.
    Eof,
    /// A fatal protocol error (version mismatch) closed it.
    Fatal,
    /// The writer failed or the client stopped reading.
    WriterFailed,
    /// The server is shutting down.
    Shutdown,
    /// No `initialize` came within the deadline.
    NotInitialized,
}

/// A request the server refuses, as an `error` event.
struct Reject {
    code: ErrorCode,
    message: String,
    entry: Option<QueueEntry>,
}

impl Reject {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Reject {
            code,
            message: message.into(),
            entry: None,
        }
    }
}

type Handled = Result<(), Reject>;

/// Serves one client until EOF, a fatal error, writer failure or shutdown.
/// With `init_deadline`, a client that has not initialized by then is told
/// so and closed (the daemon's guard against idle connections).
pub async fn serve<R, W>(
    ctx: Arc<ServerContext>,
    reader: R,
    writer: W,
    shutdown: CancellationToken,
    init_deadline: Option<Duration>,
) -> Ending
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let failed = CancellationToken::new();
    let (out, mut writer_task) = spawn_writer(writer, failed.clone());
    let mut conn = Connection {
        ctx,
        out,
        initialized: false,
        sessions: HashMap::new(),
        turns: JoinSet::new(),
        turn_sessions: HashMap::new(),
    };
    let mut frames = FramedRead::new(reader, FrameCodec::new(MAX_CLIENT_FRAME_BYTES));
    let init_by = init_deadline.map(|d| tokio::time::Instant::now() + d);
    let ending = loop {
        tokio::select! {
            biased;
            _ = shutdown.cancelled() => break Ending::Shutdown,
            _ = failed.cancelled() => break Ending::WriterFailed,
            _ = tokio::time::sleep_until(init_by.unwrap_or_else(tokio::time::Instant::now)),
                if init_by.is_some() && !conn.initialized =>
            {
                let waited = init_deadline.unwrap_or_default().as_millis();
                let event = Event::error(
                    None,
                    ErrorCode::NotInitialized,
                    format!("no initialize within {waited} ms; closing the connection"),
                    true,
                );
                conn.reply(&event).await;
                break Ending::NotInitialized;
            }
            Some(joined) = conn.turns.join_next_with_id(), if !conn.turns.is_empty() => {
                conn.turn_finished(joined, true).await;
            }
            frame = frames.next() => match frame {
                None => break Ending::Eof,
                Some(Err(err)) => {
                    tracing::debug!("connection read failed: {err}");
                    break Ending::Eof;
                }
                Some(Ok(Frame::TooLong(bytes))) => {
                    let message = format!(
                        "frame of {bytes} bytes exceeds the {MAX_CLIENT_FRAME_BYTES}-byte limit"
                    );
                    conn.reply_error(None, Reject::new(ErrorCode::InvalidRequest, message)).await;
                }
                Some(Ok(Frame::Line(line))) => {
                    if conn.handle(&line).await == Flow::Close {
                        break Ending::Fatal;
                    }
                }
            },
        }
    };
    conn.close().await;
    drop(conn);
    // The writer drains what is queued (terminal events included) unless
    // the client is not reading; then it is aborted.
    if tokio::time::timeout(CLEANUP_GRACE, &mut writer_task)
        .await
        .is_err()
    {
        writer_task.abort();
        let _ = writer_task.await;
    }
    ending
}

impl Ending {
    pub fn describe(self) -> &'static str {
        match self {
            Ending::Eof => "the client closed it",
            Ending::Fatal => "fatal protocol error",
            Ending::WriterFailed => "the client stopped reading or the connection broke",
            Ending::Shutdown => "server shutdown",
            Ending::NotInitialized => "no initialize in time",
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Close,
}

struct Connection {
    ctx: Arc<ServerContext>,
    out: Outbound,
    initialized: bool,
    sessions: HashMap<Arc<str>, Session>,
    turns: JoinSet<TurnOutcome>,
    /// Which session each running turn task belongs to.
    turn_sessions: HashMap<TaskId, Arc<str>>,
}

impl Connection {
    async fn handle(&mut self, line: &[u8]) -> Flow {
        let frame = match ClientFrame::parse(line) {
            Ok(frame) => frame,
            Err(err) => {
                let reject = Reject::new(err.code, err.message);
                self.reply_error(err.request_id, reject).await;
                return Flow::Continue;
            }
        };
        let rid = frame.request_id;
        if !self.initialized {
            return match frame.message {
                ClientMessage::Initialize(init) => self.initialize(rid, init).await,
                other => {
                    let message = format!("send initialize before {}", other.type_name());
                    self.reply_error(Some(rid), Reject::new(ErrorCode::NotInitialized, message))
                        .await;
                    Flow::Continue
                }
            };
        }
        let handled = match frame.message {
            ClientMessage::Initialize(_) => Err(Reject::new(
                ErrorCode::InvalidRequest,
                "already initialized",
            )),
            ClientMessage::DaemonControl { command } => self.daemon_control(&rid, command).await,
            ClientMessage::SessionStart(start) => self.session_start(&rid, start).await,
            ClientMessage::TurnStart { session_id, prompt } => {
                self.turn_start(&rid, &session_id, prompt).await
            }
            ClientMessage::TurnCancel {
                session_id,
                turn_id,
            } => self.turn_cancel(&session_id, &turn_id),
            ClientMessage::ApprovalResolve {
                session_id,
                approval_id,
                approved,
            } => self.approval_resolve(&session_id, &approval_id, approved),
            ClientMessage::QueueUpdate {
                session_id,
                queue_id,
                revision,
                prompt,
            } => {
                self.queue_update(&rid, &session_id, &queue_id, revision, prompt)
                    .await
            }
            ClientMessage::QueueMove {
                session_id,
                queue_id,
                revision,
                before_queue_id,
            } => {
                self.queue_move(
                    &rid,
                    &session_id,
                    &queue_id,
                    revision,
                    before_queue_id.as_deref(),
                )
                .await
            }
            ClientMessage::QueueRemove {
                session_id,
                queue_id,
                revision,
            } => {
                self.queue_remove(&rid, &session_id, &queue_id, revision)
                    .await
            }
            ClientMessage::SessionPause { session_id, paused } => {
                self.session_pause(&rid, &session_id, paused).await
            }
            ClientMessage::SessionClear { session_id } => {
                self.session_clear(&rid, &session_id).await
            }
        };
        if let Err(reject) = handled {
            self.reply_error(Some(rid), reject).await;
        }
        Flow::Continue
    }

    async fn initialize(&mut self, rid: String, init: Initialize) -> Flow {
        if init.protocol_version != PROTOCOL_VERSION {
            let message = format!(
                "protocol version {} is not supported; this server speaks version {PROTOCOL_VERSION}",
                init.protocol_version
            );
            let event = Event::error(Some(rid), ErrorCode::VersionMismatch, message, true);
            self.reply(&event).await;
            return Flow::Close;
        }
        if let Some(client) = &init.client {
            tracing::debug!("client {} {} initialized", client.name, client.version);
        }
        self.initialized = true;
        let event = Event::reply(
            Some(rid),
            EventBody::Initialized {
                protocol_version: PROTOCOL_VERSION,
                server: PeerInfo {
                    name: SERVER_NAME.into(),
                    version: SERVER_VERSION.into(),
                },
            },
        );
        self.reply(&event).await;
        Flow::Continue
    }

    /// `daemon.control`: management answers carry the request id but no
    /// session or seq, and are written after the component lock is released.
    async fn daemon_control(&mut self, rid: &str, command: DaemonCommand) -> Handled {
        let Some(supervisor) = self.ctx.supervisor() else {
            return Err(Reject::new(
                ErrorCode::Unsupported,
                "daemon.control is not available on stdio; connect to the daemon socket",
            ));
        };
        let status = match command {
            DaemonCommand::Status => Ok(supervisor.status().await),
            DaemonCommand::Reload => {
                supervisor.reconcile(&self.ctx).await;
                Ok(supervisor.status().await)
            }
            DaemonCommand::ClawbotSet {
                account,
                enabled,
                workspace,
                remote_tools,
            } => {
                supervisor
                    .clawbot_set(
                        &self.ctx,
                        &account,
                        enabled,
                        workspace.as_deref(),
                        remote_tools,
                    )
                    .await
            }
            DaemonCommand::ClawbotLogout { account } => {
                supervisor.clawbot_logout(&self.ctx, &account).await
            }
        };
        let status = status.map_err(|refusal| match refusal {
            Refusal::Invalid(message) => Reject::new(ErrorCode::InvalidRequest, message),
            Refusal::Storage(message) => Reject::new(ErrorCode::ComponentError, message),
        })?;
        let event = Event::reply(Some(rid.to_string()), EventBody::DaemonStatus { status });
        self.reply(&event).await;
        Ok(())
    }

    async fn session_start(&mut self, rid: &str, start: SessionStart) -> Handled {
        if self.sessions.len() >= MAX_SESSIONS_PER_CONNECTION {
            return Err(invalid(format!(
                "this connection already holds {MAX_SESSIONS_PER_CONNECTION} sessions, its limit; use another connection"
            )));
        }
        let cwd = canonical_workspace(&start.cwd)?;
        match start.provider.as_deref() {
            None | Some("openai") => {}
            Some(other) => {
                return Err(invalid(format!(
                    "unknown provider `{other}` (supported: openai)"
                )))
            }
        }
        let config = &self.ctx.config;
        let model = match start.model {
            Some(model) if model.trim().is_empty() => return Err(invalid("model is empty")),
            Some(model) => model,
            None => config.model.clone(),
        };
        let base_url = match start.base_url {
            Some(url) => {
                let parsed = reqwest::Url::parse(&url)
                    .map_err(|err| invalid(format!("base_url `{url}` is not a URL: {err}")))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(invalid(format!("base_url `{url}` must be http or https")));
                }
                url
            }
            None => config.base_url.clone(),
        };
        let session_id: Arc<str> = uuid::Uuid::new_v4().to_string().into();
        let sink = Arc::new(SessionSink::new(session_id.clone(), self.out.clone()));
        let settings = Arc::new(SessionSettings {
            cwd: cwd.clone(),
            provider: OpenAi {
                http: self.ctx.http(),
                base_url,
                model: model.clone(),
                api_key: self.ctx.api_key.clone(),
                idle_timeout: config.stream_idle_timeout(),
                max_retries: config.provider_max_retries,
            },
            no_tools: start.no_tools,
            submitter: "client".into(),
        });
        let started = Event {
            body: EventBody::SessionStarted(SessionStarted {
                cwd: cwd.display().to_string(),
                model,
                context_max_tokens: config.context_max_tokens,
                max_server_frame_bytes: MAX_SERVER_FRAME_BYTES as u64,
                max_transcript_bytes: MAX_TRANSCRIPT_BYTES as u64,
                max_transcript_items: MAX_TRANSCRIPT_ITEMS as u64,
                max_prompt_history_bytes: MAX_PROMPT_HISTORY_BYTES as u64,
                max_prompt_history_items: MAX_PROMPT_HISTORY_ITEMS as u64,
            }),
            request_id: Some(rid.to_string()),
            session_id: Some(session_id.to_string()),
            turn_id: None,
            seq: None,
        };
        self.reply(&started).await;
        let session = Session {
            sink: sink.clone(),
            settings,
            approvals: Arc::new(Approvals::default()),
            history: Some(History::default()),
            queue: Default::default(),
            paused: false,
            active: None,
            usage: None,
        };
        let snapshot = EventBody::QueueSnapshot {
            entries: session.queue.snapshot(),
        };
        self.sessions.insert(session_id, session);
        let _ = sink.emit(Some(rid), None, &snapshot).await;
        Ok(())
    }

    async fn turn_start(&mut self, rid: &str, session_id: &str, prompt: String) -> Handled {
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
        let sink = session.sink.clone();
        let _ = sink
            .emit(
                Some(rid),
                None,
                &EventBody::QueueEnqueued { entry, position },
            )
            .await;
        Ok(())
    }

    /// Starts a turn on an idle session: `turn.started` first, then the task.
    async fn start_turn(&mut self, session_id: &Arc<str>, request_id: Arc<str>, prompt: String) {
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        let turn_id: Arc<str> = uuid::Uuid::new_v4().to_string().into();
        let token = CancellationToken::new();
        let history = session.history.take().unwrap_or_default();
        session.active = Some(ActiveTurn {
            turn_id: turn_id.clone(),
            request_id: request_id.clone(),
            token: token.clone(),
        });
        let sink = session.sink.clone();
        let started = sink
            .emit(
                Some(&request_id),
                Some(&turn_id),
                &EventBody::TurnStarted {},
            )
            .await;
        if started.is_err() {
            // The writer is gone; the connection is ending.
            session.active = None;
            session.history = Some(history);
            return;
        }
        let turn = Turn {
            ctx: self.ctx.clone(),
            settings: session.settings.clone(),
            sink,
            approvals: session.approvals.clone(),
            request_id,
            turn_id,
            token,
        };
        let handle = self.turns.spawn(turn.run(history, prompt));
        self.turn_sessions.insert(handle.id(), session_id.clone());
    }

    /// A turn task ended: take its history back, emit its terminal event,
    /// then start the next queued prompt. Emitting the terminal event here,
    /// after the session is idle again, means a client that answers it with
    /// `turn.start` gets a new turn, not a queue entry; and the terminal event
    /// always precedes `queue.dequeued`.
    async fn turn_finished(
        &mut self,
        joined: Result<(TaskId, TurnOutcome), JoinError>,
        dequeue: bool,
    ) {
        let (task, outcome) = match joined {
            Ok((task, outcome)) => (task, Ok(outcome)),
            Err(err) => (err.id(), Err(err)),
        };
        let Some(session_id) = self.turn_sessions.remove(&task) else {
            return;
        };
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        let Some(active) = session.active.take() else {
            return;
        };
        let terminal = match outcome {
            Ok(outcome) => {
                session.history = Some(outcome.history);
                if let Some(usage) = outcome.usage {
                    let total = session.usage.get_or_insert_with(Usage::default);
                    total.input_tokens += usage.input_tokens;
                    total.output_tokens += usage.output_tokens;
                }
                outcome.terminal
            }
            Err(err) => {
                // A turn that panicked or was aborted loses the history it held.
                tracing::error!("turn task ended abnormally: {err}");
                session.history = Some(History::default());
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
        if let Some(terminal) = terminal {
            let sink = session.sink.clone();
            let _ = sink
                .emit(Some(&active.request_id), Some(&active.turn_id), &terminal)
                .await;
        }
        if dequeue {
            self.dequeue_next(&session_id).await;
        }
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
        if session
            .sink
            .emit(Some(&next.request_id), None, &dequeued)
            .await
            .is_err()
        {
            return;
        }
        self.start_turn(session_id, next.request_id.into(), next.entry.prompt)
            .await;
    }

    fn turn_cancel(&mut self, session_id: &str, turn_id: &str) -> Handled {
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

    fn approval_resolve(&mut self, session_id: &str, approval_id: &str, approved: bool) -> Handled {
        let session = self.session(session_id)?;
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
        let sink = session.sink.clone();
        let _ = sink
            .emit(Some(rid), None, &EventBody::QueueUpdated { entry })
            .await;
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
        let sink = session.sink.clone();
        let _ = sink
            .emit(Some(rid), None, &EventBody::QueueMoved { entry, position })
            .await;
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
        let sink = session.sink.clone();
        let removed = EventBody::QueueRemoved {
            queue_id: entry.queue_id,
        };
        let _ = sink.emit(Some(rid), None, &removed).await;
        Ok(())
    }

    async fn session_pause(&mut self, rid: &str, session_id: &str, paused: bool) -> Handled {
        let session = self.session(session_id)?;
        session.paused = paused;
        // The queue as it stands confirms the request; order is unchanged.
        let snapshot = EventBody::QueueSnapshot {
            entries: session.queue.snapshot(),
        };
        let sink = session.sink.clone();
        if let Err(EmitError::TooLarge(bytes)) = sink.emit(Some(rid), None, &snapshot).await {
            // The queue's byte bound makes this unreachable; a pause is
            // still always answered.
            return Err(Reject::new(
                ErrorCode::InternalError,
                format!("the session is {}paused, but its queue snapshot ({bytes} bytes) exceeds the frame limit", if paused { "" } else { "un" }),
            ));
        }
        if !paused {
            let session_id = sink.session_id().clone();
            self.dequeue_next(&session_id).await;
        }
        Ok(())
    }

    async fn session_clear(&mut self, rid: &str, session_id: &str) -> Handled {
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
        let sink = session.sink.clone();
        let _ = sink
            .emit(Some(rid), None, &EventBody::SessionCleared {})
            .await;
        Ok(())
    }

    fn session(&mut self, session_id: &str) -> Result<&mut Session, Reject> {
        self.sessions.get_mut(session_id).ok_or_else(|| {
            Reject::new(
                ErrorCode::SessionNotFound,
                format!("session {session_id} does not exist on this connection"),
            )
        })
    }

    async fn reply(&self, event: &Event) {
        // A failed send trips the writer's token; the loop sees it.
        let _ = self.out.send(encode(event.as_ref())).await;
    }

    async fn reply_error(&self, request_id: Option<String>, reject: Reject) {
        let event = Event::reply(
            request_id,
            EventBody::Error(ErrorBody {
                code: reject.code,
                message: reject.message,
                fatal: false,
                entry: reject.entry,
            }),
        );
        self.reply(&event).await;
    }

    /// Cancels every active turn and lets each emit its terminal event
    /// within the grace period; then aborts and joins what is left. Queued
    /// prompts are dropped, never replayed.
    async fn close(&mut self) {
        for session in self.sessions.values() {
            if let Some(active) = &session.active {
                active.token.cancel();
            }
        }
        let drained = tokio::time::timeout(CLEANUP_GRACE, async {
            while let Some(joined) = self.turns.join_next_with_id().await {
                self.turn_finished(joined, false).await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!("turns did not stop within {CLEANUP_GRACE:?}; aborting them");
            self.turns.abort_all();
            while self.turns.join_next().await.is_some() {}
        }
        self.sessions.clear();
    }
}

fn invalid(message: impl Into<String>) -> Reject {
    Reject::new(ErrorCode::InvalidRequest, message)
}

fn check_prompt(prompt: &str) -> Result<(), Reject> {
    if prompt.trim().is_empty() {
        return Err(invalid("prompt is empty"));
    }
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(invalid(format!(
            "prompt is {} bytes; the limit is {MAX_PROMPT_BYTES}",
            prompt.len()
        )));
    }
    Ok(())
}

fn queue_reject(err: QueueError) -> Reject {
    match err {
        QueueError::NotFound => Reject::new(ErrorCode::QueueNotFound, "no such queued prompt"),
        QueueError::Full(message) => Reject::new(ErrorCode::InvalidRequest, message),
        QueueError::Conflict(entry) => Reject {
            code: ErrorCode::QueueConflict,
            message: format!(
                "queued prompt {} is at revision {}; reload it and try again",
                entry.queue_id, entry.revision
            ),
            entry: Some(entry),
        },
    }
}

/// The canonical workspace for `cwd`, or an `invalid_request` naming why not.
fn canonical_workspace(cwd: &str) -> Result<std::path::PathBuf, Reject> {
    if cwd.is_empty() {
        return Err(invalid("cwd is empty; give an absolute path"));
    }
    let path = Path::new(cwd);
    if !path.is_absolute() {
        return Err(invalid(format!("cwd `{cwd}` is not an absolute path")));
    }
    let canonical = path.canonicalize().map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => invalid(format!("cwd `{cwd}` does not exist")),
        _ => invalid(format!("cwd `{cwd}` cannot be used: {err}")),
    })?;
    if !canonical.is_dir() {
        return Err(invalid(format!("cwd `{cwd}` is not a directory")));
    }
    Ok(canonical)
}
