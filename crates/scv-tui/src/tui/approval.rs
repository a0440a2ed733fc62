//! The approval prompt: pending calls, one at a time, each shown whole.
//!
//! Approval is a deliberate act per call, and ordinary typing never
//! answers it:
//! - the prompt shows numbered options — `1 Yes, once`, `2 Yes, and always
//!   allow <rule>` (a session rule, [`super::rules`], previewed before it
//!   is chosen, or why there is none), `3 No` — one highlighted;
//! - only while the message box is empty do ↑/↓ and the digits 1/2/3 move
//!   the highlight and Enter choose it; a digit followed by anything but
//!   Enter goes into the box with it (a message that starts with a number);
//!   with text in the box those keys are the box's (Enter sends the
//!   message), and letters always are;
//! - it answers nothing until it has been on screen, and the box left
//!   alone, for [`ARM_DELAY`] (a digit typed before that goes into the box);
//! - a call longer than the prompt scrolls (PgUp/PgDn), and is approved
//!   only once its end has been on screen;
//! - Esc denies the call and cancels the turn, as `/help` says (the App's).
//!
//! The prompt takes keys through [`ApprovalPrompt::on_key`] and draws from
//! `&self`; it holds no other state of the App.

use super::rules;
/// Where it was defined; `state` holds it so that `rules` need not import
/// the prompt.
pub use super::state::PendingApproval;
use super::wrap;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};
use ratatui::Frame;
use scv_client::text::visible;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long a prompt is on screen before a key may answer it.
pub const ARM_DELAY: Duration = Duration::from_millis(500);
const SCROLL_FIRST: &str = "scroll to the end of the call to approve it (PgDn)";
/// How the prompt is answered, on its last line.
pub const HOW: &str = "↑↓ or 1/2/3 to pick, Enter to answer · type to write a message";

/// Rows of the call shown at once (fewer on a short terminal: the prompt
/// takes at most half of it); longer calls scroll.
pub const MAX_BODY_ROWS: u16 = 16;

/// What a key did to the prompt.
#[derive(Debug)]
pub enum PromptKey {
    /// Not the prompt's: the input box (or the transcript) takes it.
    Pass,
    /// Taken, nothing to send.
    Taken,
    /// Taken, with a hint to show.
    Hint(String),
    /// Not an answer after all: the digit that picked an option goes into
    /// the message box, and the key (which showed it was the start of a
    /// message) goes on to the box as any key does.
    Typed(char),
    /// The call is answered.
    Resolve(Box<PendingApproval>, bool),
    /// The call is approved, and its rule (as [`rules::propose`] makes
    /// it) is to be added.
    Always(Box<PendingApproval>, rules::Rule),
}

/// The prompt's numbered options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Choice {
    /// `1 Yes, once`.
    #[default]
    Once,
    /// `2 Yes, and always allow …` (a session rule).
    Always,
    /// `3 No`.
    Deny,
}

#[derive(Debug, Default)]
pub struct ApprovalPrompt {
    pending: VecDeque<PendingApproval>,
    /// When the front call appeared.
    shown_at: Option<Instant>,
    /// The option ↑/↓ highlight and Enter chooses.
    selected: Choice,
    /// When a key last went past the prompt (to the message box): a key
    /// just after it is not an answer either.
    typed_at: Option<Instant>,
    /// The digit that picked `selected`, until Enter answers with it: if
    /// a character follows instead, the digit was the start of a message
    /// ("1. also add a docstring") and goes into the box with it.
    picked: Option<char>,
    /// Rows of the call scrolled past.
    scroll: usize,
    /// Width the call is wrapped to (the prompt's inner width).
    width: u16,
    /// Rows of the call shown at once, for this terminal.
    body_rows_max: u16,
    /// The session is in plan mode: a call runs read-only, and no rule is
    /// offered (one would hold outside plan mode too, where the same
    /// command may write).
    plan: bool,
}

/// Option 2's words in plan mode.
const NO_RULE_IN_PLAN: &str =
    "(no rule in plan mode: it would also allow the command outside plan mode, where it can write)";

impl ApprovalPrompt {
    pub fn push(&mut self, approval: PendingApproval, now: Instant) {
        if self.pending.is_empty() {
            self.shown_at = Some(now);
            self.scroll = 0;
            self.selected = Choice::Once;
            self.picked = None;
        }
        self.pending.push_back(approval);
    }

