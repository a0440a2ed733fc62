//! The session's events applied to the App: the seam between the protocol
//! and the UI. [`App::apply`] takes each server event; the life of each
//! prompt (sent, queued, running, its cancel at any of those stages, the
//! approvals its turn asks for) is the shared session client's
//! (`scv_client::session`), which owns the request ids too; the rest of the
//! bookkeeping (calls the user denied, the `/status` request, approvals a
//! rule answered) is [`Bookkeeping`], kept here and touched nowhere else. What starts a turn, cancels it or answers
//! an approval is here too, so the whole prompt lifecycle reads in one
//! place: keys and commands call these and never reach into the bookkeeping.
//!
//! A subagent's event (one with `parent`) is never the session's own: it
//! goes to [`crate::tui::subagents`] and to its card under the `task`
//! call; its approvals wait in the same prompt, under the same rules.

use super::{App, Outgoing};
use crate::tui::queue_panel::Left;
use crate::tui::rules::Rule;
use crate::tui::state::{short, ActiveTurn, LinkState, McpView, PendingApproval, SessionView};
use crate::tui::transcript::{ItemKind, ToolCard, ToolState};
use scv_client::session::{Request, SessionClient, Update};
use scv_protocol::{ApprovalResolve, DaemonControl};
use scv_protocol::{ClientMessage, ErrorBody, ErrorCode, Event, EventBody, SessionStarted, Usage};
use std::collections::{HashMap, HashSet};

/// What events are matched against: the App's record of what it sent and
/// how the user answered.
#[derive(Debug)]
pub(super) struct Bookkeeping {
    /// The session's prompts and approvals; it makes every request id.
    pub(super) client: SessionClient,
    /// Sessions followed before this one (reconnects), for id prefixes.
    sessions: u64,
    /// Queued prompts dequeued for a turn, by request id, that the session
    /// client did not send (shown when that turn starts).
    dequeued: HashMap<String, String>,
    /// Calls the user denied: the protocol reports only `success: false`.
    denied: HashSet<String>,
    /// The request id of the `daemon.status` that `/status` asked for.
    status_request: Option<String>,
    /// The request id of the `session.list` the picker waits for.
    list_request: Option<String>,
    /// Whether this session ran a turn (or came back with one): only such
    /// a session is journaled, so only it can be offered back.
    worked: bool,
    /// Messages to send that events (not keys) produced: approvals a rule
    /// answered. The event loop drains them with [`App::take_outgoing`].
    outbox: Vec<Outgoing>,
}

impl Default for Bookkeeping {
    fn default() -> Self {
        Bookkeeping {
            client: SessionClient::new("tui-"),
            sessions: 0,
            dequeued: HashMap::new(),
            denied: HashSet::new(),
            status_request: None,
            list_request: None,
            worked: false,
            outbox: Vec::new(),
        }
    }
}

/// A session client's request as the UI hands it to the event loop.
pub(super) fn outgoing(request: Request) -> Outgoing {
    Outgoing::Send {
        request_id: request.request_id,
        message: request.message,
    }
}

impl App {
    /// What events produced to send (approvals a rule answered).
    pub fn take_outgoing(&mut self) -> Vec<Outgoing> {
        std::mem::take(&mut self.book.outbox)
    }

    /// Something to send that an event (not a key) produced.
    pub(super) fn book_outbox(&mut self, out: Outgoing) {
        self.book.outbox.push(out);
    }

