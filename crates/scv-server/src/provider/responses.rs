//! The OpenAI Responses wire (`wire = "responses"`):
//! `POST {base_url}/responses`, stateless (`store: false`) with the
//! encrypted reasoning items included and sent back, as codex does.
//!
//! Requests: the system prompt as `instructions`, history as input items
//! (`message`, `function_call`, `function_call_output`; an assistant
//! message's `reasoning` and `message` items in the order received, each
//! message with its `phase` as received), tools as
//! `{"type": "function", name, description, parameters}`, and
//! `reasoning: {effort, summary: "auto"}` when `reasoning_effort` is set.
//!
//! Streams are semantic events; there is no `[DONE]`: `response.completed`
//! (or `.incomplete`) ends a response, `response.failed` and `error` fail
//! it. A reasoning item's `encrypted_content` is taken from
//! `response.output_item.done` (it differs in the other copies of a real
//! stream), as is each message item kept to go back. A refusal
//! (`response.refusal.delta`, a `refusal` part) is shown as text and
//! makes the response a refusal. Shapes: OpenAI's API reference,
//! openai-python's types and a real gpt-5-mini capture (see the tests).

use super::assemble::{Assembler, End};
use super::body::Body;
use super::errors::{self, ProviderError, Redactor};
use super::settings::{to_json_joined, Provider, Request};
use super::wire::{Flow, WireParser};
use crate::model::{Message, Parts, ProviderData, Text, ToolSpec, Usage, Wire};
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::HashMap;

pub(super) fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "name": spec.name,
        "description": spec.description,
        "parameters": &*spec.parameters,
        "strict": false,
    })
}

/// One history message's input items (none, one, or several: kept
/// reasoning and message items, then its calls).
fn items(message: &Message) -> Vec<Value> {
    let mut items = Vec::new();
    match message {
        Message::User { content, images } if images.is_empty() => items.push(json!({
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": content}],
        })),
        Message::User { content, images } => {
            // `input_text` then `input_image` parts, each image as a
            // `data:` URL (OpenAI's API reference, "Create a model
            // response", `ResponseInputImage`: `detail` is required).
            let mut parts = Vec::with_capacity(images.len() + 1);
            if content.len() > 0 {
                parts.push(json!({"type": "input_text", "text": content}));
            }
            for image in images {
                parts.push(
                    json!({"type": "input_image", "image_url": image.data_url(), "detail": "auto"}),
                );
            }
            items.push(json!({"type": "message", "role": "user", "content": parts}));
        }
        Message::Assistant(assistant) => {
            // The kept reasoning and message items, in the order they
            // came; another wire's data is never sent here.
            let kept: &[Value] = match assistant
                .provider_data
                .as_ref()
                .filter(|d| d.wire == Wire::Responses)
                .map(|d| &d.value)
            {
                Some(Value::Array(kept)) => kept,
                _ => &[],
            };
            let text = assistant
                .text
                .as_ref()
                .map(Text::as_str)
                .unwrap_or_default();
            // The kept messages carry their phase; they stand for the
            // text when they hold all of it (else a stream ended
            // without some item's `output_item.done`, and the text
            // goes as one message).
            let whole = kept.iter().any(is_message) && kept_text(kept) == text;
            items.extend(
                kept.iter()
                    .filter(|item| whole || !is_message(item))
                    .cloned(),
            );
            if !whole && !text.is_empty() {
                items.push(json!({
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                }));
            }
            for call in &assistant.tool_calls {
                items.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }));
            }
        }
        Message::Tool {
            call_id, content, ..
        } => items.push(json!({
            "type": "function_call_output",
            "call_id": call_id,
            "output": content,
        })),
    }
    items
}

/// One history message as `input` items, comma-joined (empty when it has
/// none).
pub(super) fn fragment(_: &Provider, message: &Message) -> Vec<u8> {
    to_json_joined(&items(message))
}

