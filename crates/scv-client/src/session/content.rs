//! Events turned into typed updates: the session's own (with what they
//! mean for its prompts, queue and requests) and its children's, whose
//! content reads the same.

use super::asks::Answer;
use super::update::{Outcome, QueueChange, ToolChange, Update};
use super::{Applied, Approval, SessionClient, MAX_QUEUE};
use scv_protocol::{Event, EventBody};

impl SessionClient {
    /// An event of the session this client follows.
    pub(super) fn own_event(&mut self, event: &Event, applied: &mut Applied) {
        let request_id = event.request_id.as_deref();
        match &event.body {
            EventBody::QueueSnapshot { .. }
            | EventBody::QueueEnqueued { .. }
            | EventBody::QueueUpdated { .. }
            | EventBody::QueueMoved { .. }
            | EventBody::QueueRemoved { .. }
            | EventBody::QueueDequeued { .. } => self.queue_event(event, applied),
            EventBody::TurnStarted {} => {
                let turn_id = event.turn_id.clone().unwrap_or_default();
                let dequeued = self.dequeued.take();
                let ours = self.turn_started(request_id, &turn_id, applied);
                applied.updates.push(Update::TurnBegan {
                    turn_id,
                    request_id: event.request_id.clone(),
                    prompt: ours.or(dequeued),
                });
            }
            EventBody::TurnCompleted { steps, usage, cost } => self.ended(
                event,
                Outcome::Completed {
                    steps: *steps,
                    usage: *usage,
                    cost: *cost,
                },
                applied,
            ),
            EventBody::TurnCancelled {} => self.ended(event, Outcome::Cancelled, applied),
            EventBody::TurnFailed { code, message } => self.ended(
                event,
                Outcome::Failed {
                    code: *code,
                    message: message.clone(),
                },
                applied,
            ),
            EventBody::SessionCleared {} => {
                self.cleared(applied);
                self.queue.clear();
                applied.updates.push(Update::Cleared);
            }
            EventBody::SessionTranscript { items, truncated } => {
                applied.updates.push(Update::Transcript {
                    items: items.clone(),
                    truncated: *truncated,
                })
            }
            EventBody::SessionTrimmed {
                removed_messages,
                history_bytes,
            } => applied.updates.push(Update::Trimmed {
                removed_messages: *removed_messages,
                history_bytes: *history_bytes,
            }),
            EventBody::SessionWarning(warning) => {
                applied.updates.push(Update::Warning(warning.clone()))
            }
            EventBody::Error(error) => self.error(request_id, error, applied),
            EventBody::SessionDetached {} => {
                self.pending.take(request_id);
                applied.updates.push(Update::Detached);
            }
            EventBody::SessionClosed {} => {
                // The answer to our `session.close` (a front end's
                // continuation waits on it), then the news for everyone.
                let asked = self.pending.take(request_id);
                if asked.is_some() {
                    applied.updates.push(Update::Answered {
                        asked,
                        request_id: event.request_id.clone(),
                        answer: Answer::Closed,
                    });
                }
                self.running = None;
                self.approvals.clear();
                applied.updates.push(Update::Closed);
            }
            // Only ever a child's, or the handshake's.
            EventBody::SubagentStarted(_)
            | EventBody::Initialized { .. }
            | EventBody::SessionAttached(_)
            | EventBody::SessionStarted(_) => {}
            body => match Answer::of(body) {
                Some(answer) => applied.updates.push(Update::Answered {
                    asked: self.pending.take(request_id),
                    request_id: event.request_id.clone(),
                    answer,
                }),
                None => self.content(None, event, &mut applied.updates),
            },
        }
    }

