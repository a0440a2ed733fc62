//! A scripted mock of OpenAI's streaming chat completions.
//!
//! Each request to `POST /v1/chat/completions` takes the next scripted
//! [`Reply`]: a stream of SSE chunks exactly as OpenAI sends them (role
//! chunk, content fragments, tool-call fragments by index, a finish chunk, a
//! usage chunk, `[DONE]`), optionally dripped slowly, stalled, cut, or
//! oversized; or a plain HTTP status. Every request's headers and JSON body
//! are recorded, and the server counts response bodies the client dropped
//! before they ended (to prove a cancel closed the HTTP read).

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
    /// `data: [DONE]` and a clean end of body.
    Done,
    /// The body ends cleanly but without `[DONE]`.
    Eof,
    /// The connection is cut mid-body.
    Cut,
    /// Nothing more is sent and the body never ends.
    Stall,
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    Stream {
        /// Raw SSE event payloads (`data:` lines) in order.
        events: Vec<String>,
        /// Pause before each event.
        delay: Duration,
        ending: Ending,
        /// Events written per HTTP body frame (1 = one write per event).
        batch: usize,
    },
    Status {
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
            events,
            delay: Duration::ZERO,
            ending: Ending::Done,
            batch: 1,
        }
    }

    /// A bare stream of raw SSE payloads.
    pub fn raw(events: Vec<String>, ending: Ending) -> Reply {
        Reply::Stream {
            events,
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

    /// An HTTP error with a JSON (or any) body.
    pub fn status(status: u16, body: impl Into<String>) -> Reply {
        Reply::Status {
            status,
            body: body.into(),
            headers: Vec::new(),
        }
    }

    /// An OpenAI-style error object with `message`.
    pub fn error(status: u16, message: &str) -> Reply {
        Reply::status(
            status,
            json!({"error": {"message": message, "type": "invalid_request_error", "code": null}})
                .to_string(),
        )
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
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

    /// Keeps the first `n` events, then ends as `how`.
    pub fn then(mut self, n: usize, how: Ending) -> Reply {
        if let Reply::Stream { events, ending, .. } = &mut self {
            events.truncate(n);
            *ending = how;
        }
        self
    }

    /// Drops the usage chunk (a provider that reports none).
    pub fn without_usage(mut self) -> Reply {
        if let Reply::Stream { events, .. } = &mut self {
            events.retain(|e| !e.contains("\"usage\""));
        }
        self
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

    /// The `base_url` to configure (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

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

    pub fn request_count(&self) -> usize {
        self.state.lock().unwrap().requests.len()
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
    if path != "/v1/chat/completions" {
        return Ok(plain(404, "not found"));
    }
    let reply = {
        let mut state = state.lock().unwrap();
        state.requests.push(Recorded {
            path,
            headers,
            body,
        });
        match state
            .routed
            .iter()
            .position(|(needle, _)| raw.contains(needle.as_str()))
        {
            Some(index) => Some(state.routed.remove(index).1),
            None => state.script.pop_front(),
        }
    };
    let Some(reply) = reply else {
        return Ok(plain(
            500,
            "{\"error\":{\"message\":\"mock provider: no scripted reply\"}}",
        ));
    };
    Ok(match reply {
        Reply::Status {
            status,
            body,
            headers,
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
            delay,
            ending,
            batch,
        } => {
            let frames = events
                .chunks(batch)
                .map(|group| {
                    let mut bytes = Vec::new();
                    for event in group {
                        bytes.extend_from_slice(b"data: ");
                        bytes.extend_from_slice(event.as_bytes());
                        bytes.extend_from_slice(b"\n\n");
                    }
                    bytes
                })
                .collect();
            let done = (ending == Ending::Done).then_some(b"data: [DONE]\n\n".to_vec());
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
