//! SCV's client of Model Context Protocol servers.
//!
//! A [`Hub`] holds the configured servers ([`ServerSpec`], from
//! `[mcp_servers.NAME]`), each supervised by its own task: started in the
//! background, restarted with backoff when it dies, stopped (its process
//! group killed and reaped) on shutdown. Sessions read the tools of the
//! connected servers ([`McpTool`], offered to the model as
//! `mcp__NAME__TOOL`) and call them through the hub, every call bounded by
//! the server's `tool_timeout_ms` and cancelled on the server when the turn
//! is. The protocol is spoken with the official Rust SDK, `rmcp`.

pub mod auth;
mod content;
mod elicit;
mod errors;
mod handler;
mod hub;
mod limits;
mod names;
mod result;
mod revision;
mod rounds;
mod server;
mod spec;
mod state;
mod tools;
mod transport;

pub use content::{prompt_command, CONTENT_TIMEOUT, MAX_PROMPT_TEXT_BYTES};
pub use elicit::{
    ElicitAction, ElicitAnswer, ElicitationRequest, Elicitor, ELICITATION_TIMEOUT,
    MAX_ELICITATION_MESSAGE_BYTES, MAX_ELICITATION_SCHEMA_BYTES,
};
pub use hub::{CallError, Hub};
pub use limits::*;
pub use names::tool_name;
pub use spec::{RawServer, ServerSpec, Transport};
pub use state::{HubEnv, ServerStatus, State};
pub use tools::McpTool;
