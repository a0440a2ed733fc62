//! Provider failures: [`ProviderError`] (already mapped to the turn's
//! failure code), the [`Redactor`] that keeps the API key out of every
//! message, and error bodies (HTTP bodies and mid-stream error events) made
//! into one-line messages, with context-window overflow recognized by each
//! wire's codes and wording.
//!
//! A leaf of the provider layer: every wire, the HTTP sender and the stream
//! use it, and it uses none of them.

use crate::text::one_line;
use reqwest::StatusCode;
use scv_protocol::FailureCode;
use serde_json::Value;
use std::sync::Arc;

/// A failed provider request, already mapped to the turn failure code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ProviderError {
    pub code: FailureCode,
    pub message: String,
    /// The provider said the prompt does not fit its context window.
    pub context_overflow: bool,
}

impl ProviderError {
    pub(crate) fn provider(message: impl Into<String>) -> Self {
        ProviderError {
            code: FailureCode::ProviderError,
            message: message.into(),
            context_overflow: false,
        }
    }

    pub(crate) fn limit(code: FailureCode, message: impl Into<String>) -> Self {
        ProviderError {
            code,
            message: message.into(),
            context_overflow: false,
        }
    }
}

/// Removes the API key from provider text, wherever it got in. Applied to
/// the raw text before anything is cut or reflowed, so no part of a key
/// survives a cut.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    key: Option<Arc<str>>,
}

impl Redactor {
    pub(super) fn new(key: Option<&str>) -> Self {
        Redactor {
            // Too short to find reliably, and no real key is this short.
            key: key.filter(|k| k.len() >= 4).map(Into::into),
        }
    }

    pub(super) fn text(&self, text: &str) -> String {
        match &self.key {
            Some(key) => text.replace(&**key, "[redacted]"),
            None => text.to_string(),
        }
    }

    pub(super) fn error(&self, mut error: ProviderError) -> ProviderError {
        error.message = self.text(&error.message);
        error
    }
}

/// Most characters of the provider's text kept in a message.
const MAX_MESSAGE_CHARS: usize = 300;

/// An error from an HTTP error body (JSON or not).
pub(super) fn from_body(status: StatusCode, body: &[u8], redact: &Redactor) -> ProviderError {
    // Redacted first, on the raw text: nothing below may cut a key in two.
    let body = redact.text(&String::from_utf8_lossy(body));
    match serde_json::from_str::<Value>(&body) {
        Ok(value) => from_value(Some(status), value.get("error").unwrap_or(&value), redact),
        Err(_) => {
            let text = one_line(&body, MAX_MESSAGE_CHARS);
            let message = if text.is_empty() {
                format!("provider returned HTTP {status}")
            } else {
                format!("provider returned HTTP {status}: {text}")
            };
            ProviderError {
                context_overflow: mentions_context_overflow(&message),
                ..ProviderError::provider(message)
            }
        }
    }
}

/// An error from an `error` object (OpenAI's `{message, code}` or any
/// JSON).
pub(super) fn from_value(
    status: Option<StatusCode>,
    error: &Value,
    redact: &Redactor,
) -> ProviderError {
    let text = match error.get("message").and_then(|m| m.as_str()) {
        Some(message) => redact.text(message),
        None => match error {
            Value::String(s) => redact.text(s),
            other => redact.text(&other.to_string()),
        },
    };
    let code = error
        .get("code")
        .and_then(|c| c.as_str())
        .unwrap_or_default();
    let kind = error
        .get("type")
        .and_then(|c| c.as_str())
        .unwrap_or_default();
    let text = one_line(&text, MAX_MESSAGE_CHARS);
    let message = match status {
        Some(status) => format!("provider returned HTTP {status}: {text}"),
        None => format!("provider reported an error: {text}"),
    };
    ProviderError {
        context_overflow: code == "context_length_exceeded"
            || kind == "exceed_context_size_error"
            || mentions_context_overflow(&text),
        ..ProviderError::provider(message)
    }
}

fn mentions_context_overflow(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "too many tokens",
        // Anthropic
        "prompt is too long",
        "exceed context limit",
        // OpenAI Responses
        "exceeds the context window",
        // llama.cpp, LM Studio
        "exceeds the available context size",
        "context the overflows",
        "n_keep",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_become_one_line_messages() {
        let body = serde_json::json!({"message": "This model's maximum context length is 8192 tokens.\nReduce it.", "code": "context_length_exceeded"});
        let err = from_value(Some(StatusCode::BAD_REQUEST), &body, &Redactor::default());
        assert_eq!(
            err.message,
            "provider returned HTTP 400 Bad Request: This model's maximum context length is 8192 tokens. Reduce it."
        );
        assert!(err.context_overflow);
    }
}
