//! How a transcript's reasoning and tool cards draw: a card's title and
//! state, the rule that approved it, its subagents, a file edit's diff
//! (coloured as the file's language) and the output's end.

use super::{SubagentCard, SubagentStatus, ToolCard, COLLAPSED_OUTPUT_LINES};
use crate::tui::{highlight, wrap};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use scv_client::text::visible;
use serde_json::Value;
use std::time::Instant;

/// Lines of a thought shown while it streams (its end; Ctrl+O shows all).
pub const STREAMING_THOUGHT_LINES: usize = 6;
/// Bytes of a streaming thought looked at for those lines, so a long
/// thought costs no more per frame than a short one.
const STREAMING_THOUGHT_BYTES: usize = 600;

pub(super) fn render_reasoning(
    text: &str,
    started: Instant,
    ended: Option<Instant>,
    expanded: bool,
) -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    let body = dim.add_modifier(Modifier::ITALIC);
    let mut lines = Vec::new();
    let shown: &str = match ended {
        Some(ended) => {
            let secs = ended
                .saturating_duration_since(started)
                .as_secs_f64()
                .round() as u64;
            let words = text.split_whitespace().count();
            let plural = if words == 1 { "word" } else { "words" };
            let toggle = if expanded { "" } else { "  (ctrl+o shows it)" };
            lines.push(Line::styled(
                format!("✻ thought for {secs} s · {words} {plural}{toggle}"),
                dim,
            ));
            if !expanded {
                return lines;
            }
            text
        }
        None => {
            lines.push(Line::styled("✻ thinking…", dim));
            if expanded {
                text
            } else {
                let header = lines.len() - 1;
                let mut from = text.len().saturating_sub(STREAMING_THOUGHT_BYTES);
                while !text.is_char_boundary(from) {
                    from += 1;
                }
                let tail = &text[from..];
                let start = tail
                    .rmatch_indices('\n')
                    .nth(STREAMING_THOUGHT_LINES - 1)
                    .map_or(0, |(i, _)| i + 1);
                if from + start > 0 {
                    lines[header] =
                        Line::styled("✻ thinking… (its last lines; ctrl+o shows all)", dim);
                }
                &tail[start..]
            }
        }
    };
    for line in shown.trim().lines() {
        lines.push(Line::from(vec![
            Span::styled("  ", dim),
            Span::styled(super::wrap::clean(line).into_owned(), body),
        ]));
    }
    lines
}

/// A call's title as its card shows it: the command, the path, or the
/// name and arguments (may hold several lines: a command's).
pub fn tool_title(name: &str, arguments: &Value) -> String {
    let arg = |key: &str| arguments.get(key).and_then(Value::as_str).unwrap_or("");
    match name {
        "bash" if arguments.get("background").and_then(Value::as_bool) == Some(true) => {
            format!("$ {} (in the background)", arg("command"))
        }
        "bash" => format!("$ {}", arg("command")),
        "bash_output" => format!("output of {}", arg("process_id")),
        "bash_kill" => format!("stop {}", arg("process_id")),
        "read_file" | "write_file" | "edit_file" | "list_dir" => format!("{name} {}", arg("path")),
        "search" => format!("search /{}/", arg("pattern")),
        "task" => match arguments.get("agent").and_then(Value::as_str) {
            Some(agent) => format!("task «{}» ({agent})", arg("description")),
            None => format!("task «{}»", arg("description")),
        },
        _ => format!("{name} {arguments}"),
    }
}

/// Lines of an answer's end shown on an expanded subagent card.
const SUBAGENT_TAIL_LINES: usize = 6;

