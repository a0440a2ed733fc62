//! The transcript: what was said and done, as items that each cache their
//! wrapped lines for the current width. A frame renders only the items in
//! view, walking back from the bottom, so 10,000 items cost no more than a
//! screenful. The transcript keeps within the session's item and byte
//! bounds by dropping its oldest items.

mod cards;

use super::{highlight, markdown, wrap};
use cards::{render_reasoning, render_tool};
pub use cards::{subagent_line, tool_title, STREAMING_THOUGHT_LINES};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::Instant;

/// A user message longer than this many lines is folded to its first
/// [`FOLD_USER_HEAD`] lines until expanded.
const FOLD_USER_LINES: usize = 20;
const FOLD_USER_HEAD: usize = 3;

/// What an item shows before its cache is filled (never, in practice).
static NO_LINES: Vec<Line<'static>> = Vec::new();

/// Tool output lines shown while a card is collapsed.
pub const COLLAPSED_OUTPUT_LINES: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    Proposed,
    AwaitingApproval,
    Running,
    Done,
    Failed,
    Denied,
    /// The turn ended (cancelled, failed) before the call's result.
    Stopped,
}

impl ToolState {
    pub(super) fn label(self) -> (&'static str, Color) {
        match self {
            ToolState::Proposed => ("proposed", Color::DarkGray),
            ToolState::AwaitingApproval => ("awaiting approval", Color::Yellow),
            ToolState::Running => ("running", Color::Cyan),
            ToolState::Done => ("done", Color::Green),
            ToolState::Failed => ("failed", Color::Red),
            ToolState::Denied => ("denied", Color::Red),
            ToolState::Stopped => ("stopped", Color::DarkGray),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ToolCard {
    pub call_id: String,
    pub name: String,
    pub arguments: Value,
    pub state: ToolState,
    pub output: String,
    pub truncated: bool,
    /// The session rule that approved the call, if one did.
    pub approved_by: Option<String>,
    /// The subagents a `task` call started (capability `subagents`), as
    /// [`super::subagents`] last summed them up; at most
    /// [`MAX_CARDS_PER_CALL`].
    pub subagents: Vec<SubagentCard>,
    /// A file edit's unified diff, made when it was proposed.
    pub diff: Option<Vec<super::edit_diff::DiffLine>>,
}

impl ToolCard {
    /// A card for a call just proposed.
    pub fn proposed(call_id: String, name: String, arguments: Value) -> ToolCard {
        ToolCard {
            call_id,
            name,
            arguments,
            state: ToolState::Proposed,
            output: String::new(),
            truncated: false,
            approved_by: None,
            subagents: Vec::new(),
            diff: None,
        }
    }

    /// Puts `card` in (replacing the one of the same child session).
    pub fn set_subagent(&mut self, card: SubagentCard) {
        let at = self
            .subagents
            .iter()
            .position(|c| c.session_id == card.session_id);
        match at {
            Some(at) => self.subagents[at] = card,
            None if self.subagents.len() < MAX_CARDS_PER_CALL => self.subagents.push(card),
            // A `task` call starts one child: more is a server's error.
            None => {}
        }
    }
}

/// Most subagent cards under one `task` call (it starts one child; this
/// only bounds what a misbehaving server could make a card hold).
pub const MAX_CARDS_PER_CALL: usize = 4;

/// Where a subagent is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubagentStatus {
    Running,
    Completed,
    /// `turn.failed`: its code and (cut) message.
    Failed {
        code: String,
        message: String,
    },
    Cancelled,
}

/// One subagent as its card under the `task` call shows it: a summary,
/// small and bounded (its whole transcript is [`super::subagents`]'s).
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentCard {
    pub session_id: String,
    /// The definition it runs; `None`: the general-purpose subagent.
    pub agent: Option<String>,
    pub description: String,
    /// `provider/model`.
    pub model: String,
    pub status: SubagentStatus,
    /// The call it makes now (its title, as a card would show it), and
    /// whether it waits for an approval.
    pub current: Option<(String, bool)>,
    /// Model requests so far (`turn.completed.steps` at the end).
    pub steps: u32,
    /// Input and output tokens, from its `turn.completed` (`None` while it
    /// runs).
    pub tokens: Option<u64>,
    /// The end of its latest answer (shown expanded).
    pub tail: String,
    /// Its own subagents (depth 2 and on), one line each.
    pub nested: Vec<SubagentCard>,
    /// Further ones not listed.
    pub nested_more: usize,
}

impl SubagentCard {
    fn bytes(&self) -> usize {
        self.description.len()
            + self.tail.len()
            + self.current.as_ref().map_or(0, |(t, _)| t.len())
            + self.nested.iter().map(SubagentCard::bytes).sum::<usize>()
    }
}

#[derive(Debug, Clone)]
pub enum ItemKind {
    User(String),
    Assistant {
        text: String,
        streaming: bool,
    },
    Tool(ToolCard),
    /// The model's reasoning (`reasoning.delta`): dimmed while it streams,
    /// one line once the answer starts (`ended`), whole when expanded.
    Reasoning {
        text: String,
        started: Instant,
        ended: Option<Instant>,
    },
    /// A quiet one-line note (compaction, trimming, reconnects).
    Notice(String),
    /// A note of several lines (the first-run note): the first is its
    /// heading; lines starting with four spaces are commands to copy.
    Note(Vec<String>),
    Error {
        code: String,
        message: String,
    },
}

pub struct Item {
    /// Stable while the item lives (ids only grow), so a view can stay
    /// anchored to it while items arrive below or drop off above.
    pub id: u64,
    pub kind: ItemKind,
    /// Bumped on every change; part of the cache key.
    version: u64,
    cache: RefCell<Option<Cached>>,
}

struct Cached {
    width: u16,
    version: u64,
    generation: u64,
    expanded: bool,
    lines: Vec<Line<'static>>,
}

impl Item {
    fn new(id: u64, kind: ItemKind) -> Item {
        Item {
            id,
            kind,
            version: 0,
            cache: RefCell::new(None),
        }
    }

    fn bytes(&self) -> usize {
        match &self.kind {
            ItemKind::User(text) | ItemKind::Notice(text) => text.len(),
            ItemKind::Assistant { text, .. } | ItemKind::Reasoning { text, .. } => text.len(),
            ItemKind::Tool(card) => {
                card.output.len()
                    + card.arguments.to_string().len()
                    + card
                        .diff
                        .iter()
                        .flatten()
                        .map(super::edit_diff::DiffLine::bytes)
                        .sum::<usize>()
                    + card
                        .subagents
                        .iter()
                        .map(SubagentCard::bytes)
                        .sum::<usize>()
            }
            ItemKind::Error { message, .. } => message.len(),
            ItemKind::Note(lines) => lines.iter().map(String::len).sum(),
        }
    }

    /// The wrapped lines for `width`, from the cache when still valid.
    pub fn lines(&self, width: u16, expanded: bool) -> std::cell::Ref<'_, Vec<Line<'static>>> {
        let generation = highlight::generation();
        let valid = matches!(&*self.cache.borrow(), Some(c) if c.width == width
            && c.version == self.version && c.generation == generation && c.expanded == expanded);
        if !valid {
            let lines = wrap::wrap_lines(&self.render(width, expanded), width);
            *self.cache.borrow_mut() = Some(Cached {
                width,
                version: self.version,
                generation,
                expanded,
                lines,
            });
        }
        std::cell::Ref::map(self.cache.borrow(), |c| match c {
            Some(cached) => &cached.lines,
            None => &NO_LINES,
        })
    }

    fn render(&self, width: u16, expanded: bool) -> Vec<Line<'static>> {
        let mut lines = match &self.kind {
            ItemKind::User(text) => {
                let style = Style::default()
                    .fg(Color::White)
                    .add_modifier(Modifier::BOLD);
                // A long message (a paste) shows its first lines and how
                // much more there is, until Ctrl+O expands it.
                let total = text.lines().count();
                let shown = if expanded || total <= FOLD_USER_LINES {
                    total
                } else {
                    FOLD_USER_HEAD
                };
                let mut lines: Vec<Line<'static>> = text
                    .lines()
                    .take(shown)
                    .enumerate()
                    .map(|(i, l)| {
                        let mark = if i == 0 { "› " } else { "  " };
                        Line::from(vec![
                            Span::styled(mark, Style::default().fg(Color::Cyan)),
                            Span::styled(wrap::clean(l).into_owned(), style),
                        ])
                    })
                    .collect();
                if shown < total {
                    lines.push(Line::styled(
                        format!("  [pasted {total} lines — Ctrl+O shows them all]"),
                        Style::default().fg(Color::DarkGray),
                    ));
                }
                lines
            }
            ItemKind::Assistant { text, streaming } => {
                let mut lines = markdown::render_for(text, width);
                if *streaming {
                    lines.push(Line::styled("▍", Style::default().fg(Color::DarkGray)));
                }
                lines
            }
            ItemKind::Tool(card) => render_tool(card, expanded),
            ItemKind::Reasoning {
                text,
                started,
                ended,
            } => render_reasoning(text, *started, *ended, expanded),
            ItemKind::Notice(text) => vec![Line::styled(
                format!("· {text}"),
                Style::default().fg(Color::DarkGray),
            )],
            ItemKind::Note(lines) => lines
                .iter()
                .enumerate()
                .map(|(i, line)| {
                    let style = if i == 0 {
                        Style::default().fg(Color::Yellow)
                    } else if line.starts_with("    ") {
                        Style::default().fg(Color::Cyan)
                    } else {
                        Style::default().fg(Color::Gray)
                    };
                    Line::styled(wrap::clean(line).into_owned(), style)
                })
                .collect(),
            ItemKind::Error { code, message } => vec![Line::from(vec![
                Span::styled(
                    // In words (a message that says it gets none).
                    scv_client::text::failure_heading(code, message)
                        .map_or_else(|| "✗ ".into(), |h| format!("✗ {h}: ")),
                    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
                ),
                Span::styled(message.clone(), Style::default().fg(Color::Red)),
            ])],
        };
        lines.push(Line::default());
        lines
    }
}

pub struct Transcript {
    items: VecDeque<Item>,
    next_id: u64,
    bytes: usize,
    max_items: usize,
    max_bytes: usize,
}

/// Where the transcript view is: following the bottom, or held at a line
/// (an item and a row of its wrapped lines) while the reader looks back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Viewport {
    #[default]
    Bottom,
    Top {
        item: u64,
        line: usize,
    },
}

