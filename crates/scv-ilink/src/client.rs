//! The iLink Bot HTTP client. Every call is bounded; application errors
//! arrive as HTTP 200 with `ret`/`errcode` and are classified, transport
//! failures are told apart, and no message ever carries the token.

use crate::types::{QrCode, QrStatus, Updates, WireMessage};
use base64::Engine;
use serde_json::{json, Value};
use std::time::Duration;

pub const DEFAULT_BASE_URL: &str = "https://ilinkai.weixin.qq.com";
/// Long poll: the server's hint plus this much.
const LONG_POLL_SLACK: Duration = Duration::from_secs(7);
const DEFAULT_LONG_POLL: Duration = Duration::from_secs(35);
const SEND_TIMEOUT: Duration = Duration::from_secs(15);
const CONFIG_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IlinkError {
    /// `-14`: the token is stale or the bot was bound elsewhere.
    #[error("the WeChat session expired; log in again with `scv clawbot login`")]
    SessionExpired,
    /// `-2`.
    #[error("WeChat throttled the request")]
    Throttled,
    /// `-4` from getconfig.
    #[error("no recent conversation with that user")]
    NoContext,
    #[error("WeChat refused the request (code {code})")]
    Refused { code: i64 },
    /// Network error, timeout, HTTP 5xx or a malformed reply.
    #[error("WeChat could not be reached ({0})")]
    Transport(String),
}

#[derive(Clone)]
pub struct IlinkClient {
    http: reqwest::Client,
    base_url: String,
    token: Option<String>,
    agent: String,
    version_code: u32,
}

