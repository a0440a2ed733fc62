//! Anthropic Messages (`POST /v1/messages`): stream builders, error
//! bodies and request rules.
//!
//! Stream shapes are from Anthropic's streaming doc
//! (<https://docs.claude.com/en/docs/build-with-claude/streaming>, research
//! notes section 1): every event has an `event: <type>` line and a
//! `data:` line whose JSON `type` is the same, a blank line after each,
//! and the stream ends after `message_stop` (no `[DONE]`).
//!
//! A [`Message`] streams, in order:
//!
//! 1. `message_start` (a Message with empty `content`, `usage` with
//!    `input_tokens`, `cache_creation_input_tokens`,
//!    `cache_read_input_tokens` and `output_tokens: 1`);
//! 2. per content block `content_block_start`, its deltas,
//!    `content_block_stop`, with one `ping` right after the first
//!    `content_block_start` (where the doc's examples show it);
//! 3. `message_delta` with `stop_reason` and cumulative `usage`;
//! 4. terminal: `message_stop` (sent only for [`Ending::Done`]).

use crate::reply::{fragment, Ending, Reply, SseEvent, Wire};
use serde_json::{json, Value};
use std::time::Duration;

/// One content block of a streamed assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A `text` block, one `text_delta` per fragment (shape from the doc's
    /// "Basic streaming request").
    Text(Vec<String>),
    /// A `thinking` block: one `thinking_delta` per fragment, then a
    /// `signature_delta` "just before the `content_block_stop`" (shape
    /// from the doc's "Streaming request with extended thinking").
    Thinking {
        fragments: Vec<String>,
        signature: String,
    },
    /// A `redacted_thinking` block: it arrives whole in
    /// `content_block_start` (`{"type":"redacted_thinking","data":...}`),
    /// then `content_block_stop` with no deltas (SDK
    /// `RedactedThinkingBlock`; stream fixture quoted in notes 1.4).
    RedactedThinking { data: String },
    /// A `tool_use` block: `content_block_start` with `input: {}`, then
    /// `input_json_delta`s whose `partial_json` strings are `""` first and
    /// then the JSON arguments in pieces of a few chars (shape from the
    /// doc's "Streaming request with tool use").
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

impl Block {
    pub fn text<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Block {
        Block::Text(strings(fragments))
    }

    pub fn thinking<S: AsRef<str>>(
        fragments: impl IntoIterator<Item = S>,
        signature: &str,
    ) -> Block {
        Block::Thinking {
            fragments: strings(fragments),
            signature: signature.into(),
        }
    }

    pub fn redacted_thinking(data: &str) -> Block {
        Block::RedactedThinking { data: data.into() }
    }

    pub fn tool_use(id: &str, name: &str, input: Value) -> Block {
        Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        }
    }

    /// `tool_use` blocks for `(id, name, input)` triples.
    pub fn tool_uses(calls: &[(&str, &str, Value)]) -> Vec<Block> {
        calls
            .iter()
            .map(|(id, name, input)| Block::tool_use(id, name, input.clone()))
            .collect()
    }
}

fn strings<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Vec<String> {
    fragments
        .into_iter()
        .map(|f| f.as_ref().to_string())
        .collect()
}

/// Token counts of a streamed message (SDK `types/usage.py`; Anthropic's
/// `input_tokens` excludes the cached tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
    /// The final (cumulative) count sent in `message_delta`;
    /// `message_start` reports 1.
    pub output_tokens: u64,
}

impl Default for Usage {
    fn default() -> Usage {
        Usage {
            input_tokens: 25,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: 15,
        }
    }
}

/// What `message_delta.usage` carries besides `output_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeltaUsage {
    /// Only `{"output_tokens": N}`, as the doc's text and tool examples.
    #[default]
    OutputOnly,
    /// The input and cache counts again (cumulative), as the doc's
    /// web-search example.
    Cumulative,
    /// `input_tokens` and cache counts as 0, as a third-party capture
    /// (dive reference.md) shows: they must not wipe `message_start`'s.
    ZeroInput,
}

/// A streamed assistant message, built into a [`Reply`] with
/// [`Message::reply`] (or `Reply::from`).
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub blocks: Vec<Block>,
    /// `None`: `"tool_use"` if a block is a tool use, else `"end_turn"`.
    pub stop_reason: Option<String>,
    pub usage: Usage,
    pub delta_usage: DeltaUsage,
    /// Characters per `partial_json` piece.
    pub piece: usize,
}

impl Message {
    pub fn new(blocks: Vec<Block>) -> Message {
        Message {
            blocks,
            stop_reason: None,
            usage: Usage::default(),
            delta_usage: DeltaUsage::default(),
            piece: 6,
        }
    }

