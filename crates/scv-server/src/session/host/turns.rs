//! A session's turns: `turn.start` (a command expanded first; queued
//! while a turn runs), the start of one (`turn.started` first, then its
//! task), its end (the history back, the terminal event once the session
//! is idle), `turn.cancel` and `approval.resolve`. Each session holds its
//! running turn's task (so a detached session takes it along), and the
//! host polls them all.

use super::turn_settings::TurnSettings;
use super::{mcp, ActiveTurn, Joined, SessionHost};
use crate::agent::{add_usage, Turn};
use crate::context::History;
use crate::model::Image;
use crate::session::reject::{invalid, queue_reject, Handled, Reject};
use scv_protocol::{ApprovalResolve, ErrorCode, EventBody, FailureCode, TurnCancel, TurnStart};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

impl SessionHost {
    /// Whether any turn is running.
    pub(crate) fn has_turns(&self) -> bool {
        self.sessions
            .values()
            .any(|s| s.active.as_ref().is_some_and(|a| a.handle.is_some()))
    }

    /// The next turn task to end.
    pub(crate) async fn next_finished(&mut self) -> Option<Joined> {
        std::future::poll_fn(|cx| {
            let mut any = false;
            for (session_id, session) in &mut self.sessions {
                let Some(handle) = session.active.as_mut().and_then(|a| a.handle.as_mut()) else {
                    continue;
                };
                any = true;
                if let std::task::Poll::Ready(result) =
                    std::future::Future::poll(std::pin::Pin::new(handle), cx)
                {
                    if let Some(active) = &mut session.active {
                        active.handle = None;
                    }
                    return std::task::Poll::Ready(Some((session_id.clone(), result)));
                }
            }
            if any {
                std::task::Poll::Pending
            } else {
                std::task::Poll::Ready(None)
            }
        })
        .await
    }

    /// `turn.start` with `command`: `/NAME args` as the custom command or
    /// skill NAME expands it (a prompt not of that form is sent as it is).
    pub(super) async fn expand(
        &mut self,
        session_id: &str,
        prompt: String,
    ) -> Result<String, Reject> {
        let session = self.session(session_id)?;
        if session.settings.no_tools {
            return Err(invalid(
                "custom commands and skills are not available in a session without tools",
            ));
        }
        let (own, settings) = (session.mcp.clone(), session.settings.clone());
        if let Some(expanded) = mcp::prompt(own, &self.shared, &prompt).await {
            return expanded;
        }
        let mcp = self.shared.mcp.clone();
        crate::inline::expand(settings, &mcp, prompt)
            .await
            .map_err(invalid)
    }

    /// `turn.start`, its `/NAME args` expanded first when it is a
    /// command.
    pub(super) async fn turn_start(&mut self, rid: &str, start: TurnStart) -> Handled {
        let TurnStart {
            session_id,
            prompt,
            command,
            images,
        } = start;
        let images = self.accept_images(&session_id, images)?;
        if let Some(focus) = command.then(|| compact_focus(&prompt)).flatten() {
            return self.compact_now(rid, &session_id, prompt, focus).await;
        }
        let prompt = if command {
            self.expand(&session_id, prompt).await?
        } else {
            prompt
        };
        self.submit(rid, &session_id, prompt, images).await
    }

    /// `/compact [focus]` (a command): a turn that only compacts the
    /// history, on an idle session.
    async fn compact_now(
        &mut self,
        rid: &str,
        session_id: &str,
        prompt: String,
        focus: String,
    ) -> Handled {
        let session = self.session(session_id)?;
        if session.active.is_some() {
            return Err(Reject::new(
                ErrorCode::TurnActive,
                "a turn is running; /compact when the session is idle",
            ));
        }
        let session_id = session.sink.session_id().clone();
        self.start_turn(&session_id, rid.into(), prompt, Vec::new(), Some(focus))
            .await;
        Ok(())
    }

    /// A prompt: runs at once on an idle session, else is queued (a
    /// prompt with images never waits in the queue).
    pub(super) async fn submit(
        &mut self,
        rid: &str,
        session_id: &str,
        prompt: String,
        images: Vec<Image>,
    ) -> Handled {
        super::images::check_text(&prompt, &images)?;
        let session = self.session(session_id)?;
        if session.active.is_none() {
            let session_id = session.sink.session_id().clone();
            self.start_turn(&session_id, rid.into(), prompt, images, None)
                .await;
            return Ok(());
        }
        super::images::queueable(&images)?;
        let (entry, position) = session
            .queue
            .push(prompt, &session.settings.submitter, rid.into())
            .map_err(queue_reject)?;
        let seq = session
            .emit(rid, &EventBody::QueueEnqueued { entry, position })
            .await;
        session.journal_queue(rid, seq).await;
        Ok(())
    }

