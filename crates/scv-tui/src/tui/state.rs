//! What the server has told the UI, as plain data: the session, the turn,
//! the link, a call waiting for approval, the daemon's MCP servers.
//!
//! No behaviour and no imports from the rest of the UI, so any module
//! (the approval prompt, the rules, the overlays, the view) can read it
//! without depending on the App or on each other.

use scv_protocol::ComponentStatus;
use std::time::Instant;

/// One `approval.requested`, with the arguments its `tool.proposed` had.
#[derive(Debug, Clone)]
pub struct PendingApproval {
    pub approval_id: String,
    pub call_id: String,
    pub name: String,
    pub risk: String,
    pub cwd: String,
    pub summary: String,
    pub arguments: serde_json::Value,
    /// A command's place: inside the sandbox or not (`None`: not a command,
    /// or an old server).
    pub sandboxed: Option<bool>,
}

/// Whether the daemon is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    Connected,
    /// The daemon went away; reconnecting.
    Disconnected,
}

/// The session as `session.started` (then `session.configured`) describes it.
#[derive(Debug, Clone)]
pub struct SessionView {
    pub session_id: String,
    pub cwd: String,
    pub model: String,
    pub context_max_tokens: u64,
    /// `session.started.sandbox` (newer servers).
    pub sandbox: Option<String>,
    /// `session.started.sandbox_gaps`: what of the sandbox's second wall
    /// this machine lacks (commands then always ask).
    pub sandbox_gaps: Vec<String>,
    /// `session.started.provider` (newer servers).
    pub provider: Option<String>,
}

/// The turn running now, from its `turn.started`.
#[derive(Debug, Clone)]
pub struct ActiveTurn {
    pub turn_id: String,
    pub started_at: Instant,
}

/// The MCP servers as `/status` knows them.
#[derive(Debug, Clone, Default)]
pub enum McpView {
    /// Not asked yet.
    #[default]
    Unknown,
    /// `daemon.status` was asked for.
    Asking,
    /// The daemon's `mcp:NAME` components.
    Known(Vec<ComponentStatus>),
    /// The daemon could not say (e.g. `unsupported`).
    Unavailable(String),
}

/// 1234 → "1.2k", 128000 → "128k".
pub fn short(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1000..=9_999 => format!("{:.1}k", n as f64 / 1000.0),
        10_000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}
