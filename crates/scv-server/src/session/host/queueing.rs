//! A session's queue of prompts waiting for its turn: `queue.update`,
//! `queue.move`, `queue.remove`, `session.pause`, `session.clear`, and
//! the dequeue that starts the next prompt once the session is idle.

use super::SessionHost;
use crate::agent::{EmitError, Warned};
use crate::session::reject::{check_prompt, queue_reject, Handled, Reject};
use scv_protocol::{ErrorCode, EventBody, QueueMove, QueueRemove, QueueUpdate, SessionPause};
use std::sync::Arc;

impl SessionHost {
    /// Starts the next queued prompt if the session is idle and not paused.
    pub(super) async fn dequeue_next(&mut self, session_id: &Arc<str>) {
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        if session.paused || session.active.is_some() {
            return;
        }
        let Some(next) = session.queue.pop_front() else {
            return;
        };
        let dequeued = EventBody::QueueDequeued {
            queue_id: next.entry.queue_id,
        };
        let Ok(seq) = session
            .sink
            .emit(Some(&next.request_id), None, &dequeued)
            .await
        else {
            return;
        };
        session.journal_queue(&next.request_id, Some(seq)).await;
        self.start_turn(
            session_id,
            next.request_id.into(),
            next.entry.prompt,
            Vec::new(),
            None,
        )
        .await;
    }

    pub(super) async fn queue_update(&mut self, rid: &str, update: QueueUpdate) -> Handled {
        check_prompt(&update.prompt)?;
        let session = self.session(&update.session_id)?;
        let entry = session
            .queue
            .update(&update.queue_id, update.revision, update.prompt)
            .map_err(queue_reject)?;
        let seq = session.emit(rid, &EventBody::QueueUpdated { entry }).await;
        session.journal_queue(rid, seq).await;
        Ok(())
    }

    pub(super) async fn queue_move(&mut self, rid: &str, moved: QueueMove) -> Handled {
        let session = self.session(&moved.session_id)?;
        let before = moved.before_queue_id.as_deref();
        let (entry, position) = session
            .queue
            .move_entry(&moved.queue_id, moved.revision, before)
            .map_err(queue_reject)?;
        let seq = session
            .emit(rid, &EventBody::QueueMoved { entry, position })
            .await;
        session.journal_queue(rid, seq).await;
        Ok(())
    }

    pub(super) async fn queue_remove(&mut self, rid: &str, remove: QueueRemove) -> Handled {
        let session = self.session(&remove.session_id)?;
        let entry = session
            .queue
            .remove(&remove.queue_id, remove.revision)
            .map_err(queue_reject)?;
        let removed = EventBody::QueueRemoved {
            queue_id: entry.queue_id,
        };
        let seq = session.emit(rid, &removed).await;
        session.journal_queue(rid, seq).await;
        Ok(())
    }

    /// `session.pause`, confirmed by a snapshot of the queue as it stands
    /// (the protocol has no event of its own for it).
    pub(super) async fn pause(&mut self, rid: &str, pause: SessionPause) -> Handled {
        let paused = pause.paused;
        let session = self.session(&pause.session_id)?;
        session.paused = paused;
        let snapshot = EventBody::QueueSnapshot {
            entries: session.queue.snapshot(),
        };
        let sink = session.sink.clone();
        if let Err(EmitError::TooLarge(bytes)) = sink.emit(Some(rid), None, &snapshot).await {
            // The queue's byte bound makes this unreachable; a pause is
            // still always answered.
            return Err(Reject::new(
                ErrorCode::InternalError,
                format!(
                    "the session is {}paused, but its queue snapshot ({bytes} bytes) exceeds the frame limit",
                    if paused { "" } else { "un" }
                ),
            ));
        }
        if !paused {
            let session_id = sink.session_id().clone();
            self.dequeue_next(&session_id).await;
        }
        Ok(())
    }

    pub(super) async fn clear(&mut self, rid: &str, session_id: &str) -> Handled {
        let session = self.session(session_id)?;
        if session.active.is_some() {
            return Err(Reject::new(
                ErrorCode::TurnActive,
                "a turn is running; cancel it or wait before clearing",
            ));
        }
        if let Some(history) = &mut session.history {
            history.clear();
        }
        session.queue.clear();
        session.usage = None;
        session.detail = crate::model::Usage::default();
        session.cost_usd = None;
        session.warned = Warned::default();
        if let Some(seq) = session.emit(rid, &EventBody::SessionCleared {}).await {
            if let Some(journal) = &mut session.journal {
                journal.cleared(seq);
            }
            session.tell_journal(Some(rid)).await;
        }
        Ok(())
    }
}
