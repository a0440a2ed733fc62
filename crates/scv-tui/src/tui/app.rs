//! The UI's state, free of terminal I/O: server events come in through
//! [`App::apply`], keys through [`App::on_key`], which returns the
//! protocol messages to send. Rendering reads this state (`view.rs`).
//!
//! The App's behaviour is split by job into the modules below; this one
//! holds the state, the layout and what they all share (request ids,
//! notices). The approval prompt, the queue panel, the input box and the
//! overlays are components that each take their keys and draw from their
//! own state; the App pumps each key through them in turn.

mod approvals;
mod attach;
mod budget;
mod children;
mod commands;
mod config_watch;
mod elicit;
mod events;
mod images;
mod keys;
mod link;
pub mod live;
mod permissions;
mod plan;
#[cfg(test)]
mod tests;
mod undo;

use super::approval::ApprovalPrompt;
use super::input_box::InputBox;
use super::overlays::{OpenOverlay, OverlayData};
use super::queue_panel::QueuePanel;
use super::rules::Rules;
pub use super::state::PendingApproval;
pub use super::state::{short, ActiveTurn, LinkState, McpView, SessionView};
use super::transcript::{ItemKind, Transcript, View, Viewport};
use ratatui::layout::{Constraint, Rect};
use scv_client::session::Request;
use scv_protocol::ClientMessage;
use std::time::{Duration, Instant};

/// The screen's regions.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub transcript: Rect,
    pub queue: Rect,
    pub approval: Rect,
    pub input: Rect,
    pub hint: Rect,
    pub status: Rect,
}

/// What the UI wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    Send {
        request_id: String,
        message: ClientMessage,
    },
    /// Leave this session for that one, on a connection of its own
    /// (`/resume`, `/fork`, the picker, the offer after a restart).
    Open(crate::session::Which),
    Quit,
}

/// A session client's request as the UI hands it to the event loop.
fn outgoing(request: Request) -> Outgoing {
    Outgoing::Send {
        request_id: request.request_id,
        message: request.message,
    }
}

