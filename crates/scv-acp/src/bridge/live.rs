//! `session/load` of a live session attaches to it (capability `detach`):
//! the bridge asks `session.attach` first — a session a closed terminal
//! left running, or one `scv --bg` started, is followed here (its past
//! replayed, then its live events) — and falls back to `session.resume`
//! when the daemon holds no such live session.

use super::{Bridge, Session};
use crate::errors;
use crate::updates::ToolCalls;
use scv_client::session::SessionClient;
use scv_protocol::{ClientMessage, ErrorBody, ErrorCode, SessionAttached, SessionResume};
use std::collections::HashMap;
use std::path::PathBuf;

impl Bridge {
    /// `session.attached` answering a `session/load`: the live session's
    /// view; the load is answered once its transcript is replayed.
    pub(super) fn session_attached(
        &mut self,
        request_id: &str,
        session_id: String,
        attached: &SessionAttached,
    ) {
        if self.attaching.remove(request_id).is_none() {
            return;
        }
        let Some(responder) = self.loading.remove(request_id) else {
            return;
        };
        tracing::info!("session {session_id} attached (live, {:?})", attached.state);
        self.started += 1;
        let mut client = SessionClient::new(format!("acp{}-", self.started));
        client.set_session(session_id.clone());
        self.sessions.insert(
            session_id.clone(),
            Session {
                cwd: PathBuf::from(attached.cwd.clone().unwrap_or_default()),
                tools: ToolCalls::default(),
                approvals: HashMap::new(),
                rules: Default::default(),
                client,
                subagents: Default::default(),
                streamed: false,
                mode: scv_protocol::Mode::default(),
                meter: crate::meter::Meter::attached(attached),
                questions: HashMap::new(),
                provider: attached.provider.clone().unwrap_or_default(),
                model: attached.model.clone().unwrap_or_default(),
                effort: "default".to_string(),
            },
        );
        self.started_any = true;
        let modes = crate::modes::state(scv_protocol::Mode::default());
        self.replaying.insert(session_id, (responder, modes));
    }

    /// The attach of a `session/load` was refused: no live session of that
    /// id → the stored one is resumed; any other refusal fails the load.
    pub(super) async fn attach_refused(&mut self, request_id: &str, error: &ErrorBody) {
        let Some((session_id, additional_directories)) = self.attaching.remove(request_id) else {
            return;
        };
        let Some(responder) = self.loading.remove(request_id) else {
            return;
        };
        if error.code != ErrorCode::SessionNotFound && error.code != ErrorCode::InvalidRequest {
            let _ = responder.respond_with_error(errors::refused(error.code, &error.message));
            return;
        }
        let resume = ClientMessage::SessionResume(SessionResume {
            session_id,
            provider: self.options.provider.clone(),
            model: self.options.model.clone(),
            additional_directories,
        });
        match self.send(resume).await {
            Ok(request_id) => {
                self.loading.insert(request_id, responder);
            }
            Err(err) => {
                let _ = responder.respond_with_error(err);
            }
        }
    }
}
