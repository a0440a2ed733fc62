//! The session's events applied to the App: the seam between the protocol
//! and the UI. [`App::apply`] hands each server event to the session
//! client (`scv_client::session`), which owns the request ids, the life of
//! each prompt, the approvals (the session's and its subagents'), the
//! queue and a view of each subagent; what it makes of the event comes
//! out as typed updates, and [`App::update`] renders each one — one arm per
//! update, no protocol event matched here. What starts a turn, cancels it
//! or answers an approval is here too, so the whole prompt lifecycle reads
//! in one place.
//!
//! A subagent's updates are never the session's own: they go to
//! [`crate::tui::subagents`] and to its card under the `task` call
//! (`app/children.rs`); its approvals wait in the same prompt, under the
//! same rules.

use super::undo::Answered as Checkpoint;
use super::{outgoing, App, Outgoing};
use crate::tui::opening;
use crate::tui::overlays::OpenOverlay;
use crate::tui::queue_panel::Left;
use crate::tui::state::{McpView, SessionView};
use crate::tui::transcript::{ItemKind, ToolState};
use scv_client::session::{Answer, Asked, Configured, Outcome, SessionClient, ToolChange, Update};
use scv_protocol::{ClientMessage, DaemonControl, ErrorBody, ErrorCode, Event, SessionStarted};

/// What the App keeps beside the screen: the session client, and what
/// events (not keys) gave it to send.
#[derive(Debug)]
pub(super) struct Bookkeeping {
    /// The session's prompts, requests and approvals; it makes every
    /// request id.
    pub(super) client: SessionClient,
    /// Sessions followed before this one (reconnects), for id prefixes.
    pub(super) sessions: u64,
    /// Whether this session ran a turn (or came back with one): only such
    /// a session is journaled, so only it can be offered back.
    pub(super) worked: bool,
    /// Messages to send that events (not keys) produced: approvals a rule
    /// answered. The event loop drains them with [`App::take_outgoing`].
    pub(super) outbox: Vec<Outgoing>,
}

