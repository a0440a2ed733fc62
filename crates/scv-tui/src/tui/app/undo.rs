//! Checkpoints in the TUI (capability `checkpoints`): `/undo` puts the
//! files and the conversation back to before the last turn that changed
//! files; `/rewind` picks any checkpoint of the session (its prompt, age
//! and the paths changed since) and asks before a restore that would
//! overwrite someone else's changes.

use super::events::outgoing;
use super::{App, Outgoing};
use crate::tui::overlays::{OpenOverlay, OverlayKind, RestoreScope, Rewind};
use crate::tui::transcript::ItemKind;
use scv_protocol::{
    CheckpointDiff, CheckpointInfo, CheckpointList, CheckpointRestore, ClientMessage, ErrorBody,
    FileChange, FileChangeKind,
};
use std::collections::HashMap;

/// What a checkpoint request was for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Asked {
    /// `/undo` (`force`: over conflicts).
    Undo { force: bool },
    /// `/rewind`: the picker opens on the list.
    Rewind,
    /// The paths changed since a checkpoint, for the picker.
    Diff(String),
    /// A restore; `from_picker`: a conflict asks in the picker.
    Restore {
        checkpoint_id: String,
        scope: RestoreScope,
        from_picker: bool,
    },
}

/// The TUI's side of a session's checkpoints.
#[derive(Debug, Default)]
pub(crate) struct UndoBook {
    /// Requests in flight, by request id.
    asked: HashMap<String, Asked>,
    /// Where each turn's items begin in the transcript, by turn id (a
    /// restored conversation is cut back there).
    turn_items: HashMap<String, u64>,
    /// The checkpoints as last listed, by id: the turn each was taken
    /// before, and its prompt.
    turns: HashMap<String, (String, String)>,
    /// A checkpoint was taken in this session (the first one says how to
    /// undo).
    announced: bool,
}

impl UndoBook {
    /// A new session in view: nothing of the old one applies.
    pub(crate) fn reset(&mut self) {
        *self = UndoBook::default();
    }
}

impl App {
    /// A turn's first transcript item is about to be pushed.
    pub(super) fn turn_begins(&mut self, turn_id: &str) {
        self.undo
            .turn_items
            .insert(turn_id.to_string(), self.transcript.next_id());
    }

    /// `checkpoint.created`: said once per session.
    pub(super) fn checkpoint_created(&mut self) {
        if !self.undo.announced {
            self.undo.announced = true;
            self.notice(
                "checkpoint: the workspace was saved before this turn's changes (/undo puts it back, /rewind picks an earlier one)"
                    .into(),
            );
        }
    }

    fn ask(&mut self, message: ClientMessage, asked: Asked) -> Outgoing {
        let request = self.book.client.request(message);
        self.undo.asked.insert(request.request_id.clone(), asked);
        outgoing(request)
    }

    /// `/undo [force]`.
    pub(super) fn undo(&mut self, session_id: String, arg: &str) -> Vec<Outgoing> {
        if self.turn.is_some() {
            self.hint = Some("undo when the turn has ended (Esc cancels it)".into());
            return Vec::new();
        }
        let force = arg.trim() == "force";
        vec![self.ask(
            ClientMessage::CheckpointList(CheckpointList { session_id }),
            Asked::Undo { force },
        )]
    }

    /// `/rewind`: the picker opens when the list comes.
    pub(super) fn rewind(&mut self, session_id: String) -> Vec<Outgoing> {
        if self.turn.is_some() {
            self.hint = Some("rewind when the turn has ended (Esc cancels it)".into());
            return Vec::new();
        }
        vec![self.ask(
            ClientMessage::CheckpointList(CheckpointList { session_id }),
            Asked::Rewind,
        )]
    }

    /// The picker's selection moved to `checkpoint_id`: its changed paths
    /// are asked for once.
    pub(super) fn rewind_selected(&mut self, checkpoint_id: String) -> Vec<Outgoing> {
        let Some(session_id) = self.session_id() else {
            return Vec::new();
        };
        let known = matches!(&self.overlay, Some(OpenOverlay { kind: OverlayKind::Rewind(r), .. }) if r.changes.contains_key(&checkpoint_id));
        let asking = self
            .undo
            .asked
            .values()
            .any(|a| *a == Asked::Diff(checkpoint_id.clone()));
        if known || asking {
            return Vec::new();
        }
        vec![self.ask(
            ClientMessage::CheckpointDiff(CheckpointDiff {
                session_id,
                checkpoint_id: checkpoint_id.clone(),
            }),
            Asked::Diff(checkpoint_id),
        )]
    }

