//! MCP servers' questions in the App (capability `elicitation`): one
//! comes as [`scv_client::session::Update::Elicitation`] and opens the
//! form of [`crate::tui::elicit`] over the transcript (behind the one up,
//! if one is); its answer goes out as `elicitation.resolve` with the
//! session's id (a subagent's question too). The transcript says that a
//! question was answered and how, never what was typed. When the turn
//! ends its questions are gone (the daemon cancelled them), so is the
//! form.

use super::{App, Outgoing};
use crate::tui::elicit::{Answer, ElicitForm};
use crate::tui::overlays::{OpenOverlay, OverlayKind};
use scv_protocol::{ClientMessage, ElicitationAction, ElicitationRequested, ElicitationResolve};

impl App {
    /// A server asks: the form opens, or the question waits behind the
    /// one up (declined when too many wait).
    pub(super) fn elicitation_requested(&mut self, asked: ElicitationRequested) {
        if let Some(OpenOverlay {
            kind: OverlayKind::Elicit(form),
            ..
        }) = self.overlay.as_mut()
        {
            if let Err(refused) = form.push(asked) {
                let decline = self.resolve_question(&refused, ElicitationAction::Decline, None);
                self.book_outbox(decline);
            }
            return;
        }
        self.overlay = Some(OpenOverlay::new(OverlayKind::Elicit(Box::new(
            ElicitForm::new(asked),
        ))));
    }

    /// The form's answer: sent, and the next question (if any) shown.
    pub(super) fn elicited(&mut self, answer: Answer) -> Vec<Outgoing> {
        let mut server = String::new();
        if let Some(OpenOverlay {
            kind: OverlayKind::Elicit(form),
            ..
        }) = self.overlay.take()
        {
            server = form.asked.server.clone();
            self.overlay = form
                .next()
                .map(|next| OpenOverlay::new(OverlayKind::Elicit(Box::new(next))));
        }
        let how = match answer.action {
            ElicitationAction::Accept => "answered",
            ElicitationAction::Decline => "declined",
            ElicitationAction::Cancel => "cancelled",
        };
        self.notice(format!("MCP server `{server}`'s question {how}"));
        vec![self.resolve_question(&answer.elicitation_id, answer.action, answer.content)]
    }

    /// The turn ended: its questions were cancelled by the daemon.
    pub(super) fn elicitations_gone(&mut self) {
        if matches!(
            self.overlay.as_ref().map(|o| &o.kind),
            Some(OverlayKind::Elicit(_))
        ) {
            self.overlay = None;
        }
    }

    fn resolve_question(
        &mut self,
        elicitation_id: &str,
        action: ElicitationAction,
        content: Option<serde_json::Value>,
    ) -> Outgoing {
        let session_id = self.session_id().unwrap_or_default();
        self.send(ClientMessage::ElicitationResolve(ElicitationResolve {
            session_id,
            elicitation_id: elicitation_id.to_string(),
            action,
            content,
        }))
    }
}
