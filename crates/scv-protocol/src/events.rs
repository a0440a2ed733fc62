//! Server events. An event is a typed body plus the envelope fields the
//! protocol document shows: `request_id` when it answers a request,
//! `session_id` / `turn_id` for session and turn events, and `seq` for
//! session events.
//!
//! [`Event`] is the owned form clients read; [`EventRef`] serializes the same
//! JSON from borrowed parts, so the server's hot path clones no ids.

use crate::checkpoints::{CheckpointInfo, FileChange};
use crate::codes::{ErrorCode, FailureCode};
use crate::messages::{Capabilities, PeerInfo, RemoteTools};
use crate::sessions::{ForkedFrom, StoredSession, TranscriptItem};
use crate::subagents::{Parent, SubagentStarted};
use serde::{Deserialize, Serialize};

/// An owned server event as read by clients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    #[serde(flatten)]
    pub body: EventBody,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// Extension (capability `subagents`): the event is a child session's,
    /// started by this call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Parent>,
}

/// A borrowed server event; serializes exactly like [`Event`].
#[derive(Debug, Clone, Copy, Serialize)]
pub struct EventRef<'a> {
    #[serde(flatten)]
    pub body: &'a EventBody,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<&'a Parent>,
}

impl Event {
    /// An event answering `request_id` with no session envelope.
    pub fn reply(request_id: Option<String>, body: EventBody) -> Event {
        Event {
            body,
            request_id,
            session_id: None,
            turn_id: None,
            seq: None,
            parent: None,
        }
    }

    /// An `error` event.
    pub fn error(
        request_id: Option<String>,
        code: ErrorCode,
        message: impl Into<String>,
        fatal: bool,
    ) -> Event {
        Event::reply(
            request_id,
            EventBody::Error(ErrorBody {
                code,
                message: message.into(),
                fatal,
                entry: None,
                conflicts: None,
            }),
        )
    }

