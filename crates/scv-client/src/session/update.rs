//! What [`super::SessionClient::apply`] makes of the server's events: one
//! typed [`Update`] per thing a front end shows. Front ends render these
//! and never match raw protocol events for content, so a new server event
//! is one arm in the client and one render per front end.

use super::approvals::Approval;
use super::asks::{Answer, Asked};
use scv_protocol::{
    BudgetWarning, ErrorBody, FailureCode, HookMessage, ProviderRetrying, QueueEntry,
    SessionStarted, SessionWarning, TranscriptItem, TurnCost, Usage,
};

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Completed {
        steps: u32,
        usage: Option<Usage>,
        /// Capability `usage`: the turn's tokens by kind and its cost.
        cost: Option<TurnCost>,
    },
    Cancelled,
    Failed {
        code: FailureCode,
        message: String,
    },
}

/// A tool call of the running turn, as it moves.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolChange {
    /// The model proposed it (its arguments whole, ready for a diff).
    Proposed {
        call_id: String,
        name: String,
        arguments: serde_json::Value,
    },
    /// It runs (approved, or needing no approval).
    Running { call_id: String, name: String },
    /// It ended; `denied`: this client denied its approval (the protocol
    /// reports only `success: false`).
    Done {
        call_id: String,
        name: String,
        success: bool,
        output: String,
        truncated: bool,
        denied: bool,
    },
}

/// The session's queue, as it changes (every queued prompt, whoever sent
/// it). [`super::SessionClient::queue`] is the queue after the change.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueChange {
    /// The whole queue (as the session opens, or after a pause).
    Snapshot {
        entries: Vec<QueueEntry>,
    },
    Enqueued {
        entry: QueueEntry,
        position: usize,
    },
    /// Its prompt was edited.
    Updated {
        entry: QueueEntry,
    },
    Moved {
        entry: QueueEntry,
        position: usize,
    },
    /// Removed without running.
    Removed {
        queue_id: String,
    },
    /// Left for its turn (which starts next); `prompt`: its text.
    Dequeued {
        queue_id: String,
        prompt: Option<String>,
    },
}

/// What one event changed, for a front end to show.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    // --- The prompts this client sent.
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
    Withdrawn {
        request_id: String,
        prompt: String,
    },
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

    // --- The session.
    /// `session.started`: the session this client follows opened.
    Opened(Box<SessionStarted>),
    /// Capability `detach`: the session outlives this connection now.
    Detached,
    /// Capability `detach`: this connection follows a live session;
    /// `seq`: the last it sent (the next live event has `seq + 1`).
    /// Its queue, transcript and waiting approvals follow as updates.
    Attached {
        attached: scv_protocol::SessionAttached,
        seq: Option<u64>,
        /// The turn running as it attached.
        turn_id: Option<String>,
    },
    /// Capability `detach`: the session's life in the daemon ended
    /// (`session.close`, from here or another client).
    Closed,
    /// A resumed or forked session's past conversation.
    Transcript {
        items: Vec<TranscriptItem>,
        truncated: bool,
    },
    Queue(QueueChange),
    /// A turn began (ours or not); `prompt`: what it answers, when the
    /// client knows (a prompt of ours, or a queued one it saw dequeued).
    TurnBegan {
        turn_id: String,
        request_id: Option<String>,
        prompt: Option<String>,
    },
    /// Assistant text as it streams.
    Text(String),
    /// A step's whole assistant message.
    TextDone(String),
    /// The model's reasoning (capability `reasoning`).
    Reasoning(String),
    Tool(ToolChange),
    /// The turn's usage so far (capability `step_usage`).
    Usage {
        step: Usage,
        turn: Usage,
        steps: u32,
    },
    Compacted {
        before_tokens: u64,
        after_tokens: u64,
        removed_messages: u64,
    },
    Trimmed {
        removed_messages: u64,
        history_bytes: u64,
    },
    Cleared,
    Budget(BudgetWarning),
    Retrying(ProviderRetrying),
    Hook(HookMessage),
    /// The workspace was recorded before the turn's first changing call.
    CheckpointCreated {
        checkpoint_id: String,
    },
    /// That call runs without an undo point, and why.
    CheckpointFailed {
        message: String,
    },
    /// The session's journal failed, or caught up (capability `sessions`).
    Warning(SessionWarning),

    // --- Approvals (the session's and its subagents').
    /// The server waits for this approval.
    ApprovalRequested(Approval),
    /// An approval is no longer waiting (answered, or its turn ended).
    ApprovalGone {
        approval_id: String,
    },

    /// An MCP server asks the user (capability `elicitation`); answered
    /// with `elicitation.resolve` (a subagent's too, with this session's
    /// id).
    Elicitation(Box<scv_protocol::ElicitationRequested>),

    // --- Answers to requests.
    /// The answer to a request; `asked`: what this client asked (`None`:
    /// an answer to someone else, or news such as another client's
    /// `session.configure`).
    Answered {
        asked: Option<Asked>,
        /// The request it answers (ours or not), to match a front end's
        /// own continuation (an editor's responder) to it.
        request_id: Option<String>,
        answer: Answer,
    },
    /// An `error` that is not a prompt's; `asked`: the request of this
    /// client it answers, when it is one.
    Failed {
        asked: Option<Asked>,
        request_id: Option<String>,
        error: ErrorBody,
    },

    // --- Subagents (capability `subagents`).
    /// A child session began; [`super::SessionClient::subagent`] has its
    /// view.
    SubagentStarted {
        session_id: String,
    },
    /// An update of a child session (its text, tools, turn and end).
    /// Its approvals come as [`Update::ApprovalRequested`], answered like
    /// any other.
    Subagent {
        session_id: String,
        update: Box<Update>,
    },

    /// A session event's `seq` was not the one after the last.
    SeqGap {
        expected: u64,
        got: u64,
    },
}

/// The updates of one event and the requests they call for.
#[derive(Debug, Default, PartialEq)]
pub struct Applied {
    pub updates: Vec<Update>,
    pub requests: Vec<super::Request>,
}
