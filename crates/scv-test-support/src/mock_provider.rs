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

pub use crate::reply::{fragment, Ending, Reply, SseEvent, Wire};

type Body = BoxBody<Bytes, std::io::Error>;

/// One request the mock received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// Header names lower-cased.
    pub headers: HashMap<String, String>,
    pub body: Value,
    /// When its head arrived (a client that streams its body sends the
    /// head before the body is all there).
    pub arrived: std::time::Instant,
    /// When the whole body had arrived.
    pub received: std::time::Instant,
    /// The body's length in bytes.
    pub body_bytes: usize,
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

    /// The images its user messages carried, decoded by its wire's shape
    /// ([`crate::wires::images`]).
    pub fn images(&self) -> Result<Vec<crate::wires::images::SentImage>, String> {
        let wire = self
            .wire()
            .ok_or_else(|| format!("no wire at {}", self.path))?;
        crate::wires::images::images(wire, &self.body)
    }

    /// The rules of its wire that the body breaks (see [`crate::wires`]).
    pub fn violations(&self) -> Vec<String> {
        self.wire()
            .map(|wire| crate::wires::check_request(wire, &self.body))
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
    /// What `GET …/models` lists, and the headers each such request had.
    models: Vec<String>,
    model_requests: Vec<std::collections::HashMap<String, String>>,
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
        let server = crate::http::serve_http(listener, move |req| handle(shared.clone(), req));
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

    /// The requests recorded so far, forgotten here (a long benchmark
    /// would otherwise keep every body it was sent).
    pub fn take_requests(&self) -> Vec<Recorded> {
        std::mem::take(&mut self.state.lock().unwrap().requests)
    }

    /// The requests that came on `wire`'s path.
    pub fn requests_on(&self, wire: Wire) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.wire() == Some(wire))
            .collect()
    }

    /// The ids `GET …/models` lists (OpenAI's "List models" shape:
    /// `{"object":"list","data":[{"id","object":"model","created","owned_by"}]}`,
    /// which Anthropic's `GET /v1/models` shares for `data[].id`).
    pub fn set_models(&self, ids: &[&str]) {
        self.state.lock().unwrap().models = ids.iter().map(|s| s.to_string()).collect();
    }

    /// The headers of each `GET …/models` request (names lower-cased).
    pub fn model_requests(&self) -> Vec<std::collections::HashMap<String, String>> {
        self.state.lock().unwrap().model_requests.clone()
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
        crate::wait::eventually(|| self.dropped_streams() >= n).await
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
    let arrived = std::time::Instant::now();
    let path = req.uri().path().to_string();
    let headers = crate::http::headers_of(&req);
    if req.method() == hyper::Method::GET && path.ends_with("/models") {
        let mut state = state.lock().unwrap();
        state.model_requests.push(headers);
        let data: Vec<Value> = state
            .models
            .iter()
            .map(|id| serde_json::json!({"id": id, "object": "model", "created": 1_700_000_000, "owned_by": "mock"}))
            .collect();
        return Ok(plain(
            200,
            &serde_json::json!({"object": "list", "data": data}).to_string(),
        ));
    }
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let received = std::time::Instant::now();
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
            arrived,
            received,
            body_bytes: bytes.len(),
        });
        take_reply(&mut state, wire, &raw)
    };
    let reply = match reply {
        Ok(Reply::FromRequest(make)) => {
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            (make.0)(&body)
        }
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
        Reply::FromRequest(_) => plain(500, "mock provider: a reply made a reply-maker"),
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
/// ending. Without a delay, a response that ends well is sent whole, as
/// one body: hyper writes it with its head in one write, so the mock's
/// own pace (a frame per channel hop) is never what a figure measures.
fn stream_response(
    state: Arc<Mutex<State>>,
    frames: Vec<Vec<u8>>,
    delay: Duration,
    ending: Ending,
    done: Option<Vec<u8>>,
) -> Response<Body> {
    if delay.is_zero() && matches!(ending, Ending::Done | Ending::Eof) {
        let mut whole = Vec::with_capacity(frames.iter().map(Vec::len).sum::<usize>() + 256);
        for frame in frames.iter().chain(&done) {
            whole.extend_from_slice(frame);
        }
        let body = Full::new(Bytes::from(whole))
            .map_err(|never| match never {})
            .boxed();
        return sse(body);
    }
    stream_frames(state, frames, delay, ending, done)
}

fn stream_frames(
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
    sse(BodyExt::boxed(StreamBody::new(tokio_stream_from(rx))))
}

fn sse(body: Body) -> Response<Body> {
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
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
