//! Capability `detach` on a connection's side: `session.detach` hands a
//! session (its running turn and queue included) to a keeper task of its
//! own; `session.attach` follows a detached one; `session.close` ends a
//! session's life; the messages for a detached session this connection
//! follows go to its keeper; the live fields of `session.listed`.

use super::{Session, SessionHost};
use crate::attach::{Answer, Command, Keeper, Lookup, Status, INBOX};
use crate::session::reject::{invalid, Handled, Reject};
use scv_protocol::{ClientMessage, ErrorCode, EventBody, LiveInfo};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

impl SessionHost {
    /// This connection's number among those attached to sessions.
    fn conn_id(&mut self) -> u64 {
        if self.conn == 0 {
            self.conn = self.shared.detached.connection_id();
        }
        self.conn
    }

    /// `session.detach`, `session.attach`, `session.close`, and a message
    /// for a detached session this connection follows (its keeper answers
    /// it): `Ok` with the answer; any other message comes back (`Err`).
    pub(super) async fn forward(
        &mut self,
        rid: &str,
        message: ClientMessage,
    ) -> Result<Handled, ClientMessage> {
        if matches!(message, ClientMessage::SessionClose(_))
            && !crate::gate::Capability::Detach.granted(&self.caps)
        {
            // Capability `sessions`' close of one of this connection's
            // own sessions (`close.rs`).
            return Err(message);
        }
        // `session.detach`, `session.attach` (`session.close` went on
        // above without the capability).
        if let Some(needed) = crate::gate::needs(&message) {
            if needed == crate::gate::Capability::Detach && !needed.granted(&self.caps) {
                return Ok(Err(invalid(needed.refusal(message.type_name()))));
            }
        }
        match message {
            ClientMessage::SessionDetach(m) => return Ok(self.detach(rid, &m.session_id).await),
            ClientMessage::SessionAttach(m) => return Ok(self.attach(rid, &m.session_id).await),
            ClientMessage::SessionClose(m) => {
                return Ok(self.close_session(rid, &m.session_id).await)
            }
            _ => {}
        }
        if self.attached.is_empty() {
            return Err(message);
        }
        let Some(target) = crate::attach::target(&message) else {
            return Err(message);
        };
        // The session's own id, or one of its live subagents'.
        let found = self
            .attached
            .get_key_value(target)
            .or_else(|| {
                (!self.sessions.contains_key(target))
                    .then(|| {
                        self.attached
                            .iter()
                            .find(|(_, k)| k.status.children.get(target).is_some())
                    })
                    .flatten()
            })
            .map(|(k, v)| (k.clone(), v.clone()));
        let Some((key, keeper)) = found else {
            return Err(message);
        };
        let (answer, answered) = oneshot::channel();
        let command = Command::Request {
            rid: rid.to_string(),
            message: Box::new(message),
            out: self.out.clone(),
            answer,
        };
        let handled = ask(&keeper, command, answered, &key).await;
        if handled
            .as_ref()
            .is_err_and(|r| r.code == ErrorCode::SessionNotFound)
            && keeper.inbox.is_closed()
        {
            self.attached.remove(&key);
        }
        Ok(handled)
    }

    /// `session.detach`: the session goes on after this connection
    /// closes, kept by a task of its own; this connection stays attached.
    pub(super) async fn detach(&mut self, rid: &str, session_id: &str) -> Handled {
        if self.attached.contains_key(session_id) {
            self.reply(
                rid,
                Some(session_id.to_string()),
                EventBody::SessionDetached {},
            )
            .await;
            return Ok(());
        }
        if !self.sessions.contains_key(session_id) {
            return Err(Reject::new(
                ErrorCode::SessionNotFound,
                format!("session {session_id} does not exist on this connection"),
            ));
        }
        let conn = self.conn_id();
        let Some(session) = self.sessions.get(session_id) else {
            return Err(not_live(session_id));
        };
        let sink = session.sink.clone();
        let status = Arc::new(Status::new(sink.clone(), self.children.clone()));
        let (inbox, commands) = mpsc::channel(INBOX);
        let keeper = Keeper {
            inbox,
            status: status.clone(),
        };
        let Some((key, session)) = self.sessions.remove_entry(session_id) else {
            return Err(not_live(session_id));
        };
        if let Err(full) = self.shared.detached.insert(key.clone(), keeper.clone()) {
            self.sessions.insert(key, session);
            return Err(invalid(full));
        }
        sink.fan().detach(conn, self.out.clone());
        self.reply(rid, Some(key.to_string()), EventBody::SessionDetached {})
            .await;
        let host = self.split_off(key.clone(), session);
        spawn_keeper(&self.shared, host, key.clone(), commands, status);
        self.attached.insert(key, keeper);
        Ok(())
    }

