//! Markdown to styled lines: headings, emphasis, lists, inline code,
//! fenced code blocks (highlighted when the highlighter is ready), quotes,
//! rules and links. Lines are logical (unwrapped); `wrap` fits them.

use super::highlight;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

pub const CODE_FG: Color = Color::Yellow;

pub fn render(text: &str) -> Vec<Line<'static>> {
    let mut r = Renderer::default();
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
            Tag::Table(_) | Tag::TableHead | Tag::TableRow => self.flush(),
            Tag::TableCell => {
                let style = Style::default().fg(Color::DarkGray);
                if !self.current.is_empty() {
                    self.push_text(" │ ", style);
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
            TagEnd::TableHead | TagEnd::TableRow => self.flush(),
            TagEnd::Table => self.blank(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
