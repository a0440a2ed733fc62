//! A fake WeChat iLink Bot server, faithful to `shared/spec/ilink.md`:
//! application errors are HTTP 200 bodies with `ret`/`errcode`, an unknown
//! token gets `-14`, `getupdates` parks up to a (test-sized) hold and
//! returns at once when a message arrives, the cursor only moves forward,
//! message ids exceed 2^53. It records what clients send and lets tests
//! inject messages, faults and login states.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// First message id: above 2^53, so a client that parses ids as f64 breaks.
pub const FIRST_MESSAGE_ID: u64 = (1 << 53) + 1;

/// A fault for the next call of one kind.
#[derive(Debug, Clone)]
pub enum Fault {
    /// `ret: -14` (session expired).
    Expired,
    /// `ret: -2` (throttled).
    Throttled,
    /// A real HTTP error status.
    Status(u16),
    /// A body that is not JSON.
    Malformed,
    /// Answer only after this long.
    Delay(Duration),
    /// Answer with this body (status 200), whatever the call.
    Reply(Value),
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Call {
    pub path: String,
    pub query: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

#[derive(Default)]
struct State {
    tokens: Vec<String>,
    messages: Vec<Value>,
    /// Highest cursor index any client presented: never replayed below.
    floor: usize,
    hold: Duration,
    faults: HashMap<String, VecDeque<Fault>>,
    calls: Vec<Call>,
    qr_statuses: VecDeque<Value>,
    qrcodes: usize,
    next_id: u64,
}

pub struct FakeIlink {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    arrived: Arc<Notify>,
    server: tokio::task::JoinHandle<()>,
}

impl FakeIlink {
    pub async fn start() -> FakeIlink {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            hold: Duration::from_millis(300),
            next_id: FIRST_MESSAGE_ID,
            ..State::default()
        }));
        let arrived = Arc::new(Notify::new());
        let (s, a) = (state.clone(), arrived.clone());
        let server =
            crate::http::serve_http(listener, move |req| handle(s.clone(), a.clone(), req));
        FakeIlink {
            addr,
            state,
            arrived,
            server,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `host:port`, for redirects.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// Accepts `token` as a logged-in bot.
    pub fn allow_token(&self, token: &str) {
        self.state.lock().unwrap().tokens.push(token.into());
    }

    /// Revokes every token (later calls get `-14`).
    pub fn revoke_tokens(&self) {
        self.state.lock().unwrap().tokens.clear();
    }

    /// How long `getupdates` parks without messages.
    pub fn set_hold(&self, hold: Duration) {
        self.state.lock().unwrap().hold = hold;
    }

    /// Delivers a message; returns its id.
    pub fn inject(&self, mut message: Value) -> u64 {
        let id = {
            let mut state = self.state.lock().unwrap();
            let id = message
                .get("message_id")
                .and_then(Value::as_u64)
                .unwrap_or(state.next_id);
            state.next_id = state.next_id.max(id) + 1;
            message["message_id"] = json!(id);
            state.messages.push(message);
            id
        };
        self.arrived.notify_waiters();
        id
    }

    /// A direct text message from `from`, with a context token.
    pub fn inject_text(&self, from: &str, text: &str) -> u64 {
        let n = self.state.lock().unwrap().messages.len();
        self.inject(json!({
            "from_user_id": from, "to_user_id": "bot@im.bot", "message_type": 1, "message_state": 2,
            "create_time_ms": 1_750_000_000_000u64 + n as u64,
            "item_list": [{"type": 1, "text_item": {"text": text}}],
            "context_token": format!("ctx-{from}-{n}"),
        }))
    }

    /// The next call to `path` (e.g. `ilink/bot/getupdates`) meets `fault`.
    pub fn fault(&self, path: &str, fault: Fault) {
        self.state
            .lock()
            .unwrap()
            .faults
            .entry(path.into())
            .or_default()
            .push_back(fault);
    }

    /// Scripts the next `get_qrcode_status` answers.
    pub fn qr_status(&self, status: Value) {
        self.state.lock().unwrap().qr_statuses.push_back(status);
    }

    /// How many requests of any kind arrived so far.
    pub fn call_count(&self) -> usize {
        self.state.lock().unwrap().calls.len()
    }

    pub fn calls(&self, path: &str) -> Vec<Call> {
        self.state
            .lock()
            .unwrap()
            .calls
            .iter()
            .filter(|c| c.path == path)
            .cloned()
            .collect()
    }

    /// Texts sent to `user` with `sendmessage`, in order.
    pub fn sent_to(&self, user: &str) -> Vec<String> {
        self.calls("ilink/bot/sendmessage")
            .iter()
            .filter(|c| c.body["msg"]["to_user_id"] == user)
            .map(|c| {
                c.body["msg"]["item_list"][0]["text_item"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    }

    /// Waits (bounded) until `check` holds.
    pub async fn wait_until(&self, mut check: impl FnMut(&FakeIlink) -> bool) -> bool {
        crate::wait::eventually(|| check(self)).await
    }
}

impl Drop for FakeIlink {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn reply(status: u16, body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

fn ok(body: Value) -> Response<Full<Bytes>> {
    reply(200, body.to_string())
}

fn cursor_index(cursor: &str) -> usize {
    cursor
        .strip_prefix('c')
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

async fn handle(
    state: Arc<Mutex<State>>,
    arrived: Arc<Notify>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let path = req.uri().path().trim_start_matches('/').to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let headers = crate::http::headers_of(&req);
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let fault = {
        let mut s = state.lock().unwrap();
        s.calls.push(Call {
            path: path.clone(),
            query: query.clone(),
            headers: headers.clone(),
            body: body.clone(),
        });
        s.faults.get_mut(&path).and_then(VecDeque::pop_front)
    };
    match fault {
        Some(Fault::Expired) => {
            return Ok(ok(
                json!({"ret": -14, "errcode": -14, "errmsg": "session timeout"}),
            ))
        }
        Some(Fault::Throttled) => return Ok(ok(json!({"ret": -2, "errmsg": "throttled"}))),
        Some(Fault::Status(code)) => return Ok(reply(code, "<html>bad gateway</html>".into())),
        Some(Fault::Malformed) => return Ok(reply(200, "{not json".into())),
        Some(Fault::Delay(d)) => tokio::time::sleep(d).await,
        Some(Fault::Reply(body)) => return Ok(ok(body)),
        None => {}
    }
    let query_param = |name: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .map(str::to_string)
    };
    // Login needs no token.
    match path.as_str() {
        "ilink/bot/get_bot_qrcode" => {
            let n = {
                let mut s = state.lock().unwrap();
                s.qrcodes += 1;
                s.qrcodes
            };
            return Ok(ok(
                json!({"ret": 0, "qrcode": format!("qr-{n}"), "qrcode_img_content": format!("https://liteapp.weixin.qq.com/q/fake-{n}")}),
            ));
        }
        "ilink/bot/get_qrcode_status" => {
            let _ = query_param("qrcode");
            let status = state
                .lock()
                .unwrap()
                .qr_statuses
                .pop_front()
                .unwrap_or(json!({"status": "wait"}));
            return Ok(ok(status));
        }
        _ => {}
    }
    let token = headers
        .get("authorization")
        .and_then(|a| a.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_string();
    if !state.lock().unwrap().tokens.contains(&token) {
        return Ok(ok(
            json!({"ret": -14, "errcode": -14, "errmsg": "session timeout"}),
        ));
    }
    Ok(match path.as_str() {
        "ilink/bot/getupdates" => {
            let presented = cursor_index(body["get_updates_buf"].as_str().unwrap_or(""));
            let hold = {
                let mut s = state.lock().unwrap();
                s.floor = s.floor.max(presented);
                s.hold
            };
            let deadline = tokio::time::Instant::now() + hold;
            loop {
                let waiter = arrived.notified();
                {
                    let s = state.lock().unwrap();
                    let from = presented.max(s.floor);
                    if s.messages.len() > from {
                        let msgs: Vec<Value> = s.messages[from..].to_vec();
                        break ok(
                            json!({"ret": 0, "msgs": msgs, "get_updates_buf": format!("c{}", s.messages.len()), "longpolling_timeout_ms": 35000}),
                        );
                    }
                }
                if tokio::time::timeout_at(deadline, waiter).await.is_err() {
                    break ok(
                        json!({"ret": 0, "msgs": [], "get_updates_buf": "", "longpolling_timeout_ms": 35000}),
                    );
                }
            }
        }
        "ilink/bot/sendmessage" => ok(json!({"ret": 0, "message_id": (1u64 << 60).to_string()})),
        "ilink/bot/getconfig" => {
            if body
                .get("context_token")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                ok(json!({"ret": -4, "errmsg": "no context"}))
            } else {
                ok(
                    json!({"ret": 0, "typing_ticket": format!("ticket-{}", body["ilink_user_id"].as_str().unwrap_or(""))}),
                )
            }
        }
        "ilink/bot/sendtyping" | "ilink/bot/msg/notifystart" | "ilink/bot/msg/notifystop" => {
            ok(json!({"ret": 0}))
        }
        _ => reply(404, "{}".into()),
    })
}
