//! Keys, the mouse and pastes. [`App::on_key`] pumps a key through the
//! parts of the screen in turn; the first that takes it keeps it. Keys
//! that send go through the session's calls ([`super::events`]) and the
//! command table ([`super::commands`]).

use super::commands::{self, Line};
use super::{App, Outgoing};
use crate::tui::approval::PromptKey;
use crate::tui::files;
use crate::tui::overlays::{self, OverlayKey};
use crate::tui::queue_panel::PanelKey;
use crate::tui::transcript::Viewport;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use scv_protocol::{ClientMessage, QueueUpdate};
use std::time::{Duration, Instant};

/// A second Ctrl+C within this quits.
const DOUBLE_PRESS: Duration = Duration::from_millis(1500);

/// Ctrl+C's second press: when the first was.
#[derive(Debug, Default)]
pub(super) struct CtrlC(Option<Instant>);

/// What a Ctrl+C does.
enum Press {
    /// Clears the draft in the box (and disarms).
    ClearDraft,
    /// The second press within [`DOUBLE_PRESS`]: quit.
    Quit,
    /// The first press: armed for a second.
    Armed,
}

impl CtrlC {
    /// Any other key disarms it.
    fn disarm(&mut self) {
        self.0 = None;
    }

    fn press(&mut self, now: Instant, draft: bool) -> Press {
        if draft {
            self.0 = None;
            return Press::ClearDraft;
        }
        if self
            .0
            .is_some_and(|at| now.duration_since(at) < DOUBLE_PRESS)
        {
            return Press::Quit;
        }
        self.0 = Some(now);
        Press::Armed
    }
}