    pub fn as_ref(&self) -> EventRef<'_> {
        EventRef {
            body: &self.body,
            request_id: self.request_id.as_deref(),
            session_id: self.session_id.as_deref(),
            turn_id: self.turn_id.as_deref(),
            seq: self.seq,
            parent: self.parent.as_ref(),
        }
    }

    /// The wire name of this event's type.
    pub fn type_name(&self) -> &'static str {
        self.body.type_name()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum EventBody {
    #[serde(rename = "initialized")]
    Initialized {
        protocol_version: u32,
        server: PeerInfo,
        /// Extension: the capabilities granted, echoed only to a client
        /// that asked for some.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        capabilities: Option<Capabilities>,
    },
    #[serde(rename = "session.started")]
    SessionStarted(Box<SessionStarted>),
    #[serde(rename = "daemon.status")]
    DaemonStatus { status: DaemonStatus },
    #[serde(rename = "queue.snapshot")]
    QueueSnapshot { entries: Vec<QueueEntry> },
    #[serde(rename = "queue.enqueued")]
    QueueEnqueued { entry: QueueEntry, position: usize },
    #[serde(rename = "queue.updated")]
    QueueUpdated { entry: QueueEntry },
    #[serde(rename = "queue.moved")]
    QueueMoved { entry: QueueEntry, position: usize },
    #[serde(rename = "queue.removed")]
    QueueRemoved { queue_id: String },
    #[serde(rename = "queue.dequeued")]
    QueueDequeued { queue_id: String },
    #[serde(rename = "turn.started")]
    TurnStarted {},
    #[serde(rename = "assistant.delta")]
    AssistantDelta { content: String },
    #[serde(rename = "assistant.completed")]
    AssistantCompleted { content: String },
    /// Extension (capability `reasoning`): the model's reasoning text.
    #[serde(rename = "reasoning.delta")]
    ReasoningDelta { content: String },
    /// Extension: the answer to `session.configure`.
    #[serde(rename = "session.configured")]
    SessionConfigured {
        provider: String,
        model: String,
        context_max_tokens: u64,
        /// The session's budget when `session.configure` set one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_session_cost_usd: Option<f64>,
        /// The session's mode now.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<crate::customize::Mode>,
    },
    #[serde(rename = "tool.proposed")]
    ToolProposed {
        call_id: String,
        name: String,
        arguments: serde_json::Value,
    },
    #[serde(rename = "approval.requested")]
    ApprovalRequested {
        approval_id: String,
        call_id: String,
        name: String,
        risk: Risk,
        cwd: String,
        summary: String,
        /// Extension, on `bash` calls: the command will run inside the
        /// sandbox.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandboxed: Option<bool>,
    },
    #[serde(rename = "tool.started")]
    ToolStarted { call_id: String, name: String },
    #[serde(rename = "tool.completed")]
    ToolCompleted {
        call_id: String,
        name: String,
        success: bool,
        output: String,
        truncated: bool,
    },
    #[serde(rename = "context.compacted")]
    ContextCompacted {
        before_tokens: u64,
        after_tokens: u64,
        removed_messages: u64,
    },
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        steps: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// Capability `usage`: the turn's tokens by kind, and its cost.
        #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
        cost: Option<TurnCost>,
    },
    /// Capability `usage`: 80 % of a budget is spent (once per budget and
    /// session).
    #[serde(rename = "budget.warning")]
    BudgetWarning(BudgetWarning),
    /// Capability `retries`: the provider refused for now (429, 5xx)
    /// and the request goes again after a wait.
    #[serde(rename = "provider.retrying")]
    ProviderRetrying(ProviderRetrying),
    /// Capability `step_usage`: a provider step of the turn reported its
    /// usage (the turn's totals so far, as `turn.completed` will count).
    /// The answer to `models.list`: the provider and the ids it lists
    /// (sorted, at most 500).
    #[serde(rename = "models.listed")]
    ModelsListed {
        provider: String,
        models: Vec<String>,
    },
    #[serde(rename = "usage.updated")]
    UsageUpdated {
        /// This step's tokens.
        step: Usage,
        /// The turn's tokens so far.
        turn: Usage,
        /// Steps so far.
        steps: u32,
    },
    #[serde(rename = "turn.cancelled")]
    TurnCancelled {},
    #[serde(rename = "turn.failed")]
    TurnFailed { code: FailureCode, message: String },
    #[serde(rename = "session.trimmed")]
    SessionTrimmed {
        removed_messages: u64,
        history_bytes: u64,
    },
    #[serde(rename = "session.cleared")]
    SessionCleared {},
    /// Extension (capability `sessions`): the answer to `session.list`.
    #[serde(rename = "session.listed")]
    SessionListed { sessions: Vec<StoredSession> },
    /// Extension (capability `sessions`): a resumed or forked session's
    /// past conversation, after its `queue.snapshot`.
    #[serde(rename = "session.transcript")]
    SessionTranscript {
        items: Vec<TranscriptItem>,
        /// Older items were left out to stay within the transcript bounds.
        truncated: bool,
    },
    /// Extension (capability `sessions`): the answer to `session.delete`.
    #[serde(rename = "session.deleted")]
    SessionDeleted {},
    /// Extension (capability `elicitation`): an MCP server's question to
    /// the user during one of its tool calls (a session event).
    #[serde(rename = "elicitation.requested")]
    ElicitationRequested(crate::elicitation::ElicitationRequested),
    /// Extension (capability `sessions`): the session's journal could
    /// not be written (once, until it recovers), or caught up again.
    #[serde(rename = "session.warning")]
    SessionWarning(crate::sessions::SessionWarning),
    /// Extension (capability `checkpoints`): the turn's first call that
    /// may change files runs without a checkpoint (a turn event, before
    /// that call's `tool.started`): no undo point, and why.
    #[serde(rename = "checkpoint.failed")]
    CheckpointFailed { message: String },
    /// Extension (capability `checkpoints`): the workspace was recorded
    /// before the turn's first call that may change files (a turn event,
    /// before that call's `tool.started`).
    #[serde(rename = "checkpoint.created")]
    CheckpointCreated { checkpoint_id: String },
    #[serde(rename = "checkpoint.listed")]
    CheckpointListed {
        checkpoints: Vec<CheckpointInfo>,
        /// The newest turn that changed files ran without a checkpoint
        /// (`checkpoint.failed`): undoing it is not possible, and why.
        /// Absent otherwise.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        missed: Option<crate::checkpoints::MissedCheckpoint>,
    },
    /// From the checkpoint to the workspace now.
    #[serde(rename = "checkpoint.diffed")]
    CheckpointDiffed {
        checkpoint_id: String,
        files: Vec<FileChange>,
        /// Unified, at most `MAX_CHECKPOINT_DIFF_BYTES`.
        diff: String,
        truncated: bool,
    },
    #[serde(rename = "checkpoint.restored")]
    CheckpointRestored {
        checkpoint_id: String,
        /// The files were put back (`files` was asked).
        files_restored: bool,
        conversation_restored: bool,
        /// The paths the restore changed, and how.
        files: Vec<FileChange>,
    },
    /// Extension (capability `hooks`): what a hook said or blocked.
    #[serde(rename = "hook.message")]
    HookMessage(crate::customize::HookMessage),
    /// Extension (capability `subagents`): a child session began.
    #[serde(rename = "subagent.started")]
    SubagentStarted(SubagentStarted),
    /// Extension (capability `trust`): the answer to `workspace.trust`.
    #[serde(rename = "workspace.trusted")]
    WorkspaceTrusted(crate::trust::WorkspaceTrust),
    /// Extension (capability `permissions`): the answer to
    /// `permissions.list`, `permissions.keep` and `permissions.remove`.
    #[serde(rename = "permissions.listed")]
    PermissionsListed(crate::permissions::PermissionsListed),
    /// Extension (capability `processes`): the answer to `process.kill`
    /// and `process.peek`.
    #[serde(rename = "process.state")]
    ProcessState(crate::processes::ProcessState),
    /// Extension (capability `processes`): the answer to `process.list`,
    /// oldest first (no `output`).
    #[serde(rename = "process.listed")]
    ProcessListed {
        processes: Vec<crate::processes::ProcessState>,
    },
    /// Extension (capability `detach`): the answer to `session.detach`.
    #[serde(rename = "session.detached")]
    SessionDetached {},
    /// Extension (capability `detach`): the answer to `session.attach`;
    /// its envelope's `seq` is the last the session sent (live events go
    /// on at `seq + 1`).
    #[serde(rename = "session.attached")]
    SessionAttached(crate::detach::SessionAttached),
    /// Extension (capability `detach`): the session's life in the daemon
    /// ended (`session.close`); to every attached connection.
    #[serde(rename = "session.closed")]
    SessionClosed {},
    #[serde(rename = "error")]
    Error(ErrorBody),
}

