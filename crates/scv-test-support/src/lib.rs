#![allow(clippy::unwrap_used, clippy::expect_used)] // test-only: a broken fixture fails the test loudly
//! Test-only helpers: a scripted mock LLM provider speaking Chat
//! Completions, Anthropic Messages and OpenAI Responses (a real HTTP
//! server on 127.0.0.1) and a client that drives the real
//! `scv-server` binary over pipes.

pub mod account_files;
pub mod client;
pub mod daemon;
pub mod fake_ilink;
mod http;
mod json;
pub mod mcp_python;
pub mod mock_provider;
pub mod procfs;
pub mod reply;
pub mod tmpfs;
mod wait;
pub mod wires;

pub use client::{TestHome, TestServer};
pub use mock_provider::{MockProvider, Recorded};
pub use reply::{Ending, Reply, SseEvent, Wire};
pub use wait::eventually;
