//! The session host's side of checkpoints (capability `checkpoints`):
//! list, diff and restore, files and conversation. The snapshots
//! themselves are `crate::checkpoint`'s.

use super::SessionHost;
use crate::journal::history_of;
use crate::session::reject::{invalid, Handled, Reject};
use scv_protocol::{CheckpointDiff, CheckpointList, CheckpointRestore, ErrorCode, EventBody};
use std::sync::Arc;

impl SessionHost {
    /// `checkpoint.list` → `checkpoint.listed`, oldest first.
    pub(super) async fn checkpoint_list(&mut self, rid: &str, list: CheckpointList) -> Handled {
        let checkpoints = self.checkpoints_of(&list.session_id)?;
        let (checkpoints, missed) = checkpoints.list().await;
        let session = self.session(&list.session_id)?;
        session
            .emit(
                rid,
                &EventBody::CheckpointListed {
                    checkpoints,
                    missed,
                },
            )
            .await;
        Ok(())
    }

    /// `checkpoint.diff` → `checkpoint.diffed`: from the checkpoint to the
    /// workspace now.
    pub(super) async fn checkpoint_diff(&mut self, rid: &str, diff: CheckpointDiff) -> Handled {
        let checkpoints = self.checkpoints_of(&diff.session_id)?;
        let (files, text, truncated) = checkpoints.diff(&diff.checkpoint_id).await?;
        let session = self.session(&diff.session_id)?;
        let body = EventBody::CheckpointDiffed {
            checkpoint_id: diff.checkpoint_id,
            files,
            diff: text,
            truncated,
        };
        session.emit(rid, &body).await;
        Ok(())
    }

    /// `checkpoint.restore` → `checkpoint.restored`, on an idle session:
    /// the files (unless someone else changed them since, or `force`),
    /// then the conversation as it was before the checkpoint's turn.
    pub(super) async fn checkpoint_restore(
        &mut self,
        rid: &str,
        restore: CheckpointRestore,
    ) -> Handled {
        let CheckpointRestore {
            session_id,
            checkpoint_id,
            files,
            conversation,
            force,
        } = restore;
        let checkpoints = self.checkpoints_of(&session_id)?;
        {
            let session = self.session(&session_id)?;
            if session.active.is_some() {
                return Err(Reject::new(
                    ErrorCode::TurnActive,
                    "a turn is running; restore a checkpoint when the session is idle",
                ));
            }
        }
        if !files && !conversation {
            return Err(invalid(
                "nothing to restore: files and conversation are both false",
            ));
        }
        let turn_id = checkpoints.turn_of(&checkpoint_id).await?;
        // The conversation before that turn, read first: a restore that
        // cannot bring it back changes no file either.
        let history = if conversation {
            Some(self.history_before(&session_id, &turn_id).await?)
        } else {
            None
        };
        let restored = checkpoints.restore(&checkpoint_id, files, force).await?;
        let session = self.session(&session_id)?;
        let conversation_restored = match history {
            Some(mut history) => {
                history.keep_provider_data_of(session.settings.provider.wire);
                if let Some(journal) = &mut session.journal {
                    let seq = session.sink.next_seq().await;
                    journal.rewound(&turn_id, seq, &history).await;
                }
                session.tell_journal(Some(rid)).await;
                session.history = Some(history);
                true
            }
            None => false,
        };
        let body = EventBody::CheckpointRestored {
            checkpoint_id,
            files_restored: files,
            files: restored,
            conversation_restored,
        };
        session.emit(rid, &body).await;
        Ok(())
    }

    fn checkpoints_of(
        &mut self,
        session_id: &str,
    ) -> Result<Arc<crate::checkpoint::Checkpoints>, Reject> {
        self.session(session_id)?
            .checkpoints
            .clone()
            .ok_or_else(|| invalid("this server takes no checkpoints (checkpoints = false)"))
    }

    /// The session's history as it was just before turn `turn_id`, from
    /// its journal.
    async fn history_before(
        &mut self,
        session_id: &str,
        turn_id: &str,
    ) -> Result<crate::context::History, Reject> {
        let Some(store) = self.shared.store.clone() else {
            return Err(invalid(
                "restoring the conversation needs the session store (session_store = true); restore the files alone with conversation: false",
            ));
        };
        let session = self.session(session_id)?;
        if let Some(journal) = &mut session.journal {
            // The conversation is read back from the journal: it must
            // lack nothing (one more try at what waits for room).
            if journal.lacks_records() {
                return Err(invalid(format!(
                    "the conversation cannot be restored now: {}, so the session's journal lacks its latest records; free space and try again, or restore the files alone with conversation: false",
                    crate::journal::NOT_SAVED_DISK_FULL
                )));
            }
            session.tell_journal(None).await;
        }
        let (id, turn) = (session_id.to_string(), turn_id.to_string());
        let mut replay = crate::blocking::run(move || store.sessions.read_before(&id, &turn))
            .await
            .map_err(|err| Reject::new(ErrorCode::InternalError, err.to_string()))?
            .map_err(|err| invalid(err.to_string()))?
            .ok_or_else(|| invalid(format!("turn {turn_id} is not in this session's journal")))?;
        history_of(&mut replay).map_err(|why| invalid(format!("the journal cannot be read: {why}")))
    }
}