impl EventBody {
    pub fn type_name(&self) -> &'static str {
        match self {
            EventBody::Initialized { .. } => "initialized",
            EventBody::SessionStarted(_) => "session.started",
            EventBody::DaemonStatus { .. } => "daemon.status",
            EventBody::QueueSnapshot { .. } => "queue.snapshot",
            EventBody::QueueEnqueued { .. } => "queue.enqueued",
            EventBody::QueueUpdated { .. } => "queue.updated",
            EventBody::QueueMoved { .. } => "queue.moved",
            EventBody::QueueRemoved { .. } => "queue.removed",
            EventBody::QueueDequeued { .. } => "queue.dequeued",
            EventBody::TurnStarted {} => "turn.started",
            EventBody::AssistantDelta { .. } => "assistant.delta",
            EventBody::AssistantCompleted { .. } => "assistant.completed",
            EventBody::ReasoningDelta { .. } => "reasoning.delta",
            EventBody::SessionConfigured { .. } => "session.configured",
            EventBody::ToolProposed { .. } => "tool.proposed",
            EventBody::ApprovalRequested { .. } => "approval.requested",
            EventBody::ToolStarted { .. } => "tool.started",
            EventBody::ToolCompleted { .. } => "tool.completed",
            EventBody::ContextCompacted { .. } => "context.compacted",
            EventBody::TurnCompleted { .. } => "turn.completed",
            EventBody::BudgetWarning(_) => "budget.warning",
            EventBody::ProviderRetrying(_) => "provider.retrying",
            EventBody::UsageUpdated { .. } => "usage.updated",
            EventBody::ModelsListed { .. } => "models.listed",
            EventBody::TurnCancelled {} => "turn.cancelled",
            EventBody::TurnFailed { .. } => "turn.failed",
            EventBody::SessionTrimmed { .. } => "session.trimmed",
            EventBody::SessionCleared {} => "session.cleared",
            EventBody::SessionListed { .. } => "session.listed",
            EventBody::SessionTranscript { .. } => "session.transcript",
            EventBody::SessionDeleted {} => "session.deleted",
            EventBody::SessionDetached {} => "session.detached",
            EventBody::SessionAttached(_) => "session.attached",
            EventBody::SessionClosed {} => "session.closed",
            EventBody::ElicitationRequested(_) => "elicitation.requested",
            EventBody::SessionWarning(_) => "session.warning",
            EventBody::CheckpointFailed { .. } => "checkpoint.failed",
            EventBody::CheckpointCreated { .. } => "checkpoint.created",
            EventBody::CheckpointListed { .. } => "checkpoint.listed",
            EventBody::CheckpointDiffed { .. } => "checkpoint.diffed",
            EventBody::CheckpointRestored { .. } => "checkpoint.restored",
            EventBody::HookMessage(_) => "hook.message",
            EventBody::SubagentStarted(_) => "subagent.started",
            EventBody::WorkspaceTrusted(_) => "workspace.trusted",
            EventBody::PermissionsListed(_) => "permissions.listed",
            EventBody::ProcessState(_) => "process.state",
            EventBody::ProcessListed { .. } => "process.listed",
            EventBody::Error(_) => "error",
        }
    }
}

