//! Session config options (crate::config): `session/set_config_option`
//! as the daemon's `session.configure`, answered at `session.configured`
//! with every option's value then; the provider's model list asked once
//! per provider (`models.list`) and told as a `config_option_update`; a
//! change made otherwise (`session/set_mode`) told the same way.

use super::Bridge;
use crate::config::{self, Change};
use crate::errors;
use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, SessionConfigOption, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
};
use agent_client_protocol::v1::Responder;
use scv_client::session::Configured;
use scv_protocol::{ClientMessage, ErrorBody, ModelsList, SessionConfigure};

impl Bridge {
    /// A session's options now; empty for a session not held here.
    pub(super) fn config_options(&self, session_id: &str) -> Vec<SessionConfigOption> {
        let Some(session) = self.sessions.get(session_id) else {
            return Vec::new();
        };
        let models = self
            .models
            .get(&session.provider)
            .map_or(&[][..], Vec::as_slice);
        config::options(&session.model, models, session.mode, &session.effort)
    }

    /// `session/set_config_option` → `session.configure`.
    pub(super) async fn set_config_option(
        &mut self,
        request: SetSessionConfigOptionRequest,
        responder: Responder<SetSessionConfigOptionResponse>,
    ) {
        let session_id = request.session_id.0.to_string();
        let Some(session) = self.sessions.get(&session_id) else {
            let _ = responder.respond_with_error(errors::unknown_session(&session_id));
            return;
        };
        let models = self
            .models
            .get(&session.provider)
            .map_or(&[][..], Vec::as_slice);
        let change =
            match config::parse(&request.config_id.0, &request.value, &session.model, models) {
                Ok(change) => change,
                Err(why) => {
                    let _ = responder.respond_with_error(errors::invalid_params(why));
                    return;
                }
            };
        let mut configure = SessionConfigure {
            session_id: session_id.clone(),
            ..Default::default()
        };
        let mut effort = None;
        match change {
            Change::Model(model) => configure.model = Some(model),
            Change::Mode(mode) => configure.mode = Some(mode),
            Change::Effort(value) => {
                configure.reasoning_effort = Some(value.clone());
                effort = Some(value);
            }
        }
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        let configure = session
            .client
            .request(ClientMessage::SessionConfigure(configure));
        match self.send_request(&configure).await {
            Ok(()) => {
                self.configuring
                    .insert(configure.request_id, (responder, effort));
            }
            Err(err) => {
                let _ = responder.respond_with_error(err);
            }
        }
    }

    /// `session.configured`: the session's model and mode now; a
    /// `session/set_config_option` waiting for it is answered, anyone
    /// else's change is told.
    pub(super) fn configured(
        &mut self,
        session_id: &str,
        request_id: Option<&str>,
        configured: &Configured,
    ) {
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        session.model = configured.model.clone();
        session.provider = configured.provider.clone();
        if let Some(mode) = configured.mode {
            session.mode = mode;
        }
        let waiting = request_id.and_then(|r| self.configuring.remove(r));
        if let Some((_, Some(effort))) = &waiting {
            session.effort = effort.clone();
        }
        let options = self.config_options(session_id);
        match waiting {
            Some((responder, _)) => {
                let _ = responder.respond(SetSessionConfigOptionResponse::new(options));
            }
            None => {
                let update = ConfigOptionUpdate::new(options);
                self.notify(session_id, SessionUpdate::ConfigOptionUpdate(update));
            }
        }
    }

    /// An `error` answering a `session.configure` of a
    /// `session/set_config_option`: it fails. False when not one.
    pub(super) fn configure_failed(&mut self, request_id: &str, error: &ErrorBody) -> bool {
        let Some((responder, _)) = self.configuring.remove(request_id) else {
            return false;
        };
        let _ = responder.respond_with_error(errors::refused(error.code, &error.message));
        true
    }

    /// Asks the session's provider for its models, once per provider.
    pub(super) async fn list_models(&mut self, session_id: &str) {
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        if self.models.contains_key(&session.provider) {
            return;
        }
        // Asked once: a provider that cannot list keeps an empty list.
        self.models.insert(session.provider.clone(), Vec::new());
        let list = session
            .client
            .request(ClientMessage::ModelsList(ModelsList {
                session_id: session_id.to_string(),
            }));
        let _ = self.send_request(&list).await;
    }

    /// `models.listed`: the provider's models, told to each of its
    /// sessions (an empty list changes nothing they were told).
    pub(super) fn models_listed(&mut self, provider: String, models: Vec<String>) {
        if models.is_empty() {
            return;
        }
        self.models.insert(provider.clone(), models);
        let ids: Vec<String> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.provider == provider)
            .map(|(id, _)| id.clone())
            .collect();
        for session_id in ids {
            let update = ConfigOptionUpdate::new(self.config_options(&session_id));
            self.notify(&session_id, SessionUpdate::ConfigOptionUpdate(update));
        }
    }
}
