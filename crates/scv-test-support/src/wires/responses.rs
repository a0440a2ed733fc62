//! OpenAI Responses (`POST /v1/responses`): stream builders, error bodies
//! and request rules.
//!
//! Stream shapes are from a real `gpt-5-mini` capture with `store:false`
//! (research notes 2.2), OpenAI's API reference examples for reasoning
//! summary events (notes 2.3), function-call fixtures mirroring real
//! traffic (notes 2.4) and the openai-openapi / SDK types for the terminal
//! events (notes 2.5). Every event has an `event: <type>` line and a
//! `data:` line whose JSON `type` is the same and a `sequence_number`
//! counting from 0; there is no `[DONE]`: the stream ends after
//! `response.completed`, `response.incomplete` or `response.failed`.
//!
//! A [`Response`] streams `response.created`, `response.in_progress`, the
//! events of each output item in order (see [`Item`]), then the terminal
//! event (sent only for [`Ending::Done`]) carrying the whole response with
//! `usage`.

use crate::reply::{fragment, Ending, Reply, SseEvent, Wire};
use serde_json::{json, Value};
use std::time::Duration;

/// One output item.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A `reasoning` item: `response.output_item.added` (summary `[]`),
    /// per summary part `response.reasoning_summary_part.added`,
    /// `response.reasoning_summary_text.delta` per fragment,
    /// `response.reasoning_summary_text.done`,
    /// `response.reasoning_summary_part.done`, then
    /// `response.output_item.done` with the summary and
    /// `encrypted_content`. As in the real capture, the
    /// `encrypted_content` differs between `output_item.added`
    /// (`"<value>.added"`), `output_item.done` (exactly `<value>`) and the
    /// terminal response's output copy (`"<value>.snapshot"`): only
    /// `output_item.done` is authoritative.
    Reasoning {
        /// Summary parts, each streamed as these fragments (none: no
        /// summary events, as with summary disabled).
        summary: Vec<Vec<String>>,
        encrypted_content: String,
    },
    /// An assistant `message` item with one `output_text` part:
    /// `output_item.added`, `content_part.added`, `output_text.delta` per
    /// fragment (with `logprobs: []` and an `obfuscation` string),
    /// `output_text.done`, `content_part.done`, `output_item.done`.
    /// `phase` (`"commentary"` or `"final_answer"`), when set, is on the
    /// item in `output_item.added`, `output_item.done` and the terminal
    /// response's output, as gpt-5-codex class models send it
    /// (openai-python `types/responses/response_output_message.py`:
    /// "preserve and resend phase on all assistant messages").
    Message {
        fragments: Vec<String>,
        phase: Option<String>,
    },
    /// An assistant `message` item whose one part is a `refusal`:
    /// `output_item.added`, `content_part.added` (`{"type": "refusal",
    /// "refusal": ""}`), `response.refusal.delta` per fragment,
    /// `response.refusal.done` (with the whole `refusal`),
    /// `content_part.done`, `output_item.done` (content `[{"type":
    /// "refusal", "refusal": ..}]`); the response still completes.
    /// Shapes: openai-python `types/responses/` —
    /// `response_refusal_delta_event.py`, `response_refusal_done_event.py`,
    /// `response_output_refusal.py`, `response_content_part_added_event.py`.
    Refusal(Vec<String>),
    /// A `function_call` item: `output_item.added` (`arguments: ""`),
    /// `function_call_arguments.delta` pieces, `.done`, then
    /// `output_item.done` with the full arguments.
    FunctionCall {
        call_id: String,
        name: String,
        arguments: Value,
    },
}

impl Item {
    pub fn message<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Item {
        Item::Message {
            fragments: strings(fragments),
            phase: None,
        }
    }

    /// A message item carrying `phase` (`"commentary"`, `"final_answer"`).
    pub fn phased_message<S: AsRef<str>>(
        fragments: impl IntoIterator<Item = S>,
        phase: &str,
    ) -> Item {
        Item::Message {
            fragments: strings(fragments),
            phase: Some(phase.into()),
        }
    }

    /// A refusal message item streamed as `fragments`.
    pub fn refusal<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Item {
        Item::Refusal(strings(fragments))
    }

    pub fn function_call(call_id: &str, name: &str, arguments: Value) -> Item {
        Item::FunctionCall {
            call_id: call_id.into(),
            name: name.into(),
            arguments,
        }
    }

    /// `function_call` items for `(call_id, name, arguments)` triples.
    pub fn function_calls(calls: &[(&str, &str, Value)]) -> Vec<Item> {
        calls
            .iter()
            .map(|(id, name, args)| Item::function_call(id, name, args.clone()))
            .collect()
    }

