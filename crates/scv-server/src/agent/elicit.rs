//! MCP servers' questions to one session's user (capability
//! `elicitation`): each is sent as `elicitation.requested` and waits for
//! `elicitation.resolve`. A session whose connection did not ask for the
//! capability gets no elicitor, so its servers' questions are declined at
//! once (scv-mcp declines when a call has none). At most
//! [`MAX_PENDING_ELICITATIONS`] wait at once per session (more are
//! declined); each waits at most scv-mcp's `ELICITATION_TIMEOUT`, then is
//! cancelled; a question whose call ended (cancel, timeout) is gone.

use super::sink::SessionSink;
use scv_mcp::{ElicitAction, ElicitAnswer, ElicitationRequest, Elicitor};
use scv_protocol::{ElicitationAction, ElicitationRequested};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// Questions waiting at once in one session, at most.
pub(crate) const MAX_PENDING_ELICITATIONS: usize = 16;

struct Pending {
    /// Form mode: what the content must match.
    schema: Option<Value>,
    answer: oneshot::Sender<ElicitAnswer>,
}

/// One session's waiting questions.
pub(crate) struct Elicitations {
    pending: Mutex<HashMap<String, Pending>>,
}

impl Elicitations {
    pub(crate) fn new() -> Elicitations {
        Elicitations {
            pending: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Pending>> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What asks this session's client during a call of `turn_id`;
    /// `None` when the client did not ask for elicitation.
    pub(crate) fn elicitor(
        self: &Arc<Self>,
        sink: Arc<SessionSink>,
        turn_id: Arc<str>,
    ) -> Option<Elicitor> {
        if !sink.sends("elicitation.requested") {
            return None;
        }
        let this = self.clone();
        Some(Arc::new(move |request: ElicitationRequest| {
            let this = this.clone();
            let sink = sink.clone();
            let turn_id = turn_id.clone();
            Box::pin(async move { this.ask(&sink, &turn_id, request).await })
        }))
    }

    async fn ask(
        self: &Arc<Self>,
        sink: &SessionSink,
        turn_id: &str,
        request: ElicitationRequest,
    ) -> ElicitAnswer {
        // A subagent whose events the client does not see cannot ask.
        if !sink.visible() {
            return ElicitAnswer::decline();
        }
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.lock();
            if pending.len() >= MAX_PENDING_ELICITATIONS {
                return ElicitAnswer::decline();
            }
            pending.insert(
                id.clone(),
                Pending {
                    schema: request.schema.clone(),
                    answer: tx,
                },
            );
        }
        // Whatever ends this wait (an answer, the call's end) forgets it.
        let _forget = Forget {
            elicitations: self.clone(),
            id: id.clone(),
        };
        let event = ElicitationRequested {
            elicitation_id: id,
            server: request.server,
            message: request.message,
            schema: request.schema,
            url: request.url,
        };
        if sink
            .emit_extension("elicitation.requested", Some(turn_id), &event)
            .await
            .is_err()
        {
            return ElicitAnswer::decline();
        }
        rx.await.unwrap_or_else(|_| ElicitAnswer::cancel())
    }

    /// Answers a waiting question. Content that does not match the
    /// form's schema is refused and the question stays open.
    pub(crate) fn resolve(
        &self,
        id: &str,
        action: ElicitationAction,
        content: Option<Value>,
    ) -> Result<(), String> {
        let mut pending = self.lock();
        let Some(waiting) = pending.get(id) else {
            return Err(format!("elicitation {id} is not pending"));
        };
        let action = match action {
            ElicitationAction::Accept => ElicitAction::Accept,
            ElicitationAction::Decline => ElicitAction::Decline,
            ElicitationAction::Cancel => ElicitAction::Cancel,
        };
        let content = match (&waiting.schema, action) {
            (Some(schema), ElicitAction::Accept) => {
                let content = scv_protocol::elicit_form::with_defaults(
                    schema,
                    content.unwrap_or_else(|| Value::Object(Default::default())),
                );
                scv_protocol::elicit_form::check_content(schema, &content)
                    .map_err(|why| format!("the content does not match the form: {why}"))?;
                Some(content)
            }
            _ => None,
        };
        if let Some(waiting) = pending.remove(id) {
            let _ = waiting.answer.send(ElicitAnswer { action, content });
        }
        Ok(())
    }
}

struct Forget {
    elicitations: Arc<Elicitations>,
    id: String,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.elicitations.lock().remove(&self.id);
    }
}
