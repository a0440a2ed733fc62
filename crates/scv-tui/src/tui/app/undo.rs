//! Checkpoints in the TUI (capability `checkpoints`): `/undo` puts the
//! files and the conversation back to before the last turn that changed
//! files; `/rewind` picks any checkpoint of the session (its prompt, age
//! and the paths changed since) and asks before a restore that would
//! overwrite someone else's changes.

use super::{outgoing, App, Outgoing};
use crate::tui::input_box::InputBox;
use crate::tui::overlays::{OpenOverlay, OverlayKind, RestoreScope, Rewind};
use crate::tui::transcript::{ItemKind, Transcript};
use scv_client::session::SessionClient;
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

/// The TUI's side of a session's checkpoints: a component that owns the
/// requests in flight and where each turn begins, and is handed the parts
/// of the screen an answer changes ([`Screen`]).
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

/// What a checkpoint answer may change: the App's parts, lent for the call.
pub(super) struct Screen<'a> {
    pub client: &'a mut SessionClient,
    pub transcript: &'a mut Transcript,
    pub overlay: &'a mut Option<OpenOverlay>,
    pub input: &'a mut InputBox,
    pub session_id: Option<String>,
    /// Requests an answer makes (the restore after `/undo`'s list).
    pub outbox: &'a mut Vec<Outgoing>,
}

/// A checkpoint answer of the session client.
pub(super) enum Answered {
    Listed(Vec<CheckpointInfo>, Option<scv_protocol::MissedCheckpoint>),
    Diffed(String, Vec<FileChange>),
    Restored(String, Vec<FileChange>, bool),
}

impl UndoBook {
    /// A new session in view: nothing of the old one applies.
    pub(crate) fn reset(&mut self) {
        *self = UndoBook::default();
    }

    /// A turn's first transcript item will be `item`.
    pub(super) fn turn_begins(&mut self, turn_id: &str, item: u64) {
        self.turn_items.insert(turn_id.to_string(), item);
    }

    /// `checkpoint.created`: the note, said once per session.
    pub(super) fn created(&mut self) -> Option<String> {
        (!std::mem::replace(&mut self.announced, true)).then(|| {
            "checkpoint: the workspace was saved before this turn's changes (/undo puts it back, /rewind picks an earlier one)"
                .into()
        })
    }

    fn ask(
        &mut self,
        client: &mut SessionClient,
        message: ClientMessage,
        asked: Asked,
    ) -> Outgoing {
        let request = client.request(message);
        self.asked.insert(request.request_id.clone(), asked);
        outgoing(request)
    }

    /// `/undo [force]` asks for the list first.
    fn undo(&mut self, client: &mut SessionClient, session_id: String, arg: &str) -> Outgoing {
        let force = arg.trim() == "force";
        let list = ClientMessage::CheckpointList(CheckpointList { session_id });
        self.ask(client, list, Asked::Undo { force })
    }

    /// `/rewind`: the picker opens when the list comes.
    fn rewind(&mut self, client: &mut SessionClient, session_id: String) -> Outgoing {
        let list = ClientMessage::CheckpointList(CheckpointList { session_id });
        self.ask(client, list, Asked::Rewind)
    }

    /// The picker's selection moved to `checkpoint_id`: its changed paths
    /// are asked for once.
    fn selected(&mut self, screen: Screen<'_>, checkpoint_id: String) -> Vec<Outgoing> {
        let Some(session_id) = screen.session_id else {
            return Vec::new();
        };
        let known = matches!(&screen.overlay, Some(OpenOverlay { kind: OverlayKind::Rewind(r), .. }) if r.changes.contains_key(&checkpoint_id));
        let asking = self
            .asked
            .values()
            .any(|a| *a == Asked::Diff(checkpoint_id.clone()));
        if known || asking {
            return Vec::new();
        }
        let diff = ClientMessage::CheckpointDiff(CheckpointDiff {
            session_id,
            checkpoint_id: checkpoint_id.clone(),
        });
        vec![self.ask(screen.client, diff, Asked::Diff(checkpoint_id))]
    }

    /// A restore of `checkpoint_id` (`force` after the user agreed).
    fn restore(
        &mut self,
        client: &mut SessionClient,
        session_id: String,
        checkpoint_id: String,
        scope: RestoreScope,
        from_picker: bool,
        force: bool,
    ) -> Outgoing {
        let restore = ClientMessage::CheckpointRestore(CheckpointRestore {
            session_id,
            checkpoint_id: checkpoint_id.clone(),
            files: scope.files(),
            conversation: scope.conversation(),
            force,
        });
        let asked = Asked::Restore {
            checkpoint_id,
            scope,
            from_picker,
        };
        self.ask(client, restore, asked)
    }

    /// Whether `request_id` is a checkpoint request of this view.
    pub(super) fn is_answer(&self, request_id: Option<&String>) -> bool {
        request_id.is_some_and(|rid| self.asked.contains_key(rid))
    }

    /// An answer to the checkpoint request `rid`.
    pub(super) fn answered(&mut self, screen: Screen<'_>, rid: &str, answer: Answered) {
        match answer {
            Answered::Listed(checkpoints, missed) => self.listed(screen, rid, checkpoints, missed),
            Answered::Diffed(checkpoint_id, files) => {
                self.asked.remove(rid);
                if let Some(OpenOverlay {
                    kind: OverlayKind::Rewind(rewind),
                    ..
                }) = screen.overlay.as_mut()
                {
                    rewind.changes.insert(checkpoint_id, files);
                }
            }
            Answered::Restored(checkpoint_id, files, conversation) => {
                self.restored(screen, rid, &checkpoint_id, files, conversation)
            }
        }
    }

