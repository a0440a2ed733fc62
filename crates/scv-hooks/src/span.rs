//! Where a value sits in a JSON text, for error messages that give a line.
//!
//! serde_json's `Value` keeps no positions, so a semantic error (an unknown
//! event, a bad regex) is located afterwards: the text, already known to be
//! valid JSON, is walked along the path of the offending value (object keys
//! and array indices) by this small scanner. It only skips and compares; it
//! never builds values.

/// One step of a path into a JSON document.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The 1-based line and column (in characters) of the value at `path` in
/// `text` (for a `Step::Key` last, of the value after the key; see
/// [`key_position`] for the key itself). None when the text does not have it.
pub(crate) fn value_position(text: &str, path: &[Step<'_>]) -> Option<(usize, usize)> {
    let offset = Scanner::new(text).find(path, false)?;
    Some(line_column(text, offset))
}

/// The line and column of the key that is the last step of `path`.
pub(crate) fn key_position(text: &str, path: &[Step<'_>]) -> Option<(usize, usize)> {
    let offset = Scanner::new(text).find(path, true)?;
    Some(line_column(text, offset))
}

/// The 1-based line and column of byte `offset` in `text`.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

struct Scanner<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
}

impl<'t> Scanner<'t> {
    fn new(text: &'t str) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// Consumes `b` (after whitespace), or fails.
    fn eat(&mut self, b: u8) -> Option<()> {
        self.skip_ws();
        (self.peek() == Some(b)).then(|| self.pos += 1)
    }

    /// The byte offset of the value (or key) at `path`.
    fn find(&mut self, path: &[Step<'_>], want_key: bool) -> Option<usize> {
        self.skip_ws();
        let Some((step, rest)) = path.split_first() else {
            return Some(self.pos);
        };
        match *step {
            Step::Key(wanted) => {
                self.eat(b'{')?;
                loop {
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        return None;
                    }
                    let key_at = self.pos;
                    let key = self.string()?;
                    self.eat(b':')?;
                    if key == wanted {
                        if rest.is_empty() && want_key {
                            return Some(key_at);
                        }
                        return self.find(rest, want_key);
                    }
                    self.skip_value()?;
                    self.skip_ws();
                    if self.peek() == Some(b',') {
                        self.pos += 1;
                    }
                }
            }
            Step::Index(wanted) => {
                self.eat(b'[')?;
                let mut index = 0;
                loop {
                    self.skip_ws();
                    if self.peek() == Some(b']') {
                        return None;
                    }
                    if index == wanted {
                        return self.find(rest, want_key);
                    }
                    self.skip_value()?;
                    self.skip_ws();
                    if self.peek() == Some(b',') {
                        self.pos += 1;
                    }
                    index += 1;
                }
            }
        }
    }

    /// Reads a string token (at the cursor) and decodes it.
    fn string(&mut self) -> Option<String> {
        let start = self.pos;
        self.skip_string()?;
        serde_json::from_str(self.text.get(start..self.pos)?).ok()
    }

    fn skip_string(&mut self) -> Option<()> {
        if self.peek() != Some(b'"') {
            return None;
        }
        self.pos += 1;
        loop {
            match self.peek()? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => self.pos += 1,
            }
        }
    }

    fn skip_value(&mut self) -> Option<()> {
        self.skip_ws();
        match self.peek()? {
            b'"' => self.skip_string(),
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.pos += 1;
                loop {
                    self.skip_ws();
                    match self.peek()? {
                        c if c == close => {
                            self.pos += 1;
                            return Some(());
                        }
                        b',' | b':' => self.pos += 1,
                        _ => self.skip_value()?,
                    }
                }
            }
            _ => {
                // A number, true, false or null: up to the next delimiter.
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.pos += 1;
                }
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "{\n  \"a\": [1, {\"x\": \"y\\\"\"}],\n  \"b\": {\n    \"c\": [\n      {\"d\": true},\n      {\"d\": \"é\", \"e\": null}\n    ]\n  }\n}\n";

    #[test]
    fn finds_values_and_keys() {
        use Step::*;
        assert_eq!(value_position(TEXT, &[Key("a")]), Some((2, 8)));
        assert_eq!(
            value_position(TEXT, &[Key("a"), Index(1), Key("x")]),
            Some((2, 18))
        );
        assert_eq!(key_position(TEXT, &[Key("b")]), Some((3, 3)));
        assert_eq!(
            value_position(TEXT, &[Key("b"), Key("c"), Index(1), Key("e")]),
            Some((6, 23))
        );
        assert_eq!(value_position(TEXT, &[Key("b"), Key("c"), Index(2)]), None);
        assert_eq!(value_position(TEXT, &[Key("z")]), None);
    }

    #[test]
    fn escaped_keys_are_decoded() {
        let text = r#"{"\u0050reToolUse": 1}"#;
        assert_eq!(key_position(text, &[Step::Key("PreToolUse")]), Some((1, 2)));
    }
}