    /// The session's mode, as the server last said it (before each key).
    pub fn set_plan(&mut self, plan: bool) {
        self.plan = plan;
    }

    pub fn front(&self) -> Option<&PendingApproval> {
        self.pending.front()
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    pub fn clear(&mut self) {
        self.pending.clear();
        self.shown_at = None;
        self.selected = Choice::Once;
        self.scroll = 0;
    }

    /// Whether the prompt has been up, and the message box left alone,
    /// long enough to take an answer.
    pub fn armed(&self, now: Instant) -> bool {
        let since = |at: Instant| now.saturating_duration_since(at) >= ARM_DELAY;
        self.shown_at.is_some_and(since) && self.typed_at.is_none_or(since)
    }

    /// The terminal is now `width` × `height`: the prompt wraps to its
    /// inner width and takes at most half the rows.
    pub fn resize(&mut self, width: u16, height: u16) {
        self.width = width.saturating_sub(2).max(1);
        self.body_rows_max = (height / 2).saturating_sub(4).clamp(3, MAX_BODY_ROWS);
        self.scroll = self.scroll.min(self.max_scroll());
    }

    /// The front call as shown: every line of its summary (control
    /// characters made visible), wrapped to the prompt's width.
    fn body(&self) -> Vec<Line<'static>> {
        let Some(approval) = self.pending.front() else {
            return Vec::new();
        };
        let mut lines: Vec<Line<'static>> = Vec::new();
        if let Some(description) = &approval.subagent {
            lines.push(Line::styled(
                format!("subagent «{}» wants to run:", visible(description)),
                Style::default()
                    .fg(Color::Magenta)
                    .add_modifier(Modifier::BOLD),
            ));
        }
        // A tool whose summary ends with its arguments in one line (MCP
        // tools, for old clients) shows them once, laid out below.
        let pretty_arguments = !known_tool(&approval.name) && !approval.arguments.is_null();
        let compact = format!(
            ": {}",
            serde_json::to_string(&approval.arguments).unwrap_or_default()
        );
        let summary = match approval.summary.strip_suffix(&compact) {
            Some(head) if pretty_arguments => head,
            _ => &approval.summary,
        };
        lines.extend(
            visible(summary).split('\n').map(|l| {
                Line::styled(l.to_string(), Style::default().add_modifier(Modifier::BOLD))
            }),
        );
        if pretty_arguments {
            let pretty = serde_json::to_string_pretty(&approval.arguments).unwrap_or_default();
            lines.extend(
                visible(&pretty)
                    .lines()
                    .map(|l| Line::styled(l.to_string(), Style::default().fg(Color::Gray))),
            );
        }
        wrap::wrap_lines(&lines, self.width.max(1))
    }

    fn body_rows(&self) -> usize {
        self.body().len()
    }

    fn max_scroll(&self) -> usize {
        self.body_rows()
            .saturating_sub(usize::from(self.body_rows_max))
    }

    /// The whole call has been on screen (or fits).
    fn seen_end(&self) -> bool {
        self.scroll >= self.max_scroll()
    }

    /// Rows the prompt needs: the call (at most [`MAX_BODY_ROWS`]), then
    /// risk and place, the three options and the keys, each wrapped to the
    /// width (never cut), and the borders.
    pub fn height(&self) -> u16 {
        let Some(front) = self.pending.front() else {
            return 0;
        };
        let body = self.body_rows().clamp(1, usize::from(self.body_rows_max)) as u16;
        // Armed and not typing: the longest the keys line gets.
        let at = self
            .shown_at
            .map(|t| t + ARM_DELAY)
            .unwrap_or_else(Instant::now);
        let tail = wrap::wrap_lines(&self.tail(front, at, false, self.plan), self.width.max(1));
        body + u16::try_from(tail.len()).unwrap_or(u16::MAX) + 2
    }