pub struct App {
    pub transcript: Transcript,
    pub input: InputBox,
    pub session: Option<SessionView>,
    pub link: LinkState,
    pub turn: Option<ActiveTurn>,
    pub queue: QueuePanel,
    pub approval: ApprovalPrompt,
    /// What the session used and spent.
    pub meter: super::meter::Meter,
    /// Where the transcript view is: following the bottom, or held where
    /// the reader scrolled to while new text arrives below.
    pub viewport: Viewport,
    /// The terminal's size (columns, rows), for layout and scrolling.
    pub size: (u16, u16),
    /// Tool output shown in full.
    pub expanded: bool,
    /// The clock the view uses (set each frame; fixed in tests).
    pub now: Instant,
    /// A one-line hint under the input (e.g. "press Ctrl+C again to quit").
    pub hint: Option<String>,
    pub should_quit: bool,
    ctrl_c_at: keys::CtrlC,
    /// What the session's events are matched against; [`events`]'s alone.
    book: events::Bookkeeping,
    /// This session's approval rules (never saved, never sent).
    pub rules: Rules,
    /// The open overlay (`/help`, `/status`, `/approvals`, `/diff`).
    pub overlay: Option<OpenOverlay>,
    /// MCP servers, from `daemon.status` (asked for by `/status`).
    pub mcp: McpView,
    /// Text for the clipboard (`/copy`).
    clipboard: Option<String>,
    /// Workspace paths for `@` completion.
    files: super::files::FileIndex,
    /// Paths offered for the `@path` being typed.
    pub path_matches: Vec<String>,
    /// The session the TUI had before the daemon went away: Ctrl+R
    /// resumes it.
    pub resume_offer: Option<String>,
    /// Why the last reconnect failed, once said (not repeated each try).
    pub reconnect_error: Option<String>,
    /// Capability `detach`: the live session this view follows and how
    /// (`live.rs`): re-attached when the link comes back, closed on a quit
    /// that leaves nothing running.
    pub live: live::Live,
    /// A hint that ends by itself: this text goes at this time (the Ctrl+C
    /// window), or with the turn (`None` time: an approval's "no rule").
    hint_ends: Option<(Option<Instant>, String)>,
    /// The terminal reports the mouse to us (the wheel scrolls; selecting
    /// text needs Shift). Off by default; Ctrl+T toggles, `SCV_MOUSE=1`
    /// starts with it on.
    pub mouse: bool,
    /// The key variable the first-run note is about: the server's warning
    /// that it is not set is not said a second time.
    pub first_run_key: Option<String>,
    /// When the local daemon started ("HH:MM UTC"), for a key set in this
    /// shell but not in it; `None` for a remote one.
    pub daemon_started: Option<String>,
    /// The local daemon's `config.toml` (`None`: a remote daemon).
    pub config_file: Option<std::path::PathBuf>,
    /// The host of a remote daemon (`scv --remote HOST`), on the status
    /// line: where the session's commands run.
    pub remote_host: Option<String>,
    /// What the session in view opened with from it.
    config_watch: Option<config_watch::ConfigWatch>,
    /// It changed in a way the open session does not take.
    pub config_changed: bool,
    /// Ctrl+T changed [`App::mouse`]; the event loop tells the terminal.
    pub mouse_changed: bool,
    /// Ctrl+L asked for the whole screen to be painted again.
    pub redraw: bool,
    /// The over-long message the user was offered to attach as a file
    /// (its fingerprint): Enter again on it attaches ([`attach`]).
    attach_offer: attach::AttachOffer,
    /// Checkpoint requests in flight and where turns begin ([`undo`]).
    undo: undo::UndoBook,
    /// Mode requests in flight and the plan to carry out ([`plan`]).
    plan: plan::PlanBook,
    /// `/budget` requests in flight.
    budgets: budget::BudgetBook,
    /// The session's subagents, their transcripts and cards (bounded:
    /// see [`super::subagents`]).
    pub subagents: super::subagents::Subagents,
    /// Its background processes, from the tool results (`/ps`).
    pub processes: super::processes::Processes,
}

impl App {
    pub fn new(now: Instant) -> App {
        let mut app = App {
            transcript: Transcript::default(),
            input: InputBox::new(200, 1024 * 1024),
            session: None,
            link: LinkState::Connected,
            turn: None,
            queue: QueuePanel::default(),
            approval: ApprovalPrompt::default(),
            meter: Default::default(),
            viewport: Viewport::Bottom,
            size: (80, 24),
            expanded: false,
            now,
            hint: None,
            should_quit: false,
            ctrl_c_at: Default::default(),
            book: Default::default(),
            rules: Rules::default(),
            overlay: None,
            mcp: McpView::Unknown,
            clipboard: None,
            files: Default::default(),
            path_matches: Vec::new(),
            resume_offer: None,
            reconnect_error: None,
            live: live::Live::default(),
            attach_offer: Default::default(),
            redraw: false,
            mouse: false,
            first_run_key: None,
            daemon_started: None,
            config_file: None,
            remote_host: None,
            config_watch: None,
            config_changed: false,
            mouse_changed: false,
            hint_ends: None,
            undo: Default::default(),
            plan: Default::default(),
            budgets: Default::default(),
            subagents: Default::default(),
            processes: Default::default(),
        };
        app.approval.resize(80, 24);
        app
    }

    /// The terminal is now `width` × `height`. A held view keeps its top
    /// item (the row within it is kept as far as the item still has rows).
    pub fn resize(&mut self, width: u16, height: u16) {
        self.size = (width, height);
        self.approval.resize(width, height);
    }

