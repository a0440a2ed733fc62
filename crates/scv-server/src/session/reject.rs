//! A request the server refuses: the `error` event's code and message (and,
//! for a stale queue edit, the entry as the server holds it).

use crate::session::queue::QueueError;
use scv_protocol::limits::MAX_PROMPT_BYTES;
use scv_protocol::{ErrorCode, QueueEntry};

/// A request the server refuses, as an `error` event.
pub(crate) struct Reject {
    pub code: ErrorCode,
    pub message: String,
    pub entry: Option<Box<QueueEntry>>,
    /// A refused `checkpoint.restore`: the paths in the way (boxed: every
    /// handler returns a `Reject`, so it stays small).
    pub conflicts: Option<Box<[String]>>,
}

impl Reject {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Reject {
            code,
            message: message.into(),
            entry: None,
            conflicts: None,
        }
    }
}

pub(crate) type Handled = Result<(), Reject>;

pub(crate) fn invalid(message: impl Into<String>) -> Reject {
    Reject::new(ErrorCode::InvalidRequest, message)
}

/// A checkpoint request's refusal, as every other.
impl From<crate::checkpoint::Refusal> for Reject {
    fn from(refused: crate::checkpoint::Refusal) -> Reject {
        Reject {
            code: refused.code,
            message: refused.message,
            entry: None,
            conflicts: refused.conflicts,
        }
    }
}

/// A prompt `turn.start` or `queue.update` may carry.
pub(crate) fn check_prompt(prompt: &str) -> Result<(), Reject> {
    if prompt.trim().is_empty() {
        return Err(invalid("prompt is empty"));
    }
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(invalid(format!(
            "prompt is {} bytes; the limit is {MAX_PROMPT_BYTES}",
            prompt.len()
        )));
    }
    Ok(())
}

/// A queue edit's refusal.
pub(crate) fn queue_reject(err: QueueError) -> Reject {
    match err {
        QueueError::NotFound => Reject::new(ErrorCode::QueueNotFound, "no such queued prompt"),
        QueueError::Full(message) => Reject::new(ErrorCode::InvalidRequest, message),
        QueueError::Conflict(entry) => Reject {
            conflicts: None,
            code: ErrorCode::QueueConflict,
            message: format!(
                "queued prompt {} is at revision {}; reload it and try again",
                entry.queue_id, entry.revision
            ),
            entry: Some(Box::new(entry)),
        },
    }
}
