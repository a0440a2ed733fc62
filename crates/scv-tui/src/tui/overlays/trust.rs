//! The trust prompt: a session opened in a workspace whose repository
//! configuration (hooks, MCP servers, permission rules) does not run
//! because the workspace is not trusted, or because a file changed since
//! it was. It lists what trusting enables; `y` trusts it (as `scv trust`
//! does), `n` or Esc leaves it as it is.

use super::{Overlay, OverlayData, OverlayKey};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use scv_protocol::WorkspaceTrust;

pub(super) struct Trust<'a>(pub &'a WorkspaceTrust);

impl Overlay for Trust<'_> {
    fn title(&self) -> &'static str {
        " Trust this workspace? — y trust · n / Esc not now "
    }

    fn lines(&self, _data: &OverlayData<'_>, _selected: usize) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let trust = self.0;
        let mut lines = vec![
            Line::styled(trust.workspace.clone(), bold),
            Line::raw(if trust.trusted {
                "Files below changed since you trusted this workspace (by you, a tool or the model); they do not run until you trust them again."
            } else {
                "This repository ships configuration that can run commands or change what is allowed. None of it runs until you trust the workspace."
            }),
            Line::default(),
        ];
        for file in &trust.files {
            let state = match file.state.as_str() {
                "trusted" => "trusted",
                "changed" => "changed since trusted",
                _ => "not trusted",
            };
            lines.push(Line::from(vec![
                Span::styled(format!("  {}", file.path), bold),
                Span::styled(format!("  ({state})"), dim),
            ]));
            for what in &file.enables {
                lines.push(Line::raw(format!("      {what}")));
            }
        }
        lines.push(Line::default());
        lines.push(Line::styled(
            "Trusting it lets these run and apply from the next turn: hooks inside the sandbox, MCP servers, rules. A file changed later is asked about again. `scv trust --revoke DIR` undoes it.",
            dim,
        ));
        lines
    }

    fn on_key(&self, key: KeyEvent, _data: &OverlayData<'_>, _selected: &mut usize) -> OverlayKey {
        match key.code {
            KeyCode::Char('y') => OverlayKey::TrustWorkspace,
            KeyCode::Char('n') => OverlayKey::Close,
            _ => OverlayKey::Taken,
        }
    }
}