/// `session.started`; its `session_id` is the envelope's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionStarted {
    pub cwd: String,
    pub model: String,
    pub context_max_tokens: u64,
    pub max_server_frame_bytes: u64,
    pub max_transcript_bytes: u64,
    pub max_transcript_items: u64,
    pub max_prompt_history_bytes: u64,
    pub max_prompt_history_items: u64,
    /// Extension: the provider definition the session uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Extension: the sandbox tool commands run in — `workspace-write`,
    /// `read-only`, `off`, or `unavailable` (configured, but the kernel
    /// cannot enforce it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Extension: what of the sandbox's second wall this machine cannot
    /// give, in words; `sandboxed` calls are not auto-approved while any is
    /// listed. Absent when there is none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sandbox_gaps: Vec<String>,
    /// Extension: what the user should know about this session's sandbox
    /// (a workspace holding the home directory is not writable). Absent
    /// when there is nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sandbox_warnings: Vec<String>,
    /// Extension (capability `usage`): the session's cost budget in USD
    /// as it opens (config.toml's `max_session_cost_usd`, or the one a
    /// resumed session was given by `session.configure`); absent without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_session_cost_usd: Option<f64>,
    /// Extension (capability `usage`), a resumed session's: what it spent
    /// since its last clear (`session_usage_detail`, `session_cost_usd`,
    /// flattened); absent otherwise.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub spent: Option<Box<SessionSpent>>,
    /// Extension (capability `sessions`): this is a stored session
    /// resumed (`session.resume`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resumed: bool,
    /// Extension, with `resumed`: prompts that were still queued when the
    /// session last stopped. They never run again by themselves; a client
    /// may offer to send them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsent_prompts: Option<Vec<String>>,
    /// Extension: the session this one was forked from (`session.fork`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
    /// Extension: the session's mode (`default` or `plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<crate::customize::Mode>,
    /// Extension (capability `commands`): the custom commands and skills
    /// `/NAME` runs, and what was wrong with the files that were skipped
    /// ("FILE:LINE: what").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<Vec<crate::customize::CommandInfo>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_diagnostics: Vec<String>,
    /// Extension (capability `commands`): the instruction files the
    /// system prompt carries, in its order (`~/.claude/CLAUDE.md`, the
    /// repository's `CLAUDE.md`s from its root down, `CLAUDE.local.md`,
    /// `AGENTS.md`, each import after the file importing it), as read when
    /// the session started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Vec<String>>,
    /// Extension: whether the session's sandboxed commands may open
    /// network (IP) sockets (`sandbox_network`); absent when commands run
    /// unconfined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_network: Option<bool>,
    /// Extension: what is wrong with the server's `config.toml`, in words
    /// ("PATH: line N: what"): an edit that does not parse (the server
    /// runs on with the configuration it had) and unknown keys.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_warnings: Vec<String>,
    /// Extension (capability `trust`): the workspace's repository
    /// configuration and whether it may run or apply; absent when the
    /// workspace carries none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<Box<crate::trust::WorkspaceTrust>>,
}

