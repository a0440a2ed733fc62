//! Sending a provider request: one POST with the wire's body. A transient
//! failure (429, 5xx, Anthropic's 529) before any output, while retries
//! are left, comes back as a [`Retry`] with the wait (`Retry-After`
//! honoured): the turn waits, says so, and sends again. The caller cancels
//! by dropping the future. Errors carry the status and the provider's own
//! text, never the key.

use super::errors::{self, ProviderError, Redactor};
use super::settings::Provider;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;
use std::time::Duration;

/// Longest `Retry-After` we honour; longer hints are cut to this.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);
/// Most of an error body we read.
const MAX_ERROR_BODY: usize = 16 * 1024;

/// How a request proves who it is (with the provider's key, when it has
/// one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Auth {
    /// `Authorization: Bearer …`; nothing without a key.
    Bearer,
    /// Anthropic: `x-api-key` (never `Authorization`) and the API version,
    /// which goes with or without a key.
    Anthropic,
}

/// The Anthropic API version SCV speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A transient refusal: send again after `wait`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Retry {
    pub wait: Duration,
    pub status: u16,
    /// The status in words.
    pub reason: &'static str,
}

/// Why a request did not open a stream.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Transient, and retries are left.
    Retry(Retry),
    Failed(ProviderError),
}

impl From<ProviderError> for Failure {
    fn from(err: ProviderError) -> Failure {
        Failure::Failed(err)
    }
}

/// `request` with the provider's proof of who it is (its key, as `auth`
/// says to carry it) and its definition's headers: the same for every
/// request to the provider (streams, the model list).
pub(super) fn authorized(
    provider: &Provider,
    mut request: reqwest::RequestBuilder,
    auth: Auth,
) -> reqwest::RequestBuilder {
    let key = provider.api_key.as_deref();
    match (auth, key) {
        (Auth::Bearer, Some(key)) => request = request.bearer_auth(key),
        (Auth::Bearer, None) => {}
        (Auth::Anthropic, key) => {
            request = request.header("anthropic-version", ANTHROPIC_VERSION);
            if let Some(key) = key {
                request = request.header("x-api-key", key);
            }
        }
    }
    for (name, value) in &provider.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    request
}

/// Sends attempt `attempt` (0: the first) of a request.
pub(super) async fn send(
    provider: &Provider,
    url: &str,
    body: super::body::Body,
    auth: Auth,
    redact: &Redactor,
    attempt: u32,
) -> Result<reqwest::Response, Failure> {
    let request = provider
        .http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .header("content-length", body.len())
        .body(reqwest::Body::wrap(body));
    let request = authorized(provider, request, auth);
    let response = tokio::time::timeout(provider.idle_timeout, request.send())
        .await
        .map_err(|_| {
            ProviderError::provider(format!(
                "provider did not answer within {} ms",
                provider.idle_timeout.as_millis()
            ))
        })?
        .map_err(|err| redact.error(ProviderError::provider(describe(&err))))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let transient = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
    if transient && attempt < provider.max_retries {
        let wait = retry_after(response.headers())
            .unwrap_or_else(|| Duration::from_millis(500 << attempt.min(16)))
            .min(MAX_RETRY_WAIT);
        tracing::info!("provider answered {status}; retrying in {wait:?}");
        return Err(Failure::Retry(Retry {
            wait,
            status: status.as_u16(),
            reason: match status.as_u16() {
                429 => "rate limited",
                529 | 503 => "overloaded",
                _ => "server error",
            },
        }));
    }
    let mut error = read_error(response, redact).await;
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        // Which key it was, by its variable's name (never its value).
        let var = provider.api_key_env.as_deref().unwrap_or("api_key_env");
        error.message.push_str(&if provider.api_key.is_some() {
            format!(" (the key from {var} was refused)")
        } else {
            format!(" (no key was sent: {var} is not set in the server's environment)")
        });
    }
    Err(Failure::Failed(error))
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
    errors::from_body(status, &body, redact)
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
}