    /// Sets `stop_reason` (`"end_turn"`, `"tool_use"`, `"max_tokens"`,
    /// `"stop_sequence"`, `"pause_turn"`, `"refusal"`,
    /// `"model_context_window_exceeded"`).
    pub fn stop_reason(mut self, reason: &str) -> Message {
        self.stop_reason = Some(reason.into());
        self
    }

    pub fn usage(mut self, usage: Usage) -> Message {
        self.usage = usage;
        self
    }

    pub fn delta_usage(mut self, delta_usage: DeltaUsage) -> Message {
        self.delta_usage = delta_usage;
        self
    }

    /// `partial_json` pieces of `chars` characters.
    pub fn piece(mut self, chars: usize) -> Message {
        self.piece = chars.max(1);
        self
    }

    /// The events (without the terminal `message_stop`).
    pub fn events(&self) -> Vec<SseEvent> {
        let usage = self.usage;
        let mut events = vec![SseEvent::typed(&json!({
            "type": "message_start",
            "message": {
                "id": "msg_mock", "type": "message", "role": "assistant", "content": [],
                "model": "mock-model", "stop_reason": null, "stop_sequence": null,
                "usage": {
                    "input_tokens": usage.input_tokens,
                    "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                    "cache_read_input_tokens": usage.cache_read_input_tokens,
                    "output_tokens": 1,
                },
            },
        }))];
        let ping = SseEvent::typed(&json!({"type": "ping"}));
        if self.blocks.is_empty() {
            events.push(ping.clone());
        }
        for (index, block) in self.blocks.iter().enumerate() {
            let delta = |delta: Value| {
                SseEvent::typed(
                    &json!({"type": "content_block_delta", "index": index, "delta": delta}),
                )
            };
            let start = |content_block: Value| {
                SseEvent::typed(&json!({"type": "content_block_start", "index": index,
                    "content_block": content_block}))
            };
            match block {
                Block::Text(fragments) => {
                    events.push(start(json!({"type": "text", "text": ""})));
                    if index == 0 {
                        events.push(ping.clone());
                    }
                    for text in fragments {
                        events.push(delta(json!({"type": "text_delta", "text": text})));
                    }
                }
                Block::Thinking {
                    fragments,
                    signature,
                } => {
                    events.push(start(json!({"type": "thinking", "thinking": ""})));
                    if index == 0 {
                        events.push(ping.clone());
                    }
                    for thinking in fragments {
                        events.push(delta(
                            json!({"type": "thinking_delta", "thinking": thinking}),
                        ));
                    }
                    events.push(delta(
                        json!({"type": "signature_delta", "signature": signature}),
                    ));
                }
                Block::RedactedThinking { data } => {
                    events.push(start(json!({"type": "redacted_thinking", "data": data})));
                    if index == 0 {
                        events.push(ping.clone());
                    }
                }
                Block::ToolUse { id, name, input } => {
                    events.push(start(
                        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    ));
                    if index == 0 {
                        events.push(ping.clone());
                    }
                    let pieces = std::iter::once(String::new())
                        .chain(fragment(&input.to_string(), self.piece));
                    for partial_json in pieces {
                        events.push(delta(
                            json!({"type": "input_json_delta", "partial_json": partial_json}),
                        ));
                    }
                }
            }
            events.push(SseEvent::typed(
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
        let stop_reason = self.stop_reason.clone().unwrap_or_else(|| {
            let tool = self
                .blocks
                .iter()
                .any(|b| matches!(b, Block::ToolUse { .. }));
            (if tool { "tool_use" } else { "end_turn" }).to_string()
        });
        let delta_usage = match self.delta_usage {
            DeltaUsage::OutputOnly => json!({"output_tokens": usage.output_tokens}),
            DeltaUsage::Cumulative => json!({
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                "cache_read_input_tokens": usage.cache_read_input_tokens,
                "output_tokens": usage.output_tokens,
            }),
            DeltaUsage::ZeroInput => json!({
                "input_tokens": 0, "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0, "output_tokens": usage.output_tokens,
            }),
        };
        events.push(SseEvent::typed(&json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": delta_usage,
        })));
        events
    }

    pub fn reply(self) -> Reply {
        Reply::Stream {
            wire: Some(Wire::Anthropic),
            events: self.events(),
            terminal: Some(SseEvent::typed(&json!({"type": "message_stop"}))),
            delay: Duration::ZERO,
            ending: Ending::Done,
            batch: 1,
        }
    }
}

impl From<Message> for Reply {
    fn from(message: Message) -> Reply {
        message.reply()
    }
}

/// The mid-stream `error` event, e.g. `error_event("overloaded_error",
/// "Overloaded")` (shape from the streaming doc, "Error events"); use it
/// with [`Reply::then_event`].
pub fn error_event(kind: &str, message: &str) -> SseEvent {
    SseEvent::typed(&json!({"type": "error", "error": {"type": kind, "message": message}}))
}

/// An HTTP error body, `{"type":"error","error":{"type":..,"message":..},
/// "request_id":..}` (shape from Anthropic's errors doc,
/// <https://docs.claude.com/en/api/errors>).
pub fn error_body(kind: &str, message: &str) -> String {
    crate::json::to_json(&json!({
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": "req_mock",
    }))
}

impl Reply {
    /// An Anthropic message with these content blocks.
    pub fn anthropic(blocks: Vec<Block>) -> Reply {
        Message::new(blocks).reply()
    }

