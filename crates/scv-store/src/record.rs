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
    /// A record from its journal line. A `turn_ended` record (the big
    /// ones: a turn's messages) whose tag leads the line, as this build
    /// writes it, is read straight into its fields: serde reads a tagged
    /// enum by buffering the whole record first and copying every message
    /// out of that buffer again (at a 16 MiB journal, most of a resume's
    /// time). Anything else goes the general way.
    pub fn from_line(line: &[u8]) -> Result<Record, serde_json::Error> {
        if line.starts_with(br#"{"kind":"turn_ended","#) {
            return serde_json::from_slice::<TurnEndedFields>(line).map(Record::from);
        }
        serde_json::from_slice(line)
    }

    /// The record as one journal line, newline included.
    pub fn line(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut line = serde_json::to_vec(self)?;
        line.push(b'\n');
        Ok(line)
    }
}

/// [`Record::TurnEnded`]'s fields, for [`Record::from_line`] (its `kind`
/// is ignored: the caller saw it). Every field is moved into the record
/// by name, so a field added there and not here does not build.
#[derive(Deserialize)]
struct TurnEndedFields {
    turn_id: String,
    at: u64,
    seq: u64,
    outcome: Outcome,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
    messages: Vec<Value>,
    history: HistoryChange,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    tokens_per_byte: Option<f64>,
    #[serde(default)]
    spent: Option<Spent>,
    #[serde(default)]
    no_undo: Option<String>,
}

impl From<TurnEndedFields> for Record {
    fn from(f: TurnEndedFields) -> Record {
        Record::TurnEnded {
            turn_id: f.turn_id,
            at: f.at,
            seq: f.seq,
            outcome: f.outcome,
            code: f.code,
            message: f.message,
            messages: f.messages,
            history: f.history,
            usage: f.usage,
            tokens_per_byte: f.tokens_per_byte,
            spent: f.spent,
            no_undo: f.no_undo,
        }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn ended(history: HistoryChange, full: bool) -> Record {
        Record::TurnEnded {
            turn_id: "t1".into(),
            at: 7,
            seq: 9,
            outcome: Outcome::Failed,
            code: full.then(|| "provider_error".into()),
            message: full.then(|| "it broke \"here\"".into()),
            messages: vec![
                json!({"role": "user", "content": "hi\nthere"}),
                json!([1, {"a": null}]),
            ],
            history,
            usage: full.then(|| json!({"input_tokens": 3})),
            tokens_per_byte: full.then_some(0.3),
            spent: full.then(|| Spent {
                model: "m".into(),
                usage_detail: scv_protocol::UsageDetail {
                    input: 1,
                    cache_read: 2,
                    cache_write: 3,
                    output: 4,
                    reasoning: 5,
                },
                cost_usd: Some(0.5),
            }),
            no_undo: full.then(|| "disk full".into()),
        }
    }

    #[test]
    fn a_turn_ended_line_reads_back_the_same_by_either_way() {
        let histories = [
            HistoryChange::Append,
            HistoryChange::Edit { drop: 2, keep: 5 },
            HistoryChange::Snapshot(vec![json!({"role": "user"})]),
        ];
        for history in histories {
            for full in [false, true] {
                let record = ended(history.clone(), full);
                let mut line = record.line().unwrap();
                line.pop();
                assert!(line.starts_with(br#"{"kind":"turn_ended","#));
                assert_eq!(Record::from_line(&line).unwrap(), record);
                assert_eq!(serde_json::from_slice::<Record>(&line).unwrap(), record);
                // The tag elsewhere (a hand-edited line): the general way.
                let mut value: Value = serde_json::from_slice(&line).unwrap();
                let kind = value.as_object_mut().unwrap().remove("kind").unwrap();
                value.as_object_mut().unwrap().insert("kind".into(), kind);
                let moved = serde_json::to_vec(&value).unwrap();
                assert!(!moved.starts_with(b"{\"kind\""));
                assert_eq!(Record::from_line(&moved).unwrap(), record);
            }
        }
        // Broken or of another kind: as serde says.
        assert!(Record::from_line(br#"{"kind":"turn_ended","turn_id":1}"#).is_err());
        let queue = Record::Queue {
            prompts: vec!["a".into()],
            seq: 3,
        };
        let mut line = queue.line().unwrap();
        line.pop();
        assert_eq!(Record::from_line(&line).unwrap(), queue);
    }
}
