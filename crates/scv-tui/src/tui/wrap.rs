//! Word-wrapping styled lines to a width (display columns, so wide CJK
//! characters count double). Long words are broken; leading indentation of
//! a wrapped line is not repeated, but a gutter is (`  │ ` before tool
//! output and diffs): each continuation line starts with it too.
//!
//! Text reaches the screen only through here, so this is also where tabs
//! become spaces to the next tab stop and control characters become
//! visible symbols (the terminal never gets them raw; ratatui would drop
//! them silently, which is how tabs used to vanish). Sources expand tabs
//! relative to their own text first ([`clean`]), so a gutter or a code
//! bar in front does not shift the stops.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use scv_client::text::visible;
use std::borrow::Cow;
use unicode_segmentation::UnicodeSegmentation;
use unicode_width::UnicodeWidthStr;

/// Columns between tab stops.
pub const TAB_WIDTH: usize = 4;

/// `text` with control characters made visible and tabs expanded to the
/// next tab stop, columns counted from the start of each of its lines.
pub fn clean(text: &str) -> Cow<'_, str> {
    let shown = visible(text);
    if !shown.contains('\t') {
        return shown;
    }
    let mut out = String::with_capacity(shown.len() + 16);
    let mut col = 0;
    for g in shown.graphemes(true) {
        match g {
            "\t" => {
                let n = TAB_WIDTH - col % TAB_WIDTH;
                out.extend(std::iter::repeat_n(' ', n));
                col += n;
            }
            "\n" => {
                out.push('\n');
                col = 0;
            }
            g => {
                out.push_str(g);
                col += g.width();
            }
        }
    }
    Cow::Owned(out)
}

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
    if let Some((gutter, rest)) = split_gutter(line) {
        let gutter_width = gutter.content.width();
        if gutter_width < width {
            let mut inner = Vec::new();
            wrap_one(&rest, width - gutter_width, &mut inner);
            for wrapped in inner {
                let mut spans = vec![gutter.clone()];
                spans.extend(wrapped.spans);
                out.push(Line::from(spans).style(line.style));
            }
            return;
        }
    }
    // Grapheme clusters, each with its width as the terminal (and
    // ratatui's buffer) counts it: a flag (two regional indicators), an
    // emoji with a skin tone or a ZWJ sequence is one cell group, never
    // split over two lines nor counted as the sum of its parts.
    let mut cells: Vec<(String, usize, Style)> = Vec::new();
    let mut col = 0;
    for span in &line.spans {
        let style = line.style.patch(span.style);
        for g in visible(&span.content).graphemes(true) {
            match g {
                "\t" => {
                    let n = TAB_WIDTH - col % TAB_WIDTH;
                    cells.extend(std::iter::repeat_n((" ".to_string(), 1, style), n));
                    col += n;
                }
                // A line has no line breaks; one left over is shown.
                "\n" | "\r\n" => {
                    cells.push(("␊".to_string(), 1, style));
                    col += 1;
                }
                g => {
                    let w = g.width();
                    cells.push((g.to_string(), w, style));
                    col += w;
                }
            }
        }
    }
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
            let w = cells[end].1;
            if used + w > width && end > start {
                break;
            }
            if cells[end].0 == " " {
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

/// A line's leading gutter (a first span of spaces and one `│`, ending
/// `│ `) and the rest of it.
fn split_gutter(line: &Line<'static>) -> Option<(Span<'static>, Line<'static>)> {
    let first = line.spans.first()?;
    let text = first.content.as_ref();
    let is_gutter = text.ends_with("│ ")
        && text.chars().filter(|&c| c == '│').count() == 1
        && text.chars().all(|c| c == ' ' || c == '│')
        && line.spans.len() > 1;
    if !is_gutter {
        return None;
    }
    let rest = Line::from(line.spans[1..].to_vec()).style(line.style);
    Some((first.clone(), rest))
}

/// Groups cells of equal style into spans.
fn spans_of(cells: &[(String, usize, Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for (c, _, s) in cells {
        let s = *s;
        if style != Some(s) {
            if let Some(prev) = style {
                spans.push(Span::styled(std::mem::take(&mut text), prev));
            }
            style = Some(s);
        }
        text.push_str(c);
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
    fn a_gutter_starts_every_continuation_line() {
        let line = Line::from(vec![Span::raw("  │ "), Span::raw("alpha beta gamma delta")]);
        assert_eq!(
            texts(&wrap_lines(&[line], 15)),
            ["  │ alpha beta", "  │ gamma delta"]
        );
        // Not a gutter: wrapped as text.
        let line = Line::from(vec![Span::raw("  "), Span::raw("alpha beta gamma")]);
        assert_eq!(texts(&wrap_lines(&[line], 12)), ["  alpha", "beta gamma"]);
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
    fn tabs_go_to_the_next_stop_and_controls_show() {
        assert_eq!(clean("     1\tdef add(a, b):"), "     1  def add(a, b):");
        assert_eq!(clean("\tx\n ab\ty"), "    x\n ab y");
        assert_eq!(clean("a\u{1b}[2Jb"), "a␛[2Jb");
        let lines = vec![Line::from(vec![Span::raw("ab"), Span::raw("\tc\u{7}")])];
        assert_eq!(texts(&wrap_lines(&lines, 20)), ["ab  c␇"]);
    }

    #[test]
    fn wide_characters_take_two_columns() {
        let lines = vec![Line::from("你好世界你好")];
        assert_eq!(texts(&wrap_lines(&lines, 5)), ["你好", "世界", "你好"]);
    }

    #[test]
    fn a_flag_is_one_two_cell_grapheme_never_split() {
        // Three flags (two regional indicators each) at 3 columns: one a
        // line, whole; counted by character, the second would be cut
        // between its indicators, which terminals draw as ghost glyphs.
        let lines = vec![Line::from("🇺🇸🇫🇷🇩🇪")];
        assert_eq!(texts(&wrap_lines(&lines, 3)), ["🇺🇸", "🇫🇷", "🇩🇪"]);
        // A ZWJ family and a skin tone are one 2-cell cluster each: two
        // fit in 4 columns (counted by character they took 6 and 4).
        let lines = vec![Line::from("👨‍👩‍👧👍🏽x")];
        assert_eq!(texts(&wrap_lines(&lines, 4)), ["👨‍👩‍👧👍🏽", "x"]);
        assert_eq!(clean("🇺🇸\tx"), "🇺🇸  x");
    }
}