impl Default for Bookkeeping {
    fn default() -> Self {
        Bookkeeping {
            client: SessionClient::new("tui-"),
            sessions: 0,
            worked: false,
            outbox: Vec::new(),
        }
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

    /// Applies one server event through the session client; each update
    /// it makes is rendered by [`App::update`].
    pub fn apply(&mut self, event: Event) {
        let of_turn = event.parent.is_none()
            && self
                .turn
                .as_ref()
                .is_some_and(|t| event.turn_id.as_ref() == Some(&t.turn_id));
        let applied = self.book.client.apply(&event);
        // A cancel asked before the server placed the prompt goes now.
        self.book
            .outbox
            .extend(applied.requests.into_iter().map(outgoing));
        if let Some(turn) = self.turn.as_mut().filter(|_| of_turn) {
            turn.heard(&applied.updates, self.now);
        }
        for update in applied.updates {
            self.update(update);
        }
    }

    /// Renders one update of the session client.
    fn update(&mut self, update: Update) {
        match update {
            Update::Opened(started) => self.session_started(*started),
            Update::Attached { attached, .. } => self.attached(attached),
            Update::Detached => self.detached(),
            Update::Closed => self.closed(),
            Update::Transcript { items, truncated } => self.past_conversation(items, truncated),
            Update::Queue(change) => {
                if let Some(left) = self.queue.apply(change) {
                    self.left_queue(left);
                }
            }
            Update::TurnBegan {
                turn_id, prompt, ..
            } => self.turn_began(turn_id, prompt),
            Update::Text(content) => self.transcript.assistant_delta(content, self.now),
            Update::TextDone(content) => self.transcript.assistant_completed(content, self.now),
            Update::Reasoning(content) => self.transcript.reasoning_delta(content, self.now),
            Update::Tool(change) => self.tool(change),
            // The counters move while the turn runs; its end counts the
            // turn into the session's.
            Update::Usage { step, turn, .. } => {
                self.meter.step(&step);
                if let Some(active) = self.turn.as_mut() {
                    active.usage = turn;
                }
            }
            Update::Compacted {
                before_tokens,
                after_tokens,
                removed_messages,
            } => {
                let note = self
                    .meter
                    .compacted(before_tokens, after_tokens, removed_messages);
                self.notice(note);
            }
            Update::Trimmed {
                removed_messages, ..
            } => self.notice(format!(
                "server history trimmed: {removed_messages} oldest messages dropped"
            )),
            Update::Cleared => self.session_cleared(),
            Update::Budget(warning) => {
                let note = self.meter.budget_warning(warning);
                self.notice(note);
            }
            // Shown on the status line, counting down (`ActiveTurn::heard`).
            Update::Retrying(_) => {}
            Update::Hook(note) => {
                let verb = if note.blocked { "blocked" } else { "says" };
                self.notice(format!("{} {verb}: {}", note.hook, note.message));
            }
            Update::CheckpointCreated { .. } => {
                if let Some(note) = self.undo.created() {
                    self.notice(note);
                }
            }
            // Before the call runs: it has no undo point.
            Update::CheckpointFailed { message } => self.notice(message),
            Update::Warning(warning) => self.session_warning(warning),
            Update::ApprovalRequested(approval) => self.approval_requested(approval),
            Update::ApprovalGone { approval_id } => {
                let now = self.now;
                self.approval
                    .take_where(|a| a.approval_id == approval_id, now);
            }
            Update::Ended { outcome, .. } => self.turn_ended(outcome),
            Update::Refused { error, .. } => self.server_error(error),
            Update::Answered {
                asked,
                request_id,
                answer,
            } => self.answered(asked, request_id, answer),
            Update::Failed {
                asked,
                request_id,
                error,
            } => self.failed(asked, request_id, error),
            Update::Elicitation(asked) => self.elicitation_requested(*asked),
            Update::SubagentStarted { session_id } => self.subagent_started(&session_id),
            Update::Subagent { session_id, update } => self.subagent_update(&session_id, &update),
            // Where our prompts are shows in the queue panel and the
            // transcript as their turns start.
            Update::Queued { .. }
            | Update::Started { .. }
            | Update::Withdrawn { .. }
            | Update::SeqGap { .. } => {}
        }
    }

    /// A turn began: its prompt shows now (the server may have queued
    /// it first), as the session client knows it (an edit included).
    fn turn_began(&mut self, turn_id: String, prompt: Option<String>) {
        self.undo.turn_begins(&turn_id, self.transcript.next_id());
        if let Some(prompt) = prompt {
            self.transcript.push(ItemKind::User(prompt));
        }
        self.book.worked = true;
        self.turn = Some(crate::tui::state::ActiveTurn::new(turn_id, self.now));
    }

    /// A call of the session's own turn.
    fn tool(&mut self, change: ToolChange) {
        match change {
            ToolChange::Proposed {
                call_id,
                name,
                arguments,
            } => {
                self.processes.proposed(&call_id, &name, &arguments);
                let cwd = self.session.as_ref().map(|s| s.cwd.clone());
                self.transcript
                    .tool_proposed(call_id, name, arguments, cwd.as_deref(), self.now)
            }
            ToolChange::Running { call_id, .. } => {
                self.transcript
                    .update_tool(&call_id, |card| card.state = ToolState::Running);
            }
            // A call that fails after the user denied it shows as denied.
            ToolChange::Done {
                call_id,
                name,
                success,
                output,
                truncated,
                denied,
            } => {
                self.processes.completed(&call_id, &name, success, &output);
                self.transcript
                    .tool_completed(&call_id, success, denied, output, truncated)
            }
        }
    }

    /// The session's turn ended.
    fn turn_ended(&mut self, outcome: Outcome) {
        self.elicitations_gone();
        match outcome {
            Outcome::Completed { steps, usage, cost } => {
                if let Some(usage) = usage {
                    self.meter.count_usage(usage, steps);
                }
                if let Some(cost) = cost {
                    self.meter.count_cost(cost, steps);
                }
                self.plan_turn_completed();
                self.end_turn();
            }
            Outcome::Cancelled => {
                self.count_unfinished();
                self.end_turn();
                self.notice("turn cancelled".into());
            }
            Outcome::Failed { code, message } => {
                self.count_unfinished();
                self.end_turn();
                self.transcript.push(ItemKind::Error {
                    code: code.as_str().to_string(),
                    message,
                });
            }
        }
    }

    /// The answer to a request (ours: `asked`), or news of another
    /// client's change to the session.
    fn answered(&mut self, asked: Option<Asked>, request_id: Option<String>, answer: Answer) {
        let rid = request_id.as_deref().unwrap_or_default();
        match answer {
            Answer::Sessions(sessions) if asked == Some(Asked::Sessions) => {
                self.open_picker(sessions)
            }
            Answer::Status(status) if asked == Some(Asked::Status) => {
                self.mcp = McpView::known(*status)
            }
            // Answers to requests this view did not send.
            Answer::Sessions(_) | Answer::Status(_) | Answer::Deleted | Answer::Closed => {}
            Answer::Models { provider, models } => self.open_models(provider, models),
            Answer::Checkpoints {
                checkpoints,
                missed,
            } => self.checkpoint_answer(rid, Ok(Checkpoint::Listed(checkpoints, missed))),
            Answer::Diffed {
                checkpoint_id,
                files,
                ..
            } => self.checkpoint_answer(rid, Ok(Checkpoint::Diffed(checkpoint_id, files))),
            Answer::Restored {
                checkpoint_id,
                files,
                conversation_restored,
                ..
            } => self.checkpoint_answer(
                rid,
                Ok(Checkpoint::Restored(
                    checkpoint_id,
                    files,
                    conversation_restored,
                )),
            ),
            Answer::Configured(configured) => self.configured(configured, request_id.as_deref()),
            Answer::Permissions(rules) => {
                let (kept, removed) = match asked {
                    Some(Asked::Permissions { kept, removed }) => (kept, removed),
                    _ => (None, None),
                };
                self.permissions_listed(kept, removed, rules);
            }
            Answer::Process(state) => {
                let text = self.processes.state(&state);
                self.notice(text);
            }
            Answer::Processes(list) => {
                self.processes.listed(&list);
                self.notice(self.processes.listing());
            }
            Answer::Trusted(trust) => self.notice(trusted_note(&trust)),
        }
    }

    /// An error answering a request (ours: `asked`) or the session's.
    fn failed(&mut self, asked: Option<Asked>, request_id: Option<String>, error: ErrorBody) {
        if self.undo.is_answer(request_id.as_ref()) {
            let rid = request_id.as_deref().unwrap_or_default();
            return self.checkpoint_answer(rid, Err(error));
        }
        if asked == Some(Asked::Status) {
            self.mcp = McpView::Unavailable(error.message);
            return;
        }
        // A refused mode request is no longer in flight.
        self.mode_answered(request_id.as_deref());
        self.server_error(error)
    }

    /// `session.configured`: the session's model (and mode) now.
    fn configured(&mut self, configured: Configured, request_id: Option<&str>) {
        let note = match self.session.as_mut() {
            Some(session) => session.configured(&configured),
            None => opening::model_note(&configured),
        };
        // The answer to a mode switch names the model too; only a model
        // switch is news about it.
        if !self.mode_answered(request_id) {
            self.notice(note);
        }
        if let Some(mode) = configured.mode {
            self.mode_now(mode);
        }
    }

    /// The models the provider offers: the picker opens on them, the
    /// current one selected when the list has it.
    fn open_models(&mut self, provider: String, models: Vec<String>) {
        self.hint = None;
        let current = self.session.as_ref().map(|s| s.model.clone());
        let open = OpenOverlay::models(provider, models, current.unwrap_or_default());
        self.overlay = Some(open);
    }

    /// The session's bounds apply to the transcript and the history.
    fn session_started(&mut self, started: SessionStarted) {
        let session_id = self
            .book
            .client
            .session_id()
            .unwrap_or_default()
            .to_string();
        self.transcript.set_bounds(
            started.max_transcript_items as usize,
            started.max_transcript_bytes as usize,
        );
        self.input.set_bounds(
            started.max_prompt_history_items as usize,
            started.max_prompt_history_bytes as usize,
        );
        self.session = Some(SessionView::started(session_id.clone(), &started));
        // A repository's configuration that does not run until the user
        // trusts the workspace: asked once, as the session opens.
        if let Some(trust) = started.trust.clone().filter(|t| t.asks()) {
            self.overlay = Some(crate::tui::overlays::OpenOverlay::new(
                crate::tui::overlays::OverlayKind::Trust(trust),
            ));
        }
        let here = opening::Here {
            first_run_key: self.first_run_key.as_deref(),
            daemon_started: self.daemon_started.as_deref(),
        };
        let notes = opening::config_notes(&started, &here);
        notes.into_iter().for_each(|note| self.notice(note));
        self.watch_config();
        // A resumed session's spending so far: the counters and `/cost`
        // go on from it.
        if let Some(spent) = started.spent.clone() {
            self.meter.resumed(*spent);
        }
        let notes = opening::origin_notes(&session_id, &started);
        notes.into_iter().for_each(|note| self.notice(note));
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
        self.book.worked |= !items.is_empty();
        if truncated {
            self.notice("older parts of the conversation are not shown".into());
        }
        for past in opening::past(items) {
            match past {
                opening::Past::Prompt { turn_id, text } => {
                    self.undo.turn_begins(&turn_id, self.transcript.next_id());
                    self.input.remember(text.clone());
                    self.transcript.push(ItemKind::User(text));
                }
                opening::Past::Item(item) => self.transcript.push(item),
            }
        }
    }

    /// The session's journal cannot be written (the status line says so
    /// until it recovers), or caught up again.
    fn session_warning(&mut self, warning: scv_protocol::SessionWarning) {
        if let Some(session) = self.session.as_mut() {
            session.warned(&warning);
        }
        self.notice(warning.message);
    }

    fn session_cleared(&mut self) {
        self.transcript.clear();
        self.subagents.clear();
        self.queue.clear();
        self.meter = Default::default();
        self.notice("session cleared".into());
    }

    /// A turn that ended without `turn.completed` spent what its
    /// `usage.updated` said.
    fn count_unfinished(&mut self) {
        self.meter
            .count_unfinished(self.turn.as_ref().map(|t| &t.usage));
    }

    pub(super) fn end_turn(&mut self) {
        self.turn = None;
        // A quit asked while it ran: the question no longer stands.
        self.live.quit_asked = false;
        self.end_turn_hint();
        self.approval.clear();
        self.transcript.end_streaming(self.now);
        self.transcript.settle_unfinished();
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

    /// An entry left the queue: one being edited can no longer be saved
    /// (a dequeued prompt shows when its turn starts: `TurnBegan`).
    fn left_queue(&mut self, left: Left) {
        if self
            .input
            .editing()
            .is_some_and(|e| e.queue_id == left.queue_id)
        {
            self.input.stop_editing();
            self.hint = Some("the prompt you were editing has left the queue".into());
        }
    }

    /// Asks the daemon for the stored sessions (the picker opens on the
    /// answer).
    pub(crate) fn ask_session_list(&mut self) -> Outgoing {
        self.send(ClientMessage::SessionList(scv_protocol::SessionList {
            cwd: None,
            limit: Some(scv_protocol::MAX_SESSION_LIST_LIMIT),
        }))
    }

    fn open_picker(&mut self, sessions: Vec<scv_protocol::StoredSession>) {
        let current = self.session_id();
        self.overlay = Some(OpenOverlay::sessions(sessions, current.as_deref()));
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
        if cancel.is_empty() || self.turn.is_none() {
            return cancel;
        }
        let Some(note) = self.queue.pause_for_cancel() else {
            return cancel;
        };
        self.notice(note);
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
        self.send(ClientMessage::DaemonControl(DaemonControl {
            command: scv_protocol::DaemonCommand::Status,
        }))
    }
}

/// What `workspace.trusted` changed.
fn trusted_note(trust: &scv_protocol::WorkspaceTrust) -> String {
    let files: Vec<&str> = trust.files.iter().map(|f| f.path.as_str()).collect();
    if files.is_empty() {
        format!("trusted {}", trust.workspace)
    } else {
        format!(
            "trusted {}: {} run and apply from the next turn",
            trust.workspace,
            files.join(", ")
        )
    }
}