/// `{"model", "instructions", "input": […history], "tools", "tool_choice",
/// "store", "stream", "include", "reasoning"}`, the history's items as
/// `fragments` holds them.
pub(super) fn body(
    provider: &Provider,
    request: &Request<'_>,
    fragments: &[Parts],
) -> Result<Body, ProviderError> {
    let mut body = Body::default();
    body.push(&b"{\"model\":"[..]);
    body.push_json(&provider.model)?;
    body.push(&b",\"instructions\":"[..]);
    body.push_json(request.system)?;
    body.push(&b",\"input\":["[..]);
    body.push_joined(fragments);
    body.push(&b"]"[..]);
    if !request.tools.is_empty() {
        body.push(&b",\"tools\":"[..]);
        body.push_json(&request.tools.iter().map(tool).collect::<Vec<_>>())?;
        body.push(&b",\"tool_choice\":\"auto\""[..]);
    }
    body.push(
        &b",\"store\":false,\"stream\":true,\"include\":[\"reasoning.encrypted_content\"]"[..],
    );
    if let Some(cap) = request.max_output_tokens {
        // Only when a budget holds it (reasoning tokens count).
        body.push(&b",\"max_output_tokens\":"[..]);
        body.push_json(&cap)?;
    }
    if let Some(effort) = provider.reasoning_effort {
        body.push(&b",\"reasoning\":"[..]);
        body.push_json(&json!({"effort": effort.as_str(), "summary": "auto"}))?;
    }
    body.push(&b"}"[..]);
    Ok(body)
}

/// The fields of a Responses event SCV reads.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item_id: Option<Cow<'a, str>>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    /// `error` events: flat (`code`, `message`) or nested (`error`).
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<Value>,
    /// `response.refusal.done`: the whole refusal text.
    #[serde(default, borrow)]
    refusal: Option<Cow<'a, str>>,
}

/// Reads Responses events into the assembler.
#[derive(Default)]
pub(super) struct Parser {
    /// The call slot of each function-call item id.
    calls: HashMap<String, usize>,
    /// Reasoning and message items (from `output_item.done`) to send
    /// back, in order.
    kept: Vec<Value>,
    /// Whether any summary text came for the current reasoning item part.
    summary_seen: bool,
    /// Refusal text was shown (from deltas).
    refusal_shown: bool,
}