    /// Starts a turn on an idle session: `turn.started` first, then the task.
    pub(super) async fn start_turn(
        &mut self,
        session_id: &Arc<str>,
        request_id: Arc<str>,
        prompt: String,
        images: Vec<Image>,
        compact: Option<String>,
    ) {
        // The budgets config.toml holds now: an edit reaches open sessions
        // from their next turn (a session's own `max_session_cost_usd`,
        // set by `session.configure`, stays over config's).
        self.shared.live.refresh().await;
        let budgets = self.shared.live.current().config.cost.budgets;
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        let turn_id: Arc<str> = uuid::Uuid::new_v4().to_string().into();
        let token = CancellationToken::new();
        let mut history = session.history.take().unwrap_or_default();
        history.mark();
        let sink = session.sink.clone();
        if let Some(journal) = &mut session.journal {
            // Recorded before the client hears of it: a turn it saw start
            // is in the journal, as interrupted at worst.
            journal.turn_started(&turn_id, &prompt, sink.next_seq().await);
        }
        session.active = Some(ActiveTurn {
            turn_id: turn_id.clone(),
            prompt: session.journal.is_some().then(|| prompt.clone()),
            request_id: request_id.clone(),
            token: token.clone(),
            handle: None,
        });
        sink.fan().set_running(true);
        let started = sink
            .emit(
                Some(&request_id),
                Some(&turn_id),
                &EventBody::TurnStarted {},
            )
            .await;
        if started.is_err() {
            // The writer is gone; the connection is ending.
            sink.fan().set_running(false);
            session.active = None;
            session.history = Some(history);
            return;
        }
        // The journal's state, once the turn is under way: it could not
        // take the turn's start (or caught up with it), or it could not
        // be written since the session opened.
        session.tell_journal(Some(&request_id)).await;
        let run = TurnSettings::build(session, &self.shared, &self.children, &prompt, budgets);
        let trace = self.shared.telemetry.as_ref().map(|t| {
            t.turn(
                session_id,
                &turn_id,
                &session.settings.provider.name,
                &run.settings.provider.model,
                &prompt,
            )
        });
        let turn = Turn {
            trace,
            spending: run.spending,
            limits: run.limits,
            checkpoints: run.checkpoints,
            prompt: prompt.as_str().into(),
            images,
            compact,
            settings: run.settings,
            sink,
            approvals: session.approvals.clone(),
            session_mcp: session.mcp_state.clone(),
            request_id,
            turn_id,
            token,
            subagents: run.subagents,
            child: None,
            mcp: run.mcp,
        };
        let handle = tokio::spawn(turn.run(history, prompt));
        if let Some(active) = &mut session.active {
            active.handle = Some(handle);
        }
    }

    /// A turn task ended: its terminal event, then the next queued prompt.
    pub(crate) async fn finish(&mut self, joined: Joined) {
        if let Some(session_id) = self.settle(joined).await {
            self.dequeue_next(&session_id).await;
        }
    }

