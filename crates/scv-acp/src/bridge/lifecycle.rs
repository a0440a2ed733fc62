//! A session's life past `session/new` and `session/load`:
//! `session/resume` (the stored session live again, nothing replayed),
//! `session/close` (the daemon's `session.close`: the session's turn
//! cancelled, its queue dropped, its MCP servers stopped, its journal
//! closed; its prompts here answer `cancelled`) and `session/delete` (the
//! daemon's `session.delete`, after closing it when it lives here).

use super::{refuse, Bridge};
use crate::errors;
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse,
    ResumeSessionRequest, ResumeSessionResponse, StopReason,
};
use agent_client_protocol::v1::Responder;
use agent_client_protocol::Error;
use scv_protocol::{
    ClientMessage, ErrorBody, ErrorCode, SessionClose, SessionDelete, SessionResume,
};
use std::collections::HashMap;

/// What waits for the daemon, by the request id sent for it.
#[derive(Default)]
pub(super) struct Pending {
    /// `session/resume` until `session.started`.
    pub(super) resuming: HashMap<String, Responder<ResumeSessionResponse>>,
    /// `session/close` (or a `session/delete` of a session live here)
    /// until `session.closed`.
    closing: HashMap<String, Closing>,
    /// `session/delete` until `session.deleted`.
    deleting: HashMap<String, Responder<DeleteSessionResponse>>,
}

/// What a `session.close` was sent for.
enum Closing {
    Close(Responder<CloseSessionResponse>),
    /// A `session/delete`: the stored session goes once it is closed.
    Delete(String, Responder<DeleteSessionResponse>),
}

impl Pending {
    /// Everything waiting fails with `err` (the daemon went away, stdin
    /// closed).
    pub(super) fn fail_all(&mut self, err: impl Fn() -> Error) {
        for (_, responder) in self.resuming.drain() {
            let _ = responder.respond_with_error(err());
        }
        for (_, closing) in self.closing.drain() {
            let _ = match closing {
                Closing::Close(responder) => responder.respond_with_error(err()),
                Closing::Delete(_, responder) => responder.respond_with_error(err()),
            };
        }
        for (_, responder) in self.deleting.drain() {
            let _ = responder.respond_with_error(err());
        }
    }

    /// `session.deleted` answering `request_id`: its `session/delete`
    /// succeeds. False when it is not one of ours.
    pub(super) fn deleted(&mut self, request_id: &str) -> bool {
        match self.deleting.remove(request_id) {
            Some(responder) => {
                let _ = responder.respond(DeleteSessionResponse::new());
                true
            }
            None => false,
        }
    }

    /// An `error` answering a `session.resume` or `session.delete` of
    /// ours. Deleting a session that does not exist succeeds (the
    /// specification's "SHOULD succeed silently"). False when it is not
    /// one of ours.
    pub(super) fn refused(&mut self, request_id: &str, error: &ErrorBody) -> bool {
        if let Some(responder) = self.resuming.remove(request_id) {
            let _ = responder.respond_with_error(errors::refused(error.code, &error.message));
            return true;
        }
        if let Some(responder) = self.deleting.remove(request_id) {
            let _ = if error.code == ErrorCode::SessionNotFound {
                responder.respond(DeleteSessionResponse::new())
            } else {
                responder.respond_with_error(errors::refused(error.code, &error.message))
            };
            return true;
        }
        false
    }
}

impl Bridge {
    /// `session/resume` → `session.resume`, answered at `session.started`
    /// with nothing replayed. A session live here already is answered at
    /// once (the editor reconnects to it).
    pub(super) async fn resume_session(
        &mut self,
        request: ResumeSessionRequest,
        responder: Responder<ResumeSessionResponse>,
    ) -> Result<(), Error> {
        if !request.cwd.is_absolute() {
            let err = errors::invalid_params("cwd must be an absolute path");
            return refuse(responder, err);
        }
        let session_id = request.session_id.0.to_string();
        let additional_directories = match super::dirs::strings(&request.additional_directories) {
            Ok(dirs) => dirs,
            Err(err) => return refuse(responder, err),
        };
        if let Some(session) = self.sessions.get(&session_id) {
            let modes = crate::modes::state(session.mode);
            let options = self.config_options(&session_id);
            let answer = ResumeSessionResponse::new()
                .modes(modes)
                .config_options(options);
            let _ = responder.respond(answer);
            return Ok(());
        }
        if self.replaying.contains_key(&session_id) {
            let err = errors::invalid_params(format!("session {session_id} is loading"));
            return refuse(responder, err);
        }
        if let Err(err) = self.check_room() {
            return refuse(responder, err);
        }
        if !request.mcp_servers.is_empty() {
            tracing::info!(
                "session/resume: the editor's MCP servers are not attached to a resumed session"
            );
        }
        if let Err(err) = self.connect().await {
            return refuse(responder, err);
        }
        let resume = ClientMessage::SessionResume(SessionResume {
            session_id,
            provider: self.options.provider.clone(),
            model: self.options.model.clone(),
            additional_directories,
        });
        match self.send(resume).await {
            Ok(request_id) => {
                self.life.resuming.insert(request_id, responder);
                Ok(())
            }
            Err(err) => refuse(responder, err),
        }
    }