impl SessionStarted {
    /// Clears what only a client with capability `commands` gets
    /// (`commands`, `command_diagnostics`, `instructions`).
    pub fn drop_commands_fields(&mut self) {
        self.commands = None;
        self.command_diagnostics.clear();
        self.instructions = None;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    pub fatal: bool,
    /// With `queue_conflict`: the entry as the server holds it now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<QueueEntry>,
    /// Extension, refusing a `checkpoint.restore`: the paths changed
    /// since the checkpoint by someone other than the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflicts: Option<Vec<String>>,
}

/// One queued prompt. Ids, revisions and positions are the server's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueEntry {
    pub queue_id: String,
    pub revision: u64,
    pub prompt: String,
    pub submitter: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// Tokens by kind (capability `usage`): `input` excludes the cached tokens,
/// so `input + cache_read + cache_write` is `usage.input_tokens`;
/// `reasoning` is part of `output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UsageDetail {
    pub input: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub output: u64,
    pub reasoning: u64,
}

/// What `turn.completed` carries for capability `usage` (flattened into it).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct TurnCost {
    /// The turn's tokens by kind (all zero when the provider reported none).
    pub usage_detail: UsageDetail,
    /// The session's tokens by kind so far, this turn included.
    pub session_usage_detail: UsageDetail,
    /// USD; `null` when the model has no price (never 0 for "unknown").
    pub cost_usd: Option<f64>,
    /// USD over the session's priced turns; `null` when none was priced.
    pub session_cost_usd: Option<f64>,
}

/// What a resumed session spent since its last clear, in its
/// `session.started` (capability `usage`): every ended turn, cancelled and
/// failed ones too, as its next `turn.completed` goes on from.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SessionSpent {
    pub session_usage_detail: UsageDetail,
    /// USD over the turns that were priced; `null` when none was.
    pub session_cost_usd: Option<f64>,
}

/// `budget.warning` (capability `usage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetWarning {
    /// The config key: `max_session_cost_usd`, `max_daily_cost_usd` or
    /// `max_turn_tokens`.
    pub budget: String,
    /// The budget (USD, or tokens for `max_turn_tokens`).
    pub limit: f64,
    /// What is spent against it.
    pub spent: f64,
    pub message: String,
}

/// `provider.retrying` (capability `retries`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderRetrying {
    /// Which retry this is, from 1.
    pub attempt: u32,
    /// Retries allowed (`provider_max_retries`).
    pub max_retries: u32,
    /// How long the server waits before sending again (the provider's
    /// `Retry-After` when it gave one, at most 30 s).
    pub wait_ms: u64,
    /// The provider's HTTP status.
    pub status: u16,
    /// The status in words: `rate limited`, `overloaded`, `server error`.
    pub reason: String,
}

