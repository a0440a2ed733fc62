//! The Anthropic Messages wire (`wire = "anthropic"`):
//! `POST {base_url}/messages` with `x-api-key` and `anthropic-version`.
//!
//! Requests: `system` at the top level, tools as `{name, description,
//! input_schema}`, tool calls as `tool_use` blocks and their results as
//! `tool_result` blocks first in the following user message (all results
//! of one assistant turn in one message; consecutive messages of one role
//! merged, as the API requires alternation). With `prompt_cache`, the
//! system prompt and the last block of the conversation carry
//! `cache_control: {"type": "ephemeral"}`, so a long session re-reads its
//! prefix from cache. `reasoning_effort` enables extended thinking with a
//! budget below `max_tokens`; thinking and redacted-thinking blocks are
//! kept with their assistant message and sent back first and unchanged.
//!
//! Streams: `message_start` (input and cache usage), content blocks of
//! `text`, `tool_use` (`input_json_delta`), `thinking` (`thinking_delta`,
//! `signature_delta`) and `redacted_thinking`, `message_delta` (stop
//! reason, cumulative output tokens), `message_stop`, `ping`, `error`.
//! Shapes: Anthropic's streaming and extended-thinking documentation (see
//! the tests). Reported input tokens are input + cache creation + cache
//! read.

use super::assemble::{Assembler, End};
use super::body::Body;
use super::errors::{self, ProviderError, Redactor};
use super::settings::{to_json_joined, Provider, Request};
use super::wire::{Flow, WireParser};
use crate::model::{Effort, Message, Parts, ProviderData, Text, ToolSpec, Usage, Wire};
use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::HashMap;

pub(super) fn tool(spec: &ToolSpec) -> Value {
    json!({
        "name": spec.name,
        "description": spec.description,
        "input_schema": &*spec.parameters,
    })
}

/// The smallest thinking budget the API takes.
const MIN_THINKING_BUDGET: u64 = 1024;

/// A thinking budget for the effort, below `max_tokens` (none when
/// `max_tokens` leaves no room).
fn thinking_budget(provider: &Provider, max_tokens: u64) -> Option<u64> {
    let wanted = match provider.reasoning_effort? {
        Effort::Low => 2_048,
        Effort::Medium => 8_192,
        Effort::High => 24_576,
    };
    let budget = wanted.min(max_tokens.saturating_sub(1));
    (budget >= MIN_THINKING_BUDGET).then_some(budget)
}

/// One history message's role and content blocks (none: an empty
/// assistant message, which the API refuses and is not sent).
fn blocks(message: &Message) -> (&'static str, Vec<Value>) {
    match message {
        Message::User { content, images } if images.is_empty() => {
            ("user", vec![json!({"type": "text", "text": content})])
        }
        Message::User { content, images } => {
            // Image blocks with a base64 source, then the text (Anthropic's
            // "Vision" guide: images before the text work best; the
            // Messages API reference, `ImageBlockParam`).
            let mut blocks: Vec<Value> = images
                .iter()
                .map(|image| {
                    json!({"type": "image", "source": {
                        "type": "base64", "media_type": image.mime_type, "data": image.data,
                    }})
                })
                .collect();
            if content.len() > 0 {
                blocks.push(json!({"type": "text", "text": content}));
            }
            ("user", blocks)
        }
        Message::Tool {
            call_id,
            content,
            success,
        } => {
            let mut result =
                json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
            if !success {
                // `ToolResultBlockParam.is_error`: "Set to true if the
                // tool execution resulted in an error"; omitted otherwise.
                result["is_error"] = json!(true);
            }
            ("user", vec![result])
        }
        Message::Assistant(assistant) => {
            let mut blocks = Vec::new();
            if let Some(Value::Array(thinking)) = assistant
                .provider_data
                .as_ref()
                .filter(|d| d.wire == Wire::Anthropic)
                .map(|d| &d.value)
            {
                blocks.extend(thinking.iter().cloned());
            }
            // Read back once (a text with escapes is unescaped to a copy).
            if let Some(text) = assistant
                .text
                .as_ref()
                .map(Text::as_str)
                .filter(|t| !t.trim().is_empty())
            {
                blocks.push(json!({"type": "text", "text": text}));
            }
            for call in &assistant.tool_calls {
                let input: Value = serde_json::from_str(&call.arguments.as_str())
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({}));
                blocks.push(
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                );
            }
            ("assistant", blocks)
        }
    }
}

