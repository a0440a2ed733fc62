//! Word-wrapping styled lines to a width (display columns, so wide CJK
//! characters count double). Long words are broken; leading indentation of
//! a wrapped line is not repeated.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Wraps each line to `width` columns.
pub fn wrap_lines(lines: &[Line<'static>], width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        wrap_one(line, width, &mut out);
    }
    out
}

fn wrap_one(line: &Line<'static>, width: usize, out: &mut Vec<Line<'static>>) {
    let cells: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|span| {
            let style = line.style.patch(span.style);
            span.content.chars().map(move |c| (c, style))
        })
        .collect();
    if cells.is_empty() {
        out.push(Line::default().style(line.style));
        return;
    }
    let mut start = 0;
    while start < cells.len() {
        let mut used = 0;
        let mut end = start;
        let mut last_space = None;
        while end < cells.len() {
            let w = cells[end].0.width().unwrap_or(0);
            if used + w > width && end > start {
                break;
            }
            if cells[end].0 == ' ' {
                last_space = Some(end);
            }
            used += w;
            end += 1;
        }
        let mut next = end;
        if end < cells.len() {
            if let Some(space) = last_space.filter(|&s| s > start) {
                end = space;
                next = space + 1;
            }
        }
        out.push(spans_of(&cells[start..end]));
        start = next;
    }
}

/// Groups cells of equal style into spans.
fn spans_of(cells: &[(char, Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for &(c, s) in cells {
        if style != Some(s) {
            if let Some(prev) = style {
                spans.push(Span::styled(std::mem::take(&mut text), prev));
            }
            style = Some(s);
        }
        text.push(c);
    }
    if let Some(prev) = style {
        spans.push(Span::styled(text, prev));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_at_words_and_breaks_long_ones() {
        let lines = vec![
            Line::from("the quick brown fox jumps"),
            Line::from("abcdefghijkl"),
            Line::from(""),
        ];
        assert_eq!(
            texts(&wrap_lines(&lines, 10)),
            ["the quick", "brown fox", "jumps", "abcdefghij", "kl", ""]
        );
    }

    #[test]
    fn wide_characters_take_two_columns() {
        let lines = vec![Line::from("你好世界你好")];
        assert_eq!(texts(&wrap_lines(&lines, 5)), ["你好", "世界", "你好"]);
    }
}
