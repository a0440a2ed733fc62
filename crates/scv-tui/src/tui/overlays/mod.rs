//! Overlays over the transcript (`/help`, `/status`, `/approvals`,
//! `/diff`, the session picker, a subagent's transcript), one file each,
//! listed in [`OverlayKind`].
//!
//! An overlay is a title, its lines and the keys of its own ([`Overlay`]);
//! the frame here draws the box, wraps and scrolls the lines and closes it
//! with Esc, so every overlay scrolls alike. Overlays read
//! [`OverlayData`], a narrow view the App builds when it draws or takes a
//! key, never the App itself; what one shows is built when drawn, so it is
//! always current. An overlay changes nothing but its own scroll and
//! selection: anything else it asks of the App ([`OverlayKey`]).

mod approvals;
mod cost;
mod diff;
mod elicit;
mod help;
pub mod models;
mod picker;
mod rewind;
mod sessions;
mod status;
mod subagent;
mod trust;

pub use rewind::{RestoreScope, Rewind};
pub use sessions::Picker;

use super::panel::more_below;
use super::rules::Rule;
use super::state::{McpView, SessionView};
use super::wrap;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};
use ratatui::Frame;
use scv_protocol::Usage;

/// The overlays. Adding one: a file beside this one with a type that
/// implements [`Overlay`], its `mod` line, its variant here and its arm
/// in [`OverlayKind::overlay`].
#[derive(Debug, Clone)]
pub enum OverlayKind {
    Help,
    Status,
    /// `/cost`: the session by turn.
    Cost,
    Approvals,
    /// `git diff` of the workspace, as lines.
    Diff(Vec<Line<'static>>),
    /// The stored sessions to resume (`/resume`, `scv resume`).
    Sessions(Box<Picker>),
    /// The session's checkpoints to go back to (`/rewind`).
    Rewind(Box<Rewind>),
    /// A subagent's transcript, by its session id (`Ctrl+O`).
    Subagent(String),
    /// The provider's models to switch to (`/model`).
    Models(Box<models::ModelPicker>),
    /// The workspace's repository configuration, to trust or not.
    Trust(Box<scv_protocol::WorkspaceTrust>),
    /// An MCP server's question (capability `elicitation`).
    Elicit(Box<crate::tui::elicit::ElicitForm>),
}

impl OverlayKind {
    /// The overlay that shows this kind.
    fn overlay(&self) -> Box<dyn Overlay + '_> {
        match self {
            OverlayKind::Help => Box::new(help::Help),
            OverlayKind::Status => Box::new(status::Status),
            OverlayKind::Cost => Box::new(cost::Cost),
            OverlayKind::Approvals => Box::new(approvals::Approvals),
            OverlayKind::Diff(lines) => Box::new(diff::Diff(lines)),
            OverlayKind::Sessions(picker) => Box::new(sessions::Sessions(picker.as_ref())),
            OverlayKind::Rewind(rewind) => Box::new(rewind::Checkpoints(rewind.as_ref())),
            OverlayKind::Subagent(session_id) => Box::new(subagent::Subagent(session_id)),
            OverlayKind::Models(picker) => Box::new(models::Models(picker.as_ref())),
            OverlayKind::Trust(trust) => Box::new(trust::Trust(trust.as_ref())),
            OverlayKind::Elicit(form) => Box::new(elicit::Elicit(form.as_ref())),
        }
    }

    /// What typing edits, in an overlay that filters as it is typed.
    fn filter_mut(&mut self) -> Option<&mut String> {
        match self {
            OverlayKind::Sessions(picker) => Some(&mut picker.filter),
            OverlayKind::Models(picker) => Some(&mut picker.filter),
            _ => None,
        }
    }
}

/// One overlay: its title, what it shows, the keys of its own.
pub trait Overlay {
    /// The border's title; it says which keys work.
    fn title(&self) -> &'static str;

