//! The model picker (`/model` without an argument): the models the
//! session's provider lists (`models.list`), the current one marked;
//! typing filters, ↑/↓ select, Enter switches to it (as `/model M`).

use super::{picker, Overlay, OverlayData, OverlayKey};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

#[derive(Debug, Clone)]
pub struct ModelPicker {
    pub provider: String,
    pub models: Vec<String>,
    pub current: String,
    pub filter: String,
}

impl ModelPicker {
    /// The models the filter keeps: every word of it in the id, case
    /// aside.
    pub fn shown(&self) -> Vec<&String> {
        self.models
            .iter()
            .filter(|m| picker::keeps(&self.filter, m))
            .collect()
    }
}

pub(super) struct Models<'a>(pub &'a ModelPicker);

impl Overlay for Models<'_> {
    fn title(&self) -> &'static str {
        " Switch model — type to filter · ↑/↓ select · Enter switches · Esc closes "
    }

    fn lines(&self, _data: &OverlayData<'_>, selected: usize) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let label = format!("{} · ", self.0.provider);
        let mut lines = vec![picker::filter_line(&label, &self.0.filter)];
        let shown = self.0.shown();
        if shown.is_empty() {
            lines.push(Line::styled(
                if self.0.models.is_empty() {
                    "The provider lists no models; /model NAME switches by name."
                } else {
                    "No model matches."
                },
                dim,
            ));
            return lines;
        }
        for (i, model) in shown.iter().enumerate() {
            let marked = i == selected.min(shown.len() - 1);
            let style = picker::row_style(marked);
            let mut spans = vec![
                Span::styled(if marked { " › " } else { "   " }, style),
                Span::styled(model.to_string(), style.add_modifier(Modifier::BOLD)),
            ];
            if **model == self.0.current {
                spans.push(Span::styled("  (current)", dim));
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
                Some(model) => OverlayKey::Model((*model).clone()),
                None => OverlayKey::Taken,
            },
            _ => OverlayKey::Pass,
        }
    }
}