    /// A host holding only `session` (a keeper's, or one being closed).
    pub(super) fn split_off(&self, session_id: Arc<str>, session: Box<Session>) -> SessionHost {
        let mut host = SessionHost::new(self.shared.clone(), self.out.clone());
        host.caps = self.caps;
        host.children = self.children.clone();
        host.sessions.insert(session_id, session);
        host
    }

    /// `session.attach`: follow a detached session from here.
    pub(super) async fn attach(&mut self, rid: &str, session_id: &str) -> Handled {
        if self.sessions.contains_key(session_id) {
            return Err(invalid(format!(
                "session {session_id} is live on this connection already"
            )));
        }
        let (key, keeper) = self.find_detached(session_id)?;
        if self.attached.contains_key(&key) {
            return Err(invalid(format!(
                "this connection is attached to session {key} already"
            )));
        }
        let conn = self.conn_id();
        let (answer, answered) = oneshot::channel();
        let command = Command::Attach {
            rid: rid.to_string(),
            conn,
            out: self.out.clone(),
            answer,
        };
        ask(&keeper, command, answered, &key).await?;
        self.attached.insert(key, keeper);
        Ok(())
    }

    /// `session.close`: cancels what runs and ends the session's life
    /// (its journal stays); `session.closed` to every connection attached.
    pub(super) async fn close_session(&mut self, rid: &str, session_id: &str) -> Handled {
        if let Some((key, session)) = self.sessions.remove_entry(session_id) {
            let mut host = self.split_off(key.clone(), session);
            host.close().await;
            self.reply(rid, Some(key.to_string()), EventBody::SessionClosed {})
                .await;
            return Ok(());
        }
        let (key, keeper) = self.find_detached(session_id)?;
        let (answer, answered) = oneshot::channel();
        let command = Command::Close {
            rid: rid.to_string(),
            out: self.out.clone(),
            answer,
        };
        let closed = ask(&keeper, command, answered, &key).await;
        self.attached.remove(&key);
        closed
    }

    fn find_detached(&self, session_id: &str) -> Result<(Arc<str>, Keeper), Reject> {
        match self.shared.detached.find(session_id) {
            Lookup::Found(key, keeper) => Ok((key, keeper)),
            Lookup::Ambiguous => Err(invalid(format!(
                "more than one live session id starts with {session_id}"
            ))),
            Lookup::None => Err(not_live(session_id)),
        }
    }

    /// The connection ends: the detached sessions it followed go on
    /// without it.
    pub(super) fn leave_attached(&mut self) {
        let conn = self.conn;
        for (_, keeper) in self.attached.drain() {
            // A full inbox: the failed send drops this connection later.
            let _ = keeper.inbox.try_send(Command::Gone { conn });
        }
    }

    /// The live fields of `session.listed` (capability `detach`): the
    /// daemon's detached sessions, and this connection's own.
    pub(super) fn live_infos(&self) -> HashMap<String, LiveInfo> {
        let mut infos: HashMap<String, LiveInfo> = self.shared.detached.infos();
        for (id, session) in &self.sessions {
            let info = crate::attach::live_info(&session.sink);
            infos.insert(
                id.to_string(),
                LiveInfo {
                    cost_usd: session.cost_usd,
                    ..info
                },
            );
        }
        infos
    }

    /// The session's USD so far (for a keeper's status).
    pub(super) fn cost(&self, session_id: &str) -> Option<f64> {
        self.sessions.get(session_id).and_then(|s| s.cost_usd)
    }
}

/// Runs the keeper of `session_id`, boxed as a `Send` task: the keeper
/// answers requests through the host that detaches, so its future's type
/// would otherwise be its own cause.
fn spawn_keeper(
    shared: &crate::server::Shared,
    host: SessionHost,
    session_id: Arc<str>,
    commands: mpsc::Receiver<Command>,
    status: Arc<Status>,
) {
    let task: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
        Box::pin(super::keeper::keep(host, session_id, commands, status));
    shared.detached.spawn(task);
}

/// Sends `command` to the keeper and waits for its answer.
async fn ask(
    keeper: &Keeper,
    command: Command,
    answered: oneshot::Receiver<Answer>,
    session_id: &str,
) -> Handled {
    let gone = || {
        Reject::new(
            ErrorCode::SessionNotFound,
            format!("session {session_id} is no longer live (it was closed)"),
        )
    };
    if keeper.inbox.send(command).await.is_err() {
        return Err(gone());
    }
    match answered.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(refusal)) => Err(Reject {
            code: refusal.code,
            message: refusal.message,
            entry: refusal.entry,
            conflicts: refusal.conflicts,
        }),
        Err(_) => Err(gone()),
    }
}

fn not_live(session_id: &str) -> Reject {
    Reject::new(
        ErrorCode::SessionNotFound,
        format!("no live detached session {session_id} (a stored one can be resumed)"),
    )
}
