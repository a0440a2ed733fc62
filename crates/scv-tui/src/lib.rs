//! The `scv` command: the terminal UI, `scv exec`, `scv daemon …` and
//! `scv clawbot …`, `scv mcp list`, `scv sessions …`, and `scv bridge`
//! (what `scv --remote HOST` runs over ssh).
//! It talks to the daemon only through the protocol.

pub mod agents_cmd;
pub mod bridge_cmd;
pub mod clawbot_cmd;
pub mod control;
pub mod daemon_cmd;
pub mod exec;
pub mod first_run;
pub mod mcp_cmd;
pub mod plugin_cmd;
pub mod session;
pub mod sessions_cmd;
pub mod trust_cmd;
pub mod tui;
pub mod undo_cmd;
pub mod usage_cmd;
