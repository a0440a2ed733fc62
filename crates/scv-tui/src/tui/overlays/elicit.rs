//! An MCP server's question as an overlay: the form of
//! [`crate::tui::elicit`], whose keys [`super::on_key`] gives it before
//! any other.

use super::{Overlay, OverlayData};
use crate::tui::elicit::ElicitForm;
use ratatui::text::Line;

pub(super) struct Elicit<'a>(pub &'a ElicitForm);

impl Overlay for Elicit<'_> {
    fn title(&self) -> &'static str {
        self.0.title()
    }

    fn lines(&self, _data: &OverlayData<'_>, _selected: usize) -> Vec<Line<'static>> {
        self.0.lines()
    }
}
