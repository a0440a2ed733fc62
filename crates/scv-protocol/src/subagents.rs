//! Subagents (capability `subagents`): child sessions a turn's `task`
//! calls start (docs/PROTOCOL-EXTENSIONS.md, "Subagents"). A child's events
//! carry its own `session_id`, `turn_id` and `seq`, and a `parent` naming
//! the call that started it; they go only to a connection that asked.

use serde::{Deserialize, Serialize};

/// The `task` call a child session runs for: the envelope's `parent` on
/// every event of a child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parent {
    pub session_id: String,
    pub turn_id: String,
    pub call_id: String,
}

/// `subagent.started`: a child session began (the first event of it, `seq`
/// 0, before its `turn.started`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubagentStarted {
    /// The definition it runs (`.scv/agents/NAME.md`); absent: the
    /// general-purpose subagent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The `task` call's short description.
    pub description: String,
    pub provider: String,
    pub model: String,
    /// The tools it may call, a subset of its parent's.
    pub tools: Vec<String>,
    /// 1 for a child of a session the client started, 2 for its child…
    pub depth: u32,
}