    /// The queue's change, and what it means for the prompts of ours in it.
    fn queue_event(&mut self, event: &Event, applied: &mut Applied) {
        self.pending.take(event.request_id.as_deref());
        let change = match &event.body {
            EventBody::QueueSnapshot { entries } => {
                self.queue = entries.iter().take(MAX_QUEUE).cloned().collect();
                QueueChange::Snapshot {
                    entries: entries.clone(),
                }
            }
            EventBody::QueueEnqueued { entry, position } => {
                if self.queue.len() < MAX_QUEUE {
                    let at = (*position).min(self.queue.len());
                    self.queue.insert(at, entry.clone());
                }
                QueueChange::Enqueued {
                    entry: entry.clone(),
                    position: *position,
                }
            }
            EventBody::QueueUpdated { entry } => {
                if let Some(kept) = self.queue.iter_mut().find(|e| e.queue_id == entry.queue_id) {
                    *kept = entry.clone();
                }
                QueueChange::Updated {
                    entry: entry.clone(),
                }
            }
            EventBody::QueueMoved { entry, position } => {
                self.queue.retain(|e| e.queue_id != entry.queue_id);
                let at = (*position).min(self.queue.len());
                self.queue.insert(at, entry.clone());
                QueueChange::Moved {
                    entry: entry.clone(),
                    position: *position,
                }
            }
            EventBody::QueueRemoved { queue_id } => {
                self.queue.retain(|e| e.queue_id != *queue_id);
                QueueChange::Removed {
                    queue_id: queue_id.clone(),
                }
            }
            EventBody::QueueDequeued { queue_id } => {
                let prompt = self
                    .queue
                    .iter()
                    .find(|e| e.queue_id == *queue_id)
                    .map(|e| e.prompt.clone());
                self.queue.retain(|e| e.queue_id != *queue_id);
                if !event.request_id.as_deref().is_some_and(|r| self.owns(r)) {
                    self.dequeued = prompt.clone();
                }
                QueueChange::Dequeued {
                    queue_id: queue_id.clone(),
                    prompt,
                }
            }
            _ => return,
        };
        self.prompts_in_queue(event, applied);
        applied.updates.push(Update::Queue(change));
    }

    /// What an event says, for the session (`child` None) or one of its
    /// children: text, tools, approvals, usage and the rest. A child's
    /// turn ends here too (the session's own ends with its prompts).
    pub(super) fn content(
        &mut self,
        child: Option<&str>,
        event: &Event,
        updates: &mut Vec<Update>,
    ) {
        match &event.body {
            EventBody::TurnStarted {} => {
                let turn_id = event.turn_id.clone().unwrap_or_default();
                if let Some(view) = child.and_then(|c| self.children.get_mut(c)) {
                    view.turn_id = Some(turn_id.clone());
                }
                updates.push(Update::TurnBegan {
                    turn_id,
                    request_id: None,
                    prompt: None,
                });
            }
            EventBody::AssistantDelta { content } => updates.push(Update::Text(content.clone())),
            EventBody::ElicitationRequested(asked) => {
                updates.push(Update::Elicitation(Box::new(asked.clone())))
            }
            EventBody::AssistantCompleted { content } => {
                updates.push(Update::TextDone(content.clone()))
            }
            EventBody::ReasoningDelta { content } => {
                updates.push(Update::Reasoning(content.clone()))
            }
            EventBody::ToolProposed { .. }
            | EventBody::ApprovalRequested { .. }
            | EventBody::ToolStarted { .. }
            | EventBody::ToolCompleted { .. } => self.tool_event(child, event, updates),
            EventBody::UsageUpdated { step, turn, steps } => updates.push(Update::Usage {
                step: *step,
                turn: *turn,
                steps: *steps,
            }),
            EventBody::ContextCompacted {
                before_tokens,
                after_tokens,
                removed_messages,
            } => updates.push(Update::Compacted {
                before_tokens: *before_tokens,
                after_tokens: *after_tokens,
                removed_messages: *removed_messages,
            }),
            EventBody::BudgetWarning(warning) => updates.push(Update::Budget(warning.clone())),
            EventBody::ProviderRetrying(retry) => updates.push(Update::Retrying(retry.clone())),
            EventBody::HookMessage(note) => updates.push(Update::Hook(note.clone())),
            EventBody::CheckpointCreated { checkpoint_id } => {
                updates.push(Update::CheckpointCreated {
                    checkpoint_id: checkpoint_id.clone(),
                })
            }
            EventBody::CheckpointFailed { message } => updates.push(Update::CheckpointFailed {
                message: message.clone(),
            }),
            EventBody::TurnCompleted { steps, usage, cost } => self.child_ended(
                child,
                event,
                Outcome::Completed {
                    steps: *steps,
                    usage: *usage,
                    cost: *cost,
                },
                updates,
            ),
            EventBody::TurnCancelled {} => {
                self.child_ended(child, event, Outcome::Cancelled, updates)
            }
            EventBody::TurnFailed { code, message } => self.child_ended(
                child,
                event,
                Outcome::Failed {
                    code: *code,
                    message: message.clone(),
                },
                updates,
            ),
            _ => {}
        }
    }

