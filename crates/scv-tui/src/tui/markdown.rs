//! Markdown to styled lines: headings, emphasis, lists, inline code,
//! fenced code blocks (highlighted when the highlighter is ready), quotes,
//! rules, links and tables. Lines are logical (unwrapped); `wrap` fits
//! them — except tables, which are laid out here for the width (columns
//! aligned by display width, wide characters included; cells wrapped when
//! the table is wider than the screen; the header bold and underlined).

use super::highlight;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

pub const CODE_FG: Color = Color::Yellow;

pub fn render(text: &str) -> Vec<Line<'static>> {
    render_for(text, 0)
}

/// [`render`] with tables laid out for `width` columns (0: as wide as
/// they are).
pub fn render_for(text: &str, width: u16) -> Vec<Line<'static>> {
    let mut r = Renderer {
        width: usize::from(width),
        ..Renderer::default()
    };
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

#[derive(Default)]
struct Renderer {
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Stack of lists: `None` bullet, `Some(n)` next number.
    lists: Vec<Option<u64>>,
    quote: usize,
    code: Option<(String, String)>,
    link: Option<String>,
    /// The next text starts a list item and needs its marker.
    pending_marker: Option<String>,
    /// The table being read: its rows of cells of spans.
    table: Option<Table>,
    /// Columns to lay tables out for (0: no bound).
    width: usize,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<Vec<Span<'static>>>>,
    /// Rows of the header (they come first).
    head: usize,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::default(), |acc, s| acc.patch(*s))
    }

    fn prefix(&self) -> String {
        let mut p = "▎ ".repeat(self.quote);
        p.push_str(&"  ".repeat(self.lists.len().saturating_sub(1)));
        p
    }

    fn push_text(&mut self, text: &str, style: Style) {
        if let Some(table) = &mut self.table {
            if let Some(cell) = table.rows.last_mut().and_then(|row| row.last_mut()) {
                cell.push(Span::styled(text.to_string(), style));
            }
            return;
        }
        if self.current.is_empty() {
            let mut prefix = self.prefix();
            if let Some(marker) = self.pending_marker.take() {
                prefix.push_str(&marker);
            } else if !self.lists.is_empty() {
                prefix.push_str("  ");
            }
            if !prefix.is_empty() {
                let quote_style = Style::default().fg(Color::DarkGray);
                self.current.push(Span::styled(prefix, quote_style));
            }
        }
        self.current.push(Span::styled(text.to_string(), style));
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            self.lines
                .push(Line::from(std::mem::take(&mut self.current)));
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Event::Text(text) => code.push_str(&text),
                Event::End(TagEnd::CodeBlock) => self.end_code(),
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                let style = self.style();
                let text = super::wrap::clean(&text);
                for (i, part) in text.split('\n').enumerate() {
                    if i > 0 {
                        self.flush();
                    }
                    if !part.is_empty() {
                        self.push_text(part, style);
                    }
                }
            }
            Event::Code(code) => {
                let style = self.style().fg(CODE_FG);
                self.push_text(&super::wrap::clean(&code), style);
            }
            Event::SoftBreak => {
                let style = self.style();
                self.push_text(" ", style);
            }
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.blank();
                self.lines.push(Line::styled(
                    "─".repeat(40),
                    Style::default().fg(Color::DarkGray),
                ));
                self.lines.push(Line::default());
            }
            Event::TaskListMarker(done) => {
                let style = self.style();
                self.push_text(if done { "[x] " } else { "[ ] " }, style);
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let style = self.style();
                self.push_text(html.trim_end(), style);
            }
            Event::FootnoteReference(_) | Event::InlineMath(_) | Event::DisplayMath(_) => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { level, .. } => {
                self.blank();
                let mut style = Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD);
                if level == HeadingLevel::H1 {
                    style = style.add_modifier(Modifier::UNDERLINED);
                }
                self.styles.push(style);
            }
            Tag::Paragraph if self.lists.is_empty() => self.blank(),
            Tag::Emphasis => self
                .styles
                .push(Style::default().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self
                .styles
                .push(Style::default().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(Style::default().add_modifier(Modifier::CROSSED_OUT)),
            Tag::BlockQuote(_) => {
                self.blank();
                self.quote += 1;
                self.styles
                    .push(Style::default().add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.blank();
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => {
                        lang.split([',', ' ']).next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.blank();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                self.pending_marker = Some(marker);
            }
            Tag::Link { dest_url, .. } => {
                self.styles.push(
                    Style::default()
                        .fg(Color::Blue)
                        .add_modifier(Modifier::UNDERLINED),
                );
                self.link = Some(dest_url.to_string());
            }
            Tag::Table(_) => {
                self.blank();
                self.table = Some(Table::default());
            }
            Tag::TableHead => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                    table.head = 1;
                }
                self.styles
                    .push(Style::default().add_modifier(Modifier::BOLD));
            }
            Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => {
                if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(Vec::new());
                }
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
            }
            TagEnd::Paragraph => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.styles.pop();
                self.quote = self.quote.saturating_sub(1);
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
            }
            TagEnd::Item => self.flush(),
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    let style = Style::default().fg(Color::DarkGray);
                    self.push_text(&format!(" ({url})"), style);
                }
            }
            TagEnd::TableHead => {
                self.styles.pop();
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    let lines = lay_out(table, self.width);
                    self.lines.extend(lines);
                }
                self.blank();
            }
            _ => {}
        }
    }

    fn end_code(&mut self) {
        let Some((lang, code)) = self.code.take() else {
            return;
        };
        // Tab stops count from the code's own first column, not the bar's.
        let code = super::wrap::clean(&code).into_owned();
        let bar = Span::styled("│ ", Style::default().fg(Color::DarkGray));
        let highlighted = (!lang.is_empty())
            .then(|| highlight::highlight(&code, &lang))
            .flatten();
        let body: Vec<Line<'static>> = highlighted.unwrap_or_else(|| {
            code.lines()
                .map(|l| Line::from(Span::styled(l.to_string(), Style::default().fg(CODE_FG))))
                .collect()
        });
        if !lang.is_empty() {
            self.lines
                .push(Line::styled(lang, Style::default().fg(Color::DarkGray)));
        }
        for line in body {
            let mut spans = vec![bar.clone()];
            spans.extend(line.spans);
            self.lines.push(Line::from(spans));
        }
        self.lines.push(Line::default());
    }
}

