//! Client messages. Every frame carries `type` and `request_id`; the rest of
//! the fields depend on the type. Unknown fields are ignored.

use crate::checkpoints::{CheckpointDiff, CheckpointList, CheckpointRestore};
use crate::codes::ErrorCode;
use crate::sessions::{SessionDelete, SessionFork, SessionList, SessionResume};
use serde::{Deserialize, Serialize};

/// One client frame: the request id plus the typed message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientFrame {
    pub request_id: String,
    #[serde(flatten)]
    pub message: ClientMessage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ClientMessage {
    #[serde(rename = "initialize")]
    Initialize(Initialize),
    #[serde(rename = "daemon.control")]
    DaemonControl(DaemonControl),
    #[serde(rename = "session.start")]
    SessionStart(SessionStart),
    #[serde(rename = "turn.start")]
    TurnStart(TurnStart),
    #[serde(rename = "turn.cancel")]
    TurnCancel(TurnCancel),
    #[serde(rename = "queue.update")]
    QueueUpdate(QueueUpdate),
    #[serde(rename = "queue.move")]
    QueueMove(QueueMove),
    #[serde(rename = "queue.remove")]
    QueueRemove(QueueRemove),
    #[serde(rename = "session.pause")]
    SessionPause(SessionPause),
    #[serde(rename = "approval.resolve")]
    ApprovalResolve(ApprovalResolve),
    #[serde(rename = "session.clear")]
    SessionClear(SessionClear),
    /// Extension: switch provider and/or model of an idle session
    /// (docs/PROTOCOL-EXTENSIONS.md).
    #[serde(rename = "session.configure")]
    SessionConfigure(SessionConfigure),
    /// Extension (capability `sessions`): the stored sessions.
    #[serde(rename = "session.list")]
    SessionList(SessionList),
    /// Extension (capability `sessions`): a stored session, live again
    /// on this connection.
    #[serde(rename = "session.resume")]
    SessionResume(SessionResume),
    /// Extension (capability `sessions`): a new session holding a stored
    /// one's history.
    #[serde(rename = "session.fork")]
    SessionFork(SessionFork),
    /// Extension (capability `sessions`): a stored session removed.
    #[serde(rename = "session.delete")]
    SessionDelete(SessionDelete),
    #[serde(rename = "checkpoint.list")]
    CheckpointList(CheckpointList),
    #[serde(rename = "checkpoint.diff")]
    CheckpointDiff(CheckpointDiff),
    #[serde(rename = "checkpoint.restore")]
    CheckpointRestore(CheckpointRestore),
    /// Extension: the models the session's provider lists.
    #[serde(rename = "models.list")]
    ModelsList(ModelsList),
    /// Extension (capability `trust`): trust the session's workspace.
    #[serde(rename = "workspace.trust")]
    WorkspaceTrust(crate::trust::WorkspaceTrustRequest),
    /// Extension (capability `permissions`): the rules of the settings
    /// files.
    #[serde(rename = "permissions.list")]
    PermissionsList(crate::permissions::PermissionsList),
    /// Extension (capability `permissions`): keep an `allow` rule.
    #[serde(rename = "permissions.keep")]
    PermissionsKeep(crate::permissions::PermissionsEdit),
    /// Extension (capability `permissions`): remove a kept rule.
    #[serde(rename = "permissions.remove")]
    PermissionsRemove(crate::permissions::PermissionsEdit),
    /// Extension (capability `elicitation`): the answer to an MCP
    /// server's question.
    #[serde(rename = "elicitation.resolve")]
    ElicitationResolve(crate::elicitation::ElicitationResolve),
    /// Extension (capability `processes`): stop a background process.
    #[serde(rename = "process.kill")]
    ProcessKill(crate::processes::ProcessRequest),
    /// Extension (capability `processes`): a session's background
    /// processes.
    #[serde(rename = "process.list")]
    ProcessList(crate::processes::ProcessList),
    /// Extension (capability `processes`): the end of a background
    /// process's output.
    #[serde(rename = "process.peek")]
    ProcessPeek(crate::processes::ProcessRequest),
    /// Extension (capability `detach`): the session outlives this
    /// connection.
    #[serde(rename = "session.detach")]
    SessionDetach(crate::detach::SessionDetach),
    /// Extension (capability `detach`): follow a detached live session.
    #[serde(rename = "session.attach")]
    SessionAttach(crate::detach::SessionAttach),
    /// Extension (capability `detach`): end a live session's life.
    #[serde(rename = "session.close")]
    SessionClose(crate::detach::SessionClose),
}

