//! Test-only helpers: a scripted mock OpenAI-compatible provider (a real
//! HTTP server on 127.0.0.1) and a client that drives the real
//! `scv-server` binary over pipes.

pub mod client;
pub mod fake_ilink;
pub mod mock_provider;
pub mod procfs;

pub use client::{TestHome, TestServer};
pub use mock_provider::{MockProvider, Recorded, Reply};