    /// A reasoning item with one summary part (no part if `fragments` is
    /// empty).
    pub fn reasoning<S: AsRef<str>>(
        fragments: impl IntoIterator<Item = S>,
        encrypted_content: &str,
    ) -> Item {
        let part = strings(fragments);
        Item::Reasoning {
            summary: if part.is_empty() {
                Vec::new()
            } else {
                vec![part]
            },
            encrypted_content: encrypted_content.into(),
        }
    }
}

fn strings<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Vec<String> {
    fragments
        .into_iter()
        .map(|f| f.as_ref().to_string())
        .collect()
}

/// Token counts (SDK `ResponseUsage`; `input_tokens` includes the cached
/// tokens, unlike Anthropic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub cached_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
}

impl Default for Usage {
    fn default() -> Usage {
        Usage {
            input_tokens: 72,
            cached_tokens: 0,
            output_tokens: 25,
            reasoning_tokens: 0,
        }
    }
}

impl Usage {
    fn json(&self) -> Value {
        json!({
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        })
    }
}

/// How the response ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `response.completed`, `status: "completed"`.
    Completed,
    /// `response.incomplete`, `status: "incomplete"`,
    /// `incomplete_details.reason` (`"max_output_tokens"`,
    /// `"content_filter"`).
    Incomplete { reason: String },
    /// `response.failed`, `status: "failed"`, `error: {code, message}`,
    /// `usage: null` (openai-openapi example, notes 2.5).
    Failed { code: String, message: String },
}

/// A streamed response, built into a [`Reply`] with [`Response::reply`]
/// (or `Reply::from`).
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub items: Vec<Item>,
    pub outcome: Outcome,
    pub usage: Usage,
    /// Characters per `function_call_arguments.delta` piece.
    pub piece: usize,
}

fn response_object(status: &str, output: Vec<Value>, usage: Value) -> Value {
    json!({
        "id": "resp_mock", "object": "response", "created_at": 1_750_000_000,
        "status": status, "background": false, "error": null, "incomplete_details": null,
        "instructions": null, "max_output_tokens": null, "model": "mock-model",
        "output": output, "parallel_tool_calls": true, "previous_response_id": null,
        "store": false, "usage": usage, "metadata": {},
    })
}

impl Response {
    pub fn new(items: Vec<Item>) -> Response {
        Response {
            items,
            outcome: Outcome::Completed,
            usage: Usage::default(),
            piece: 7,
        }
    }

    /// Ends with `response.incomplete` for `reason`.
    pub fn incomplete(mut self, reason: &str) -> Response {
        self.outcome = Outcome::Incomplete {
            reason: reason.into(),
        };
        self
    }

    /// Ends with `response.failed` carrying `error: {code, message}`.
    pub fn failed(mut self, code: &str, message: &str) -> Response {
        self.outcome = Outcome::Failed {
            code: code.into(),
            message: message.into(),
        };
        self
    }

    pub fn usage(mut self, usage: Usage) -> Response {
        self.usage = usage;
        self
    }

    /// Argument delta pieces of `chars` characters.
    pub fn piece(mut self, chars: usize) -> Response {
        self.piece = chars.max(1);
        self
    }