    /// One text block streamed as `fragments`, `stop_reason: "end_turn"`.
    pub fn anthropic_text<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Reply {
        Reply::anthropic(vec![Block::text(fragments)])
    }

    /// One `tool_use` block per `(id, name, input)`, `stop_reason:
    /// "tool_use"`.
    pub fn anthropic_tool_calls(calls: &[(&str, &str, Value)]) -> Reply {
        Reply::anthropic(Block::tool_uses(calls))
    }

    /// A text block (skipped when `fragments` is empty), then tool uses,
    /// as the doc's tool-use stream.
    pub fn anthropic_text_and_tool_calls<S: AsRef<str>>(
        fragments: impl IntoIterator<Item = S>,
        calls: &[(&str, &str, Value)],
    ) -> Reply {
        let text = strings(fragments);
        let mut blocks = Vec::new();
        if !text.is_empty() {
            blocks.push(Block::Text(text));
        }
        blocks.extend(Block::tool_uses(calls));
        Reply::anthropic(blocks)
    }

    /// A `thinking` block (`thinking_delta` fragments, then
    /// `signature_delta` with `signature`), then the blocks in `then`
    /// (e.g. `vec![Block::text(["27 * 453 = 12,231"])]` or
    /// `Block::tool_uses(..)`).
    pub fn anthropic_thinking<S: AsRef<str>>(
        fragments: impl IntoIterator<Item = S>,
        signature: &str,
        then: Vec<Block>,
    ) -> Reply {
        let mut blocks = vec![Block::thinking(fragments, signature)];
        blocks.extend(then);
        Reply::anthropic(blocks)
    }

    /// A text block streamed as `fragments`, then `stop_reason:
    /// "refusal"`: a streaming classifier stopped the answer. Shape from
    /// Anthropic's "Streaming refusals" doc (its API response format: the
    /// partial `text` block, `"stop_reason": "refusal"`, "No additional
    /// refusal message is included") and the stop reasons doc
    /// (<https://docs.claude.com/en/api/handling-stop-reasons>).
    pub fn anthropic_refusal<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Reply {
        let text = strings(fragments);
        let blocks = if text.is_empty() {
            Vec::new()
        } else {
            vec![Block::Text(text)]
        };
        Message::new(blocks).stop_reason("refusal").reply()
    }

    /// These blocks, then `stop_reason: "pause_turn"`: "we paused a
    /// long-running turn. You may provide the response back as-is in a
    /// subsequent request to let the model continue" (Messages API
    /// reference, `stop_reason`; the stop reasons and code execution tool
    /// docs say the same of `pause_turn`). The mock streams the
    /// blocks it knows (text, thinking, tool use), not server-tool blocks:
    /// SCV offers no server tools.
    pub fn anthropic_pause_turn(blocks: Vec<Block>) -> Reply {
        Message::new(blocks).stop_reason("pause_turn").reply()
    }

    /// A `redacted_thinking` block carrying `data`, then `then`.
    pub fn anthropic_redacted_thinking(data: &str, then: Vec<Block>) -> Reply {
        let mut blocks = vec![Block::redacted_thinking(data)];
        blocks.extend(then);
        Reply::anthropic(blocks)
    }

    /// An HTTP error in Anthropic's shape, e.g. `(429, "rate_limit_error",
    /// ..)`, `(529, "overloaded_error", "Overloaded")`; only sent on
    /// `/v1/messages`.
    pub fn anthropic_error(status: u16, kind: &str, message: &str) -> Reply {
        Reply::status(status, error_body(kind, message)).only_on(Some(Wire::Anthropic))
    }