    /// A tool call's event, the session's or a child's: proposed, asked
    /// about, running, done.
    fn tool_event(&mut self, child: Option<&str>, event: &Event, updates: &mut Vec<Update>) {
        match &event.body {
            EventBody::ToolProposed {
                call_id,
                name,
                arguments,
            } => {
                self.calls.proposed(child, call_id, name, arguments);
                updates.push(Update::Tool(ToolChange::Proposed {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                }));
            }
            EventBody::ApprovalRequested { call_id, name, .. } => {
                // A child's approval always names its own call; the
                // session's may name a child's tool on its `task` call.
                let by_name = child.is_none().then_some(name.as_str());
                let arguments = self.calls.arguments(child, call_id, by_name);
                let subagent = child
                    .and_then(|c| self.children.get(c))
                    .map(|c| c.description.clone());
                if let Some(approval) =
                    Approval::of(event, arguments, child.map(str::to_string), subagent)
                {
                    self.approvals.push(approval.clone());
                    updates.push(Update::ApprovalRequested(approval));
                }
            }
            EventBody::ToolStarted { call_id, name } => {
                self.approvals_gone(child, Some(call_id), updates);
                updates.push(Update::Tool(ToolChange::Running {
                    call_id: call_id.clone(),
                    name: name.clone(),
                }));
            }
            EventBody::ToolCompleted {
                call_id,
                name,
                success,
                output,
                truncated,
            } => {
                // The server stopped waiting for this call's approval.
                self.approvals_gone(child, Some(call_id), updates);
                let denied = self.calls.was_denied(child, call_id);
                updates.push(Update::Tool(ToolChange::Done {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    success: *success,
                    output: output.clone(),
                    truncated: *truncated,
                    denied,
                }));
            }
            _ => {}
        }
    }

    /// The approvals of `session` (the client's own: None) that wait no
    /// longer: those of call `call_id`, or all of them.
    pub(super) fn approvals_gone(
        &mut self,
        session: Option<&str>,
        call_id: Option<&str>,
        updates: &mut Vec<Update>,
    ) {
        let (gone, kept): (Vec<Approval>, Vec<Approval>) = std::mem::take(&mut self.approvals)
            .into_iter()
            .partition(|a| {
                a.child_session.as_deref() == session
                    && call_id.is_none_or(|call| a.call_id == call)
            });
        self.approvals = kept;
        updates.extend(gone.into_iter().map(|a| Update::ApprovalGone {
            approval_id: a.approval_id,
        }));
    }

    /// A child's turn ended: its approvals go, its view says how.
    fn child_ended(
        &mut self,
        child: Option<&str>,
        event: &Event,
        outcome: Outcome,
        updates: &mut Vec<Update>,
    ) {
        let Some(child) = child else {
            return;
        };
        self.approvals_gone(Some(child), None, updates);
        self.calls.turn_ended(Some(child));
        if let Some(view) = self.children.get_mut(child) {
            view.state = super::SubagentState::Ended(outcome.clone());
        }
        updates.push(Update::Ended {
            request_id: None,
            turn_id: event.turn_id.clone().unwrap_or_default(),
            outcome,
            cancelled_by_us: false,
        });
    }
}