    /// A restore chosen in the picker (`force` after the user agreed).
    pub(super) fn restore(
        &mut self,
        checkpoint_id: String,
        scope: RestoreScope,
        force: bool,
    ) -> Vec<Outgoing> {
        let Some(session_id) = self.session_id() else {
            return Vec::new();
        };
        vec![self.ask(
            ClientMessage::CheckpointRestore(CheckpointRestore {
                session_id,
                checkpoint_id: checkpoint_id.clone(),
                files: scope.files(),
                conversation: scope.conversation(),
                force,
            }),
            Asked::Restore {
                checkpoint_id,
                scope,
                from_picker: true,
            },
        )]
    }

    /// Whether `request_id` is a checkpoint request of this view.
    pub(super) fn is_checkpoint_answer(&self, request_id: Option<&String>) -> bool {
        request_id.is_some_and(|rid| self.undo.asked.contains_key(rid))
    }

    /// `checkpoint.listed`.
    pub(super) fn checkpoints_listed(
        &mut self,
        rid: &str,
        checkpoints: Vec<CheckpointInfo>,
        missed: Option<scv_protocol::MissedCheckpoint>,
    ) {
        let Some(asked) = self.undo.asked.remove(rid) else {
            return;
        };
        if let (Asked::Undo { .. }, Some(missed)) = (&asked, &missed) {
            // The newest checkpoint is older than the last turn that
            // changed files: restoring it would not undo that turn alone.
            self.transcript.push(ItemKind::Error {
                code: "undo".into(),
                message: format!(
                    "cannot undo: the last turn that changed files ran without an undo point ({}); its changes stay as they are (/rewind picks an earlier checkpoint, which would undo it too)",
                    missed.message
                ),
            });
            return;
        }
        self.undo.turns = checkpoints
            .iter()
            .map(|c| {
                let turn = (c.turn_id.clone(), c.prompt.clone());
                (c.checkpoint_id.clone(), turn)
            })
            .collect();
        match asked {
            Asked::Undo { force } => {
                let Some(last) = checkpoints.last() else {
                    self.notice("nothing to undo: no turn of this session changed files".into());
                    return;
                };
                let Some(session_id) = self.session_id() else {
                    return;
                };
                let restore = self.ask(
                    ClientMessage::CheckpointRestore(CheckpointRestore {
                        session_id,
                        checkpoint_id: last.checkpoint_id.clone(),
                        files: true,
                        conversation: true,
                        force,
                    }),
                    Asked::Restore {
                        checkpoint_id: last.checkpoint_id.clone(),
                        scope: RestoreScope::Both,
                        from_picker: false,
                    },
                );
                self.book_outbox(restore);
            }
            Asked::Rewind => {
                if checkpoints.is_empty() {
                    self.notice("no checkpoints yet: no turn of this session changed files".into());
                    return;
                }
                let now = scv_store::now_unix();
                let first = checkpoints.last().map(|c| c.checkpoint_id.clone());
                let mut open = OpenOverlay::new(OverlayKind::Rewind(Box::new(Rewind {
                    // Newest first, as a picker reads.
                    checkpoints: checkpoints.into_iter().rev().collect(),
                    changes: HashMap::new(),
                    conflicts: None,
                    now,
                })));
                open.selected = 0;
                self.overlay = Some(open);
                if let Some(first) = first {
                    for out in self.rewind_selected(first) {
                        self.book_outbox(out);
                    }
                }
            }
            Asked::Diff(_) | Asked::Restore { .. } => {}
        }
    }

    /// `checkpoint.diffed`: the picker shows the paths.
    pub(super) fn checkpoint_diffed(
        &mut self,
        rid: &str,
        checkpoint_id: String,
        files: Vec<FileChange>,
    ) {
        self.undo.asked.remove(rid);
        if let Some(OpenOverlay {
            kind: OverlayKind::Rewind(rewind),
            ..
        }) = self.overlay.as_mut()
        {
            rewind.changes.insert(checkpoint_id, files);
        }
    }

