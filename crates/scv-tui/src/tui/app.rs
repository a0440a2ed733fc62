//! The UI's state and behaviour, free of terminal I/O: server events come
//! in through [`App::apply`], keys through [`App::on_key`], which returns
//! the protocol messages to send. Rendering reads this state (`view.rs`).
//!
//! The approval prompt, the queue panel and the input box are components
//! that each take their events and keys and draw from `&self`; the App
//! holds what needs the session (sending, slash commands, the turn) and
//! pumps each key through them in turn.

use super::approval::{ApprovalPrompt, PromptKey};
use super::input_box::InputBox;
use super::overlays::{self, OpenOverlay, OverlayData, OverlayKey, OverlayKind};
use super::queue_panel::{Left, PanelKey, QueuePanel};
use super::rules::{Rule, Rules};
use super::slash;
pub use super::slash::SLASH_COMMANDS;
pub use super::state::PendingApproval;
pub use super::state::{short, ActiveTurn, LinkState, McpView, SessionView};
use super::transcript::{ItemKind, ToolCard, ToolState, Transcript, View, Viewport};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::layout::{Constraint, Rect};
use scv_protocol::{
    ApprovalResolve, DaemonControl, QueueUpdate, SessionClear, SessionConfigure, SessionPause,
    TurnCancel, TurnStart,
};
use scv_protocol::{ClientMessage, ErrorBody, ErrorCode, Event, EventBody, SessionStarted, Usage};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

const DOUBLE_PRESS: Duration = Duration::from_millis(1500);

/// The screen's regions.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub transcript: Rect,
    pub queue: Rect,
    pub approval: Rect,
    pub input: Rect,
    pub hint: Rect,
    pub status: Rect,
}

/// What the UI wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    Send {
        request_id: String,
        message: ClientMessage,
    },
    Quit,
}

pub struct App {
    pub transcript: Transcript,
    pub input: InputBox,
    pub session: Option<SessionView>,
    pub link: LinkState,
    pub turn: Option<ActiveTurn>,
    pub queue: QueuePanel,
    pub approval: ApprovalPrompt,
    pub usage: Usage,
    /// Latest estimate of the prompt size in tokens.
    pub context_used: u64,
    /// Where the transcript view is: following the bottom, or held where
    /// the reader scrolled to while new text arrives below.
    pub viewport: Viewport,
    /// The terminal's size (columns, rows), for layout and scrolling.
    pub size: (u16, u16),
    /// Tool output shown in full.
    pub expanded: bool,
    /// The clock the view uses (set each frame; fixed in tests).
    pub now: Instant,
    /// A one-line hint under the input (e.g. "press Ctrl+C again to quit").
    pub hint: Option<String>,
    pub should_quit: bool,
    ctrl_c_at: Option<Instant>,
    next_request: u64,
    /// Prompts sent with `turn.start`, by request id, shown when they start.
    pending_prompts: HashMap<String, String>,
    denied: HashSet<String>,
    /// This session's approval rules (never saved, never sent).
    pub rules: Rules,
    /// The open overlay (`/help`, `/status`, `/approvals`, `/diff`).
    pub overlay: Option<OpenOverlay>,
    /// MCP servers, from `daemon.status` (asked for by `/status`).
    pub mcp: McpView,
    /// The request id of that `daemon.status`.
    status_request: Option<String>,
    /// Messages to send that events (not keys) produced: approvals a rule
    /// answered. The event loop drains them with [`App::take_outgoing`].
    outbox: Vec<Outgoing>,
    /// Text for the clipboard (`/copy`).
    clipboard: Option<String>,
    /// Workspace paths for `@` completion.
    files: super::files::FileIndex,
    /// Paths offered for the `@path` being typed.
    pub path_matches: Vec<String>,
}

