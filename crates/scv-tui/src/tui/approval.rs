//! The approval prompt: pending calls, one at a time, each shown whole.
//!
//! Approval is a deliberate act per call, so the prompt takes no key that
//! was meant for something else:
//! - it answers nothing until it has been on screen for [`ARM_DELAY`]
//!   (keys typed before that go on into the input box);
//! - while the input box holds unsent text, `y` and `n` type into it; the
//!   prompt is answered only after a deliberate switch to it (Tab or Esc);
//! - Enter never approves;
//! - `a` approves and adds a session rule ([`super::rules`]); the rule it
//!   would add (or why there is none) is on screen before it is pressed;
//! - a call longer than the prompt scrolls, and `y` is taken only once its
//!   end has been on screen.
//!
//! The prompt takes keys through [`ApprovalPrompt::on_key`] and draws from
//! `&self`; it holds no other state of the App.

use super::rules;
/// Where it was defined; `state` holds it so that `rules` need not import
/// the prompt.
pub use super::state::PendingApproval;
use super::wrap;
use crossterm::event::{KeyCode, KeyEvent};
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
const SCROLL_FIRST: &str = "scroll to the end of the call to approve it (↓ or PgDn)";

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
    /// The call is answered.
    Resolve(Box<PendingApproval>, bool),
    /// The call is approved, and its rule (as [`rules::propose`] makes
    /// it) is to be added.
    Always(Box<PendingApproval>, rules::Rule),
}

#[derive(Debug, Default)]
pub struct ApprovalPrompt {
    pending: VecDeque<PendingApproval>,
    /// When the front call appeared.
    shown_at: Option<Instant>,
    /// Keys go to the prompt (after Tab or Esc) rather than the input.
    focused: bool,
    /// Rows of the call scrolled past.
    scroll: usize,
    /// Width the call is wrapped to (the prompt's inner width).
    width: u16,
    /// Rows of the call shown at once, for this terminal.
    body_rows_max: u16,
}

impl ApprovalPrompt {
    pub fn push(&mut self, approval: PendingApproval, now: Instant) {
        if self.pending.is_empty() {
            self.shown_at = Some(now);
            self.scroll = 0;
        }
        self.pending.push_back(approval);
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
        self.focused = false;
        self.scroll = 0;
    }

    pub fn focused(&self) -> bool {
        self.focused && !self.pending.is_empty()
    }

