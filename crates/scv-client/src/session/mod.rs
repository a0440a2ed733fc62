//! A session's whole life as a client sees it, without I/O.
//!
//! Every front end (the TUI, `scv exec`, `scv acp`, ClawBot's chats) holds
//! one [`SessionClient`] per session: frames go in
//! ([`SessionClient::apply`]), typed [`Update`]s and the [`Request`]s that
//! follow from them come out, and the caller does the I/O (or lets
//! [`crate::driver::Driver`] do it). The client owns the request ids of
//! everything it sends, so it knows what each answer answers:
//!
//! - **prompts** — where each one is (sent, queued with the revision the
//!   server gave it, running), what cancelling it means at each stage, how
//!   its turn ended (`prompts.rs`);
//! - **other requests** — `status`, `models`, `checkpoints`, `configure`,
//!   `list`, … each answered as one [`Update::Answered`] naming what was
//!   asked, its error as [`Update::Failed`] (`asks.rs`);
//! - **content** — text, reasoning, tools proposed / running / done with
//!   their arguments whole, usage, the queue, checkpoints (`content.rs`);
//! - **approvals** — one [`Approval`] type for the session's calls and its
//!   subagents', resolved by id (`approvals.rs`);
//! - **subagents** — one view per child session, whose updates come
//!   wrapped in [`Update::Subagent`] (`children.rs`).
//!
//! The one subtle rule: a prompt cancelled before the server said where it
//! is (its `turn.start` is in flight) is cancelled as soon as the server
//! says — `turn.cancel` when its `turn.started` comes, `queue.remove`
//! when its `queue.enqueued` does — exactly once. And while any cancelled
//! prompt is still on its way, no cancel goes out; then the queue removals
//! go before the running turn's cancel. The server handles a connection's
//! messages in order, so it cannot end the turn and start a cancelled
//! queued prompt before that prompt's removal arrives.

mod approvals;
mod asks;
mod children;
mod content;
mod prompts;
mod update;

pub use approvals::Approval;
pub use asks::{Answer, Asked, Configured, MAX_PENDING};
pub use children::{Subagent, SubagentState, MAX_CHILDREN, MAX_LABEL_CHARS};
pub use update::{Applied, Outcome, QueueChange, ToolChange, Update};

use scv_protocol::{ApprovalResolve, ClientMessage, Event, EventBody, QueueEntry, TurnStart};

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

