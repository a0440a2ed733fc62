//! Capability `detach` as the App lives it: the TUI detaches the sessions
//! it opens, so a dropped terminal or link never cancels a turn; when the
//! link comes back it attaches again; `scv attach ID` follows a live
//! session; a quit while a turn runs asks whether to leave it running
//! (leave: the session goes on in the daemon; stop: `session.close`), and
//! a quit with nothing running closes a session the TUI opened.

use super::{App, Outgoing};
use crate::tui::opening::short_id;
use crate::tui::state::{LinkState, SessionView};
use crossterm::event::{KeyCode, KeyEvent};
use scv_protocol::{ClientMessage, LiveState, SessionAttached, SessionClose};

/// The live session this view follows.
#[derive(Debug, Default)]
pub struct Live {
    /// Detached by this TUI or attached to: it lives in the daemon beyond
    /// this connection, so the link's return attaches to it again.
    pub detached: bool,
    /// Opened by this TUI (not attached to another's): a quit with
    /// nothing running closes it.
    pub own: bool,
    /// A quit was asked while a turn runs: L leaves it running, S stops
    /// it, Esc stays.
    pub quit_asked: bool,
    /// It was closed (`session.close` here or elsewhere): nothing to
    /// attach to again.
    pub closed: bool,
    /// The session a switch left with its turn running.
    pub left_running: Option<String>,
}

/// What a quit becomes ([`Live::on_quit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnQuit {
    /// It goes as it is.
    Go,
    /// A turn runs: ask whether to leave it running.
    Ask,
    /// The TUI's own session, with nothing running, is closed first.
    CloseFirst,
}

impl Live {
    /// The session this TUI opened is detached.
    fn detached_own(&mut self) {
        self.detached = true;
        self.own = true;
        self.closed = false;
    }

    /// What a quit becomes, `busy` if a turn runs or prompts wait.
    fn on_quit(&mut self, connected: bool, busy: bool) -> OnQuit {
        if !self.detached {
            return OnQuit::Go;
        }
        if connected && busy {
            self.quit_asked = true;
            return OnQuit::Ask;
        }
        if connected && self.own {
            OnQuit::CloseFirst
        } else {
            OnQuit::Go
        }
    }

    /// The view leaves `session_id` for another: whether to close it (one
    /// this TUI opened with nothing running; a busy one goes on, said
    /// after the switch).
    fn leave(&mut self, session_id: Option<String>, busy: bool) -> bool {
        self.left_running = None;
        if !self.detached || self.closed {
            return false;
        }
        if busy {
            self.left_running = session_id;
            return false;
        }
        self.own
    }
}

const QUIT_ASK: &str =
    "a turn is running — L: leave it running in the background (scv agents, scv attach) · S: stop it and quit · Esc: stay";

impl App {
    /// The session this TUI opened is detached (`session.detached`).
    pub fn detached(&mut self) {
        self.live.detached_own();
    }

    /// `session.attached`: this view follows a live session it did not
    /// open (or opened, before the link dropped).
    pub(super) fn attached(&mut self, attached: SessionAttached) {
        self.live.detached = true;
        self.live.closed = false;
        self.link = LinkState::Connected;
        let session_id = self
            .book
            .client
            .session_id()
            .map(str::to_string)
            .unwrap_or_default();
        if self.session.as_ref().map(|s| &s.session_id) != Some(&session_id) {
            self.session = Some(SessionView::attached(session_id.clone(), &attached));
        }
        let state = match attached.state {
            LiveState::Idle => "idle",
            LiveState::Running => "a turn is running",
            LiveState::AwaitingApproval => "a turn waits for your approval",
        };
        self.notice(format!(
            "attached to session {} ({state}); it lives in the daemon: quitting leaves it running",
            short_id(&session_id)
        ));
    }

    /// `session.closed`: the session ended in the daemon.
    pub(super) fn closed(&mut self) {
        self.live = Live {
            closed: true,
            ..Live::default()
        };
        self.turn = None;
        self.approval.clear();
        self.end_turn();
        self.notice(
            "this session was closed (scv stop, or another client); /new starts another".into(),
        );
    }

    /// The session to attach to again when the link returns.
    pub fn reattach_target(&self) -> Option<String> {
        (self.live.detached && !self.live.closed)
            .then(|| self.session.as_ref().map(|s| s.session_id.clone()))
            .flatten()
    }

    /// The link came back and the session is followed again (its
    /// transcript and live events follow).
    pub fn reattached(&mut self) {
        let own = self.live.own;
        self.reconnect_error = None;
        self.switched(&crate::session::Which::Attach(String::new()));
        self.live.own = own;
        self.notice(
            "the connection is back; attached to the session again — nothing was lost".into(),
        );
    }

    /// A quit asked while a turn runs: the keys that answer the question.
    pub(super) fn quit_key(&mut self, key: KeyEvent) -> Option<Vec<Outgoing>> {
        if !self.live.quit_asked {
            return None;
        }
        self.live.quit_asked = false;
        self.hint = None;
        match key.code {
            KeyCode::Char('l' | 'L') => {
                self.should_quit = true;
                Some(vec![Outgoing::Quit])
            }
            KeyCode::Char('s' | 'S') => {
                let mut out = self.close_request();
                self.should_quit = true;
                out.push(Outgoing::Quit);
                Some(out)
            }
            _ => Some(Vec::new()),
        }
    }

    /// What a quit becomes: with a detached turn running, the question;
    /// with nothing running, the TUI's own session closed first.
    pub(super) fn quitting(&mut self, out: Vec<Outgoing>) -> Vec<Outgoing> {
        if !out.iter().any(|o| matches!(o, Outgoing::Quit)) {
            return out;
        }
        let connected = self.link == LinkState::Connected;
        match self.live.on_quit(connected, self.busy()) {
            OnQuit::Go => out,
            OnQuit::Ask => {
                self.should_quit = false;
                self.hint_ending(QUIT_ASK.into(), None);
                let out = out.into_iter();
                out.filter(|o| !matches!(o, Outgoing::Quit)).collect()
            }
            OnQuit::CloseFirst => self.close_request().into_iter().chain(out).collect(),
        }
    }

    /// A turn runs or prompts wait.
    fn busy(&self) -> bool {
        self.turn.is_some() || !self.book.client.queue().is_empty()
    }

    /// This view leaves its session for another (`/new`, `/resume`,
    /// `/fork`): one this TUI opened with nothing running is closed; one
    /// whose turn runs goes on in the daemon, said after the switch
    /// (`left_running`).
    pub fn leaving(&mut self) -> Vec<Outgoing> {
        let session_id = self.session_id();
        if self.live.leave(session_id, self.busy()) {
            return self.close_request();
        }
        Vec::new()
    }

    /// After a switch: the session left running, said once.
    pub fn say_left_running(&mut self) {
        if let Some(id) = self.live.left_running.take() {
            self.notice(format!(
                "the session you left runs on in the background: `scv attach {}` (or `scv agents`)",
                short_id(&id)
            ));
        }
    }

    fn close_request(&mut self) -> Vec<Outgoing> {
        let Some(session_id) = self.session.as_ref().map(|s| s.session_id.clone()) else {
            return Vec::new();
        };
        vec![self.send(ClientMessage::SessionClose(SessionClose { session_id }))]
    }
}