    /// Applies one server event. Queue events are the queue panel's; the
    /// rest change the session, the turn or the transcript.
    pub fn apply(&mut self, event: Event) {
        let applied = self.book.client.apply(&event);
        // A cancel asked before the server placed the prompt goes now.
        self.book
            .outbox
            .extend(applied.requests.into_iter().map(outgoing));
        // A subagent's event is its own: never the session's transcript,
        // turn or usage.
        if event.parent.is_some() {
            self.child_applied(applied.updates);
            return;
        }
        let Event {
            body,
            request_id,
            session_id,
            turn_id,
            ..
        } = event;
        if let Some(turn) = self
            .turn
            .as_mut()
            .filter(|t| turn_id.as_ref() == Some(&t.turn_id))
        {
            turn.heard(&body, self.now);
        }
        match body {
            EventBody::SessionStarted(started) => self.session_started(started, session_id),
            body @ (EventBody::QueueSnapshot { .. }
            | EventBody::QueueEnqueued { .. }
            | EventBody::QueueUpdated { .. }
            | EventBody::QueueMoved { .. }
            | EventBody::QueueRemoved { .. }
            | EventBody::QueueDequeued { .. }) => {
                if let Some(left) = self.queue.apply(body) {
                    self.left_queue(left, request_id);
                }
            }
            EventBody::TurnStarted {} => {
                // The prompt shows once its turn starts, as the session
                // client knows it now (an edit while queued included).
                let ours = applied.updates.iter().find_map(|update| match update {
                    Update::Started { prompt, .. } => Some(prompt.clone()),
                    _ => None,
                });
                let prompt = ours.or_else(|| {
                    request_id
                        .as_ref()
                        .and_then(|r| self.book.dequeued.remove(r))
                });
                if let Some(turn_id) = &turn_id {
                    self.turn_begins(turn_id);
                }
                if let Some(prompt) = prompt {
                    self.transcript.push(ItemKind::User(prompt));
                }
                self.book.worked = true;
                self.turn_started(turn_id)
            }
            EventBody::AssistantDelta { content } => self.assistant_delta(content),
            EventBody::AssistantCompleted { content } => self.assistant_completed(content),
            EventBody::ToolProposed {
                call_id,
                name,
                arguments,
            } => {
                let cwd = self.session.as_ref().map(|s| s.cwd.clone());
                self.transcript
                    .tool_proposed(call_id, name, arguments, cwd.as_deref(), self.now)
            }
            EventBody::ApprovalRequested {
                approval_id,
                call_id,
                name,
                risk,
                cwd,
                summary,
                sandboxed,
            } => self.approval_requested(PendingApproval {
                approval_id,
                call_id,
                name,
                risk: risk.as_str().to_string(),
                cwd,
                summary,
                arguments: serde_json::Value::Null,
                sandboxed,
                child_session: None,
                subagent: None,
            }),
            EventBody::ToolStarted { call_id, .. } => {
                self.transcript
                    .update_tool(&call_id, |card| card.state = ToolState::Running);
            }
            EventBody::ToolCompleted {
                call_id,
                success,
                output,
                truncated,
                ..
            } => self.tool_completed(&call_id, success, output, truncated),
            EventBody::ContextCompacted {
                before_tokens,
                after_tokens,
                removed_messages,
            } => {
                self.context_used = after_tokens;
                self.notice(format!(
                    "context compacted: {} → {} tokens ({removed_messages} messages summarized)",
                    short(before_tokens),
                    short(after_tokens)
                ));
            }
            EventBody::TurnCompleted { steps, usage, cost } => {
                if let Some(usage) = usage {
                    self.count_usage(usage, steps);
                }
                if let Some(cost) = cost {
                    self.count_cost(cost, steps);
                }
                self.plan_turn_completed();
                self.end_turn();
            }
            // Only ever a child's (it has `parent`; handled above).
            EventBody::SubagentStarted(_) => {}
            EventBody::HookMessage(note) => {
                let verb = if note.blocked { "blocked" } else { "says" };
                self.notice(format!("{} {verb}: {}", note.hook, note.message));
            }
            // Shown on the status line, counting down (`ActiveTurn::heard`).
            EventBody::ProviderRetrying(_) => {}
            EventBody::ModelsListed { provider, models } => {
                self.hint = None;
                let current = self
                    .session
                    .as_ref()
                    .map(|s| s.model.clone())
                    .unwrap_or_default();
                // The current model first selected when the list has it.
                let selected = models.iter().position(|m| *m == current).unwrap_or(0);
                let mut open = crate::tui::overlays::OpenOverlay::new(
                    crate::tui::overlays::OverlayKind::Models(Box::new(
                        crate::tui::overlays::models::ModelPicker {
                            provider,
                            models,
                            current,
                            filter: String::new(),
                        },
                    )),
                );
                open.selected = selected;
                self.overlay = Some(open);
            }
            // The counters move while the turn runs; `turn.completed`
            // counts the turn into the session's.
            EventBody::UsageUpdated { step, turn, .. } => {
                self.context_used = step.input_tokens;
                if let Some(active) = self.turn.as_mut() {
                    active.usage = turn;
                }
            }
            EventBody::BudgetWarning(warning) => {
                self.notice(format!("budget: {}", warning.message));
                self.costs.warning = Some(warning.message);
                self.costs.warning_budget = Some(warning.budget);
            }
            EventBody::TurnCancelled {} => {
                self.end_turn();
                self.notice("turn cancelled".into());
            }
            EventBody::TurnFailed { code, message } => {
                self.end_turn();
                self.transcript.push(ItemKind::Error {
                    code: code.as_str().to_string(),
                    message,
                });
            }
            EventBody::SessionTrimmed {
                removed_messages, ..
            } => self.notice(format!(
                "server history trimmed: {removed_messages} oldest messages dropped"
            )),
            EventBody::SessionCleared {} => self.session_cleared(),
            EventBody::SessionTranscript { items, truncated } => {
                self.past_conversation(items, truncated)
            }
            EventBody::SessionListed { sessions }
                if request_id.is_some() && request_id == self.book.list_request =>
            {
                self.book.list_request = None;
                self.open_picker(sessions);
            }
            // Answers to requests this view does not send.
            EventBody::SessionListed { .. } | EventBody::SessionDeleted {} => {}
            EventBody::WorkspaceTrusted(trust) => {
                let files: Vec<&str> = trust.files.iter().map(|f| f.path.as_str()).collect();
                self.notice(if files.is_empty() {
                    format!("trusted {}", trust.workspace)
                } else {
                    format!(
                        "trusted {}: {} run and apply from the next turn",
                        trust.workspace,
                        files.join(", ")
                    )
                });
            }
            EventBody::CheckpointCreated { .. } => self.checkpoint_created(),
            // Before the call runs: it has no undo point.
            EventBody::CheckpointFailed { message } => self.notice(message),
            EventBody::SessionWarning(warning) => self.session_warning(warning),
            EventBody::CheckpointListed {
                checkpoints,
                missed,
            } => self.checkpoints_listed(
                request_id.as_deref().unwrap_or_default(),
                checkpoints,
                missed,
            ),
            EventBody::CheckpointDiffed {
                checkpoint_id,
                files,
                ..
            } => self.checkpoint_diffed(
                request_id.as_deref().unwrap_or_default(),
                checkpoint_id,
                files,
            ),
            EventBody::CheckpointRestored {
                checkpoint_id,
                files,
                conversation_restored,
                ..
            } => self.checkpoint_restored(
                request_id.as_deref().unwrap_or_default(),
                &checkpoint_id,
                files,
                conversation_restored,
            ),
            EventBody::Error(error) if self.is_checkpoint_answer(request_id.as_ref()) => {
                self.checkpoint_error(request_id.as_deref().unwrap_or_default(), error)
            }
            EventBody::Error(error)
                if request_id.is_some() && request_id == self.book.status_request =>
            {
                self.book.status_request = None;
                self.mcp = McpView::Unavailable(error.message);
            }
            EventBody::Error(error) => {
                // A refused mode request is no longer in flight.
                self.mode_answered(request_id.as_deref());
                self.server_error(error)
            }
            EventBody::DaemonStatus { status } => {
                if request_id.is_some() && request_id == self.book.status_request {
                    self.book.status_request = None;
                    self.mcp = McpView::Known(
                        status
                            .components
                            .into_iter()
                            .filter(|c| c.kind() == scv_protocol::ComponentKind::Mcp)
                            .collect(),
                    );
                }
            }
            // Extensions this client has not asked for (yet).
            EventBody::ReasoningDelta { content } => self.reasoning_delta(content),
            EventBody::SessionConfigured {
                provider,
                model,
                context_max_tokens,
                mode,
                ..
            } => {
                if let Some(session) = self.session.as_mut() {
                    session.provider = Some(provider.clone());
                    session.model = model.clone();
                    session.context_max_tokens = context_max_tokens;
                }
                // The answer to a mode switch names the model too; only a
                // model switch is news about it.
                if !self.mode_answered(request_id.as_deref()) {
                    self.notice(format!(
                        "now using {provider}/{model} (context {} tokens); the history is kept",
                        short(context_max_tokens)
                    ));
                }
                if let Some(mode) = mode {
                    self.mode_now(mode);
                }
            }
            EventBody::Initialized { .. } => {}
        }
    }