    /// 400 `invalid_request_error` "prompt is too long: N tokens > M
    /// maximum" (wording from real reports, e.g. anthropics/claude-code
    /// #12186; notes 1.7).
    pub fn anthropic_prompt_too_long(tokens: u64, maximum: u64) -> Reply {
        Reply::anthropic_error(
            400,
            "invalid_request_error",
            &format!("prompt is too long: {tokens} tokens > {maximum} maximum"),
        )
    }
}

/// The Anthropic Messages rules `body` breaks (empty = fine):
///
/// - `max_tokens` is a positive integer;
/// - `system`, if sent, is top-level (a string or text blocks) and no
///   message has role `system`;
/// - `messages` is a non-empty array; roles are `user`/`assistant`,
///   alternate, and start with `user`;
/// - every `tool_use` block of an assistant message is answered by a
///   `tool_result` with its `tool_use_id` in the immediately following
///   user message; in that message the `tool_result` blocks come first;
///   a `tool_result` answers a `tool_use` of the assistant message just
///   before it (so results of one turn are never split over two user
///   messages);
/// - with `thinking.type == "enabled"`: `budget_tokens` is an integer
///   of at least 1024 and below `max_tokens`; `tool_choice`, if sent, is
///   `auto` or `none`; and in the last assistant turn (after the last user message
///   that is not only tool results) every assistant message with a
///   `tool_use` that is followed by its results starts with a `thinking`
///   block with a non-empty `signature` or a `redacted_thinking` block
///   with non-empty `data`;
/// - a `tool_result`'s `is_error`, if sent, is a boolean (Messages API
///   reference, `ToolResultBlockParam`);
/// - when the last message is the assistant's (a paused turn sent back to
///   continue), its last text block does not end in whitespace: the API
///   answers 400 "messages: final assistant content cannot end with
///   trailing whitespace" (as reported in tailcallhq/forgecode #1872 and
///   aaif-goose/goose #5967).
pub fn check_request(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let max_tokens = body["max_tokens"].as_u64().filter(|n| *n > 0);
    if max_tokens.is_none() {
        out.push(format!(
            "`max_tokens` must be a positive integer (got {})",
            crate::json::kind(&body["max_tokens"])
        ));
    }
    match &body["system"] {
        Value::Null | Value::String(_) => {}
        Value::Array(blocks) => {
            for (i, block) in blocks.iter().enumerate() {
                if block["type"] != "text" || !block["text"].is_string() {
                    out.push(format!("system[{i}] is not a text block"));
                }
            }
        }
        other => out.push(format!(
            "`system` must be a string or text blocks (got {})",
            crate::json::kind(other)
        )),
    }
    let thinking = body["thinking"]["type"] == "enabled";
    if thinking {
        match body["thinking"]["budget_tokens"].as_u64() {
            None => out.push("thinking is enabled without an integer `budget_tokens`".into()),
            Some(budget) if budget < 1024 => {
                out.push(format!("thinking.budget_tokens {budget} is below 1024"))
            }
            Some(budget) => {
                if let Some(max) = max_tokens.filter(|max| budget >= *max) {
                    out.push(format!(
                        "thinking.budget_tokens {budget} is not less than max_tokens {max}"
                    ));
                }
            }
        }
        if let Some(choice) = body["tool_choice"]["type"].as_str() {
            if choice != "auto" && choice != "none" {
                out.push(format!(
                    "tool_choice {choice:?} with thinking enabled (only auto or none)"
                ));
            }
        }
    }
    let Some(messages) = body["messages"].as_array() else {
        out.push("`messages` is not an array".into());
        return out;
    };
    if messages.is_empty() {
        out.push("`messages` is empty".into());
    }
    let blocks_of = |message: &Value| -> Vec<Value> {
        message["content"].as_array().cloned().unwrap_or_default()
    };
    let results_of = |message: &Value| -> Vec<String> {
        blocks_of(message)
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| b["tool_use_id"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let uses_of = |message: &Value| -> Vec<String> {
        if message["role"] != "assistant" {
            return Vec::new();
        }
        blocks_of(message)
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| b["id"].as_str().unwrap_or("").to_string())
            .collect()
    };
    for (index, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        match role {
            "user" | "assistant" => {}
            "system" => out.push(format!(
                "messages[{index}] has role system: the system prompt belongs in top-level `system`"
            )),
            other => out.push(format!("messages[{index}] has role {other:?}")),
        }
        if index == 0 && role != "user" {
            out.push(format!("messages[0] has role {role:?}, not user"));
        }
        if index > 0 && messages[index - 1]["role"] == role {
            if role == "user"
                && !results_of(message).is_empty()
                && !results_of(&messages[index - 1]).is_empty()
            {
                out.push(format!(
                    "tool results split over messages[{}] and messages[{index}]: all results of one assistant turn go in one user message",
                    index - 1
                ));
            } else {
                out.push(format!(
                    "messages[{index}] repeats role {role} (roles must alternate)"
                ));
            }
        }
        let uses = uses_of(message);
        if !uses.is_empty() {
            let next = messages.get(index + 1);
            let answered = next.map(&results_of).unwrap_or_default();
            for id in &uses {
                if !answered.contains(id) {
                    match next {
                        Some(_) => out.push(format!(
                            "tool_use {id:?} in messages[{index}] is not answered by a tool_result in messages[{}]",
                            index + 1
                        )),
                        None => out.push(format!(
                            "tool_use {id:?} in messages[{index}] (the last message) has no tool_result"
                        )),
                    }
                }
            }
        }
        if role == "user" {
            let blocks = blocks_of(message);
            let previous = index
                .checked_sub(1)
                .map(|i| uses_of(&messages[i]))
                .unwrap_or_default();
            let mut other_seen = false;
            for (i, block) in blocks.iter().enumerate() {
                if block["type"] != "tool_result" {
                    other_seen = true;
                    continue;
                }
                if other_seen {
                    out.push(format!(
                        "messages[{index}].content[{i}]: tool_result after other content (tool_result blocks must come first)"
                    ));
                }
                if let Some(flag) = block.get("is_error").filter(|f| !f.is_boolean()) {
                    out.push(format!(
                        "messages[{index}].content[{i}]: is_error must be a boolean (got {})",
                        crate::json::kind(flag)
                    ));
                }
                let id = block["tool_use_id"].as_str().unwrap_or("");
                if !previous.iter().any(|p| p == id) {
                    out.push(format!(
                        "messages[{index}].content[{i}]: tool_result for {id:?} answers no tool_use of the assistant message just before it"
                    ));
                }
            }
        }
    }
    if thinking {
        let turn_start = messages
            .iter()
            .rposition(|m| m["role"] == "user" && results_of(m).is_empty())
            .map_or(0, |i| i + 1);
        for (index, message) in messages.iter().enumerate().skip(turn_start) {
            let continued = messages
                .get(index + 1)
                .is_some_and(|next| !results_of(next).is_empty());
            if uses_of(message).is_empty() || !continued {
                continue;
            }
            let first = blocks_of(message).into_iter().next().unwrap_or(Value::Null);
            let signed = match first["type"].as_str() {
                Some("thinking") => first["signature"].as_str().is_some_and(|s| !s.is_empty()),
                Some("redacted_thinking") => first["data"].as_str().is_some_and(|s| !s.is_empty()),
                _ => false,
            };
            if !signed {
                out.push(format!(
                    "messages[{index}]: with thinking enabled, an assistant tool-use message of the last turn must start with a signed thinking or redacted_thinking block"
                ));
            }
        }
    }
    if let Some(last) = messages.last().filter(|m| m["role"] == "assistant") {
        let text = match &last["content"] {
            Value::String(text) => Some(text.as_str()),
            Value::Array(blocks) => blocks
                .last()
                .filter(|b| b["type"] == "text")
                .and_then(|b| b["text"].as_str()),
            _ => None,
        };
        if text.is_some_and(|t| t.ends_with(char::is_whitespace)) {
            out.push(
                "messages: final assistant content cannot end with trailing whitespace".into(),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(reply: &Reply) -> Vec<String> {
        reply
            .events()
            .iter()
            .map(|e| e.event.clone().unwrap_or_default())
            .collect()
    }

    fn data(reply: &Reply) -> Vec<Value> {
        reply.events().iter().map(|e| e.json().unwrap()).collect()
    }

    #[test]
    fn every_event_is_named_after_its_type() {
        let replies = [
            Reply::anthropic_text(["a"]),
            Reply::anthropic_text_and_tool_calls(["a"], &[("t", "f", json!({"x": 1}))]),
            Reply::anthropic_thinking(["t"], "sig", vec![Block::text(["a"])]),
            Reply::anthropic_redacted_thinking("abc123", Vec::new()),
        ];
        for reply in replies {
            assert_eq!(reply.wire(), Some(Wire::Anthropic));
            for event in reply.events() {
                assert_eq!(
                    event.event.as_deref(),
                    event.json().unwrap()["type"].as_str()
                );
                assert!(event.data.starts_with("{\"type\":"), "{}", event.data);
            }
        }
    }

    #[test]
    fn text_stream_follows_the_basic_streaming_example() {
        let reply = Reply::anthropic_text(["Hello", "!"]);
        assert_eq!(
            names(&reply),
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        let events = reply.events();
        assert_eq!(
            events[0].data,
            r#"{"type":"message_start","message":{"type":"message","content":[],"id":"msg_mock","model":"mock-model","role":"assistant","stop_reason":null,"stop_sequence":null,"usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":25,"output_tokens":1}}}"#
        );
        assert_eq!(
            events[1].data,
            r#"{"type":"content_block_start","content_block":{"type":"text","text":""},"index":0}"#
        );
        assert_eq!(
            events[2].encode(),
            b"event: ping\ndata: {\"type\":\"ping\"}\n\n"
        );
        assert_eq!(
            events[3].data,
            r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"Hello"},"index":0}"#
        );
        assert_eq!(events[5].data, r#"{"type":"content_block_stop","index":0}"#);
        assert_eq!(
            events[6].data,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#
        );
        assert_eq!(
            events[7].encode(),
            b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        );
    }

    #[test]
    fn tool_use_streams_partial_json_starting_empty() {
        let args = json!({"location": "San Francisco, CA", "unit": "fahrenheit"});
        let reply = Reply::anthropic_tool_calls(&[
            ("toolu_1", "get_weather", args.clone()),
            ("toolu_2", "noop", json!({})),
        ]);
        let events = data(&reply);
        assert_eq!(
            events[1]["content_block"],
            json!({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}})
        );
        assert_eq!(events[2]["type"], "ping");
        let partials = |index: u64| -> Vec<String> {
            events
                .iter()
                .filter(|e| e["type"] == "content_block_delta" && e["index"] == index)
                .map(|e| {
                    assert_eq!(e["delta"]["type"], "input_json_delta");
                    e["delta"]["partial_json"].as_str().unwrap().to_string()
                })
                .collect()
        };
        let first = partials(0);
        assert_eq!(first[0], "");
        assert!(first.len() > 3 && first.iter().all(|p| p.chars().count() <= 6));
        let joined: Value = serde_json::from_str(&first.concat()).unwrap();
        assert_eq!(joined, args);
        assert_eq!(partials(1), ["", "{}"]);
        let delta = &events[events.len() - 2];
        assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    }

    #[test]
    fn text_then_tools_puts_text_at_index_zero() {
        let reply =
            Reply::anthropic_text_and_tool_calls(["Okay"], &[("toolu_1", "f", json!({"a": 1}))]);
        let starts: Vec<(u64, String)> = data(&reply)
            .iter()
            .filter(|e| e["type"] == "content_block_start")
            .map(|e| {
                (
                    e["index"].as_u64().unwrap(),
                    e["content_block"]["type"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(starts, [(0, "text".into()), (1, "tool_use".into())]);
    }

    #[test]
    fn thinking_block_ends_with_its_signature() {
        let reply = Reply::anthropic_thinking(
            ["Let me", " think"],
            "EqQBsig",
            Block::tool_uses(&[("toolu_1", "f", json!({}))]),
        );
        let events = data(&reply);
        assert_eq!(
            events[1]["content_block"],
            json!({"type": "thinking", "thinking": ""})
        );
        let deltas: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "content_block_delta" && e["index"] == 0)
            .map(|e| &e["delta"])
            .collect();
        assert_eq!(
            deltas,
            [
                &json!({"type": "thinking_delta", "thinking": "Let me"}),
                &json!({"type": "thinking_delta", "thinking": " think"}),
                &json!({"type": "signature_delta", "signature": "EqQBsig"}),
            ]
        );
        let stop = events
            .iter()
            .position(|e| e["type"] == "content_block_stop" && e["index"] == 0)
            .unwrap();
        assert_eq!(events[stop - 1]["delta"]["type"], "signature_delta");
        assert_eq!(events[stop + 1]["content_block"]["type"], "tool_use");
        assert_eq!(events[stop + 1]["index"], 1);
    }

    #[test]
    fn redacted_thinking_arrives_whole() {
        let reply = Reply::anthropic_redacted_thinking("abc123", vec![Block::text(["hi"])]);
        let events = data(&reply);
        assert_eq!(
            events[1],
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "redacted_thinking", "data": "abc123"}})
        );
        assert_eq!(events[2]["type"], "ping");
        assert_eq!(events[3], json!({"type": "content_block_stop", "index": 0}));
    }

    #[test]
    fn stop_reason_and_usage_options() {
        let usage = Usage {
            input_tokens: 3,
            cache_creation_input_tokens: 100,
            cache_read_input_tokens: 2000,
            output_tokens: 42,
        };
        let reply = Message::new(vec![Block::text(["cut"])])
            .stop_reason("max_tokens")
            .usage(usage)
            .delta_usage(DeltaUsage::Cumulative)
            .reply();
        let events = data(&reply);
        assert_eq!(
            events[0]["message"]["usage"],
            json!({"input_tokens": 3, "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 2000, "output_tokens": 1})
        );
        let delta = &events[events.len() - 2];
        assert_eq!(delta["delta"]["stop_reason"], "max_tokens");
        assert_eq!(
            delta["usage"],
            json!({"input_tokens": 3, "cache_creation_input_tokens": 100,
                "cache_read_input_tokens": 2000, "output_tokens": 42})
        );
        let zero = Message::new(Vec::new())
            .delta_usage(DeltaUsage::ZeroInput)
            .reply();
        let events = data(&zero);
        assert_eq!(
            names(&zero),
            ["message_start", "ping", "message_delta", "message_stop"]
        );
        assert_eq!(events[2]["usage"]["input_tokens"], 0);
        let bare = data(&Reply::anthropic_text(["x"]).without_usage());
        assert!(bare[0]["message"].get("usage").is_none());
        assert!(bare[bare.len() - 2].get("usage").is_none());
    }

    #[test]
    fn truncation_and_mid_stream_error() {
        let Reply::Stream {
            events,
            terminal,
            ending,
            ..
        } = Reply::anthropic_text(["a", "b"]).then(4, Ending::Eof)
        else {
            panic!()
        };
        assert_eq!(events.len(), 4);
        assert_eq!(terminal.unwrap().event.as_deref(), Some("message_stop"));
        assert_eq!(ending, Ending::Eof);

        let failed = Reply::anthropic_text(["a", "b"])
            .then_event(4, error_event("overloaded_error", "Overloaded"));
        let events = failed.events();
        assert_eq!(events.len(), 5);
        assert_eq!(
            events[4].encode(),
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
        );
    }

    #[test]
    fn http_errors_have_the_errors_doc_shape() {
        let Reply::Status {
            wire, status, body, ..
        } = Reply::anthropic_prompt_too_long(200251, 200000)
        else {
            panic!()
        };
        assert_eq!((wire, status), (Some(Wire::Anthropic), 400));
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body,
            json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": "prompt is too long: 200251 tokens > 200000 maximum"},
                "request_id": "req_mock"})
        );
        let Reply::Status { status, body, .. } =
            Reply::anthropic_error(529, "overloaded_error", "Overloaded")
        else {
            panic!()
        };
        assert_eq!(status, 529);
        assert_eq!(
            body,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_mock"}"#
        );
    }

    /// The request shape of notes 1.8 (SDK `message_create_params.py`).
    fn good() -> Value {
        json!({
            "model": "claude-sonnet-4-5", "max_tokens": 20000, "stream": true,
            "system": [{"type": "text", "text": "You are SCV", "cache_control": {"type": "ephemeral"}}],
            "thinking": {"type": "enabled", "budget_tokens": 16000},
            "messages": [
                {"role": "user", "content": "What is the weather?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "...", "signature": "EqQB"},
                    {"type": "text", "text": "Okay"},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "noon"},
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "15 degrees"},
                    {"type": "text", "text": "text goes after the results"}
                ]}
            ]
        })
    }

