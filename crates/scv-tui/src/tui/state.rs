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
    /// A subagent's call (capability `subagents`): the child session that
    /// asks (the answer names it); `None`: the session's own call.
    pub child_session: Option<String>,
    /// That subagent's description, for the prompt to say who asks.
    pub subagent: Option<String>,
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
    /// The mode the server says the session is in (`session.started`,
    /// then `session.configured`).
    pub mode: scv_protocol::Mode,
    /// The custom commands and skills the session offers as `/NAME`
    /// (capability `commands`; empty from an older server).
    pub commands: Vec<scv_protocol::CommandInfo>,
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

/// What the session's turns cost, as `turn.completed` reported it
/// (capability `usage`): `/cost`, `/status` and the status line read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Costs {
    /// One row per completed turn, oldest first.
    pub turns: Vec<TurnCostRow>,
    /// The session's tokens by kind, as the server sums them.
    pub session: scv_protocol::UsageDetail,
    /// USD over the session's priced turns; `None`: none was priced.
    pub session_usd: Option<f64>,
    /// The latest turn's model had no price.
    pub unpriced: bool,
    /// The latest `budget.warning`'s message (`/status`, `/cost`).
    pub warning: Option<String>,
    /// Its budget's key, for the status line.
    pub warning_budget: Option<String>,
}

/// One completed turn's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnCostRow {
    /// The turn's number in the session, from 1.
    pub number: usize,
    pub steps: u32,
    pub detail: scv_protocol::UsageDetail,
    /// `None`: no price.
    pub usd: Option<f64>,
}

/// `$1.23`, `$0.0042` (a cheap turn never reads `$0.00`).
pub fn usd(amount: f64) -> String {
    if amount >= 1.0 || amount == 0.0 {
        format!("${amount:.2}")
    } else {
        format!("${amount:.4}")
    }
}

impl Costs {
    /// The status line's figure: `$0.0123`, `no price`, or nothing before
    /// the first turn (or from a server without capability `usage`).
    pub fn compact(&self) -> Option<String> {
        match (self.session_usd, self.unpriced, self.turns.is_empty()) {
            (_, _, true) => None,
            (Some(usd_total), false, _) => Some(usd(usd_total)),
            (Some(usd_total), true, _) => Some(format!("{}+ (no price)", usd(usd_total))),
            (None, _, _) => Some("no price".into()),
        }
    }
}