    /// `checkpoint.restored`: what changed, and the conversation cut back.
    pub(super) fn checkpoint_restored(
        &mut self,
        rid: &str,
        checkpoint_id: &str,
        files: Vec<FileChange>,
        conversation: bool,
    ) {
        let scope = match self.undo.asked.remove(rid) {
            Some(Asked::Restore { scope, .. }) => scope,
            _ => RestoreScope::Both,
        };
        if matches!(
            &self.overlay,
            Some(OpenOverlay {
                kind: OverlayKind::Rewind(_),
                ..
            })
        ) {
            self.overlay = None;
        }
        let mut prompt_back = false;
        if conversation {
            let turn = self.undo.turns.get(checkpoint_id).cloned();
            let start = turn
                .as_ref()
                .and_then(|(turn, _)| self.undo.turn_items.get(turn))
                .copied();
            if let Some(start) = start {
                self.transcript.truncate_from(start);
            }
            // The undone prompt comes back to be edited and sent again
            // (as Claude Code's rewind does), unless a draft is there.
            if let Some((_, prompt)) = turn.filter(|(_, p)| !p.is_empty()) {
                if self.input.is_empty() && self.input.editing().is_none() {
                    self.input.set(&prompt);
                    prompt_back = true;
                }
            }
        }
        let mut note = if scope.files() {
            restored_note(&files, conversation)
        } else {
            "rewound: the conversation is back to before that turn; the files stay as they are"
                .to_string()
        };
        if scope == RestoreScope::Files {
            note.push_str("; the conversation stays as it is");
        }
        if prompt_back {
            note.push_str("; its prompt is back in the input box");
        }
        self.notice(note);
    }

    /// An error answering a checkpoint request: a conflict asks (in the
    /// picker) or says how to force it (`/undo force`).
    pub(super) fn checkpoint_error(&mut self, rid: &str, error: ErrorBody) {
        let asked = self.undo.asked.remove(rid);
        if let (
            Some(Asked::Restore {
                checkpoint_id,
                scope,
                from_picker: true,
            }),
            Some(conflicts),
        ) = (&asked, &error.conflicts)
        {
            if let Some(OpenOverlay {
                kind: OverlayKind::Rewind(rewind),
                ..
            }) = self.overlay.as_mut()
            {
                rewind.conflicts = Some((checkpoint_id.clone(), *scope, conflicts.clone()));
                return;
            }
        }
        let message = match (&asked, &error.conflicts) {
            (Some(Asked::Restore { .. }), Some(conflicts)) => format!(
                "not undone: {} changed since by someone other than the agent: {} — `/undo force` restores anyway",
                if conflicts.len() == 1 { "this path was" } else { "these paths were" },
                conflicts.join(", ")
            ),
            _ => error.message,
        };
        self.transcript.push(ItemKind::Error {
            code: error.code.as_str().to_string(),
            message,
        });
    }
}

/// "restored 3 files (2 modified, 1 deleted): a.rs, b.rs, c.rs".
fn restored_note(files: &[FileChange], conversation: bool) -> String {
    let count = |kind: FileChangeKind| files.iter().filter(|f| f.change == kind).count();
    let mut parts = Vec::new();
    for (kind, word) in [
        (FileChangeKind::Modified, "put back"),
        (FileChangeKind::Added, "recreated"),
        (FileChangeKind::Deleted, "removed"),
    ] {
        let n = count(kind);
        if n > 0 {
            parts.push(format!("{n} {word}"));
        }
    }
    let mut note = if files.is_empty() {
        "undone: no file needed changing".to_string()
    } else {
        let shown: Vec<&str> = files.iter().take(5).map(|f| f.path.as_str()).collect();
        let more = files.len().saturating_sub(shown.len());
        format!(
            "undone: {} file{} ({}): {}{}",
            files.len(),
            if files.len() == 1 { "" } else { "s" },
            parts.join(", "),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    };
    if conversation {
        note.push_str("; the conversation is back to before that turn");
    }
    note
}