/// One frame of the transcript.
pub struct View {
    pub lines: Vec<Line<'static>>,
    /// Rows below the view (0 when following the bottom).
    pub below: usize,
    /// Where the first row shown is.
    pub top: (u64, usize),
    /// The view reaches the last row: it might as well follow the bottom.
    pub at_bottom: bool,
}

impl Default for Transcript {
    fn default() -> Self {
        Transcript::new(10_000, 8 * 1024 * 1024)
    }
}

impl Transcript {
    pub fn new(max_items: usize, max_bytes: usize) -> Transcript {
        Transcript {
            items: VecDeque::new(),
            next_id: 0,
            bytes: 0,
            max_items: max_items.max(1),
            max_bytes: max_bytes.max(1),
        }
    }

    /// Applies the bounds a session advertised.
    pub fn set_bounds(&mut self, max_items: usize, max_bytes: usize) {
        self.max_items = max_items.max(1);
        self.max_bytes = max_bytes.max(1);
        self.enforce();
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The last answer, as the clipboard takes it (`/copy`).
    pub fn last_answer(&self) -> Option<String> {
        self.items.iter().rev().find_map(|item| match &item.kind {
            ItemKind::Assistant { text, .. } if !text.is_empty() => {
                Some(scv_client::text::for_clipboard(text).into_owned())
            }
            _ => None,
        })
    }

    pub fn items(&self) -> &VecDeque<Item> {
        &self.items
    }

    pub fn clear(&mut self) {
        self.items.clear();
        self.bytes = 0;
    }

    /// The id the next pushed item gets (a place to truncate back to).
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Drops the items from `id` on (a rewound conversation).
    pub fn truncate_from(&mut self, id: u64) {
        while self.items.back().is_some_and(|item| item.id >= id) {
            if let Some(item) = self.items.pop_back() {
                self.bytes = self.bytes.saturating_sub(item.bytes());
            }
        }
    }

    pub fn push(&mut self, kind: ItemKind) {
        let item = Item::new(self.next_id, kind);
        self.next_id += 1;
        self.bytes += item.bytes();
        self.items.push_back(item);
        self.enforce();
    }

    /// Changes the last item matching `pick`, keeping the byte count.
    pub fn update_last(
        &mut self,
        pick: impl Fn(&ItemKind) -> bool,
        change: impl FnOnce(&mut ItemKind),
    ) -> bool {
        let Some(item) = self.items.iter_mut().rev().find(|i| pick(&i.kind)) else {
            return false;
        };
        self.bytes -= item.bytes();
        change(&mut item.kind);
        item.version += 1;
        self.bytes += item.bytes();
        self.enforce();
        true
    }

    /// The tool card of `call_id`.
    pub fn update_tool(&mut self, call_id: &str, change: impl FnOnce(&mut ToolCard)) -> bool {
        self.update_last(
            |k| matches!(k, ItemKind::Tool(card) if card.call_id == call_id),
            |k| {
                if let ItemKind::Tool(card) = k {
                    change(card);
                }
            },
        )
    }

    /// A fragment of the model's thinking: into the thought streaming now,
    /// or a new one.
    pub fn reasoning_delta(&mut self, content: String, now: Instant) {
        let appended = self.update_last(is_thinking, |k| {
            if let ItemKind::Reasoning { text, .. } = k {
                text.push_str(&content);
            }
        });
        if !appended {
            self.push(ItemKind::Reasoning {
                text: content,
                started: now,
                ended: None,
            });
        }
    }

    /// The answer (or a tool call, or the turn's end) came: the thought
    /// collapses to one line.
    pub fn end_reasoning(&mut self, now: Instant) {
        // A thought streams at the end: no walk through a long transcript.
        if !self
            .items
            .iter()
            .rev()
            .take(8)
            .any(|i| is_thinking(&i.kind))
        {
            return;
        }
        self.update_last(is_thinking, |k| {
            if let ItemKind::Reasoning { ended, .. } = k {
                *ended = Some(now);
            }
        });
    }

    /// A fragment of the answer: into the answer streaming now, or a new
    /// one.
    pub fn assistant_delta(&mut self, content: String, now: Instant) {
        if !content.is_empty() {
            self.end_reasoning(now);
        }
        let appended = self.update_last(is_streaming, |k| {
            if let ItemKind::Assistant { text, .. } = k {
                text.push_str(&content);
            }
        });
        if !appended {
            self.push(ItemKind::Assistant {
                text: content,
                streaming: true,
            });
        }
    }

    /// The whole answer replaces what streamed in.
    pub fn assistant_completed(&mut self, content: String, now: Instant) {
        if !content.is_empty() {
            self.end_reasoning(now);
        }
        let finished = self.update_last(is_streaming, |k| {
            *k = ItemKind::Assistant {
                text: content.clone(),
                streaming: false,
            }
        });
        if !finished && !content.is_empty() {
            self.push(ItemKind::Assistant {
                text: content,
                streaming: false,
            });
        }
    }

    /// A call was proposed: its card.
    /// A call proposed in the session's workspace `cwd` (a file edit's
    /// diff is made now, before anything changed).
    pub fn tool_proposed(
        &mut self,
        call_id: String,
        name: String,
        arguments: Value,
        cwd: Option<&str>,
        now: Instant,
    ) {
        self.end_reasoning(now);
        let mut card = ToolCard::proposed(call_id, name, arguments);
        card.diff = super::edit_diff::of_call(cwd, &card.name, &card.arguments);
        self.push(ItemKind::Tool(card));
    }

    /// A call ended; `denied`: the user denied it (the protocol says only
    /// `success: false`).
    pub fn tool_completed(
        &mut self,
        call_id: &str,
        success: bool,
        denied: bool,
        output: String,
        truncated: bool,
    ) {
        self.update_tool(call_id, |card| {
            card.state = match (success, denied) {
                (true, _) => ToolState::Done,
                (false, true) => ToolState::Denied,
                (false, false) => ToolState::Failed,
            };
            // A denied call's result is written for the model ("do not
            // retry it unchanged"); the card says what happened instead.
            card.output = if denied && !success {
                "you denied it".into()
            } else {
                output
            };
            card.truncated = truncated && !denied;
        });
    }

    /// The turn ended: nothing streams any more.
    pub fn end_streaming(&mut self, now: Instant) {
        self.end_reasoning(now);
        self.update_last(is_streaming, |k| {
            if let ItemKind::Assistant { streaming, .. } = k {
                *streaming = false;
            }
        });
    }

    /// The turn ended: cards still proposed, awaiting approval or running
    /// will get no result, and say so instead of waiting forever.
    pub fn settle_unfinished(&mut self) {
        let open = |k: &ItemKind| matches!(k, ItemKind::Tool(c) if matches!(c.state, ToolState::Proposed | ToolState::AwaitingApproval | ToolState::Running));
        while self.update_last(open, |k| {
            if let ItemKind::Tool(card) = k {
                card.state = ToolState::Stopped;
            }
        }) {}
    }

    /// The card of `call_id` (the latest of that id).
    pub fn tool(&self, call_id: &str) -> Option<&ToolCard> {
        self.items.iter().rev().find_map(|i| match &i.kind {
            ItemKind::Tool(card) if card.call_id == call_id => Some(card),
            _ => None,
        })
    }

    fn enforce(&mut self) {
        while self.items.len() > 1
            && (self.items.len() > self.max_items || self.bytes > self.max_bytes)
        {
            if let Some(old) = self.items.pop_front() {
                self.bytes -= old.bytes();
            }
        }
    }

    /// The index of item `id`, or of the first item after it when it is
    /// gone (dropped off the top).
    fn index_of(&self, id: u64) -> usize {
        self.items.partition_point(|item| item.id < id)
    }

    /// `height` rows of the view at `at`.
    pub fn view(&self, width: u16, height: u16, at: Viewport, expanded: bool) -> View {
        match at {
            Viewport::Bottom => self.bottom(width, height, expanded),
            Viewport::Top { item, line } => {
                let view = self.from(item, line, width, height, expanded);
                if view.at_bottom {
                    // Nothing left below: show a full last screen.
                    self.bottom(width, height, expanded)
                } else {
                    view
                }
            }
        }
    }

    /// The last `height` rows.
    fn bottom(&self, width: u16, height: u16, expanded: bool) -> View {
        let need = usize::from(height);
        let mut collected: Vec<Line<'static>> = Vec::with_capacity(need);
        let mut top = (self.items.front().map_or(0, |i| i.id), 0);
        'items: for item in self.items.iter().rev() {
            let lines = item.lines(width, expanded);
            for (row, line) in lines.iter().enumerate().rev() {
                collected.push(line.clone());
                top = (item.id, row);
                if collected.len() >= need {
                    break 'items;
                }
            }
        }
        collected.reverse();
        View {
            lines: collected,
            below: 0,
            top,
            at_bottom: true,
        }
    }