/// A cell's text and its display width.
fn cell_width(cell: &[Span<'static>]) -> usize {
    cell.iter().map(|s| s.content.width()).sum()
}

/// The table as lines: columns padded to their widest cell (by display
/// width); when that is wider than `width`, the widest columns give up
/// room and their cells wrap at words.
fn lay_out(table: Table, width: usize) -> Vec<Line<'static>> {
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    if columns == 0 {
        return Vec::new();
    }
    let mut widths = vec![1usize; columns];
    for row in &table.rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell_width(cell));
        }
    }
    // Separators: " │ " between columns.
    let room = |widths: &[usize]| widths.iter().sum::<usize>() + 3 * (columns - 1);
    if width > 0 {
        while room(&widths) > width {
            let (widest, w) = widths
                .iter()
                .copied()
                .enumerate()
                .max_by_key(|(_, w)| *w)
                .unwrap_or((0, 0));
            if w <= 4 {
                break;
            }
            widths[widest] = w - 1;
        }
    }
    let rule = Style::default().fg(Color::DarkGray);
    let mut out = Vec::new();
    for (r, row) in table.rows.iter().enumerate() {
        let cells: Vec<Vec<Vec<Span<'static>>>> = (0..columns)
            .map(|i| wrap_cell(row.get(i).map(Vec::as_slice).unwrap_or(&[]), widths[i]))
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1).max(1);
        for line in 0..height {
            let mut spans = Vec::new();
            for (i, cell) in cells.iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(" │ ", rule));
                }
                let part = cell.get(line).cloned().unwrap_or_default();
                let used = cell_width(&part);
                spans.extend(part);
                spans.push(Span::raw(" ".repeat(widths[i].saturating_sub(used))));
            }
            out.push(Line::from(spans));
        }
        if r + 1 == table.head {
            let line = widths
                .iter()
                .map(|w| "─".repeat(*w))
                .collect::<Vec<_>>()
                .join("─┼─");
            out.push(Line::styled(line, rule));
        }
    }
    out
}

