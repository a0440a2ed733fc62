//! A scripted mock of three streaming LLM wires on one HTTP server:
//! OpenAI Chat Completions (`POST /v1/chat/completions`), Anthropic
//! Messages (`POST /v1/messages`) and OpenAI Responses
//! (`POST /v1/responses`).
//!
//! Each request takes the next scripted [`Reply`] (a reply routed with
//! [`MockProvider::push_matching`] first): a stream of SSE events exactly as
//! the service sends them, optionally dripped slowly, stalled, cut, or
//! oversized; or a plain HTTP status. Chat streams are `data:` lines ending
//! in `data: [DONE]` (role chunk, content fragments, tool-call fragments by
//! index, a finish chunk, a usage chunk); Anthropic and Responses streams
//! carry `event:` and `data:` lines and end with their terminal event (the
//! builders live in [`crate::wires::anthropic`] and
//! [`crate::wires::responses`]). A reply built for one wire is only sent on
//! that wire's path; raw, bytes, status and repeat replies go anywhere.
//! Every request's path, headers and JSON body are recorded (and can be
//! checked against the wire's rules with [`MockProvider::violations`]),
//! and the server counts response bodies the client dropped before they
//! ended (to prove a cancel closed the HTTP read).

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

type Body = BoxBody<Bytes, std::io::Error>;

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

    /// This wire's request rules broken by `body` (empty when it is fine);
    /// see [`crate::wires`].
    pub fn check_request(self, body: &Value) -> Vec<String> {
        match self {
            Wire::Chat => crate::wires::chat::check_request(body),
            Wire::Anthropic => crate::wires::anthropic::check_request(body),
            Wire::Responses => crate::wires::responses::check_request(body),
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
            data: crate::wires::to_json(data),
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
            Reply::Bytes { .. } | Reply::Repeat { .. } => None,
        }
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
                            event.data = crate::wires::to_json(&value);
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
                    event.data = crate::wires::to_json(&value);
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

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// Header names lower-cased.
    pub headers: HashMap<String, String>,
    pub body: Value,
}

impl Recorded {
    /// The wire of the path it came on.
    pub fn wire(&self) -> Option<Wire> {
        Wire::from_path(&self.path)
    }

    /// A header's value (`name` in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// The rules of its wire that the body breaks (see [`crate::wires`]).
    pub fn violations(&self) -> Vec<String> {
        self.wire()
            .map(|wire| wire.check_request(&self.body))
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    /// Replies for the first request whose body contains the needle; they
    /// take precedence over the script.
    routed: Vec<(String, Reply)>,
    requests: Vec<Recorded>,
    /// Streams whose body the client dropped before it ended.
    dropped: usize,
}

pub struct MockProvider {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    server: tokio::task::JoinHandle<()>,
}

impl MockProvider {
    pub async fn start() -> MockProvider {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind mock provider");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let server = crate::serve_http(listener, move |req| handle(shared.clone(), req));
        MockProvider {
            addr,
            state,
            server,
        }
    }

    /// The `base_url` to configure (`http://127.0.0.1:PORT/v1`); the three
    /// wires are served under it (`/chat/completions`, `/messages`,
    /// `/responses`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues `reply` for the next request. The queue is shared by the
    /// three paths; a reply built for one wire answers only a request on
    /// that wire's path (a request on another path gets a 500 and leaves
    /// the reply queued).
    pub fn push(&self, reply: Reply) {
        self.state.lock().unwrap().script.push_back(reply);
    }

    /// Answers the next request whose JSON body contains `needle` with
    /// `reply`, wherever it falls in the script.
    pub fn push_matching(&self, needle: &str, reply: Reply) {
        self.state
            .lock()
            .unwrap()
            .routed
            .push((needle.to_string(), reply));
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The requests that came on `wire`'s path.
    pub fn requests_on(&self, wire: Wire) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.wire() == Some(wire))
            .collect()
    }

    pub fn request_count(&self) -> usize {
        self.state.lock().unwrap().requests.len()
    }

    /// Every rule a recorded request broke, checked against the rules of
    /// the wire it came on (see [`crate::wires`]), as
    /// `"request N (POST /v1/...): ..."`; empty when all were fine.
    pub fn violations(&self) -> Vec<String> {
        self.requests()
            .iter()
            .enumerate()
            .flat_map(|(index, request)| {
                request
                    .violations()
                    .into_iter()
                    .map(move |v| format!("request {index} (POST {}): {v}", request.path))
            })
            .collect()
    }

    /// How many streamed bodies the client dropped before their end.
    pub fn dropped_streams(&self) -> usize {
        self.state.lock().unwrap().dropped
    }