    /// What it shows, unwrapped (the frame wraps and scrolls it).
    /// `selected`: the row an overlay that selects has marked.
    fn lines(&self, data: &OverlayData<'_>, selected: usize) -> Vec<Line<'static>>;

    /// What it shows at `width` columns (the frame wraps it again, which
    /// changes nothing in lines already wrapped to it). An overlay whose
    /// lines come wrapped and cached (a transcript) says so here.
    fn lines_at(&self, data: &OverlayData<'_>, selected: usize, _width: u16) -> Vec<Line<'static>> {
        self.lines(data, selected)
    }

    /// A key of its own, before the frame scrolls; `Pass` leaves it to
    /// the frame.
    fn on_key(&self, _key: KeyEvent, _data: &OverlayData<'_>, _selected: &mut usize) -> OverlayKey {
        OverlayKey::Pass
    }
}

/// What the overlays read of the App, borrowed for one frame or one key.
pub struct OverlayData<'a> {
    pub session: Option<&'a SessionView>,
    /// The prompt's size in tokens, as the status line has it.
    pub context_used: u64,
    pub usage: &'a Usage,
    /// Cost and tokens by kind, per turn (capability `usage`).
    pub costs: &'a super::state::Costs,
    /// Prompts waiting in the queue.
    pub queue_len: usize,
    pub queue_paused: bool,
    pub rules: &'a [Rule],
    pub mcp: &'a McpView,
    /// The slash commands (name, help): the built-ins as the command
    /// table lists them, then the session's custom commands and skills.
    pub commands: Vec<(String, String)>,
    /// The session's subagents and their transcripts.
    pub subagents: &'a super::subagents::Subagents,
    /// Tool output and thinking shown in full (`Ctrl+O`).
    pub expanded: bool,
}

/// The open overlay and where it is.
#[derive(Debug, Clone)]
pub struct OpenOverlay {
    pub kind: OverlayKind,
    /// Rows scrolled past.
    pub scroll: usize,
    /// The selected row, in an overlay that selects (`/approvals`).
    pub selected: usize,
}

impl OpenOverlay {
    pub fn new(kind: OverlayKind) -> OpenOverlay {
        OpenOverlay {
            kind,
            scroll: 0,
            selected: 0,
        }
    }

    /// The stored sessions to resume, this one (`current`) left out.
    pub fn sessions(mut sessions: Vec<scv_protocol::StoredSession>, current: Option<&str>) -> Self {
        sessions.retain(|s| Some(s.session_id.as_str()) != current);
        OpenOverlay::new(OverlayKind::Sessions(Box::new(Picker {
            sessions,
            filter: String::new(),
            now: scv_store::now_unix(),
        })))
    }

    /// The provider's models, `current` selected when the list has it.
    pub fn models(provider: String, models: Vec<String>, current: String) -> Self {
        let selected = models.iter().position(|m| *m == current).unwrap_or(0);
        let mut open = OpenOverlay::new(OverlayKind::Models(Box::new(models::ModelPicker {
            provider,
            models,
            current,
            filter: String::new(),
        })));
        open.selected = selected;
        open
    }

    /// `session_id`'s transcript, following its end.
    pub fn subagent(session_id: String) -> Self {
        let mut open = OpenOverlay::new(OverlayKind::Subagent(session_id));
        // Scrolled past everything: the frame shows the end, and keeps
        // showing it as the subagent goes on, until ↑ holds it.
        open.scroll = usize::MAX;
        open
    }
}

/// What a key did to the overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverlayKey {
    /// Not the overlay's: it goes on (an approval below stays answerable,
    /// typing goes on under an overlay).
    Pass,
    /// Taken (scrolled, selected).
    Taken,
    /// Esc: the App closes the overlay.
    Close,
    /// The App removes session rule `n` (`/approvals`).
    RemoveRule(usize),
    /// The App opens this stored session: resumes it, or forks it.
    Pick { session_id: String, fork: bool },
    /// The App restores this checkpoint, what `scope` says (`force`: over
    /// conflicts the user was shown).
    Restore {
        checkpoint_id: String,
        scope: RestoreScope,
        force: bool,
    },
    /// The selection moved to this checkpoint (its changes are asked for).
    SelectCheckpoint(String),
    /// Show this subagent's transcript instead.
    Subagent(String),
    /// Switch the session to this model (`/model`'s picker).
    Model(String),
    /// Cancel this subagent alone (`turn.cancel` of its session).
    CancelSubagent(String),
    /// Tool output and thinking in full, or not (`Ctrl+O` in an overlay
    /// where it does not open one).
    ToggleExpanded,
    /// Trust the session's workspace (`workspace.trust`).
    TrustWorkspace,
    /// Send this answer to an MCP server's question.
    Elicited(crate::tui::elicit::Answer),
}

