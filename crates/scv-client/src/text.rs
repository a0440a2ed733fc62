//! Showing untrusted text (model output, commands, tool output) to a
//! person: control characters become visible symbols, so nothing reaches a
//! terminal or a chat that could move the cursor, rewrite a line, set the
//! clipboard (OSC 52) or reorder text (bidi overrides) — what is shown is
//! what will run.

use std::borrow::Cow;

/// `text` with every control character except newline and tab shown
/// visibly: C0 controls as their Unicode control pictures (`␛`, `␍`, …),
/// DEL as `␡`, C1 controls and bidirectional overrides as `<U+XXXX>`.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
            '\u{7f}' => out.push('␡'),
            c if needs_escape(c) => out.push_str(&format!("<U+{:04X}>", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` for the clipboard: control characters (but newline and tab) and
/// bidirectional overrides removed. A pasted answer must not carry a
/// bracketed-paste end (`ESC [ 201 ~`) followed by a command into the
/// shell it is pasted into, nor anything else a terminal would act on.
pub fn for_clipboard(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|c| !needs_escape(*c)).collect())
}

fn needs_escape(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c if c.is_control() => true,
        // Bidirectional embeddings, overrides and isolates.
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_visible_and_plain_text_is_borrowed() {
        assert!(matches!(visible("plain\ttext\n"), Cow::Borrowed(_)));
        assert_eq!(
            visible("a\x1b]52;c;cHduZWQ=\x07b\rc\x7f"),
            "a␛]52;c;cHduZWQ=␇b␍c␡"
        );
        assert_eq!(visible("x\u{202e}y\u{9b}"), "x<U+202E>y<U+009B>");
    }

    #[test]
    fn clipboard_text_loses_every_control_but_lines_and_tabs() {
        assert_eq!(
            for_clipboard("ls\x1b[201~\nrm -rf ~\r\t\u{9b}x\u{202e}"),
            "ls[201~\nrm -rf ~\tx"
        );
        assert!(matches!(for_clipboard("plain\n"), Cow::Borrowed(_)));
    }
}