    /// The session's bounds apply to the transcript and the history.
    fn session_started(&mut self, started: SessionStarted, session_id: Option<String>) {
        self.transcript.set_bounds(
            started.max_transcript_items as usize,
            started.max_transcript_bytes as usize,
        );
        self.input.set_bounds(
            started.max_prompt_history_items as usize,
            started.max_prompt_history_bytes as usize,
        );
        self.session = Some(SessionView {
            session_id: session_id.unwrap_or_default(),
            cwd: started.cwd,
            model: started.model,
            context_max_tokens: started.context_max_tokens,
            sandbox: started.sandbox,
            sandbox_gaps: started.sandbox_gaps,
            sandbox_network: started.sandbox_network,
            provider: started.provider,
            mode: started.mode.unwrap_or_default(),
            commands: started.commands.unwrap_or_default(),
            not_saved: None,
        });
        // A repository's configuration that does not run until the user
        // trusts the workspace: asked once, as the session opens.
        if let Some(trust) = started.trust.filter(|t| t.asks()) {
            self.overlay = Some(crate::tui::overlays::OpenOverlay::new(
                crate::tui::overlays::OverlayKind::Trust(trust),
            ));
        }
        // config.toml's error (the server runs on the last good one),
        // unknown keys, and what the workspace's trust skipped.
        for warning in started.config_warnings {
            self.notice(format!("config: {warning}"));
        }
        for warning in started.sandbox_warnings {
            self.notice(format!("sandbox: {warning}"));
        }
        // Command and skill files the server could not use, and why.
        for skipped in started.command_diagnostics {
            self.notice(format!("skipped: {skipped}"));
        }
        if started.mode == Some(scv_protocol::Mode::Plan) {
            self.notice(super::plan::PLAN_ON.into());
        }
        if started.resumed {
            self.notice(format!(
                "resumed session {}",
                short_id(&self.session_id().unwrap_or_default())
            ));
        }
        if let Some(from) = &started.forked_from {
            self.notice(format!(
                "forked from session {}",
                short_id(&from.session_id)
            ));
        }
        if let Some(unsent) = started.unsent_prompts.filter(|p| !p.is_empty()) {
            // Never sent again by themselves: back in the input history,
            // so ↑ brings each one back to send or drop.
            let count = unsent.len();
            for prompt in unsent {
                self.input.remember(prompt);
            }
            self.notice(format!(
                "{count} prompt(s) were still queued when the session stopped; they did not run (↑ to bring them back)"
            ));
        }
    }