/// Most prompts a client can have in flight: the server queues at most
/// 64 behind a running one; past this the oldest is forgotten.
const MAX_PROMPTS: usize = 1024;
/// Queue entries kept (the server holds at most 64).
const MAX_QUEUE: usize = 256;

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
    /// Proposed calls' arguments and denied calls, the children's too.
    calls: approvals::Calls,
    last_seq: Option<u64>,
    children: children::Children,
    pending: asks::Pending,
    /// The session's queue, every entry (not only ours).
    queue: Vec<QueueEntry>,
    /// The prompt of a queued entry not ours that was dequeued: its turn
    /// starts next.
    dequeued: Option<String>,
}

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
            calls: Default::default(),
            last_seq: None,
            children: Default::default(),
            pending: Default::default(),
            queue: Vec::new(),
            dequeued: None,
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

    /// Any message but a prompt, with a fresh request id; its answer (or
    /// error) comes back as one update naming what it asked.
    pub fn request(&mut self, message: ClientMessage) -> Request {
        let request_id = self.next_request_id();
        self.pending.insert(request_id.clone(), Asked::of(&message));
        Request {
            request_id,
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

    /// `turn.start` for `prompt` with `images` (capability `images`; the
    /// connection must have asked for it, or the server ignores them).
    pub fn submit_with_images(
        &mut self,
        prompt: impl Into<String>,
        images: Vec<scv_protocol::PromptImage>,
    ) -> Request {
        let mut request = self.submit_as(prompt.into(), false);
        if let ClientMessage::TurnStart(start) = &mut request.message {
            start.images = images;
        }
        request
    }

    fn submit_as(&mut self, text: String, command: bool) -> Request {
        let request = Request {
            request_id: self.next_request_id(),
            message: ClientMessage::TurnStart(TurnStart {
                session_id: self.session_id.clone().unwrap_or_default(),
                prompt: text.clone(),
                command,
                images: Vec::new(),
            }),
        };
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

    /// The waiting approval `approval_id`.
    pub fn approval(&self, approval_id: &str) -> Option<&Approval> {
        self.approvals.iter().find(|a| a.approval_id == approval_id)
    }

    /// The session's queue as the server last said.
    pub fn queue(&self) -> &[QueueEntry] {
        &self.queue
    }

    /// The subagent `session_id`, when it is one of ours.
    pub fn subagent(&self, session_id: &str) -> Option<&Subagent> {
        self.children.get(session_id)
    }

    /// Every subagent followed, oldest first.
    pub fn subagents(&self) -> impl Iterator<Item = &Subagent> {
        self.children.all()
    }

    /// `approval.resolve` for a waiting approval; `None` when it is not
    /// waiting (already answered, or its turn ended). A denial is
    /// remembered: the call's end says `denied`.
    pub fn resolve(&mut self, approval_id: &str, approved: bool) -> Option<Request> {
        let index = self
            .approvals
            .iter()
            .position(|a| a.approval_id == approval_id)?;
        let approval = self.approvals.remove(index);
        if !approved {
            self.calls
                .denied(approval.child_session.as_deref(), &approval.call_id);
        }
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

    /// Forgets everything in flight (the connection went away): nothing
    /// of it will be answered now. Request ids stay unique.
    pub fn reset(&mut self) {
        self.prompts.clear();
        self.running = None;
        self.approvals.clear();
        self.calls = Default::default();
        self.last_seq = None;
        self.children.clear();
        self.pending.clear();
        self.queue.clear();
        self.dequeued = None;
    }

    /// Applies one event from the server. Events of other sessions are
    /// ignored (errors are matched by request id).
    pub fn apply(&mut self, event: &Event) -> Applied {
        let mut applied = Applied::default();
        if let EventBody::SessionStarted(started) = &event.body {
            if self.session_id.is_none() {
                self.session_id = event.session_id.clone();
            }
            self.pending.take(event.request_id.as_deref());
            if event.session_id == self.session_id {
                applied.updates.push(Update::Opened(started.clone()));
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
        if let EventBody::SessionAttached(attached) = &event.body {
            // A new start for the seq check: the next live event is the
            // one after this.
            self.pending.take(event.request_id.as_deref());
            if self.session_id.is_none() {
                self.session_id = event.session_id.clone();
            }
            self.last_seq = event.seq;
            if let Some(turn_id) = &event.turn_id {
                self.running = Some((turn_id.clone(), None));
            }
            applied.updates.push(Update::Attached {
                attached: attached.clone(),
                seq: event.seq,
                turn_id: event.turn_id.clone(),
            });
            return applied;
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
        self.own_event(event, &mut applied);
        applied
    }

    /// An event of a child session: ours when its parent is this session
    /// or one of our children. Its approvals wait here like our own; the
    /// rest comes wrapped in [`Update::Subagent`].
    fn child_event(&mut self, parent: &scv_protocol::Parent, event: &Event, applied: &mut Applied) {
        let mine = self.session_id.as_deref() == Some(parent.session_id.as_str())
            || self.children.contains(&parent.session_id);
        let Some(child) = event.session_id.clone().filter(|_| mine) else {
            return;
        };
        if let EventBody::SubagentStarted(started) = &event.body {
            let host = (self.session_id.as_deref() != Some(parent.session_id.as_str()))
                .then_some(parent.session_id.as_str());
            let prompt = self
                .calls
                .arguments(host, &parent.call_id, None)
                .get("prompt")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string);
            self.children.started(&child, parent, started, prompt);
            applied
                .updates
                .push(Update::SubagentStarted { session_id: child });
            return;
        }
        let mut updates = Vec::new();
        self.content(Some(&child), event, &mut updates);
        for update in updates {
            match update {
                // Approvals and questions are answered where the
                // session's are.
                update @ (Update::ApprovalRequested(_)
                | Update::ApprovalGone { .. }
                | Update::Elicitation(_)) => applied.updates.push(update),
                update => applied.updates.push(Update::Subagent {
                    session_id: child.clone(),
                    update: Box::new(update),
                }),
            }
        }
    }
}
