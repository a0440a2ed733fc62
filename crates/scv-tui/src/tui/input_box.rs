//! The input box as a component: the text being written (with its
//! history, [`Input`]), the queued prompt it is editing if any, the
//! editing keys, and its drawing.
//!
//! It takes only keys that edit text; what a message means (sending it,
//! slash commands, Esc and Ctrl+C/Ctrl+D) needs the session and stays with
//! the App. It draws from `&self`.

use super::input::Input;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Position, Rect};

use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use scv_protocol::QueueEntry;

/// Text rows shown at once; the box scrolls to keep the cursor in view.
pub const MAX_ROWS: u16 = 8;

pub struct InputBox {
    input: Input,
    /// The queued prompt the text will replace when sent.
    editing: Option<QueueEntry>,
}

impl InputBox {
    /// History of at most `max_items` prompts and `max_bytes` bytes.
    pub fn new(max_items: usize, max_bytes: usize) -> InputBox {
        InputBox {
            input: Input::new(max_items, max_bytes),
            editing: None,
        }
    }

    /// The session's bounds for the history.
    pub fn set_bounds(&mut self, max_items: usize, max_bytes: usize) {
        self.input.set_bounds(max_items, max_bytes);
    }

    /// A prompt into the history, unsent (see [`Input::remember`]).
    pub fn remember(&mut self, text: String) {
        self.input.remember(text);
    }

    pub fn text(&self) -> &str {
        self.input.text()
    }

    pub fn is_empty(&self) -> bool {
        self.input.is_empty()
    }

    /// The `@path` being typed: the byte index of its `@` and what
    /// follows it up to the cursor.
    pub fn at_word(&self) -> Option<(usize, &str)> {
        let before = &self.input.text()[..self.input.cursor()];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| {
            i + before[i..].chars().next().map_or(1, char::len_utf8)
        });
        let word = &before[start..];
        word.strip_prefix('@').map(|typed| (start, typed))
    }

    /// Replaces the `@path` being typed (from its `@`) with `with`.
    pub fn replace_word(&mut self, start: usize, with: &str) {
        self.input.replace_before_cursor(start, with);
    }

    /// Replaces the text (cursor at the end).
    pub fn set(&mut self, text: &str) {
        self.input.set(text);
    }

    /// Takes the text out (for sending) and remembers it in the history.
    pub fn take(&mut self) -> String {
        self.input.take()
    }

    /// Pasted text goes in at the cursor, line breaks as typed ones.
    pub fn paste(&mut self, text: &str) {
        self.input.insert_str(&text.replace('\r', "\n"));
    }

    /// Loads a queued prompt to be edited in place of what was typed.
    pub fn edit(&mut self, entry: QueueEntry) {
        self.input.set(&entry.prompt);
        self.editing = Some(entry);
    }

    /// The queued prompt being edited.
    pub fn editing(&self) -> Option<&QueueEntry> {
        self.editing.as_ref()
    }

    /// Stops editing the queued prompt (the text stays); returns it.
    pub fn stop_editing(&mut self) -> Option<QueueEntry> {
        self.editing.take()
    }

    /// Rows the box needs: its lines (at most [`MAX_ROWS`]) and borders.
    pub fn height(&self) -> u16 {
        (self.input.text().matches('\n').count() as u16 + 1).clamp(1, MAX_ROWS) + 2
    }

    /// An editing key; returns whether it was taken.
    pub fn on_key(&mut self, key: KeyEvent) -> bool {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        match key.code {
            KeyCode::Char('j') if ctrl => self.input.insert('\n'),
            KeyCode::Char('u') if ctrl => self.input.kill_line(),
            KeyCode::Char('a') if ctrl => self.input.home(),
            KeyCode::Char('e') if ctrl => self.input.end(),
            KeyCode::Enter if shift || alt => self.input.insert('\n'),
            KeyCode::Up => self.input.up(),
            KeyCode::Down => self.input.down(),
            KeyCode::Left => self.input.left(),
            KeyCode::Right => self.input.right(),
            KeyCode::Home => self.input.home(),
            KeyCode::End => self.input.end(),
            KeyCode::Backspace => self.input.backspace(),
            KeyCode::Delete => self.input.delete(),
            KeyCode::Char(c) if !ctrl => self.input.insert(c),
            _ => return false,
        }
        true
    }

    /// `focused`: keys come here (the cursor is shown); `turn_running`:
    /// Enter queues the message rather than starting a turn; `plan`: the
    /// session is in plan mode (the title says how to leave it).
    pub fn draw(
        &self,
        frame: &mut Frame<'_>,
        area: Rect,
        focused: bool,
        turn_running: bool,
        plan: bool,
    ) {
        let title = match (self.editing.is_some(), turn_running, plan) {
            (true, _, _) => " Edit queued prompt (Enter saves, Esc cancels) ",
            (false, true, false) => " Message — Enter queues it ",
            (false, true, true) => " Message (plan mode) — Enter queues it ",
            (false, false, false) => " Message ",
            (false, false, true) => " Message (plan mode; Shift+Tab leaves) ",
        };
        let mut block = super::panel::block(focused).title(title);
        // A message of more lines than the box shows (a paste) says how
        // many it holds.
        let lines = self.input.text().split('\n').count();
        if lines > usize::from(area.height.saturating_sub(2).max(1)) {
            block = block.title_bottom(
                Line::styled(
                    format!(" {lines} lines "),
                    ratatui::style::Style::default().fg(ratatui::style::Color::DarkGray),
                )
                .right_aligned(),
            );
        }
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let (row, col) = self.input.cursor_position();
        let rows = usize::from(inner.height.max(1));
        let first = row.saturating_sub(rows - 1);
        let text: Vec<Line<'_>> = self
            .input
            .text()
            .split('\n')
            .skip(first)
            .take(rows)
            .map(|l| Line::raw(super::wrap::clean(l).into_owned()))
            .collect();
        let cols = usize::from(inner.width.max(1));
        let skip_cols = col.saturating_sub(cols - 1);
        frame.render_widget(Paragraph::new(text).scroll((0, skip_cols as u16)), inner);
        if focused {
            frame.set_cursor_position(Position::new(
                inner.x + (col - skip_cols) as u16,
                inner.y + (row - first) as u16,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_tab_shows_as_spaces_and_the_cursor_follows() {
        let mut input = InputBox::new(10, 100);
        input.paste("a\tb");
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(20, 3)).unwrap();
        terminal
            .draw(|frame| input.draw(frame, frame.area(), true, false, false))
            .unwrap();
        let screen = terminal.backend().to_string();
        assert!(screen.contains("│a   b"), "{screen}");
        terminal.backend_mut().assert_cursor_position((6, 1));
        assert_eq!(input.text(), "a\tb", "the prompt keeps its tab");
    }

    #[test]
    fn takes_editing_keys_and_leaves_the_rest_to_the_app() {
        let mut input = InputBox::new(10, 100);
        for c in "ab".chars() {
            assert!(input.on_key(KeyEvent::from(KeyCode::Char(c))));
        }
        assert!(input.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT)));
        assert!(input.on_key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL)));
        assert_eq!(input.text(), "ab\n\n");
        for code in [KeyCode::Enter, KeyCode::Tab, KeyCode::Esc, KeyCode::PageUp] {
            assert!(!input.on_key(KeyEvent::from(code)), "{code:?}");
        }
        assert!(!input.on_key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL)));
        assert_eq!(input.height(), 3 + 2);
    }
}