/// `models.list` (extension): what the session's provider offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelsList {
    pub session_id: String,
}

/// `daemon.control`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DaemonControl {
    pub command: DaemonCommand,
}

/// `turn.start`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnStart {
    pub session_id: String,
    pub prompt: String,
    /// Extension: a prompt `/NAME args` runs the custom command or skill
    /// NAME (an unknown one is `invalid_request`). Absent or false: the
    /// prompt is sent as written, whatever it starts with.
    #[serde(default, skip_serializing_if = "is_false")]
    pub command: bool,
    /// Extension (capability `images`): images sent with the prompt
    /// (`crate::images` has the shape and bounds). Ignored on a
    /// connection that did not ask for the capability.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<crate::images::PromptImage>,
}

/// `turn.cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnCancel {
    pub session_id: String,
    pub turn_id: String,
}

/// `queue.update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueUpdate {
    pub session_id: String,
    pub queue_id: String,
    pub revision: u64,
    pub prompt: String,
}

/// `queue.move`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueMove {
    pub session_id: String,
    pub queue_id: String,
    pub revision: u64,
    /// Move before this entry; absent (or null) moves to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_queue_id: Option<String>,
}

/// `queue.remove`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueRemove {
    pub session_id: String,
    pub queue_id: String,
    pub revision: u64,
}

/// `session.pause`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPause {
    pub session_id: String,
    pub paused: bool,
}

/// `approval.resolve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalResolve {
    pub session_id: String,
    pub approval_id: String,
    pub approved: bool,
}

/// `session.clear`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionClear {
    pub session_id: String,
}

/// `session.configure` (extension).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionConfigure {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A new `max_session_cost_usd` for the rest of this session (capability
    /// `usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_session_cost_usd: Option<f64>,
    /// `plan` or `default` for the next turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<crate::customize::Mode>,
    /// How hard the model reasons from the next turn: `low`, `medium`,
    /// `high`, `none` (not asked), or `default` (config.toml's
    /// `reasoning_effort` again). Not with `provider` / `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
}

impl ClientMessage {
    /// The wire name of this message type.
    pub fn type_name(&self) -> &'static str {
        match self {
            ClientMessage::Initialize(_) => "initialize",
            ClientMessage::DaemonControl(_) => "daemon.control",
            ClientMessage::SessionStart(_) => "session.start",
            ClientMessage::TurnStart(_) => "turn.start",
            ClientMessage::TurnCancel(_) => "turn.cancel",
            ClientMessage::QueueUpdate(_) => "queue.update",
            ClientMessage::QueueMove(_) => "queue.move",
            ClientMessage::QueueRemove(_) => "queue.remove",
            ClientMessage::SessionPause(_) => "session.pause",
            ClientMessage::ApprovalResolve(_) => "approval.resolve",
            ClientMessage::SessionClear(_) => "session.clear",
            ClientMessage::SessionConfigure(_) => "session.configure",
            ClientMessage::SessionList(_) => "session.list",
            ClientMessage::SessionResume(_) => "session.resume",
            ClientMessage::SessionFork(_) => "session.fork",
            ClientMessage::SessionDelete(_) => "session.delete",
            ClientMessage::CheckpointList(_) => "checkpoint.list",
            ClientMessage::CheckpointDiff(_) => "checkpoint.diff",
            ClientMessage::CheckpointRestore(_) => "checkpoint.restore",
            ClientMessage::ModelsList(_) => "models.list",
            ClientMessage::WorkspaceTrust(_) => "workspace.trust",
            ClientMessage::PermissionsList(_) => "permissions.list",
            ClientMessage::PermissionsKeep(_) => "permissions.keep",
            ClientMessage::PermissionsRemove(_) => "permissions.remove",
            ClientMessage::ElicitationResolve(_) => "elicitation.resolve",
            ClientMessage::ProcessKill(_) => "process.kill",
            ClientMessage::ProcessList(_) => "process.list",
            ClientMessage::ProcessPeek(_) => "process.peek",
            ClientMessage::SessionDetach(_) => "session.detach",
            ClientMessage::SessionAttach(_) => "session.attach",
            ClientMessage::SessionClose(_) => "session.close",
        }
    }
}