    /// Takes every waiting call `answered` picks (a rule answers them),
    /// the front one included; the next front starts its arming delay.
    pub fn take_where(
        &mut self,
        mut answered: impl FnMut(&PendingApproval) -> bool,
        now: Instant,
    ) -> Vec<PendingApproval> {
        let front = self.pending.front().map(|a| a.approval_id.clone());
        let (taken, kept): (Vec<_>, Vec<_>) = self.pending.drain(..).partition(|a| answered(a));
        self.pending = kept.into();
        if self.pending.front().map(|a| a.approval_id.clone()) != front {
            self.scroll = 0;
            self.selected = Choice::Once;
            self.picked = None;
            self.shown_at = (!self.pending.is_empty()).then_some(now);
        }
        taken
    }

    /// A key while a call waits. `typing`: the message box holds text.
    ///
    /// Only a choice prose cannot make answers: Enter on an option picked
    /// with ↑/↓ or a digit, and only while the box is empty. A digit only
    /// picks: if a character follows instead of Enter, both go into the
    /// box (a message that starts with a digit). Letters always type.
    pub fn on_key(&mut self, key: KeyEvent, now: Instant, typing: bool) -> PromptKey {
        if self.pending.is_empty() {
            return PromptKey::Pass;
        }
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        if let Some(digit) = self.picked.take() {
            match key.code {
                KeyCode::Enter | KeyCode::Up | KeyCode::Down | KeyCode::Char('1'..='3')
                    if plain => {}
                KeyCode::Char(_)
                    if !key
                        .modifiers
                        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
                {
                    self.typed_at = Some(now);
                    self.selected = Choice::Once;
                    return PromptKey::Typed(digit);
                }
                // Backspace takes the pick back.
                KeyCode::Backspace => {
                    self.selected = Choice::Once;
                    return PromptKey::Taken;
                }
                _ => {}
            }
        }
        let answer_key = plain
            && matches!(
                key.code,
                KeyCode::Up | KeyCode::Down | KeyCode::Enter | KeyCode::Char('1'..='3')
            );
        match key.code {
            // A long call scrolls, whatever the box holds.
            KeyCode::PageUp | KeyCode::PageDown if self.max_scroll() > 0 => {
                let rows = 10;
                self.scroll = if key.code == KeyCode::PageUp {
                    self.scroll.saturating_sub(rows)
                } else {
                    (self.scroll + rows).min(self.max_scroll())
                };
                PromptKey::Taken
            }
            _ if !answer_key || typing => {
                self.typed_at = Some(now);
                PromptKey::Pass
            }
            // Typed before the prompt was up, or just after typing: it was
            // meant for the message box (a digit) or is a second Enter.
            _ if !self.armed(now) => {
                if matches!(key.code, KeyCode::Char(_)) {
                    self.typed_at = Some(now);
                    PromptKey::Pass
                } else {
                    PromptKey::Taken
                }
            }
            KeyCode::Up => {
                self.selected = self.step(-1);
                PromptKey::Taken
            }
            KeyCode::Down => {
                self.selected = self.step(1);
                PromptKey::Taken
            }
            KeyCode::Enter => self.choose(self.selected, now),
            KeyCode::Char(c) => {
                let choice = match c {
                    '1' => Choice::Once,
                    '2' => Choice::Always,
                    _ => Choice::Deny,
                };
                if !self.choices().contains(&choice) {
                    return PromptKey::Hint(match rules::propose(&self.pending[0].call()) {
                        _ if self.plan && choice == Choice::Always => NO_RULE_IN_PLAN.into(),
                        Err(why) => format!("no rule: {why}"),
                        Ok(_) => "no such option".into(),
                    });
                }
                self.selected = choice;
                self.picked = Some(c);
                PromptKey::Taken
            }
            _ => PromptKey::Pass,
        }
    }

    /// The options ↑/↓ move through: "always" only when a rule can be made.
    fn choices(&self) -> Vec<Choice> {
        let rule = !self.plan
            && self
                .pending
                .front()
                .is_some_and(|front| rules::propose(&front.call()).is_ok());
        if rule {
            vec![Choice::Once, Choice::Always, Choice::Deny]
        } else {
            vec![Choice::Once, Choice::Deny]
        }
    }

    /// The highlight moved by `by`, staying within the options.
    fn step(&self, by: isize) -> Choice {
        let choices = self.choices();
        let at = choices
            .iter()
            .position(|c| *c == self.selected)
            .unwrap_or(0) as isize;
        let to = (at + by).clamp(0, choices.len() as isize - 1) as usize;
        choices[to]
    }

