//! The session's subagents on screen: a child's record and card follow
//! the session client's updates of it, and the card sits under the `task`
//! call that started it (a child of a child is a line on its parent's
//! card too).

use super::{App, Outgoing};
use crate::tui::subagents::Change;
use scv_client::session::Update;
use scv_protocol::ClientMessage;

impl App {
    /// A child began: its record (from the session client's view of it)
    /// and its card.
    pub(super) fn subagent_started(&mut self, session_id: &str) {
        let Some(view) = self.book.client.subagent(session_id) else {
            return;
        };
        if self.subagents.started(view) == Change::Card {
            self.place_card(session_id);
        }
    }

    /// An update of child `session_id`: its transcript, and its card when
    /// that changed.
    pub(super) fn subagent_update(&mut self, session_id: &str, update: &Update) {
        if self.subagents.apply(session_id, update, self.now) == Change::Card {
            self.place_card(session_id);
        }
    }

    /// Puts `session_id`'s card under the call that started it.
    pub(super) fn place_card(&mut self, session_id: &str) {
        let ours = self.session_id();
        let subagents = &mut self.subagents;
        subagents.place_card(session_id, ours.as_deref(), &mut self.transcript);
    }

    /// `turn.cancel` of subagent `session_id` alone (its `task` call
    /// fails; the session's turn goes on).
    pub(super) fn cancel_subagent(&mut self, session_id: &str) -> Vec<Outgoing> {
        let Some(child) = self.subagents.get(session_id).filter(|c| c.running()) else {
            self.hint = Some("that subagent is not running".into());
            return Vec::new();
        };
        let turn_id = self
            .book
            .client
            .subagent(session_id)
            .and_then(|c| c.turn_id.clone());
        let Some(turn_id) = turn_id else {
            self.hint = Some("that subagent has not started its turn yet".into());
            return Vec::new();
        };
        self.hint = Some(format!(
            "cancelling subagent «{}»",
            child.card().description
        ));
        vec![
            self.send(ClientMessage::TurnCancel(scv_protocol::TurnCancel {
                session_id: session_id.to_string(),
                turn_id,
            })),
        ]
    }
}