/// Risk class of a tool call; `auto_approve` names the classes that run
/// without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    Read,
    Write,
    Process,
    /// Extension, an `auto_approve` class only (never a call's risk): a
    /// `bash` call that will run inside an enforced sandbox.
    Sandboxed,
    /// Extension: a call of an MCP server's tool.
    Mcp,
    /// Extension: a `web_fetch` of a host `sandbox_allowed_domains` does
    /// not list (one it lists runs without asking).
    Network,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Read => "read",
            Risk::Write => "write",
            Risk::Process => "process",
            Risk::Sandboxed => "sandboxed",
            Risk::Mcp => "mcp",
            Risk::Network => "network",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonStatus {
    pub version: String,
    pub pid: u32,
    pub components: Vec<ComponentStatus>,
    /// Extension: the daemon's `config.toml` as last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigState>,
}

/// Extension (`daemon.status.config`): the daemon's configuration file as
/// last read. `changed` and `needs_restart` are filled on the answer to
/// `reload`: the keys changed since the previous `reload` (or the start),
/// however they were applied meanwhile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigState {
    /// The file (`$SCV_HOME/config.toml`).
    pub path: String,
    /// Keys whose new values sessions started from now on use.
    #[serde(default)]
    pub changed: Vec<String>,
    /// Keys that changed but take effect only when the daemon starts
    /// again (`scv daemon stop`).
    #[serde(default)]
    pub needs_restart: Vec<String>,
    /// Why the file as it is now is not used ("PATH: line N: what"); the
    /// daemon runs on with the configuration it had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Unknown keys and the like, in words.
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentStatus {
    pub id: String,
    /// The ClawBot account; null for components that have none (MCP
    /// servers).
    pub account: Option<String>,
    pub bot_id: Option<String>,
    pub user_id: Option<String>,
    pub enabled: bool,
    pub state: ComponentState,
    pub last_success_unix_seconds: Option<u64>,
    pub error: Option<String>,
    pub restarts: u32,
    /// Effective value; older servers may omit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_tools: Option<RemoteTools>,
    /// Extension, on MCP servers: how many tools it offers now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<u64>,
    /// Extension, on MCP servers: those tools' names as the server knows
    /// them (at most 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_names: Option<Vec<String>>,
}

/// What kind of daemon component a status is about. On the wire the kind
/// is the prefix of the component's `id` (`clawbot:default`,
/// `mcp:github`); this is the one place that reads or writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ComponentKind {
    /// A ClawBot (WeChat) account.
    Clawbot,
    /// An MCP server of the daemon's configuration.
    Mcp,
    /// The user's hooks file (`$SCV_HOME/hooks.json`): `connected` when it
    /// loads, `failed` with the file and line when it does not.
    Hooks,
    /// A kind this build does not know (a newer daemon's).
    Other,
}

impl ComponentKind {
    /// The id of the component of this kind named `name`.
    pub fn id(self, name: &str) -> String {
        match self {
            ComponentKind::Clawbot => format!("clawbot:{name}"),
            ComponentKind::Mcp => format!("mcp:{name}"),
            ComponentKind::Hooks => format!("hooks:{name}"),
            ComponentKind::Other => name.to_string(),
        }
    }
}

impl ComponentStatus {
    /// The component's kind, from its id.
    pub fn kind(&self) -> ComponentKind {
        match self.id.split_once(':') {
            Some(("clawbot", _)) => ComponentKind::Clawbot,
            Some(("mcp", _)) => ComponentKind::Mcp,
            Some(("hooks", _)) => ComponentKind::Hooks,
            _ => ComponentKind::Other,
        }
    }

    /// The component's name within its kind (the account, the server).
    pub fn name(&self) -> &str {
        match self.kind() {
            ComponentKind::Other => &self.id,
            _ => self.id.split_once(':').map_or(&self.id, |(_, name)| name),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentState {
    Disabled,
    Starting,
    Connected,
    Disconnected,
    Backoff,
    Stopping,
    Stopped,
    Failed,
}
