//! Stable error codes (`error` events) and turn failure codes (`turn.failed`).

use serde::{Deserialize, Serialize};
use std::fmt;

/// Codes of the `error` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidJson,
    NotInitialized,
    VersionMismatch,
    InvalidRequest,
    SessionNotFound,
    TurnActive,
    TurnNotFound,
    ApprovalNotFound,
    QueueNotFound,
    QueueConflict,
    Unsupported,
    ComponentError,
    InternalError,
}

/// Codes of the `turn.failed` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCode {
    ProviderError,
    ContextLimit,
    StepLimit,
    HistoryLimit,
    ResponseLimit,
    ToolLimit,
    InternalError,
    /// Extension (capability `budgets`): a spending budget stopped the
    /// turn; a client that did not ask sees `step_limit`.
    BudgetExceeded,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::NotInitialized => "not_initialized",
            ErrorCode::VersionMismatch => "version_mismatch",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::SessionNotFound => "session_not_found",
            ErrorCode::TurnActive => "turn_active",
            ErrorCode::TurnNotFound => "turn_not_found",
            ErrorCode::ApprovalNotFound => "approval_not_found",
            ErrorCode::QueueNotFound => "queue_not_found",
            ErrorCode::QueueConflict => "queue_conflict",
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::ComponentError => "component_error",
            ErrorCode::InternalError => "internal_error",
        }
    }
}

impl FailureCode {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::ProviderError => "provider_error",
            FailureCode::ContextLimit => "context_limit",
            FailureCode::StepLimit => "step_limit",
            FailureCode::HistoryLimit => "history_limit",
            FailureCode::ResponseLimit => "response_limit",
            FailureCode::ToolLimit => "tool_limit",
            FailureCode::InternalError => "internal_error",
            FailureCode::BudgetExceeded => "budget_exceeded",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_as_their_names() {
        for code in [
            ErrorCode::InvalidJson,
            ErrorCode::NotInitialized,
            ErrorCode::VersionMismatch,
            ErrorCode::InvalidRequest,
            ErrorCode::SessionNotFound,
            ErrorCode::TurnActive,
            ErrorCode::TurnNotFound,
            ErrorCode::ApprovalNotFound,
            ErrorCode::QueueNotFound,
            ErrorCode::QueueConflict,
            ErrorCode::Unsupported,
            ErrorCode::ComponentError,
            ErrorCode::InternalError,
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
        for code in [
            FailureCode::ProviderError,
            FailureCode::ContextLimit,
            FailureCode::StepLimit,
            FailureCode::HistoryLimit,
            FailureCode::ResponseLimit,
            FailureCode::ToolLimit,
            FailureCode::InternalError,
            FailureCode::BudgetExceeded,
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }
}
