//! The life of each prompt this client sent: sent, queued (with the
//! revision the server gave it), running, ended — and what cancelling it
//! means at each of those stages (the rule in the module above).

use super::update::{Outcome, Update};
use super::{Applied, Prompt, Request, SessionClient, Stage};
use scv_protocol::{
    ClientMessage, ErrorBody, ErrorCode, Event, EventBody, QueueRemove, TurnCancel,
};

impl SessionClient {
    /// Cancels the prompt `request_id` at whatever stage it is: the running
    /// turn is cancelled, a queued prompt removed, and a prompt the server
    /// has not placed yet is cancelled once it does. Empty when nothing
    /// needs sending now (or it is not ours, or is already being cancelled).
    pub fn cancel(&mut self, request_id: &str) -> Vec<Request> {
        let Some(index) = self.prompts.iter().position(|p| p.request_id == request_id) else {
            return Vec::new();
        };
        self.prompts[index].cancel = true;
        self.flush_cancels()
    }

    /// Cancels what runs now: the running turn (ours or not), else the
    /// oldest prompt on its way to running (sent, not placed yet).
    pub fn cancel_current(&mut self) -> Vec<Request> {
        if let Some((turn_id, request_id)) = self.running.clone() {
            if let Some(request_id) = request_id {
                return self.cancel(&request_id);
            }
            let session_id = self.session_id.clone().unwrap_or_default();
            return vec![self.request(ClientMessage::TurnCancel(TurnCancel {
                session_id,
                turn_id,
            }))];
        }
        match self.prompts.iter().find(|p| p.stage == Stage::Sent) {
            Some(prompt) => {
                let request_id = prompt.request_id.clone();
                self.cancel(&request_id)
            }
            None => Vec::new(),
        }
    }

    /// Cancels every prompt in flight (running, queued, on its way): all
    /// are marked first, so the rule about prompts on their way holds for
    /// the whole lot.
    pub fn cancel_all(&mut self) -> Vec<Request> {
        for prompt in &mut self.prompts {
            prompt.cancel = true;
        }
        self.flush_cancels()
    }

    /// What carries out the cancels asked for, once no cancelled prompt is
    /// on its way any more: queue removals first, then the turn's cancel.
    fn flush_cancels(&mut self) -> Vec<Request> {
        if self
            .prompts
            .iter()
            .any(|p| p.cancel && p.stage == Stage::Sent)
        {
            return Vec::new();
        }
        let session_id = self.session_id.clone().unwrap_or_default();
        let mut removals = Vec::new();
        let mut turns = Vec::new();
        for prompt in &mut self.prompts {
            if !prompt.cancel || prompt.cancel_sent {
                continue;
            }
            match &prompt.stage {
                Stage::Sent => continue,
                Stage::Queued { queue_id, revision } => {
                    removals.push(ClientMessage::QueueRemove(QueueRemove {
                        session_id: session_id.clone(),
                        queue_id: queue_id.clone(),
                        revision: *revision,
                    }))
                }
                Stage::Running { turn_id } => turns.push(ClientMessage::TurnCancel(TurnCancel {
                    session_id: session_id.clone(),
                    turn_id: turn_id.clone(),
                })),
            }
            prompt.cancel_sent = true;
        }
        removals
            .into_iter()
            .chain(turns)
            .map(|message| self.request(message))
            .collect()
    }

    fn index_of(&self, request_id: Option<&str>) -> Option<usize> {
        let request_id = request_id?;
        self.prompts.iter().position(|p| p.request_id == request_id)
    }

    fn index_of_queued(&self, queue_id: &str) -> Option<usize> {
        self.prompts
            .iter()
            .position(|p| matches!(&p.stage, Stage::Queued { queue_id: q, .. } if q == queue_id))
    }

    /// What a queue event means for the prompts of ours in the queue.
    pub(super) fn prompts_in_queue(&mut self, event: &Event, applied: &mut Applied) {
        let request_id = event.request_id.as_deref();
        match &event.body {
            EventBody::QueueEnqueued { entry, position } => {
                if let Some(index) = self.index_of(request_id) {
                    self.prompts[index].stage = Stage::Queued {
                        queue_id: entry.queue_id.clone(),
                        revision: entry.revision,
                    };
                    self.prompts[index].cancel_sent = false;
                    applied.updates.push(Update::Queued {
                        request_id: self.prompts[index].request_id.clone(),
                        entry: entry.clone(),
                        position: *position,
                    });
                    applied.requests.extend(self.flush_cancels());
                }
            }
            EventBody::QueueUpdated { entry } | EventBody::QueueMoved { entry, .. } => {
                if let Some(index) = self.index_of_queued(&entry.queue_id) {
                    self.prompts[index].stage = Stage::Queued {
                        queue_id: entry.queue_id.clone(),
                        revision: entry.revision,
                    };
                    self.prompts[index].text = entry.prompt.clone();
                }
            }
            EventBody::QueueRemoved { queue_id } => {
                if let Some(index) = self.index_of_queued(queue_id) {
                    let prompt = self.prompts.remove(index);
                    applied.updates.push(Update::Withdrawn {
                        request_id: prompt.request_id,
                        prompt: prompt.text,
                    });
                }
            }
            EventBody::QueueDequeued { queue_id } => {
                if let Some(index) = self.index_of_queued(queue_id) {
                    // Placed again by its turn.started, which follows.
                    self.prompts[index].stage = Stage::Sent;
                    self.prompts[index].cancel_sent = false;
                }
            }
            EventBody::QueueSnapshot { entries } => {
                for entry in entries {
                    if let Some(index) = self.index_of_queued(&entry.queue_id) {
                        self.prompts[index].stage = Stage::Queued {
                            queue_id: entry.queue_id.clone(),
                            revision: entry.revision,
                        };
                    }
                }
            }
            _ => {}
        }
    }