    /// A resumed or forked session's past conversation, drawn as it was.
    fn past_conversation(&mut self, items: Vec<scv_protocol::TranscriptItem>, truncated: bool) {
        use scv_protocol::{TranscriptItem, TurnOutcome};
        self.book.worked |= !items.is_empty();
        if truncated {
            self.notice("older parts of the conversation are not shown".into());
        }
        for item in items {
            match item {
                TranscriptItem::User { text, turn_id } => {
                    self.turn_begins(&turn_id);
                    self.input.remember(text.clone());
                    self.transcript.push(ItemKind::User(text));
                }
                TranscriptItem::Assistant { text, .. } => {
                    self.transcript.push(ItemKind::Assistant {
                        text,
                        streaming: false,
                    })
                }
                TranscriptItem::Tool {
                    call_id,
                    name,
                    arguments,
                    output,
                    success,
                    truncated,
                    ..
                } => {
                    let arguments = serde_json::from_str(&arguments)
                        .unwrap_or(serde_json::Value::String(arguments));
                    // The file has changed since: the change alone.
                    let diff = crate::tui::edit_diff::of_call(None, &name, &arguments);
                    self.transcript.push(ItemKind::Tool(ToolCard {
                        call_id,
                        name,
                        arguments,
                        diff,
                        state: if success {
                            ToolState::Done
                        } else {
                            ToolState::Failed
                        },
                        output,
                        truncated,
                        approved_by: None,
                        subagents: Vec::new(),
                    }))
                }
                TranscriptItem::TurnEnded {
                    outcome, message, ..
                } => match outcome {
                    TurnOutcome::Completed => {}
                    TurnOutcome::Cancelled => self.notice("turn cancelled".into()),
                    TurnOutcome::Failed => self.transcript.push(ItemKind::Error {
                        code: "turn_failed".into(),
                        message: message.unwrap_or_default(),
                    }),
                    TurnOutcome::Interrupted => self.notice(
                        "interrupted: SCV stopped while this turn ran; it was not run again".into(),
                    ),
                },
            }
        }
    }

    /// The session's journal cannot be written (the status line says so
    /// until it recovers), or caught up again.
    fn session_warning(&mut self, warning: scv_protocol::SessionWarning) {
        use scv_protocol::SessionWarningCode;
        let not_saved = match warning.code {
            SessionWarningCode::JournalFailed => {
                Some(crate::tui::state::not_saved_status(&warning.message))
            }
            SessionWarningCode::JournalRecovered => None,
            SessionWarningCode::Other => {
                self.notice(warning.message);
                return;
            }
        };
        if let Some(session) = self.session.as_mut() {
            session.not_saved = not_saved;
        }
        self.notice(warning.message);
    }

    fn session_cleared(&mut self) {
        self.transcript.clear();
        self.subagents.clear();
        self.queue.clear();
        self.usage = Usage::default();
        self.costs = Default::default();
        self.context_used = 0;
        self.notice("session cleared".into());
    }