    /// The events and the terminal event, numbered.
    fn build(&self) -> (Vec<SseEvent>, SseEvent) {
        let mut events: Vec<Value> = vec![
            json!({"type": "response.created",
                "response": response_object("in_progress", Vec::new(), Value::Null)}),
            json!({"type": "response.in_progress",
                "response": response_object("in_progress", Vec::new(), Value::Null)}),
        ];
        let mut output = Vec::new();
        for (output_index, item) in self.items.iter().enumerate() {
            let snapshot = match item {
                Item::Reasoning {
                    summary,
                    encrypted_content,
                } => {
                    let id = format!("rs_mock_{output_index}");
                    events.push(json!({"type": "response.output_item.added",
                        "output_index": output_index,
                        "item": {"id": id, "type": "reasoning",
                            "encrypted_content": format!("{encrypted_content}.added"), "summary": []}}));
                    let mut parts = Vec::new();
                    for (summary_index, fragments) in summary.iter().enumerate() {
                        let base = |kind: &str| {
                            json!({"type": kind, "item_id": id, "output_index": output_index,
                                "summary_index": summary_index})
                        };
                        let mut added = base("response.reasoning_summary_part.added");
                        added["part"] = json!({"type": "summary_text", "text": ""});
                        events.push(added);
                        for delta in fragments {
                            let mut event = base("response.reasoning_summary_text.delta");
                            event["delta"] = json!(delta);
                            events.push(event);
                        }
                        let text = fragments.concat();
                        let mut done = base("response.reasoning_summary_text.done");
                        done["text"] = json!(text);
                        events.push(done);
                        let part = json!({"type": "summary_text", "text": text});
                        let mut done = base("response.reasoning_summary_part.done");
                        done["part"] = part.clone();
                        events.push(done);
                        parts.push(part);
                    }
                    let item = json!({"id": id, "type": "reasoning",
                        "encrypted_content": encrypted_content, "summary": parts});
                    events.push(json!({"type": "response.output_item.done",
                        "output_index": output_index, "item": item}));
                    let mut snapshot = item;
                    snapshot["encrypted_content"] = json!(format!("{encrypted_content}.snapshot"));
                    snapshot
                }
                Item::Message { fragments, phase } => {
                    let id = format!("msg_mock_{output_index}");
                    let mut added = json!({"id": id, "type": "message", "status": "in_progress",
                        "content": [], "role": "assistant"});
                    if let Some(phase) = phase {
                        added["phase"] = json!(phase);
                    }
                    events.push(json!({"type": "response.output_item.added",
                        "output_index": output_index, "item": added}));
                    let base = |kind: &str| {
                        json!({"type": kind, "item_id": id, "output_index": output_index,
                            "content_index": 0})
                    };
                    let mut added = base("response.content_part.added");
                    added["part"] = json!({"type": "output_text", "annotations": [], "logprobs": [], "text": ""});
                    events.push(added);
                    for delta in fragments {
                        let mut event = base("response.output_text.delta");
                        event["delta"] = json!(delta);
                        event["logprobs"] = json!([]);
                        event["obfuscation"] = json!("mockpad");
                        events.push(event);
                    }
                    let text = fragments.concat();
                    let mut done = base("response.output_text.done");
                    done["text"] = json!(text);
                    done["logprobs"] = json!([]);
                    events.push(done);
                    let part = json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text});
                    let mut done = base("response.content_part.done");
                    done["part"] = part.clone();
                    events.push(done);
                    let mut item = json!({"id": id, "type": "message", "status": "completed",
                        "content": [part], "role": "assistant"});
                    if let Some(phase) = phase {
                        item["phase"] = json!(phase);
                    }
                    events.push(json!({"type": "response.output_item.done",
                        "output_index": output_index, "item": item}));
                    item
                }
                Item::Refusal(fragments) => {
                    let id = format!("msg_mock_{output_index}");
                    events.push(json!({"type": "response.output_item.added",
                        "output_index": output_index,
                        "item": {"id": id, "type": "message", "status": "in_progress",
                            "content": [], "role": "assistant"}}));
                    let base = |kind: &str| {
                        json!({"type": kind, "item_id": id, "output_index": output_index,
                            "content_index": 0})
                    };
                    let mut added = base("response.content_part.added");
                    added["part"] = json!({"type": "refusal", "refusal": ""});
                    events.push(added);
                    for delta in fragments {
                        let mut event = base("response.refusal.delta");
                        event["delta"] = json!(delta);
                        events.push(event);
                    }
                    let refusal = fragments.concat();
                    let mut done = base("response.refusal.done");
                    done["refusal"] = json!(refusal);
                    events.push(done);
                    let part = json!({"type": "refusal", "refusal": refusal});
                    let mut done = base("response.content_part.done");
                    done["part"] = part.clone();
                    events.push(done);
                    let item = json!({"id": id, "type": "message", "status": "completed",
                        "content": [part], "role": "assistant"});
                    events.push(json!({"type": "response.output_item.done",
                        "output_index": output_index, "item": item}));
                    item
                }
                Item::FunctionCall {
                    call_id,
                    name,
                    arguments,
                } => {
                    let id = format!("fc_mock_{output_index}");
                    let arguments = arguments.to_string();
                    events.push(json!({"type": "response.output_item.added",
                        "output_index": output_index,
                        "item": {"id": id, "type": "function_call", "status": "in_progress",
                            "arguments": "", "call_id": call_id, "name": name}}));
                    for delta in fragment(&arguments, self.piece) {
                        events.push(json!({"type": "response.function_call_arguments.delta",
                            "item_id": id, "output_index": output_index, "delta": delta}));
                    }
                    events.push(json!({"type": "response.function_call_arguments.done",
                        "item_id": id, "output_index": output_index, "arguments": arguments}));
                    let item = json!({"id": id, "type": "function_call", "status": "completed",
                        "arguments": arguments, "call_id": call_id, "name": name});
                    events.push(json!({"type": "response.output_item.done",
                        "output_index": output_index, "item": item}));
                    item
                }
            };
            output.push(snapshot);
        }
        let terminal = match &self.outcome {
            Outcome::Completed => json!({"type": "response.completed",
                "response": response_object("completed", output, self.usage.json())}),
            Outcome::Incomplete { reason } => {
                let mut response = response_object("incomplete", output, self.usage.json());
                response["incomplete_details"] = json!({"reason": reason});
                json!({"type": "response.incomplete", "response": response})
            }
            Outcome::Failed { code, message } => failed_json(code, message, output),
        };
        let numbered = |(number, mut event): (usize, Value)| {
            event["sequence_number"] = json!(number);
            SseEvent::typed(&event)
        };
        let count = events.len();
        let events = events.into_iter().enumerate().map(numbered).collect();
        (events, numbered((count, terminal)))
    }

    /// The events (without the terminal one).
    pub fn events(&self) -> Vec<SseEvent> {
        self.build().0
    }

    pub fn reply(self) -> Reply {
        let (events, terminal) = self.build();
        Reply::Stream {
            wire: Some(Wire::Responses),
            events,
            terminal: Some(terminal),
            delay: Duration::ZERO,
            ending: Ending::Done,
            batch: 1,
        }
    }
}