/// One history message's content blocks, comma-joined (empty when it has
/// none).
pub(super) fn fragment(_: &Provider, message: &Message) -> Vec<u8> {
    to_json_joined(&blocks(message).1)
}

/// A request that ends with the assistant's message (a paused turn sent
/// back to continue) must not end in whitespace: the API answers 400
/// "final assistant content cannot end with trailing whitespace". Only
/// that last text is trimmed; whitespace-only text never gets this far.
fn trim_final_text(blocks: &mut [Value]) {
    let Some(block) = blocks.last_mut().filter(|b| b["type"] == "text") else {
        return;
    };
    if let Some(text) = block["text"].as_str() {
        let trimmed = text.trim_end();
        if trimmed.len() != text.len() {
            block["text"] = json!(trimmed);
        }
    }
}

/// The conversation as Anthropic messages: alternating roles (consecutive
/// messages of one role merged), tool results first in their user
/// message; each message's blocks as `fragments` holds them, but for the
/// very last block's message, rendered here with what only the last block
/// gets (the cache mark, a paused turn's trimmed text). Keys in the order
/// serde_json's map writes them, as the whole body once was one `Value`.
pub(super) fn body(
    provider: &Provider,
    request: &Request<'_>,
    fragments: &[Parts],
) -> Result<Body, ProviderError> {
    let history = request.history;
    let mut groups: Vec<(&'static str, Vec<usize>)> = Vec::new();
    for (index, message) in history.iter().enumerate() {
        if fragments.get(index).is_none_or(Parts::is_empty) {
            continue;
        }
        let role = match message {
            Message::Assistant(_) => "assistant",
            Message::User { .. } | Message::Tool { .. } => "user",
        };
        match groups.last_mut() {
            Some((last, members)) if *last == role => members.push(index),
            _ => groups.push((role, vec![index])),
        }
    }
    for (_, members) in &mut groups {
        // Tool results must lead their user message.
        members.sort_by_key(|&i| !matches!(history[i], Message::Tool { .. }));
    }
    let last = groups
        .last()
        .and_then(|(_, members)| members.last().copied());
    let last_fragment = last.map(|index| {
        let (role, mut blocks) = blocks(&history[index]);
        if role == "assistant" {
            trim_final_text(&mut blocks);
        }
        if provider.prompt_cache {
            if let Some(block) = blocks.last_mut() {
                block["cache_control"] = json!({"type": "ephemeral"});
            }
        }
        Bytes::from(to_json_joined(&blocks))
    });
    // A budget's lower cap, or the provider's.
    let max_tokens = request
        .max_output_tokens
        .unwrap_or(provider.max_output_tokens);
    let mut body = Body::default();
    body.push(&b"{\"max_tokens\":"[..]);
    body.push_json(&max_tokens)?;
    body.push(&b",\"messages\":["[..]);
    for (n, (role, members)) in groups.iter().enumerate() {
        body.push(&b"{\"content\":["[..]);
        for (k, &index) in members.iter().enumerate() {
            if k > 0 {
                body.push(&b","[..]);
            }
            match (&last_fragment, last == Some(index)) {
                (Some(fresh), true) => body.push(fresh.clone()),
                _ => body.push_parts(&fragments[index]),
            }
        }
        body.push(&b"],\"role\":"[..]);
        body.push_json(role)?;
        body.push(if n + 1 < groups.len() {
            &b"},"[..]
        } else {
            &b"}"[..]
        });
    }
    body.push(&b"],\"model\":"[..]);
    body.push_json(&provider.model)?;
    body.push(&b",\"stream\":true,\"system\":"[..]);
    let mut system = json!({"type": "text", "text": request.system});
    if provider.prompt_cache {
        system["cache_control"] = json!({"type": "ephemeral"});
    }
    body.push_json(&[system])?;
    if let Some(budget) = thinking_budget(provider, max_tokens) {
        body.push(&b",\"thinking\":"[..]);
        body.push_json(&json!({"type": "enabled", "budget_tokens": budget}))?;
    }
    if !request.tools.is_empty() {
        body.push(&b",\"tools\":"[..]);
        body.push_json(&request.tools.iter().map(tool).collect::<Vec<_>>())?;
    }
    body.push(&b"}"[..]);
    Ok(body)
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default, borrow)]
    delta: Option<BlockDelta<'a>>,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

