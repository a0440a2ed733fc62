//! Which turns run: each session holds its running turn's task (so a
//! detached session takes it along), and the host polls them all.

use super::{Joined, SessionHost};

impl SessionHost {
    /// Whether any turn is running.
    pub(crate) fn has_turns(&self) -> bool {
        self.sessions
            .values()
            .any(|s| s.active.as_ref().is_some_and(|a| a.handle.is_some()))
    }

    /// The next turn task to end.
    pub(crate) async fn next_finished(&mut self) -> Option<Joined> {
        std::future::poll_fn(|cx| {
            let mut any = false;
            for (session_id, session) in &mut self.sessions {
                let Some(handle) = session.active.as_mut().and_then(|a| a.handle.as_mut()) else {
                    continue;
                };
                any = true;
                if let std::task::Poll::Ready(result) =
                    std::future::Future::poll(std::pin::Pin::new(handle), cx)
                {
                    if let Some(active) = &mut session.active {
                        active.handle = None;
                    }
                    return std::task::Poll::Ready(Some((session_id.clone(), result)));
                }
            }
            if any {
                std::task::Poll::Pending
            } else {
                std::task::Poll::Ready(None)
            }
        })
        .await
    }
}
