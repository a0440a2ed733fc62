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

mod anthropic;
mod assemble;
mod chat;
mod errors;
pub mod fuzzing;
mod http;
mod responses;
pub(crate) mod sse;
mod stream;

pub(crate) use assemble::{Delta, End};

/// Serializes a request body; our own types always serialize.
fn encode<T: serde::Serialize>(body: &T) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(body)
        .map_err(|err| ProviderError::provider(format!("cannot encode request: {err}")))
}
pub(crate) use stream::{Reply, ResponseStream};

use crate::model::{Effort, Message, ToolSpec, Wire};
use scv_protocol::FailureCode;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

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
    /// The provider definition's name.
    pub name: String,
    pub wire: Wire,
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// Extra headers of the definition.
    pub headers: Vec<(String, String)>,
    pub max_output_tokens: u64,
    pub reasoning_effort: Option<Effort>,
    /// Anthropic: mark the prefix cacheable.
    pub prompt_cache: bool,
    /// Chat: send `reasoning_content` back on tool-calling turns.
    pub reasoning_replay: bool,
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
        let key = self.api_key.as_deref();
        let (url, body, parser, auth) = match self.wire {
            Wire::Chat => (
                chat::url(&self.base_url),
                chat::body(self, request)?,
                stream::Parser::Chat(chat::Parser::default()),
                key.map(http::Auth::Bearer),
            ),
            Wire::Responses => (
                responses::url(&self.base_url),
                responses::body(self, request)?,
                stream::Parser::Responses(responses::Parser::default()),
                key.map(http::Auth::Bearer),
            ),
            Wire::Anthropic => (
                anthropic::url(&self.base_url),
                anthropic::body(self, request)?,
                stream::Parser::Anthropic(anthropic::Parser::default()),
                Some(http::Auth::Anthropic(key)),
            ),
        };
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
        if tools.is_empty() {
            return 0;
        }
        let rendered: Vec<Value> = match self.wire {
            Wire::Chat => tools.iter().map(chat::tool).collect(),
            Wire::Responses => tools.iter().map(responses::tool).collect(),
            Wire::Anthropic => tools.iter().map(anthropic::tool).collect(),
        };
        serde_json::to_vec(&rendered).map_or(0, |v| v.len())
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
