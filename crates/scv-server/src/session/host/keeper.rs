//! The task keeping one detached session: a session host holding that
//! session alone, driven by its inbox (requests of the connections
//! attached, attachments, `session.close`) and by its turn's end, until
//! `session.close` or the daemon's stop. Nothing it does starts a turn
//! by itself but the queue the session already had.

use super::SessionHost;
use crate::attach::{Answer, Command, Refusal, Status};
use crate::session::reject::Handled;
use crate::transport::{encode, Outbound};
use scv_protocol::{ErrorCode, Event, EventBody, TranscriptItem};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Keeps `session_id` (the only session of `host`) live until closed.
pub(super) async fn keep(
    mut host: SessionHost,
    session_id: Arc<str>,
    mut inbox: mpsc::Receiver<Command>,
    status: Arc<Status>,
) {
    let shutdown = host.shared.detached.shutdown.clone();
    let closing: Option<(String, Outbound, oneshot::Sender<Answer>)> = loop {
        status.set(host.cost(&session_id));
        tokio::select! {
            biased;
            _ = shutdown.cancelled() => break None,
            Some(joined) = host.next_finished(), if host.has_turns() => {
                Box::pin(host.finish(joined)).await;
            }
            command = inbox.recv() => match command {
                None => break None,
                Some(Command::Request { rid, message, out, answer }) => {
                    host.out = out;
                    let handled = Box::pin(host.handle(&rid, *message)).await;
                    let _ = answer.send(refusal(handled));
                }
                Some(Command::Attach { rid, conn, out, answer }) => {
                    let attached = Box::pin(host.attach_here(&rid, &session_id, conn, out, &status)).await;
                    let _ = answer.send(attached);
                }
                Some(Command::Gone { conn }) => status.sink.fan().remove(conn),
                Some(Command::Close { rid, out, answer }) => break Some((rid, out, answer)),
            },
        }
    };
    host.shared.detached.remove(&session_id);
    inbox.close();
    // Cancels the turn (its terminal event reaches the attached), drops
    // the queue, closes the journal.
    Box::pin(host.close()).await;
    let closed = |rid: Option<String>| {
        encode(
            Event {
                session_id: Some(session_id.to_string()),
                ..Event::reply(rid, EventBody::SessionClosed {})
            }
            .as_ref(),
        )
    };
    let fan = status.sink.fan();
    let requester = closing
        .as_ref()
        .map(|(rid, out, _)| (rid.clone(), out.clone()));
    for out in fan.take_all() {
        if requester
            .as_ref()
            .is_some_and(|(_, asked)| asked.same(&out))
        {
            continue;
        }
        let _ = out.send(closed(None)).await;
    }
    if let Some((rid, out, answer)) = closing {
        let _ = out.send(closed(Some(rid))).await;
        let _ = answer.send(Ok(()));
    }
    tracing::info!("detached session {session_id} closed");
}

impl SessionHost {
    /// `session.attach` in the keeper: `session.attached`, the queue, the
    /// transcript and the waiting approvals to `out`, then live events.
    async fn attach_here(
        &mut self,
        rid: &str,
        session_id: &Arc<str>,
        conn: u64,
        out: Outbound,
        status: &Status,
    ) -> Answer {
        let Some(session) = self.sessions.get(session_id) else {
            return Err(refused(
                ErrorCode::SessionNotFound,
                "the session is closing",
            ));
        };
        let reply = |body: EventBody| {
            encode(
                Event {
                    session_id: Some(session_id.to_string()),
                    ..Event::reply(Some(rid.to_string()), body)
                }
                .as_ref(),
            )
        };
        let state = status.info().state;
        let snapshot = reply(EventBody::QueueSnapshot {
            entries: session.queue.snapshot(),
        });
        let running = session
            .active
            .as_ref()
            .map(|a| (a.turn_id.to_string(), a.prompt.clone()));
        let (items, truncated) = self.transcript_now(session_id, running).await;
        let transcript = reply(EventBody::SessionTranscript { items, truncated });
        let Some(session) = self.sessions.get(session_id) else {
            return Err(refused(
                ErrorCode::SessionNotFound,
                "the session is closing",
            ));
        };
        let mut attached = Event {
            session_id: Some(session_id.to_string()),
            ..Event::reply(
                Some(rid.to_string()),
                EventBody::SessionAttached(scv_protocol::SessionAttached {
                    state,
                    cwd: Some(session.settings.cwd.display().to_string()),
                    provider: Some(session.settings.provider.name.clone()),
                    model: Some(session.settings.provider.model.clone()),
                    context_max_tokens: Some(session.settings.context_max_tokens),
                }),
            )
        };
        // The turn running now, so the client can cancel it.
        attached.turn_id = session.active.as_ref().map(|a| a.turn_id.to_string());
        let attached = encode(attached.as_ref());
        match session
            .sink
            .attach(conn, out, attached, vec![snapshot, transcript])
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(refused(
                ErrorCode::InvalidRequest,
                format!(
                    "session {session_id} has {} connections attached, its limit",
                    scv_protocol::MAX_ATTACHMENTS_PER_SESSION
                ),
            )),
            Err(_) => Err(refused(
                ErrorCode::InternalError,
                "the connection stopped reading while it attached",
            )),
        }
    }

    /// The session's transcript as its journal holds it now; the running
    /// turn (`running`: its id and prompt) as its prompt alone.
    async fn transcript_now(
        &self,
        session_id: &str,
        running: Option<(String, Option<String>)>,
    ) -> (Vec<TranscriptItem>, bool) {
        let Some(store) = self.shared.store.clone() else {
            return (running_item(running).into_iter().collect(), false);
        };
        let id = session_id.to_string();
        let read = crate::blocking::run(move || store.sessions.read(&id, None)).await;
        let mut replay = match read {
            Ok(Ok(replay)) => replay,
            _ => return (running_item(running).into_iter().collect(), true),
        };
        if let Some((turn_id, _)) = &running {
            replay.turns.retain(|t| &t.turn_id != turn_id);
        }
        let (mut items, truncated) = scv_store::transcript(&replay.turns);
        items.extend(running_item(running));
        (items, truncated)
    }
}

/// The running turn's prompt, as the transcript's last item.
fn running_item(running: Option<(String, Option<String>)>) -> Option<TranscriptItem> {
    let (turn_id, prompt) = running?;
    Some(TranscriptItem::User {
        turn_id,
        text: prompt.unwrap_or_default(),
    })
}

fn refused(code: ErrorCode, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
        entry: None,
        conflicts: None,
    }
}

/// A keeper's answer from a host's.
fn refusal(handled: Handled) -> Answer {
    handled.map_err(|reject| Refusal {
        code: reject.code,
        message: reject.message,
        entry: reject.entry,
        conflicts: reject.conflicts,
    })
}