/// A key while `open` is up, in a transcript area `width` × `height`:
/// Esc closes it; then the overlay's own keys; then arrows, pages, Home
/// and End scroll. Other keys pass.
pub fn on_key(
    open: &mut OpenOverlay,
    key: KeyEvent,
    data: &OverlayData<'_>,
    width: u16,
    height: u16,
) -> OverlayKey {
    let rows = rows(open, data, width);
    let max_scroll = rows.saturating_sub(usize::from(height.saturating_sub(2)));
    // A question's form takes every key but Ctrl+C and Ctrl+D.
    if let OverlayKind::Elicit(form) = &mut open.kind {
        use crate::tui::elicit::FormKey;
        return match form.on_key(key) {
            FormKey::Pass => OverlayKey::Pass,
            FormKey::Taken => OverlayKey::Taken,
            FormKey::Answered(answer) => OverlayKey::Elicited(answer),
        };
    }
    if key.code == KeyCode::Esc {
        return OverlayKey::Close;
    }
    if let Some(filter) = open.kind.filter_mut() {
        let typed = match key.code {
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                filter.push(c);
                true
            }
            KeyCode::Backspace => filter.pop().is_some(),
            _ => false,
        };
        if typed {
            open.selected = 0;
            open.scroll = 0;
            return OverlayKey::Taken;
        }
    }
    match open.kind.overlay().on_key(key, data, &mut open.selected) {
        OverlayKey::Pass => {}
        done => return done,
    }
    let by = |by: i64| (open.scroll.min(max_scroll) as i64 + by).clamp(0, max_scroll as i64);
    open.scroll = match key.code {
        KeyCode::Up => by(-1) as usize,
        KeyCode::Down => by(1) as usize,
        KeyCode::PageUp => by(-10) as usize,
        KeyCode::PageDown => by(10) as usize,
        KeyCode::Home => 0,
        KeyCode::End => max_scroll,
        _ => return OverlayKey::Pass,
    };
    OverlayKey::Taken
}

/// The overlay's rows at `width` (what scrolling counts).
pub fn rows(open: &OpenOverlay, data: &OverlayData<'_>, width: u16) -> usize {
    let inner = width.saturating_sub(2).max(1);
    let lines = open.kind.overlay().lines_at(data, open.selected, inner);
    wrap::wrap_lines(&lines, inner).len()
}

pub fn draw(frame: &mut Frame<'_>, open: &OpenOverlay, data: &OverlayData<'_>, area: Rect) {
    let overlay = open.kind.overlay();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(Style::default().fg(Color::Cyan))
        .title(Span::styled(
            overlay.title(),
            Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let lines = overlay.lines_at(data, open.selected, inner.width.max(1));
    let wrapped = wrap::wrap_lines(&lines, inner.width.max(1));
    let max_scroll = wrapped.len().saturating_sub(usize::from(inner.height));
    let scroll = open.scroll.min(max_scroll);
    let below = max_scroll - scroll;
    let shown: Vec<Line<'static>> = wrapped
        .into_iter()
        .skip(scroll)
        .take(usize::from(inner.height))
        .collect();
    frame.render_widget(Paragraph::new(shown), inner);
    if below > 0 {
        more_below(frame, area, format!(" ↓ {below} more "), 1);
    }
}

/// A section's heading.
fn heading(text: &str) -> Line<'static> {
    Line::styled(
        text.to_string(),
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
    )
}

/// A name and what it is, the name padded to `width` columns.
fn pair(key: &str, what: &str, width: usize) -> Line<'static> {
    Line::from(vec![
        Span::styled(
            format!("  {key:<width$} "),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::styled(what.to_string(), Style::default().fg(Color::Gray)),
    ])
}
