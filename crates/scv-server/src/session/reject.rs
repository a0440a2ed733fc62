//! A request the server refuses: the `error` event's code and message (and,
//! for a stale queue edit, the entry as the server holds it).

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
