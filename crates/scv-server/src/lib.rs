//! The SCV server: transport, sessions, the agent loop, the provider and
//! the tools. `scv-server --stdio` serves one client on stdin/stdout;
//! `scv-server` runs the daemon on a Unix socket.

pub mod agent;
pub mod clawbot;
pub mod config;
pub mod connection;
pub mod context;
pub mod daemon;
pub mod provider;
pub mod server;
pub mod session;
pub mod stdio;
pub mod tools;
pub mod transport;
