//! The life of a session as a client sees it, without I/O.
//!
//! Every front end (the TUI, `scv exec`, `scv acp`, ClawBot's chats) sends
//! prompts and must know where each one is — sent, queued (with the
//! revision the server gave it), running — what cancelling it means at
//! each of those stages, which approvals wait, and how its turn ended.
//! [`SessionClient`] keeps that in one place: frames go in
//! ([`SessionClient::apply`]), typed [`Update`]s and the [`Request`]s that
//! follow from them come out, and the caller does the I/O. It owns the
//! request ids of everything it sends.
//!
//! The one subtle rule: a prompt cancelled before the server said where it
//! is (its `turn.start` is in flight) is cancelled as soon as the server
//! says — `turn.cancel` when its `turn.started` comes, `queue.remove`
//! when its `queue.enqueued` does — exactly once. And while any cancelled
//! prompt is still on its way, no cancel goes out; then the queue removals
//! go before the running turn's cancel. The server handles a connection's
//! messages in order, so it cannot end the turn and start a cancelled
//! queued prompt before that prompt's removal arrives.

use scv_protocol::{
    ApprovalResolve, ClientMessage, ErrorBody, ErrorCode, Event, EventBody, FailureCode,
    QueueEntry, QueueRemove, Risk, TurnCancel, TurnStart, Usage,
};

/// A frame to send: the message and the request id it goes with.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub request_id: String,
    pub message: ClientMessage,
}

/// Where a prompt is on the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// `turn.start` sent (or the prompt dequeued); its turn has not started.
    Sent,
    /// Waiting in the session queue, at this revision.
    Queued { queue_id: String, revision: u64 },
    /// Its turn runs.
    Running { turn_id: String },
}

/// A prompt this client sent that has not ended yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The request id of its `turn.start`, which every event of it carries.
    pub request_id: String,
    pub text: String,
    pub stage: Stage,
    /// A cancel was asked for; `cancel_sent`: what carries it out at the
    /// current stage went out.
    pub cancel: bool,
    cancel_sent: bool,
}

/// An approval the server waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub approval_id: String,
    pub call_id: String,
    pub name: String,
    pub risk: Risk,
    pub cwd: String,
    pub summary: String,
    pub sandboxed: Option<bool>,
    /// The call's arguments, from its `tool.proposed`.
    pub arguments: serde_json::Value,
    /// The request id of the prompt whose turn asks.
    pub request_id: Option<String>,
    /// A subagent's call (capability `subagents`): the child session that
    /// asks, which the answer names; `None`: this session's own call.
    pub child_session: Option<String>,
}

impl Approval {
    /// The approval an `approval.requested` event asks for.
    fn of(
        event: &Event,
        arguments: serde_json::Value,
        child_session: Option<String>,
    ) -> Option<Approval> {
        let EventBody::ApprovalRequested {
            approval_id,
            call_id,
            name,
            risk,
            cwd,
            summary,
            sandboxed,
        } = &event.body
        else {
            return None;
        };
        Some(Approval {
            approval_id: approval_id.clone(),
            call_id: call_id.clone(),
            name: name.clone(),
            risk: *risk,
            cwd: cwd.clone(),
            summary: summary.clone(),
            sandboxed: *sandboxed,
            arguments,
            request_id: event.request_id.clone(),
            child_session,
        })
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Completed { steps: u32, usage: Option<Usage> },
    Cancelled,
    Failed { code: FailureCode, message: String },
}

/// What [`SessionClient::apply`] made of an event, for a front end to show.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// A prompt of ours went into the queue.
    Queued {
        request_id: String,
        entry: QueueEntry,
        position: usize,
    },
    /// A prompt of ours started as a turn.
    Started {
        request_id: String,
        turn_id: String,
        prompt: String,
    },
    /// A prompt of ours left the queue without running (removed, or the
    /// session was cleared).
    Withdrawn { request_id: String, prompt: String },
    /// The server refused a prompt of ours (an `error` answering its
    /// `turn.start`); `cancelled`: a cancel of ours was asked for it.
    Refused {
        request_id: String,
        error: ErrorBody,
        cancelled: bool,
    },
    /// A turn ended; `request_id` is its prompt's (`None`: not one of
    /// ours). `cancelled_by_us`: a cancel of ours was asked for it.
    Ended {
        request_id: Option<String>,
        turn_id: String,
        outcome: Outcome,
        cancelled_by_us: bool,
    },
    /// The server waits for this approval.
    ApprovalRequested(Approval),
    /// An approval is no longer waiting (answered, or its turn ended).
    ApprovalGone { approval_id: String },
    /// A session event's `seq` was not the one after the last.
    SeqGap { expected: u64, got: u64 },
    /// An event of a subagent of this session (capability `subagents`),
    /// for a front end to show under its `task` call. Its approvals also
    /// come as [`Update::ApprovalRequested`], answered like any other.
    Subagent(Box<Event>),
}

