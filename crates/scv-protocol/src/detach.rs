//! Sessions that outlive their client (extension, capability `detach`):
//! the requests that detach a session from its connection, attach any
//! connection to a live one and close it, and what `session.listed` says
//! of live sessions. docs/PROTOCOL-EXTENSIONS.md describes each.

use serde::{Deserialize, Serialize};

/// Most connections attached to one live session at once (the
/// connection that detached it included). One more is refused with
/// `invalid_request`.
pub const MAX_ATTACHMENTS_PER_SESSION: usize = 16;

/// Most detached sessions one daemon keeps live. One more detach is
/// refused with `invalid_request` (close one with `session.close`).
pub const MAX_DETACHED_SESSIONS: usize = 1024;

/// `session.detach`: the session, its running turn and its queue go on
/// after this connection closes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDetach {
    pub session_id: String,
}

/// `session.attach`: follow (and steer) a detached live session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionAttach {
    pub session_id: String,
}

/// `session.close`: cancel what runs and end the session's life in the
/// daemon (its journal stays).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionClose {
    pub session_id: String,
}

/// What a live session is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LiveState {
    Idle,
    Running,
    AwaitingApproval,
}

impl LiveState {
    pub fn as_str(self) -> &'static str {
        match self {
            LiveState::Idle => "idle",
            LiveState::Running => "running",
            LiveState::AwaitingApproval => "awaiting_approval",
        }
    }
}

/// The fields `session.listed` entries gain for a connection that asked
/// for capability `detach`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveInfo {
    pub state: LiveState,
    /// Connections attached now (the session's own included).
    pub attached: u32,
    /// Held by the daemon now (on a connection, or detached).
    pub live: bool,
    /// Detached: it outlives its connections until `session.close`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detached: bool,
    /// What it waits for: the first waiting approval's summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
    /// USD spent since it went live (its priced turns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// `session.attached`: what the attaching connection learns first. Its
/// envelope's `seq` is the last the session sent (live events go on at
/// `seq + 1`); its `turn_id`, the turn running now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionAttached {
    pub state: LiveState,
    /// The session's workspace, provider, model and context window (as
    /// `session.started` said them), for a client that did not see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_max_tokens: Option<u64>,
}
