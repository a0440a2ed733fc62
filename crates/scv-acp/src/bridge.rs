//! The bridge between the ACP client and the SCV daemon: it owns the
//! sessions, the prompts waiting for their answer and the permission
//! requests in flight, sends what ACP asks for to the daemon and turns
//! each daemon event into what ACP expects.
//!
//! Prompts are matched to daemon events by the request id of their
//! `turn.start`: a turn's events carry it, and so does a queued prompt's
//! whole life (`queue.enqueued`, `queue.dequeued`, its turn). So a prompt
//! sent while a turn runs is queued by the daemon and answered when its
//! own turn ends.
//!
//! One task, one loop: commands from the ACP handlers, daemon events (read
//! only while fewer than [`MAX_UNWRITTEN_UPDATES`] notifications wait for
//! stdout), and the end of stdin.
//!
//! [`MAX_UNWRITTEN_UPDATES`]: crate::stdio::MAX_UNWRITTEN_UPDATES

use crate::daemon::Link;
use crate::stdio::Outflow;
use crate::updates::{ToolCalls, MAX_TRACKED_CALLS};
use crate::{errors, mcp, prompt, Options, MAX_PROMPTS_PER_SESSION, MAX_SESSIONS};
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, PromptRequest, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SessionNotification, SessionUpdate,
    StopReason, TextContent,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, RequestCancellationHandle};
use scv_protocol::{ApprovalResolve, QueueRemove, TurnCancel, TurnStart};
use scv_protocol::{ClientMessage, Event, EventBody, FailureCode, SessionStart};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The permission option that approves a call.
pub const ALLOW: &str = "allow_once";
/// The permission option that denies it.
pub const REJECT: &str = "reject_once";

/// How long the end of stdin waits for the daemon to take the cancels.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// What the ACP handlers (and permission answers) ask of the bridge.
pub enum Command {
    NewSession {
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
    },
    Prompt {
        request: PromptRequest,
        responder: Responder<PromptResponse>,
    },
    Cancel {
        session_id: String,
    },
    /// The client answered (or failed) a `session/request_permission`.
    Permission {
        session_id: String,
        approval_id: String,
        answer: Result<RequestPermissionResponse, Error>,
    },
}

struct Session {
    /// The canonical workspace, from `session.started`.
    cwd: PathBuf,
    tools: ToolCalls,
    /// Permission requests in flight, by SCV approval id.
    approvals: HashMap<String, RequestCancellationHandle>,
    /// Prompts of this session waiting for their answer.
    prompts: usize,
}

impl Session {
    /// The running turn ended: its calls and questions are over.
    fn turn_ended(&mut self) {
        self.tools.clear();
        for (_, request) in self.approvals.drain() {
            let _ = request.cancel();
        }
    }
}

/// Where a prompt is on the daemon.
enum Stage {
    /// `turn.start` sent (or dequeued); its turn has not started.
    Sent,
    Queued {
        queue_id: String,
        revision: u64,
    },
    Running {
        turn_id: String,
    },
}

struct Prompt {
    session_id: String,
    responder: Responder<PromptResponse>,
    stage: Stage,
    /// `session/cancel` arrived: the answer is `cancelled`, however the
    /// turn ends.
    cancel: bool,
    /// What cancels it at its current stage was sent.
    cancel_sent: bool,
    /// Text of the current model response was streamed as deltas.
    streamed: bool,
}

pub struct Bridge {
    options: Options,
    cx: ConnectionTo<Client>,
    /// For permission answers, which come back as commands.
    commands: mpsc::Sender<Command>,
    outflow: Arc<Outflow>,
    link: Option<Link>,
    /// `session/new` requests by the request id of their `session.start`.
    starting: HashMap<String, Responder<NewSessionResponse>>,
    sessions: HashMap<String, Session>,
    /// Prompts by the request id of their `turn.start`.
    prompts: HashMap<String, Prompt>,
    /// A session was ever started (tells "unknown session" from "no
    /// session yet").
    started_any: bool,
}