/// A subagent's card under its `task` call: one line (two while a call
/// runs or after a failure); expanded, its model and its answer's end too.
/// Its own subagents follow, a line each.
fn render_subagent(card: &SubagentCard, expanded: bool, lines: &mut Vec<Line<'static>>) {
    lines.push(subagent_line(card, "  ↳ "));
    let dim = Style::default().fg(Color::DarkGray);
    let pad = "      ";
    match (&card.status, &card.current) {
        (SubagentStatus::Failed { message, .. }, _) if !message.is_empty() => {
            lines.push(Line::styled(
                format!("{pad}{}", first_line(message)),
                Style::default().fg(Color::Red),
            ));
        }
        (SubagentStatus::Running, Some((title, waiting))) => {
            let (mark, color) = if *waiting {
                ("⏸ awaiting approval: ", Color::Yellow)
            } else {
                ("⚙ ", Color::Cyan)
            };
            lines.push(Line::from(vec![
                Span::raw(pad),
                Span::styled(mark, Style::default().fg(color)),
                Span::styled(first_line(title), Style::default().fg(Color::Gray)),
            ]));
        }
        _ => {}
    }
    if expanded {
        lines.push(Line::styled(
            format!("{pad}model {}", wrap::clean(&card.model)),
            dim,
        ));
        let tail: Vec<&str> = card.tail.trim().lines().collect();
        for line in &tail[tail.len().saturating_sub(SUBAGENT_TAIL_LINES)..] {
            lines.push(Line::from(vec![
                Span::styled(format!("{pad}│ "), dim),
                Span::styled(
                    wrap::clean(line).into_owned(),
                    Style::default().fg(Color::Gray),
                ),
            ]));
        }
    }
    for nested in &card.nested {
        lines.push(subagent_line(nested, "      ↳ "));
    }
    if card.nested_more > 0 {
        lines.push(Line::styled(
            format!("      … {} more subagents", card.nested_more),
            dim,
        ));
    }
}

/// A subagent's one line: state, who, what, steps and tokens.
pub fn subagent_line(card: &SubagentCard, lead: &'static str) -> Line<'static> {
    let (mark, label, color) = match &card.status {
        SubagentStatus::Running => ("◐", "running".to_string(), Color::Cyan),
        SubagentStatus::Completed => ("✓", "completed".to_string(), Color::Green),
        SubagentStatus::Failed { code, .. } => (
            "✗",
            format!("failed ({})", scv_client::text::code_words(code)),
            Color::Red,
        ),
        SubagentStatus::Cancelled => ("◌", "cancelled".to_string(), Color::Yellow),
    };
    let plural = if card.steps == 1 { "step" } else { "steps" };
    // Tokens come with its end; one that ended without saying has none.
    let tokens = match (card.tokens, &card.status) {
        (Some(tokens), _) => format!(" · {} tokens", crate::tui::state::short(tokens)),
        (None, SubagentStatus::Running) => " · … tokens".to_string(),
        (None, _) => String::new(),
    };
    Line::from(vec![
        Span::styled(lead, Style::default().fg(Color::DarkGray)),
        Span::styled(format!("{mark} "), Style::default().fg(color)),
        Span::styled(
            wrap::clean(card.agent.as_deref().unwrap_or("subagent")).into_owned(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(" «{}»  ", first_line(&card.description))),
        Span::styled(label, Style::default().fg(color)),
        Span::styled(
            format!(" · {} {plural}{tokens}", card.steps),
            Style::default().fg(Color::DarkGray),
        ),
    ])
}

/// The first line of `text`, control characters shown.
fn first_line(text: &str) -> String {
    wrap::clean(text.lines().next().unwrap_or("")).into_owned()
}

pub(super) fn render_tool(card: &ToolCard, expanded: bool) -> Vec<Line<'static>> {
    let mut lines = tool_head(card, expanded);
    diff_lines(card, expanded, &mut lines);
    output_lines(card, expanded, &mut lines);
    lines
}

fn gutter() -> Span<'static> {
    Span::styled("  │ ", Style::default().fg(Color::DarkGray))
}

/// The card's title (every line of a command), its state, the rule that
/// approved it, and its subagents.
fn tool_head(card: &ToolCard, expanded: bool) -> Vec<Line<'static>> {
    let (label, color) = card.state.label();
    // Every line of a command shows, as its own line: a second line is a
    // second command. Control characters show as symbols.
    let title = visible(&tool_title(&card.name, &card.arguments)).into_owned();
    let mut title_lines = title.split('\n');
    let mut first = vec![
        Span::styled("● ", Style::default().fg(color)),
        Span::styled(
            title_lines.next().unwrap_or("").to_string(),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::styled(format!("  [{label}]"), Style::default().fg(color)),
    ];
    if !card.subagents.is_empty() && !expanded {
        first.push(Span::styled(
            "  ctrl+o: subagent transcripts",
            Style::default().fg(Color::DarkGray),
        ));
    }
    let mut lines = vec![Line::from(first)];
    for more in title_lines {
        lines.push(Line::from(vec![
            Span::raw("  "),
            Span::styled(
                more.to_string(),
                Style::default().add_modifier(Modifier::BOLD),
            ),
        ]));
    }
    if let Some(rule) = &card.approved_by {
        lines.push(Line::styled(
            format!("  ✓ approved by rule `{}`", visible(rule)),
            Style::default().fg(Color::DarkGray),
        ));
    }
    for child in &card.subagents {
        render_subagent(child, expanded, &mut lines);
    }
    lines
}

