//! The multi-line input box and the prompt history behind Up/Down.

use std::collections::VecDeque;
use unicode_segmentation::UnicodeSegmentation;

#[derive(Default)]
pub struct Input {
    text: String,
    /// Byte index of the cursor in `text`.
    cursor: usize,
    history: VecDeque<String>,
    history_bytes: usize,
    max_items: usize,
    max_bytes: usize,
    /// Position while browsing history, and the draft it replaced.
    browsing: Option<(usize, String)>,
}

impl Input {
    pub fn new(max_items: usize, max_bytes: usize) -> Input {
        Input {
            max_items,
            max_bytes,
            ..Input::default()
        }
    }

    pub fn set_bounds(&mut self, max_items: usize, max_bytes: usize) {
        self.max_items = max_items;
        self.max_bytes = max_bytes;
        self.enforce();
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn set(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.browsing = None;
    }

    /// Takes the text out (for sending) and remembers it in the history.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        self.remember(text.clone());
        text
    }

    /// Puts a prompt in the history without sending it (a resumed
    /// session's past prompts, prompts it left unsent).
    pub fn remember(&mut self, text: String) {
        if !text.trim().is_empty() && self.history.back() != Some(&text) {
            self.history_bytes += text.len();
            self.history.push_back(text);
            self.enforce();
        }
    }

    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    fn enforce(&mut self) {
        while !self.history.is_empty()
            && (self.history.len() > self.max_items || self.history_bytes > self.max_bytes)
        {
            if let Some(old) = self.history.pop_front() {
                self.history_bytes -= old.len();
            }
        }
    }

    /// Replaces the text from byte `start` to the cursor with `with`.
    pub fn replace_before_cursor(&mut self, start: usize, with: &str) {
        let start = start.min(self.cursor);
        self.text.replace_range(start..self.cursor, with);
        self.cursor = start + with.len();
        self.browsing = None;
    }

