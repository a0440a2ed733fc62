//! One streamed chat-completions response: bounded SSE parsing, text deltas
//! handed out as they come, tool-call fragments assembled by `index`.
//!
//! Caps (the protocol document's): an SSE event 1 MiB, the whole response
//! 4 MiB, assistant text 1 MiB → `response_limit`; more than 32 tool calls or
//! a tool-argument object over 256 KiB → `tool_limit`. Hitting one returns an
//! error; the caller drops the stream, which drops the HTTP body.

use super::sse::{EventTooLarge, SseReader};
use super::{FunctionCall, ProviderError, ToolCall};
use scv_protocol::limits::{
    MAX_ASSISTANT_TEXT_BYTES, MAX_RESPONSE_BYTES, MAX_SSE_EVENT_BYTES, MAX_TOOL_ARGUMENT_BYTES,
    MAX_TOOL_CALLS_PER_RESPONSE,
};
use scv_protocol::{FailureCode, Usage};
use serde::Deserialize;
use std::borrow::Cow;
use std::time::Duration;

/// What a finished response said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
}

pub struct ResponseStream {
    body: reqwest::Response,
    sse: SseReader,
    idle_timeout: Duration,
    received: usize,
    done: bool,
    acc: Accumulator,
}

impl ResponseStream {
    pub(super) fn new(body: reqwest::Response, idle_timeout: Duration) -> Self {
        ResponseStream {
            body,
            sse: SseReader::new(MAX_SSE_EVENT_BYTES),
            idle_timeout,
            received: 0,
            done: false,
            acc: Accumulator::default(),
        }
    }

    /// The next fragment of assistant text; `None` once the response ended
    /// well (`[DONE]`, or end of body after a finish reason).
    pub async fn next_text(&mut self) -> Result<Option<String>, ProviderError> {
        loop {
            while !self.done {
                match self.sse.next_event() {
                    Err(EventTooLarge) => {
                        return Err(ProviderError::limit(
                            FailureCode::ResponseLimit,
                            format!("provider sent an SSE event over {MAX_SSE_EVENT_BYTES} bytes"),
                        ))
                    }
                    Ok(None) => break,
                    Ok(Some(data)) if data.as_ref() == b"[DONE]" => self.done = true,
                    Ok(Some(data)) => {
                        if let Some(text) = self.acc.apply(&data)? {
                            return Ok(Some(text));
                        }
                    }
                }
            }
            if self.done {
                return Ok(None);
            }
            let chunk = tokio::time::timeout(self.idle_timeout, self.body.chunk())
                .await
                .map_err(|_| {
                    ProviderError::provider(format!(
                        "provider stream was silent for {} ms",
                        self.idle_timeout.as_millis()
                    ))
                })?
                .map_err(|err| {
                    ProviderError::provider(format!(
                        "provider stream broke: {}",
                        super::openai::describe(&err)
                    ))
                })?;
            match chunk {
                Some(bytes) => {
                    self.received += bytes.len();
                    if self.received > MAX_RESPONSE_BYTES {
                        return Err(ProviderError::limit(
                            FailureCode::ResponseLimit,
                            format!("provider response exceeded {MAX_RESPONSE_BYTES} bytes"),
                        ));
                    }
                    self.sse.push(&bytes);
                }
                None if self.acc.finish_reason.is_some() => self.done = true,
                None => {
                    return Err(ProviderError::provider(
                        "provider stream ended before [DONE] or a finish reason",
                    ))
                }
            }
        }
    }

    /// Reads to the end and returns the assembled response.
    pub async fn finish(mut self) -> Result<AssistantResponse, ProviderError> {
        while self.next_text().await?.is_some() {}
        Ok(self.acc.into_response())
    }
}

#[derive(Default)]
struct Accumulator {
    text: String,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: usize,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl Accumulator {
    /// Applies one chunk; returns its text fragment, if any.
    fn apply(&mut self, data: &[u8]) -> Result<Option<String>, ProviderError> {
        let chunk: Chunk = serde_json::from_slice(data).map_err(|err| {
            ProviderError::provider(format!("malformed provider stream chunk: {err}"))
        })?;
        if let Some(error) = chunk.error {
            return Err(super::openai::error_from_body(None, &error));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            });
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return Ok(None);
        };
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(reason.into_owned());
        }
        let Some(delta) = choice.delta else {
            return Ok(None);
        };
        for call in delta.tool_calls.unwrap_or_default() {
            self.apply_tool_call(call)?;
        }
        match delta.content {
            Some(text) if !text.is_empty() => {
                if self.text.len() + text.len() > MAX_ASSISTANT_TEXT_BYTES {
                    return Err(ProviderError::limit(
                        FailureCode::ResponseLimit,
                        format!("assistant text exceeded {MAX_ASSISTANT_TEXT_BYTES} bytes"),
                    ));
                }
                self.text.push_str(&text);
                Ok(Some(text.into_owned()))
            }
            _ => Ok(None),
        }
    }

    fn apply_tool_call(&mut self, delta: ToolCallDelta<'_>) -> Result<(), ProviderError> {
        if delta.index >= MAX_TOOL_CALLS_PER_RESPONSE {
            return Err(ProviderError::limit(
                FailureCode::ToolLimit,
                format!("provider requested more than {MAX_TOOL_CALLS_PER_RESPONSE} tool calls in one response"),
            ));
        }
        if self.calls.len() <= delta.index {
            self.calls
                .resize_with(delta.index + 1, PartialCall::default);
        }
        let call = &mut self.calls[delta.index];
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id.into_owned();
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name {
                call.name.push_str(&name);
            }
            if let Some(arguments) = function.arguments {
                if call.arguments.len() + arguments.len() > MAX_TOOL_ARGUMENT_BYTES {
                    return Err(ProviderError::limit(
                        FailureCode::ToolLimit,
                        format!("tool call arguments exceeded {MAX_TOOL_ARGUMENT_BYTES} bytes"),
                    ));
                }
                call.arguments.push_str(&arguments);
            }
        }
        Ok(())
    }

    fn into_response(self) -> AssistantResponse {
        let tool_calls = self
            .calls
            .into_iter()
            .filter(|c| !c.name.is_empty() || !c.id.is_empty() || !c.arguments.is_empty())
            .map(|c| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{}", uuid::Uuid::new_v4().simple())
                } else {
                    c.id
                },
                kind: "function".into(),
                function: FunctionCall {
                    name: c.name,
                    arguments: c.arguments,
                },
            })
            .collect();
        AssistantResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish_reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assembles_tool_calls_by_index() {
        let mut acc = Accumulator::default();
        let chunks = [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"bash","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"comm"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"read_file","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}"#,
        ];
        for chunk in chunks {
            assert_eq!(acc.apply(chunk.as_bytes()).unwrap(), None);
        }
        let response = acc.into_response();
        assert_eq!(response.tool_calls.len(), 2);
        assert_eq!(response.tool_calls[0].id, "call_a");
        assert_eq!(
            response.tool_calls[0].function.arguments,
            "{\"command\":\"ls\"}"
        );
        assert_eq!(response.tool_calls[1].function.name, "read_file");
        assert_eq!(
            response.usage,
            Some(Usage {
                input_tokens: 10,
                output_tokens: 3
            })
        );
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn too_many_tool_calls_is_tool_limit() {
        let mut acc = Accumulator::default();
        let chunk = r#"{"choices":[{"delta":{"tool_calls":[{"index":32,"id":"x","function":{"name":"bash"}}]}}]}"#;
        assert_eq!(
            acc.apply(chunk.as_bytes()).unwrap_err().code,
            FailureCode::ToolLimit
        );
    }
}