    /// `checkpoint.listed`.
    fn listed(
        &mut self,
        screen: Screen<'_>,
        rid: &str,
        checkpoints: Vec<CheckpointInfo>,
        missed: Option<scv_protocol::MissedCheckpoint>,
    ) {
        let Some(asked) = self.asked.remove(rid) else {
            return;
        };
        if let (Asked::Undo { .. }, Some(missed)) = (&asked, &missed) {
            // The newest checkpoint is older than the last turn that
            // changed files: restoring it would not undo that turn alone.
            screen.transcript.push(ItemKind::Error {
                code: "undo".into(),
                message: format!(
                    "cannot undo: the last turn that changed files ran without an undo point ({}); its changes stay as they are (/rewind picks an earlier checkpoint, which would undo it too)",
                    missed.message
                ),
            });
            return;
        }
        self.turns = checkpoints
            .iter()
            .map(|c| {
                let turn = (c.turn_id.clone(), c.prompt.clone());
                (c.checkpoint_id.clone(), turn)
            })
            .collect();
        match asked {
            Asked::Undo { force } => {
                let Some(last) = checkpoints.last() else {
                    screen.transcript.push(ItemKind::Notice(
                        "nothing to undo: no turn of this session changed files".into(),
                    ));
                    return;
                };
                let Some(session_id) = screen.session_id else {
                    return;
                };
                let id = last.checkpoint_id.clone();
                let restore = self.restore(
                    screen.client,
                    session_id,
                    id,
                    RestoreScope::Both,
                    false,
                    force,
                );
                screen.outbox.push(restore);
            }
            Asked::Rewind => {
                if checkpoints.is_empty() {
                    screen.transcript.push(ItemKind::Notice(
                        "no checkpoints yet: no turn of this session changed files".into(),
                    ));
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
                *screen.overlay = Some(open);
                if let Some(first) = first {
                    let outbox = &mut *screen.outbox;
                    let asks = self.selected(
                        Screen {
                            outbox: &mut Vec::new(),
                            ..screen
                        },
                        first,
                    );
                    outbox.extend(asks);
                }
            }
            Asked::Diff(_) | Asked::Restore { .. } => {}
        }
    }

    /// `checkpoint.restored`: what changed, and the conversation cut back.
    fn restored(
        &mut self,
        screen: Screen<'_>,
        rid: &str,
        checkpoint_id: &str,
        files: Vec<FileChange>,
        conversation: bool,
    ) {
        let scope = match self.asked.remove(rid) {
            Some(Asked::Restore { scope, .. }) => scope,
            _ => RestoreScope::Both,
        };
        if matches!(
            &screen.overlay,
            Some(OpenOverlay {
                kind: OverlayKind::Rewind(_),
                ..
            })
        ) {
            *screen.overlay = None;
        }
        let mut prompt_back = false;
        if conversation {
            let turn = self.turns.get(checkpoint_id).cloned();
            let start = turn
                .as_ref()
                .and_then(|(turn, _)| self.turn_items.get(turn))
                .copied();
            if let Some(start) = start {
                screen.transcript.truncate_from(start);
            }
            // The undone prompt comes back to be edited and sent again
            // (as Claude Code's rewind does), unless a draft is there.
            if let Some((_, prompt)) = turn.filter(|(_, p)| !p.is_empty()) {
                if screen.input.is_empty() && screen.input.editing().is_none() {
                    screen.input.set(&prompt);
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
        screen.transcript.push(ItemKind::Notice(note));
    }

    /// An error answering a checkpoint request: a conflict asks (in the
    /// picker) or says how to force it (`/undo force`).
    pub(super) fn error(&mut self, screen: Screen<'_>, rid: &str, error: ErrorBody) {
        let asked = self.asked.remove(rid);
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
            }) = screen.overlay.as_mut()
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
        screen.transcript.push(ItemKind::Error {
            code: error.code.as_str().to_string(),
            message,
        });
    }
}

/// The App's parts a checkpoint answer changes, lent to [`UndoBook`].
macro_rules! screen {
    ($app:ident) => {
        Screen {
            client: &mut $app.book.client,
            transcript: &mut $app.transcript,
            overlay: &mut $app.overlay,
            input: &mut $app.input,
            session_id: $app.session.as_ref().map(|s| s.session_id.clone()),
            outbox: &mut $app.book.outbox,
        }
    };
}

impl App {
    /// `/undo [force]`, `/rewind`: only while idle.
    pub(super) fn undo(&mut self, session_id: String, arg: Option<&str>) -> Vec<Outgoing> {
        if self.turn.is_some() {
            let what = if arg.is_some() { "undo" } else { "rewind" };
            self.hint = Some(format!("{what} when the turn has ended (Esc cancels it)"));
            return Vec::new();
        }
        let client = &mut self.book.client;
        vec![match arg {
            Some(arg) => self.undo.undo(client, session_id, arg),
            None => self.undo.rewind(client, session_id),
        }]
    }

    /// The picker's selection moved to `checkpoint_id`.
    pub(super) fn rewind_selected(&mut self, checkpoint_id: String) -> Vec<Outgoing> {
        self.undo.selected(screen!(self), checkpoint_id)
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
        let client = &mut self.book.client;
        vec![self
            .undo
            .restore(client, session_id, checkpoint_id, scope, true, force)]
    }

    /// An answer (or error) to a checkpoint request of ours.
    pub(super) fn checkpoint_answer(&mut self, rid: &str, answer: Result<Answered, ErrorBody>) {
        match answer {
            Ok(answer) => self.undo.answered(screen!(self), rid, answer),
            Err(error) => self.undo.error(screen!(self), rid, error),
        }
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