/// File edits as a unified diff: numbers, context, the change (12 lines
/// until expanded).
fn diff_lines(card: &ToolCard, expanded: bool, lines: &mut Vec<Line<'static>>) {
    let diff: &[crate::tui::edit_diff::DiffLine] = card.diff.as_deref().unwrap_or(&[]);
    let diff_limit = if expanded { usize::MAX } else { 12 };
    let number = |n: Option<usize>| n.map_or_else(|| "    ".to_string(), |n| format!("{n:>4}"));
    let shown_diff: Vec<&crate::tui::edit_diff::DiffLine> = diff.iter().take(diff_limit).collect();
    // Coloured as the file's language (by its extension) once the
    // highlighter is ready; the sign column keeps red and green.
    let syntax: Option<Vec<Line<'static>>> = card
        .arguments
        .get("path")
        .and_then(Value::as_str)
        .and_then(|path| std::path::Path::new(path).extension()?.to_str())
        .filter(|_| !shown_diff.is_empty())
        .and_then(|ext| {
            let code: Vec<String> = shown_diff
                .iter()
                .map(|l| wrap::clean(&l.text).into_owned())
                .collect();
            highlight::highlight(&(code.join("\n") + "\n"), ext)
        })
        .filter(|h| h.len() >= shown_diff.len());
    for (i, line) in shown_diff.iter().enumerate() {
        let style = match line.sign {
            '-' => Style::default().fg(Color::Red),
            '+' => Style::default().fg(Color::Green),
            _ => Style::default().fg(Color::Gray),
        };
        let numbers = if line.old.is_some() || line.new.is_some() {
            format!("{} {} ", number(line.old), number(line.new))
        } else {
            String::new()
        };
        let mut spans = vec![
            gutter(),
            Span::styled(numbers, Style::default().fg(Color::DarkGray)),
        ];
        match syntax.as_ref().map(|h| &h[i]) {
            Some(coloured) => {
                spans.push(Span::styled(format!("{} ", line.sign), style));
                spans.extend(coloured.spans.iter().cloned());
            }
            None => spans.push(Span::styled(
                format!("{} {}", line.sign, wrap::clean(&line.text)),
                style,
            )),
        }
        lines.push(Line::from(spans));
    }
    if diff.len() > diff_limit {
        lines.push(Line::from(vec![
            gutter(),
            Span::styled(
                format!("… {} more diff lines (ctrl+o)", diff.len() - diff_limit),
                Style::default().fg(Color::DarkGray),
            ),
        ]));
    }
}

/// The output's end (all of it when expanded), and whether the server
/// truncated it.
fn output_lines(card: &ToolCard, expanded: bool, lines: &mut Vec<Line<'static>>) {
    let output: Vec<&str> = card.output.lines().collect();
    let shown = if expanded {
        output.len()
    } else {
        output.len().min(COLLAPSED_OUTPUT_LINES)
    };
    let hidden = output.len() - shown;
    if hidden > 0 {
        lines.push(Line::from(vec![
            gutter(),
            Span::styled(
                format!("… {hidden} earlier lines (ctrl+o to expand)"),
                Style::default().fg(Color::DarkGray),
            ),
        ]));
    }
    for line in &output[output.len() - shown..] {
        lines.push(Line::from(vec![
            gutter(),
            Span::styled(
                wrap::clean(line).into_owned(),
                Style::default().fg(Color::Gray),
            ),
        ]));
    }
    if card.truncated {
        lines.push(Line::from(vec![
            gutter(),
            Span::styled(
                "[output was truncated by the server]",
                Style::default().fg(Color::DarkGray),
            ),
        ]));
    }
}