    /// Takes a finished turn's history back and emits its terminal event
    /// once the session is idle again; returns the session.
    pub(super) async fn settle(&mut self, joined: Joined) -> Option<Arc<str>> {
        let (session_id, outcome) = joined;
        let session = self.sessions.get_mut(&session_id)?;
        let active = session.active.take()?;
        session.sink.fan().set_running(false);
        let mut spent = None;
        let mut budget_reached = false;
        let terminal = match outcome {
            Ok(outcome) => {
                budget_reached = outcome.budget_reached;
                if let Some(usage) = outcome.detail {
                    spent = Some(scv_store::Spent {
                        model: session.settings.provider.model.clone(),
                        usage_detail: usage.detail(),
                        cost_usd: outcome.cost_usd,
                    });
                }
                session.history = Some(outcome.history);
                if let Some(usage) = outcome.usage {
                    add_usage(&mut session.usage, usage);
                }
                if let Some(detail) = outcome.detail {
                    session.detail.add(detail);
                }
                if let Some(cost) = outcome.cost_usd {
                    session.cost_usd = Some(session.cost_usd.unwrap_or(0.0) + cost);
                }
                session.warned = outcome.warned;
                let mut terminal = outcome.terminal;
                if let Some(EventBody::TurnCompleted { cost, .. }) = &mut terminal {
                    // By kind and priced: for a connection that asked, and
                    // for the journal (whose record `scv usage` reads).
                    *cost = Some(scv_protocol::TurnCost {
                        usage_detail: outcome.detail.unwrap_or_default().detail(),
                        session_usage_detail: session.detail.detail(),
                        cost_usd: outcome.cost_usd,
                        session_cost_usd: session.cost_usd,
                    });
                }
                terminal
            }
            Err(err) => {
                // A turn that panicked or was aborted loses the history it held.
                tracing::error!("turn task ended abnormally: {err}");
                session.history = Some(History::emptied());
                Some(if err.is_cancelled() {
                    EventBody::TurnCancelled {}
                } else {
                    EventBody::TurnFailed {
                        code: FailureCode::InternalError,
                        message: "the turn stopped unexpectedly; the conversation was reset".into(),
                    }
                })
            }
        };
        let mut no_undo = None;
        if let Some(checkpoints) = session.checkpoints.clone() {
            // What the turn left, recorded before the terminal event: a
            // client that exits on `turn.completed` (`scv exec`) and runs
            // `scv undo` next must find the session closed and its
            // checkpoint listed, not a session still live (which
            // `Which::Last` would fork).
            if let Some(ending) = checkpoints.turn_ending(&active.turn_id).await {
                ending.record().await;
            }
            no_undo = checkpoints.missed_in(&active.turn_id).await;
        }
        let sink = session.sink.clone();
        let mut bounds_due = false;
        if let (Some(journal), Some(history)) = (&mut session.journal, &session.history) {
            // Durable before the client hears the turn ended.
            let prompt = active.prompt.as_deref().unwrap_or_default();
            let seq = sink.next_seq().await;
            bounds_due = journal
                .turn_ended(
                    &active.turn_id,
                    prompt,
                    seq,
                    history,
                    crate::journal::TurnEnd {
                        terminal: terminal.as_ref(),
                        spent,
                        no_undo,
                    },
                )
                .await;
        }
        // A journal that could not take the turn says so before its end.
        session.tell_journal(Some(&active.request_id)).await;
        if let Some(terminal) = terminal {
            // A budget's refusal: its own code for a connection that asked
            // (the sink decides, as it does `turn.completed`'s cost).
            let code = budget_reached.then_some(crate::gate::BUDGET_EXCEEDED);
            let _ = sink
                .emit_coded(
                    Some(&active.request_id),
                    Some(&active.turn_id),
                    &terminal,
                    code,
                )
                .await;
        }
        if bounds_due {
            if let Some(store) = session.journal.as_ref().map(|j| j.store().clone()) {
                if let Err(err) = crate::blocking::run(move || store.enforce()).await {
                    tracing::warn!("session store bounds not enforced: {err}");
                }
            }
        }
        Some(session_id)
    }

    pub(super) fn cancel(&mut self, cancel: TurnCancel) -> Handled {
        let (session_id, turn_id) = (cancel.session_id.as_str(), cancel.turn_id.as_str());
        if let Some(child) = self.child(session_id) {
            // That subagent alone: its call fails, the parent goes on.
            if &*child.turn_id != turn_id {
                return Err(Reject::new(
                    ErrorCode::TurnNotFound,
                    format!("turn {turn_id} is not running in this session"),
                ));
            }
            child.token.cancel();
            return Ok(());
        }
        let session = self.session(session_id)?;
        match &session.active {
            Some(active) if &*active.turn_id == turn_id => {
                active.token.cancel();
                Ok(())
            }
            _ => Err(Reject::new(
                ErrorCode::TurnNotFound,
                format!("turn {turn_id} is not running in this session"),
            )),
        }
    }

    pub(super) fn resolve(&mut self, resolve: ApprovalResolve) -> Handled {
        let (session_id, approval_id) = (resolve.session_id.as_str(), &resolve.approval_id);
        // A subagent's approvals wait with its root session's.
        let session_id = match self.child(session_id) {
            Some(child) => child.root,
            None => session_id.into(),
        };
        let session = self.session(&session_id)?;
        if session.approvals.resolve(approval_id, resolve.approved) {
            Ok(())
        } else {
            Err(Reject::new(
                ErrorCode::ApprovalNotFound,
                format!("approval {approval_id} is not pending"),
            ))
        }
    }
}

/// The focus of `/compact [focus]` (empty without one); `None` for any
/// other prompt.
fn compact_focus(prompt: &str) -> Option<String> {
    let rest = prompt.trim().strip_prefix("/compact")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim().to_string())
}