impl From<Response> for Reply {
    fn from(response: Response) -> Reply {
        response.reply()
    }
}

fn failed_json(code: &str, message: &str, output: Vec<Value>) -> Value {
    let mut response = response_object("failed", output, Value::Null);
    response["error"] = json!({"code": code, "message": message});
    json!({"type": "response.failed", "response": response})
}

/// A `response.failed` event (for [`Reply::then_event`]; its
/// `sequence_number` is renumbered there).
pub fn failed_event(code: &str, message: &str) -> SseEvent {
    let mut event = failed_json(code, message, Vec::new());
    event["sequence_number"] = json!(0);
    SseEvent::typed(&event)
}

/// The documented top-level `error` event, `{"type":"error","code":..,
/// "message":..,"param":null,"sequence_number":..}` (API reference, notes
/// 2.5), for [`Reply::then_event`].
pub fn error_event(code: &str, message: &str) -> SseEvent {
    SseEvent::typed(&json!({"type": "error", "code": code, "message": message,
        "param": null, "sequence_number": 0}))
}

/// The `error` event as often seen in practice, fields nested under
/// `error` (notes 2.5/2.6), e.g. `("invalid_request_error",
/// "context_length_exceeded", ..)`.
pub fn nested_error_event(kind: &str, code: &str, message: &str) -> SseEvent {
    SseEvent::typed(&json!({"type": "error",
        "error": {"type": kind, "code": code, "message": message, "param": null},
        "sequence_number": 0}))
}

/// OpenAI's HTTP error body `{"error":{"message","type","param","code"}}`
/// (`code` `null` when `None`).
pub fn error_body(kind: &str, code: Option<&str>, message: &str) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

/// The real context-overflow message (notes 2.6).
pub const CONTEXT_LENGTH_EXCEEDED: &str =
    "Your input exceeds the context window of this model. Please adjust your input and try again.";

impl Reply {
    /// A Responses stream with these output items.
    pub fn responses(items: Vec<Item>) -> Reply {
        Response::new(items).reply()
    }

    /// One message item streamed as `fragments`.
    pub fn responses_text<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Reply {
        Reply::responses(vec![Item::message(fragments)])
    }

    /// One function_call item per `(call_id, name, arguments)`.
    pub fn responses_tool_calls(calls: &[(&str, &str, Value)]) -> Reply {
        Reply::responses(Item::function_calls(calls))
    }

    /// A message item (skipped when `fragments` is empty), then function
    /// calls.
    pub fn responses_text_and_tool_calls<S: AsRef<str>>(
        fragments: impl IntoIterator<Item = S>,
        calls: &[(&str, &str, Value)],
    ) -> Reply {
        let text = strings(fragments);
        let mut items = Vec::new();
        if !text.is_empty() {
            items.push(Item::Message {
                fragments: text,
                phase: None,
            });
        }
        items.extend(Item::function_calls(calls));
        Reply::responses(items)
    }

    /// A reasoning item (one summary part streamed as `summary`, the
    /// given `encrypted_content` in its `output_item.done`), then `then`
    /// (e.g. `vec![Item::message(["Hi"])]` or `Item::function_calls(..)`).
    pub fn responses_reasoning<S: AsRef<str>>(
        summary: impl IntoIterator<Item = S>,
        encrypted_content: &str,
        then: Vec<Item>,
    ) -> Reply {
        let mut items = vec![Item::reasoning(summary, encrypted_content)];
        items.extend(then);
        Reply::responses(items)
    }