    /// The option highlighted now.
    pub fn selected(&self) -> Choice {
        self.selected
    }

    fn choose(&mut self, choice: Choice, now: Instant) -> PromptKey {
        let Some(front) = self.pending.front() else {
            return PromptKey::Pass;
        };
        match choice {
            Choice::Once => {
                if !self.seen_end() {
                    return PromptKey::Hint(SCROLL_FIRST.into());
                }
                let approval = Box::new(front.clone());
                self.advance(now);
                PromptKey::Resolve(approval, true)
            }
            Choice::Always if self.plan => PromptKey::Hint(NO_RULE_IN_PLAN.into()),
            Choice::Always => {
                let rule = match rules::propose(&front.call()) {
                    Ok(rule) => rule,
                    Err(why) => return PromptKey::Hint(format!("no rule: {why}")),
                };
                if !self.seen_end() {
                    return PromptKey::Hint(SCROLL_FIRST.into());
                }
                let approval = Box::new(front.clone());
                self.advance(now);
                PromptKey::Always(approval, rule)
            }
            Choice::Deny => self.deny(now).unwrap_or(PromptKey::Pass),
        }
    }

    /// Denies the front call (Esc, or `3 No`).
    pub fn deny(&mut self, now: Instant) -> Option<PromptKey> {
        let approval = Box::new(self.pending.front()?.clone());
        self.advance(now);
        Some(PromptKey::Resolve(approval, false))
    }

    /// The front call is answered: the next one (if any) starts its own
    /// arming delay.
    fn advance(&mut self, now: Instant) {
        self.pending.pop_front();
        self.scroll = 0;
        self.selected = Choice::Once;
        self.picked = None;
        self.shown_at = (!self.pending.is_empty()).then_some(now);
    }

    pub fn draw(&self, frame: &mut Frame<'_>, area: Rect, now: Instant, typing: bool, plan: bool) {
        let Some(approval) = self.pending.front() else {
            return;
        };
        let waiting = self.pending.len();
        let who = if approval.subagent.is_some() {
            " — a subagent asks"
        } else {
            ""
        };
        let title = if waiting > 1 {
            format!(" Approval needed (1 of {waiting}){who} ")
        } else {
            format!(" Approval needed{who} ")
        };
        let border = if !typing {
            Color::Yellow
        } else {
            Color::DarkGray
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Thick)
            .border_style(Style::default().fg(border))
            .title(Span::styled(
                title,
                Style::default().fg(border).add_modifier(Modifier::BOLD),
            ));
        let inner = block.inner(area);
        frame.render_widget(Clear, area);
        frame.render_widget(block, area);
        let body = self.body();
        let rows = body.len().clamp(1, usize::from(self.body_rows_max));
        let mut lines: Vec<Line<'static>> = body.into_iter().skip(self.scroll).take(rows).collect();
        let tail = self.tail(approval, now, typing, plan);
        lines.extend(wrap::wrap_lines(&tail, inner.width.max(1)));
        frame.render_widget(Paragraph::new(lines), inner);
    }