    /// `session/close` → `session.close`; answered at `session.closed`.
    pub(super) async fn close_session(
        &mut self,
        request: CloseSessionRequest,
        responder: Responder<CloseSessionResponse>,
    ) {
        let session_id = request.session_id.0.to_string();
        self.send_close(&session_id, Closing::Close(responder))
            .await;
    }

    /// `session/delete`: a session live here is closed first; then
    /// `session.delete`, answered at `session.deleted`. An unknown one
    /// succeeds; one open on another connection (another editor) is
    /// refused in words.
    pub(super) async fn delete_session(
        &mut self,
        request: DeleteSessionRequest,
        responder: Responder<DeleteSessionResponse>,
    ) {
        let session_id = request.session_id.0.to_string();
        if self.sessions.contains_key(&session_id) {
            let closing = Closing::Delete(session_id.clone(), responder);
            self.send_close(&session_id, closing).await;
            return;
        }
        if let Err(err) = self.connect().await {
            let _ = responder.respond_with_error(err);
            return;
        }
        self.send_delete(session_id, responder).await;
    }

    async fn send_delete(
        &mut self,
        session_id: String,
        responder: Responder<DeleteSessionResponse>,
    ) {
        let delete = ClientMessage::SessionDelete(SessionDelete { session_id });
        match self.send(delete).await {
            Ok(request_id) => {
                self.life.deleting.insert(request_id, responder);
            }
            Err(err) => {
                let _ = responder.respond_with_error(err);
            }
        }
    }

    async fn send_close(&mut self, session_id: &str, closing: Closing) {
        let Some(session) = self.sessions.get_mut(session_id) else {
            let err = errors::unknown_session(session_id);
            let _ = match closing {
                Closing::Close(responder) => responder.respond_with_error(err),
                Closing::Delete(_, responder) => responder.respond_with_error(err),
            };
            return;
        };
        let close = session
            .client
            .request(ClientMessage::SessionClose(SessionClose {
                session_id: session_id.to_string(),
            }));
        match self.send_request(&close).await {
            Ok(()) => {
                self.life.closing.insert(close.request_id, closing);
            }
            Err(err) => {
                let _ = match closing {
                    Closing::Close(responder) => responder.respond_with_error(err),
                    Closing::Delete(_, responder) => responder.respond_with_error(err),
                };
            }
        }
    }

    /// `session.closed`: the session is gone here — its prompts still
    /// waiting answer `cancelled`, its permission requests are withdrawn —
    /// and the `session/close` (or `session/delete`) goes on.
    pub(super) async fn closed(&mut self, session_id: &str, request_id: Option<String>) {
        if let Some(mut session) = self.sessions.remove(session_id) {
            session.ended();
            let waiting: Vec<String> = session
                .client
                .prompts()
                .iter()
                .map(|p| p.request_id.clone())
                .collect();
            for request_id in waiting {
                self.finish(&request_id, Ok(StopReason::Cancelled));
            }
        }
        if let Some((responder, _)) = self.replaying.remove(session_id) {
            let _ = responder.respond_with_error(errors::unknown_session(session_id));
        }
        match request_id.and_then(|r| self.life.closing.remove(&r)) {
            Some(Closing::Close(responder)) => {
                let _ = responder.respond(CloseSessionResponse::new());
            }
            Some(Closing::Delete(session_id, responder)) => {
                self.send_delete(session_id, responder).await;
            }
            None => {}
        }
    }

    /// An `error` answering a `session.close` of ours: its request fails.
    pub(super) fn close_failed(&mut self, request_id: &str, error: &ErrorBody) -> bool {
        let Some(closing) = self.life.closing.remove(request_id) else {
            return false;
        };
        let err = errors::refused(error.code, &error.message);
        let _ = match closing {
            Closing::Close(responder) => responder.respond_with_error(err),
            Closing::Delete(_, responder) => responder.respond_with_error(err),
        };
        true
    }
}