impl IlinkClient {
    /// `agent` like `scv/0.1.0`; `version` is the client's semver.
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        token: Option<String>,
        version: &str,
    ) -> IlinkClient {
        IlinkClient {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            token,
            agent: format!("scv/{version}"),
            version_code: pack_version(version),
        }
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn base_info(&self) -> Value {
        json!({"channel_version": self.agent.trim_start_matches("scv/"), "bot_agent": self.agent})
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let uin =
            base64::engine::general_purpose::STANDARD.encode(rand::random::<u32>().to_string());
        let mut request = self
            .http
            .request(method, format!("{}/{path}", self.base_url))
            .header("Content-Type", "application/json")
            .header("AuthorizationType", "ilink_bot_token")
            .header("X-WECHAT-UIN", uin)
            .header("iLink-App-Id", "bot")
            .header("iLink-App-ClientVersion", self.version_code.to_string());
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request
    }

    /// POSTs `body` (with `base_info`) and returns the checked reply.
    async fn post(
        &self,
        path: &str,
        mut body: Value,
        timeout: Duration,
    ) -> Result<Value, IlinkError> {
        body["base_info"] = self.base_info();
        let send = self.request(reqwest::Method::POST, path).json(&body).send();
        let response = match tokio::time::timeout(timeout, send).await {
            Err(_) => return Err(IlinkError::Transport("timed out".into())),
            Ok(Err(err)) => return Err(IlinkError::Transport(describe(&err))),
            Ok(Ok(response)) => response,
        };
        read_reply(response, timeout).await
    }

    /// One long poll. A client-side timeout is an empty reply.
    pub async fn get_updates(
        &self,
        cursor: &str,
        hint: Option<Duration>,
    ) -> Result<Updates, IlinkError> {
        let timeout = hint.unwrap_or(DEFAULT_LONG_POLL) + LONG_POLL_SLACK;
        let reply = match self
            .post(
                "ilink/bot/getupdates",
                json!({"get_updates_buf": cursor}),
                timeout,
            )
            .await
        {
            Err(IlinkError::Transport(reason)) if reason == "timed out" => {
                return Ok(Updates::default())
            }
            other => other?,
        };
        parse_updates(&reply)
    }

    /// Sends one text message.
    pub async fn send_text(
        &self,
        to_user_id: &str,
        context_token: &str,
        text: &str,
    ) -> Result<(), IlinkError> {
        let msg = json!({
            "from_user_id": "",
            "to_user_id": to_user_id,
            "client_id": format!("scv-{}", uuid::Uuid::new_v4().simple()),
            "message_type": 2,
            "message_state": 2,
            "item_list": [{"type": 1, "text_item": {"text": text}}],
            "context_token": context_token,
        });
        self.post("ilink/bot/sendmessage", json!({ "msg": msg }), SEND_TIMEOUT)
            .await
            .map(drop)
    }

    /// The typing ticket for a user (`NoContext` when there is none).
    pub async fn typing_ticket(
        &self,
        user_id: &str,
        context_token: Option<&str>,
    ) -> Result<String, IlinkError> {
        let mut body = json!({"ilink_user_id": user_id});
        if let Some(token) = context_token {
            body["context_token"] = json!(token);
        }
        let reply = self
            .post("ilink/bot/getconfig", body, CONFIG_TIMEOUT)
            .await?;
        reply
            .get("typing_ticket")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(IlinkError::NoContext)
    }

    /// Typing indicator: `true` starts (repeat every ~5 s), `false` stops.
    pub async fn send_typing(
        &self,
        user_id: &str,
        ticket: &str,
        typing: bool,
    ) -> Result<(), IlinkError> {
        let body = json!({"ilink_user_id": user_id, "typing_ticket": ticket, "status": if typing { 1 } else { 2 }});
        self.post("ilink/bot/sendtyping", body, CONFIG_TIMEOUT)
            .await
            .map(drop)
    }

    pub async fn notify(&self, start: bool) -> Result<(), IlinkError> {
        let path = if start {
            "ilink/bot/msg/notifystart"
        } else {
            "ilink/bot/msg/notifystop"
        };
        self.post(path, json!({}), CONFIG_TIMEOUT).await.map(drop)
    }

    /// Step 1 of login.
    pub async fn get_qrcode(&self) -> Result<QrCode, IlinkError> {
        let reply = self
            .post(
                "ilink/bot/get_bot_qrcode?bot_type=3",
                json!({"local_token_list": []}),
                CONFIG_TIMEOUT,
            )
            .await?;
        parse_qrcode(&reply)
    }

    /// Step 2 of login: one status poll. A timeout or network error is
    /// `Wait`, as the spec says.
    pub async fn qrcode_status(
        &self,
        qrcode: &str,
        verify_code: Option<&str>,
    ) -> Result<QrStatus, IlinkError> {
        let mut path = format!("ilink/bot/get_qrcode_status?qrcode={}", urlencode(qrcode));
        if let Some(code) = verify_code {
            path.push_str(&format!("&verify_code={}", urlencode(code)));
        }
        let send = self.request(reqwest::Method::GET, &path).send();
        let response = match tokio::time::timeout(DEFAULT_LONG_POLL + LONG_POLL_SLACK, send).await {
            Ok(Ok(response)) => response,
            _ => return Ok(QrStatus::Wait),
        };
        let reply = match read_reply(response, CONFIG_TIMEOUT).await {
            Ok(reply) => reply,
            Err(IlinkError::Transport(_)) => return Ok(QrStatus::Wait),
            Err(err) => return Err(err),
        };
        parse_qrcode_status(&reply)
    }
}

async fn read_reply(
    mut response: reqwest::Response,
    timeout: Duration,
) -> Result<Value, IlinkError> {
    let status = response.status();
    if !status.is_success() {
        return Err(IlinkError::Transport(format!("HTTP {}", status.as_u16())));
    }
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout(timeout, response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                body.extend_from_slice(&chunk);
                if body.len() > 8 * 1024 * 1024 {
                    return Err(IlinkError::Transport("reply too large".into()));
                }
            }
            Ok(Ok(None)) => break,
            Ok(Err(err)) => return Err(IlinkError::Transport(describe(&err))),
            Err(_) => return Err(IlinkError::Transport("timed out".into())),
        }
    }
    check_reply(&body)
}