    /// `height` rows starting at row `line` of item `id`, and how many
    /// rows follow them.
    fn from(&self, id: u64, line: usize, width: u16, height: u16, expanded: bool) -> View {
        let need = usize::from(height);
        let start = self.index_of(id);
        // A gone item: start at the next one's first row.
        let line = match self.items.get(start) {
            Some(item) if item.id == id => line,
            _ => 0,
        };
        let mut collected = Vec::with_capacity(need);
        let mut below = 0;
        let mut top = None;
        for (index, item) in self.items.iter().enumerate().skip(start) {
            let lines = item.lines(width, expanded);
            // After a resize the item may have fewer rows: keep the item.
            let first = if index == start {
                line.min(lines.len().saturating_sub(1))
            } else {
                0
            };
            for (row, l) in lines.iter().enumerate().skip(first) {
                if collected.len() < need {
                    top.get_or_insert((item.id, row));
                    collected.push(l.clone());
                } else {
                    below += 1;
                }
            }
        }
        View {
            at_bottom: below == 0,
            lines: collected,
            below,
            top: top.unwrap_or((id, 0)),
        }
    }

    /// The position `rows` rows below (positive) or above (negative)
    /// `from`, clamped to the transcript.
    pub fn offset(
        &self,
        from: (u64, usize),
        rows: i64,
        width: u16,
        expanded: bool,
    ) -> (u64, usize) {
        let Some(mut index) = Some(self.index_of(from.0)).filter(|i| *i < self.items.len()) else {
            return from;
        };
        let mut line = if self.items[index].id == from.0 {
            from.1
        } else {
            0
        };
        let mut rows = rows;
        while rows < 0 {
            if line > 0 {
                let step = (line as i64).min(-rows);
                line -= step as usize;
                rows += step;
            } else if index > 0 {
                index -= 1;
                line = self.items[index].lines(width, expanded).len();
            } else {
                break;
            }
        }
        while rows > 0 {
            let count = self.items[index].lines(width, expanded).len();
            let left = count.saturating_sub(line + 1) as i64;
            if left >= rows {
                line += rows as usize;
                rows = 0;
            } else if index + 1 < self.items.len() {
                rows -= left + 1;
                index += 1;
                line = 0;
            } else {
                line = count.saturating_sub(1);
                break;
            }
        }
        (self.items[index].id, line)
    }
}