    /// Whether the prompt has been up long enough to take an answer.
    pub fn armed(&self, now: Instant) -> bool {
        self.shown_at
            .is_some_and(|at| now.saturating_duration_since(at) >= ARM_DELAY)
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
        lines.extend(
            visible(&approval.summary).split('\n').map(|l| {
                Line::styled(l.to_string(), Style::default().add_modifier(Modifier::BOLD))
            }),
        );
        if !known_tool(&approval.name) && !approval.arguments.is_null() {
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

    /// Rows the prompt needs: the call (at most [`MAX_BODY_ROWS`]), a line
    /// for risk and place, a line of keys, the rule line, the borders.
    pub fn height(&self) -> u16 {
        if self.pending.is_empty() {
            return 0;
        }
        let body = self.body_rows().clamp(1, usize::from(self.body_rows_max)) as u16;
        body + 3 + 2
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
            self.shown_at = (!self.pending.is_empty()).then_some(now);
        }
        if self.pending.is_empty() {
            self.focused = false;
        }
        taken
    }

    /// A key while a call waits. `typing`: the input box holds unsent text.
    pub fn on_key(&mut self, key: KeyEvent, now: Instant, typing: bool) -> PromptKey {
        let Some(front) = self.pending.front() else {
            return PromptKey::Pass;
        };
        let answering = self.focused || !typing;
        match key.code {
            KeyCode::Tab => {
                self.focused = !self.focused;
                PromptKey::Taken
            }
            KeyCode::Esc => {
                // Esc leaves the input for the prompt, or goes back.
                self.focused = !self.focused;
                PromptKey::Taken
            }
            KeyCode::Char('y' | 'Y' | 'n' | 'N' | 'a' | 'A') if answering && !self.armed(now) => {
                if self.focused {
                    PromptKey::Taken
                } else {
                    // Typed before the prompt was up: it was meant for
                    // the input box.
                    PromptKey::Pass
                }
            }
            KeyCode::Char('y' | 'Y') if answering => {
                if !self.seen_end() {
                    return PromptKey::Hint(SCROLL_FIRST.into());
                }
                let approval = Box::new(front.clone());
                self.advance(now);
                PromptKey::Resolve(approval, true)
            }
            KeyCode::Char('a' | 'A') if answering => {
                let rule = match rules::propose(front) {
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
            KeyCode::Char('n' | 'N') if answering => {
                let approval = Box::new(front.clone());
                self.advance(now);
                PromptKey::Resolve(approval, false)
            }
            KeyCode::Up | KeyCode::PageUp if self.focused => {
                let rows = if key.code == KeyCode::Up { 1 } else { 10 };
                self.scroll = self.scroll.saturating_sub(rows);
                PromptKey::Taken
            }
            KeyCode::Down | KeyCode::PageDown if self.focused => {
                let rows = if key.code == KeyCode::Down { 1 } else { 10 };
                self.scroll = (self.scroll + rows).min(self.max_scroll());
                PromptKey::Taken
            }
            _ if self.focused => PromptKey::Taken,
            _ => PromptKey::Pass,
        }
    }

    /// The front call is answered: the next one (if any) starts its own
    /// arming delay.
    fn advance(&mut self, now: Instant) {
        self.pending.pop_front();
        self.scroll = 0;
        self.shown_at = (!self.pending.is_empty()).then_some(now);
        if self.pending.is_empty() {
            self.focused = false;
        }
    }

    pub fn draw(&self, frame: &mut Frame<'_>, area: Rect, now: Instant, typing: bool) {
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
        let border = if self.focused || !typing {
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
        let below = self.max_scroll() - self.scroll.min(self.max_scroll());
        let mut place = vec![
            Span::styled("risk ", Style::default().fg(Color::DarkGray)),
            Span::styled(
                approval.risk.clone(),
                Style::default().fg(risk_color(&approval.risk)),
            ),
            Span::styled("  cwd ", Style::default().fg(Color::DarkGray)),
            Span::raw(approval.cwd.clone()),
        ];
        match approval.sandboxed {
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
                format!("  ↓ {below} more lines (Tab, then ↓/PgDn)"),
                Style::default().fg(Color::Yellow),
            ));
        }
        lines.push(Line::from(place));
        lines.push(self.keys_line(now, typing));
        lines.push(rule_line(approval));
        frame.render_widget(Paragraph::new(lines), inner);
    }

    /// The prompt's own keys, as they work right now.
    fn keys_line(&self, now: Instant, typing: bool) -> Line<'static> {
        let dim = Style::default().fg(Color::DarkGray);
        if typing && !self.focused {
            return Line::from(vec![
                Span::styled(" Tab ", Style::default().fg(Color::Black).bg(Color::Yellow)),
                Span::raw(" to answer — y and n type into your message until then"),
            ]);
        }
        if !self.armed(now) {
            return Line::styled(" y approve   n deny   (wait…)", dim);
        }
        let approve = if self.seen_end() {
            Span::styled(" y ", Style::default().fg(Color::Black).bg(Color::Green))
        } else {
            Span::styled(" y ", Style::default().fg(Color::Black).bg(Color::DarkGray))
        };
        let back = if self.focused {
            "   Tab/Esc back to your message   Ctrl+C cancels the turn"
        } else {
            "   Ctrl+C cancels the turn"
        };
        Line::from(vec![
            approve,
            Span::raw(" approve   "),
            Span::styled(" n ", Style::default().fg(Color::Black).bg(Color::Red)),
            Span::raw(" deny"),
            Span::styled(back, dim),
        ])
    }
}

/// What `a` would do for this call: the rule it adds, or why none.
fn rule_line(approval: &PendingApproval) -> Line<'static> {
    match rules::propose(approval) {
        Ok(rule) => Line::from(vec![
            Span::styled(" a ", Style::default().fg(Color::Black).bg(Color::Cyan)),
            Span::raw(" always allow "),
            Span::styled(
                visible(&rule.scope()).into_owned(),
                Style::default().fg(Color::Cyan),
            ),
            Span::styled(" while scv runs", Style::default().fg(Color::DarkGray)),
        ]),
        Err(why) => Line::styled(
            format!(" a  no rule: {}", visible(&why)),
            Style::default().fg(Color::DarkGray),
        ),
    }
}

/// Tools whose summary says everything about the call.
fn known_tool(name: &str) -> bool {
    matches!(
        name,
        "bash" | "read_file" | "write_file" | "edit_file" | "list_dir" | "search"
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
                risk: "process".into(),
                cwd: "/w".into(),
                summary: "Run shell command: touch PWNED\r\u{1b}[2Kecho ok".into(),
                arguments: serde_json::Value::Null,
                sandboxed: None,
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
}
