//! What the session client's updates show in the editor: text, thoughts,
//! tool calls (a subagent's inside its `task` call), permission asked,
//! prompts answered. One arm per update.

use super::Bridge;
use crate::errors;
use crate::replay::chunk;
use agent_client_protocol::v1::schema::{
    CurrentModeUpdate, LoadSessionResponse, MessageId, SessionUpdate, SetSessionModeResponse,
    StopReason,
};
use agent_client_protocol::Error;
use scv_client::session::{Answer, Asked, Outcome, ToolChange, Update};
use scv_protocol::FailureCode;

impl Bridge {
    /// What the session client made of an event: text, thoughts and tool
    /// calls shown, prompts answered, permission asked.
    pub(super) async fn update(&mut self, session_id: &str, update: Update) {
        let Some(update) = self
            .message(session_id, update)
            .and_then(|u| self.prompt_answered(session_id, u))
        else {
            return;
        };
        match update {
            // The session is no longer being saved (a full disk), or is
            // again: said in the conversation, as config warnings are, on
            // a line of its own.
            Update::Warning(warning) => self.say(session_id, &warning.message),
            // What a hook said or blocked: told in the conversation.
            Update::Hook(note) => {
                let verb = if note.blocked { "blocked" } else { "says" };
                let text = format!("hook {} {verb}: {}", note.hook, note.message);
                self.say(session_id, &text);
            }
            Update::Tool(change) => self.tool(session_id, change).await,
            Update::Transcript { items, truncated } => {
                if let Some((responder, modes)) = self.replaying.remove(session_id) {
                    let cwd = (self.sessions.get(session_id)).map(|s| s.cwd.clone());
                    let cwd = cwd.unwrap_or_default();
                    for update in crate::replay::updates(items, truncated, &cwd) {
                        self.notify(session_id, update);
                    }
                    let options = self.config_options(session_id);
                    let answer = LoadSessionResponse::new()
                        .modes(modes)
                        .config_options(options);
                    let _ = responder.respond(answer);
                }
            }
            Update::Answered {
                request_id,
                answer: Answer::Closed,
                ..
            } => self.closed(session_id, request_id).await,
            Update::Answered {
                answer: Answer::Models { provider, models },
                ..
            } => self.models_listed(provider, models),
            Update::Answered {
                request_id,
                answer: Answer::Configured(configured),
                ..
            } => {
                // The mode's news first, then the answers.
                let before = self.sessions.get(session_id).map(|s| s.mode);
                let moding = request_id.as_ref().and_then(|r| self.moding.remove(r));
                if let Some(mode) = configured.mode {
                    if before != Some(mode) || moding.is_some() {
                        let update = CurrentModeUpdate::new(mode.as_str());
                        self.notify(session_id, SessionUpdate::CurrentModeUpdate(update));
                    }
                }
                self.configured(session_id, request_id.as_deref(), &configured);
                if let Some(responder) = moding {
                    let _ = responder.respond(SetSessionModeResponse::new());
                }
            }
            Update::Failed {
                request_id: Some(request_id),
                error,
                ..
            } => {
                if let Some(responder) = self.moding.remove(&request_id) {
                    let _ =
                        responder.respond_with_error(errors::refused(error.code, &error.message));
                } else if !self.configure_failed(&request_id, &error) {
                    self.close_failed(&request_id, &error);
                }
            }
            Update::Elicitation(asked) => self.elicit(session_id, *asked).await,
            Update::Answered {
                answer: Answer::Trusted(trust),
                ..
            } => self.trusted(session_id, &trust),
            Update::Failed {
                asked: Some(Asked::Elicitation { elicitation_id }),
                ..
            } => self.elicitation_refused(session_id, &elicitation_id).await,
            Update::ApprovalRequested(approval) => self.ask(session_id.to_string(), approval).await,
            Update::ApprovalGone { approval_id } => {
                // Answered elsewhere, or its (child's) turn ended.
                if let Some(session) = self.sessions.get_mut(session_id) {
                    if let Some(asked) = session.approvals.remove(&approval_id) {
                        let _ = asked.request.cancel();
                    }
                }
            }
            Update::SubagentStarted { session_id: child } => {
                let started = Update::SubagentStarted {
                    session_id: child.clone(),
                };
                self.subagent(session_id, &child, &started)
            }
            Update::Subagent {
                session_id: child,
                update,
            } => self.subagent(session_id, &child, &update),
            _ => {}
        }
    }

