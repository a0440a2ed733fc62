//! One streamed chat-completions response: bounded SSE parsing, text deltas
//! handed out as they come, tool-call fragments assembled by `index`.
//!
//! Caps (the protocol document's): an SSE event 1 MiB, the whole response
//! 4 MiB, assistant text 1 MiB → `response_limit`; more than 32 tool calls or
//! a tool-argument object over 256 KiB → `tool_limit`. Hitting one returns an
//! error; the caller drops the stream, which drops the HTTP body.

use super::sse::{EventTooLarge, SseReader};
use super::Redactor;
use super::{FunctionCall, ProviderError, ToolCall};
use scv_protocol::limits::{
    MAX_ASSISTANT_TEXT_BYTES, MAX_RESPONSE_BYTES, MAX_SSE_EVENT_BYTES, MAX_TOOL_ARGUMENT_BYTES,
    MAX_TOOL_CALLS_PER_RESPONSE,
};
use scv_protocol::{FailureCode, Usage};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, Instant};

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
    /// When the model last produced something (text, a tool-call
    /// fragment, a finish reason, usage). Comments, keep-alives and empty
    /// deltas do not count: a stream that only sends those is silent.
    last_output: Instant,
    received: usize,
    done: bool,
    acc: Accumulator,
    redact: Redactor,
}

impl ResponseStream {
    pub(super) fn new(body: reqwest::Response, idle_timeout: Duration, redact: Redactor) -> Self {
        ResponseStream {
            body,
            sse: SseReader::new(MAX_SSE_EVENT_BYTES),
            idle_timeout,
            last_output: Instant::now(),
            received: 0,
            done: false,
            acc: Accumulator::default(),
            redact,
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
                        let applied = self.acc.apply(&data, &self.redact)?;
                        if applied.progress {
                            self.last_output = Instant::now();
                        }
                        if let Some(text) = applied.text {
                            return Ok(Some(text));
                        }
                    }
                }
            }
            if self.done {
                return Ok(None);
            }
            let deadline = self.last_output + self.idle_timeout;
            let chunk = tokio::time::timeout_at(deadline.into(), self.body.chunk())
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
    /// Which call each wire `index` currently feeds (a new id at a used
    /// index starts a new call).
    slots: HashMap<usize, usize>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
}

