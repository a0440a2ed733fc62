//! `/approvals`: this session's approval rules; ↑/↓ select one, x (or
//! Delete) asks the App to remove it.

use super::{Overlay, OverlayData, OverlayKey};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

pub(super) struct Approvals;

impl Overlay for Approvals {
    fn title(&self) -> &'static str {
        " Approval rules — ↑/↓ select · x remove · Esc closes "
    }

    fn lines(&self, data: &OverlayData<'_>, selected: usize) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        if data.rules.is_empty() {
            return vec![
                Line::raw("No approval rules in this session."),
                Line::styled(
                    "Press a in an approval prompt to approve a call and allow its kind while scv runs.",
                    dim,
                ),
            ];
        }
        let mut lines: Vec<Line<'static>> = data
            .rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                let marked = i == selected;
                let style = if marked {
                    Style::default().fg(Color::Black).bg(Color::Cyan)
                } else {
                    Style::default()
                };
                Line::from(vec![
                    Span::styled(if marked { " › " } else { "   " }, style),
                    Span::styled(rule.scope(), style),
                ])
            })
            .collect();
        lines.push(Line::default());
        lines.push(Line::styled(
            "Rules last until scv exits; they are never saved and never sent to the server.",
            dim,
        ));
        lines
    }

    /// Arrows select rather than scroll; the frame still pages.
    fn on_key(&self, key: KeyEvent, data: &OverlayData<'_>, selected: &mut usize) -> OverlayKey {
        match key.code {
            KeyCode::Up => *selected = selected.saturating_sub(1),
            KeyCode::Down => *selected = (*selected + 1).min(data.rules.len().saturating_sub(1)),
            KeyCode::Char('x') | KeyCode::Delete => return OverlayKey::RemoveRule(*selected),
            _ => return OverlayKey::Pass,
        }
        OverlayKey::Taken
    }
}
