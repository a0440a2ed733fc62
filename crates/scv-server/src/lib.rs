//! The SCV server: transport, sessions, the agent loop, the providers and
//! the tools. `scv-server --stdio` serves one client on stdin/stdout;
//! `scv-server` runs the daemon on a Unix socket. See docs/DESIGN.md for
//! the layers and who owns what.

mod agent;
mod attach;
mod background;
mod blocking;
mod checkpoint;
mod claude;
mod clawbot;
mod component;
pub mod config;
mod connection;
mod context;
mod cost;
mod customize;
pub mod daemon;
pub mod egress;
mod gate;
mod handles;
mod hooks;
mod hooks_component;
mod inline;
mod instructions;
mod journal;
mod kept_rules;
mod launch;
mod live;

mod mcp_component;
mod mcp_json;
pub mod memory;
mod model;
mod permissions;
mod plugins;
mod provider;
pub mod reaper;
/// Entry points for the fuzz targets in `fuzz/` (cargo-fuzz): the provider
/// wires' parsers are private, so this drives them. Not an API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::provider::fuzzing::*;
}
pub mod sandbox;
pub mod server;
mod session;
mod signals;
pub mod stdio;
mod sync;
mod tasks;
mod telemetry;
mod text;
pub mod tools;
mod transcript;
mod transport;
mod trust;