    #[test]
    fn good_requests_pass() {
        assert_eq!(check_request(&good()), Vec::<String>::new());
        let plain = json!({"max_tokens": 1024, "system": "sys",
            "messages": [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": [{"type": "text", "text": "again"}]}]});
        assert_eq!(check_request(&plain), Vec::<String>::new());
        // Older turns may drop their thinking blocks; redacted thinking counts.
        let mut older = good();
        older["messages"][1]["content"][0] = json!({"type": "text", "text": "x"});
        older["messages"].as_array_mut().unwrap().extend([
            json!({"role": "assistant", "content": "It is 15 degrees."}),
            json!({"role": "user", "content": "and tomorrow?"}),
            json!({"role": "assistant", "content": [
                {"type": "redacted_thinking", "data": "abc123"},
                {"type": "tool_use", "id": "toolu_3", "name": "get_weather", "input": {}}]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_3", "content": "rain"}]}),
        ]);
        assert_eq!(check_request(&older), Vec::<String>::new());
    }

    fn one(body: &Value, needle: &str) {
        let v = check_request(body);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].contains(needle), "{:?} lacks {needle:?}", v[0]);
    }

    #[test]
    fn bad_requests_fail() {
        let mut b = good();
        b.as_object_mut().unwrap().remove("max_tokens");
        // budget < max_tokens cannot be checked without max_tokens.
        one(&b, "max_tokens");

        let mut b = good();
        b["messages"]
            .as_array_mut()
            .unwrap()
            .insert(0, json!({"role": "system", "content": "sys"}));
        let v = check_request(&b);
        assert!(v.iter().any(|v| v.contains("top-level `system`")), "{v:#?}");
        assert!(v.iter().any(|v| v.contains("not user")), "{v:#?}");

        let mut b = good();
        b["system"] = json!({"text": "x"});
        one(&b, "`system` must be");

        let mut b = good();
        b["messages"][2]["content"]
            .as_array_mut()
            .unwrap()
            .remove(0);
        one(&b, "tool_use \"toolu_2\" in messages[1] is not answered");

        let mut b = good();
        let text = b["messages"][2]["content"]
            .as_array_mut()
            .unwrap()
            .remove(2);
        b["messages"][2]["content"]
            .as_array_mut()
            .unwrap()
            .insert(0, text);
        let v = check_request(&b);
        assert_eq!(v.len(), 2, "{v:#?}");
        assert!(v.iter().all(|v| v.contains("must come first")));

        // Results of one turn split over two user messages.
        let mut b = good();
        let second = b["messages"][2]["content"]
            .as_array_mut()
            .unwrap()
            .remove(1);
        b["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": [second]}));
        let v = check_request(&b);
        assert!(v.iter().any(|v| v.contains("split over")), "{v:#?}");
        assert!(
            v.iter().any(|v| v.contains("answers no tool_use")),
            "{v:#?}"
        );

        let mut b = good();
        b["messages"][2]["content"][0]["tool_use_id"] = json!("toolu_9");
        let v = check_request(&b);
        assert_eq!(v.len(), 2, "{v:#?}");

        let mut b = good();
        b["messages"].as_array_mut().unwrap().pop();
        let v = check_request(&b);
        assert_eq!(v.len(), 2, "{v:#?}");
        assert!(v
            .iter()
            .all(|v| v.contains("(the last message) has no tool_result")));

        let mut b = good();
        b["messages"][1]["content"]
            .as_array_mut()
            .unwrap()
            .remove(0);
        one(&b, "must start with a signed thinking");

        let mut b = good();
        b["messages"][1]["content"][0]["signature"] = json!("");
        one(&b, "must start with a signed thinking");

        let mut b = good();
        b["thinking"]["budget_tokens"] = json!(512);
        one(&b, "below 1024");

        let mut b = good();
        b["thinking"]["budget_tokens"] = json!(20000);
        one(&b, "not less than max_tokens");

        let mut b = good();
        b["tool_choice"] = json!({"type": "any"});
        one(&b, "tool_choice");

        let b = json!({"max_tokens": 10, "messages": [
            {"role": "user", "content": "a"}, {"role": "user", "content": "b"}]});
        one(&b, "repeats role user");

        one(&json!({"max_tokens": 10, "messages": []}), "empty");

        let mut b = good();
        b["messages"][2]["content"][0]["is_error"] = json!("yes");
        one(&b, "is_error must be a boolean");
        let mut b = good();
        b["messages"][2]["content"][0]["is_error"] = json!(true);
        assert_eq!(check_request(&b), Vec::<String>::new());

        // A paused turn sent back to continue ends with the assistant.
        let paused = |text: &str| {
            json!({"max_tokens": 10, "messages": [
                {"role": "user", "content": "search"},
                {"role": "assistant", "content": [{"type": "text", "text": text}]}]})
        };
        assert_eq!(check_request(&paused("Searching")), Vec::<String>::new());
        one(&paused("Searching \n"), "trailing whitespace");
    }

    #[test]
    fn refusal_and_pause_turn_end_with_their_stop_reasons() {
        let refused = data(&Reply::anthropic_refusal(["Hello", ".."]));
        let texts: Vec<&str> = refused
            .iter()
            .filter(|e| e["type"] == "content_block_delta")
            .map(|e| e["delta"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(texts, ["Hello", ".."]);
        assert_eq!(
            refused[refused.len() - 2]["delta"]["stop_reason"],
            "refusal"
        );
        let silent = data(&Reply::anthropic_refusal(Vec::<&str>::new()));
        assert!(silent.iter().all(|e| e["type"] != "content_block_start"));
        let paused = data(&Reply::anthropic_pause_turn(vec![Block::text([
            "Searching",
        ])]));
        assert_eq!(
            paused[paused.len() - 2]["delta"]["stop_reason"],
            "pause_turn"
        );
    }

    #[test]
    fn thinking_rules_only_apply_when_enabled() {
        let mut b = good();
        b["thinking"] = json!({"type": "disabled"});
        b["messages"][1]["content"]
            .as_array_mut()
            .unwrap()
            .remove(0);
        assert_eq!(check_request(&b), Vec::<String>::new());
    }
}
