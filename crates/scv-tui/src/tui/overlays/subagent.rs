//! `Ctrl+O`: a subagent's transcript — its task, answers and calls drawn
//! by the session transcript's own items — under a line that says where
//! it is. ←/→ go to the other subagents, Ctrl+X cancels this one alone,
//! Ctrl+O expands tool output as in the session's transcript.

use super::{Overlay, OverlayData, OverlayKey};
use crate::tui::transcript::subagent_line;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Style};
use ratatui::text::Line;

/// The subagent shown, by its session id.
pub(super) struct Subagent<'a>(pub &'a str);

impl Overlay for Subagent<'_> {
    fn title(&self) -> &'static str {
        " Subagent — ←/→ others · Ctrl+X cancels it · Ctrl+O expands · Esc closes "
    }

    fn lines(&self, data: &OverlayData<'_>, selected: usize) -> Vec<Line<'static>> {
        self.lines_at(data, selected, 80)
    }

    fn lines_at(&self, data: &OverlayData<'_>, _selected: usize, width: u16) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let Some(child) = data.subagents.get(self.0) else {
            return vec![Line::styled(
                format!(
                    "subagent {} is no longer kept here; `scv resume {}` shows its whole transcript",
                    self.0, self.0
                ),
                dim,
            )];
        };
        let card = child.card();
        let (place, of) = data.subagents.place(self.0).unwrap_or((1, 1));
        let mut lines = vec![
            subagent_line(card, ""),
            Line::styled(
                format!(
                    "{place} of {of} · {} · depth {} · session {}",
                    card.model, child.depth, child.session_id
                ),
                dim,
            ),
            Line::styled(format!("tools: {}", child.tools.join(", ")), dim),
            Line::default(),
        ];
        for item in child.transcript.items() {
            lines.extend(item.lines(width, data.expanded).iter().cloned());
        }
        lines
    }

    fn on_key(&self, key: KeyEvent, data: &OverlayData<'_>, _selected: &mut usize) -> OverlayKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let step = |by| match data.subagents.step(self.0, by) {
            Some(child) => OverlayKey::Subagent(child.session_id.clone()),
            None => OverlayKey::Taken,
        };
        match key.code {
            KeyCode::Left => step(-1),
            KeyCode::Right => step(1),
            KeyCode::Char('x') if ctrl => OverlayKey::CancelSubagent(self.0.to_string()),
            KeyCode::Char('o') if ctrl => OverlayKey::ToggleExpanded,
            _ => OverlayKey::Pass,
        }
    }
}