    /// A turn started: the prompt of ours it runs (its text, as the
    /// client knows it now: an edit while queued included).
    pub(super) fn turn_started(
        &mut self,
        request_id: Option<&str>,
        turn_id: &str,
        applied: &mut Applied,
    ) -> Option<String> {
        let index = self.index_of(request_id);
        self.running = Some((
            turn_id.to_string(),
            index.map(|i| self.prompts[i].request_id.clone()),
        ));
        self.calls.turn_ended(None);
        let index = index?;
        self.prompts[index].stage = Stage::Running {
            turn_id: turn_id.to_string(),
        };
        self.prompts[index].cancel_sent = false;
        let prompt = self.prompts[index].text.clone();
        applied.updates.push(Update::Started {
            request_id: self.prompts[index].request_id.clone(),
            turn_id: turn_id.to_string(),
            prompt: prompt.clone(),
        });
        applied.requests.extend(self.flush_cancels());
        Some(prompt)
    }

    /// The session's turn ended: its prompt, its approvals (and its
    /// children's) go.
    pub(super) fn ended(&mut self, event: &Event, outcome: Outcome, applied: &mut Applied) {
        let turn_id = event.turn_id.clone().unwrap_or_default();
        let index = self.index_of(event.request_id.as_deref());
        let (request_id, cancelled_by_us) = match index {
            Some(index) => {
                let prompt = self.prompts.remove(index);
                (Some(prompt.request_id), prompt.cancel)
            }
            None => (None, false),
        };
        // A terminal event always ends the running turn.
        self.running = None;
        self.calls.turn_ended(None);
        for approval in std::mem::take(&mut self.approvals) {
            applied.updates.push(Update::ApprovalGone {
                approval_id: approval.approval_id,
            });
        }
        applied.updates.push(Update::Ended {
            request_id,
            turn_id,
            outcome,
            cancelled_by_us,
        });
    }

    /// The session was cleared: queued prompts are dropped with the
    /// history.
    pub(super) fn cleared(&mut self, applied: &mut Applied) {
        let (queued, rest): (Vec<Prompt>, Vec<Prompt>) = std::mem::take(&mut self.prompts)
            .into_iter()
            .partition(|p| matches!(p.stage, Stage::Queued { .. }));
        self.prompts = rest;
        applied
            .updates
            .extend(queued.into_iter().map(|p| Update::Withdrawn {
                request_id: p.request_id,
                prompt: p.text,
            }));
    }

    pub(super) fn error(
        &mut self,
        request_id: Option<&str>,
        error: &ErrorBody,
        applied: &mut Applied,
    ) {
        // A refused prompt (maybe the one the session's cancels waited for).
        if let Some(index) = self.index_of(request_id) {
            if self.prompts[index].stage == Stage::Sent {
                let prompt = self.prompts.remove(index);
                applied.updates.push(Update::Refused {
                    request_id: prompt.request_id,
                    error: error.clone(),
                    cancelled: prompt.cancel,
                });
                applied.requests.extend(self.flush_cancels());
            }
            return;
        }
        let asked = self.pending.take(request_id);
        // A queue.remove of a cancel met a newer revision: try again with it.
        if error.code == ErrorCode::QueueConflict {
            if let Some(entry) = &error.entry {
                if let Some(index) = self.index_of_queued(&entry.queue_id) {
                    self.prompts[index].stage = Stage::Queued {
                        queue_id: entry.queue_id.clone(),
                        revision: entry.revision,
                    };
                    self.prompts[index].text = entry.prompt.clone();
                    if self.prompts[index].cancel {
                        self.prompts[index].cancel_sent = false;
                        applied.requests.extend(self.flush_cancels());
                    }
                }
            }
        }
        applied.updates.push(Update::Failed {
            asked,
            request_id: request_id.map(str::to_string),
            error: error.clone(),
        });
    }
}