/// The updates of one event and the requests they call for.
#[derive(Debug, Default, PartialEq)]
pub struct Applied {
    pub updates: Vec<Update>,
    pub requests: Vec<Request>,
}

/// Most prompts a client can have in flight: the server queues at most
/// 64 behind a running one; past this the oldest is forgotten.
const MAX_PROMPTS: usize = 1024;

/// One session seen from a client.
#[derive(Debug)]
pub struct SessionClient {
    session_id: Option<String>,
    prefix: String,
    next_request: u64,
    prompts: Vec<Prompt>,
    /// The running turn: its id and its prompt's request id, if ours.
    running: Option<(String, Option<String>)>,
    approvals: Vec<Approval>,
    /// Proposed calls of the running turn: call id, tool, arguments.
    proposed: Vec<(String, String, serde_json::Value)>,
    last_seq: Option<u64>,
    /// The live subagents of this session (and theirs), by session id.
    children: Vec<String>,
    /// Arguments of their proposed calls: child session, call id.
    child_proposed: Vec<(String, String, serde_json::Value)>,
}

/// Most live subagents a client follows (the server runs `max_subagents`
/// at once per turn); past this the oldest is forgotten.
const MAX_CHILDREN: usize = 256;

impl SessionClient {
    /// A client whose request ids start with `prefix` (so logs tell front
    /// ends apart).
    pub fn new(prefix: impl Into<String>) -> SessionClient {
        SessionClient {
            session_id: None,
            prefix: prefix.into(),
            next_request: 0,
            prompts: Vec::new(),
            running: None,
            approvals: Vec::new(),
            proposed: Vec::new(),
            last_seq: None,
            children: Vec::new(),
            child_proposed: Vec::new(),
        }
    }

    /// The session, once `session.started` was applied (or set).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Sets the session this client follows (a client that started it
    /// elsewhere).
    pub fn set_session(&mut self, session_id: impl Into<String>) {
        self.session_id = Some(session_id.into());
    }

