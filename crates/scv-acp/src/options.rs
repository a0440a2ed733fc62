//! What `scv acp` is started with, and its bounds. A leaf.

/// Sessions one `scv acp` holds: the daemon's cap on sessions per
/// connection (all ACP sessions share one daemon connection).
pub const MAX_SESSIONS: usize = scv_protocol::limits::MAX_SESSIONS_PER_CONNECTION;

/// Prompts of one session waiting for their answer: the running turn plus
/// the daemon's queue.
pub const MAX_PROMPTS_PER_SESSION: usize = 1 + scv_protocol::limits::MAX_QUEUED_PROMPTS;

/// Where the daemon is and what sessions ask for.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the daemon is (this machine's socket, started when absent).
    pub endpoint: scv_client::Endpoint,
    /// `--provider` for every session; `None`: the daemon's.
    pub provider: Option<String>,
    /// `--model` for every session; `None`: the provider's.
    pub model: Option<String>,
}