    /// A prompt is shown once its turn starts, not when it is sent: the
    /// server may queue it first.
    fn turn_started(&mut self, turn_id: Option<String>) {
        self.turn = Some(ActiveTurn::new(turn_id.unwrap_or_default(), self.now));
    }

    fn count_usage(&mut self, usage: Usage, steps: u32) {
        self.usage.input_tokens += usage.input_tokens;
        self.usage.output_tokens += usage.output_tokens;
        self.context_used = usage.input_tokens / u64::from(steps.max(1));
    }

    fn count_cost(&mut self, cost: scv_protocol::TurnCost, steps: u32) {
        let number = self.costs.turns.len() + 1;
        self.costs.turns.push(crate::tui::state::TurnCostRow {
            number,
            steps,
            detail: cost.usage_detail,
            usd: cost.cost_usd,
        });
        self.costs.session = cost.session_usage_detail;
        self.costs.session_usd = cost.session_cost_usd;
        self.costs.unpriced = cost.cost_usd.is_none();
    }

    fn end_turn(&mut self) {
        self.turn = None;
        self.end_turn_hint();
        self.approval.clear();
        self.transcript.end_streaming(self.now);
    }

    fn reasoning_delta(&mut self, content: String) {
        self.transcript.reasoning_delta(content, self.now);
    }

    fn assistant_delta(&mut self, content: String) {
        self.transcript.assistant_delta(content, self.now);
    }

    fn assistant_completed(&mut self, content: String) {
        self.transcript.assistant_completed(content, self.now);
    }

    /// The prompt shows the call's arguments as its card has them. A
    /// session rule that matches answers the call itself, and its card
    /// says which rule did.
    fn approval_requested(&mut self, mut approval: PendingApproval) {
        self.transcript.update_tool(&approval.call_id, |card| {
            card.state = ToolState::AwaitingApproval;
            approval.arguments = card.arguments.clone();
        });
        if let Some(rule) = self.rules.find(&approval.call()).cloned() {
            let out = self.approve_by_rule(approval, &rule);
            self.book.outbox.extend(out);
            return;
        }
        self.approval.push(approval, self.now);
    }

    /// Approves `approval` on behalf of `rule`; the card of the call (the
    /// session's, or in its subagent's transcript) says so.
    fn approve_by_rule(&mut self, approval: PendingApproval, rule: &Rule) -> Vec<Outgoing> {
        let label = rule.label();
        let transcript = match &approval.child_session {
            Some(child) => self.subagents.transcript_mut(child),
            None => Some(&mut self.transcript),
        };
        if let Some(transcript) = transcript {
            transcript.update_tool(&approval.call_id, |card| {
                card.approved_by = Some(label);
            });
        }
        self.resolve(approval, true)
    }

    /// What the session client made of a subagent's event: its record
    /// and card change, then its approvals wait in the prompt like the
    /// session's own (and the session's rules answer them alike).
    fn child_applied(&mut self, updates: Vec<Update>) {
        let mut approvals = Vec::new();
        for update in updates {
            match update {
                Update::Subagent(event) => self.subagent_event(&event),
                Update::ApprovalRequested(approval) if approval.child_session.is_some() => {
                    approvals.push(approval)
                }
                Update::ApprovalGone { approval_id } => {
                    let now = self.now;
                    self.approval.take_where(
                        |a| a.child_session.is_some() && a.approval_id == approval_id,
                        now,
                    );
                }
                _ => {}
            }
        }
        for approval in approvals {
            self.child_approval(approval);
        }
    }

