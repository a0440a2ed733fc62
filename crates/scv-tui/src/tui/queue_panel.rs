//! The queue panel: the prompts waiting for their turn, as the server
//! reported them, and the keys that manage them once Tab focuses it.
//!
//! The entries are the server's: the panel changes them only as queue
//! events arrive, and asks for changes by returning the message to send
//! (each carries the entry's revision, so a stale one is refused). It takes
//! events through [`QueuePanel::apply`], keys through
//! [`QueuePanel::on_key`], and draws from `&self`.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use scv_client::session::QueueChange;
use scv_protocol::{ClientMessage, QueueEntry};
use scv_protocol::{QueueMove, QueueRemove, SessionPause};

/// Entries shown at once; the panel scrolls to keep the selection in view.
pub const MAX_ROWS: u16 = 5;

/// What a key did to the panel.
#[derive(Debug)]
pub enum PanelKey {
    /// Not the panel's: it is not focused.
    Pass,
    /// Taken, nothing to send.
    Taken,
    /// Taken; the server is asked for this change.
    Send(ClientMessage),
    /// Taken; this entry's prompt goes into the input box to be edited.
    Edit(QueueEntry),
}

/// An entry that left the queue. The App needs to know: a dequeued prompt
/// is shown when its turn starts, and an entry being edited can no longer
/// be saved.
#[derive(Debug)]
pub struct Left {
    pub queue_id: String,
    /// The prompt, when the entry was dequeued to run.
    pub dequeued: Option<String>,
}

#[derive(Debug, Default)]
pub struct QueuePanel {
    entries: Vec<QueueEntry>,
    /// What the user last asked for (the server does not echo it).
    paused: bool,
    /// The selected entry while the panel has focus.
    focus: Option<usize>,
    /// Paused because the user cancelled a turn (Enter on an empty box
    /// resumes it).
    paused_by_cancel: bool,
}

impl QueuePanel {
    pub fn entries(&self) -> &[QueueEntry] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn paused(&self) -> bool {
        self.paused
    }

