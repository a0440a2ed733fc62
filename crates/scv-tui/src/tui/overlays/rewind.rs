//! The checkpoint picker (`/rewind`): the session's checkpoints, newest
//! first, each with its turn's prompt, its age and — once the daemon
//! says — the paths changed since. Enter restores the selected one
//! (files and conversation), `f` the files only, `c` the conversation
//! only (Claude Code's rewind offers the same three); when someone other
//! than the agent changed a path since, the picker lists them and asks
//! before forcing.

use super::{Overlay, OverlayData, OverlayKey};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use scv_protocol::{CheckpointInfo, FileChange, FileChangeKind};
use std::collections::HashMap;

/// Paths shown under the selected checkpoint.
const SHOWN_PATHS: usize = 8;

/// What a restore puts back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestoreScope {
    /// Files and conversation (Enter, `/undo`).
    Both,
    /// The workspace's files; the conversation stays.
    Files,
    /// The conversation; the files stay as they are.
    Conversation,
}

impl RestoreScope {
    pub fn files(self) -> bool {
        self != RestoreScope::Conversation
    }

    pub fn conversation(self) -> bool {
        self != RestoreScope::Files
    }
}

#[derive(Debug, Clone)]
pub struct Rewind {
    /// Newest first.
    pub checkpoints: Vec<CheckpointInfo>,
    /// What changed since each checkpoint, as far as asked.
    pub changes: HashMap<String, Vec<FileChange>>,
    /// A restore (of this checkpoint, this scope) refused for these
    /// paths: the picker asks to force it.
    pub conflicts: Option<(String, RestoreScope, Vec<String>)>,
    /// When the list came (unix seconds), for ages.
    pub now: u64,
}

pub(super) struct Checkpoints<'a>(pub &'a Rewind);

fn mark(change: FileChangeKind) -> &'static str {
    match change {
        FileChangeKind::Added => "+",
        FileChangeKind::Modified => "~",
        FileChangeKind::Deleted => "-",
    }
}

impl Overlay for Checkpoints<'_> {
    fn title(&self) -> &'static str {
        " Rewind — ↑/↓ select · Enter files and conversation · f files only · c conversation only · Esc closes "
    }

    fn lines(&self, _data: &OverlayData<'_>, selected: usize) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let warn = Style::default().fg(Color::Yellow);
        let mut lines = Vec::new();
        if let Some((_, _, conflicts)) = &self.0.conflicts {
            lines.push(Line::styled(
                "Changed since by someone other than the agent — a restore overwrites them:",
                warn.add_modifier(Modifier::BOLD),
            ));
            for path in conflicts.iter().take(SHOWN_PATHS) {
                lines.push(Line::styled(format!("    {path}"), warn));
            }
            if conflicts.len() > SHOWN_PATHS {
                lines.push(Line::styled(
                    format!("    and {} more", conflicts.len() - SHOWN_PATHS),
                    warn,
                ));
            }
            lines.push(Line::styled("Restore anyway? y / n", warn));
            lines.push(Line::raw(""));
        }
        let selected = selected.min(self.0.checkpoints.len().saturating_sub(1));
        for (i, c) in self.0.checkpoints.iter().enumerate() {
            let marked = i == selected;
            let style = if marked {
                Style::default().fg(Color::Black).bg(Color::Cyan)
            } else {
                Style::default()
            };
            let prompt = c.prompt.lines().next().unwrap_or_default();
            let prompt: String = prompt.chars().take(80).collect();
            let age = crate::sessions_cmd::age(self.0.now.saturating_sub(c.created_unix_seconds));
            lines.push(Line::from(vec![
                Span::styled(if marked { " › " } else { "   " }, style),
                Span::styled(
                    format!("before “{prompt}”"),
                    style.add_modifier(Modifier::BOLD),
                ),
                Span::styled(format!("  {age}"), if marked { style } else { dim }),
            ]));
            if !marked {
                continue;
            }
            match self.0.changes.get(&c.checkpoint_id) {
                None => lines.push(Line::styled("      (looking at what changed since…)", dim)),
                Some(files) if files.is_empty() => {
                    lines.push(Line::styled("      nothing changed since", dim))
                }
                Some(files) => {
                    for f in files.iter().take(SHOWN_PATHS) {
                        lines.push(Line::styled(
                            format!("      {} {}", mark(f.change), f.path),
                            dim,
                        ));
                    }
                    if files.len() > SHOWN_PATHS {
                        lines.push(Line::styled(
                            format!("      and {} more", files.len() - SHOWN_PATHS),
                            dim,
                        ));
                    }
                }
            }
        }
        lines
    }

    fn on_key(&self, key: KeyEvent, _data: &OverlayData<'_>, selected: &mut usize) -> OverlayKey {
        let count = self.0.checkpoints.len();
        if let Some((checkpoint_id, scope, _)) = &self.0.conflicts {
            return match key.code {
                KeyCode::Char('y') => OverlayKey::Restore {
                    checkpoint_id: checkpoint_id.clone(),
                    scope: *scope,
                    force: true,
                },
                KeyCode::Char('n') => OverlayKey::Close,
                _ => OverlayKey::Taken,
            };
        }
        let moved = match key.code {
            KeyCode::Up => {
                *selected = selected.saturating_sub(1);
                true
            }
            KeyCode::Down => {
                *selected = (*selected + 1).min(count.saturating_sub(1));
                true
            }
            KeyCode::Enter | KeyCode::Char('f') | KeyCode::Char('c') => {
                let scope = match key.code {
                    KeyCode::Char('f') => RestoreScope::Files,
                    KeyCode::Char('c') => RestoreScope::Conversation,
                    _ => RestoreScope::Both,
                };
                return match self
                    .0
                    .checkpoints
                    .get((*selected).min(count.saturating_sub(1)))
                {
                    Some(c) => OverlayKey::Restore {
                        checkpoint_id: c.checkpoint_id.clone(),
                        scope,
                        force: false,
                    },
                    None => OverlayKey::Taken,
                };
            }
            _ => return OverlayKey::Pass,
        };
        match (moved, self.0.checkpoints.get(*selected)) {
            (true, Some(c)) => OverlayKey::SelectCheckpoint(c.checkpoint_id.clone()),
            _ => OverlayKey::Taken,
        }
    }
}
