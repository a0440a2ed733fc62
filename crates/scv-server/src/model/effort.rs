//! How hard a reasoning model thinks.

use serde::Deserialize;

/// `reasoning_effort`: each wire maps it to its own field (Chat
/// `reasoning_effort`, Responses `reasoning.effort`, an Anthropic thinking
/// budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Effort {
    Low,
    Medium,
    High,
}

impl Effort {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }
}