// The replies' parsing, apart from the HTTP exchange so that the fuzz
// target in `fuzz/` (and the tests) can feed it any bytes.

/// A reply body checked: a JSON object with `ret` and `errcode` zero (or
/// absent), or the error they stand for.
pub fn check_reply(body: &[u8]) -> Result<Value, IlinkError> {
    let reply: Value = serde_json::from_slice(body)
        .map_err(|_| IlinkError::Transport("malformed reply".into()))?;
    if !reply.is_object() {
        return Err(IlinkError::Transport("malformed reply".into()));
    }
    let code = |name: &str| reply.get(name).and_then(Value::as_i64).unwrap_or(0);
    match (code("ret"), code("errcode")) {
        (-14, _) | (_, -14) => Err(IlinkError::SessionExpired),
        (-2, _) | (_, -2) => Err(IlinkError::Throttled),
        (-4, _) | (_, -4) => Err(IlinkError::NoContext),
        (0, 0) => Ok(reply),
        (0, code) | (code, _) => Err(IlinkError::Refused { code }),
    }
}

/// A checked `getupdates` reply.
pub fn parse_updates(reply: &Value) -> Result<Updates, IlinkError> {
    let msgs = match reply.get("msgs") {
        None | Some(Value::Null) => Vec::new(),
        Some(list) => serde_json::from_value::<Vec<WireMessage>>(list.clone())
            .map_err(|_| IlinkError::Transport("malformed getupdates reply".into()))?,
    };
    Ok(Updates {
        msgs,
        cursor: reply
            .get("get_updates_buf")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        longpolling_timeout_ms: reply.get("longpolling_timeout_ms").and_then(Value::as_u64),
    })
}

/// A checked `get_bot_qrcode` reply.
pub fn parse_qrcode(reply: &Value) -> Result<QrCode, IlinkError> {
    let field = |name: &str| reply.get(name).and_then(Value::as_str).map(str::to_string);
    match (field("qrcode"), field("qrcode_img_content")) {
        (Some(qrcode), Some(url)) => Ok(QrCode { qrcode, url }),
        _ => Err(IlinkError::Transport("malformed QR code reply".into())),
    }
}

/// A checked `get_qrcode_status` reply.
pub fn parse_qrcode_status(reply: &Value) -> Result<QrStatus, IlinkError> {
    let field = |name: &str| {
        reply
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    Ok(match field("status").as_deref().unwrap_or("wait") {
        "scaned" => QrStatus::Scanned,
        "need_verifycode" => QrStatus::NeedVerifyCode,
        "verify_code_blocked" => QrStatus::VerifyCodeBlocked,
        "expired" => QrStatus::Expired,
        "scaned_but_redirect" => match field("redirect_host") {
            Some(host) => QrStatus::Redirect { host },
            None => QrStatus::Wait,
        },
        "binded_redirect" => QrStatus::AlreadyBound,
        "confirmed" => match (field("bot_token"), field("ilink_bot_id")) {
            (Some(bot_token), Some(bot_id)) => QrStatus::Confirmed {
                bot_token,
                bot_id,
                user_id: field("ilink_user_id"),
                base_url: field("baseurl"),
            },
            _ => {
                return Err(IlinkError::Transport(
                    "login confirmed without a bot id".into(),
                ))
            }
        },
        _ => QrStatus::Wait,
    })
}

/// Transport error in words, without the URL (it may carry the QR code).
fn describe(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        "timed out".into()
    } else if err.is_connect() {
        "connection failed".into()
    } else {
        "request failed".into()
    }
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// "0.1.19" → 0x00_00_01_13 as a decimal number.
pub fn pack_version(version: &str) -> u32 {
    let mut parts = version
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0).min(255));
    let (major, minor, patch) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (major << 16) | (minor << 8) | patch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_pack_into_one_number() {
        assert_eq!(pack_version("0.1.19"), 0x0113);
        assert_eq!(pack_version("1.2.3"), 0x010203);
    }
}
