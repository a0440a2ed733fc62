//! `session.close` (extension, capability `sessions`): one live session
//! of the connection ends as the connection's end ends them all — its
//! running turn cancelled (its terminal event sent), its queue dropped
//! (never replayed), its MCP servers stopped, its `SessionEnd` hooks run,
//! its journal closed (or removed when nothing was said in it) — and the
//! connection's other sessions go on. `session.closed` answers once it is
//! gone; its id may then be resumed, here or on another connection.

use super::SessionHost;
use crate::session::reject::{invalid, Handled, Reject};
use scv_protocol::{ErrorCode, EventBody};

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
        let Some(session) = self.sessions.remove(&id) else {
            return Err(invalid(format!("session {session_id} ended meanwhile")));
        };
        // Closed as the connection's end closes its sessions, on a host of
        // its own: the others here go on.
        let mut host = self.split_off(id.clone(), session);
        host.close().await;
        if self.sessions.is_empty() {
            // An idle connection holds no table for sessions.
            self.sessions = Default::default();
        }
        self.reply(rid, Some(id.to_string()), EventBody::SessionClosed {})
            .await;
        Ok(())
    }
}