    /// The screen's regions, from the state alone: the view draws into
    /// them and scrolling measures with them.
    pub fn layout(&self, area: Rect) -> Layout {
        let input_rows = self.input.height();
        let queue_rows = self.queue.height();
        let approval_rows = self.approval.height();
        let hint_rows = u16::from(self.hint.is_some());
        let [transcript, queue, approval, input, hint, status] =
            ratatui::layout::Layout::vertical([
                Constraint::Min(1),
                Constraint::Length(queue_rows),
                Constraint::Length(approval_rows),
                Constraint::Length(input_rows),
                Constraint::Length(hint_rows),
                Constraint::Length(1),
            ])
            .areas(area);
        Layout {
            transcript,
            queue,
            approval,
            input,
            hint,
            status,
        }
    }

    /// The transcript as it is in view now.
    pub fn transcript_view(&self) -> View {
        let area = self
            .layout(Rect::new(0, 0, self.size.0, self.size.1))
            .transcript;
        self.transcript
            .view(area.width, area.height, self.viewport, self.expanded)
    }

    fn session_id(&self) -> Option<String> {
        self.session.as_ref().map(|s| s.session_id.clone())
    }

    fn send(&mut self, message: ClientMessage) -> Outgoing {
        outgoing(self.book.client.request(message))
    }

    /// Notes shown at start (the first-run note).
    pub fn notes(&mut self, lines: Vec<String>) {
        self.transcript.push(ItemKind::Note(lines));
    }

    fn notice(&mut self, text: String) {
        self.transcript.push(ItemKind::Notice(text));
    }

    /// `provider/model` (or the model alone from an older server).
    pub fn model_label(&self) -> String {
        match &self.session {
            Some(s) => match &s.provider {
                Some(p) => format!("{p}/{}", s.model),
                None => s.model.clone(),
            },
            None => String::new(),
        }
    }

    /// Elapsed time of the active turn.
    /// What `scv` prints when it exits (the transcript goes with the
    /// screen): the session, how to come back to it, what it used.
    pub fn exit_summary(&self) -> Option<String> {
        let session = self.session.as_ref()?;
        let id = &session.session_id;
        // A session that ran nothing was not kept: nothing to come back to.
        if id.is_empty() || !self.worked() {
            return None;
        }
        let mut out = super::meter::resume_line(id, &session.cwd);
        if let Some(used) = self.meter.used_line() {
            out.push('\n');
            out.push_str(&used);
        }
        Some(out)
    }

    /// Shows `text` as the hint until `until` (`None`: until the turn
    /// ends) or until another hint replaces it.
    pub(super) fn hint_ending(&mut self, text: String, until: Option<Instant>) {
        self.hint_ends = Some((until, text.clone()));
        self.hint = Some(text);
    }

    /// Takes away a hint whose time is over (the event loop asks each
    /// tick); whether the screen changed.
    pub fn expire_hint(&mut self, now: Instant) -> bool {
        let over = matches!(&self.hint_ends, Some((Some(at), text))
            if now >= *at && self.hint.as_ref() == Some(text));
        if over {
            self.hint = None;
            self.hint_ends = None;
        }
        over
    }

    /// The turn ended: a hint about it goes with it.
    pub(super) fn end_turn_hint(&mut self) {
        if let Some((None, text)) = &self.hint_ends {
            if self.hint.as_ref() == Some(text) {
                self.hint = None;
            }
            self.hint_ends = None;
        }
    }

    pub fn turn_elapsed(&self) -> Option<Duration> {
        self.turn
            .as_ref()
            .map(|t| self.now.saturating_duration_since(t.started_at))
    }

    /// What the overlays read (they never see the App).
    pub fn overlay_data(&self) -> OverlayData<'_> {
        OverlayData {
            session: self.session.as_ref(),
            context_used: self.meter.context_used,
            usage: &self.meter.usage,
            costs: &self.meter.costs,
            queue_len: self.queue.len(),
            queue_paused: self.queue.paused(),
            rules: self.rules.list(),
            mcp: &self.mcp,
            commands: commands::help_list(self.custom_commands()),
            subagents: &self.subagents,
            expanded: self.expanded,
        }
    }
}
