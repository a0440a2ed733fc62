//! A session's state as the connection owns it: settings, history (moved
//! into the turn task while a turn runs), the prompt queue, the pause flag
//! and the active turn.

pub mod approvals;
pub mod queue;
pub mod sink;

pub use approvals::Approvals;
pub use queue::PromptQueue;
pub use sink::{EmitError, SessionSink};

use crate::context::History;
use crate::provider::OpenAi;
use scv_protocol::Usage;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What a session was started with; fixed for its life.
pub struct SessionSettings {
    pub cwd: PathBuf,
    pub provider: OpenAi,
    pub no_tools: bool,
    /// The label queue entries carry as `submitter`.
    pub submitter: String,
}

pub struct Session {
    pub sink: Arc<SessionSink>,
    pub settings: Arc<SessionSettings>,
    pub approvals: Arc<Approvals>,
    /// `None` while a turn owns it.
    pub history: Option<History>,
    pub queue: PromptQueue,
    pub paused: bool,
    pub active: Option<ActiveTurn>,
    /// Provider usage summed over the session (cleared by `session.clear`).
    pub usage: Option<Usage>,
}

pub struct ActiveTurn {
    pub turn_id: Arc<str>,
    /// The request that started it (its events answer that request).
    pub request_id: Arc<str>,
    pub token: CancellationToken,
}
