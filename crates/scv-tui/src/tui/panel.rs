//! What the boxes of the screen share: the frame (queue, input): rounded,
//! cyan when it has the keys, grey otherwise; and the "more below" tag of
//! a box that scrolls (transcript, overlays).

use ratatui::layout::Rect;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Borders, Paragraph};
use ratatui::Frame;

pub(super) fn block<'a>(focused: bool) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(Style::default().fg(if focused {
            Color::Cyan
        } else {
            Color::DarkGray
        }))
}

/// The "more below" tag in the bottom-right corner of `area`, `inset`
/// columns from its right edge.
pub(super) fn more_below(frame: &mut Frame, area: Rect, tag: String, inset: u16) {
    let width = tag.chars().count() as u16;
    let corner = Rect::new(
        area.right().saturating_sub(width + inset),
        area.bottom().saturating_sub(1),
        width.min(area.width),
        1,
    );
    frame.render_widget(
        Paragraph::new(Line::styled(
            tag,
            Style::default().fg(Color::Black).bg(Color::Yellow),
        )),
        corner,
    );
}