/// Every message type a client may send, in document order.
pub const CLIENT_MESSAGE_TYPES: &[&str] = &[
    "initialize",
    "daemon.control",
    "session.start",
    "turn.start",
    "queue.update",
    "queue.move",
    "queue.remove",
    "session.pause",
    "turn.cancel",
    "approval.resolve",
    "session.clear",
    "session.configure",
    "session.list",
    "session.resume",
    "session.fork",
    "session.delete",
    "session.close",
    "checkpoint.list",
    "checkpoint.diff",
    "checkpoint.restore",
    "models.list",
    "workspace.trust",
    "elicitation.resolve",
    "permissions.list",
    "permissions.keep",
    "permissions.remove",
    "process.kill",
    "process.peek",
    "process.list",
    "session.detach",
    "session.attach",
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Initialize {
    pub protocol_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<PeerInfo>,
    /// Extension: what else the client wants to receive
    /// (docs/PROTOCOL-EXTENSIONS.md). Absent: protocol version 2 as the
    /// document writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
}

/// Optional parts of the protocol a connection opts into.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// `reasoning.delta` events: the model's reasoning as it streams.
    #[serde(default)]
    pub reasoning: bool,
    /// Durable sessions: `session.list`, `session.resume`, `session.fork`,
    /// `session.delete` and the events answering them; `session.warning`
    /// when a session's journal cannot be written (a full disk) and when
    /// it caught up.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sessions: bool,
    /// Checkpoints: `checkpoint.created` and `checkpoint.failed` events, `checkpoint.list`,
    /// `checkpoint.diff`, `checkpoint.restore`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub checkpoints: bool,
    /// Usage by kind and cost on `turn.completed`, and `budget.warning`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub usage: bool,
    /// The session's custom commands and skills on `session.started`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub commands: bool,
    /// `hook.message` events.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hooks: bool,
    /// Child sessions' events (`parent` on the envelope,
    /// `subagent.started`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub subagents: bool,
    /// `provider.retrying` events: a transient provider refusal and the
    /// wait before the request goes again.
    #[serde(default, skip_serializing_if = "is_false")]
    pub retries: bool,
    /// `usage.updated` events: each provider step's usage as it arrives.
    #[serde(default, skip_serializing_if = "is_false")]
    pub step_usage: bool,
    /// Workspace trust: `session.started.trust` and `workspace.trust`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub trust: bool,
    /// A request a budget refused fails its turn with `turn.failed` code
    /// `budget_exceeded` (`step_limit` without it).
    #[serde(default, skip_serializing_if = "is_false")]
    pub budgets: bool,
    /// `daemon.status` with the extension fields: `status.config` and
    /// MCP components' `tools` / `tool_names` (without it, exactly the
    /// protocol document's fields).
    #[serde(default, skip_serializing_if = "is_false")]
    pub daemon_status: bool,
    /// MCP servers' questions: `elicitation.requested` and
    /// `elicitation.resolve`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub elicitation: bool,
    /// Kept permission rules: `permissions.list`, `permissions.keep`,
    /// `permissions.remove` and `permissions.listed`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub permissions: bool,
    /// Background processes: `process.kill`, `process.peek` and
    /// `process.state`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub processes: bool,
    /// Sessions that outlive their client: `session.detach`,
    /// `session.attach`, `session.close`, and the live fields of
    /// `session.listed`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub detach: bool,
    /// Images with prompts: `turn.start.images`, and client frames up to
    /// `images::MAX_IMAGES_CLIENT_FRAME_BYTES`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub images: bool,
}

