//! The daemon link as the App lives it: gone, reconnected with a fresh
//! session, or another session taking the view (resumed, forked).

use super::App;
use crate::tui::opening::short_id;
use crate::tui::state::LinkState;
use crate::tui::transcript::ItemKind;
use scv_client::session::SessionClient;

impl App {
    /// The connection dropped (the caller reconnects; a detached session
    /// goes on in the daemon and is attached again).
    pub fn disconnected(&mut self) {
        self.link = LinkState::Disconnected;
        self.turn = None;
        self.approval.clear();
        self.queue.reset();
        self.input.stop_editing();
        self.end_turn();
        // No terminal event of a running subagent will come now.
        for child in self
            .subagents
            .abandon("disconnected", "the connection dropped")
        {
            self.place_card(&child);
        }
        self.transcript.push(ItemKind::Error {
            code: "disconnected".into(),
            message: "the connection dropped; reconnecting (and starting the SCV daemon again if it stopped)…".into(),
        });
    }

    /// Whether this session ran a turn (or was resumed with some): only
    /// then is it stored, to be offered back.
    pub(super) fn worked(&self) -> bool {
        self.book.worked
    }

    /// Reconnecting failed with `why` (the daemon cannot start: a
    /// malformed config.toml); said once until it changes.
    pub fn reconnect_failed(&mut self, why: String) {
        if self.reconnect_error.as_ref() != Some(&why) {
            self.transcript.push(ItemKind::Error {
                code: "disconnected".into(),
                message: format!("cannot start the SCV daemon again: {why} (retrying)"),
            });
            self.reconnect_error = Some(why);
        }
    }

    /// Connected again with a fresh session (its events follow). The
    /// session it had is offered back: one key resumes it.
    pub fn reconnected(&mut self) {
        self.reconnect_error = None;
        let previous = self.session_id().filter(|_| self.book.worked);
        self.link = LinkState::Connected;
        self.new_client();
        self.resume_offer = previous.clone();
        let note = match previous {
            Some(id) => format!(
                "reconnected; a new session started. Press Ctrl+R to resume the conversation you had (session {}) — nothing of it ran again",
                short_id(&id)
            ),
            None => "reconnected; a new session started".into(),
        };
        self.transcript.push(ItemKind::Notice(note));
    }

    /// A new session client: nothing of the old session is in flight (its
    /// request ids stay unique on the new connection all the same).
    fn new_client(&mut self) {
        self.book.sessions += 1;
        self.book.client = SessionClient::new(format!("tui{}-", self.book.sessions));
        self.book.worked = false;
        self.undo.reset();
        self.plan.reset();
    }

    /// Another session takes this view (resumed, forked): what showed
    /// the old one goes; its events follow.
    pub fn switched(&mut self, which: &crate::session::Which) {
        self.new_client();
        self.resume_offer = None;
        self.link = LinkState::Connected;
        self.turn = None;
        self.approval.clear();
        self.queue.reset();
        self.queue.clear();
        self.transcript.clear();
        self.subagents.clear();
        self.processes = Default::default();
        self.meter = Default::default();
        self.rules = Default::default();
        self.overlay = None;
        self.session = None;
        if matches!(which, crate::session::Which::New) {
            self.notice("new session started; /resume brings the other one back".into());
        }
    }

    /// A session could not be opened; this one stays.
    pub fn failed_switch(&mut self, why: &str) {
        self.transcript.push(ItemKind::Error {
            code: "session".into(),
            message: scv_client::text::visible(why).into_owned(),
        });
    }
}