/// A thought still streaming in.
fn is_thinking(kind: &ItemKind) -> bool {
    matches!(kind, ItemKind::Reasoning { ended: None, .. })
}

/// The answer still streaming in.
fn is_streaming(kind: &ItemKind) -> bool {
    matches!(
        kind,
        ItemKind::Assistant {
            streaming: true,
            ..
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_within_item_and_byte_bounds() {
        let mut t = Transcript::new(3, 1000);
        for i in 0..5 {
            t.push(ItemKind::User(format!("prompt {i}")));
        }
        assert_eq!(t.len(), 3);
        t.push(ItemKind::Notice("x".repeat(990)));
        assert!(t.bytes() <= 1000);
        assert_eq!(t.len(), 2);
    }

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn an_edit_card_shows_a_numbered_diff_with_context() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("m.rs"), "fn main() {\n    let x = 1;\n}\n").unwrap();
        let mut t = Transcript::default();
        t.tool_proposed(
            "c".into(),
            "edit_file".into(),
            serde_json::json!({"path": "m.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
            Some(&dir.path().display().to_string()),
            Instant::now(),
        );
        let lines = text(&t.view(80, 20, Viewport::Bottom, false).lines);
        for expected in [
            "  │    1    1   fn main() {",
            "  │    2      -     let x = 1;",
            "  │         2 +     let x = 2;",
            "  │    3    3   }",
        ] {
            assert!(
                lines.iter().any(|l| l == expected),
                "{expected:?} in {lines:#?}"
            );
        }
    }

    #[test]
    fn an_edit_diff_is_coloured_as_its_language() {
        highlight::load();
        let mut t = Transcript::default();
        t.tool_proposed(
            "c".into(),
            "edit_file".into(),
            serde_json::json!({"path": "m.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
            None,
            Instant::now(),
        );
        let view = t.view(80, 20, Viewport::Bottom, false);
        let added = view
            .lines
            .iter()
            .find(|l| l.spans.iter().any(|s| s.content == "+ "))
            .expect("the added line");
        assert!(
            added
                .spans
                .iter()
                .any(|s| matches!(s.style.fg, Some(Color::Rgb(..)))),
            "{added:?}"
        );
    }

    #[test]
    fn a_denied_card_says_so_in_words_for_the_user() {
        let mut t = Transcript::default();
        t.tool_proposed(
            "c".into(),
            "bash".into(),
            serde_json::json!({"command": "rm -rf build"}),
            None,
            Instant::now(),
        );
        t.tool_completed(
            "c",
            false,
            true,
            "The user denied this tool call. Do not retry it unchanged.".into(),
            false,
        );
        let lines = text(&t.view(80, 20, Viewport::Bottom, false).lines).join("\n");
        assert!(lines.contains("you denied it"), "{lines}");
        assert!(!lines.contains("Do not retry"), "{lines}");
    }

    #[test]
    fn a_long_message_is_folded_until_expanded() {
        let mut t = Transcript::default();
        let pasted: Vec<String> = (0..200).map(|i| format!("log line {i}")).collect();
        t.push(ItemKind::User(pasted.join("\n")));
        let folded = text(&t.view(80, 50, Viewport::Bottom, false).lines);
        assert!(folded.iter().any(|l| l == "› log line 0"), "{folded:?}");
        assert!(
            folded
                .iter()
                .any(|l| l == "  [pasted 200 lines — Ctrl+O shows them all]"),
            "{folded:?}"
        );
        assert!(
            !folded.iter().any(|l| l.contains("log line 3")),
            "{folded:?}"
        );
        let open = text(&t.view(80, 250, Viewport::Bottom, true).lines);
        assert!(open.iter().any(|l| l == "  log line 199"), "{open:?}");
        // A short message is never folded.
        let mut t = Transcript::default();
        t.push(ItemKind::User("one\ntwo".into()));
        let short = text(&t.view(80, 10, Viewport::Bottom, false).lines);
        assert!(short.iter().any(|l| l == "  two"), "{short:?}");
    }

    #[test]
    fn view_takes_the_bottom_and_scrolls() {
        let mut t = Transcript::default();
        for i in 0..10 {
            t.push(ItemKind::Notice(format!("n{i}")));
        }
        let view = t.view(20, 3, Viewport::Bottom, false);
        assert_eq!(text(&view.lines), ["", "· n9", ""]);
        let view = t.view(20, 2, Viewport::Bottom, false);
        let top = t.offset(view.top, -2, 20, false);
        let view = t.view(
            20,
            2,
            Viewport::Top {
                item: top.0,
                line: top.1,
            },
            false,
        );
        assert_eq!(text(&view.lines), ["· n8", ""]);
        assert_eq!(view.below, 2);
    }

    #[test]
    fn a_held_view_keeps_its_lines_while_text_arrives_below() {
        let mut t = Transcript::default();
        for i in 0..50 {
            t.push(ItemKind::Notice(format!("n{i}")));
        }
        let bottom = t.view(20, 5, Viewport::Bottom, false);
        let top = t.offset(bottom.top, -10, 20, false);
        let at = Viewport::Top {
            item: top.0,
            line: top.1,
        };
        let before = t.view(20, 5, at, false);
        for i in 50..80 {
            t.push(ItemKind::Notice(format!("n{i}")));
        }
        let after = t.view(20, 5, at, false);
        assert_eq!(text(&before.lines), text(&after.lines));
        assert_eq!(
            after.below,
            before.below + 60,
            "the marker counts what arrived"
        );
    }
}
