//! Plan mode: Shift+Tab and `/plan` ask the server for the other mode;
//! what the screen shows is the server's answer (`session.started.mode`,
//! `session.configured.mode`), never the key. Leaving plan mode after a
//! plan was made offers to carry it out.

use super::{App, Outgoing};
use scv_protocol::{ClientMessage, Mode, SessionConfigure};

/// What the input box holds when plan mode ends after a plan.
pub(crate) const CARRY_OUT: &str = "Carry out the plan.";

use crate::tui::opening::PLAN_ON;

/// The mode requests in flight and whether a plan was made.
#[derive(Debug, Default)]
pub(super) struct PlanBook {
    /// `session.configure` requests for a mode, oldest first, with the
    /// mode each asked for.
    asked: Vec<(String, Mode)>,
    /// A turn completed in plan mode since plan mode began.
    planned: bool,
}

impl PlanBook {
    /// The session client starts over: nothing is in flight.
    pub(super) fn reset(&mut self) {
        *self = PlanBook::default();
    }

    /// Whether `request_id` is a mode request of ours; it is answered now.
    pub(super) fn answered(&mut self, request_id: Option<&str>) -> bool {
        let Some(request_id) = request_id else {
            return false;
        };
        let before = self.asked.len();
        self.asked.retain(|(id, _)| id != request_id);
        self.asked.len() != before
    }
}

impl PlanBook {
    /// The mode other than the one last asked for (or, with nothing in
    /// flight, than `now`, the one the server said).
    fn other(&self, now: Mode) -> Mode {
        match self.asked.last().map_or(now, |(_, m)| *m) {
            Mode::Plan => Mode::Default,
            Mode::Default => Mode::Plan,
        }
    }

    /// The session changed to `mode`: the note, and whether to offer the
    /// plan to carry out (`box_free`: the input box can take it).
    fn changed(&mut self, mode: Mode, box_free: bool) -> (&'static str, bool) {
        let planned = std::mem::take(&mut self.planned);
        match mode {
            Mode::Plan => (PLAN_ON, false),
            // Offered, never sent by itself: the user may edit or clear it.
            Mode::Default if planned && box_free => {
                ("plan mode off — press Enter to carry out the plan", true)
            }
            Mode::Default if planned => (
                "plan mode off — ask for the plan to be carried out when ready",
                false,
            ),
            Mode::Default => ("plan mode off", false),
        }
    }
}

impl App {
    /// Shift+Tab and `/plan`: asks for the mode other than the one last
    /// asked for (or, with nothing in flight, the one the server said).
    /// Allowed while a turn runs: the server applies it from the turn's
    /// next step.
    pub(super) fn toggle_mode(&mut self) -> Vec<Outgoing> {
        let Some(session) = &self.session else {
            self.hint = Some("not connected".into());
            return Vec::new();
        };
        let session_id = session.session_id.clone();
        let mode = self.plan.other(session.mode);
        let out = self.send(ClientMessage::SessionConfigure(SessionConfigure {
            session_id,
            mode: Some(mode),
            ..SessionConfigure::default()
        }));
        if let Outgoing::Send { request_id, .. } = &out {
            self.plan.asked.push((request_id.clone(), mode));
        }
        vec![out]
    }

    /// A mode request of ours was answered (`session.configured` or an
    /// error): whether it was one.
    pub(super) fn mode_answered(&mut self, request_id: Option<&str>) -> bool {
        // A `/budget` answer too: it names the model as well, and is no
        // news about it.
        self.budget_answered(request_id) | self.plan.answered(request_id)
    }

    /// The server says the session is in `mode` now.
    pub(super) fn mode_now(&mut self, mode: Mode) {
        // Only `session.configured` says the mode after an answer.
        self.budget_confirmed();
        let Some(session) = self.session.as_mut() else {
            return;
        };
        let before = std::mem::replace(&mut session.mode, mode);
        if before == mode {
            return;
        }
        let box_free = self.input.is_empty() && self.input.editing().is_none();
        let (note, carry_out) = self.plan.changed(mode, box_free);
        if carry_out {
            self.input.set(CARRY_OUT);
        }
        self.notice(note.into());
    }

    /// A turn completed: in plan mode, that is a plan to carry out.
    pub(super) fn plan_turn_completed(&mut self) {
        if self.session.as_ref().is_some_and(|s| s.mode == Mode::Plan) {
            self.plan.planned = true;
        }
    }

    /// The session is in plan mode, as the server last said.
    pub fn plan_mode(&self) -> bool {
        self.session.as_ref().is_some_and(|s| s.mode == Mode::Plan)
    }
}
