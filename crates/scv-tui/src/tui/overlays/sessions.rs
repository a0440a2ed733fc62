//! The session picker (`scv resume`, `/resume`): stored sessions with
//! their title, directory, age and turns, newest first; typing filters
//! them, ↑/↓ select, Enter resumes one — or forks it when it is open on
//! another connection, which a resume would be refused.

use super::{picker, Overlay, OverlayData, OverlayKey};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use scv_protocol::StoredSession;

/// The picker's state: what the daemon listed and what is typed.
#[derive(Debug, Clone)]
pub struct Picker {
    pub sessions: Vec<StoredSession>,
    pub filter: String,
    /// When the list came (unix seconds), for ages.
    pub now: u64,
}

impl Picker {
    /// The sessions the filter keeps: every word of it in the title, the
    /// directory or the id (a short id typed finds its session), case
    /// aside.
    pub fn shown(&self) -> Vec<&StoredSession> {
        self.sessions
            .iter()
            .filter(|s| {
                picker::keeps(
                    &self.filter,
                    &format!("{} {} {}", s.title, s.cwd, s.session_id),
                )
            })
            .collect()
    }
}

pub(super) struct Sessions<'a>(pub &'a Picker);

impl Overlay for Sessions<'_> {
    fn title(&self) -> &'static str {
        " Resume a session — type to filter · ↑/↓ select · Enter resumes · Esc closes "
    }

    fn lines(&self, _data: &OverlayData<'_>, selected: usize) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let mut lines = vec![picker::filter_line("", &self.0.filter)];
        let shown = self.0.shown();
        if shown.is_empty() {
            lines.push(Line::styled(
                if self.0.sessions.is_empty() {
                    "No stored sessions yet."
                } else {
                    "No session matches."
                },
                dim,
            ));
            return lines;
        }
        for (i, s) in shown.iter().enumerate() {
            let marked = i == selected.min(shown.len() - 1);
            let style = picker::row_style(marked);
            let title = match (&s.damaged, s.title.is_empty()) {
                (Some(_), _) => "(cannot be read)".to_string(),
                (None, true) => "(no prompt yet)".to_string(),
                // A subagent's session: its task, marked as such.
                (None, false) if s.parent.is_some() => format!("↳ subagent: {}", s.title),
                (None, false) => s.title.clone(),
            };
            let age = crate::sessions_cmd::age(self.0.now.saturating_sub(s.updated_unix_seconds));
            let mut spans = vec![
                Span::styled(if marked { " › " } else { "   " }, style),
                Span::styled(title, style.add_modifier(Modifier::BOLD)),
                Span::styled(
                    format!(
                        "  {}{} · {} · {age} · {} turn{}",
                        crate::sessions_cmd::short_id(&s.session_id),
                        s.forked_from
                            .as_ref()
                            .map(|f| format!(
                                " forked from {}",
                                crate::sessions_cmd::short_id(&f.session_id)
                            ))
                            .unwrap_or_default(),
                        s.cwd,
                        s.turns,
                        if s.turns == 1 { "" } else { "s" },
                    ),
                    if marked { style } else { dim },
                ),
            ];
            if s.open {
                spans.push(Span::styled(
                    "  open elsewhere: Enter forks it",
                    Style::default().fg(Color::Yellow),
                ));
            }
            lines.push(Line::from(spans));
        }
        lines
    }

    fn on_key(&self, key: KeyEvent, _data: &OverlayData<'_>, selected: &mut usize) -> OverlayKey {
        let shown = self.0.shown();
        if picker::move_selection(key.code, selected, shown.len()) {
            return OverlayKey::Taken;
        }
        match key.code {
            KeyCode::Enter => match shown.get((*selected).min(shown.len().saturating_sub(1))) {
                Some(s) if s.damaged.is_none() => OverlayKey::Pick {
                    session_id: s.session_id.clone(),
                    fork: s.open,
                },
                _ => OverlayKey::Taken,
            },
            _ => OverlayKey::Pass,
        }
    }
}