impl App {
    pub fn new(now: Instant) -> App {
        let mut app = App {
            transcript: Transcript::default(),
            input: InputBox::new(200, 1024 * 1024),
            session: None,
            link: LinkState::Connected,
            turn: None,
            queue: QueuePanel::default(),
            approval: ApprovalPrompt::default(),
            usage: Usage::default(),
            context_used: 0,
            viewport: Viewport::Bottom,
            size: (80, 24),
            expanded: false,
            now,
            hint: None,
            should_quit: false,
            ctrl_c_at: None,
            next_request: 0,
            pending_prompts: HashMap::new(),
            denied: HashSet::new(),
            rules: Rules::default(),
            overlay: None,
            mcp: McpView::Unknown,
            status_request: None,
            outbox: Vec::new(),
            clipboard: None,
            files: Default::default(),
            path_matches: Vec::new(),
        };
        app.approval.resize(80, 24);
        app
    }

    /// The terminal is now `width` × `height`. A held view keeps its top
    /// item (the row within it is kept as far as the item still has rows).
    pub fn resize(&mut self, width: u16, height: u16) {
        self.size = (width, height);
        self.approval.resize(width, height);
    }

    /// The screen's regions, from the state alone: the view draws into
    /// them and scrolling measures with them.
    pub fn layout(&self, area: Rect) -> Layout {
        let input_rows = self.input.height();
        let queue_rows = self.queue.height();
        let approval_rows = self.approval.height();
        let hint_rows = u16::from(self.hint.is_some());
        let [transcript, queue, approval, input, hint, status] =
            ratatui::layout::Layout::vertical([
                Constraint::Min(1),
                Constraint::Length(queue_rows),
                Constraint::Length(approval_rows),
                Constraint::Length(input_rows),
                Constraint::Length(hint_rows),
                Constraint::Length(1),
            ])
            .areas(area);
        Layout {
            transcript,
            queue,
            approval,
            input,
            hint,
            status,
        }
    }

    /// The transcript as it is in view now.
    pub fn transcript_view(&self) -> View {
        let area = self
            .layout(Rect::new(0, 0, self.size.0, self.size.1))
            .transcript;
        self.transcript
            .view(area.width, area.height, self.viewport, self.expanded)
    }

    fn request_id(&mut self) -> String {
        self.next_request += 1;
        format!("tui-{}", self.next_request)
    }

    fn session_id(&self) -> Option<String> {
        self.session.as_ref().map(|s| s.session_id.clone())
    }

    fn send(&mut self, message: ClientMessage) -> Outgoing {
        Outgoing::Send {
            request_id: self.request_id(),
            message,
        }
    }

    /// What events produced to send (approvals a rule answered).
    pub fn take_outgoing(&mut self) -> Vec<Outgoing> {
        std::mem::take(&mut self.outbox)
    }

