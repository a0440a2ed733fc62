//! Elicitation: a server asking the user something in the middle of a
//! tool call (`elicitation/create`, form or URL mode). The call's session
//! passes an [`Elicitor`] with the call; while the call runs, the server's
//! requests go to the elicitor of the latest call still running on that
//! server. With none (no call running, or a session whose client did not
//! ask for elicitation) SCV declines at once. Every question is bounded:
//! [`ELICITATION_TIMEOUT`] to answer (then it is cancelled), a message of
//! at most [`MAX_ELICITATION_MESSAGE_BYTES`], a schema of at most
//! [`MAX_ELICITATION_SCHEMA_BYTES`].

use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a question waits for its answer before it is cancelled.
pub const ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);
/// The longest message passed on (longer ones are cut).
pub const MAX_ELICITATION_MESSAGE_BYTES: usize = 4096;
/// The largest requested schema passed on (a larger one is declined).
pub const MAX_ELICITATION_SCHEMA_BYTES: usize = 64 * 1024;

/// What a server asks.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    pub server: String,
    pub message: String,
    /// Form mode: the requested schema (an object of primitive fields).
    pub schema: Option<Value>,
    /// URL mode: the page the user opens.
    pub url: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitAction {
    Accept,
    Decline,
    Cancel,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitAnswer {
    pub action: ElicitAction,
    /// Form mode, accepted: the content (checked against the schema).
    pub content: Option<Value>,
}

impl ElicitAnswer {
    pub fn decline() -> ElicitAnswer {
        ElicitAnswer {
            action: ElicitAction::Decline,
            content: None,
        }
    }

    pub fn cancel() -> ElicitAnswer {
        ElicitAnswer {
            action: ElicitAction::Cancel,
            content: None,
        }
    }
}

/// Asks the user on behalf of one call.
pub type Elicitor = Arc<
    dyn Fn(ElicitationRequest) -> Pin<Box<dyn Future<Output = ElicitAnswer> + Send>> + Send + Sync,
>;

/// The elicitors of a server's running calls, latest last.
#[derive(Default)]
pub(crate) struct Askers {
    next: AtomicU64,
    list: Mutex<Vec<(u64, Elicitor)>>,
}

/// Removes its elicitor when the call ends.
pub(crate) struct Asking {
    askers: Arc<Askers>,
    id: u64,
}

impl Askers {
    pub(crate) fn register(self: &Arc<Self>, elicitor: Elicitor) -> Asking {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.list).push((id, elicitor));
        Asking {
            askers: self.clone(),
            id,
        }
    }

    /// The elicitor of the latest running call, if any.
    pub(crate) fn current(&self) -> Option<Elicitor> {
        lock(&self.list).last().map(|(_, e)| e.clone())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Drop for Asking {
    fn drop(&mut self) {
        lock(&self.askers.list).retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_running_call_is_asked_and_a_finished_one_no_longer() {
        let askers = Arc::new(Askers::default());
        assert!(askers.current().is_none());
        let first: Elicitor = Arc::new(|_| Box::pin(async { ElicitAnswer::decline() }));
        let second: Elicitor = Arc::new(|_| Box::pin(async { ElicitAnswer::cancel() }));
        let a = askers.register(first.clone());
        let b = askers.register(second.clone());
        assert!(Arc::ptr_eq(&askers.current().unwrap(), &second));
        drop(b);
        assert!(Arc::ptr_eq(&askers.current().unwrap(), &first));
        drop(a);
        assert!(askers.current().is_none());
    }
}
