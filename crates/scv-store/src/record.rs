//! The journal's records: one JSON object per line, tagged by `kind`.
//! The first record of a journal is its [`Header`]; the rest follow the
//! session's life. Records of a kind this build does not know are kept in
//! the file and skipped when replaying, so a newer server's journal still
//! resumes here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The journal format this build writes (the header's `v`).
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub v: u32,
    pub session_id: String,
    pub cwd: String,
    pub created: u64,
    pub provider: String,
    pub model: String,
    /// The session's own provider URL (`session.start.base_url`), without
    /// any user or password in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The session runs no tools.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_tools: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
    /// A subagent's: the `task` call that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<scv_protocol::Parent>,
}

/// Where a fork came from: the protocol's own type (same fields).
pub use scv_protocol::ForkedFrom;

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    Cancelled,
    Failed,
}

/// What the canonical history became at the end of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryChange {
    /// The turn's own messages were appended to it (the usual case).
    Append,
    /// Of the history as the turn found it, the first `drop` messages went
    /// (trimming) and the next `keep` stayed; then the turn's messages
    /// were appended.
    Edit { drop: u64, keep: u64 },
    /// It is this, whole (after compaction, trimming, a turn dropped for
    /// not fitting).
    Snapshot(Vec<Value>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Session(Header),
    /// A turn began with this prompt.
    TurnStarted {
        turn_id: String,
        prompt: String,
        at: u64,
        seq: u64,
    },
    /// A turn ended (`turn.completed`, `turn.cancelled`, `turn.failed`).
    TurnEnded {
        turn_id: String,
        at: u64,
        seq: u64,
        outcome: Outcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// The messages the turn added (prompt, answers, tool calls and
        /// their results), opaque to the store.
        messages: Vec<Value>,
        history: HistoryChange,
        /// The turn's usage as `turn.completed` reported it, opaque.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Value>,
        /// The token estimate's calibration after the turn, so a resumed
        /// session compacts when this one would have.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_per_byte: Option<f64>,
        /// What the turn spent (whatever its outcome): `scv usage` reads
        /// it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spent: Option<Spent>,
        /// The turn changed files without a checkpoint, and why ("no undo
        /// point: disk full …"): `/undo` says so after a resume too.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        no_undo: Option<String>,
    },
    /// `session.clear`: history, queue and transcript start afresh.
    Cleared {
        at: u64,
        seq: u64,
    },
    /// `session.configure`: another provider or model from here on.
    Configured {
        provider: String,
        model: String,
        at: u64,
        seq: u64,
        /// The history after the switch, when it changed (provider data
        /// of another wire dropped).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        history: Option<Vec<Value>>,
        /// `max_session_cost_usd` as `session.configure` set it, when it
        /// did (it holds for the rest of the session, across a resume).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_session_cost_usd: Option<f64>,
    },
    /// The prompts waiting in the queue now, in order (`seq`: the queue
    /// event that made it so).
    Queue {
        prompts: Vec<String>,
        #[serde(default)]
        seq: u64,
    },
    /// A checkpoint's conversation restored: the turns from `turn_id` on
    /// are gone and the history is `history` (what it was before that
    /// turn started).
    Rewound {
        turn_id: String,
        at: u64,
        seq: u64,
        history: Vec<Value>,
    },
    /// A record of a kind this build does not know.
    #[serde(other)]
    Unknown,
}

impl Record {
    /// The record as one journal line, newline included.
    pub fn line(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut line = serde_json::to_vec(self)?;
        line.push(b'\n');
        Ok(line)
    }
}

/// What one turn spent, as the server counted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// The model the turn ran on.
    pub model: String,
    /// Tokens by kind (the protocol's `usage_detail`: `input`,
    /// `cache_read`, `cache_write`, `output`, `reasoning`).
    pub usage_detail: scv_protocol::UsageDetail,
    /// USD; `None`: the model had no price.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

/// Longest title kept for a session (characters).
const TITLE_CHARS: usize = 100;

/// A session's title from its first prompt: the first non-blank line,
/// shortened.
pub fn title_of(prompt: &str) -> String {
    let line = prompt
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    match line.char_indices().nth(TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}
