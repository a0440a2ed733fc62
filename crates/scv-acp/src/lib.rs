//! `scv acp`: an Agent Client Protocol (version 1) agent on stdin/stdout
//! that is a client of the SCV daemon. Every ACP client (Zed, JetBrains,
//! Neovim plugins) becomes an SCV client: `session/new` is a
//! `session.start`, `session/prompt` a `turn.start`, and the turn's events
//! come back as `session/update` notifications and permission requests.
//!
//! stdout carries JSON-RPC only; diagnostics go to stderr (`SCV_LOG` sets
//! the filter). The mapping, the bounds and the limitations are written
//! down in docs/ACP.md.
//!
//! Modules, one job each:
//! - [`agent`]: the ACP side: the connection, its handlers, `initialize`;
//! - [`bridge`]: the state between both sides: sessions, prompts in
//!   flight, approvals, and what each daemon event becomes;
//! - [`daemon`]: the link to the daemon (started when absent);
//! - [`updates`]: SCV tool events as ACP tool calls (kind, title,
//!   locations, diffs);
//! - [`subagents`]: a subagent's events as content of its `task` call;
//! - [`prompt`]: ACP content blocks as one SCV prompt;
//! - [`meter`]: a session's usage, title and message ids;
//! - [`config`]: a session's config options (model, mode);
//! - [`errors`]: JSON-RPC errors for SCV refusals and failures;
//! - [`stdio`]: the capped line transport on stdin/stdout.
//!
//! Bounds on what a client can make `scv acp` hold (docs/ACP.md):
//! sessions ([`MAX_SESSIONS`], the daemon's per-connection cap), prompts
//! waiting per session ([`MAX_PROMPTS_PER_SESSION`], one running plus the
//! daemon's queue), tool calls tracked per session
//! ([`updates::MAX_TRACKED_CALLS`]) with file text read for diffs capped
//! at [`updates::MAX_DIFF_FILE_BYTES`], input lines
//! ([`stdio::MAX_LINE_BYTES`]), `session/update` notifications not yet
//! written to stdout ([`stdio::MAX_UNWRITTEN_UPDATES`]) and commands
//! between the two sides ([`agent::COMMAND_QUEUE`]); and the daemon's own
//! bounds on what it sends (models listed per provider, MCP servers'
//! questions open per session).

pub mod agent;
pub mod bridge;
pub mod config;
pub mod daemon;
pub mod errors;
pub mod mcp;
pub mod meter;
pub mod modes;
mod options;
pub mod prompt;
pub mod replay;
pub mod stdio;
pub mod subagents;
pub mod updates;

pub use options::{Options, MAX_PROMPTS_PER_SESSION, MAX_SESSIONS};

/// Serves ACP on stdin/stdout until stdin ends. `Ok` on a clean end of
/// input (running turns are cancelled first).
pub async fn run(options: Options) -> anyhow::Result<()> {
    init_tracing();
    agent::serve(options)
        .await
        .map_err(|err| anyhow::anyhow!("ACP connection failed: {err}"))
}

/// Diagnostics on stderr only: stdout is the protocol's.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SCV_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,scv_acp=info,agent_client_protocol=error")
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
}
