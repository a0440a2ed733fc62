//! A connection's sessions: the host (each session's state, the one
//! dispatch of session messages, turns and their terminal events), the
//! factory that makes a session from `session.start`, and the queue.

mod factory;
mod host;
mod images;
mod queue;
mod reject;

pub(crate) use host::{SessionHost, CLEANUP_GRACE};
pub(crate) use reject::{Handled, Reject};
