//! `/help`: the keys, then the slash commands as their table lists them,
//! then the session's custom commands and skills.

use super::{heading, pair, Overlay, OverlayData};
use ratatui::text::Line;

pub(super) struct Help;

const KEYS: &[(&str, &str)] = &[
    ("Enter", "send the message (queued while a turn runs)"),
    ("Shift+Enter, Ctrl+J", "new line"),
    ("↑ / ↓", "prompt history"),
    ("Esc", "cancel the turn (closes an overlay first)"),
    (
        "",
        "an approval waiting: Esc denies it and cancels the turn",
    ),
    ("Ctrl+C", "clear the box, else cancel the turn; twice quits"),
    ("Ctrl+D", "quit (empty input)"),
    ("Ctrl+L", "redraw the screen"),
    (
        "Ctrl+T",
        "mouse capture on/off (off: select text; on: wheel scrolls)",
    ),
    (
        "Ctrl+O",
        "subagent transcripts (←/→ others, Ctrl+X cancels)",
    ),
    ("", "no subagents, or in there: expand output and thinking"),
    (
        "PgUp / PgDn, wheel",
        "scroll the transcript; End follows it again",
    ),
    ("Tab", "complete a command or an @path; focus the queue"),
    (
        "Shift+Tab",
        "plan mode on/off: look and plan, change nothing",
    ),
    (
        "queue",
        "↑/↓ select · e edit · u/d move · x remove · p pause",
    ),
    (
        "approval",
        "empty box: ↑↓ Enter or 1 once · 2 always (rule) · 3 no",
    ),
    ("@path", "mention a file; Tab completes (.gitignore kept)"),
];

impl Overlay for Help {
    fn title(&self) -> &'static str {
        " Help — Esc closes "
    }

    fn lines(&self, data: &OverlayData<'_>, _selected: usize) -> Vec<Line<'static>> {
        let mut lines = vec![heading("Keys")];
        lines.extend(KEYS.iter().map(|(k, w)| pair(k, w, 20)));
        lines.push(Line::default());
        lines.push(heading("Commands"));
        lines.extend(data.commands.iter().map(|(c, w)| pair(c, w, 20)));
        lines
    }
}