    /// What follows the call: risk and place, the options, the keys.
    fn tail(
        &self,
        approval: &PendingApproval,
        now: Instant,
        typing: bool,
        plan: bool,
    ) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        let below = self.max_scroll() - self.scroll.min(self.max_scroll());
        let mut place = vec![
            Span::styled("risk ", Style::default().fg(Color::DarkGray)),
            Span::styled(
                approval.risk.as_str().to_string(),
                Style::default().fg(risk_color(approval.risk.as_str())),
            ),
            Span::styled("  cwd ", Style::default().fg(Color::DarkGray)),
            Span::raw(approval.cwd.clone()),
        ];
        match approval.sandboxed {
            Some(true) if plan => place.push(Span::styled(
                "  read-only (plan mode)",
                Style::default().fg(Color::Green),
            )),
            Some(true) => place.push(Span::styled(
                "  sandboxed",
                Style::default().fg(Color::Green),
            )),
            Some(false) => place.push(Span::styled(
                "  outside the sandbox",
                Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            )),
            None => {}
        }
        if below > 0 || self.scroll > 0 {
            place.push(Span::styled(
                format!("  ↓ {below} more lines (PgDn)"),
                Style::default().fg(Color::Yellow),
            ));
        }
        lines.push(Line::from(place));
        lines.extend(self.option_lines(approval, now, typing, plan));
        lines.push(self.keys_line(now, typing));
        lines
    }

    /// `1 Yes, once`, `2 Yes, and always allow <rule>`, `3 No`, the
    /// highlighted one marked (only while Enter would choose it: the box
    /// empty, the prompt armed).
    fn option_lines(
        &self,
        approval: &PendingApproval,
        now: Instant,
        typing: bool,
        plan: bool,
    ) -> Vec<Line<'static>> {
        let rule = if plan {
            Err(String::new())
        } else {
            rules::propose(&approval.call())
        };
        let option = |choice: Choice, digit: &str, text: Vec<Span<'static>>| {
            let chosen = !typing && self.armed(now) && self.selected == choice;
            let (mark, style) = if chosen {
                (
                    " ❯ ",
                    Style::default()
                        .fg(Color::Yellow)
                        .add_modifier(Modifier::BOLD),
                )
            } else {
                ("   ", Style::default())
            };
            let mut spans = vec![
                Span::styled(mark, style),
                Span::styled(format!("{digit} "), style),
            ];
            spans.extend(text.into_iter().map(|span| {
                if chosen {
                    span.patch_style(style)
                } else {
                    span
                }
            }));
            Line::from(spans)
        };
        let always = match &rule {
            Ok(rule) => vec![
                Span::raw("Yes, and always allow "),
                Span::styled(
                    visible(&rule.scope()).into_owned(),
                    Style::default().fg(Color::Cyan),
                ),
                Span::styled(" while scv runs", Style::default().fg(Color::DarkGray)),
            ],
            Err(_) if plan => vec![Span::styled(
                NO_RULE_IN_PLAN,
                Style::default().fg(Color::DarkGray),
            )],
            Err(why) => vec![Span::styled(
                format!("(no rule: {})", visible(why)),
                Style::default().fg(Color::DarkGray),
            )],
        };
        vec![
            option(Choice::Once, "1", vec![Span::raw("Yes, once")]),
            option(Choice::Always, "2", always),
            option(
                Choice::Deny,
                "3",
                vec![
                    Span::raw("No"),
                    Span::styled(
                        "   (Esc: no, and cancel the turn)",
                        Style::default().fg(Color::DarkGray),
                    ),
                ],
            ),
        ]
    }

    /// How to answer, as it works right now.
    fn keys_line(&self, now: Instant, typing: bool) -> Line<'static> {
        let dim = Style::default().fg(Color::DarkGray);
        if typing {
            return Line::styled(
                " Enter sends your message · empty the box to answer (↑↓ or 1/2/3, then Enter)",
                dim,
            );
        }
        let mut spans = vec![Span::styled(
            format!(" {HOW}"),
            Style::default().fg(Color::Yellow),
        )];
        if !self.armed(now) {
            spans.push(Span::styled(" (wait…)", dim));
        } else if !self.seen_end() {
            spans.push(Span::styled(" · PgDn first", dim));
        }
        Line::from(spans)
    }
}

/// Tools whose summary says everything about the call.
fn known_tool(name: &str) -> bool {
    matches!(
        name,
        "bash"
            | "read_file"
            | "write_file"
            | "edit_file"
            | "list_dir"
            | "search"
            | "bash_output"
            | "bash_kill"
    )
}

