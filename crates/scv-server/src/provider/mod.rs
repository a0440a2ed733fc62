//! The model provider seam: a wire-neutral request (system prompt,
//! history, tool specs) goes out through one of the wires, and a
//! wire-neutral stream comes back (text and reasoning deltas to show, then
//! the assembled assistant message, usage and finish reason).
//!
//! Wires are an enum with static dispatch: each renders its own JSON
//! (tool definitions included) and parses its own events into the shared
//! [`assemble::Assembler`], which enforces the protocol's caps the same way
//! for every wire. Cancellation is structural: dropping the stream drops
//! the HTTP body.

mod assemble;
mod chat;
mod errors;
mod http;
pub(crate) mod sse;
mod stream;

pub(crate) use assemble::Delta;
pub(crate) use stream::{Reply, ResponseStream};

use crate::message::Message;
use scv_protocol::FailureCode;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The wire a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// OpenAI Chat Completions and the servers compatible with it.
    Chat,
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Arc<Value>,
}

/// One request, as every wire needs it.
pub(crate) struct Request<'a> {
    pub system: &'a str,
    pub history: &'a [Message],
    pub tools: &'a [ToolSpec],
}

/// Everything a session needs to reach its model.
#[derive(Clone)]
pub(crate) struct Provider {
    pub http: reqwest::Client,
    pub wire: Wire,
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// A stream without model output for this long fails.
    pub idle_timeout: Duration,
    /// Retries of 429/5xx before any output.
    pub max_retries: u32,
}

impl Provider {
    /// Sends the request and returns the open stream once the provider
    /// answered 200.
    pub async fn start(&self, request: &Request<'_>) -> Result<ResponseStream, ProviderError> {
        let redact = Redactor::new(self.api_key.as_deref());
        let (url, body, parser) = match self.wire {
            Wire::Chat => (
                chat::url(&self.base_url),
                chat::body(&self.model, request)?,
                stream::Parser::Chat(chat::Parser::default()),
            ),
        };
        let auth = self.api_key.as_deref().map(http::Auth::Bearer);
        let response = http::send(self, &url, body, auth, &redact).await?;
        Ok(ResponseStream::new(
            response,
            self.idle_timeout,
            redact,
            parser,
        ))
    }

    /// Serialized size of the tool definitions as this wire sends them,
    /// for request-size estimates.
    pub fn tools_bytes(&self, tools: &[ToolSpec]) -> usize {
        match self.wire {
            Wire::Chat => chat::tools_bytes(tools),
        }
    }
}

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
    pub fn provider(message: impl Into<String>) -> Self {
        ProviderError {
            code: FailureCode::ProviderError,
            message: message.into(),
            context_overflow: false,
        }
    }

    pub fn limit(code: FailureCode, message: impl Into<String>) -> Self {
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
    pub fn new(key: Option<&str>) -> Self {
        Redactor {
            // Too short to find reliably, and no real key is this short.
            key: key.filter(|k| k.len() >= 4).map(Into::into),
        }
    }

    pub fn text(&self, text: &str) -> String {
        match &self.key {
            Some(key) => text.replace(&**key, "[redacted]"),
            None => text.to_string(),
        }
    }

    pub fn error(&self, mut error: ProviderError) -> ProviderError {
        error.message = self.text(&error.message);
        error
    }
}