impl App {
    /// Handles one key; returns what to send. Keys are pumped through, in
    /// order: Ctrl+C, the open overlay, Shift+Tab, the approval prompt,
    /// the queue panel, the App's own keys, the input box. The first that
    /// takes a key keeps it.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Outgoing> {
        if let Some(out) = self.quit_key(key) {
            return out;
        }
        let out = self.key(key);
        self.quitting(out)
    }

    fn key(&mut self, key: KeyEvent) -> Vec<Outgoing> {
        if let Some(out) = self.global_key(key) {
            return out;
        }
        if let Some(out) = self.overlay_key(key) {
            return out;
        }
        // Plan mode toggles whatever has focus, a running turn included.
        if key.code == KeyCode::BackTab {
            self.hint = None;
            return self.toggle_mode();
        }
        if let Some(out) = self.approval_key(key) {
            return out;
        }
        if let Some(out) = self.queue_key(key) {
            return out;
        }
        // A key past the prompt and the panel clears the hint.
        self.hint = None;
        if let Some(out) = self.app_key(key) {
            self.offer_paths();
            return out;
        }
        self.input.on_key(key);
        self.offer_paths();
        Vec::new()
    }

    /// Ctrl+C works everywhere; any other key disarms its second press.
    fn global_key(&mut self, key: KeyEvent) -> Option<Vec<Outgoing>> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Some(self.ctrl_c());
        }
        self.ctrl_c_at.disarm();
        None
    }

    /// Keys of the open overlay (see [`overlays::on_key`]); the App does
    /// what the overlay asks: close it, remove a rule, open a session.
    /// `None`: not the overlay's key.
    fn overlay_key(&mut self, key: KeyEvent) -> Option<Vec<Outgoing>> {
        let mut open = self.overlay.take()?;
        let width = self.size.0;
        let height = self
            .layout(Rect::new(0, 0, self.size.0, self.size.1))
            .transcript
            .height;
        let done = overlays::on_key(&mut open, key, &self.overlay_data(), width, height);
        self.overlay = Some(open);
        match done {
            OverlayKey::Pass => return None,
            OverlayKey::Taken => {}
            OverlayKey::Close => self.overlay = None,
            OverlayKey::Pick { session_id, fork } => {
                self.overlay = None;
                return Some(vec![Outgoing::Open(picked(session_id, fork))]);
            }
            OverlayKey::Restore {
                checkpoint_id,
                scope,
                force,
            } => return Some(self.restore(checkpoint_id, scope, force)),
            OverlayKey::SelectCheckpoint(checkpoint_id) => {
                return Some(self.rewind_selected(checkpoint_id))
            }
            OverlayKey::Subagent(session_id) => self.open_subagent(session_id),
            OverlayKey::Model(model) => {
                self.overlay = None;
                let session = self.session.clone()?;
                // As `/model M`: the session keeps its provider.
                let configure = ClientMessage::SessionConfigure(scv_protocol::SessionConfigure {
                    session_id: session.session_id,
                    model: Some(model),
                    ..scv_protocol::SessionConfigure::default()
                });
                if self.turn.is_some() {
                    self.hint =
                        Some("the model switches only while idle (Esc cancels the turn)".into());
                    return Some(Vec::new());
                }
                return Some(vec![self.send(configure)]);
            }
            OverlayKey::CancelSubagent(session_id) => {
                return Some(self.cancel_subagent(&session_id))
            }
            OverlayKey::ToggleExpanded => self.expanded = !self.expanded,
            OverlayKey::Elicited(answer) => return Some(self.elicited(answer)),
            OverlayKey::TrustWorkspace => {
                self.overlay = None;
                let session = self.session.clone()?;
                let trust = ClientMessage::WorkspaceTrust(scv_protocol::WorkspaceTrustRequest {
                    session_id: session.session_id,
                });
                return Some(vec![self.send(trust)]);
            }
            OverlayKey::RemoveRule(index) => {
                if let Some(rule) = self.rules.remove(index) {
                    self.notice(format!("rule removed: {}", rule.scope()));
                }
                if let Some(open) = self.overlay.as_mut() {
                    open.selected = index.min(self.rules.len().saturating_sub(1));
                }
            }
        }
        Some(Vec::new())
    }

    fn approval_key(&mut self, key: KeyEvent) -> Option<Vec<Outgoing>> {
        let typing = !self.input.is_empty();
        // Esc cancels the turn, as /help says; a call waiting is denied
        // first (a queued prompt being edited is let go of first, as ever).
        if key.code == KeyCode::Esc && self.input.editing().is_none() {
            if let Some(PromptKey::Resolve(approval, approved)) = self.approval.deny(self.now) {
                let mut out = self.resolve(*approval, approved);
                out.extend(self.cancel_turn());
                return Some(out);
            }
        }
        let plan = self.plan_mode();
        self.approval.set_plan(plan);
        match self.approval.on_key(key, self.now, typing) {
            PromptKey::Pass => None,
            PromptKey::Taken => Some(Vec::new()),
            PromptKey::Hint(hint) => {
                self.hint_ending(hint, None);
                Some(Vec::new())
            }
            PromptKey::Typed(digit) => {
                self.input.paste(&digit.to_string());
                None
            }
            PromptKey::Resolve(approval, approved) => Some(self.resolve(*approval, approved)),
            PromptKey::Always(approval, rule) => Some(self.approve_always(*approval, rule)),
        }
    }

    fn queue_key(&mut self, key: KeyEvent) -> Option<Vec<Outgoing>> {
        let session_id = self.session_id();
        match self.queue.on_key(key, session_id.as_deref()) {
            PanelKey::Pass => None,
            PanelKey::Taken => Some(Vec::new()),
            PanelKey::Send(message) => Some(vec![self.send(message)]),
            PanelKey::Edit(entry) => {
                self.input.edit(entry);
                Some(Vec::new())
            }
        }
    }

    /// Keys that need the session or the transcript: sending, quitting,
    /// cancelling, Tab, scrolling.
    fn app_key(&mut self, key: KeyEvent) -> Option<Vec<Outgoing>> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let out = match key.code {
            KeyCode::Char('d') if ctrl && self.input.is_empty() => {
                self.should_quit = true;
                vec![Outgoing::Quit]
            }
            KeyCode::Char('o') if ctrl => {
                self.ctrl_o();
                Vec::new()
            }
            // What the terminal and the view disagree on (a glyph whose
            // width they count apart) is painted again whole.
            KeyCode::Char('l') if ctrl => {
                self.redraw = true;
                Vec::new()
            }
            KeyCode::Char('t') if ctrl => {
                self.mouse = !self.mouse;
                self.mouse_changed = true;
                self.hint = Some(mouse_hint(self.mouse).into());
                Vec::new()
            }
            // After a restart: the session this view had, back.
            KeyCode::Char('r') if ctrl && self.resume_offer.is_some() => {
                let id = self.resume_offer.take().unwrap_or_default();
                vec![Outgoing::Open(crate::session::Which::Resume(id))]
            }
            // Shift/Alt+Enter is a new line: the input box's.
            KeyCode::Enter if !(shift || alt) => self.submit(),
            KeyCode::Esc => {
                if self.input.stop_editing().is_some() {
                    self.input.set("");
                    return Some(Vec::new());
                }
                self.cancel_turn()
            }
            KeyCode::Tab if self.complete_path() => Vec::new(),
            KeyCode::Tab => {
                if self.input.text().starts_with('/') {
                    self.complete_slash();
                } else {
                    self.queue.focus();
                }
                Vec::new()
            }
            KeyCode::Up if shift => {
                self.scroll_by(-1);
                Vec::new()
            }
            KeyCode::Down if shift => {
                self.scroll_by(1);
                Vec::new()
            }
            KeyCode::PageUp => {
                self.scroll_by(-10);
                Vec::new()
            }
            KeyCode::PageDown => {
                self.scroll_by(10);
                Vec::new()
            }
            // Scrolled back, End returns to the bottom; otherwise it is
            // the input's.
            KeyCode::End if self.viewport != Viewport::Bottom => {
                self.follow();
                Vec::new()
            }
            _ => return None,
        };
        Some(out)
    }

    /// Ctrl+O: the latest subagent's transcript in an overlay. A session
    /// without subagents has none to show: Ctrl+O expands (or folds) tool
    /// output and thinking, as it always did, and says that there are none.
    fn ctrl_o(&mut self) {
        // The session's own cards expand (or fold) either way; with
        // subagents, the latest one's transcript opens over them too.
        self.expanded = !self.expanded;
        let what = if self.expanded { "expanded" } else { "folded" };
        match self.subagents.latest() {
            Some(child) if self.expanded => {
                let id = child.session_id.clone();
                self.open_subagent(id);
            }
            Some(_) => self.hint = Some(format!("tool output and thinking {what}")),
            None => {
                self.hint = Some(format!(
                    "tool output and thinking {what} (no subagents to show)"
                ));
            }
        }
    }

    /// The overlay shows `session_id`'s transcript, following its end.
    fn open_subagent(&mut self, session_id: String) {
        self.overlay = Some(overlays::OpenOverlay::subagent(session_id));
    }

    fn ctrl_c(&mut self) -> Vec<Outgoing> {
        let now = self.now;
        let draft = !self.input.text().trim().is_empty();
        match self.ctrl_c_at.press(now, draft) {
            // A draft in the box goes first (kept in the input history), as
            // in Claude Code: nothing is cancelled, nothing armed to quit.
            Press::ClearDraft => {
                let draft = self.input.text().to_string();
                self.input.remember(draft);
                self.input.set("");
                self.input.stop_editing();
                let hint = "input cleared (↑ brings it back)";
                self.hint_ending(hint.into(), Some(now + DOUBLE_PRESS));
                Vec::new()
            }
            Press::Quit => {
                self.should_quit = true;
                vec![Outgoing::Quit]
            }
            Press::Armed => {
                let hint = "press Ctrl+C again to quit";
                self.hint_ending(hint.into(), Some(now + DOUBLE_PRESS));
                if self.turn.is_some() {
                    return self.cancel_turn();
                }
                self.input.set("");
                self.input.stop_editing();
                Vec::new()
            }
        }
    }

    fn submit(&mut self) -> Vec<Outgoing> {
        let mut text = self.input.text().trim().to_string();
        if text.is_empty() {
            // The queue a cancel paused goes on.
            if let Some(session_id) = self.session_id() {
                if self.queue.resume_after_cancel() {
                    self.notice("queue resumed".into());
                    return vec![self.send(ClientMessage::SessionPause(
                        scv_protocol::SessionPause {
                            session_id,
                            paused: false,
                        },
                    ))];
                }
            }
            return Vec::new();
        }
        let mut line = commands::classify(&text, self.custom_commands());
        // A partial name with the popup up: Enter runs its highlighted
        // (first) match, as shown, rather than the partial name.
        if line == Line::Unknown && text.len() > 1 {
            if let Some((name, _)) = self.slash_matches().into_iter().next() {
                self.input.set(&name);
                line = commands::classify(&name, self.custom_commands());
                text = name;
            }
        }
        if matches!(line, Line::Builtin | Line::Unknown) {
            self.input.take();
            return self.run_command(&text);
        }
        let Some(session_id) = self.session_id() else {
            self.hint = Some("not connected".into());
            return Vec::new();
        };
        // Refused here, not by the server: the text stays in the box.
        if super::attach::over_limit(self.input.text()) {
            if self.input.editing().is_some() {
                self.hint = Some("a queued prompt can be at most 256 KiB; shorten it".into());
                return Vec::new();
            }
            let text = self.input.text().to_string();
            return self.offer_or_attach(session_id, &text);
        }
        // `@shot.png`: the image goes with the prompt (checked first; the
        // text stays in the box when one cannot go).
        let images = if self.input.editing().is_none() && line != Line::Custom {
            match self.prompt_images(self.input.text()) {
                Ok(images) => images,
                Err(err) => {
                    self.hint = Some(err);
                    return Vec::new();
                }
            }
        } else {
            Vec::new()
        };
        let prompt = self.input.take();
        // A queued prompt's text is edited as text: the server expands a
        // command only when it is sent as one.
        if let Some(entry) = self.input.stop_editing() {
            return vec![self.send(ClientMessage::QueueUpdate(QueueUpdate {
                session_id,
                queue_id: entry.queue_id,
                revision: entry.revision,
                prompt,
            }))];
        }
        let out = if !images.is_empty() {
            self.start_turn_with_images(session_id, prompt, images)
        } else if line == Line::Custom {
            self.start_command(session_id, prompt)
        } else {
            self.start_turn(session_id, prompt)
        };
        self.follow();
        vec![out]
    }

    pub fn on_mouse(&mut self, mouse: MouseEvent) {
        match mouse.kind {
            MouseEventKind::ScrollUp => self.scroll_by(-3),
            MouseEventKind::ScrollDown => self.scroll_by(3),
            _ => {}
        }
    }

    /// `text` in the box and Enter, as a user would (`scv "PROMPT"`).
    pub fn type_and_enter(&mut self, text: &str) -> Vec<Outgoing> {
        self.input.set(text);
        self.submit()
    }

    pub fn on_paste(&mut self, text: &str) {
        if let Some(mention) = super::images::pasted_image(text) {
            self.input.paste(&mention);
            return;
        }
        self.input.paste(text);
        self.offer_paths();
    }

    /// Moves the view `rows` down (positive) or up (negative). Scrolling up
    /// holds the view where it lands; reaching the bottom follows it again.
    fn scroll_by(&mut self, rows: i64) {
        let view = self.transcript_view();
        if rows > 0 && view.at_bottom {
            self.viewport = Viewport::Bottom;
            return;
        }
        let width = self
            .layout(Rect::new(0, 0, self.size.0, self.size.1))
            .transcript
            .width;
        let (item, line) = self.transcript.offset(view.top, rows, width, self.expanded);
        self.viewport = Viewport::Top { item, line };
        if self.transcript_view().at_bottom {
            self.viewport = Viewport::Bottom;
        }
    }

    /// Follow the bottom again.
    fn follow(&mut self) {
        self.viewport = Viewport::Bottom;
    }

    /// Paths for the `@path` before the cursor, if one is being typed.
    fn offer_paths(&mut self) {
        let cwd = self.session.as_ref().map(|s| s.cwd.as_str());
        self.path_matches = files::offer(&self.input, cwd, &mut self.files, self.now);
    }

    /// Tab on an `@path`.
    fn complete_path(&mut self) -> bool {
        files::complete(&mut self.input, &self.path_matches)
    }
}

/// The session picked in the picker: resumed, or forked (`fork`).
fn picked(session_id: String, fork: bool) -> crate::session::Which {
    if fork {
        crate::session::Which::Fork {
            session_id,
            turn_id: None,
        }
    } else {
        crate::session::Which::Resume(session_id)
    }
}

/// What Ctrl+T says it did.
fn mouse_hint(on: bool) -> &'static str {
    if on {
        "mouse capture on: the wheel scrolls; hold Shift to select text (Ctrl+T turns it off)"
    } else {
        "mouse capture off: select text freely; PgUp/PgDn scroll (Ctrl+T turns it on)"
    }
}