/// Name and version of a client or server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStart {
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_tools: bool,
    /// Extension: MCP servers for this session only, by name; each value
    /// is what a `[mcp_servers.NAME]` table holds (docs/PROTOCOL-EXTENSIONS.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    /// Extension: start in `plan` mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<crate::customize::Mode>,
    /// Extension: more directories the session's tools may read (absolute,
    /// existing; writable where config.toml's
    /// `additional_directories_writable` says), ACP's
    /// `additionalDirectories`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<String>,
}

impl Capabilities {
    /// None asked for: a client names what it wants over this
    /// (`Capabilities { sessions: true, ..Capabilities::NONE }`).
    pub const NONE: Capabilities = Capabilities {
        reasoning: false,
        sessions: false,
        checkpoints: false,
        usage: false,
        commands: false,
        hooks: false,
        subagents: false,
        retries: false,
        step_usage: false,
        trust: false,
        budgets: false,
        daemon_status: false,
        elicitation: false,
        permissions: false,
        processes: false,
        detach: false,
        images: false,
    };
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// `daemon.control` commands, tagged by `action`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum DaemonCommand {
    Status,
    Reload,
    ClawbotSet {
        #[serde(default = "default_account")]
        account: String,
        enabled: bool,
        /// Absent or null leaves the saved workspace unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workspace: Option<String>,
        /// Absent leaves the saved value unchanged.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remote_tools: Option<RemoteTools>,
    },
    ClawbotLogout {
        #[serde(default = "default_account")]
        account: String,
    },
}

fn default_account() -> String {
    "default".to_string()
}

/// Who may use tools in ClawBot remote sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteTools {
    None,
    Owner,
}

/// Why a client line could not become a [`ClientFrame`]. Carries the request
/// id when the line had one, so the error can answer it.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameError {
    pub code: ErrorCode,
    pub message: String,
    pub request_id: Option<String>,
}

impl ClientFrame {
    /// Parses one line (without its newline). Not JSON → `invalid_json`;
    /// not an object, no `type`, an unknown `type`, a missing `request_id` or
    /// ill-typed fields → `invalid_request`.
    pub fn parse(line: &[u8]) -> Result<ClientFrame, FrameError> {
        let value: serde_json::Value = serde_json::from_slice(line).map_err(|err| FrameError {
            code: ErrorCode::InvalidJson,
            message: format!("invalid JSON: {err}"),
            request_id: None,
        })?;
        let invalid = |message: String, request_id: Option<String>| FrameError {
            code: ErrorCode::InvalidRequest,
            message,
            request_id,
        };
        let serde_json::Value::Object(object) = &value else {
            return Err(invalid("a frame must be a JSON object".into(), None));
        };
        let request_id = match object.get("request_id") {
            Some(serde_json::Value::String(id)) => Some(id.clone()),
            Some(_) => return Err(invalid("request_id must be a string".into(), None)),
            None => None,
        };
        let kind = match object.get("type") {
            Some(serde_json::Value::String(kind)) => kind.clone(),
            Some(_) => return Err(invalid("type must be a string".into(), request_id)),
            None => return Err(invalid("missing field `type`".into(), request_id)),
        };
        if !CLIENT_MESSAGE_TYPES.contains(&kind.as_str()) {
            return Err(invalid(
                format!("unknown message type `{kind}`"),
                request_id,
            ));
        }
        let Some(request_id) = request_id else {
            return Err(invalid("missing field `request_id`".into(), None));
        };
        match serde_json::from_value::<ClientMessage>(value) {
            Ok(message) => Ok(ClientFrame {
                request_id,
                message,
            }),
            Err(err) => Err(invalid(format!("invalid {kind}: {err}"), Some(request_id))),
        }
    }
}
