//! Test-only helpers: a scripted mock OpenAI-compatible provider (a real
//! HTTP server on 127.0.0.1) and a client that drives the real
//! `scv-server` binary over pipes.

pub mod client;
pub mod fake_ilink;
pub mod mock_provider;
pub mod procfs;

pub use client::{TestHome, TestServer};
pub use mock_provider::{MockProvider, Recorded, Reply};

/// A request's headers, names lower-cased.
pub(crate) fn headers_of<B>(req: &hyper::Request<B>) -> std::collections::HashMap<String, String> {
    req.headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_lowercase(),
                v.to_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Polls `check` every 25 ms until it holds, for at most 20 s (a hang
/// guard, not a timing assertion). True when it held.
pub async fn eventually(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..800 {
        if check() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    false
}