    /// The user asked to pause or resume (`/pause`, `/resume`).
    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
    }

    /// A user's cancel pauses the waiting prompts (they would start at
    /// once otherwise): the note to show, or `None` when nothing waits or
    /// it is paused already.
    pub fn pause_for_cancel(&mut self) -> Option<String> {
        if self.is_empty() || self.paused {
            return None;
        }
        self.paused = true;
        self.paused_by_cancel = true;
        let waiting = self.len();
        Some(format!(
            "queue paused after the cancel: {waiting} {} — Enter on an empty box resumes it (or /unpause)",
            if waiting == 1 { "prompt waits" } else { "prompts wait" }
        ))
    }

    /// Enter on an empty box: whether it resumed a queue a cancel paused.
    pub fn resume_after_cancel(&mut self) -> bool {
        let resumed = self.paused_by_cancel && self.paused;
        if resumed {
            self.paused_by_cancel = false;
            self.paused = false;
        }
        resumed
    }

    /// Keys go to the panel.
    pub fn focused(&self) -> bool {
        self.focus.is_some()
    }

    /// The selected entry's index, while focused.
    pub fn selected(&self) -> Option<usize> {
        self.focus
    }

    /// Tab from the input box: focus the first entry, if there is one.
    pub fn focus(&mut self) {
        if !self.entries.is_empty() {
            self.focus = Some(0);
        }
    }

    /// Applies a queue event; other events are ignored. Returns the entry
    /// that left the queue, if one did.
    pub fn apply(&mut self, change: QueueChange) -> Option<Left> {
        match change {
            QueueChange::Snapshot { entries } => self.entries = entries,
            QueueChange::Enqueued { entry, position } => self.insert(entry, position),
            QueueChange::Updated { entry } => self.replace(entry),
            QueueChange::Moved { entry, position } => {
                self.entries.retain(|e| e.queue_id != entry.queue_id);
                self.insert(entry, position);
            }
            QueueChange::Removed { queue_id } => {
                self.remove(&queue_id);
                return Some(Left {
                    queue_id,
                    dequeued: None,
                });
            }
            QueueChange::Dequeued { queue_id, .. } => {
                let dequeued = self
                    .entries
                    .iter()
                    .find(|e| e.queue_id == queue_id)
                    .map(|e| e.prompt.clone());
                self.remove(&queue_id);
                return Some(Left { queue_id, dequeued });
            }
        }
        None
    }

    fn insert(&mut self, entry: QueueEntry, position: usize) {
        let at = position.min(self.entries.len());
        self.entries.insert(at, entry);
    }

    /// The entry as it is now (an update, or the server's answer to a
    /// stale edit); unknown entries are ignored.
    pub fn replace(&mut self, entry: QueueEntry) {
        if let Some(slot) = self
            .entries
            .iter_mut()
            .find(|e| e.queue_id == entry.queue_id)
        {
            *slot = entry;
        }
    }

    /// Drops the entry; the selection stays in range.
    fn remove(&mut self, queue_id: &str) {
        self.entries.retain(|e| e.queue_id != queue_id);
        if let Some(selected) = self.focus {
            self.focus = if self.entries.is_empty() {
                None
            } else {
                Some(selected.min(self.entries.len() - 1))
            };
        }
    }

    /// The session was cleared: no entries. Focus is kept; the next key
    /// finds nothing selected and leaves the panel.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// The daemon went away: no entries and no focus.
    pub fn reset(&mut self) {
        self.entries.clear();
        self.focus = None;
    }

    /// Rows the panel needs: up to [`MAX_ROWS`] entries and the borders;
    /// none when empty.
    pub fn height(&self) -> u16 {
        if self.entries.is_empty() {
            0
        } else {
            (self.entries.len() as u16).min(MAX_ROWS) + 2
        }
    }

    /// A key while focused (every key is the panel's then). `session_id`:
    /// the session the messages are for; without one, keys do nothing.
    pub fn on_key(&mut self, key: KeyEvent, session_id: Option<&str>) -> PanelKey {
        let Some(selected) = self.focus else {
            return PanelKey::Pass;
        };
        let Some(session_id) = session_id.map(str::to_string) else {
            return PanelKey::Taken;
        };
        let Some(entry) = self.entries.get(selected).cloned() else {
            self.focus = None;
            return PanelKey::Taken;
        };
        match key.code {
            KeyCode::Esc | KeyCode::Tab => {
                self.focus = None;
                PanelKey::Taken
            }
            KeyCode::Up => {
                self.focus = Some(selected.saturating_sub(1));
                PanelKey::Taken
            }
            KeyCode::Down => {
                self.focus = Some((selected + 1).min(self.entries.len() - 1));
                PanelKey::Taken
            }
            KeyCode::Enter | KeyCode::Char('e') => {
                self.focus = None;
                PanelKey::Edit(entry)
            }
            KeyCode::Char('u') if selected > 0 => {
                let before = Some(self.entries[selected - 1].queue_id.clone());
                self.focus = Some(selected - 1);
                PanelKey::Send(ClientMessage::QueueMove(QueueMove {
                    session_id,
                    queue_id: entry.queue_id,
                    revision: entry.revision,
                    before_queue_id: before,
                }))
            }
            KeyCode::Char('d') if selected + 1 < self.entries.len() => {
                let before = self.entries.get(selected + 2).map(|e| e.queue_id.clone());
                self.focus = Some(selected + 1);
                PanelKey::Send(ClientMessage::QueueMove(QueueMove {
                    session_id,
                    queue_id: entry.queue_id,
                    revision: entry.revision,
                    before_queue_id: before,
                }))
            }
            KeyCode::Char('x') | KeyCode::Delete | KeyCode::Backspace => {
                PanelKey::Send(ClientMessage::QueueRemove(QueueRemove {
                    session_id,
                    queue_id: entry.queue_id,
                    revision: entry.revision,
                }))
            }
            KeyCode::Char('p') => {
                self.paused = !self.paused;
                PanelKey::Send(ClientMessage::SessionPause(SessionPause {
                    session_id,
                    paused: self.paused,
                }))
            }
            _ => PanelKey::Taken,
        }
    }

    pub fn draw(&self, frame: &mut Frame<'_>, area: Rect) {
        let title = format!(
            " Queue ({}){} ",
            self.entries.len(),
            if self.paused { " — paused" } else { "" }
        );
        let focused = self.focused();
        let hint = if focused {
            " ↑/↓ e edit  u/d move  x remove  p pause  Esc done "
        } else {
            " Tab to manage "
        };
        let block = super::panel::block(focused)
            .title(title)
            .title_bottom(Line::styled(hint, Style::default().fg(Color::DarkGray)));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let rows = usize::from(inner.height);
        let first = self
            .focus
            .map_or(0, |s| s.saturating_sub(rows.saturating_sub(1)));
        let lines: Vec<Line<'_>> = self
            .entries
            .iter()
            .enumerate()
            .skip(first)
            .take(rows)
            .map(|(i, entry)| {
                let text = entry.prompt.lines().next().unwrap_or("").to_string();
                let style = if self.focus == Some(i) {
                    Style::default().add_modifier(Modifier::REVERSED)
                } else {
                    Style::default()
                };
                Line::from(vec![
                    Span::styled(format!("{}. ", i + 1), Style::default().fg(Color::DarkGray)),
                    Span::styled(text, style),
                ])
            })
            .collect();
        frame.render_widget(Paragraph::new(lines), inner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str) -> QueueEntry {
        QueueEntry {
            queue_id: id.into(),
            revision: 1,
            prompt: format!("prompt {id}"),
            submitter: "client".into(),
        }
    }

    fn panel(ids: &[&str]) -> QueuePanel {
        let mut panel = QueuePanel::default();
        panel.apply(QueueChange::Snapshot {
            entries: ids.iter().map(|id| entry(id)).collect(),
        });
        panel
    }

    #[test]
    fn the_selection_stays_in_range_as_entries_leave() {
        let mut panel = panel(&["a", "b"]);
        panel.focus();
        panel.on_key(KeyEvent::from(KeyCode::Down), Some("s"));
        assert_eq!(panel.selected(), Some(1));
        panel.apply(QueueChange::Removed {
            queue_id: "b".into(),
        });
        assert_eq!(panel.selected(), Some(0));
        let left = panel.apply(QueueChange::Dequeued {
            queue_id: "a".into(),
            prompt: None,
        });
        assert_eq!(left.unwrap().dequeued.as_deref(), Some("prompt a"));
        assert!(!panel.focused(), "nothing left to select");
    }

    #[test]
    fn keys_pass_unless_focused() {
        let mut panel = panel(&["a"]);
        let key = KeyEvent::from(KeyCode::Char('x'));
        assert!(matches!(panel.on_key(key, Some("s")), PanelKey::Pass));
        panel.focus();
        assert!(matches!(
            panel.on_key(key, Some("s")),
            PanelKey::Send(ClientMessage::QueueRemove(QueueRemove { .. }))
        ));
    }
}
