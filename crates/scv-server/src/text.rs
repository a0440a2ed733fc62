//! Small text helpers shared by the server's modules.

/// `text` on one line (runs of whitespace become one space), cut to at most
/// `max_chars` characters with an ellipsis.
pub(crate) fn one_line(text: &str, max_chars: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// The largest index `<= index` that is a character boundary of `text`.
pub(crate) fn floor_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The smallest index `>= index` that is a character boundary of `text`.
pub(crate) fn ceil_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// `text` cut to at most `max` bytes, on a character boundary.
pub(crate) fn cut(text: &str, max: usize) -> &str {
    &text[..floor_boundary(text, max)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_never_split_a_character() {
        let text = "aé€";
        assert_eq!(cut(text, 2), "a");
        assert_eq!(cut(text, 3), "aé");
        assert_eq!(ceil_boundary(text, 2), 3);
        assert_eq!(one_line(" a \n b  c ", 3), "a b…");
    }
}