    /// A refusal message item streamed as `fragments` (see
    /// [`Item::Refusal`]).
    pub fn responses_refusal<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Reply {
        Reply::responses(vec![Item::refusal(fragments)])
    }

    /// A message streamed as `fragments`, ending in `response.incomplete`
    /// with `incomplete_details.reason: "max_output_tokens"`.
    pub fn responses_incomplete<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Reply {
        Response::new(vec![Item::message(fragments)])
            .incomplete("max_output_tokens")
            .reply()
    }

    /// `response.created`, `response.in_progress`, then `response.failed`
    /// with `error: {code, message}`.
    pub fn responses_failed(code: &str, message: &str) -> Reply {
        Response::new(Vec::new()).failed(code, message).reply()
    }

    /// An HTTP error in OpenAI's shape; only sent on `/v1/responses`.
    pub fn responses_error(status: u16, kind: &str, code: Option<&str>, message: &str) -> Reply {
        Reply::status(status, error_body(kind, code, message)).only_on(Some(Wire::Responses))
    }

    /// HTTP 400 `invalid_request_error` / `context_length_exceeded` with
    /// `param: "input"` and the real wording (notes 2.6).
    pub fn responses_context_length_exceeded() -> Reply {
        let body = json!({"error": {"message": CONTEXT_LENGTH_EXCEEDED,
            "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}});
        Reply::status(400, body.to_string()).only_on(Some(Wire::Responses))
    }
}

/// The Responses rules `body` breaks (empty = fine), for SCV's stateless
/// use (notes 2.7):
///
/// - `store` is `false` and `stream` is `true`;
/// - `instructions` is a string;
/// - `include` contains `"reasoning.encrypted_content"`;
/// - every `function_call` input item has a `call_id` and a
///   `function_call_output` with the same `call_id` later in `input`, and
///   every `function_call_output` follows its `function_call`;
/// - no input item is an `item_reference`, and every `reasoning` item
///   carries its `encrypted_content` (with `store:false` either gives
///   404 "Items are not persisted when `store` is set to false");
/// - a message's `phase`, if sent, is `"commentary"` or `"final_answer"`
///   and only on an assistant message (openai-python
///   `EasyInputMessageParam.phase`: "Not used for user messages").
pub fn check_request(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if body["store"] != false {
        out.push(format!(
            "`store` must be false (got {})",
            crate::json::kind(&body["store"])
        ));
    }
    if body["stream"] != true {
        out.push("`stream` must be true".into());
    }
    if !body["instructions"].is_string() {
        out.push(format!(
            "`instructions` must be a string (got {})",
            crate::json::kind(&body["instructions"])
        ));
    }
    let includes = body["include"]
        .as_array()
        .is_some_and(|list| list.iter().any(|i| i == "reasoning.encrypted_content"));
    if !includes {
        out.push("`include` lacks \"reasoning.encrypted_content\"".into());
    }
    let items = match &body["input"] {
        Value::Array(items) => items.as_slice(),
        Value::String(_) => &[],
        other => {
            out.push(format!(
                "`input` must be an array (got {})",
                crate::json::kind(other)
            ));
            &[]
        }
    };
    for (index, item) in items.iter().enumerate() {
        match item["type"].as_str().unwrap_or("") {
            "function_call" => {
                let Some(id) = item["call_id"].as_str().filter(|id| !id.is_empty()) else {
                    out.push(format!("input[{index}]: function_call without call_id"));
                    continue;
                };
                let answered = items[index + 1..]
                    .iter()
                    .any(|later| later["type"] == "function_call_output" && later["call_id"] == id);
                if !answered {
                    out.push(format!(
                        "input[{index}]: function_call {id:?} has no function_call_output after it"
                    ));
                }
            }
            "function_call_output" => {
                let id = item["call_id"].as_str().unwrap_or("");
                let called = items[..index]
                    .iter()
                    .any(|earlier| earlier["type"] == "function_call" && earlier["call_id"] == id);
                if !called {
                    out.push(format!(
                        "input[{index}]: function_call_output {id:?} answers no earlier function_call"
                    ));
                }
            }
            "reasoning" if item["encrypted_content"].as_str().unwrap_or("").is_empty() => out.push(
                format!("input[{index}]: reasoning item without encrypted_content"),
            ),
            "item_reference" => out.push(format!(
                "input[{index}]: item_reference cannot resolve with store:false"
            )),
            "message" => match item.get("phase") {
                None => {}
                Some(phase) if item["role"] != "assistant" => out.push(format!(
                    "input[{index}]: phase {phase} on a {} message (only assistant messages carry one)",
                    item["role"]
                )),
                Some(phase) if phase != "commentary" && phase != "final_answer" => out.push(
                    format!("input[{index}]: phase {phase} is not commentary or final_answer"),
                ),
                Some(_) => {}
            },
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(reply: &Reply) -> Vec<Value> {
        reply.events().iter().map(|e| e.json().unwrap()).collect()
    }

    fn types(reply: &Reply) -> Vec<String> {
        data(reply)
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect()
    }

    fn assert_numbered(reply: &Reply) {
        for (number, event) in reply.events().iter().enumerate() {
            let value = event.json().unwrap();
            assert_eq!(event.event.as_deref(), value["type"].as_str());
            assert!(event.data.starts_with("{\"type\":"));
            assert_eq!(value["sequence_number"], number, "{}", event.data);
        }
    }

    #[test]
    fn text_stream_follows_the_real_capture() {
        let reply = Reply::responses_text(["Hel", "lo"]);
        assert_eq!(reply.wire(), Some(Wire::Responses));
        assert_numbered(&reply);
        assert_eq!(
            types(&reply),
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let events = data(&reply);
        assert_eq!(events[0]["response"]["status"], "in_progress");
        assert_eq!(events[0]["response"]["usage"], Value::Null);
        assert_eq!(
            events[4],
            json!({"type": "response.output_text.delta", "sequence_number": 4,
                "item_id": "msg_mock_0", "output_index": 0, "content_index": 0,
                "delta": "Hel", "logprobs": [], "obfuscation": "mockpad"})
        );
        assert_eq!(events[6]["text"], "Hello");
        assert_eq!(events[8]["item"]["status"], "completed");
        assert_eq!(events[8]["item"]["content"][0]["text"], "Hello");
        let done = &events[9]["response"];
        assert_eq!(done["status"], "completed");
        assert_eq!(done["output"][0]["content"][0]["text"], "Hello");
        assert_eq!(
            done["usage"],
            json!({"input_tokens": 72, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 25, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 97})
        );
        let last = reply.events().pop().unwrap();
        assert!(last
            .encode()
            .starts_with(b"event: response.completed\ndata: {"));
        assert!(last.encode().ends_with(b"}\n\n"));
    }

    #[test]
    fn function_calls_stream_their_arguments() {
        let args = json!({"path": "/src/lib.rs"});
        let reply = Reply::responses_tool_calls(&[
            ("call_abc", "read", args.clone()),
            ("call_def", "ls", json!({})),
        ]);
        assert_numbered(&reply);
        let events = data(&reply);
        assert_eq!(
            events[2],
            json!({"type": "response.output_item.added", "sequence_number": 2, "output_index": 0,
                "item": {"id": "fc_mock_0", "type": "function_call", "status": "in_progress",
                    "arguments": "", "call_id": "call_abc", "name": "read"}})
        );
        let deltas: String = events
            .iter()
            .filter(|e| {
                e["type"] == "response.function_call_arguments.delta" && e["output_index"] == 0
            })
            .map(|e| {
                assert_eq!(e["item_id"], "fc_mock_0");
                e["delta"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(serde_json::from_str::<Value>(&deltas).unwrap(), args);
        let done: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "response.output_item.done")
            .collect();
        assert_eq!(done.len(), 2);
        assert_eq!(done[0]["item"]["arguments"], args.to_string());
        assert_eq!(done[0]["item"]["status"], "completed");
        assert_eq!(done[1]["output_index"], 1);
        assert_eq!(done[1]["item"]["call_id"], "call_def");
        let args_done = events
            .iter()
            .find(|e| e["type"] == "response.function_call_arguments.done")
            .unwrap();
        assert_eq!(args_done["arguments"], args.to_string());
        assert!(args_done.get("call_id").is_none());
    }

    #[test]
    fn reasoning_item_carries_summary_and_encrypted_content() {
        let reply = Reply::responses_reasoning(
            ["**Plan**", "\n\nRead it."],
            "gAAAAenc",
            vec![Item::message(["ok"])],
        );
        assert_numbered(&reply);
        let t = types(&reply);
        assert_eq!(
            &t[2..9],
            [
                "response.output_item.added",
                "response.reasoning_summary_part.added",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.done",
                "response.reasoning_summary_part.done",
                "response.output_item.done"
            ]
        );
        let events = data(&reply);
        assert_eq!(
            events[2]["item"],
            json!({"id": "rs_mock_0", "type": "reasoning", "encrypted_content": "gAAAAenc.added", "summary": []})
        );
        assert_eq!(
            events[3],
            json!({"type": "response.reasoning_summary_part.added", "sequence_number": 3,
                "item_id": "rs_mock_0", "output_index": 0, "summary_index": 0,
                "part": {"type": "summary_text", "text": ""}})
        );
        assert_eq!(events[4]["delta"], "**Plan**");
        assert_eq!(
            events[8]["item"],
            json!({"id": "rs_mock_0", "type": "reasoning", "encrypted_content": "gAAAAenc",
                "summary": [{"type": "summary_text", "text": "**Plan**\n\nRead it."}]})
        );
        assert_eq!(events[9]["output_index"], 1);
        let completed = events.last().unwrap();
        assert_eq!(
            completed["response"]["output"][0]["encrypted_content"],
            "gAAAAenc.snapshot"
        );
        // No summary: no summary events at all.
        let bare = Reply::responses_reasoning(Vec::<&str>::new(), "e", Vec::new());
        assert_eq!(
            types(&bare)[2..],
            [
                "response.output_item.added",
                "response.output_item.done",
                "response.completed"
            ]
        );
    }

    #[test]
    fn incomplete_failed_and_error_endings() {
        let reply = Reply::responses_incomplete(["par"]);
        let last = data(&reply).pop().unwrap();
        assert_eq!(last["type"], "response.incomplete");
        assert_eq!(last["response"]["status"], "incomplete");
        assert_eq!(
            last["response"]["incomplete_details"],
            json!({"reason": "max_output_tokens"})
        );
        assert_eq!(last["response"]["usage"]["output_tokens"], 25);

        let reply =
            Reply::responses_failed("server_error", "The model failed to generate a response.");
        assert_numbered(&reply);
        assert_eq!(
            types(&reply),
            [
                "response.created",
                "response.in_progress",
                "response.failed"
            ]
        );
        let last = data(&reply).pop().unwrap();
        assert_eq!(last["response"]["status"], "failed");
        assert_eq!(
            last["response"]["error"],
            json!({"code": "server_error", "message": "The model failed to generate a response."})
        );

        let reply = Reply::responses_text(["a", "b", "c"]).then_event(
            5,
            nested_error_event(
                "invalid_request_error",
                "context_length_exceeded",
                CONTEXT_LENGTH_EXCEEDED,
            ),
        );
        assert_numbered(&reply);
        let last = data(&reply).pop().unwrap();
        assert_eq!(last["sequence_number"], 5);
        assert_eq!(last["error"]["code"], "context_length_exceeded");

        let reply = Reply::responses_text(["a"])
            .then_event(3, error_event("ERR_SOMETHING", "Something went wrong"));
        assert_numbered(&reply);
        assert_eq!(
            data(&reply).pop().unwrap(),
            json!({"type": "error", "code": "ERR_SOMETHING", "message": "Something went wrong",
                "param": null, "sequence_number": 3})
        );

        let reply = Reply::responses_text(["a"]).then_event(4, failed_event("server_error", "x"));
        assert_numbered(&reply);
        assert_eq!(data(&reply).pop().unwrap()["type"], "response.failed");

        // then() renumbers the terminal event after the kept ones.
        let Reply::Stream { terminal, .. } =
            Reply::responses_text(["a", "b"]).then(3, Ending::Done)
        else {
            panic!()
        };
        assert_eq!(terminal.unwrap().json().unwrap()["sequence_number"], 3);

        let bare = data(&Reply::responses_text(["a"]).without_usage());
        assert_eq!(bare.last().unwrap()["response"]["usage"], Value::Null);
    }

    #[test]
    fn phase_rides_on_the_message_item() {
        let reply = Reply::responses(vec![
            Item::phased_message(["Checking."], "commentary"),
            Item::function_call("call_1", "ls", json!({})),
        ]);
        assert_numbered(&reply);
        let events = data(&reply);
        assert_eq!(events[2]["item"]["phase"], "commentary");
        let done = events
            .iter()
            .find(|e| e["type"] == "response.output_item.done")
            .unwrap();
        assert_eq!(done["item"]["phase"], "commentary");
        assert_eq!(done["item"]["content"][0]["text"], "Checking.");
        let completed = events.last().unwrap();
        assert_eq!(completed["response"]["output"][0]["phase"], "commentary");
        // Without one, no key at all.
        let plain = data(&Reply::responses_text(["x"]));
        assert!(plain[2]["item"].get("phase").is_none());
    }

    #[test]
    fn refusal_streams_its_own_events() {
        let reply = Reply::responses_refusal(["I'm sorry, ", "I can't help with that."]);
        assert_numbered(&reply);
        assert_eq!(
            types(&reply)[2..],
            [
                "response.output_item.added",
                "response.content_part.added",
                "response.refusal.delta",
                "response.refusal.delta",
                "response.refusal.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let events = data(&reply);
        assert_eq!(events[3]["part"], json!({"type": "refusal", "refusal": ""}));
        assert_eq!(events[4]["delta"], "I'm sorry, ");
        assert_eq!(events[6]["refusal"], "I'm sorry, I can't help with that.");
        assert_eq!(
            events[8]["item"]["content"],
            json!([{"type": "refusal", "refusal": "I'm sorry, I can't help with that."}])
        );
    }

    #[test]
    fn custom_usage() {
        let reply = Response::new(vec![Item::message(["x"])])
            .usage(Usage {
                input_tokens: 1000,
                cached_tokens: 800,
                output_tokens: 50,
                reasoning_tokens: 30,
            })
            .reply();
        let usage = data(&reply).pop().unwrap()["response"]["usage"].clone();
        assert_eq!(usage["input_tokens_details"]["cached_tokens"], 800);
        assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 30);
        assert_eq!(usage["total_tokens"], 1050);
    }

    #[test]
    fn http_errors_have_openai_shape() {
        let Reply::Status {
            wire, status, body, ..
        } = Reply::responses_context_length_exceeded()
        else {
            panic!()
        };
        assert_eq!((wire, status), (Some(Wire::Responses), 400));
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], "context_length_exceeded");
        assert_eq!(body["error"]["type"], "invalid_request_error");
        assert_eq!(body["error"]["param"], "input");
        assert_eq!(body["error"]["message"], CONTEXT_LENGTH_EXCEEDED);
        let Reply::Status { status, body, .. } = Reply::responses_error(
            429,
            "rate_limit_error",
            Some("rate_limit_exceeded"),
            "slow down",
        ) else {
            panic!()
        };
        assert_eq!(status, 429);
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap(),
            json!({"error": {"message": "slow down", "type": "rate_limit_error", "param": null,
                "code": "rate_limit_exceeded"}})
        );
    }

    /// The stateless request shape of notes 2.7.
    fn good() -> Value {
        json!({
            "model": "gpt-5", "instructions": "system prompt here",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me read it."}]},
                {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"},
                {"type": "function_call", "call_id": "call_2", "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_2", "output": "b"},
                {"type": "function_call_output", "call_id": "call_1", "output": "a"}
            ],
            "tools": [], "tool_choice": "auto", "parallel_tool_calls": true,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "store": false, "stream": true, "include": ["reasoning.encrypted_content"]
        })
    }

    fn one(body: &Value, needle: &str) {
        let v = check_request(body);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].contains(needle), "{:?} lacks {needle:?}", v[0]);
    }

    #[test]
    fn good_request_passes() {
        assert_eq!(check_request(&good()), Vec::<String>::new());
    }

    #[test]
    fn bad_requests_fail() {
        let mut b = good();
        b["store"] = json!(true);
        one(&b, "`store` must be false");
        let mut b = good();
        b.as_object_mut().unwrap().remove("store");
        one(&b, "`store` must be false");
        let mut b = good();
        b["stream"] = json!(false);
        one(&b, "`stream`");
        let mut b = good();
        b["instructions"] = json!([{"text": "x"}]);
        one(&b, "`instructions` must be a string");
        let mut b = good();
        b["include"] = json!([]);
        one(&b, "reasoning.encrypted_content");
        let mut b = good();
        b["input"].as_array_mut().unwrap().pop();
        one(&b, "function_call \"call_1\" has no function_call_output");
        let mut b = good();
        let output = b["input"].as_array_mut().unwrap().remove(6);
        b["input"].as_array_mut().unwrap().insert(3, output);
        let v = check_request(&b);
        assert_eq!(v.len(), 2, "{v:#?}");
        assert!(v[0].contains("answers no earlier function_call"));
        assert!(v[1].contains("has no function_call_output"));
        let mut b = good();
        b["input"][1]["encrypted_content"] = Value::Null;
        one(&b, "reasoning item without encrypted_content");
        let mut b = good();
        b["input"][3]["call_id"] = json!("");
        let v = check_request(&b);
        assert!(v.iter().any(|v| v.contains("without call_id")), "{v:#?}");
        let mut b = good();
        b["input"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "item_reference", "id": "msg_1"}));
        one(&b, "item_reference");
        let mut b = good();
        b["input"][2]["phase"] = json!("commentary");
        assert_eq!(check_request(&b), Vec::<String>::new());
        b["input"][2]["phase"] = json!("analysis");
        one(&b, "not commentary or final_answer");
        let mut b = good();
        b["input"][0]["phase"] = json!("final_answer");
        one(&b, "only assistant messages");
    }
}
