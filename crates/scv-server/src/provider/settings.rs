//! What a request is made from: the session's [`Provider`] (where, who,
//! which model and how) and the wire-neutral [`Request`] (system prompt,
//! history, tools). Every wire renders its body from these two.
//!
//! Kept apart from `mod.rs`, which dispatches to the wires: a wire that
//! imported its parent would be imported back by it.

use super::errors::ProviderError;
use crate::model::{Effort, Message, RenderKey, Rendered, ToolSpec, Wire};
use std::time::Duration;

/// One request, as every wire needs it.
pub(crate) struct Request<'a> {
    pub system: &'a str,
    pub history: &'a [Message],
    /// Where `history`'s renderings are kept between requests (a
    /// session's history); `None` renders every message anew.
    pub rendered: Option<&'a Rendered>,
    pub tools: &'a [ToolSpec],
    /// The output cap of this request: `Some` when a budget lowered or
    /// holds it (sent on every wire: Anthropic `max_tokens`, Chat
    /// `max_completion_tokens` at OpenAI and `max_tokens` elsewhere,
    /// Responses `max_output_tokens`); `None`: Anthropic sends the
    /// provider's `max_output_tokens`, the other wires no cap.
    pub max_output_tokens: Option<u64>,
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
    /// The variable the key comes from (a refused request names it).
    pub api_key_env: Option<String>,
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
    /// A response whose bytes pass this fails (`max_response_bytes`).
    pub max_response_bytes: usize,
    /// Retries of 429/5xx before any output.
    pub max_retries: u32,
}

impl Provider {
    /// A provider of `wire` at an address nothing listens on, for the
    /// wires' unit tests.
    #[cfg(test)]
    pub(super) fn for_tests(wire: Wire) -> Provider {
        Provider {
            http: reqwest::Client::new(),
            name: "test".into(),
            wire,
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key: None,
            api_key_env: None,
            headers: Vec::new(),
            max_output_tokens: 4096,
            reasoning_effort: None,
            prompt_cache: false,
            reasoning_replay: false,
            idle_timeout: Duration::from_secs(1),
            max_response_bytes: scv_protocol::limits::MAX_RESPONSE_BYTES,
            max_retries: 0,
        }
    }

    /// What renderings of its messages this provider's requests need.
    pub(crate) fn render_key(&self) -> RenderKey {
        RenderKey {
            wire: self.wire,
            reasoning_replay: self.reasoning_replay,
        }
    }

    /// The variable of a key this provider needs and does not have: its
    /// definition names one, it was not set, and the URL is a preset's
    /// public API, which refuses every request without one. Anywhere else
    /// (a local server, a proxy) the request goes without a key, as the
    /// fixed interface says.
    pub(crate) fn missing_key(&self) -> Option<&str> {
        let var = self.api_key_env.as_deref()?;
        if self.api_key.is_some() || !super::presets::is_keyed_public_api(&self.base_url) {
            return None;
        }
        Some(var)
    }

    /// The Chat Completions field of an output cap: OpenAI's
    /// `max_completion_tokens`, or `max_tokens`, which every other
    /// OpenAI-compatible server (DeepSeek, OpenRouter, Gemini, Ollama,
    /// LM Studio, vLLM) takes.
    pub(super) fn chat_cap_field(&self) -> &'static str {
        if super::presets::is_openai(&self.base_url) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        }
    }

    /// The missing key in words, ending with what follows from it
    /// (`then`: "nothing was sent").
    pub(crate) fn missing_key_message(&self, then: &str) -> Option<String> {
        let var = self.missing_key()?;
        Some(format!(
            "provider `{}` needs a key: {var} is not set in the server's environment (set it where the server starts; for the daemon, `scv daemon stop` and start it again with {var} set); {then}",
            self.name
        ))
    }
}

/// Serializes a request body; our own types always serialize.
pub(super) fn encode<T: serde::Serialize + ?Sized>(body: &T) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(body)
        .map_err(|err| ProviderError::provider(format!("cannot encode request: {err}")))
}

/// `values` as the entries of a JSON array, comma-joined (no brackets):
/// a message that makes several entries (blocks, items).
pub(super) fn to_json_joined(values: &[serde_json::Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, value) in values.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&to_json(value));
    }
    out
}

/// A history message's JSON, as a wire renders it: strings, flags and the
/// provider's own JSON, which always serialize.
pub(super) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Vec<u8> {
    #[allow(clippy::expect_used)] // plain data with string keys always serializes
    serde_json::to_vec(value).expect("messages always serialize")
}