    /// Applies one server event. Queue events are the queue panel's; the
    /// rest change the session, the turn or the transcript.
    pub fn apply(&mut self, event: Event) {
        let Event {
            body,
            request_id,
            session_id,
            turn_id,
            ..
        } = event;
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
            EventBody::TurnStarted {} => self.turn_started(request_id, turn_id),
            EventBody::AssistantDelta { content } => self.assistant_delta(content),
            EventBody::AssistantCompleted { content } => self.assistant_completed(content),
            EventBody::ToolProposed {
                call_id,
                name,
                arguments,
            } => {
                self.end_reasoning();
                self.transcript.push(ItemKind::Tool(ToolCard {
                    call_id,
                    name,
                    arguments,
                    state: ToolState::Proposed,
                    output: String::new(),
                    truncated: false,
                    approved_by: None,
                }))
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
            EventBody::TurnCompleted { steps, usage } => {
                if let Some(usage) = usage {
                    self.count_usage(usage, steps);
                }
                self.end_turn();
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
            EventBody::Error(error)
                if request_id.is_some() && request_id == self.status_request =>
            {
                self.status_request = None;
                self.mcp = McpView::Unavailable(error.message);
            }
            EventBody::Error(error) => self.server_error(error),
            EventBody::DaemonStatus { status } => {
                if request_id.is_some() && request_id == self.status_request {
                    self.status_request = None;
                    self.mcp = McpView::Known(
                        status
                            .components
                            .into_iter()
                            .filter(|c| c.id.starts_with("mcp:"))
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
            } => {
                if let Some(session) = self.session.as_mut() {
                    session.provider = Some(provider.clone());
                    session.model = model.clone();
                    session.context_max_tokens = context_max_tokens;
                }
                self.notice(format!(
                    "now using {provider}/{model} (context {} tokens); the history is kept",
                    short(context_max_tokens)
                ));
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
            provider: started.provider,
        });
        for warning in started.sandbox_warnings {
            self.notice(format!("sandbox: {warning}"));
        }
    }

    fn session_cleared(&mut self) {
        self.transcript.clear();
        self.queue.clear();
        self.usage = Usage::default();
        self.context_used = 0;
        self.notice("session cleared".into());
    }

    /// A prompt is shown once its turn starts, not when it is sent: the
    /// server may queue it first.
    fn turn_started(&mut self, request_id: Option<String>, turn_id: Option<String>) {
        if let Some(prompt) = request_id
            .as_ref()
            .and_then(|r| self.pending_prompts.remove(r))
        {
            self.transcript.push(ItemKind::User(prompt));
        }
        self.turn = Some(ActiveTurn {
            turn_id: turn_id.unwrap_or_default(),
            started_at: self.now,
        });
    }

    fn count_usage(&mut self, usage: Usage, steps: u32) {
        self.usage.input_tokens += usage.input_tokens;
        self.usage.output_tokens += usage.output_tokens;
        self.context_used = usage.input_tokens / u64::from(steps.max(1));
    }

    fn end_turn(&mut self) {
        self.end_reasoning();
        self.turn = None;
        self.approval.clear();
        self.transcript.update_last(is_streaming, |k| {
            if let ItemKind::Assistant { streaming, .. } = k {
                *streaming = false;
            }
        });
    }

    /// A fragment of the model's thinking: into the thought streaming now,
    /// or a new one.
    fn reasoning_delta(&mut self, content: String) {
        let appended = self.transcript.update_last(is_thinking, |k| {
            if let ItemKind::Reasoning { text, .. } = k {
                text.push_str(&content);
            }
        });
        if !appended {
            self.transcript.push(ItemKind::Reasoning {
                text: content,
                started: self.now,
                ended: None,
            });
        }
    }

    /// The answer (or a tool call, or the turn's end) came: the thought
    /// collapses to one line.
    fn end_reasoning(&mut self) {
        let now = self.now;
        // A thought streams at the end: no walk through a long transcript.
        if !self
            .transcript
            .items()
            .iter()
            .rev()
            .take(8)
            .any(|i| is_thinking(&i.kind))
        {
            return;
        }
        self.transcript.update_last(is_thinking, |k| {
            if let ItemKind::Reasoning { ended, .. } = k {
                *ended = Some(now);
            }
        });
    }

    fn assistant_delta(&mut self, content: String) {
        if !content.is_empty() {
            self.end_reasoning();
        }
        let appended = self.transcript.update_last(is_streaming, |k| {
            if let ItemKind::Assistant { text, .. } = k {
                text.push_str(&content);
            }
        });
        if !appended {
            self.transcript.push(ItemKind::Assistant {
                text: content,
                streaming: true,
            });
        }
    }

    /// The whole answer replaces what streamed in.
    fn assistant_completed(&mut self, content: String) {
        if !content.is_empty() {
            self.end_reasoning();
        }
        let finished = self.transcript.update_last(is_streaming, |k| {
            *k = ItemKind::Assistant {
                text: content.clone(),
                streaming: false,
            }
        });
        if !finished && !content.is_empty() {
            self.transcript.push(ItemKind::Assistant {
                text: content,
                streaming: false,
            });
        }
    }

    /// The prompt shows the call's arguments as its card has them. A
    /// session rule that matches answers the call itself, and its card
    /// says which rule did.
    fn approval_requested(&mut self, mut approval: PendingApproval) {
        self.transcript.update_tool(&approval.call_id, |card| {
            card.state = ToolState::AwaitingApproval;
            approval.arguments = card.arguments.clone();
        });
        if let Some(rule) = self.rules.find(&approval).cloned() {
            let out = self.approve_by_rule(approval, &rule);
            self.outbox.extend(out);
            return;
        }
        self.approval.push(approval, self.now);
    }

    /// Approves `approval` on behalf of `rule`.
    fn approve_by_rule(&mut self, approval: PendingApproval, rule: &Rule) -> Vec<Outgoing> {
        let label = rule.label();
        self.transcript.update_tool(&approval.call_id, |card| {
            card.approved_by = Some(label);
        });
        self.resolve(approval, true)
    }

    /// `a`: approve this call, add its rule, and let the rule answer the
    /// calls already waiting that it matches.
    fn approve_always(&mut self, approval: PendingApproval, rule: Rule) -> Vec<Outgoing> {
        let mut out = self.resolve(approval, true);
        self.notice(format!(
            "rule added: {} — /approvals lists and removes rules",
            rule.scope()
        ));
        let waiting = self.approval.take_where(|a| rule.matches(a), self.now);
        self.rules.add(rule.clone());
        for approval in waiting {
            out.extend(self.approve_by_rule(approval, &rule));
        }
        out
    }

    /// A call that fails after the user denied it is shown as denied.
    fn tool_completed(&mut self, call_id: &str, success: bool, output: String, truncated: bool) {
        let denied = self.denied.remove(call_id);
        self.transcript.update_tool(call_id, |card| {
            card.state = match (success, denied) {
                (true, _) => ToolState::Done,
                (false, true) => ToolState::Denied,
                (false, false) => ToolState::Failed,
            };
            card.output = output;
            card.truncated = truncated;
        });
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

    /// Notes shown at start (the first-run note).
    pub fn notes(&mut self, lines: Vec<String>) {
        self.transcript.push(ItemKind::Note(lines));
    }

    fn notice(&mut self, text: String) {
        self.transcript.push(ItemKind::Notice(text));
    }

    /// An entry left the queue: a dequeued prompt is shown when the turn
    /// its request starts; one being edited can no longer be saved.
    fn left_queue(&mut self, left: Left, request_id: Option<String>) {
        if let (Some(prompt), Some(rid)) = (left.dequeued, request_id) {
            self.pending_prompts.insert(rid, prompt);
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
        self.transcript.push(ItemKind::Error {
            code: "disconnected".into(),
            message: "the SCV daemon went away; reconnecting…".into(),
        });
    }

    /// Connected again with a fresh session (its events follow).
    pub fn reconnected(&mut self) {
        self.link = LinkState::Connected;
        self.pending_prompts.clear();
        self.transcript.push(ItemKind::Notice(
            "reconnected; a new session started — the earlier history was not restored".into(),
        ));
    }

    pub fn on_mouse(&mut self, mouse: MouseEvent) {
        match mouse.kind {
            MouseEventKind::ScrollUp => self.scroll_by(-3),
            MouseEventKind::ScrollDown => self.scroll_by(3),
            _ => {}
        }
    }

    /// Moves the view `rows` down (positive) or up (negative). Scrolling up
    /// holds the view where it lands; reaching the bottom follows it again.
    fn scroll_by(&mut self, rows: i64) {
        let view = self.transcript_view();
        if rows > 0 && view.at_bottom {
            self.viewport = Viewport::Bottom;
            return;
        }
        let width = self
            .layout(Rect::new(0, 0, self.size.0, self.size.1))
            .transcript
            .width;
        let (item, line) = self.transcript.offset(view.top, rows, width, self.expanded);
        self.viewport = Viewport::Top { item, line };
        if self.transcript_view().at_bottom {
            self.viewport = Viewport::Bottom;
        }
    }

    /// Follow the bottom again.
    fn follow(&mut self) {
        self.viewport = Viewport::Bottom;
    }

    pub fn on_paste(&mut self, text: &str) {
        self.input.paste(text);
        self.offer_paths();
    }

    /// Handles one key; returns what to send. Keys are pumped through, in
    /// order: Ctrl+C, the approval prompt, the queue panel, the App's own
    /// keys, the input box. The first that takes a key keeps it.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Outgoing> {
        if let Some(out) = self.global_key(key) {
            return out;
        }
        if self.overlay_key(key) {
            return Vec::new();
        }
        if let Some(out) = self.approval_key(key) {
            return out;
        }
        if let Some(out) = self.queue_key(key) {
            return out;
        }
        // A key past the prompt and the panel clears the hint.
        self.hint = None;
        if let Some(out) = self.app_key(key) {
            self.offer_paths();
            return out;
        }
        self.input.on_key(key);
        self.offer_paths();
        Vec::new()
    }

    /// Paths for the `@path` before the cursor, if one is being typed.
    fn offer_paths(&mut self) {
        let typed = self.input.at_word().map(|(_, typed)| typed.to_string());
        let (Some(typed), Some(cwd)) = (typed, self.session.as_ref().map(|s| s.cwd.clone())) else {
            self.path_matches.clear();
            return;
        };
        let paths = self.files.paths(std::path::Path::new(&cwd), self.now);
        self.path_matches = super::files::matches(paths, &typed);
    }

    /// Tab on an `@path`: completes as far as the offered paths agree, or
    /// to the first; a file gets a space after it.
    fn complete_path(&mut self) -> bool {
        let Some((start, typed)) = self.input.at_word() else {
            return false;
        };
        if self.path_matches.is_empty() {
            return false;
        }
        let common = super::files::common_prefix(&self.path_matches);
        let completed = if self.path_matches.len() == 1 {
            let only = &self.path_matches[0];
            if only.ends_with('/') {
                only.clone()
            } else {
                format!("{only} ")
            }
        } else if common.len() > typed.len() && common.starts_with(typed) {
            common
        } else {
            self.path_matches[0].clone()
        };
        self.input.replace_word(start, &format!("@{completed}"));
        true
    }

    /// Ctrl+C works everywhere; any other key disarms its second press.
    fn global_key(&mut self, key: KeyEvent) -> Option<Vec<Outgoing>> {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Some(self.ctrl_c());
        }
        self.ctrl_c_at = None;
        None
    }

    /// Keys of the open overlay (see [`overlays::on_key`]); the App does
    /// what the overlay asks: close it, remove a rule.
    fn overlay_key(&mut self, key: KeyEvent) -> bool {
        let Some(mut open) = self.overlay.take() else {
            return false;
        };
        let width = self.size.0;
        let height = self
            .layout(Rect::new(0, 0, self.size.0, self.size.1))
            .transcript
            .height;
        let done = overlays::on_key(&mut open, key, &self.overlay_data(), width, height);
        self.overlay = Some(open);
        match done {
            OverlayKey::Pass => return false,
            OverlayKey::Taken => {}
            OverlayKey::Close => self.overlay = None,
            OverlayKey::RemoveRule(index) => {
                if let Some(rule) = self.rules.remove(index) {
                    self.notice(format!("rule removed: {}", rule.scope()));
                }
                if let Some(open) = self.overlay.as_mut() {
                    open.selected = index.min(self.rules.len().saturating_sub(1));
                }
            }
        }
        true
    }

    /// What the overlays read (they never see the App).
    pub fn overlay_data(&self) -> OverlayData<'_> {
        OverlayData {
            session: self.session.as_ref(),
            context_used: self.context_used,
            usage: &self.usage,
            queue_len: self.queue.len(),
            queue_paused: self.queue.paused(),
            rules: self.rules.list(),
            mcp: &self.mcp,
            commands: SLASH_COMMANDS.to_vec(),
        }
    }

    fn approval_key(&mut self, key: KeyEvent) -> Option<Vec<Outgoing>> {
        let typing = !self.input.is_empty();
        match self.approval.on_key(key, self.now, typing) {
            PromptKey::Pass => None,
            PromptKey::Taken => Some(Vec::new()),
            PromptKey::Hint(hint) => {
                self.hint = Some(hint);
                Some(Vec::new())
            }
            PromptKey::Resolve(approval, approved) => Some(self.resolve(*approval, approved)),
            PromptKey::Always(approval, rule) => Some(self.approve_always(*approval, rule)),
        }
    }

    fn queue_key(&mut self, key: KeyEvent) -> Option<Vec<Outgoing>> {
        let session_id = self.session_id();
        match self.queue.on_key(key, session_id.as_deref()) {
            PanelKey::Pass => None,
            PanelKey::Taken => Some(Vec::new()),
            PanelKey::Send(message) => Some(vec![self.send(message)]),
            PanelKey::Edit(entry) => {
                self.input.edit(entry);
                Some(Vec::new())
            }
        }
    }

    /// Keys that need the session or the transcript: sending, quitting,
    /// cancelling, Tab, scrolling.
    fn app_key(&mut self, key: KeyEvent) -> Option<Vec<Outgoing>> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let out = match key.code {
            KeyCode::Char('d') if ctrl && self.input.is_empty() => {
                self.should_quit = true;
                vec![Outgoing::Quit]
            }
            KeyCode::Char('o') if ctrl => {
                self.expanded = !self.expanded;
                Vec::new()
            }
            // Shift/Alt+Enter is a new line: the input box's.
            KeyCode::Enter if !(shift || alt) => self.submit(),
            KeyCode::Esc => {
                if self.input.stop_editing().is_some() {
                    self.input.set("");
                    return Some(Vec::new());
                }
                self.cancel_turn()
            }
            KeyCode::Tab if self.complete_path() => Vec::new(),
            KeyCode::Tab => {
                if self.input.text().starts_with('/') {
                    self.complete_slash();
                } else {
                    self.queue.focus();
                }
                Vec::new()
            }
            KeyCode::Up if shift => {
                self.scroll_by(-1);
                Vec::new()
            }
            KeyCode::Down if shift => {
                self.scroll_by(1);
                Vec::new()
            }
            KeyCode::PageUp => {
                self.scroll_by(-10);
                Vec::new()
            }
            KeyCode::PageDown => {
                self.scroll_by(10);
                Vec::new()
            }
            // Scrolled back, End returns to the bottom; otherwise it is
            // the input's.
            KeyCode::End if self.viewport != Viewport::Bottom => {
                self.follow();
                Vec::new()
            }
            _ => return None,
        };
        Some(out)
    }

    fn ctrl_c(&mut self) -> Vec<Outgoing> {
        let now = self.now;
        if self
            .ctrl_c_at
            .is_some_and(|at| now.duration_since(at) < DOUBLE_PRESS)
        {
            self.should_quit = true;
            return vec![Outgoing::Quit];
        }
        self.ctrl_c_at = Some(now);
        self.hint = Some("press Ctrl+C again to quit".into());
        if self.turn.is_some() {
            return self.cancel_turn();
        }
        self.input.set("");
        self.input.stop_editing();
        Vec::new()
    }

    fn cancel_turn(&mut self) -> Vec<Outgoing> {
        let (Some(turn), Some(session_id)) = (self.turn.clone(), self.session_id()) else {
            return Vec::new();
        };
        vec![self.send(ClientMessage::TurnCancel(TurnCancel {
            session_id,
            turn_id: turn.turn_id,
        }))]
    }

    fn resolve(&mut self, approval: PendingApproval, approved: bool) -> Vec<Outgoing> {
        if !approved {
            self.denied.insert(approval.call_id.clone());
        }
        let Some(session_id) = self.session_id() else {
            return Vec::new();
        };
        vec![self.send(ClientMessage::ApprovalResolve(ApprovalResolve {
            session_id,
            approval_id: approval.approval_id,
            approved,
        }))]
    }

    fn submit(&mut self) -> Vec<Outgoing> {
        let text = self.input.text().trim().to_string();
        if text.is_empty() {
            return Vec::new();
        }
        // A command is one word; `/model` takes an argument. Other text
        // starting with `/` is a prompt.
        let first = text.split_whitespace().next().unwrap_or("");
        if text.starts_with('/') && (!text.contains(char::is_whitespace) || first == "/model") {
            self.input.take();
            return self.slash(&text);
        }
        let Some(session_id) = self.session_id() else {
            self.hint = Some("not connected".into());
            return Vec::new();
        };
        let prompt = self.input.take();
        if let Some(entry) = self.input.stop_editing() {
            return vec![self.send(ClientMessage::QueueUpdate(QueueUpdate {
                session_id,
                queue_id: entry.queue_id,
                revision: entry.revision,
                prompt,
            }))];
        }
        let out = self.send(ClientMessage::TurnStart(TurnStart {
            session_id,
            prompt: prompt.clone(),
        }));
        if let Outgoing::Send { request_id, .. } = &out {
            self.pending_prompts.insert(request_id.clone(), prompt);
        }
        self.follow();
        vec![out]
    }

    fn slash(&mut self, text: &str) -> Vec<Outgoing> {
        let session_id = self.session_id();
        let (command, arg) = match text.split_once(char::is_whitespace) {
            Some((command, arg)) => (command, arg.trim()),
            None => (text, ""),
        };
        match (command, session_id) {
            ("/quit", _) => {
                self.should_quit = true;
                vec![Outgoing::Quit]
            }
            ("/help", _) => {
                self.overlay = Some(OpenOverlay::new(OverlayKind::Help));
                Vec::new()
            }
            ("/approvals", _) => {
                self.overlay = Some(OpenOverlay::new(OverlayKind::Approvals));
                Vec::new()
            }
            ("/status", _) => {
                self.overlay = Some(OpenOverlay::new(OverlayKind::Status));
                self.mcp = McpView::Asking;
                let out = self.send(ClientMessage::DaemonControl(DaemonControl {
                    command: scv_protocol::DaemonCommand::Status,
                }));
                if let Outgoing::Send { request_id, .. } = &out {
                    self.status_request = Some(request_id.clone());
                }
                vec![out]
            }
            ("/model", Some(session_id)) => self.switch_model(session_id, arg),
            ("/diff", _) => {
                self.show_diff();
                Vec::new()
            }
            ("/copy", _) => {
                self.copy_last_answer();
                Vec::new()
            }
            ("/clear", Some(session_id)) => {
                vec![self.send(ClientMessage::SessionClear(SessionClear { session_id }))]
            }
            ("/pause", Some(session_id)) => {
                self.queue.set_paused(true);
                vec![self.send(ClientMessage::SessionPause(SessionPause {
                    session_id,
                    paused: true,
                }))]
            }
            ("/resume", Some(session_id)) => {
                self.queue.set_paused(false);
                vec![self.send(ClientMessage::SessionPause(SessionPause {
                    session_id,
                    paused: false,
                }))]
            }
            (other, _) if SLASH_COMMANDS.iter().any(|(c, _)| *c == other) => {
                self.hint = Some("not connected".into());
                Vec::new()
            }
            (other, _) => {
                self.hint = Some(format!("unknown command {other}; try /help"));
                Vec::new()
            }
        }
    }

    /// `/model M` keeps the provider; `/model PROVIDER/M` switches both
    /// (a model id with a slash, as OpenRouter's, is a model alone when
    /// the session's model already has one). Only while idle: the server
    /// refuses a switch during a turn.
    fn switch_model(&mut self, session_id: String, arg: &str) -> Vec<Outgoing> {
        let current = self
            .session
            .as_ref()
            .map(|s| s.model.clone())
            .unwrap_or_default();
        if arg.is_empty() {
            self.hint = Some(format!(
                "usage: /model MODEL or /model PROVIDER/MODEL (now {})",
                self.model_label()
            ));
            return Vec::new();
        }
        if self.turn.is_some() {
            self.hint = Some("the model switches only while idle (Esc cancels the turn)".into());
            return Vec::new();
        }
        let (provider, model) = match arg.split_once('/') {
            Some((provider, model)) if !current.contains('/') && !provider.is_empty() => (
                Some(provider.to_string()),
                (!model.is_empty()).then(|| model.to_string()),
            ),
            _ => (None, Some(arg.to_string())),
        };
        vec![self.send(ClientMessage::SessionConfigure(SessionConfigure {
            session_id,
            provider,
            model,
        }))]
    }

    /// `provider/model` (or the model alone from an older server).
    pub fn model_label(&self) -> String {
        match &self.session {
            Some(s) => match &s.provider {
                Some(p) => format!("{p}/{}", s.model),
                None => s.model.clone(),
            },
            None => String::new(),
        }
    }

    /// `/diff`: the workspace's `git diff` in an overlay; a hint when it
    /// is not a repository or nothing changed.
    fn show_diff(&mut self) {
        let Some(cwd) = self.session.as_ref().map(|s| s.cwd.clone()) else {
            self.hint = Some("not connected".into());
            return;
        };
        match super::diff::git_diff(std::path::Path::new(&cwd)) {
            Ok(lines) if lines.is_empty() => {
                self.hint = Some("no changes (git diff is empty)".into())
            }
            Ok(lines) => self.overlay = Some(OpenOverlay::new(OverlayKind::Diff(lines))),
            Err(why) => self.hint = Some(format!("/diff: {why}")),
        }
    }

    /// `/copy`: the last answer goes to the clipboard (OSC 52, written by
    /// the event loop: see [`App::take_clipboard`]).
    fn copy_last_answer(&mut self) {
        let last = self
            .transcript
            .items()
            .iter()
            .rev()
            .find_map(|item| match &item.kind {
                ItemKind::Assistant { text, .. } if !text.is_empty() => {
                    Some(scv_client::text::for_clipboard(text).into_owned())
                }
                _ => None,
            });
        match last {
            Some(text) => {
                self.hint = Some(format!(
                    "copied the last answer ({} characters) through the terminal (OSC 52)",
                    text.chars().count()
                ));
                self.clipboard = Some(text);
            }
            None => self.hint = Some("no answer to copy yet".into()),
        }
    }

    /// Text `/copy` wants on the clipboard.
    pub fn take_clipboard(&mut self) -> Option<String> {
        self.clipboard.take()
    }

    /// Commands matching what is typed after `/` (the completion popup).
    pub fn slash_matches(&self) -> Vec<(&'static str, &'static str)> {
        slash::matches(self.input.text())
    }

    /// Tab on a partial command completes as far as it is unambiguous.
    fn complete_slash(&mut self) {
        if let Some(completed) = slash::complete(self.input.text()) {
            self.input.set(&completed);
        }
    }

    /// Elapsed time of the active turn.
    pub fn turn_elapsed(&self) -> Option<Duration> {
        self.turn
            .as_ref()
            .map(|t| self.now.saturating_duration_since(t.started_at))
    }
}

/// A thought still streaming in.
fn is_thinking(kind: &ItemKind) -> bool {
    matches!(kind, ItemKind::Reasoning { ended: None, .. })
}

/// The answer still streaming in.
fn is_streaming(kind: &ItemKind) -> bool {
    matches!(
        kind,
        ItemKind::Assistant {
            streaming: true,
            ..
        }
    )
}