impl Bridge {
    pub fn new(
        options: Options,
        cx: ConnectionTo<Client>,
        commands: mpsc::Sender<Command>,
        outflow: Arc<Outflow>,
    ) -> Bridge {
        Bridge {
            options,
            cx,
            commands,
            outflow,
            link: None,
            starting: HashMap::new(),
            sessions: HashMap::new(),
            prompts: HashMap::new(),
            started_any: false,
        }
    }

    /// Serves until stdin ends, then cancels what runs.
    pub async fn run(mut self, mut commands: mpsc::Receiver<Command>) -> Result<(), Error> {
        let cx = self.cx.clone();
        let closed = cx.incoming_closed();
        tokio::pin!(closed);
        let outflow = self.outflow.clone();
        loop {
            let connected = self.link.is_some();
            let room = outflow.has_room();
            tokio::select! {
                biased;
                () = &mut closed => break,
                Some(command) = commands.recv() => self.command(command).await,
                event = next_event(&mut self.link), if connected && room => self.daemon(event).await,
                () = outflow.room(), if connected && !room => {}
            }
        }
        self.shutdown().await;
        Ok(())
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::NewSession { request, responder } => {
                if let Err(err) = self.new_session(request, responder).await {
                    tracing::debug!("session/new refused: {err}");
                }
            }
            Command::Prompt { request, responder } => self.prompt(request, responder).await,
            Command::Cancel { session_id } => self.cancel(&session_id).await,
            Command::Permission {
                session_id,
                approval_id,
                answer,
            } => self.permission(session_id, approval_id, answer).await,
        }
    }

    /// `session/new` → `session.start`; answered at `session.started`.
    async fn new_session(
        &mut self,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
    ) -> Result<(), Error> {
        let refuse = |responder: Responder<NewSessionResponse>, err: Error| {
            let _ = responder.respond_with_error(err.clone());
            Err(err)
        };
        if !request.cwd.is_absolute() {
            return refuse(
                responder,
                errors::invalid_params("cwd must be an absolute path"),
            );
        }
        let Some(cwd) = request.cwd.to_str().map(str::to_string) else {
            return refuse(responder, errors::invalid_params("cwd is not valid UTF-8"));
        };
        if self.sessions.len() + self.starting.len() >= MAX_SESSIONS {
            let err = errors::limit(format!("at most {MAX_SESSIONS} sessions at once"));
            return refuse(responder, err);
        }
        let mcp_servers = mcp::for_session(&request.mcp_servers);
        if self.link.is_none() {
            match Link::open(&self.options.home, &self.options.socket).await {
                Ok(link) => self.link = Some(link),
                Err(err) => {
                    let err = errors::daemon(format!("cannot be reached: {err:#}"));
                    return refuse(responder, err);
                }
            }
        }
        let start = ClientMessage::SessionStart(SessionStart {
            cwd,
            provider: self.options.provider.clone(),
            model: self.options.model.clone(),
            mcp_servers,
            ..Default::default()
        });
        match self.send(start).await {
            Ok(request_id) => {
                self.starting.insert(request_id, responder);
                Ok(())
            }
            Err(err) => refuse(responder, err),
        }
    }

    /// `session/prompt` → `turn.start`; answered when its turn ends.
    async fn prompt(&mut self, request: PromptRequest, responder: Responder<PromptResponse>) {
        let session_id = request.session_id.0.to_string();
        let Some(session) = self.sessions.get(&session_id) else {
            let err = if self.started_any {
                errors::unknown_session(&session_id)
            } else {
                errors::no_session_yet()
            };
            let _ = responder.respond_with_error(err);
            return;
        };
        if session.prompts >= MAX_PROMPTS_PER_SESSION {
            let err = errors::limit(format!(
                "at most {MAX_PROMPTS_PER_SESSION} prompts may wait in one session"
            ));
            let _ = responder.respond_with_error(err);
            return;
        }
        let text = match prompt::render(&request.prompt) {
            Ok(text) => text,
            Err(err) => {
                let _ = responder.respond_with_error(errors::invalid_params(err.to_string()));
                return;
            }
        };
        let start = ClientMessage::TurnStart(TurnStart {
            session_id: session_id.clone(),
            prompt: text,
        });
        match self.send(start).await {
            Ok(request_id) => {
                if let Some(session) = self.sessions.get_mut(&session_id) {
                    session.prompts += 1;
                }
                self.prompts.insert(
                    request_id,
                    Prompt {
                        session_id,
                        responder,
                        stage: Stage::Sent,
                        cancel: false,
                        cancel_sent: false,
                        streamed: false,
                    },
                );
            }
            Err(err) => {
                let _ = responder.respond_with_error(err);
            }
        }
    }

    /// `session/cancel`: the running turn is cancelled, queued prompts are
    /// taken off the queue, and prompts on their way are cancelled when
    /// they reach either state. All answer `cancelled`.
    async fn cancel(&mut self, session_id: &str) {
        let mut any = false;
        for prompt in self.prompts.values_mut() {
            if prompt.session_id == session_id {
                prompt.cancel = true;
                any = true;
            }
        }
        if !any && !self.sessions.contains_key(session_id) {
            tracing::debug!("session/cancel for unknown session {session_id}");
        }
        self.send_cancels(session_id).await;
    }

    /// Sends what cancels each of the session's prompts asked to be
    /// cancelled, once none of them is still on its way to the daemon: the
    /// queue removals first, then the running turn's cancel. The daemon
    /// handles a connection's messages in order, so it cannot end the turn
    /// and dequeue a cancelled prompt before its removal arrives.
    async fn send_cancels(&mut self, session_id: &str) {
        let on_its_way = self
            .prompts
            .values()
            .any(|p| p.session_id == session_id && p.cancel && matches!(p.stage, Stage::Sent));
        if on_its_way {
            return;
        }
        let (mut removals, mut turns) = (Vec::new(), Vec::new());
        for prompt in self.prompts.values_mut() {
            if prompt.session_id != session_id || !prompt.cancel || prompt.cancel_sent {
                continue;
            }
            match cancel_message(session_id, &prompt.stage) {
                Some(message @ ClientMessage::QueueRemove(QueueRemove { .. })) => {
                    removals.push(message)
                }
                Some(message) => turns.push(message),
                None => continue,
            }
            prompt.cancel_sent = true;
        }
        for message in removals.into_iter().chain(turns) {
            let _ = self.send(message).await;
        }
    }

    /// Anything but "Allow" (a rejection, a cancelled request, an error)
    /// denies the call.
    async fn permission(
        &mut self,
        session_id: String,
        approval_id: String,
        answer: Result<RequestPermissionResponse, Error>,
    ) {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        if session.approvals.remove(&approval_id).is_none() {
            return; // the turn ended meanwhile
        }
        let approved = match &answer {
            Ok(response) => matches!(
                &response.outcome,
                RequestPermissionOutcome::Selected(selected) if &*selected.option_id.0 == ALLOW
            ),
            Err(err) => {
                tracing::info!("permission request failed ({err}); denying the call");
                false
            }
        };
        let resolve = ClientMessage::ApprovalResolve(ApprovalResolve {
            session_id,
            approval_id,
            approved,
        });
        let _ = self.send(resolve).await;
    }

    /// A daemon read: an event, the end of the connection or a failure.
    async fn daemon(&mut self, read: anyhow::Result<Option<Event>>) {
        match read {
            Ok(Some(event)) => self.event(event).await,
            Ok(None) => self.lost("it closed the connection"),
            Err(err) => self.lost(&format!("{err:#}")),
        }
    }

    async fn event(&mut self, event: Event) {
        let request_id = event.request_id.unwrap_or_default();
        let session_id = event.session_id.unwrap_or_default();
        match event.body {
            EventBody::SessionStarted(started) => {
                let Some(responder) = self.starting.remove(&request_id) else {
                    return;
                };
                tracing::info!(
                    "session {session_id} in {} (model {}, sandbox {})",
                    started.cwd,
                    started.model,
                    started.sandbox.as_deref().unwrap_or("unknown")
                );
                self.sessions.insert(
                    session_id.clone(),
                    Session {
                        cwd: PathBuf::from(started.cwd),
                        tools: ToolCalls::default(),
                        approvals: HashMap::new(),
                        prompts: 0,
                    },
                );
                self.started_any = true;
                let _ = responder.respond(NewSessionResponse::new(session_id));
            }
            EventBody::QueueEnqueued { entry, .. } => {
                if let Some(prompt) = self.prompts.get_mut(&request_id) {
                    prompt.stage = Stage::Queued {
                        queue_id: entry.queue_id,
                        revision: entry.revision,
                    };
                    self.cancel_if_asked(&request_id).await;
                }
            }
            EventBody::QueueUpdated { entry } => {
                for prompt in self.prompts.values_mut() {
                    if let Stage::Queued { queue_id, revision } = &mut prompt.stage {
                        if *queue_id == entry.queue_id {
                            *revision = entry.revision;
                        }
                    }
                }
            }
            EventBody::QueueDequeued { .. } => {
                if let Some(prompt) = self.prompts.get_mut(&request_id) {
                    prompt.stage = Stage::Sent;
                }
            }
            EventBody::QueueRemoved { queue_id } => {
                let removed = self.prompts.iter().find_map(|(id, p)| match &p.stage {
                    Stage::Queued { queue_id: q, .. }
                        if *q == queue_id && p.session_id == session_id =>
                    {
                        Some(id.clone())
                    }
                    _ => None,
                });
                if let Some(id) = removed {
                    self.finish(&id, Ok(StopReason::Cancelled), false);
                }
            }
            EventBody::TurnStarted {} => {
                if let Some(prompt) = self.prompts.get_mut(&request_id) {
                    prompt.stage = Stage::Running {
                        turn_id: event.turn_id.unwrap_or_default(),
                    };
                    self.cancel_if_asked(&request_id).await;
                }
            }
            EventBody::AssistantDelta { content } => {
                if let Some(prompt) = self.prompts.get_mut(&request_id) {
                    prompt.streamed = true;
                }
                self.notify(
                    &session_id,
                    SessionUpdate::AgentMessageChunk(chunk(content)),
                );
            }
            EventBody::AssistantCompleted { content } => {
                let streamed = self
                    .prompts
                    .get_mut(&request_id)
                    .is_some_and(|p| std::mem::take(&mut p.streamed));
                if !streamed && !content.is_empty() {
                    self.notify(
                        &session_id,
                        SessionUpdate::AgentMessageChunk(chunk(content)),
                    );
                }
            }
            EventBody::ReasoningDelta { content } => {
                self.notify(
                    &session_id,
                    SessionUpdate::AgentThoughtChunk(chunk(content)),
                );
            }
            EventBody::ToolProposed {
                call_id,
                name,
                arguments,
            } => {
                let Some(session) = self.sessions.get_mut(&session_id) else {
                    return;
                };
                let cwd = session.cwd.clone();
                let call = session
                    .tools
                    .proposed(&cwd, &call_id, &name, &arguments)
                    .await;
                self.notify(&session_id, SessionUpdate::ToolCall(call));
            }
            EventBody::ApprovalRequested {
                approval_id,
                call_id,
                name,
                summary,
                ..
            } => {
                self.ask(session_id, approval_id, &call_id, &name, &summary)
                    .await
            }
            EventBody::ToolStarted { call_id, .. } => {
                let update = self
                    .sessions
                    .get(&session_id)
                    .and_then(|s| s.tools.started(&call_id));
                if let Some(update) = update {
                    self.notify(&session_id, SessionUpdate::ToolCallUpdate(update));
                }
            }
            EventBody::ToolCompleted {
                call_id,
                success,
                output,
                truncated,
                ..
            } => {
                let Some(session) = self.sessions.get_mut(&session_id) else {
                    return;
                };
                let update = session
                    .tools
                    .completed(&call_id, success, &output, truncated)
                    .await;
                if let Some(update) = update {
                    self.notify(&session_id, SessionUpdate::ToolCallUpdate(update));
                }
            }
            EventBody::TurnCompleted { .. } => {
                self.finish(&request_id, Ok(StopReason::EndTurn), true)
            }
            EventBody::TurnCancelled {} => {
                self.finish(&request_id, Ok(StopReason::Cancelled), true)
            }
            EventBody::TurnFailed { code, message } => {
                let result = match code {
                    FailureCode::StepLimit => Ok(StopReason::MaxTurnRequests),
                    _ => {
                        tracing::warn!("turn failed: {code}: {message}");
                        Err(errors::turn_failed(code, &message))
                    }
                };
                self.finish(&request_id, result, true);
            }
            EventBody::Error(error) => {
                let err = errors::refused(error.code, &error.message);
                if let Some(responder) = self.starting.remove(&request_id) {
                    let _ = responder.respond_with_error(err);
                } else if let Some(session_id) =
                    self.prompts.get(&request_id).map(|p| p.session_id.clone())
                {
                    self.finish(&request_id, Err(err), false);
                    // It may have been the prompt the session's cancels
                    // waited for.
                    self.send_cancels(&session_id).await;
                } else {
                    // An answer to a cancel, a queue removal or an
                    // approval that came too late: nothing waits for it.
                    tracing::debug!(
                        "the daemon refused request {request_id}: {}: {}",
                        error.code,
                        error.message
                    );
                }
            }
            _ => {}
        }
    }

    /// A prompt reached a new stage: if it was asked to be cancelled, what
    /// cancels it now is sent (with the session's other cancels, in order).
    async fn cancel_if_asked(&mut self, request_id: &str) {
        let Some(prompt) = self.prompts.get_mut(request_id).filter(|p| p.cancel) else {
            return;
        };
        prompt.cancel_sent = false;
        let session_id = prompt.session_id.clone();
        self.send_cancels(&session_id).await;
    }

    /// `approval.requested` → `session/request_permission`, answered in a
    /// task of the connection (the bridge never waits for the client).
    async fn ask(
        &mut self,
        session_id: String,
        approval_id: String,
        call_id: &str,
        name: &str,
        summary: &str,
    ) {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        if session.approvals.len() >= MAX_TRACKED_CALLS {
            tracing::warn!("too many permission requests at once; denying {call_id}");
            let resolve = ClientMessage::ApprovalResolve(ApprovalResolve {
                session_id,
                approval_id,
                approved: false,
            });
            let _ = self.send(resolve).await;
            return;
        }
        let tool_call = session.tools.permission(call_id, name, summary);
        let options = vec![
            PermissionOption::new(ALLOW, "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
        ];
        let request = RequestPermissionRequest::new(session_id.clone(), tool_call, options);
        let sent = self.cx.send_request(request);
        session
            .approvals
            .insert(approval_id.clone(), sent.cancellation_handle());
        let commands = self.commands.clone();
        let task = async move {
            let answer = sent.block_task().await;
            let _ = commands
                .send(Command::Permission {
                    session_id,
                    approval_id,
                    answer,
                })
                .await;
            Ok(())
        };
        if let Err(err) = self.cx.spawn(task) {
            tracing::warn!("cannot wait for a permission answer: {err}");
        }
    }

    /// Answers a prompt and forgets it; `turn_ended` when its turn ended.
    fn finish(&mut self, request_id: &str, result: Result<StopReason, Error>, turn_ended: bool) {
        let Some(prompt) = self.prompts.remove(request_id) else {
            return;
        };
        if let Some(session) = self.sessions.get_mut(&prompt.session_id) {
            session.prompts = session.prompts.saturating_sub(1);
            if turn_ended {
                session.turn_ended();
            }
        }
        let result = if prompt.cancel {
            Ok(StopReason::Cancelled)
        } else {
            result
        };
        let _ = prompt
            .responder
            .respond_with_result(result.map(PromptResponse::new));
    }

    /// One `session/update`, counted until stdout has it.
    fn notify(&self, session_id: &str, update: SessionUpdate) {
        if !self.sessions.contains_key(session_id) {
            return;
        }
        self.outflow.sent();
        let notification = SessionNotification::new(session_id.to_string(), update);
        if let Err(err) = self.cx.send_notification(notification) {
            tracing::debug!("session/update not sent: {err}");
        }
    }

    /// Sends to the daemon; a failure loses the link.
    async fn send(&mut self, message: ClientMessage) -> Result<String, Error> {
        let Some(link) = self.link.as_mut() else {
            return Err(errors::daemon("not connected"));
        };
        match link.send(message).await {
            Ok(request_id) => Ok(request_id),
            Err(err) => {
                let reason = format!("{err:#}");
                self.lost(&reason);
                Err(errors::daemon(format!("went away ({reason})")))
            }
        }
    }

    /// The daemon connection is gone, and with it every session on it:
    /// everything waiting fails with a clear error. The next
    /// `session/new` connects again.
    fn lost(&mut self, reason: &str) {
        if self.link.take().is_none() {
            return;
        }
        tracing::warn!("lost the SCV daemon: {reason}");
        for (_, responder) in self.starting.drain() {
            let _ = responder.respond_with_error(errors::daemon(format!("went away ({reason})")));
        }
        for (_, prompt) in self.prompts.drain() {
            let err = errors::daemon(format!(
                "went away during the prompt ({reason}); its session is gone, start a new one"
            ));
            let _ = prompt.responder.respond_with_error(err);
        }
        for (_, mut session) in self.sessions.drain() {
            session.turn_ended();
        }
    }

    /// stdin ended: running turns are cancelled (closing the connection
    /// would cancel them too; saying so is quicker), waiting prompts
    /// answer `cancelled`.
    async fn shutdown(&mut self) {
        tracing::info!("stdin closed; cancelling running turns");
        let cancels: Vec<ClientMessage> = self
            .prompts
            .values()
            .filter_map(|p| match &p.stage {
                Stage::Running { .. } => cancel_message(&p.session_id, &p.stage),
                _ => None,
            })
            .collect();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
            for message in cancels {
                if self.send(message).await.is_err() {
                    break;
                }
            }
        })
        .await;
        let waiting: Vec<String> = self.prompts.keys().cloned().collect();
        for request_id in waiting {
            self.finish(&request_id, Ok(StopReason::Cancelled), true);
        }
        for (_, responder) in self.starting.drain() {
            let _ = responder.respond_with_error(errors::daemon("the client closed stdin"));
        }
        self.link = None;
    }
}

/// What cancels a prompt at `stage`, if anything can yet.
fn cancel_message(session_id: &str, stage: &Stage) -> Option<ClientMessage> {
    match stage {
        Stage::Sent => None,
        Stage::Queued { queue_id, revision } => Some(ClientMessage::QueueRemove(QueueRemove {
            session_id: session_id.to_string(),
            queue_id: queue_id.clone(),
            revision: *revision,
        })),
        Stage::Running { turn_id } => Some(ClientMessage::TurnCancel(TurnCancel {
            session_id: session_id.to_string(),
            turn_id: turn_id.clone(),
        })),
    }
}

fn chunk(text: String) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// The next daemon event; pending forever without a link.
async fn next_event(link: &mut Option<Link>) -> anyhow::Result<Option<Event>> {
    match link {
        Some(link) => link.next_event().await,
        None => std::future::pending().await,
    }
}