/// `content_block_delta.delta` and `message_delta.delta`.
#[derive(Deserialize)]
struct BlockDelta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

/// A thinking block being streamed.
struct ThinkingBlock {
    thinking: String,
    signature: String,
}

/// Reads Messages events into the assembler.
#[derive(Default)]
pub(super) struct Parser {
    /// The call slot of each `tool_use` block, by block index.
    calls: HashMap<u64, usize>,
    /// Thinking blocks being streamed, by block index.
    thinking: HashMap<u64, ThinkingBlock>,
    /// Finished thinking and redacted-thinking blocks, in order.
    blocks: Vec<Value>,
    /// What the stream reported so far (`message_start`, then each
    /// `message_delta`).
    usage: Usage,
}

impl Parser {
    /// `content_block_start`: a tool call, thinking, redacted thinking or
    /// text begins.
    fn block_start(
        &mut self,
        index: u64,
        block: Value,
        asm: &mut Assembler,
    ) -> Result<(), ProviderError> {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                let slot = asm.new_call()?;
                self.calls.insert(index, slot);
                asm.tool_call(
                    slot,
                    block.get("id").and_then(Value::as_str),
                    block.get("name").and_then(Value::as_str),
                    None,
                )?;
            }
            Some("thinking") => {
                let text = block.get("thinking").and_then(Value::as_str).unwrap_or("");
                asm.reasoning(text)?;
                self.thinking.insert(
                    index,
                    ThinkingBlock {
                        thinking: text.to_string(),
                        signature: block
                            .get("signature")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    },
                );
            }
            Some("redacted_thinking") => {
                // Opaque; it arrives whole and goes back whole.
                self.keep(block, asm);
            }
            Some("text") => {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    asm.text(text)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `content_block_delta`: more of a block's text, arguments, thinking
    /// or signature.
    fn block_delta(
        &mut self,
        index: u64,
        delta: &BlockDelta<'_>,
        asm: &mut Assembler,
    ) -> Result<(), ProviderError> {
        match delta.kind.as_deref() {
            Some("text_delta") => asm.text(delta.text.as_deref().unwrap_or(""))?,
            Some("input_json_delta") => {
                if let Some(&slot) = self.calls.get(&index) {
                    asm.tool_call(slot, None, None, delta.partial_json.as_deref())?;
                }
            }
            Some("thinking_delta") => {
                let text = delta.thinking.as_deref().unwrap_or("");
                asm.reasoning(text)?;
                if let Some(block) = self.thinking.get_mut(&index) {
                    block.thinking.push_str(text);
                }
            }
            Some("signature_delta") => {
                if let Some(block) = self.thinking.get_mut(&index) {
                    block
                        .signature
                        .push_str(delta.signature.as_deref().unwrap_or(""));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl WireParser for Parser {
    fn apply(
        &mut self,
        data: &[u8],
        asm: &mut Assembler,
        redact: &Redactor,
    ) -> Result<Flow, ProviderError> {
        let event: Event = serde_json::from_slice(data).map_err(|err| {
            ProviderError::provider(format!("malformed provider stream event: {err}"))
        })?;
        let index = event.index.unwrap_or(0);
        match event.kind.as_ref() {
            "message_start" => {
                if let Some(usage) = event.message.as_ref().and_then(|m| m.get("usage")) {
                    self.usage = Usage {
                        output: number(usage, "output_tokens"),
                        ..input_usage(usage)
                    };
                    asm.usage(self.usage);
                }
            }
            "content_block_start" => {
                let block = event.content_block.unwrap_or(Value::Null);
                self.block_start(index, block, asm)?;
            }
            "content_block_delta" => {
                let Some(delta) = event.delta else {
                    return Ok(Flow::Continue);
                };
                self.block_delta(index, &delta, asm)?;
            }
            "content_block_stop" => {
                if let Some(block) = self.thinking.remove(&index) {
                    let value = json!({
                        "type": "thinking",
                        "thinking": block.thinking,
                        "signature": block.signature,
                    });
                    self.keep(value, asm);
                }
            }
            "message_delta" => {
                if let Some(reason) = event.delta.as_ref().and_then(|d| d.stop_reason.as_deref()) {
                    asm.finish(reason);
                    match reason {
                        // A streaming classifier stopped the answer; no
                        // refusal text of its own comes (streaming
                        // refusals doc).
                        "refusal" => asm.end(End::Refused),
                        // "You may provide the response back as-is in a
                        // subsequent request to let the model continue"
                        // (Messages API reference, `stop_reason`).
                        "pause_turn" => asm.end(End::Paused),
                        _ => {}
                    }
                }
                if let Some(usage) = &event.usage {
                    // Cumulative; input figures only when present and set.
                    self.usage.output = number(usage, "output_tokens").max(self.usage.output);
                    let input = input_usage(usage);
                    if input.input_tokens() > 0 {
                        self.usage = Usage {
                            output: self.usage.output,
                            ..input
                        };
                    }
                    asm.usage(self.usage);
                }
            }
            "message_stop" => {
                if asm.finish_reason().is_none() {
                    asm.finish("end_turn");
                }
                return Ok(Flow::Done);
            }
            "error" => {
                let error = event.error.unwrap_or_else(|| json!("the stream failed"));
                return Err(errors::from_value(None, &error, redact));
            }
            _ => {} // ping, and events added later
        }
        Ok(Flow::Continue)
    }
}

impl Parser {
    /// Keeps a block to send back with this message.
    fn keep(&mut self, block: Value, asm: &mut Assembler) {
        self.blocks.push(block);
        asm.provider_data(ProviderData {
            wire: Wire::Anthropic,
            value: Value::Array(self.blocks.clone()),
        });
    }
}

/// The input figures of a `usage` object, kept apart: SCV reports their
/// sum (input + cache creation + cache read, saturated) as input tokens.
fn input_usage(usage: &Value) -> Usage {
    Usage {
        input: number(usage, "input_tokens"),
        cache_write: number(usage, "cache_creation_input_tokens"),
        cache_read: number(usage, "cache_read_input_tokens"),
        ..Usage::default()
    }
}

fn number(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{share, AssistantMessage, Text, ToolCall};

    /// The `messages` a request of `history` sends.
    fn sent(history: &[Message]) -> Vec<Value> {
        let provider = Provider::for_tests(Wire::Anthropic);
        let fragments: Vec<Parts> = history
            .iter()
            .map(|m| share(fragment(&provider, m), m.texts()))
            .collect();
        let request = Request {
            system: "s",
            history,
            rendered: None,
            tools: &[],
            max_output_tokens: None,
        };
        let body = body(&provider, &request, &fragments).unwrap();
        let body: Value = serde_json::from_slice(&body.to_vec()).unwrap();
        body["messages"].as_array().unwrap().clone()
    }

    /// The body of a one-message request with output cap `cap`.
    fn capped(provider: &Provider, cap: Option<u64>) -> Value {
        let history = [Message::user("hi")];
        let fragments: Vec<Parts> = history
            .iter()
            .map(|m| crate::model::share(fragment(provider, m), m.texts()))
            .collect();
        let request = Request {
            system: "s",
            history: &history,
            rendered: None,
            tools: &[],
            max_output_tokens: cap,
        };
        serde_json::from_slice(&body(provider, &request, &fragments).unwrap().to_vec()).unwrap()
    }

    /// `max_tokens` is a budget's lower cap when there is one (and the
    /// thinking budget stays below it, or goes), else the provider's.
    #[test]
    fn a_budget_cap_replaces_max_tokens_and_bounds_thinking() {
        let mut provider = Provider::for_tests(Wire::Anthropic);
        provider.reasoning_effort = Some(Effort::Medium);
        let plain = capped(&provider, None);
        assert_eq!(plain["max_tokens"], 4096);
        assert_eq!(plain["thinking"]["budget_tokens"], 4095);
        let low = capped(&provider, Some(3000));
        assert_eq!(low["max_tokens"], 3000);
        assert_eq!(low["thinking"]["budget_tokens"], 2999);
        let least = capped(&provider, Some(1024));
        assert_eq!(least["max_tokens"], 1024);
        assert!(least.get("thinking").is_none(), "{least}");
    }

    fn assistant_with_call(thinking: Option<Value>) -> Message {
        Message::Assistant(AssistantMessage {
            text: Some("Let me look.".into()),
            tool_calls: vec![
                ToolCall {
                    id: "toolu_1".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"a\"}".into(),
                    provider_data: None,
                },
                ToolCall {
                    id: "toolu_2".into(),
                    name: "list_dir".into(),
                    arguments: Text::default(),
                    provider_data: None,
                },
            ],
            reasoning: None,
            provider_data: thinking.map(|value| ProviderData {
                wire: Wire::Anthropic,
                value,
            }),
        })
    }

    #[test]
    fn results_lead_one_user_message_and_thinking_goes_back_first() {
        let thinking = json!([{"type": "thinking", "thinking": "hmm", "signature": "sig"}]);
        let history = vec![
            Message::user("look around"),
            assistant_with_call(Some(thinking.clone())),
            Message::Tool {
                call_id: "toolu_1".into(),
                content: "A".into(),
                success: true,
            },
            Message::Tool {
                call_id: "toolu_2".into(),
                content: "B".into(),
                success: false,
            },
            Message::user("and then?"),
        ];
        let messages = sent(&history);
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][0], thinking[0]);
        assert_eq!(messages[1]["content"][2]["input"], json!({"path": "a"}));
        assert_eq!(messages[1]["content"][3]["input"], json!({}));
        let results = messages[2]["content"].as_array().unwrap();
        let kinds: Vec<&str> = results
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["tool_result", "tool_result", "text"]);
        assert!(results[0].get("is_error").is_none(), "{}", results[0]);
        assert_eq!(results[1]["is_error"], true);
    }

    #[test]
    fn another_wires_reasoning_is_not_sent() {
        let mut message = assistant_with_call(None);
        if let Message::Assistant(a) = &mut message {
            a.provider_data = Some(ProviderData {
                wire: Wire::Responses,
                value: json!([{"type": "reasoning", "encrypted_content": "x"}]),
            });
        }
        let messages = sent(&[Message::user("hi"), message]);
        assert_eq!(messages[1]["content"][0]["type"], "text");
    }

    #[test]
    fn a_thinking_stream_keeps_its_signed_block() {
        // Anthropic's streaming doc, "Streaming request with extended thinking".
        let mut parser = Parser::default();
        let mut asm = Assembler::default();
        for event in [
            json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":25,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me solve"}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
            json!({"type":"ping"}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"27 * 453 = 12,231"}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15,"input_tokens":0}}),
        ] {
            let flow = parser
                .apply(event.to_string().as_bytes(), &mut asm, &Redactor::default())
                .unwrap();
            assert_eq!(flow, Flow::Continue);
        }
        let flow = parser
            .apply(
                br#"{"type":"message_stop"}"#,
                &mut asm,
                &Redactor::default(),
            )
            .unwrap();
        assert_eq!(flow, Flow::Done);
        let (message, usage, finish) = asm.into_parts();
        assert_eq!(
            message.text.as_ref().map(Text::as_str).as_deref(),
            Some("27 * 453 = 12,231")
        );
        assert_eq!(
            message.reasoning.as_ref().map(Text::as_str).as_deref(),
            Some("Let me solve")
        );
        assert_eq!(
            message.provider_data.unwrap().value,
            json!([{"type":"thinking","thinking":"Let me solve","signature":"EqQB"}])
        );
        assert_eq!(
            usage.map(scv_protocol::Usage::from),
            Some(scv_protocol::Usage {
                input_tokens: 1125,
                output_tokens: 15
            })
        );
        assert_eq!(finish.as_deref(), Some("end_turn"));
    }

    #[test]
    fn a_paused_turn_goes_back_last_without_trailing_whitespace() {
        let paused = |text: &str| {
            Message::Assistant(AssistantMessage {
                text: Some(text.into()),
                ..Default::default()
            })
        };
        let rendered = sent(&[Message::user("search"), paused("Looking. \n")]);
        assert_eq!(rendered[1]["content"][0]["text"], "Looking.");
        // Earlier assistant text is sent as it came.
        let rendered = sent(&[
            Message::user("search"),
            paused("Looking. "),
            Message::user("and?"),
        ]);
        assert_eq!(rendered[1]["content"][0]["text"], "Looking. ");
        // A paused message and its continuation are one assistant turn.
        let rendered = sent(&[Message::user("search"), paused("A "), paused("B")]);
        assert_eq!(rendered.len(), 2);
        assert_eq!(rendered[1]["content"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_refusal_stop_reason_ends_the_response_refused() {
        // Streaming refusals doc: partial text, then `"stop_reason":
        // "refusal"`.
        let mut parser = Parser::default();
        let mut asm = Assembler::default();
        for event in [
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello.."}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"message_delta","delta":{"stop_reason":"refusal","stop_sequence":null},"usage":{"output_tokens":3}}),
            json!({"type":"message_stop"}),
        ] {
            parser
                .apply(event.to_string().as_bytes(), &mut asm, &Redactor::default())
                .unwrap();
        }
        assert_eq!(asm.ending(), End::Refused);
        let (message, _, finish) = asm.into_parts();
        assert_eq!(
            message.text.as_ref().map(Text::as_str).as_deref(),
            Some("Hello..")
        );
        assert_eq!(finish.as_deref(), Some("refusal"));
    }

    /// Found while writing the `anthropic_events` fuzz target (an input
    /// replayed through it): usage figures are the provider's, and their
    /// sum overflowed (a panic in debug builds, a
    /// wrapped figure in release).
    #[test]
    fn huge_usage_figures_saturate() {
        let mut parser = Parser::default();
        let mut asm = Assembler::default();
        let max = u64::MAX;
        for event in [
            json!({"type":"message_start","message":{"usage":{"input_tokens":max,"cache_creation_input_tokens":max,"cache_read_input_tokens":1,"output_tokens":1}}}),
            json!({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":max,"input_tokens":max,"cache_read_input_tokens":max}}),
        ] {
            parser
                .apply(event.to_string().as_bytes(), &mut asm, &Redactor::default())
                .unwrap();
        }
        let (_, usage, _) = asm.into_parts();
        assert_eq!(
            usage.map(scv_protocol::Usage::from),
            Some(scv_protocol::Usage {
                input_tokens: max,
                output_tokens: max
            })
        );
    }
}