    /// Whether `request_id` is one this client made.
    pub fn owns(&self, request_id: &str) -> bool {
        request_id
            .strip_prefix(&self.prefix)
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n >= 1 && n <= self.next_request)
    }

    /// A fresh request id.
    pub fn next_request_id(&mut self) -> String {
        self.next_request += 1;
        format!("{}{}", self.prefix, self.next_request)
    }

    /// Any message, with a fresh request id.
    pub fn request(&mut self, message: ClientMessage) -> Request {
        Request {
            request_id: self.next_request_id(),
            message,
        }
    }

    /// `turn.start` for `prompt`, tracked from now on.
    pub fn submit(&mut self, prompt: impl Into<String>) -> Request {
        self.submit_as(prompt.into(), false)
    }

    /// `turn.start` for `/NAME args`: the server runs the custom command
    /// or skill NAME (an unknown one is an `invalid_request`).
    pub fn submit_command(&mut self, text: impl Into<String>) -> Request {
        self.submit_as(text.into(), true)
    }

    fn submit_as(&mut self, text: String, command: bool) -> Request {
        let request = self.request(ClientMessage::TurnStart(TurnStart {
            session_id: self.session_id.clone().unwrap_or_default(),
            prompt: text.clone(),
            command,
        }));
        if self.prompts.len() >= MAX_PROMPTS {
            self.prompts.remove(0);
        }
        self.prompts.push(Prompt {
            request_id: request.request_id.clone(),
            text,
            stage: Stage::Sent,
            cancel: false,
            cancel_sent: false,
        });
        request
    }

    /// The prompts in flight, in the order they were sent.
    pub fn prompts(&self) -> &[Prompt] {
        &self.prompts
    }

    pub fn prompt(&self, request_id: &str) -> Option<&Prompt> {
        self.prompts.iter().find(|p| p.request_id == request_id)
    }

    /// The running turn's id.
    pub fn running_turn(&self) -> Option<&str> {
        self.running.as_ref().map(|(turn, _)| turn.as_str())
    }

    /// A turn runs, or a prompt of ours is on its way to one (sent, not yet
    /// placed).
    pub fn busy(&self) -> bool {
        self.running.is_some() || self.prompts.iter().any(|p| p.stage == Stage::Sent)
    }

    /// The approvals waiting, oldest first.
    pub fn approvals(&self) -> &[Approval] {
        &self.approvals
    }

    /// Cancels the prompt `request_id` at whatever stage it is: the running
    /// turn is cancelled, a queued prompt removed, and a prompt the server
    /// has not placed yet is cancelled once it does. Empty when nothing
    /// needs sending now (or it is not ours, or is already being cancelled).
    pub fn cancel(&mut self, request_id: &str) -> Vec<Request> {
        let Some(index) = self.prompts.iter().position(|p| p.request_id == request_id) else {
            return Vec::new();
        };
        self.prompts[index].cancel = true;
        self.flush_cancels()
    }

    /// Cancels what runs now: the running turn (ours or not), else the
    /// oldest prompt on its way to running (sent, not placed yet).
    pub fn cancel_current(&mut self) -> Vec<Request> {
        if let Some((turn_id, request_id)) = self.running.clone() {
            if let Some(request_id) = request_id {
                return self.cancel(&request_id);
            }
            let session_id = self.session_id.clone().unwrap_or_default();
            return vec![self.request(ClientMessage::TurnCancel(TurnCancel {
                session_id,
                turn_id,
            }))];
        }
        match self.prompts.iter().find(|p| p.stage == Stage::Sent) {
            Some(prompt) => {
                let request_id = prompt.request_id.clone();
                self.cancel(&request_id)
            }
            None => Vec::new(),
        }
    }

    /// Cancels every prompt in flight (running, queued, on its way): all
    /// are marked first, so the rule about prompts on their way holds for
    /// the whole lot.
    pub fn cancel_all(&mut self) -> Vec<Request> {
        for prompt in &mut self.prompts {
            prompt.cancel = true;
        }
        self.flush_cancels()
    }

    /// `approval.resolve` for a waiting approval; `None` when it is not
    /// waiting (already answered, or its turn ended).
    pub fn resolve(&mut self, approval_id: &str, approved: bool) -> Option<Request> {
        let index = self
            .approvals
            .iter()
            .position(|a| a.approval_id == approval_id)?;
        let approval = self.approvals.remove(index);
        let session_id = approval
            .child_session
            .or_else(|| self.session_id.clone())
            .unwrap_or_default();
        Some(
            self.request(ClientMessage::ApprovalResolve(ApprovalResolve {
                session_id,
                approval_id: approval_id.to_string(),
                approved,
            })),
        )
    }

    /// What carries out the cancels asked for, once no cancelled prompt is
    /// on its way any more: queue removals first, then the turn's cancel.
    fn flush_cancels(&mut self) -> Vec<Request> {
        if self
            .prompts
            .iter()
            .any(|p| p.cancel && p.stage == Stage::Sent)
        {
            return Vec::new();
        }
        let session_id = self.session_id.clone().unwrap_or_default();
        let mut removals = Vec::new();
        let mut turns = Vec::new();
        for prompt in &mut self.prompts {
            if !prompt.cancel || prompt.cancel_sent {
                continue;
            }
            match &prompt.stage {
                Stage::Sent => continue,
                Stage::Queued { queue_id, revision } => {
                    removals.push(ClientMessage::QueueRemove(QueueRemove {
                        session_id: session_id.clone(),
                        queue_id: queue_id.clone(),
                        revision: *revision,
                    }))
                }
                Stage::Running { turn_id } => turns.push(ClientMessage::TurnCancel(TurnCancel {
                    session_id: session_id.clone(),
                    turn_id: turn_id.clone(),
                })),
            }
            prompt.cancel_sent = true;
        }
        removals
            .into_iter()
            .chain(turns)
            .map(|message| self.request(message))
            .collect()
    }

    fn index_of(&self, request_id: Option<&str>) -> Option<usize> {
        let request_id = request_id?;
        self.prompts.iter().position(|p| p.request_id == request_id)
    }

    fn index_of_queued(&self, queue_id: &str) -> Option<usize> {
        self.prompts
            .iter()
            .position(|p| matches!(&p.stage, Stage::Queued { queue_id: q, .. } if q == queue_id))
    }

    /// Applies one event from the server. Events of other sessions are
    /// ignored (errors are matched by request id).
    pub fn apply(&mut self, event: &Event) -> Applied {
        let mut applied = Applied::default();
        if let EventBody::SessionStarted(_) = &event.body {
            if self.session_id.is_none() {
                self.session_id = event.session_id.clone();
            }
            return applied;
        }
        if let Some(parent) = &event.parent {
            self.child_event(parent, event, &mut applied);
            return applied;
        }
        if let (Some(mine), Some(theirs)) = (&self.session_id, &event.session_id) {
            if mine != theirs {
                return applied;
            }
        }
        if let Some(seq) = event.seq {
            if let Some(last) = self.last_seq {
                if seq != last + 1 {
                    applied.updates.push(Update::SeqGap {
                        expected: last + 1,
                        got: seq,
                    });
                }
            }
            self.last_seq = Some(seq);
        }
        let request_id = event.request_id.as_deref();
        match &event.body {
            EventBody::QueueEnqueued { entry, position } => {
                if let Some(index) = self.index_of(request_id) {
                    self.prompts[index].stage = Stage::Queued {
                        queue_id: entry.queue_id.clone(),
                        revision: entry.revision,
                    };
                    self.prompts[index].cancel_sent = false;
                    applied.updates.push(Update::Queued {
                        request_id: self.prompts[index].request_id.clone(),
                        entry: entry.clone(),
                        position: *position,
                    });
                    applied.requests.extend(self.flush_cancels());
                }
            }
            EventBody::QueueUpdated { entry } | EventBody::QueueMoved { entry, .. } => {
                if let Some(index) = self.index_of_queued(&entry.queue_id) {
                    self.prompts[index].stage = Stage::Queued {
                        queue_id: entry.queue_id.clone(),
                        revision: entry.revision,
                    };
                    self.prompts[index].text = entry.prompt.clone();
                }
            }
            EventBody::QueueRemoved { queue_id } => {
                if let Some(index) = self.index_of_queued(queue_id) {
                    let prompt = self.prompts.remove(index);
                    applied.updates.push(Update::Withdrawn {
                        request_id: prompt.request_id,
                        prompt: prompt.text,
                    });
                }
            }
            EventBody::QueueDequeued { queue_id } => {
                if let Some(index) = self.index_of_queued(queue_id) {
                    // Placed again by its turn.started, which follows.
                    self.prompts[index].stage = Stage::Sent;
                    self.prompts[index].cancel_sent = false;
                }
            }
            EventBody::QueueSnapshot { entries } => {
                for entry in entries {
                    if let Some(index) = self.index_of_queued(&entry.queue_id) {
                        self.prompts[index].stage = Stage::Queued {
                            queue_id: entry.queue_id.clone(),
                            revision: entry.revision,
                        };
                    }
                }
            }
            EventBody::TurnStarted {} => {
                let turn_id = event.turn_id.clone().unwrap_or_default();
                let index = self.index_of(request_id);
                self.running = Some((
                    turn_id.clone(),
                    index.map(|i| self.prompts[i].request_id.clone()),
                ));
                self.proposed.clear();
                if let Some(index) = index {
                    self.prompts[index].stage = Stage::Running {
                        turn_id: turn_id.clone(),
                    };
                    self.prompts[index].cancel_sent = false;
                    applied.updates.push(Update::Started {
                        request_id: self.prompts[index].request_id.clone(),
                        turn_id,
                        prompt: self.prompts[index].text.clone(),
                    });
                    applied.requests.extend(self.flush_cancels());
                }
            }
            EventBody::ToolProposed {
                call_id,
                name,
                arguments,
            } => {
                self.proposed
                    .push((call_id.clone(), name.clone(), arguments.clone()));
            }
            EventBody::ApprovalRequested { call_id, name, .. } => {
                // The proposed call's arguments, when it is the call asked
                // about: a subagent's approval asked on its `task` call
                // (a client without capability `subagents`) names the
                // child's tool, and the task's arguments are not that
                // call's, so no rule may read them.
                let arguments = self
                    .proposed
                    .iter()
                    .rev()
                    .find(|(id, _, _)| id == call_id)
                    .filter(|(_, proposed, _)| proposed == name)
                    .map(|(_, _, arguments)| arguments.clone())
                    .unwrap_or(serde_json::Value::Null);
                let Some(approval) = Approval::of(event, arguments, None) else {
                    return applied;
                };
                self.approvals.push(approval.clone());
                applied.updates.push(Update::ApprovalRequested(approval));
            }
            EventBody::ToolStarted { call_id, .. } | EventBody::ToolCompleted { call_id, .. } => {
                // The server stopped waiting for this call's approval.
                let gone: Vec<String> = self
                    .approvals
                    .iter()
                    .filter(|a| a.call_id == *call_id)
                    .map(|a| a.approval_id.clone())
                    .collect();
                self.approvals.retain(|a| a.call_id != *call_id);
                applied.updates.extend(
                    gone.into_iter()
                        .map(|approval_id| Update::ApprovalGone { approval_id }),
                );
            }
            EventBody::TurnCompleted { steps, usage, .. } => self.ended(
                event,
                Outcome::Completed {
                    steps: *steps,
                    usage: *usage,
                },
                &mut applied,
            ),
            EventBody::TurnCancelled {} => self.ended(event, Outcome::Cancelled, &mut applied),
            EventBody::TurnFailed { code, message } => self.ended(
                event,
                Outcome::Failed {
                    code: *code,
                    message: message.clone(),
                },
                &mut applied,
            ),
            EventBody::SessionCleared {} => {
                // Queued prompts are dropped with the history.
                let (queued, rest): (Vec<Prompt>, Vec<Prompt>) = std::mem::take(&mut self.prompts)
                    .into_iter()
                    .partition(|p| matches!(p.stage, Stage::Queued { .. }));
                self.prompts = rest;
                applied
                    .updates
                    .extend(queued.into_iter().map(|p| Update::Withdrawn {
                        request_id: p.request_id,
                        prompt: p.text,
                    }));
            }
            EventBody::Error(error) => self.error(request_id, error, &mut applied),
            _ => {}
        }
        applied
    }

    /// An event of a child session: ours when its parent is this session
    /// or one of our children. Its approvals wait here like our own; the
    /// rest is passed on to be shown.
    fn child_event(&mut self, parent: &scv_protocol::Parent, event: &Event, applied: &mut Applied) {
        let mine = self.session_id.as_deref() == Some(parent.session_id.as_str())
            || self.children.contains(&parent.session_id);
        let Some(child) = event.session_id.clone().filter(|_| mine) else {
            return;
        };
        let gone = |approvals: &mut Vec<Approval>, keep: &dyn Fn(&Approval) -> bool| {
            let (kept, gone): (Vec<Approval>, Vec<Approval>) =
                std::mem::take(approvals).into_iter().partition(keep);
            *approvals = kept;
            gone.into_iter()
                .map(|a| Update::ApprovalGone {
                    approval_id: a.approval_id,
                })
                .collect::<Vec<_>>()
        };
        match &event.body {
            EventBody::SubagentStarted(_) if !self.children.contains(&child) => {
                if self.children.len() >= MAX_CHILDREN {
                    self.children.remove(0);
                }
                self.children.push(child.clone());
            }
            EventBody::ToolProposed {
                call_id, arguments, ..
            } => {
                if self.child_proposed.len() >= MAX_CHILDREN {
                    self.child_proposed.remove(0);
                }
                self.child_proposed
                    .push((child.clone(), call_id.clone(), arguments.clone()));
            }
            EventBody::ApprovalRequested { call_id, .. } => {
                let arguments = self
                    .child_proposed
                    .iter()
                    .rev()
                    .find(|(session, id, _)| *session == child && id == call_id)
                    .map(|(_, _, arguments)| arguments.clone())
                    .unwrap_or(serde_json::Value::Null);
                if let Some(approval) = Approval::of(event, arguments, Some(child.clone())) {
                    self.approvals.push(approval.clone());
                    applied.updates.push(Update::ApprovalRequested(approval));
                }
            }
            EventBody::ToolStarted { call_id, .. } | EventBody::ToolCompleted { call_id, .. } => {
                let same = |a: &Approval| {
                    a.child_session.as_deref() == Some(child.as_str()) && a.call_id == *call_id
                };
                let updates = gone(&mut self.approvals, &|a| !same(a));
                applied.updates.extend(updates);
            }
            EventBody::TurnCompleted { .. }
            | EventBody::TurnCancelled {}
            | EventBody::TurnFailed { .. } => {
                let updates = gone(&mut self.approvals, &|a| {
                    a.child_session.as_deref() != Some(child.as_str())
                });
                applied.updates.extend(updates);
                self.children.retain(|c| *c != child);
                self.child_proposed
                    .retain(|(session, _, _)| *session != child);
            }
            _ => {}
        }
        applied
            .updates
            .push(Update::Subagent(Box::new(event.clone())));
    }

    fn ended(&mut self, event: &Event, outcome: Outcome, applied: &mut Applied) {
        let turn_id = event.turn_id.clone().unwrap_or_default();
        let index = self.index_of(event.request_id.as_deref());
        let (request_id, cancelled_by_us) = match index {
            Some(index) => {
                let prompt = self.prompts.remove(index);
                (Some(prompt.request_id), prompt.cancel)
            }
            None => (None, false),
        };
        // A terminal event always ends the running turn.
        self.running = None;
        self.proposed.clear();
        for approval in std::mem::take(&mut self.approvals) {
            applied.updates.push(Update::ApprovalGone {
                approval_id: approval.approval_id,
            });
        }
        applied.updates.push(Update::Ended {
            request_id,
            turn_id,
            outcome,
            cancelled_by_us,
        });
    }

    fn error(&mut self, request_id: Option<&str>, error: &ErrorBody, applied: &mut Applied) {
        // A refused prompt (maybe the one the session's cancels waited for).
        if let Some(index) = self.index_of(request_id) {
            if self.prompts[index].stage == Stage::Sent {
                let prompt = self.prompts.remove(index);
                applied.updates.push(Update::Refused {
                    request_id: prompt.request_id,
                    error: error.clone(),
                    cancelled: prompt.cancel,
                });
                applied.requests.extend(self.flush_cancels());
            }
            return;
        }
        // A queue.remove of ours met a newer revision: try again with it.
        if error.code == ErrorCode::QueueConflict {
            if let Some(entry) = &error.entry {
                if let Some(index) = self.index_of_queued(&entry.queue_id) {
                    self.prompts[index].stage = Stage::Queued {
                        queue_id: entry.queue_id.clone(),
                        revision: entry.revision,
                    };
                    self.prompts[index].text = entry.prompt.clone();
                    if self.prompts[index].cancel {
                        self.prompts[index].cancel_sent = false;
                        applied.requests.extend(self.flush_cancels());
                    }
                }
            }
        }
    }
}