    /// One event of a subagent of this session (the session client
    /// checked that it is ours).
    fn subagent_event(&mut self, event: &Event) {
        use crate::tui::subagents::Change;
        let (Some(parent), Some(child)) = (&event.parent, &event.session_id) else {
            return;
        };
        // Its transcript opens with the task its `task` call gave it.
        let prompt = match &event.body {
            EventBody::SubagentStarted(_) => self
                .host_transcript(&parent.session_id)
                .and_then(|t| t.tool(&parent.call_id))
                .and_then(|card| card.arguments.get("prompt"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_string),
            _ => None,
        };
        if self.subagents.apply(event, prompt, self.now) == Change::Card {
            self.place_card(child);
        }
    }

    /// The transcript where session `session_id`'s calls are: the
    /// session's own, or a subagent's.
    fn host_transcript(&self, session_id: &str) -> Option<&crate::tui::transcript::Transcript> {
        if self.session_id().as_deref() == Some(session_id) {
            return Some(&self.transcript);
        }
        self.subagents.get(session_id).map(|c| &c.transcript)
    }

    /// Puts child `session_id`'s card under its `task` call, and so on up:
    /// a child of a child is a line on its parent's card too.
    fn place_card(&mut self, session_id: &str) {
        let ours = self.session_id();
        let mut id = session_id.to_string();
        // Each step goes one level up; depth is small (the server's
        // `max_subagent_depth`), this only bounds a loop.
        for _ in 0..16 {
            let (Some(card), Some(parent)) = (
                self.subagents.card(&id),
                self.subagents.get(&id).map(|c| c.parent.clone()),
            ) else {
                return;
            };
            if ours.as_deref() == Some(parent.session_id.as_str()) {
                self.transcript
                    .update_tool(&parent.call_id, |c| c.set_subagent(card));
                return;
            }
            let Some(host) = self.subagents.transcript_mut(&parent.session_id) else {
                return;
            };
            host.update_tool(&parent.call_id, |c| c.set_subagent(card));
            id = parent.session_id;
        }
    }

    /// A subagent's call waits for approval: labelled with the subagent,
    /// answered by a session rule that matches as a call of the session's
    /// own would be.
    fn child_approval(&mut self, approval: scv_client::session::Approval) {
        let child = approval.child_session.clone().unwrap_or_default();
        let description = self
            .subagents
            .get(&child)
            .map(|c| c.card().description.clone())
            .unwrap_or_else(|| "?".into());
        let mut arguments = approval.arguments;
        if arguments.is_null() {
            if let Some(card) = self
                .subagents
                .get(&child)
                .and_then(|c| c.transcript.tool(&approval.call_id))
            {
                arguments = card.arguments.clone();
            }
        }
        let pending = PendingApproval {
            approval_id: approval.approval_id,
            call_id: approval.call_id,
            name: approval.name,
            risk: approval.risk.as_str().to_string(),
            cwd: approval.cwd,
            summary: approval.summary,
            arguments,
            sandboxed: approval.sandboxed,
            child_session: Some(child),
            subagent: Some(description),
        };
        if let Some(rule) = self.rules.find(&pending.call()).cloned() {
            let out = self.approve_by_rule(pending, &rule);
            self.book.outbox.extend(out);
            return;
        }
        self.approval.push(pending, self.now);
    }

    /// `turn.cancel` of subagent `session_id` alone (its `task` call
    /// fails; the session's turn goes on).
    pub(super) fn cancel_subagent(&mut self, session_id: &str) -> Vec<Outgoing> {
        let Some(child) = self.subagents.get(session_id).filter(|c| c.running()) else {
            self.hint = Some("that subagent is not running".into());
            return Vec::new();
        };
        let Some(turn_id) = child.turn_id.clone() else {
            self.hint = Some("that subagent has not started its turn yet".into());
            return Vec::new();
        };
        self.hint = Some(format!(
            "cancelling subagent «{}»",
            child.card().description
        ));
        vec![
            self.send(ClientMessage::TurnCancel(scv_protocol::TurnCancel {
                session_id: session_id.to_string(),
                turn_id,
            })),
        ]
    }

    /// `a`: approve this call, add its rule, and let the rule answer the
    /// calls already waiting that it matches.
    pub(super) fn approve_always(
        &mut self,
        approval: PendingApproval,
        rule: Rule,
    ) -> Vec<Outgoing> {
        let mut out = self.resolve(approval, true);
        self.notice(format!(
            "rule added: {} — /approvals lists and removes rules",
            rule.scope()
        ));
        let waiting = self
            .approval
            .take_where(|a| rule.matches(&a.call()), self.now);
        self.rules.add(rule.clone());
        for approval in waiting {
            out.extend(self.approve_by_rule(approval, &rule));
        }
        out
    }

    /// Answers `approval`. A denial is remembered: the call's failure is
    /// then shown as denied.
    pub(super) fn resolve(&mut self, approval: PendingApproval, approved: bool) -> Vec<Outgoing> {
        if !approved {
            match &approval.child_session {
                Some(child) => self.subagents.denied(child, &approval.call_id),
                None => {
                    self.book.denied.insert(approval.call_id.clone());
                }
            }
        }
        let Some(session_id) = approval.child_session.clone().or_else(|| self.session_id()) else {
            return Vec::new();
        };
        match self.book.client.resolve(&approval.approval_id, approved) {
            Some(request) => vec![outgoing(request)],
            // Not one the session client saw (the server says so if so).
            None => vec![self.send(ClientMessage::ApprovalResolve(ApprovalResolve {
                session_id,
                approval_id: approval.approval_id,
                approved,
            }))],
        }
    }

    /// A call that fails after the user denied it is shown as denied.
    fn tool_completed(&mut self, call_id: &str, success: bool, output: String, truncated: bool) {
        let denied = self.book.denied.remove(call_id);
        self.transcript
            .tool_completed(call_id, success, denied, output, truncated);
    }

    /// A queue conflict refreshes the entry and says so under the input;
    /// other errors go into the transcript.
    fn server_error(&mut self, error: ErrorBody) {
        if error.code == ErrorCode::QueueConflict {
            if let Some(entry) = error.entry {
                self.queue.replace(entry);
            }
            self.hint =
                Some("that queued prompt changed meanwhile; it is shown as it is now".into());
        } else {
            self.transcript.push(ItemKind::Error {
                code: error.code.as_str().to_string(),
                message: error.message,
            });
        }
    }

    /// An entry left the queue: a dequeued prompt is shown when its turn
    /// starts; one being edited can no longer be saved.
    fn left_queue(&mut self, left: Left, request_id: Option<String>) {
        if let (Some(prompt), Some(rid)) = (left.dequeued, request_id) {
            if !self.book.client.owns(&rid) {
                self.book.dequeued.insert(rid, prompt);
            }
        }
        if self
            .input
            .editing()
            .is_some_and(|e| e.queue_id == left.queue_id)
        {
            self.input.stop_editing();
            self.hint = Some("the prompt you were editing has left the queue".into());
        }
    }

    /// The daemon went away (the caller reconnects).
    pub fn disconnected(&mut self) {
        self.link = LinkState::Disconnected;
        self.turn = None;
        self.approval.clear();
        self.queue.reset();
        self.input.stop_editing();
        self.end_turn();
        // No terminal event of a running subagent will come now.
        for child in self
            .subagents
            .abandon("disconnected", "the daemon went away")
        {
            self.place_card(&child);
        }
        self.transcript.push(ItemKind::Error {
            code: "disconnected".into(),
            message: "the SCV daemon went away; starting it again and reconnecting…".into(),
        });
    }

    /// Whether this session ran a turn (or was resumed with some): only
    /// then is it stored, to be offered back.
    pub(super) fn worked(&self) -> bool {
        self.book.worked
    }

    /// Reconnecting failed with `why` (the daemon cannot start: a
    /// malformed config.toml); said once until it changes.
    pub fn reconnect_failed(&mut self, why: String) {
        if self.reconnect_error.as_ref() != Some(&why) {
            self.transcript.push(ItemKind::Error {
                code: "disconnected".into(),
                message: format!("cannot start the SCV daemon again: {why} (retrying)"),
            });
            self.reconnect_error = Some(why);
        }
    }

    /// Connected again with a fresh session (its events follow). The
    /// session it had is offered back: one key resumes it.
    pub fn reconnected(&mut self) {
        self.reconnect_error = None;
        let previous = self.session_id().filter(|_| self.book.worked);
        self.link = LinkState::Connected;
        self.new_client();
        self.resume_offer = previous.clone();
        let note = match previous {
            Some(id) => format!(
                "reconnected; a new session started. Press Ctrl+R to resume the conversation you had (session {}) — nothing of it ran again",
                short_id(&id)
            ),
            None => "reconnected; a new session started".into(),
        };
        self.transcript.push(ItemKind::Notice(note));
    }

    /// A new session client: nothing of the old session is in flight (its
    /// request ids stay unique on the new connection all the same).
    fn new_client(&mut self) {
        self.book.sessions += 1;
        self.book.client = SessionClient::new(format!("tui{}-", self.book.sessions));
        self.book.dequeued.clear();
        self.book.denied.clear();
        self.book.list_request = None;
        self.book.worked = false;
        self.undo.reset();
        self.plan.reset();
    }

    /// Another session takes this view (resumed, forked): what showed
    /// the old one goes; its events follow.
    pub fn switched(&mut self, which: &crate::session::Which) {
        self.new_client();
        self.resume_offer = None;
        self.link = LinkState::Connected;
        self.turn = None;
        self.approval.clear();
        self.queue.reset();
        self.queue.clear();
        self.transcript.clear();
        self.subagents.clear();
        self.usage = Usage::default();
        self.costs = Default::default();
        self.context_used = 0;
        self.rules = Default::default();
        self.overlay = None;
        self.session = None;
        if matches!(which, crate::session::Which::New) {
            self.notice("new session started; /resume brings the other one back".into());
        }
    }

    /// A session could not be opened; this one stays.
    pub fn failed_switch(&mut self, why: &str) {
        self.transcript.push(ItemKind::Error {
            code: "session".into(),
            message: scv_client::text::visible(why).into_owned(),
        });
    }

    /// Asks the daemon for the stored sessions (the picker opens on the
    /// answer).
    pub(crate) fn ask_session_list(&mut self) -> Outgoing {
        let request =
            self.book
                .client
                .request(ClientMessage::SessionList(scv_protocol::SessionList {
                    cwd: None,
                    limit: Some(scv_protocol::MAX_SESSION_LIST_LIMIT),
                }));
        self.book.list_request = Some(request.request_id.clone());
        outgoing(request)
    }

    fn open_picker(&mut self, mut sessions: Vec<scv_protocol::StoredSession>) {
        let current = self.session_id();
        sessions.retain(|s| Some(&s.session_id) != current.as_ref());
        let now = scv_store::now_unix();
        self.overlay = Some(crate::tui::overlays::OpenOverlay::new(
            crate::tui::overlays::OverlayKind::Sessions(Box::new(crate::tui::overlays::Picker {
                sessions,
                filter: String::new(),
                now,
            })),
        ));
    }

    /// Cancels the running turn — or the prompt on its way to becoming
    /// one, as soon as the server says where it is.
    pub(super) fn cancel_turn(&mut self) -> Vec<Outgoing> {
        if self.session_id().is_none() {
            return Vec::new();
        }
        let out: Vec<Outgoing> = self
            .book
            .client
            .cancel_current()
            .into_iter()
            .map(outgoing)
            .collect();
        let out = match (out.is_empty(), self.turn.clone(), self.session_id()) {
            // Asked again while its cancel is on its way: say it again.
            (true, Some(turn), Some(session_id)) => {
                vec![
                    self.send(ClientMessage::TurnCancel(scv_protocol::TurnCancel {
                        session_id,
                        turn_id: turn.turn_id,
                    })),
                ]
            }
            _ => out,
        };
        self.pause_after_cancel(out)
    }

    /// A user's cancel pauses the queue first (its prompts would start at
    /// once otherwise, which a user who pressed Esc does not expect); the
    /// screen says so, and Enter on an empty box resumes it.
    fn pause_after_cancel(&mut self, cancel: Vec<Outgoing>) -> Vec<Outgoing> {
        let Some(session_id) = self.session_id() else {
            return cancel;
        };
        if cancel.is_empty() || self.turn.is_none() || self.queue.is_empty() || self.queue.paused()
        {
            return cancel;
        }
        self.queue.set_paused(true);
        self.queue_paused_by_cancel = true;
        let waiting = self.queue.len();
        self.notice(format!(
            "queue paused after the cancel: {waiting} prompt{} wait — Enter on an empty box resumes it (or /unpause)",
            if waiting == 1 { "" } else { "s" }
        ));
        let mut out = vec![
            self.send(ClientMessage::SessionPause(scv_protocol::SessionPause {
                session_id,
                paused: true,
            })),
        ];
        out.extend(cancel);
        out
    }

    /// `turn.start` for `prompt`, which is shown once its turn starts.
    pub(super) fn start_turn(&mut self, session_id: String, prompt: String) -> Outgoing {
        if self.book.client.session_id().is_none() {
            self.book.client.set_session(session_id);
        }
        outgoing(self.book.client.submit(prompt))
    }

    /// `turn.start` for `/NAME args`, a custom command or skill the server
    /// expands; shown as typed once its turn starts (an unknown one is the
    /// server's error, and no turn).
    pub(super) fn start_command(&mut self, session_id: String, text: String) -> Outgoing {
        if self.book.client.session_id().is_none() {
            self.book.client.set_session(session_id);
        }
        outgoing(self.book.client.submit_command(text))
    }

    /// `daemon.status` for `/status`: its answer (or its error) fills
    /// [`App::mcp`].
    pub(super) fn ask_daemon_status(&mut self) -> Outgoing {
        self.mcp = McpView::Asking;
        let out = self.send(ClientMessage::DaemonControl(DaemonControl {
            command: scv_protocol::DaemonCommand::Status,
        }));
        if let Outgoing::Send { request_id, .. } = &out {
            self.book.status_request = Some(request_id.clone());
        }
        out
    }
}

/// The first block of a session id, enough to tell sessions apart.
pub(crate) fn short_id(session_id: &str) -> &str {
    session_id.split('-').next().unwrap_or(session_id)
}