impl WireParser for Parser {
    fn apply(
        &mut self,
        data: &[u8],
        asm: &mut Assembler,
        redact: &Redactor,
    ) -> Result<Flow, ProviderError> {
        if data == b"[DONE]" {
            // Some proxies append one; the terminal response event decides.
            return Ok(Flow::Continue);
        }
        let event: Event = serde_json::from_slice(data).map_err(|err| {
            ProviderError::provider(format!("malformed provider stream event: {err}"))
        })?;
        match event.kind.as_ref() {
            "response.output_text.delta" => {
                if let Some(delta) = &event.delta {
                    asm.text(delta)?;
                }
            }
            // The model declining, in its own words: shown as it streams,
            // and the response is a refusal.
            "response.refusal.delta" => {
                asm.end(End::Refused);
                if let Some(delta) = &event.delta {
                    self.refusal_shown = true;
                    asm.text(delta)?;
                }
            }
            "response.refusal.done" => {
                let refusal = event.refusal.as_deref().unwrap_or("");
                self.refused(refusal, asm)?;
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(delta) = &event.delta {
                    self.summary_seen = true;
                    asm.reasoning(delta)?;
                }
            }
            // Parts of a summary are paragraphs.
            "response.reasoning_summary_part.added"
                if event.summary_index.unwrap_or(0) > 0 && self.summary_seen =>
            {
                asm.reasoning("\n\n")?;
            }
            "response.output_item.added" => {
                if let Some(item) = &event.item {
                    self.item_added(item, asm)?;
                }
            }
            "response.function_call_arguments.delta" => {
                let slot = event.item_id.as_deref().and_then(|id| self.calls.get(id));
                if let (Some(&slot), Some(delta)) = (slot, &event.delta) {
                    asm.tool_call(slot, None, None, Some(delta))?;
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item {
                    self.item_done(item, asm)?;
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = event.response.unwrap_or(Value::Null);
                if let Some(usage) = response.get("usage").filter(|u| !u.is_null()) {
                    // `input_tokens` includes the cached ones, and
                    // `output_tokens` the reasoning ones.
                    let input = number(usage, "input_tokens");
                    let cached = usage
                        .pointer("/input_tokens_details/cached_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                        .min(input);
                    let output = number(usage, "output_tokens");
                    let reasoning = usage
                        .pointer("/output_tokens_details/reasoning_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                        .min(output);
                    asm.usage(Usage {
                        input: input - cached,
                        cache_read: cached,
                        cache_write: 0,
                        output,
                        reasoning,
                    });
                }
                let reason = response
                    .pointer("/incomplete_details/reason")
                    .and_then(Value::as_str)
                    .unwrap_or(if asm.calls() > 0 {
                        "tool_calls"
                    } else {
                        "stop"
                    });
                asm.finish(reason);
                return Ok(Flow::Done);
            }
            "response.failed" => {
                let error = event
                    .response
                    .as_ref()
                    .and_then(|r| r.get("error"))
                    .cloned()
                    .unwrap_or_else(|| json!("the response failed"));
                return Err(errors::from_value(None, &error, redact));
            }
            "error" => {
                let error = match (event.error, event.code, event.message) {
                    (Some(nested), _, _) => nested,
                    (None, code, message) => json!({"code": code, "message": message}),
                };
                return Err(errors::from_value(None, &error, redact));
            }
            _ => {}
        }
        Ok(Flow::Continue)
    }
}

impl Parser {
    fn item_added(&mut self, item: &Value, asm: &mut Assembler) -> Result<(), ProviderError> {
        if item.get("type").and_then(Value::as_str) != Some("function_call") {
            return Ok(());
        }
        let slot = asm.new_call()?;
        if let Some(id) = item.get("id").and_then(Value::as_str) {
            self.calls.insert(id.to_string(), slot);
        }
        asm.tool_call(
            slot,
            item.get("call_id").and_then(Value::as_str),
            item.get("name").and_then(Value::as_str),
            None,
        )
    }

    fn item_done(&mut self, item: Value, asm: &mut Assembler) -> Result<(), ProviderError> {
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let known = item
                    .get("id")
                    .and_then(Value::as_str)
                    .and_then(|id| self.calls.get(id))
                    .copied();
                let slot = match known {
                    Some(slot) => slot,
                    None => asm.new_call()?,
                };
                // The final arguments are authoritative when no deltas came.
                let arguments = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .filter(|_| asm.call_arguments(slot).is_empty());
                asm.tool_call(
                    slot,
                    item.get("call_id").and_then(Value::as_str),
                    item.get("name")
                        .and_then(Value::as_str)
                        .filter(|_| known.is_none()),
                    arguments,
                )
            }
            Some("message") => {
                // A refusal part, streamed or not, makes this a refusal.
                let refusals = item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|part| part.get("type").and_then(Value::as_str) == Some("refusal"));
                let mut refused = false;
                for part in refusals {
                    let text = part.get("refusal").and_then(Value::as_str).unwrap_or("");
                    self.refused(text, asm)?;
                    refused = true;
                }
                if !refused {
                    // Kept with its `phase`, which gpt-5-codex class
                    // models want back on every assistant message.
                    self.keep(replayable_message(&item), asm);
                }
                Ok(())
            }
            Some("reasoning") => {
                // Without its encrypted content a stateless request cannot
                // use the item (the API answers 404).
                if item.get("encrypted_content").is_some_and(|c| c.is_string()) {
                    self.keep(replayable(item), asm);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Keeps an item to send back with this message.
    fn keep(&mut self, item: Value, asm: &mut Assembler) {
        self.kept.push(item);
        asm.provider_data(ProviderData {
            wire: Wire::Responses,
            value: Value::Array(self.kept.clone()),
        });
    }

    /// The response is a refusal; `text` (its whole text) is shown when no
    /// delta showed it.
    fn refused(&mut self, text: &str, asm: &mut Assembler) -> Result<(), ProviderError> {
        asm.end(End::Refused);
        if !self.refusal_shown && !text.is_empty() {
            self.refusal_shown = true;
            asm.text(text)?;
        }
        Ok(())
    }
}

/// A reasoning item as it may go back: its id, summary and encrypted
/// content (output-only fields such as `status` dropped).
fn replayable(mut item: Value) -> Value {
    if let Value::Object(map) = &mut item {
        map.retain(|key, _| {
            matches!(
                key.as_str(),
                "type" | "id" | "summary" | "encrypted_content" | "content"
            )
        });
        map.entry("summary").or_insert_with(|| json!([]));
    }
    item
}

/// An assistant message item as it goes back: its `output_text` parts
/// (text only) and its `phase` exactly as received, when it had one
/// (openai-python `ResponseOutputMessage.phase`: "preserve and resend
/// phase on all assistant messages"); output-only fields such as `id`,
/// `status` and annotations are dropped, as for a message SCV builds.
fn replayable_message(item: &Value) -> Value {
    let content: Vec<Value> = item
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
        .map(|part| json!({"type": "output_text", "text": part.get("text").cloned().unwrap_or(json!(""))}))
        .collect();
    let mut message = json!({"type": "message", "role": "assistant", "content": content});
    if let Some(phase) = item.get("phase").filter(|p| !p.is_null()) {
        message["phase"] = phase.clone();
    }
    message
}

fn is_message(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some("message")
}

/// The text of the kept message items, in order.
fn kept_text(kept: &[Value]) -> String {
    kept.iter()
        .filter(|item| is_message(item))
        .flat_map(|item| item["content"].as_array().into_iter().flatten())
        .filter_map(|part| part["text"].as_str())
        .collect()
}

fn number(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::assemble::Delta;

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

    /// A budget's output cap is `max_output_tokens`; without one, none.
    #[test]
    fn a_budget_cap_goes_in_the_body() {
        let provider = Provider::for_tests(Wire::Responses);
        let plain = capped(&provider, None);
        assert!(plain.get("max_output_tokens").is_none(), "{plain}");
        assert_eq!(capped(&provider, Some(1500))["max_output_tokens"], 1500);
    }

    fn parse(events: &[Value]) -> (Assembler, Vec<Delta>) {
        let mut parser = Parser::default();
        let mut asm = Assembler::default();
        let mut deltas = Vec::new();
        for event in events {
            parser
                .apply(event.to_string().as_bytes(), &mut asm, &Redactor::default())
                .unwrap();
            while let Some(delta) = asm.next_delta() {
                deltas.push(delta);
            }
        }
        (asm, deltas)
    }

    #[test]
    fn reasoning_items_text_and_calls_from_a_real_stream_shape() {
        // Event shapes from a real gpt-5-mini `store: false` capture and
        // OpenAI's API reference (function calls, reasoning summaries).
        let (asm, deltas) = parse(&[
            json!({"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","usage":null}}),
            json!({"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"added-copy","summary":[]}}),
            json!({"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}),
            json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Plan**"}),
            json!({"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":1,"part":{"type":"summary_text","text":""}}),
            json!({"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":1,"delta":"read it"}),
            json!({"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"done-copy","summary":[{"type":"summary_text","text":"**Plan**"}],"status":"completed"}}),
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"Let me ","logprobs":[],"obfuscation":"x"}),
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"read.","logprobs":[]}),
            json!({"type":"response.output_item.added","sequence_number":5,"output_index":2,"item":{"id":"fc_01","type":"function_call","status":"in_progress","arguments":"","call_id":"call_abc123","name":"read_file"}}),
            json!({"type":"response.function_call_arguments.delta","item_id":"fc_01","output_index":2,"delta":"{\"pa"}),
            json!({"type":"response.function_call_arguments.delta","item_id":"fc_01","output_index":2,"delta":"th\":\"a\"}"}),
            json!({"type":"response.output_item.done","output_index":2,"item":{"id":"fc_01","type":"function_call","status":"completed","arguments":"{\"path\":\"a\"}","call_id":"call_abc123","name":"read_file"}}),
            json!({"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":72,"input_tokens_details":{"cached_tokens":0},"output_tokens":25,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":97}}}),
        ]);
        assert_eq!(
            deltas,
            [
                Delta::Reasoning("**Plan**".into()),
                Delta::Reasoning("\n\n".into()),
                Delta::Reasoning("read it".into()),
                Delta::Text("Let me ".into()),
                Delta::Text("read.".into()),
            ]
        );
        let (message, usage, finish) = asm.into_parts();
        assert_eq!(
            message.text.as_ref().map(Text::as_str).as_deref(),
            Some("Let me read.")
        );
        assert_eq!(message.tool_calls[0].id, "call_abc123");
        assert_eq!(message.tool_calls[0].arguments, "{\"path\":\"a\"}");
        let data = message.provider_data.unwrap();
        assert_eq!(data.wire, Wire::Responses);
        assert_eq!(
            data.value,
            json!([{"id":"rs_1","type":"reasoning","encrypted_content":"done-copy","summary":[{"type":"summary_text","text":"**Plan**"}]}])
        );
        assert_eq!(usage.unwrap().input_tokens(), 72);
        assert_eq!(finish.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn a_refusal_is_shown_once_whether_or_not_it_streamed() {
        // openai-python: `response.refusal.delta`, `response.refusal.done`,
        // a message item whose part is `{"type": "refusal", ..}`.
        let done = json!({"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}});
        let completed = json!({"type":"response.completed","response":{"status":"completed"}});
        let (asm, deltas) = parse(&[
            json!({"type":"response.refusal.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"I can't "}),
            json!({"type":"response.refusal.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"help with that."}),
            json!({"type":"response.refusal.done","item_id":"msg_1","output_index":0,"content_index":0,"refusal":"I can't help with that."}),
            done.clone(),
            completed.clone(),
        ]);
        assert_eq!(deltas.len(), 2);
        assert_eq!(asm.ending(), End::Refused);
        // Only the finished item: its text is shown once.
        let (asm, deltas) = parse(&[done.clone(), done, completed.clone()]);
        assert_eq!(deltas, [Delta::Text("I can't help with that.".into())]);
        assert_eq!(asm.ending(), End::Refused);
        let (asm, _) = parse(&[completed]);
        assert_eq!(asm.ending(), End::Finished);
    }

    #[test]
    fn message_items_go_back_in_order_with_their_phase() {
        // Items as a gpt-5-codex class model streams them: a commentary
        // message, reasoning, the final answer (openai-python
        // `ResponseOutputMessage.phase`).
        let (asm, _) = parse(&[
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Checking. "}),
            json!({"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","status":"completed","role":"assistant","phase":"commentary","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"Checking. "}]}}),
            json!({"type":"response.output_item.done","output_index":1,"item":{"id":"rs_1","type":"reasoning","encrypted_content":"enc","summary":[]}}),
            json!({"type":"response.output_text.delta","item_id":"msg_2","output_index":2,"content_index":0,"delta":"Done."}),
            json!({"type":"response.output_item.done","output_index":2,"item":{"id":"msg_2","type":"message","status":"completed","role":"assistant","phase":"final_answer","content":[{"type":"output_text","annotations":[],"text":"Done."}]}}),
            json!({"type":"response.completed","response":{"status":"completed"}}),
        ]);
        let (message, _, _) = asm.into_parts();
        assert_eq!(
            message.text.as_ref().map(Text::as_str).as_deref(),
            Some("Checking. Done.")
        );
        let mut assistant = message.clone();
        let sent = items(&Message::Assistant(message));
        assert_eq!(
            sent,
            [
                json!({"type":"message","role":"assistant","phase":"commentary","content":[{"type":"output_text","text":"Checking. "}]}),
                json!({"type":"reasoning","id":"rs_1","encrypted_content":"enc","summary":[]}),
                json!({"type":"message","role":"assistant","phase":"final_answer","content":[{"type":"output_text","text":"Done."}]}),
            ]
        );
        // Kept items that do not hold all the text (a stream that ended
        // before an item was done): the text goes as one message.
        assistant.text = Some("Checking. Done. And more".into());
        let sent = items(&Message::Assistant(assistant));
        assert_eq!(
            sent,
            [
                json!({"type":"reasoning","id":"rs_1","encrypted_content":"enc","summary":[]}),
                json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking. Done. And more"}]}),
            ]
        );
    }
}