    /// Text and thoughts (with their message ids), a turn's start and its
    /// usage; any other update is given back.
    fn message(&mut self, session_id: &str, update: Update) -> Option<Update> {
        match update {
            Update::Text(content) => {
                let session = self.sessions.get_mut(session_id)?;
                session.streamed = true;
                let id = session.meter.message_id();
                let chunk = chunk(content).message_id(MessageId::new(id));
                self.notify(session_id, SessionUpdate::AgentMessageChunk(chunk));
            }
            Update::TextDone(content) => {
                let session = self.sessions.get_mut(session_id)?;
                let streamed = std::mem::take(&mut session.streamed);
                let id = session.meter.message_done();
                if !streamed && !content.is_empty() {
                    let chunk = chunk(content).message_id(MessageId::new(id));
                    self.notify(session_id, SessionUpdate::AgentMessageChunk(chunk));
                }
            }
            Update::Reasoning(content) => {
                let session = self.sessions.get_mut(session_id)?;
                let chunk = chunk(content).message_id(MessageId::new(session.meter.thought_id()));
                self.notify(session_id, SessionUpdate::AgentThoughtChunk(chunk));
            }
            Update::TurnBegan { turn_id, .. } => {
                if let Some(session) = self.sessions.get_mut(session_id) {
                    session.meter.begin_turn(&turn_id);
                }
            }
            Update::Usage { step, .. } => {
                let session = self.sessions.get_mut(session_id)?;
                let usage = session.meter.step(&step);
                self.notify(session_id, SessionUpdate::UsageUpdate(usage));
            }
            other => return Some(other),
        }
        None
    }

    /// A prompt's turn ended, or it never ran: its answer; any other
    /// update is given back.
    fn prompt_answered(&mut self, session_id: &str, update: Update) -> Option<Update> {
        match update {
            Update::Ended {
                request_id,
                outcome,
                cancelled_by_us,
                ..
            } => {
                let mut usage = None;
                if let Some(session) = self.sessions.get_mut(session_id) {
                    session.turn_ended();
                    if let Outcome::Completed { cost, .. } = &outcome {
                        usage = session.meter.turn_cost(cost.as_ref());
                    }
                }
                if let Some(usage) = usage {
                    self.notify(session_id, SessionUpdate::UsageUpdate(usage));
                }
                let result = stop_reason(outcome, cancelled_by_us);
                if let Some(request_id) = request_id {
                    self.finish(&request_id, result);
                }
            }
            Update::Withdrawn { request_id, .. } => {
                self.finish(&request_id, Ok(StopReason::Cancelled))
            }
            Update::Refused {
                request_id,
                error,
                cancelled,
            } => {
                let result = if cancelled {
                    Ok(StopReason::Cancelled)
                } else {
                    Err(errors::refused(error.code, &error.message))
                };
                self.finish(&request_id, result);
            }
            other => return Some(other),
        }
        None
    }

    /// A note of SCV's in the conversation, on a line of its own.
    pub(super) fn say(&self, session_id: &str, text: &str) {
        let text = format!("\n\n⚠ {}\n\n", scv_client::text::visible(text));
        self.notify(session_id, SessionUpdate::AgentMessageChunk(chunk(text)));
    }

    /// A tool call of the session: proposed, running, done.
    async fn tool(&mut self, session_id: &str, change: ToolChange) {
        let Some(session) = self.sessions.get_mut(session_id) else {
            return;
        };
        let update = match change {
            ToolChange::Proposed {
                call_id,
                name,
                arguments,
            } => {
                let cwd = session.cwd.clone();
                let call = session
                    .tools
                    .proposed(&cwd, &call_id, &name, &arguments)
                    .await;
                SessionUpdate::ToolCall(call)
            }
            ToolChange::Running { call_id, .. } => match session.tools.started(&call_id) {
                Some(update) => SessionUpdate::ToolCallUpdate(update),
                None => return,
            },
            ToolChange::Done {
                call_id,
                success,
                output,
                truncated,
                ..
            } => {
                let mut update = session
                    .tools
                    .completed(&call_id, success, &output, truncated)
                    .await;
                // A `task` call keeps its child's calls above its output.
                if let (Some(update), Some((mut nested, meta))) =
                    (update.as_mut(), session.subagents.completed(&call_id))
                {
                    nested.extend(update.fields.content.take().unwrap_or_default());
                    update.fields.content = Some(nested);
                    update.meta = Some(meta);
                }
                match update {
                    Some(update) => SessionUpdate::ToolCallUpdate(update),
                    None => return,
                }
            }
        };
        self.notify(session_id, update);
    }

    /// A subagent's update, shown in the `task` call it runs in.
    fn subagent(&mut self, session_id: &str, child: &str, update: &Update) {
        let shown = self.sessions.get_mut(session_id).and_then(|s| {
            let view = s.client.subagent(child)?;
            s.subagents.update(view, &s.client, update, &s.tools)
        });
        if let Some(shown) = shown {
            self.notify(session_id, SessionUpdate::ToolCallUpdate(shown));
        }
    }
}

/// What a prompt answers when its turn ended.
fn stop_reason(outcome: Outcome, cancelled_by_us: bool) -> Result<StopReason, Error> {
    match outcome {
        _ if cancelled_by_us => Ok(StopReason::Cancelled),
        Outcome::Completed { .. } => Ok(StopReason::EndTurn),
        Outcome::Cancelled => Ok(StopReason::Cancelled),
        Outcome::Failed {
            code: FailureCode::StepLimit | FailureCode::BudgetExceeded,
            ..
        } => Ok(StopReason::MaxTurnRequests),
        Outcome::Failed { code, message } => {
            tracing::warn!("turn failed: {code}: {message}");
            Err(errors::turn_failed(code, &message))
        }
    }
}
