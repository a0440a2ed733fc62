//! Elicitation (extension, capability `elicitation`): an MCP server's
//! question to the user during one of its tool calls, and the answer.
//! docs/PROTOCOL-EXTENSIONS.md describes both.

use serde::{Deserialize, Serialize};

/// `elicitation.requested`; `session_id` and `turn_id` are the envelope's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationRequested {
    pub elicitation_id: String,
    /// The MCP server asking.
    pub server: String,
    /// What it asks, in its words.
    pub message: String,
    /// Form mode: the fields to fill in (MCP's restricted JSON schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<serde_json::Value>,
    /// URL mode: the page the user opens (SCV never opens it itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// What the user chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    Accept,
    Decline,
    Cancel,
}

/// `elicitation.resolve`: the answer to an `elicitation.requested`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitationResolve {
    pub session_id: String,
    pub elicitation_id: String,
    pub action: ElicitationAction,
    /// Form mode, `accept`: the fields, matching the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Value>,
}
