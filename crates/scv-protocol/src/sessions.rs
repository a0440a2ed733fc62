//! Durable sessions (extension, capability `sessions`): the requests that
//! list, resume, fork and delete stored sessions, and what their events
//! carry. docs/PROTOCOL-EXTENSIONS.md describes each.

use serde::{Deserialize, Serialize};

/// Default and largest `limit` of `session.list`.
pub const DEFAULT_SESSION_LIST_LIMIT: usize = 50;
pub const MAX_SESSION_LIST_LIMIT: usize = 1000;

/// `session.list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionList {
    /// Only sessions of this workspace (compared after canonicalizing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// At most this many (default 50, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// `session.resume`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionResume {
    pub session_id: String,
    /// Resume with another provider definition or model (as
    /// `session.configure` would switch them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Extension: the resumed session's additional directories (as
    /// `session.start` takes them; not stored with the session).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<String>,
}

/// `session.fork`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionFork {
    pub session_id: String,
    /// The last turn the fork keeps (default: every turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// `session.delete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDelete {
    pub session_id: String,
}

/// One stored session as `session.listed` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSession {
    pub session_id: String,
    pub cwd: String,
    /// The first prompt, shortened; empty before the first turn.
    pub title: String,
    pub created_unix_seconds: u64,
    pub updated_unix_seconds: u64,
    /// Turns that ended.
    pub turns: u64,
    pub provider: String,
    pub model: String,
    /// Live on some connection now (resume refuses it; fork does not).
    pub open: bool,
    /// Why the journal cannot be read; such a session can only be deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
    /// Extension (subagents): a child session's, the `task` call that
    /// started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<crate::subagents::Parent>,
    /// A fork's source (the session and the last turn it kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
    /// Extension (capability `detach`): `state`, `attached`, `live` (and
    /// `waiting_for`, `cost_usd`) of a session held by the daemon.
    #[serde(default, flatten, skip_serializing_if = "Option::is_none")]
    pub live: Option<crate::detach::LiveInfo>,
}

/// Where a fork came from (`session.started.forked_from`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkedFrom {
    pub session_id: String,
    /// The last turn kept; absent when every turn was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// How a past turn ended, in a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    Completed,
    Cancelled,
    Failed,
    /// The server stopped while the turn ran (a crash, a kill); it is not
    /// part of the history and never runs again by itself.
    Interrupted,
}

/// One entry of `session.transcript`: what a client draws of the past
/// conversation, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TranscriptItem {
    /// A prompt that started a turn.
    User { turn_id: String, text: String },
    /// An answer of the model (one per provider step that wrote text).
    Assistant { turn_id: String, text: String },
    /// A tool call with its result.
    Tool {
        turn_id: String,
        call_id: String,
        name: String,
        /// The arguments as the model wrote them (JSON text).
        arguments: String,
        output: String,
        success: bool,
        /// `output` was cut for the transcript (the model saw more).
        truncated: bool,
    },
    /// The turn's end.
    TurnEnded {
        turn_id: String,
        outcome: TurnOutcome,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

impl TranscriptItem {
    pub fn turn_id(&self) -> &str {
        match self {
            TranscriptItem::User { turn_id, .. }
            | TranscriptItem::Assistant { turn_id, .. }
            | TranscriptItem::Tool { turn_id, .. }
            | TranscriptItem::TurnEnded { turn_id, .. } => turn_id,
        }
    }
}

/// `session.warning` (capability `sessions`): the session is no longer
/// being saved, or is saved again. Its `session_id` is the envelope's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionWarning {
    pub code: SessionWarningCode,
    /// In words, for a person.
    pub message: String,
}

/// What a `session.warning` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionWarningCode {
    /// A journal write failed (the disk under `$SCV_HOME` is full): turns
    /// go on, and what the journal lacks is kept in memory. Sent once,
    /// until `journal_recovered`.
    JournalFailed,
    /// What the journal lacked is written and durable: the session
    /// resumes whole again.
    JournalRecovered,
    /// A code this build does not know (a newer server's).
    #[serde(other)]
    Other,
}
