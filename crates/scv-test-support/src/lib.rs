#![allow(clippy::unwrap_used, clippy::expect_used)] // test-only: a broken fixture fails the test loudly
//! Test-only helpers: a scripted mock LLM provider speaking Chat
//! Completions, Anthropic Messages and OpenAI Responses (a real HTTP
//! server on 127.0.0.1) and a client that drives the real
//! `scv-server` binary over pipes.

pub mod account_files;
pub mod client;
pub mod daemon;
pub mod fake_ilink;
pub mod mcp_python;
pub mod mock_provider;
pub mod procfs;
pub mod wires;

pub use client::{TestHome, TestServer};
pub use mock_provider::{Ending, MockProvider, Recorded, Reply, SseEvent, Wire};

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

/// Serves HTTP/1 on `listener`, one task per connection, with `handler`
/// answering each request (the mock provider and the fake iLink server).
pub(crate) fn serve_http<F, Fut, B>(
    listener: tokio::net::TcpListener,
    handler: F,
) -> tokio::task::JoinHandle<()>
where
    F: Fn(hyper::Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<hyper::Response<B>, std::convert::Infallible>>
        + Send
        + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let handler = handler.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(handler);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}
