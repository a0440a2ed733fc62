//! `/diff`: the workspace's `git diff`, as [`crate::tui::diff`] ran and
//! coloured it when the overlay opened.

use super::{Overlay, OverlayData};
use ratatui::text::Line;

pub(super) struct Diff<'a>(pub &'a [Line<'static>]);

impl Overlay for Diff<'_> {
    fn title(&self) -> &'static str {
        " git diff — ↑/↓ PgUp/PgDn scroll · Esc closes "
    }

    fn lines(&self, _data: &OverlayData<'_>, _selected: usize) -> Vec<Line<'static>> {
        self.0.to_vec()
    }
}
