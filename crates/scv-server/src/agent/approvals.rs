//! Pending approvals of one session: approval id → the waiting tool call.
//! Ids are fresh UUIDv4s, never reused; a resolved or abandoned id is gone.

use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::oneshot;

#[derive(Default)]
pub(crate) struct Approvals {
    pending: Mutex<HashMap<String, oneshot::Sender<bool>>>,
}

impl Approvals {
    /// Registers a new approval; returns its id and the answer to await.
    pub(crate) fn request(&self) -> (String, oneshot::Receiver<bool>) {
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        self.lock().insert(id.clone(), tx);
        (id, rx)
    }

    /// Answers a pending approval; false when the id is unknown.
    pub(crate) fn resolve(&self, id: &str, approved: bool) -> bool {
        match self.lock().remove(id) {
            Some(tx) => tx.send(approved).is_ok(),
            None => false,
        }
    }

    /// Forgets an approval whose call no longer waits (cancel, timeout).
    pub(crate) fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<bool>>> {
        crate::sync::lock(&self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_id_resolves_once() {
        let approvals = Approvals::default();
        let (id, rx) = approvals.request();
        assert!(!approvals.resolve("nope", true));
        assert!(approvals.resolve(&id, true));
        assert!(rx.await.unwrap());
        assert!(!approvals.resolve(&id, false));
    }

    #[test]
    fn a_forgotten_id_is_unknown() {
        let approvals = Approvals::default();
        let (id, _rx) = approvals.request();
        approvals.forget(&id);
        assert!(!approvals.resolve(&id, true));
    }
}
