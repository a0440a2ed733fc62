//! The `scv` command: the terminal UI, `scv exec`, and `scv daemon …`.
//! It talks to the daemon only through the protocol.

pub mod daemon_cmd;
pub mod exec;
pub mod session;
pub mod tui;