/// What one chunk contributed.
#[derive(Debug, Default, PartialEq)]
struct Applied {
    /// Assistant text to stream.
    text: Option<String>,
    /// The model produced something (resets the idle timer).
    progress: bool,
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
    index: Option<usize>,
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
    /// Applies one chunk.
    fn apply(&mut self, data: &[u8], redact: &Redactor) -> Result<Applied, ProviderError> {
        let chunk: Chunk = serde_json::from_slice(data).map_err(|err| {
            ProviderError::provider(format!("malformed provider stream chunk: {err}"))
        })?;
        if let Some(error) = chunk.error {
            return Err(super::openai::error_from_body(None, &error, redact));
        }
        let mut applied = Applied::default();
        if let Some(usage) = chunk.usage {
            applied.progress = true;
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            });
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return Ok(applied);
        };
        if let Some(reason) = choice.finish_reason {
            applied.progress = true;
            self.finish_reason = Some(reason.into_owned());
        }
        let Some(delta) = choice.delta else {
            return Ok(applied);
        };
        for call in delta.tool_calls.unwrap_or_default() {
            applied.progress |= self.apply_tool_call(call)?;
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            if self.text.len() + text.len() > MAX_ASSISTANT_TEXT_BYTES {
                return Err(ProviderError::limit(
                    FailureCode::ResponseLimit,
                    format!("assistant text exceeded {MAX_ASSISTANT_TEXT_BYTES} bytes"),
                ));
            }
            self.text.push_str(&text);
            applied.progress = true;
            applied.text = Some(text.into_owned());
        }
        Ok(applied)
    }

    /// Which call a fragment belongs to. Calls are assembled by `index`;
    /// servers that send no `index` (or reuse one for several calls) are
    /// told apart by `id`: a new non-empty id starts a new call.
    fn slot(&mut self, index: Option<usize>, id: Option<&str>) -> usize {
        let key = index.unwrap_or(usize::MAX);
        let current = self.slots.get(&key).copied().or_else(|| {
            // No index at all: fragments continue the latest call.
            index
                .is_none()
                .then(|| self.calls.len().checked_sub(1))
                .flatten()
        });
        let starts_new = match (current, id) {
            (None, _) => true,
            (Some(slot), Some(id)) => {
                let known = &self.calls[slot].id;
                !known.is_empty() && known != id
            }
            (Some(_), None) => false,
        };
        if !starts_new {
            return current.unwrap_or(0);
        }
        self.calls.push(PartialCall::default());
        let slot = self.calls.len() - 1;
        self.slots.insert(key, slot);
        slot
    }

    /// Applies one tool-call fragment; true when it carried anything.
    fn apply_tool_call(&mut self, delta: ToolCallDelta<'_>) -> Result<bool, ProviderError> {
        let id = delta.id.filter(|id| !id.is_empty());
        let slot = self.slot(delta.index, id.as_deref());
        if slot >= MAX_TOOL_CALLS_PER_RESPONSE {
            return Err(ProviderError::limit(
                FailureCode::ToolLimit,
                format!("provider requested more than {MAX_TOOL_CALLS_PER_RESPONSE} tool calls in one response"),
            ));
        }
        let call = &mut self.calls[slot];
        let mut progress = false;
        if let Some(id) = id {
            progress = true;
            call.id = id.into_owned();
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                progress = true;
                // Some servers repeat the whole name on every fragment;
                // others split it. A repeat is not appended.
                if call.name != name {
                    call.name.push_str(&name);
                }
            }
            if let Some(arguments) = function.arguments.filter(|a| !a.is_empty()) {
                progress = true;
                if call.arguments.len() + arguments.len() > MAX_TOOL_ARGUMENT_BYTES {
                    return Err(ProviderError::limit(
                        FailureCode::ToolLimit,
                        format!("tool call arguments exceeded {MAX_TOOL_ARGUMENT_BYTES} bytes"),
                    ));
                }
                call.arguments.push_str(&arguments);
            }
        }
        Ok(progress)
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
            assert_eq!(
                acc.apply(chunk.as_bytes(), &Redactor::default())
                    .unwrap()
                    .text,
                None
            );
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
        for index in 0..32 {
            let chunk = format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":{index},"id":"c{index}","function":{{"name":"bash"}}}}]}}}}]}}"#
            );
            acc.apply(chunk.as_bytes(), &Redactor::default()).unwrap();
        }
        // A huge index is one more call, not a billion slots.
        let chunk = r#"{"choices":[{"delta":{"tool_calls":[{"index":4000000000,"id":"x","function":{"name":"bash"}}]}}]}"#;
        assert_eq!(
            acc.apply(chunk.as_bytes(), &Redactor::default())
                .unwrap_err()
                .code,
            FailureCode::ToolLimit
        );
    }

    fn calls_of(chunks: &[serde_json::Value]) -> Vec<(String, String, String)> {
        let mut acc = Accumulator::default();
        for chunk in chunks {
            acc.apply(chunk.to_string().as_bytes(), &Redactor::default())
                .unwrap();
        }
        acc.into_response()
            .tool_calls
            .into_iter()
            .map(|c| (c.id, c.function.name, c.function.arguments))
            .collect()
    }

    #[test]
    fn parallel_calls_without_index_are_told_apart_by_id() {
        use serde_json::json;
        // Several calls, none with an `index` or `type` (as some local
        // servers send them): a new id starts a new call.
        let got = calls_of(&[
            json!({"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"bash","arguments":"{\"command\":"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"\"ls\"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"bash","arguments":"{\"command\":\"pwd\"}"}}]}}]}),
        ]);
        assert_eq!(
            got,
            [
                ("a".into(), "bash".into(), "{\"command\":\"ls\"}".into()),
                ("b".into(), "bash".into(), "{\"command\":\"pwd\"}".into()),
            ]
        );
    }

    #[test]
    fn whole_calls_at_one_index_and_repeated_names_stay_separate_and_whole() {
        use serde_json::json;
        // Ollama sends each call whole, every one at index 0; other servers
        // repeat the name on every fragment of one call.
        let got = calls_of(&[
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b\"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c","function":{"name":"list_dir","arguments":"{\"pa"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"list_dir","arguments":"th\":\".\"}"}}]}}]}),
        ]);
        assert_eq!(
            got,
            [
                ("a".into(), "read_file".into(), "{\"path\":\"a\"}".into()),
                ("b".into(), "read_file".into(), "{\"path\":\"b\"}".into()),
                ("c".into(), "list_dir".into(), "{\"path\":\".\"}".into()),
            ]
        );
    }

    #[test]
    fn empty_deltas_are_not_progress() {
        let mut acc = Accumulator::default();
        for chunk in [
            r#"{"choices":[{"delta":{}}]}"#,
            r#"{"choices":[{"delta":{"content":""}}]}"#,
            r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#,
            r#"{"choices":[]}"#,
        ] {
            assert_eq!(
                acc.apply(chunk.as_bytes(), &Redactor::default()).unwrap(),
                Applied::default()
            );
        }
        let text = acc
            .apply(
                br#"{"choices":[{"delta":{"content":"hi"}}]}"#,
                &Redactor::default(),
            )
            .unwrap();
        assert!(text.progress);
    }
}
