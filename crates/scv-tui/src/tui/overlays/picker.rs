//! What the pickers (sessions, models) share: the filter line at the top,
//! the marked row's style, and ↑/↓ moving the selection.

use crossterm::event::KeyCode;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

/// Whether `hay` holds every word of `filter`, case aside (an empty filter
/// keeps everything).
pub(super) fn keeps(filter: &str, hay: &str) -> bool {
    let hay = hay.to_lowercase();
    filter
        .split_whitespace()
        .all(|word| hay.contains(&word.to_lowercase()))
}

/// `LABEL filter: TEXT▏`, the first line of a picker.
pub(super) fn filter_line(label: &str, filter: &str) -> Line<'static> {
    let dim = Style::default().fg(Color::DarkGray);
    Line::from(vec![
        Span::styled(format!("{label}filter: "), dim),
        Span::raw(filter.to_string()),
        Span::styled("▏", dim),
    ])
}

/// The style of a row: inverted when it is the selected one.
pub(super) fn row_style(marked: bool) -> Style {
    if marked {
        Style::default().fg(Color::Black).bg(Color::Cyan)
    } else {
        Style::default()
    }
}

/// ↑/↓ move `selected` within `len` rows; whether the key was one of them.
pub(super) fn move_selection(code: KeyCode, selected: &mut usize, len: usize) -> bool {
    match code {
        KeyCode::Up => *selected = selected.saturating_sub(1),
        KeyCode::Down => *selected = (*selected + 1).min(len.saturating_sub(1)),
        _ => return false,
    }
    true
}
