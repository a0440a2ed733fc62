//! JSON-RPC errors for what the daemon refuses or fails, and for requests
//! `scv acp` refuses itself. Standard codes throughout (docs/ACP.md has
//! the table); `data.scvCode` carries the SCV code where there is one.

use agent_client_protocol::Error;
use scv_protocol::{ErrorCode, FailureCode};
use serde_json::json;

/// JSON-RPC "Invalid request".
pub const INVALID_REQUEST: i32 = -32600;
/// JSON-RPC "Invalid params".
pub const INVALID_PARAMS: i32 = -32602;
/// JSON-RPC "Internal error".
pub const INTERNAL_ERROR: i32 = -32603;
/// ACP "Resource not found" (an unknown session).
pub const RESOURCE_NOT_FOUND: i32 = -32002;

/// An SCV `error` event answering a request `scv acp` sent for a client.
pub fn refused(code: ErrorCode, message: &str) -> Error {
    let rpc = match code {
        // A prompt's images the session's model cannot take: the
        // request's parameters, not the agent, are at fault.
        ErrorCode::InvalidRequest | ErrorCode::Unsupported => INVALID_PARAMS,
        ErrorCode::SessionNotFound => RESOURCE_NOT_FOUND,
        // Not now (a model switch while a turn runs): a request invalid
        // in the session's state.
        ErrorCode::TurnActive => INVALID_REQUEST,
        _ => INTERNAL_ERROR,
    };
    Error::new(rpc, message).data(json!({ "scvCode": code.as_str() }))
}

/// A `turn.failed` other than `step_limit`: the prompt's error.
pub fn turn_failed(code: FailureCode, message: &str) -> Error {
    Error::new(
        INTERNAL_ERROR,
        scv_client::text::failure_line(code.as_str(), message, ": "),
    )
    .data(json!({ "scvCode": code.as_str() }))
}

/// A session id this process does not hold.
pub fn unknown_session(session_id: &str) -> Error {
    Error::new(
        RESOURCE_NOT_FOUND,
        format!("session {session_id} does not exist (sessions end when the SCV daemon connection is lost)"),
    )
    .data(json!({ "sessionId": session_id }))
}

/// A prompt before any `session/new`.
pub fn no_session_yet() -> Error {
    Error::new(INVALID_REQUEST, "no session yet: send session/new first")
}

/// Something wrong in the request's parameters.
pub fn invalid_params(message: impl Into<String>) -> Error {
    Error::new(INVALID_PARAMS, message)
}

/// A bound of `scv acp` reached.
pub fn limit(message: impl Into<String>) -> Error {
    Error::new(INVALID_REQUEST, message)
}

/// The daemon is unreachable, or went away while this request waited.
pub fn daemon(message: impl std::fmt::Display) -> Error {
    Error::new(INTERNAL_ERROR, format!("the SCV daemon: {message}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn codes() {
        let e = refused(ErrorCode::InvalidRequest, "cwd is not a directory");
        assert_eq!(i32::from(e.code), INVALID_PARAMS);
        assert_eq!(e.message, "cwd is not a directory");
        assert_eq!(e.data.unwrap()["scvCode"], "invalid_request");
        let e = refused(ErrorCode::TurnActive, "a turn is running");
        assert_eq!(i32::from(e.code), INVALID_REQUEST);
        let e = turn_failed(FailureCode::ProviderError, "HTTP 500");
        assert_eq!(i32::from(e.code), INTERNAL_ERROR);
        assert_eq!(e.message, "the model provider returned an error: HTTP 500");
        assert_eq!(e.data.unwrap()["scvCode"], "provider_error");
        let e = unknown_session("s1");
        assert_eq!(i32::from(e.code), RESOURCE_NOT_FOUND);
        assert_eq!(e.data.unwrap()["sessionId"], "s1");
    }
}
