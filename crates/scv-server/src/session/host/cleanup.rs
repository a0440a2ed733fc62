//! The connection's end: every active turn cancelled and given the
//! cleanup grace to send its terminal event, then MCP servers stopped,
//! `SessionEnd` hooks run, journals closed (or removed when nothing was
//! said in them).

use super::{SessionHost, CLEANUP_GRACE};
use std::sync::Arc;

impl SessionHost {
    /// Cancels every active turn and lets each emit its terminal event
    /// within the grace period; then aborts and joins what is left. Queued
    /// prompts are dropped, never replayed.
    pub(crate) async fn close(&mut self) {
        for session in self.sessions.values() {
            if let Some(active) = &session.active {
                active.token.cancel();
            }
        }
        let drained = tokio::time::timeout(CLEANUP_GRACE, async {
            while let Some(joined) = self.next_finished().await {
                self.settle(joined).await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!("turns did not stop within {CLEANUP_GRACE:?}; aborting them");
            for session in self.sessions.values_mut() {
                if let Some(handle) = session.active.as_mut().and_then(|a| a.handle.take()) {
                    handle.abort();
                    let _ = handle.await;
                }
            }
        }
        self.leave_attached();
        for session in self.sessions.values() {
            if let Some(hub) = &session.mcp {
                hub.shutdown().await;
            }
        }
        self.session_end_hooks().await;
        for session in self.sessions.values_mut() {
            if let Some(journal) = &mut session.journal {
                // What waited for room: one more try now.
                journal.last_try().await;
            }
        }
        // Sessions nobody used leave nothing behind (their lock goes with
        // the journal, then the file).
        let unused: Vec<(Arc<crate::journal::Store>, String)> = self
            .sessions
            .values()
            .filter_map(|s| s.journal.as_ref())
            .filter(|j| j.untouched())
            .map(|j| (j.store().clone(), j.session_id().to_string()))
            .collect();
        for session in self.sessions.values_mut() {
            match session.journal.take() {
                Some(journal) if !journal.untouched() => {
                    // Records still waiting for room stay with the store.
                    journal.close();
                }
                _ => {}
            }
        }
        for id in self.sessions.keys() {
            self.shared.detached.ended(id);
        }
        self.sessions.clear();
        if !unused.is_empty() {
            let _ = crate::blocking::run(move || {
                for (store, id) in unused {
                    let _ = store.sessions.delete(&id);
                }
            })
            .await;
        }
    }

    /// `SessionEnd` hooks of the sessions closing, at once, within the
    /// cleanup grace (a hook cannot hold the connection's end).
    pub(super) async fn session_end_hooks(&self) {
        let ends = self
            .sessions
            .values()
            .filter(|s| !s.settings.custom.hooks.is_empty())
            .map(|session| async move {
                let settings = &session.settings;
                let cx = settings.hook_context(session.sink.session_id());
                let input = scv_hooks::Input::SessionEnd { reason: "other" };
                let ended = crate::hooks::run(
                    &settings.custom.hooks,
                    &cx,
                    scv_hooks::Event::SessionEnd,
                    None,
                    &input,
                )
                .await;
                for note in ended.iter().flat_map(|h| &h.notes) {
                    tracing::info!("SessionEnd {}: {}", note.hook, note.message);
                }
            });
        let all = futures_util::future::join_all(ends);
        if tokio::time::timeout(CLEANUP_GRACE, all).await.is_err() {
            tracing::warn!("SessionEnd hooks did not end within {CLEANUP_GRACE:?}; stopped them");
        }
    }
}