    pub fn insert(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    pub fn insert_str(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    // The cursor moves, and deletes, by grapheme cluster (what shows as
    // one character: a flag, an emoji with a skin tone, a letter with its
    // accents), never into the middle of one.

    pub fn backspace(&mut self) {
        if let Some(g) = self.text[..self.cursor].graphemes(true).next_back() {
            let start = self.cursor - g.len();
            self.text.replace_range(start..self.cursor, "");
            self.cursor = start;
        }
    }

    pub fn delete(&mut self) {
        if let Some(g) = self.text[self.cursor..].graphemes(true).next() {
            let end = self.cursor + g.len();
            self.text.replace_range(self.cursor..end, "");
        }
    }

    pub fn left(&mut self) {
        if let Some(g) = self.text[..self.cursor].graphemes(true).next_back() {
            self.cursor -= g.len();
        }
    }

    pub fn right(&mut self) {
        if let Some(g) = self.text[self.cursor..].graphemes(true).next() {
            self.cursor += g.len();
        }
    }

    pub fn home(&mut self) {
        self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
    }

    pub fn end(&mut self) {
        self.cursor += self.text[self.cursor..]
            .find('\n')
            .unwrap_or(self.text.len() - self.cursor);
    }

    /// Deletes back to the start of the line (Ctrl+U).
    pub fn kill_line(&mut self) {
        let start = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Up: previous line, or older history on the first line.
    pub fn up(&mut self) {
        if !self.on_first_line() {
            self.vertical(-1);
            return;
        }
        let next = match &self.browsing {
            None if self.history.is_empty() => return,
            None => self.history.len() - 1,
            Some((0, _)) => return,
            Some((i, _)) => i - 1,
        };
        let draft = match self.browsing.take() {
            Some((_, draft)) => draft,
            None => self.text.clone(),
        };
        self.text = self.history[next].clone();
        self.cursor = self.text.len();
        self.browsing = Some((next, draft));
    }

    /// Down: next line, or newer history on the last line.
    pub fn down(&mut self) {
        if !self.on_last_line() {
            self.vertical(1);
            return;
        }
        match self.browsing.take() {
            None => {}
            Some((i, draft)) if i + 1 >= self.history.len() => {
                self.text = draft;
                self.cursor = self.text.len();
            }
            Some((i, draft)) => {
                self.text = self.history[i + 1].clone();
                self.cursor = self.text.len();
                self.browsing = Some((i + 1, draft));
            }
        }
    }

    fn vertical(&mut self, direction: i32) {
        let line_start = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1);
        let column = self.text[line_start..self.cursor].graphemes(true).count();
        let target_start = if direction < 0 {
            let prev_end = line_start - 1;
            self.text[..prev_end].rfind('\n').map_or(0, |i| i + 1)
        } else {
            // Not the last line (checked by the caller): a newline follows.
            line_start
                + self.text[line_start..]
                    .find('\n')
                    .map_or(self.text.len() - line_start, |i| i + 1)
        };
        let target_end = target_start
            + self.text[target_start..]
                .find('\n')
                .unwrap_or(self.text.len() - target_start);
        let line = &self.text[target_start..target_end];
        self.cursor = target_start
            + line
                .grapheme_indices(true)
                .nth(column)
                .map_or(line.len(), |(i, _)| i);
    }

    /// (row, column) of the cursor, in lines and chars.
    pub fn cursor_position(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let row = before.matches('\n').count();
        let col = before.rsplit('\n').next().unwrap_or("");
        // As drawn: tabs to their stops, control characters as symbols.
        let col = super::wrap::clean(col);
        (row, unicode_width::UnicodeWidthStr::width(col.as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cursor_moves_and_deletes_by_grapheme_cluster() {
        let mut input = Input::new(200, 1 << 20);
        // A flag (two code points), a thumbs-up with a skin tone (two),
        // an e with a combining accent (two), a family (seven).
        input.set("a🇫🇷👍🏽e\u{301}👨\u{200d}👩\u{200d}👧\u{200d}👦b");
        input.left();
        input.left();
        input.backspace();
        assert_eq!(input.text(), "a🇫🇷👍🏽👨\u{200d}👩\u{200d}👧\u{200d}👦b");
        input.left();
        input.delete();
        assert_eq!(input.text(), "a🇫🇷👨\u{200d}👩\u{200d}👧\u{200d}👦b");
        input.home();
        input.right();
        input.right();
        assert_eq!(&input.text()[..input.cursor()], "a🇫🇷");
        // Up/Down keep the column in clusters.
        input.set("🇫🇷🇫🇷x\nabcd");
        input.up();
        input.end();
        input.left();
        input.down();
        input.up();
        assert!(input.text().is_char_boundary(input.cursor()));
    }

    #[test]
    fn history_browses_and_restores_the_draft() {
        let mut input = Input::new(200, 1 << 20);
        for p in ["one", "two"] {
            input.set(p);
            input.take();
        }
        input.set("draft");
        input.up();
        assert_eq!(input.text(), "two");
        input.up();
        assert_eq!(input.text(), "one");
        input.up();
        assert_eq!(input.text(), "one");
        input.down();
        input.down();
        assert_eq!(input.text(), "draft");
    }

    #[test]
    fn history_keeps_within_bounds() {
        let mut input = Input::new(2, 10);
        for p in ["aaaa", "bbbb", "cccc"] {
            input.set(p);
            input.take();
        }
        assert_eq!(input.history_len(), 2);
        input.set("dddddddddd");
        input.take();
        assert_eq!(input.history_len(), 1);
    }

    #[test]
    fn up_and_down_move_between_lines_first() {
        let mut input = Input::new(10, 100);
        input.set("old");
        input.take();
        input.insert_str("ab\ncd");
        input.up();
        assert_eq!((input.text(), input.cursor_position()), ("ab\ncd", (0, 2)));
        input.up();
        assert_eq!(input.text(), "old");
    }
}
