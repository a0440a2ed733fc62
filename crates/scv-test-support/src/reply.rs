//! What the mock provider answers with: a scripted [`Reply`] (SSE events
//! exactly as a service sends them, or a plain status), tagged with the
//! [`Wire`] it belongs to, and how its stream [`Ending`]s. The per-wire
//! builders are in `wires/`; the server that sends replies is
//! `mock_provider.rs`.

use serde_json::{json, Value};
use std::time::Duration;

/// How a scripted stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The wire's terminal event (chat: `data: [DONE]`; Anthropic:
    /// `message_stop`; Responses: `response.completed` /
    /// `response.incomplete` / `response.failed`) and a clean end of body.
    Done,
    /// The body ends cleanly but without the terminal event.
    Eof,
    /// The connection is cut mid-body.
    Cut,
    /// Nothing more is sent and the body never ends.
    Stall,
}

/// One of the LLM wires the mock speaks, each on its own path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wire {
    /// OpenAI Chat Completions, `POST /v1/chat/completions`.
    Chat,
    /// Anthropic Messages, `POST /v1/messages`.
    Anthropic,
    /// OpenAI Responses, `POST /v1/responses`.
    Responses,
}

impl Wire {
    pub const ALL: [Wire; 3] = [Wire::Chat, Wire::Anthropic, Wire::Responses];

    /// The request path the mock serves this wire on.
    pub fn path(self) -> &'static str {
        match self {
            Wire::Chat => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
            Wire::Responses => "/v1/responses",
        }
    }

    /// The wire served on `path`, if any.
    pub fn from_path(path: &str) -> Option<Wire> {
        Wire::ALL.into_iter().find(|wire| wire.path() == path)
    }

    /// A human name for messages ("Anthropic Messages").
    pub fn name(self) -> &'static str {
        match self {
            Wire::Chat => "Chat Completions",
            Wire::Anthropic => "Anthropic Messages",
            Wire::Responses => "OpenAI Responses",
        }
    }
}

impl std::fmt::Display for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One SSE event: an optional `event:` line and one `data:` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, if the frame has one (Anthropic and Responses
    /// always do; chat never does).
    pub event: Option<String>,
    /// The `data:` payload (JSON, or `[DONE]`).
    pub data: String,
}

impl SseEvent {
    /// A frame with only a `data:` line.
    pub fn data(data: impl Into<String>) -> SseEvent {
        SseEvent {
            event: None,
            data: data.into(),
        }
    }

    /// A frame with `event: <event>` and `data: <data>`.
    pub fn named(event: impl Into<String>, data: impl Into<String>) -> SseEvent {
        SseEvent {
            event: Some(event.into()),
            data: data.into(),
        }
    }

    /// A frame named after the JSON's `type` (as Anthropic and OpenAI
    /// Responses send every event), the JSON written with `type` first.
    pub fn typed(data: &Value) -> SseEvent {
        SseEvent {
            event: data["type"].as_str().map(str::to_string),
            data: crate::json::to_json(data),
        }
    }

    /// The `data:` payload parsed as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }

    /// The frame's bytes: `event: X\n` (if named), `data: Y\n`, blank line.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        if let Some(event) = &self.event {
            bytes.extend_from_slice(b"event: ");
            bytes.extend_from_slice(event.as_bytes());
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(b"data: ");
        bytes.extend_from_slice(self.data.as_bytes());
        bytes.extend_from_slice(b"\n\n");
        bytes
    }
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    Stream {
        /// The wire this stream was built for; it is only sent on that
        /// wire's path. `None`: any path.
        wire: Option<Wire>,
        /// SSE events in order, not counting the terminal one.
        events: Vec<SseEvent>,
        /// The terminal event, sent after `events` only when `ending` is
        /// [`Ending::Done`] (chat: `data: [DONE]`).
        terminal: Option<SseEvent>,
        /// Pause before each event.
        delay: Duration,
        ending: Ending,
        /// Events written per HTTP body frame (1 = one write per event).
        batch: usize,
    },
    Status {
        /// The wire whose error shape `body` has; only sent on that
        /// wire's path. `None`: any path.
        wire: Option<Wire>,
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    /// Exactly these body bytes, one HTTP body frame each, with `delay`
    /// before each; then the body ends as `ending` says (`Done` adds
    /// nothing here: the bytes are the whole body).
    Bytes {
        frames: Vec<Vec<u8>>,
        delay: Duration,
        ending: Ending,
    },
    /// Sends `frame` every `every`, forever, until the client goes away
    /// (SSE comments or empty deltas that carry no model output).
    Repeat { frame: Vec<u8>, every: Duration },
    /// Made from the request's JSON body when it arrives (a provider that
    /// answers what was asked: writes up to the request's output cap).
    FromRequest(Responder),
}

/// Makes a reply from a request's JSON body ([`Reply::from_request`]).
#[derive(Clone)]
pub struct Responder(pub std::sync::Arc<dyn Fn(&Value) -> Reply + Send + Sync>);

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder")
    }
}

fn chunk(delta: Value, finish_reason: Option<&str>) -> String {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 1_750_000_000,
        "model": "mock-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
    .to_string()
}

fn usage_chunk(input: u64, output: u64) -> String {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 1_750_000_000,
        "model": "mock-model",
        "choices": [],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output},
    })
    .to_string()
}

impl Reply {
    /// Streams `fragments` as content deltas, then stop, usage and `[DONE]`.
    pub fn text<S: AsRef<str>>(fragments: impl IntoIterator<Item = S>) -> Reply {
        Reply::response(fragments, &[], 7)
    }

    /// Requests tool calls `(id, name, arguments JSON)`, each argument
    /// string fragmented across several chunks, interleaved by index.
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Reply {
        Reply::tool_calls_in(calls, 7)
    }

    /// Like [`Reply::tool_calls`], with argument pieces of `piece` chars.
    pub fn tool_calls_in(calls: &[(&str, &str, Value)], piece: usize) -> Reply {
        Reply::response(std::iter::empty::<&str>(), calls, piece)
    }

