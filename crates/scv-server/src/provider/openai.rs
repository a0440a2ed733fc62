//! The OpenAI-compatible chat-completions client (`provider = "openai"`).
//!
//! `POST {base_url}/chat/completions` with `stream: true` and usage in the
//! final chunk. Transient failures (429, 5xx) before any output are retried
//! a bounded number of times with backoff, honouring `Retry-After`; the
//! caller cancels by dropping the future. Error messages carry the status
//! and the provider's own text, never the API key.

use super::stream::ResponseStream;
use super::{ChatMessage, ProviderError, Redactor};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;
use serde::Serialize;
use std::time::Duration;

/// Longest `Retry-After` we honour; longer hints are cut to this.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);
/// Most of an error body we read.
const MAX_ERROR_BODY: usize = 16 * 1024;

#[derive(Clone)]
pub struct OpenAi {
    pub http: reqwest::Client,
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub idle_timeout: Duration,
    pub max_retries: u32,
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [&'a ChatMessage],
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [serde_json::Value],
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

impl OpenAi {
    /// Sends the request and returns the open stream once the provider
    /// answered 200.
    pub async fn start(
        &self,
        messages: &[&ChatMessage],
        tools: &[serde_json::Value],
    ) -> Result<ResponseStream, ProviderError> {
        let body = serde_json::to_vec(&ChatRequest {
            model: &self.model,
            messages,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            tools,
        })
        .map_err(|err| ProviderError::provider(format!("cannot encode request: {err}")))?;
        let url = format!("{}/chat/completions", self.base_url.trim_end_matches('/'));
        let mut attempt = 0;
        loop {
            let mut request = self
                .http
                .post(&url)
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .body(body.clone());
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            let response = tokio::time::timeout(self.idle_timeout, request.send())
                .await
                .map_err(|_| {
                    ProviderError::provider(format!(
                        "provider did not answer within {} ms",
                        self.idle_timeout.as_millis()
                    ))
                })?
                .map_err(|err| {
                    self.redactor()
                        .error(ProviderError::provider(describe(&err)))
                })?;
            let status = response.status();
            if status.is_success() {
                return Ok(ResponseStream::new(
                    response,
                    self.idle_timeout,
                    self.redactor(),
                ));
            }
            let transient = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
            if transient && attempt < self.max_retries {
                let wait = retry_after(response.headers())
                    .unwrap_or_else(|| Duration::from_millis(500 << attempt))
                    .min(MAX_RETRY_WAIT);
                tracing::info!("provider answered {status}; retrying in {wait:?}");
                drop(response);
                tokio::time::sleep(wait).await;
                attempt += 1;
                continue;
            }
            return Err(read_error(response, &self.redactor()).await);
        }
    }

    fn redactor(&self) -> Redactor {
        Redactor::new(self.api_key.as_deref())
    }
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

async fn read_error(mut response: reqwest::Response, redact: &Redactor) -> ProviderError {
    let status = response.status();
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match tokio::time::timeout(Duration::from_secs(5), response.chunk()).await {
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    // Redacted first, on the raw text: nothing below may cut a key in two.
    let body = redact.text(&String::from_utf8_lossy(&body));
    match serde_json::from_str::<serde_json::Value>(&body) {
        Ok(value) => error_from_body(Some(status), value.get("error").unwrap_or(&value), redact),
        Err(_) => {
            let text = one_line(&body, 300);
            let message = if text.is_empty() {
                format!("provider returned HTTP {status}")
            } else {
                format!("provider returned HTTP {status}: {text}")
            };
            ProviderError {
                context_overflow: mentions_context_overflow(&message),
                ..ProviderError::provider(message)
            }
        }
    }
}

/// Builds an error from an OpenAI-style `error` object (or any JSON).
pub(super) fn error_from_body(
    status: Option<StatusCode>,
    error: &serde_json::Value,
    redact: &Redactor,
) -> ProviderError {
    let text = match error.get("message").and_then(|m| m.as_str()) {
        Some(message) => redact.text(message),
        None => match error {
            serde_json::Value::String(s) => redact.text(s),
            other => redact.text(&other.to_string()),
        },
    };
    let code = error
        .get("code")
        .and_then(|c| c.as_str())
        .unwrap_or_default();
    let text = one_line(&text, 300);
    let message = match status {
        Some(status) => format!("provider returned HTTP {status}: {text}"),
        None => format!("provider reported an error: {text}"),
    };
    ProviderError {
        context_overflow: code == "context_length_exceeded" || mentions_context_overflow(&text),
        ..ProviderError::provider(message)
    }
}

fn mentions_context_overflow(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "too many tokens",
        "prompt is too long",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}

fn one_line(text: &str, max_chars: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// A transport error in words, without the request URL's query or any
/// header (reqwest never prints headers).
pub(super) fn describe(err: &reqwest::Error) -> String {
    let what = if err.is_connect() {
        "cannot connect to provider"
    } else if err.is_timeout() {
        "provider request timed out"
    } else if err.is_body() || err.is_decode() {
        "provider response body failed"
    } else {
        "provider request failed"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        cause = inner.to_string();
        source = inner.source();
    }
    let host = err
        .url()
        .map(|u| {
            format!(
                " at {}",
                u.host_str().map_or_else(String::new, |h| match u.port() {
                    Some(port) => format!("{h}:{port}"),
                    None => h.to_string(),
                })
            )
        })
        .unwrap_or_default();
    if cause.is_empty() {
        format!("{what}{host}")
    } else {
        format!("{what}{host}: {cause}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn error_bodies_become_one_line_messages() {
        let body = serde_json::json!({"message": "This model's maximum context length is 8192 tokens.\nReduce it.", "code": "context_length_exceeded"});
        let err = error_from_body(Some(StatusCode::BAD_REQUEST), &body, &Redactor::default());
        assert_eq!(
            err.message,
            "provider returned HTTP 400 Bad Request: This model's maximum context length is 8192 tokens. Reduce it."
        );
        assert!(err.context_overflow);
    }
}
