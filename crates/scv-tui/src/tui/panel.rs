//! The frame every box of the screen shares (queue, input): rounded, cyan
//! when it has the keys, grey otherwise.

use ratatui::style::{Color, Style};
use ratatui::widgets::{Block, BorderType, Borders};

pub fn block<'a>(focused: bool) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(Style::default().fg(if focused {
            Color::Cyan
        } else {
            Color::DarkGray
        }))
}