fn risk_color(risk: &str) -> Color {
    match risk {
        "read" => Color::Green,
        "write" => Color::Yellow,
        _ => Color::Red,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_a_call_are_shown_not_obeyed() {
        let mut prompt = ApprovalPrompt::default();
        prompt.resize(80, 24);
        prompt.push(
            PendingApproval {
                approval_id: "a".into(),
                call_id: "c".into(),
                name: "bash".into(),
                risk: scv_protocol::Risk::Process,
                cwd: "/w".into(),
                summary: "Run shell command: touch PWNED\r\u{1b}[2Kecho ok".into(),
                arguments: serde_json::Value::Null,
                sandboxed: None,
                request_id: None,
                child_session: None,
                subagent: None,
            },
            Instant::now(),
        );
        let text: String = prompt.body()[0]
            .spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(text, "Run shell command: touch PWNED␍␛[2Kecho ok");
    }

    #[test]
    fn an_mcp_calls_arguments_are_shown_once() {
        let mut prompt = ApprovalPrompt::default();
        prompt.resize(80, 24);
        let arguments = serde_json::json!({"number": 7, "repo": "scv"});
        prompt.push(
            PendingApproval {
                approval_id: "a".into(),
                call_id: "c".into(),
                name: "mcp__github__get_issue".into(),
                risk: scv_protocol::Risk::Mcp,
                cwd: "/w".into(),
                summary: format!("Call MCP tool `get_issue` of server `github`: {arguments}"),
                arguments,
                sandboxed: None,
                request_id: None,
                child_session: None,
                subagent: None,
            },
            Instant::now(),
        );
        let text: Vec<String> = prompt
            .body()
            .iter()
            .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(text[0], "Call MCP tool `get_issue` of server `github`");
        let all = text.join("\n");
        assert_eq!(all.matches("\"number\"").count(), 1, "{all}");
        assert!(all.contains("\"number\": 7"), "{all}");
    }

    fn ls_prompt(now: Instant) -> ApprovalPrompt {
        let mut prompt = ApprovalPrompt::default();
        prompt.resize(80, 24);
        prompt.push(
            PendingApproval {
                approval_id: "a".into(),
                call_id: "c".into(),
                name: "bash".into(),
                risk: scv_protocol::Risk::Process,
                cwd: "/w".into(),
                summary: "Run shell command: ls".into(),
                arguments: serde_json::json!({"command": "ls"}),
                sandboxed: None,
                request_id: None,
                child_session: None,
                subagent: None,
            },
            now,
        );
        prompt
    }

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn letters_never_answer_and_digits_only_with_an_empty_box() {
        let start = Instant::now();
        let mut prompt = ls_prompt(start);
        let later = start + Duration::from_secs(5);
        for c in "yYnNaA".chars() {
            assert!(matches!(
                prompt.on_key(press(KeyCode::Char(c)), later, false),
                PromptKey::Pass
            ));
        }
        let later = later + Duration::from_secs(5);
        for code in [KeyCode::Char('1'), KeyCode::Enter, KeyCode::Down] {
            assert!(matches!(
                prompt.on_key(press(code), later, true),
                PromptKey::Pass
            ));
        }
        let later = later + Duration::from_secs(5);
        // A digit picks; Enter answers with it.
        assert!(matches!(
            prompt.on_key(press(KeyCode::Char('3')), later, false),
            PromptKey::Taken
        ));
        assert_eq!(prompt.selected(), Choice::Deny);
        assert!(matches!(
            prompt.on_key(press(KeyCode::Enter), later, false),
            PromptKey::Resolve(_, false)
        ));
        assert!(prompt.is_empty());
    }

    /// A digit then a character: the start of a message, not a choice.
    #[test]
    fn a_digit_then_text_is_typed_not_chosen() {
        let start = Instant::now();
        let mut prompt = ls_prompt(start);
        let later = start + Duration::from_secs(5);
        assert!(matches!(
            prompt.on_key(press(KeyCode::Char('1')), later, false),
            PromptKey::Taken
        ));
        assert!(matches!(
            prompt.on_key(press(KeyCode::Char('.')), later, false),
            PromptKey::Typed('1')
        ));
        assert_eq!(prompt.selected(), Choice::Once);
        assert!(!prompt.is_empty());
    }

    #[test]
    fn the_highlight_moves_within_the_options_and_resets_per_call() {
        let start = Instant::now();
        let mut prompt = ls_prompt(start);
        let later = start + Duration::from_secs(1);
        assert_eq!(prompt.selected(), Choice::Once);
        prompt.on_key(press(KeyCode::Up), later, false);
        assert_eq!(prompt.selected(), Choice::Once);
        prompt.on_key(press(KeyCode::Down), later, false);
        assert_eq!(prompt.selected(), Choice::Always);
        for _ in 0..3 {
            prompt.on_key(press(KeyCode::Down), later, false);
        }
        assert_eq!(prompt.selected(), Choice::Deny);
        prompt.clear();
        let mut prompt = ls_prompt(later);
        assert_eq!(prompt.selected(), Choice::Once);
        assert!(matches!(
            prompt.on_key(press(KeyCode::Enter), later, false),
            PromptKey::Taken
        ));
    }
}
