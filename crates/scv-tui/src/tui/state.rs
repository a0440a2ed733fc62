//! What the server has told the UI, as plain data: the session, the turn,
//! the link, a call waiting for approval, the daemon's MCP servers.
//!
//! No behaviour and no imports from the rest of the UI, so any module
//! (the approval prompt, the rules, the overlays, the view) can read it
//! without depending on the App or on each other.

use scv_protocol::ComponentStatus;
use std::time::Instant;

/// An approval the server waits for: the session client's one type.
pub use scv_client::session::Approval as PendingApproval;

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
    /// `session.started.sandbox_network`: whether sandboxed commands may
    /// use the network (`None`: not reported, or unconfined).
    pub sandbox_network: Option<bool>,
    /// `session.started.provider` (newer servers).
    pub provider: Option<String>,
    /// The mode the server says the session is in (`session.started`,
    /// then `session.configured`).
    pub mode: scv_protocol::Mode,
    /// The custom commands and skills the session offers as `/NAME`
    /// (capability `commands`; empty from an older server).
    pub commands: Vec<scv_protocol::CommandInfo>,
    /// The instruction files the model reads (`CLAUDE.md`, `AGENTS.md`…,
    /// in order; capability `commands`).
    pub instructions: Vec<String>,
    /// The session is not being saved (`session.warning`
    /// `journal_failed`, until `journal_recovered`): what the status line
    /// says.
    pub not_saved: Option<String>,
}

/// The status line while a session's journal cannot be written for want
/// of room (the server's own words start so).
pub const NOT_SAVED_DISK_FULL: &str = "not saved: the disk under SCV_HOME is full";

/// What the status line says for a `journal_failed` warning's message.
pub fn not_saved_status(message: &str) -> String {
    if message.starts_with(NOT_SAVED_DISK_FULL) {
        NOT_SAVED_DISK_FULL.to_string()
    } else {
        "not saved: the session's journal cannot be written".to_string()
    }
}

/// The turn running now, from its `turn.started`.
#[derive(Debug, Clone)]
pub struct ActiveTurn {
    pub turn_id: String,
    pub started_at: Instant,
    /// When the server last said anything of this turn.
    pub last_heard: Instant,
    /// Its tool calls running now (the provider is not what it waits for).
    pub tools_running: usize,
    /// A provider refusal being waited out (`provider.retrying`).
    pub retry: Option<Retrying>,
    /// Its tokens so far (`usage.updated`), until `turn.completed` counts
    /// them into the session's.
    pub usage: scv_protocol::Usage,
}

/// A retry the server waits for: until when, and why in words.
#[derive(Debug, Clone)]
pub struct Retrying {
    pub until: Instant,
    pub why: String,
}

/// Silence from the provider this long is shown as waiting for it.
pub const WAITING_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

impl ActiveTurn {
    pub fn new(turn_id: String, now: Instant) -> ActiveTurn {
        ActiveTurn {
            turn_id,
            started_at: now,
            last_heard: now,
            tools_running: 0,
            retry: None,
            usage: scv_protocol::Usage::default(),
        }
    }

    /// An event of this turn arrived at `now`.
    pub fn heard(&mut self, updates: &[scv_client::session::Update], now: Instant) {
        use scv_client::session::{ToolChange, Update};
        self.last_heard = now;
        self.retry = None;
        for update in updates {
            match update {
                Update::Retrying(retry) => {
                    self.retry = Some(Retrying {
                        until: now + std::time::Duration::from_millis(retry.wait_ms),
                        why: format!(
                            "{} {}, {} of {}",
                            retry.status, retry.reason, retry.attempt, retry.max_retries
                        ),
                    });
                }
                Update::Tool(ToolChange::Running { .. }) => self.tools_running += 1,
                Update::Tool(ToolChange::Done { .. }) => {
                    self.tools_running = self.tools_running.saturating_sub(1)
                }
                _ => {}
            }
        }
    }

