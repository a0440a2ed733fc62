//! The parts of a session that its host and its running turn share: the
//! event sink (the one place `seq` is assigned), the pending approvals,
//! and the prompt queue.

pub(crate) mod approvals;
pub(crate) mod queue;
pub(crate) mod sink;

pub(crate) use approvals::Approvals;
pub(crate) use queue::{PromptQueue, QueueError};
pub(crate) use sink::{EmitError, SessionSink};