    /// Text fragments, then tool calls (arguments in pieces of `piece`
    /// chars), then the finish chunk, usage and `[DONE]`.
    pub fn response<S: AsRef<str>>(
        fragments: impl IntoIterator<Item = S>,
        calls: &[(&str, &str, Value)],
        piece: usize,
    ) -> Reply {
        let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
        events.extend(
            fragments
                .into_iter()
                .map(|f| chunk(json!({"content": f.as_ref()}), None)),
        );
        let pieces: Vec<Vec<String>> = calls
            .iter()
            .map(|(_, _, args)| fragment(&args.to_string(), piece))
            .collect();
        for (index, (id, name, _)) in calls.iter().enumerate() {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            ));
        }
        let longest = pieces.iter().map(Vec::len).max().unwrap_or(0);
        for round in 0..longest {
            for (index, parts) in pieces.iter().enumerate() {
                if let Some(part) = parts.get(round) {
                    events.push(chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": part}}]}),
                        None,
                    ));
                }
            }
        }
        let finish = if calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        events.push(chunk(json!({}), Some(finish)));
        events.push(if calls.is_empty() {
            usage_chunk(11, 7)
        } else {
            usage_chunk(20, 5)
        });
        Reply::Stream {
            wire: Some(Wire::Chat),
            events: events.into_iter().map(SseEvent::data).collect(),
            terminal: Some(SseEvent::data("[DONE]")),
            delay: Duration::ZERO,
            ending: Ending::Done,
            batch: 1,
        }
    }

    /// A bare stream of raw SSE payloads (`data:` lines), then
    /// `data: [DONE]` if `ending` is [`Ending::Done`]; sent on any path.
    pub fn raw(events: Vec<String>, ending: Ending) -> Reply {
        Reply::Stream {
            wire: None,
            events: events.into_iter().map(SseEvent::data).collect(),
            terminal: Some(SseEvent::data("[DONE]")),
            delay: Duration::ZERO,
            ending,
            batch: 1,
        }
    }

    /// Exactly these SSE events and no terminator of its own (for
    /// hand-made Anthropic / Responses streams, or `data:`-only frames as
    /// some proxies send); sent on any path.
    pub fn sse(events: Vec<SseEvent>, ending: Ending) -> Reply {
        Reply::Stream {
            wire: None,
            events,
            terminal: None,
            delay: Duration::ZERO,
            ending,
            batch: 1,
        }
    }

    /// A body of exactly these bytes.
    pub fn bytes(body: impl Into<Vec<u8>>) -> Reply {
        Reply::Bytes {
            frames: vec![body.into()],
            delay: Duration::ZERO,
            ending: Ending::Done,
        }
    }

    /// `frame` every `every` until the client drops the stream.
    pub fn repeat(frame: impl Into<Vec<u8>>, every: Duration) -> Reply {
        Reply::Repeat {
            frame: frame.into(),
            every,
        }
    }

    /// An HTTP error with a JSON (or any) body, sent on any path.
    pub fn status(status: u16, body: impl Into<String>) -> Reply {
        Reply::Status {
            wire: None,
            status,
            body: body.into(),
            headers: Vec::new(),
        }
    }

    /// An OpenAI-style error object with `message` (the same shape on
    /// Chat Completions and Responses), sent on any path.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::status(
            status,
            json!({"error": {"message": message, "type": "invalid_request_error", "code": null}})
                .to_string(),
        )
    }

    /// Adds a response header to a status reply.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// The wire this reply was built for (`None`: any path).
    pub fn wire(&self) -> Option<Wire> {
        match self {
            Reply::Stream { wire, .. } | Reply::Status { wire, .. } => *wire,
            Reply::Bytes { .. } | Reply::Repeat { .. } | Reply::FromRequest(_) => None,
        }
    }

    /// A reply made by `make` from the request's JSON body when the
    /// request arrives.
    pub fn from_request(make: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Reply {
        Reply::FromRequest(Responder(std::sync::Arc::new(make)))
    }

    /// A chat stream's usage chunk replaced by one reporting `input`
    /// prompt and `output` completion tokens.
    pub fn with_usage(mut self, input: u64, output: u64) -> Reply {
        if let Reply::Stream {
            wire: Some(Wire::Chat),
            events,
            ..
        } = &mut self
        {
            for event in events.iter_mut() {
                if event.data.contains("\"usage\"") {
                    event.data = usage_chunk(input, output);
                }
            }
        }
        self
    }

    /// The output cap a request body asks for, on any wire (Chat
    /// `max_completion_tokens` or `max_tokens`, Responses
    /// `max_output_tokens`, Anthropic `max_tokens`); `None`: it set none.
    pub fn requested_output_cap(body: &Value) -> Option<u64> {
        ["max_completion_tokens", "max_tokens", "max_output_tokens"]
            .iter()
            .find_map(|key| body[key].as_u64())
    }

    /// Restricts a stream or status reply to `wire`'s path (`None`: any).
    pub fn only_on(mut self, only: Option<Wire>) -> Reply {
        if let Reply::Stream { wire, .. } | Reply::Status { wire, .. } = &mut self {
            *wire = only;
        }
        self
    }

    /// Pauses `delay` before each event.
    pub fn drip(mut self, every: Duration) -> Reply {
        if let Reply::Stream { delay, .. } = &mut self {
            *delay = every;
        }
        self
    }

    /// Writes `n` events per body frame, as a fast real server would.
    pub fn batched(mut self, n: usize) -> Reply {
        if let Reply::Stream { batch, .. } = &mut self {
            *batch = n.max(1);
        }
        self
    }

    /// Keeps the first `n` events, then ends as `how`: the terminal event
    /// (not counted in `n`) follows only for [`Ending::Done`].
    /// `then(usize::MAX, Ending::Eof)` is the whole stream without its
    /// terminal event.
    pub fn then(mut self, n: usize, how: Ending) -> Reply {
        if let Reply::Stream { events, ending, .. } = &mut self {
            events.truncate(n);
            *ending = how;
        }
        self.resequenced()
    }

    /// Keeps the first `n` events, then sends `last` in place of the
    /// terminal event and ends the body cleanly: how the services end a
    /// stream after a mid-stream error (Anthropic `event: error`,
    /// Responses `error` / `response.failed`).
    pub fn then_event(mut self, n: usize, last: SseEvent) -> Reply {
        if let Reply::Stream {
            events,
            terminal,
            ending,
            ..
        } = &mut self
        {
            events.truncate(n);
            *terminal = Some(last);
            *ending = Ending::Done;
        }
        self.resequenced()
    }

    /// Drops the `event:` lines (an Anthropic- or Responses-compatible
    /// proxy that sends `data:`-only frames).
    pub fn without_event_lines(mut self) -> Reply {
        if let Reply::Stream {
            events, terminal, ..
        } = &mut self
        {
            for event in events.iter_mut().chain(terminal.iter_mut()) {
                event.event = None;
            }
        }
        self
    }

    /// Drops the usage a provider reports: chat's usage chunk; Anthropic's
    /// `usage` in `message_start` and `message_delta` (as the doc's
    /// extended-thinking example shows); Responses' `usage` on the
    /// terminal response (set to `null`).
    pub fn without_usage(mut self) -> Reply {
        if let Reply::Stream {
            wire,
            events,
            terminal,
            ..
        } = &mut self
        {
            match wire {
                Some(Wire::Chat) | None => events.retain(|e| !e.data.contains("\"usage\"")),
                Some(Wire::Anthropic) | Some(Wire::Responses) => {
                    for event in events.iter_mut().chain(terminal.iter_mut()) {
                        let Some(mut value) = event.json() else {
                            continue;
                        };
                        let mut changed = false;
                        if let Some(message) = value.get_mut("message") {
                            if let Some(message) = message.as_object_mut() {
                                changed |= message.remove("usage").is_some();
                            }
                        }
                        if value["type"] == "message_delta" {
                            if let Some(delta) = value.as_object_mut() {
                                changed |= delta.remove("usage").is_some();
                            }
                        }
                        if let Some(response) = value.get_mut("response") {
                            if response.get("usage").is_some() {
                                response["usage"] = Value::Null;
                                changed = true;
                            }
                        }
                        if changed {
                            event.data = crate::json::to_json(&value);
                        }
                    }
                }
            }
        }
        self
    }

    /// Renumbers Responses `sequence_number`s 0, 1, 2, ... over the events
    /// and the terminal event (after events were dropped or replaced).
    fn resequenced(mut self) -> Reply {
        if let Reply::Stream {
            wire: Some(Wire::Responses),
            events,
            terminal,
            ..
        } = &mut self
        {
            for (number, event) in events.iter_mut().chain(terminal.iter_mut()).enumerate() {
                let Some(mut value) = event.json() else {
                    continue;
                };
                if value.get("sequence_number").is_some() {
                    value["sequence_number"] = json!(number);
                    event.data = crate::json::to_json(&value);
                }
            }
        }
        self
    }

    /// The events a stream reply sends for [`Ending::Done`], terminal
    /// included (empty for other replies): for tests of the builders.
    pub fn events(&self) -> Vec<SseEvent> {
        match self {
            Reply::Stream {
                events, terminal, ..
            } => events.iter().chain(terminal.iter()).cloned().collect(),
            _ => Vec::new(),
        }
    }
}

/// Splits `text` into pieces of about `size` characters.
pub fn fragment(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}
