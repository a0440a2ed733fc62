//! How things end: the daemon connection lost (every session on it
//! gone, everything waiting answered with why), stdin closed (running
//! turns cancelled, waiting prompts answered `cancelled`), and a prompt
//! the editor cancels with `$/cancel_request`.

use super::{Bridge, Command, SHUTDOWN_GRACE};
use crate::errors;
use agent_client_protocol::v1::schema::{PromptResponse, StopReason};
use agent_client_protocol::v1::Responder;
use scv_client::session::Request;

impl Bridge {
    /// The daemon connection is gone, and with it every session on it:
    /// everything waiting fails with a clear error. The next
    /// `session/new` connects again.
    pub(super) fn lost(&mut self, reason: &str) {
        if self.link.take().is_none() {
            return;
        }
        tracing::warn!("lost the SCV daemon: {reason}");
        for (_, responder) in self.starting.drain() {
            let _ = responder.respond_with_error(errors::daemon(format!("went away ({reason})")));
        }
        let gone = || errors::daemon(format!("went away ({reason})"));
        let replaying = self
            .replaying
            .drain()
            .map(|(id, (responder, _))| (id, responder));
        for (_, responder) in self.loading.drain().chain(replaying) {
            let _ = responder.respond_with_error(gone());
        }
        for (_, responder) in self.listing.drain() {
            let _ = responder.respond_with_error(gone());
        }
        for (_, responder) in self.moding.drain() {
            let _ = responder.respond_with_error(gone());
        }
        self.life.fail_all(gone);
        for (_, (responder, _)) in self.configuring.drain() {
            let _ = responder.respond_with_error(gone());
        }
        for (_, prompt) in self.prompts.drain() {
            let err = errors::daemon(format!(
                "went away during the prompt ({reason}); its session is gone, start a new one"
            ));
            let _ = prompt.responder.respond_with_error(err);
        }
        for (_, mut session) in self.sessions.drain() {
            session.ended();
        }
    }

    /// stdin ended: running turns are cancelled (closing the connection
    /// would cancel them too; saying so is quicker), waiting prompts
    /// answer `cancelled`.
    pub(super) async fn shutdown(&mut self) {
        tracing::info!("stdin closed; cancelling running turns");
        let cancels: Vec<Request> = self
            .sessions
            .values_mut()
            .filter(|s| s.client.running_turn().is_some())
            .flat_map(|s| s.client.cancel_current())
            .collect();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.send_all(&cancels)).await;
        let waiting: Vec<String> = self.prompts.keys().cloned().collect();
        for request_id in waiting {
            self.finish(&request_id, Ok(StopReason::Cancelled));
        }
        for session in self.sessions.values_mut() {
            session.ended();
        }
        for (_, responder) in self.starting.drain() {
            let _ = responder.respond_with_error(errors::daemon("the client closed stdin"));
        }
        let replaying = self
            .replaying
            .drain()
            .map(|(id, (responder, _))| (id, responder));
        for (_, responder) in self.loading.drain().chain(replaying) {
            let _ = responder.respond_with_error(errors::daemon("the client closed stdin"));
        }
        for (_, responder) in self.listing.drain() {
            let _ = responder.respond_with_error(errors::daemon("the client closed stdin"));
        }
        for (_, responder) in self.moding.drain() {
            let _ = responder.respond_with_error(errors::daemon("the client closed stdin"));
        }
        self.life
            .fail_all(|| errors::daemon("the client closed stdin"));
        for (_, (responder, _)) in self.configuring.drain() {
            let _ = responder.respond_with_error(errors::daemon("the client closed stdin"));
        }
        self.link = None;
    }

    /// A task of the connection waiting for the editor's
    /// `$/cancel_request` of this prompt, until the returned sender is
    /// dropped (the prompt answered).
    pub(super) fn watch_cancel_request(
        &self,
        responder: &Responder<PromptResponse>,
        request_id: &str,
    ) -> tokio::sync::oneshot::Sender<()> {
        let (done, answered) = tokio::sync::oneshot::channel::<()>();
        let cancellation = responder.cancellation();
        let commands = self.commands.clone();
        let request_id = request_id.to_string();
        let task = async move {
            tokio::select! {
                () = cancellation.cancelled() => {
                    let _ = commands.send(Command::CancelPrompt { request_id }).await;
                }
                _ = answered => {}
            }
            Ok(())
        };
        if let Err(err) = self.cx.spawn(task) {
            tracing::debug!("cannot watch for $/cancel_request: {err}");
        }
        done
    }

    /// `$/cancel_request` for a prompt: its turn is cancelled (or it is
    /// taken off the queue) and it answers `cancelled`, as
    /// `session/cancel` would for it.
    pub(super) async fn cancel_prompt(&mut self, request_id: &str) {
        let Some(session) = self
            .sessions
            .values_mut()
            .find(|s| s.client.prompt(request_id).is_some())
        else {
            return;
        };
        let requests = session.client.cancel(request_id);
        self.send_all(&requests).await;
    }
}