    /// What the status line says of it at `now`: a retry counting down,
    /// a provider that has been silent, or how long it has worked.
    pub fn status(&self, now: Instant, asking: bool) -> String {
        if let Some(retry) = &self.retry {
            let left = retry.until.saturating_duration_since(now);
            // Whole seconds, rounded up: "in 0 s" would read as stuck.
            let secs = left.as_millis().div_ceil(1000);
            return if secs == 0 {
                format!("retrying now ({})", retry.why)
            } else {
                format!("retrying in {secs} s ({})", retry.why)
            };
        }
        let silent = now.saturating_duration_since(self.last_heard);
        if self.tools_running == 0 && !asking && silent >= WAITING_AFTER {
            return format!("waiting for the provider {} s", silent.as_secs());
        }
        format!(
            "working {}s",
            now.saturating_duration_since(self.started_at).as_secs()
        )
    }
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

impl McpView {
    /// The MCP and hooks components of a `daemon.status` answer.
    pub fn known(status: scv_protocol::DaemonStatus) -> McpView {
        use scv_protocol::ComponentKind::{Hooks, Mcp};
        let shown = status.components.into_iter();
        McpView::Known(shown.filter(|c| matches!(c.kind(), Mcp | Hooks)).collect())
    }
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
    /// The session's budget as `/budget AMOUNT` set it (`None`:
    /// config.toml's, which this screen is not told).
    pub budget: Option<f64>,
    /// The session's figures include turns from before this view (a
    /// resumed session's, `session.started.session_usage_detail`).
    pub earlier: bool,
}

impl Costs {
    /// Whether there is anything to show: a turn here, or earlier ones.
    pub fn any(&self) -> bool {
        self.earlier || !self.turns.is_empty()
    }

    /// The session's tokens as the status line counts them: input (cache
    /// reads and writes included) and output.
    pub fn session_usage(&self) -> scv_protocol::Usage {
        let s = self.session;
        scv_protocol::Usage {
            input_tokens: s.input + s.cache_read + s.cache_write,
            output_tokens: s.output,
        }
    }
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
        match (self.session_usd, self.unpriced, !self.any()) {
            (_, _, true) => None,
            (Some(usd_total), false, _) => Some(usd(usd_total)),
            (Some(usd_total), true, _) => Some(format!("{}+ (no price)", usd(usd_total))),
            (None, _, _) => Some("no price".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scv_client::session::{ToolChange, Update};
    use scv_protocol::ProviderRetrying;
    use std::time::Duration;

    #[test]
    fn the_status_counts_a_retry_down_and_names_a_silent_provider() {
        let start = Instant::now();
        let mut turn = ActiveTurn::new("t".into(), start);
        assert_eq!(
            turn.status(start + Duration::from_secs(3), false),
            "working 3s"
        );
        turn.heard(
            &[Update::Retrying(ProviderRetrying {
                attempt: 2,
                max_retries: 3,
                wait_ms: 2_000,
                status: 429,
                reason: "rate limited".into(),
            })],
            start + Duration::from_secs(3),
        );
        let at = |ms: u64| start + Duration::from_secs(3) + Duration::from_millis(ms);
        assert_eq!(
            turn.status(at(0), false),
            "retrying in 2 s (429 rate limited, 2 of 3)"
        );
        assert_eq!(
            turn.status(at(1_500), false),
            "retrying in 1 s (429 rate limited, 2 of 3)"
        );
        assert_eq!(
            turn.status(at(2_000), false),
            "retrying now (429 rate limited, 2 of 3)"
        );
        // Anything else of the turn ends the retry; then silence counts.
        turn.heard(&[Update::Text("x".into())], at(2_100));
        assert_eq!(turn.status(at(5_000), false), "working 8s");
        assert_eq!(
            turn.status(at(2_100) + WAITING_AFTER + Duration::from_secs(30), false),
            "waiting for the provider 40 s"
        );
        // Not while a tool runs or an approval waits: that is not the
        // provider's silence.
        assert!(turn
            .status(at(2_100) + Duration::from_secs(40), true)
            .starts_with("working"));
        turn.heard(
            &[Update::Tool(ToolChange::Running {
                call_id: "c".into(),
                name: "bash".into(),
            })],
            at(2_100),
        );
        assert!(turn
            .status(at(2_100) + Duration::from_secs(40), false)
            .starts_with("working"));
    }
}