    /// Waits (bounded) until `dropped_streams() >= n`.
    pub async fn wait_dropped(&self, n: usize) -> bool {
        crate::eventually(|| self.dropped_streams() >= n).await
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The reply for a request on `wire` whose raw body is `raw`: the first
/// routed reply whose needle it contains, else the head of the script.
/// A reply for another wire stays where it is and the request gets a
/// 500 naming the wire the reply expected (`Err` holds that body).
fn take_reply(state: &mut State, wire: Wire, raw: &str) -> Result<Reply, String> {
    let mismatch = |expected: Wire| {
        let message = format!(
            "mock provider: expected a request on the {expected} wire (POST {}), got POST {}",
            expected.path(),
            wire.path()
        );
        Err(json!({"error": {"message": message, "type": "mock_wire_mismatch"}}).to_string())
    };
    if let Some(index) = state
        .routed
        .iter()
        .position(|(needle, _)| raw.contains(needle.as_str()))
    {
        return match state.routed[index].1.wire() {
            Some(expected) if expected != wire => mismatch(expected),
            _ => Ok(state.routed.remove(index).1),
        };
    }
    match state.script.front().map(Reply::wire) {
        None => Err("{\"error\":{\"message\":\"mock provider: no scripted reply\"}}".into()),
        Some(Some(expected)) if expected != wire => mismatch(expected),
        Some(_) => Ok(state.script.pop_front().unwrap()),
    }
}

async fn handle(
    state: Arc<Mutex<State>>,
    req: Request<Incoming>,
) -> Result<Response<Body>, std::convert::Infallible> {
    let path = req.uri().path().to_string();
    let headers = crate::headers_of(&req);
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let raw = String::from_utf8_lossy(&bytes).into_owned();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let Some(wire) = Wire::from_path(&path) else {
        return Ok(plain(404, "not found"));
    };
    let reply = {
        let mut state = state.lock().unwrap();
        state.requests.push(Recorded {
            path,
            headers,
            body,
        });
        take_reply(&mut state, wire, &raw)
    };
    let reply = match reply {
        Ok(reply) => reply,
        Err(body) => return Ok(plain(500, &body)),
    };
    Ok(match reply {
        Reply::Status {
            status,
            body,
            headers,
            ..
        } => {
            let mut response = plain(status, &body);
            for (name, value) in headers {
                response.headers_mut().insert(
                    hyper::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    value.parse().unwrap(),
                );
            }
            response
        }
        Reply::Stream {
            events,
            terminal,
            delay,
            ending,
            batch,
            ..
        } => {
            let frames = events
                .chunks(batch)
                .map(|group| group.iter().flat_map(SseEvent::encode).collect())
                .collect();
            let done = terminal
                .filter(|_| ending == Ending::Done)
                .map(|event| event.encode());
            stream_response(state, frames, delay, ending, done)
        }
        Reply::Bytes {
            frames,
            delay,
            ending,
        } => stream_response(state, frames, delay, ending, None),
        Reply::Repeat { frame, every } => repeat_response(state, frame, every),
    })
}

fn plain(status: u16, body: &str) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", "application/json")
        .body(
            Full::new(Bytes::from(body.to_string()))
                .map_err(|never| match never {})
                .boxed(),
        )
        .unwrap()
}

/// Streams `frames` (each after `delay`), then `done` (if any) and the
/// ending.
fn stream_response(
    state: Arc<Mutex<State>>,
    frames: Vec<Vec<u8>>,
    delay: Duration,
    ending: Ending,
    done: Option<Vec<u8>>,
) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(64);
    tokio::spawn(async move {
        let dropped = async {
            for frame in frames {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if tx.send(Ok(Frame::data(Bytes::from(frame)))).await.is_err() {
                    return true;
                }
            }
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if let Some(done) = done {
                if tx.send(Ok(Frame::data(Bytes::from(done)))).await.is_err() {
                    return true;
                }
            }
            match ending {
                Ending::Done | Ending::Eof => false,
                Ending::Cut => {
                    let _ = tx.send(Err(std::io::Error::other("cut"))).await;
                    false
                }
                Ending::Stall => {
                    tx.closed().await;
                    true
                }
            }
        }
        .await;
        if dropped {
            state.lock().unwrap().dropped += 1;
        }
    });
    sse_response(rx)
}

/// Sends `frame` every `every` until the client drops the body.
fn repeat_response(state: Arc<Mutex<State>>, frame: Vec<u8>, every: Duration) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(64);
    tokio::spawn(async move {
        let frame = Bytes::from(frame);
        while tx.send(Ok(Frame::data(frame.clone()))).await.is_ok() {
            tokio::time::sleep(every).await;
        }
        state.lock().unwrap().dropped += 1;
    });
    sse_response(rx)
}

fn sse_response(rx: mpsc::Receiver<Result<Frame<Bytes>, std::io::Error>>) -> Response<Body> {
    let body = StreamBody::new(tokio_stream_from(rx));
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(BodyExt::boxed(body))
        .unwrap()
}

/// An `mpsc::Receiver` as a `Stream`.
fn tokio_stream_from<T: Send + 'static>(
    rx: mpsc::Receiver<T>,
) -> impl futures_util::Stream<Item = T> + Send + 'static {
    futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
}