/// A cell's spans as lines of at most `width` columns, broken at spaces
/// where it can (a word longer than the column is cut).
fn wrap_cell(cell: &[Span<'static>], width: usize) -> Vec<Vec<Span<'static>>> {
    if cell_width(cell) <= width {
        return vec![cell.to_vec()];
    }
    let mut lines: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0;
    for span in cell {
        for word in span.content.split_inclusive(' ') {
            let mut word = word.to_string();
            loop {
                let w = word.width();
                if used + w.min(width) > width && used > 0 {
                    lines.push(Vec::new());
                    used = 0;
                    if word.trim().is_empty() {
                        break;
                    }
                }
                if w <= width - used {
                    used += w;
                    if let Some(line) = lines.last_mut() {
                        line.push(Span::styled(word, span.style));
                    }
                    break;
                }
                // Longer than a whole line: cut it where the column ends.
                let mut head = String::new();
                let mut head_width = 0;
                // By grapheme: a flag or an emoji sequence is never cut.
                for g in unicode_segmentation::UnicodeSegmentation::graphemes(word.as_str(), true) {
                    let cw = g.width();
                    if head_width + cw > width - used {
                        break;
                    }
                    head.push_str(g);
                    head_width += cw;
                }
                if head.is_empty() {
                    break;
                }
                let rest = word[head.len()..].to_string();
                if let Some(line) = lines.last_mut() {
                    line.push(Span::styled(head, span.style));
                }
                used += head_width;
                word = rest;
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_by_display_width_and_wrap_on_a_narrow_screen() {
        let md = "| name | note |\n|---|---|\n| 中文 | wide |\n| a | a longer note here |\n";
        let lines = plain(&render_for(md, 80));
        assert_eq!(
            lines,
            [
                "name │ note              ",
                "─────┼───────────────────",
                "中文 │ wide              ",
                "a    │ a longer note here",
            ]
        );
        let header = &render_for(md, 80)[0];
        assert!(header.spans[0].style.add_modifier.contains(Modifier::BOLD));
        let narrow = plain(&render_for(md, 16));
        assert!(narrow.iter().all(|l| l.width() <= 16), "{narrow:#?}");
        assert!(
            narrow.iter().any(|l| l.starts_with("a    │ a longer")),
            "{narrow:#?}"
        );
        assert!(
            narrow.iter().any(|l| l.contains("note here")),
            "{narrow:#?}"
        );
    }

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn renders_blocks() {
        let md = "# Title\n\nSome *em* and `code`.\n\n- one\n- two\n  1. nested\n\n```rust\nfn main() {}\n```\n\n> quoted";
        assert_eq!(
            plain(&render(md)),
            [
                "Title",
                "",
                "Some em and code.",
                "",
                "• one",
                "• two",
                "  1. nested",
                "",
                "rust",
                "│ fn main() {}",
                "",
                "▎ quoted"
            ]
        );
    }

    #[test]
    fn styles_inline_code_and_headings() {
        let lines = render("## Head\n\nuse `x`");
        assert!(lines[0].spans[0]
            .style
            .add_modifier
            .contains(Modifier::BOLD));
        let code = lines[2].spans.iter().find(|s| s.content == "x").unwrap();
        assert_eq!(code.style.fg, Some(CODE_FG));
    }
}
