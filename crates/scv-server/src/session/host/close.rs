//! `session.close` (extension, capability `sessions`): one live session
//! of the connection ends as the connection's end ends them all — its
//! running turn cancelled (its terminal event sent), its queue dropped
//! (never replayed), its MCP servers stopped, its `SessionEnd` hooks run,
//! its journal closed (or removed when nothing was said in it) — and the
//! connection's other sessions go on. `session.closed` answers once it is
//! gone; its id may then be resumed, here or on another connection.

use super::{SessionHost, CLEANUP_GRACE};
use crate::session::reject::{invalid, Handled, Reject};
use scv_protocol::{ErrorCode, EventBody};
use std::sync::Arc;

impl SessionHost {
    /// `session.close`.
    pub(super) async fn close_one(&mut self, rid: &str, session_id: &str) -> Handled {
        let Some(id) = self
            .sessions
            .get_key_value(session_id)
            .map(|(id, _)| id.clone())
        else {
            let message = if self.children.get(session_id).is_some() {
                format!("session {session_id} is a subagent's; close the session it runs in")
            } else {
                format!("session {session_id} is not open on this connection")
            };
            let code = if self.children.get(session_id).is_some() {
                ErrorCode::InvalidRequest
            } else {
                ErrorCode::SessionNotFound
            };
            return Err(Reject::new(code, message));
        };
        if let Some(session) = self.sessions.get_mut(&id) {
            // Nothing queued starts while its turn stops.
            session.paused = true;
            if let Some(active) = &session.active {
                active.token.cancel();
            }
        }
        self.wait_turn_of(&id).await;
        let Some(mut session) = self.sessions.remove(&id) else {
            return Err(invalid(format!("session {session_id} ended meanwhile")));
        };
        if let Some(hub) = &session.mcp {
            hub.shutdown().await;
        }
        session_end_hook(&session).await;
        if let Some(mut journal) = session.journal.take() {
            journal.last_try().await;
            if journal.untouched() {
                // A session nobody used leaves nothing behind.
                let store = journal.store().clone();
                let sid = journal.session_id().to_string();
                drop(journal);
                let _ = crate::blocking::run(move || store.sessions.delete(&sid)).await;
            } else {
                journal.close();
            }
        }
        drop(session);
        if self.sessions.is_empty() {
            // An idle connection holds no table for sessions.
            self.sessions = Default::default();
        }
        self.reply(rid, Some(id.to_string()), EventBody::SessionClosed {})
            .await;
        Ok(())
    }

    /// Settles turn tasks (any session's, as the connection would) until
    /// `session_id` has none running, within the cleanup grace. A turn
    /// that does not stop by then is left to end by itself (its token is
    /// cancelled; its session will be gone when it does).
    async fn wait_turn_of(&mut self, session_id: &Arc<str>) {
        let drained = tokio::time::timeout(CLEANUP_GRACE, async {
            while self.turn_sessions.values().any(|s| s == session_id) {
                let Some(joined) = self.turns.join_next_with_id().await else {
                    break;
                };
                self.finish(joined).await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!("the turn of session {session_id} did not stop within {CLEANUP_GRACE:?}; closing it all the same");
        }
    }
}

/// The session's `SessionEnd` hooks, within the cleanup grace.
async fn session_end_hook(session: &super::Session) {
    let settings = &session.settings;
    if settings.custom.hooks.is_empty() {
        return;
    }
    let cx = settings.hook_context(session.sink.session_id());
    let input = scv_hooks::Input::SessionEnd { reason: "other" };
    let run = crate::hooks::run(
        &settings.custom.hooks,
        &cx,
        scv_hooks::Event::SessionEnd,
        None,
        &input,
    );
    match tokio::time::timeout(CLEANUP_GRACE, run).await {
        Ok(ended) => {
            for note in ended.iter().flat_map(|h| &h.notes) {
                tracing::info!("SessionEnd {}: {}", note.hook, note.message);
            }
        }
        Err(_) => {
            tracing::warn!("SessionEnd hooks did not end within {CLEANUP_GRACE:?}; stopped them")
        }
    }
}
