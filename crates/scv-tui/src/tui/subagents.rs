//! The session's subagents (capability `subagents`): child sessions the
//! server runs for the model's `task` calls. Their events never touch the
//! session's own transcript or turn; each child gets a record here — a
//! transcript of its own, filled by the same code as the session's
//! ([`Transcript`]'s turn methods), and the summary its card under the
//! `task` call shows ([`SubagentCard`]). The App puts the cards where they
//! go ([`Subagents::card`]); the `Ctrl+O` overlay draws a child's
//! transcript.
//!
//! Everything here is bounded, so a long session (or a misbehaving
//! server) cannot grow it without end:
//! - at most [`MAX_CHILDREN`] children are kept; a new one drops the
//!   oldest that has ended (or the oldest of all when none has). A dropped
//!   child's card stays in the transcript as it last was; only its
//!   transcript goes (`session.resume` of its id shows it whole);
//! - each child's transcript keeps within [`MAX_CHILD_ITEMS`] items and
//!   [`MAX_CHILD_BYTES`] bytes, dropping its oldest items, as the session's
//!   transcript does;
//! - its description, agent name, model and failure message are cut at
//!   [`MAX_LABEL_CHARS`], the current call's title at [`MAX_TITLE_CHARS`],
//!   the answer's end a card shows at [`MAX_TAIL_BYTES`], the task prompt
//!   its transcript starts with at [`MAX_PROMPT_BYTES`];
//! - a card lists at most [`MAX_NESTED`] of the child's own subagents;
//! - calls the user denied are remembered per child, at most
//!   [`MAX_DENIED`].

use super::transcript::{
    tool_title, ItemKind, SubagentCard, SubagentStatus, ToolState, Transcript,
};
use scv_protocol::{Event, EventBody, Parent};
use std::collections::VecDeque;
use std::time::Instant;

/// Children kept (the server runs `max_subagents`, default 4, at once).
pub const MAX_CHILDREN: usize = 32;
/// Items of one child's transcript.
pub const MAX_CHILD_ITEMS: usize = 400;
/// Bytes of one child's transcript (so all children together stay within
/// 4 MiB).
pub const MAX_CHILD_BYTES: usize = 128 * 1024;
/// Characters of a description, an agent's or a model's name, a failure.
pub const MAX_LABEL_CHARS: usize = 120;
/// Characters of the current call's title on a card.
pub const MAX_TITLE_CHARS: usize = 100;
/// Bytes of the answer's end a card keeps.
pub const MAX_TAIL_BYTES: usize = 600;
/// Bytes of the task prompt a child's transcript opens with.
pub const MAX_PROMPT_BYTES: usize = 4096;
/// A child's own subagents listed on its card.
pub const MAX_NESTED: usize = 8;
/// Denied calls remembered per child.
pub const MAX_DENIED: usize = 64;

/// One child session.
pub struct Child {
    pub session_id: String,
    /// Its `task` call: the session (ours, or another child's) and call.
    pub parent: Parent,
    pub depth: u32,
    /// Its running turn (what a cancel of it names).
    pub turn_id: Option<String>,
    /// The tools it may call (as `subagent.started` listed them, cut).
    pub tools: Vec<String>,
    /// Its summary as its card shows it (nested children filled in by
    /// [`Subagents::card`]).
    summary: SubagentCard,
    /// What it said and did, as the session's transcript would show it.
    pub transcript: Transcript,
    /// Calls of it the user denied (the protocol reports `success: false`).
    denied: VecDeque<String>,
}

impl Child {
    pub fn card(&self) -> &SubagentCard {
        &self.summary
    }

    pub fn running(&self) -> bool {
        self.summary.status == SubagentStatus::Running
    }
}

/// The children followed, oldest first.
#[derive(Default)]
pub struct Subagents {
    children: VecDeque<Child>,
}

/// What an event changed.
#[derive(Debug, PartialEq, Eq)]
pub enum Change {
    /// Only the child's transcript (a fragment of its answer).
    Transcript,
    /// Its card too: the caller puts it under its `task` call again.
    Card,
    /// Not a child this knows.
    Nothing,
}

impl Subagents {
    pub fn len(&self) -> usize {
        self.children.len()
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    pub fn clear(&mut self) {
        self.children.clear();
    }

    pub fn get(&self, session_id: &str) -> Option<&Child> {
        self.children.iter().find(|c| c.session_id == session_id)
    }

    fn get_mut(&mut self, session_id: &str) -> Option<&mut Child> {
        self.children
            .iter_mut()
            .find(|c| c.session_id == session_id)
    }

    /// The child started last.
    pub fn latest(&self) -> Option<&Child> {
        self.children.back()
    }

    /// Children still running.
    pub fn running(&self) -> usize {
        self.children.iter().filter(|c| c.running()).count()
    }

    /// The child `by` places after (or, negative, before) `session_id`,
    /// going round; the latest when that one is gone.
    pub fn step(&self, session_id: &str, by: isize) -> Option<&Child> {
        let len = self.children.len() as isize;
        let Some(at) = self
            .children
            .iter()
            .position(|c| c.session_id == session_id)
        else {
            return self.latest();
        };
        self.children
            .get((at as isize + by).rem_euclid(len.max(1)) as usize)
    }

    /// The child's place among those kept (from 1) and how many are kept.
    pub fn place(&self, session_id: &str) -> Option<(usize, usize)> {
        let at = self
            .children
            .iter()
            .position(|c| c.session_id == session_id)?;
        Some((at + 1, self.children.len()))
    }

    /// The card of `session_id` as its `task` call shows it, its own
    /// children listed under it.
    pub fn card(&self, session_id: &str) -> Option<SubagentCard> {
        let child = self.get(session_id)?;
        let mut card = child.summary.clone();
        let nested: Vec<&Child> = self
            .children
            .iter()
            .filter(|c| c.parent.session_id == session_id)
            .collect();
        card.nested_more = nested.len().saturating_sub(MAX_NESTED);
        card.nested = nested
            .iter()
            .rev()
            .take(MAX_NESTED)
            .rev()
            .map(|c| c.summary.clone())
            .collect();
        Some(card)
    }

    /// The transcript of child `session_id` (a host of its children's
    /// cards).
    pub fn transcript_mut(&mut self, session_id: &str) -> Option<&mut Transcript> {
        self.get_mut(session_id).map(|c| &mut c.transcript)
    }

    /// Remembers that the user denied `call_id` of child `session_id`.
    pub fn denied(&mut self, session_id: &str, call_id: &str) {
        if let Some(child) = self.get_mut(session_id) {
            if child.denied.len() >= MAX_DENIED {
                child.denied.pop_front();
            }
            child.denied.push_back(call_id.to_string());
        }
    }

    /// Every child still running ends as `failed (code)` (the daemon went
    /// away: no terminal event will come).
    pub fn abandon(&mut self, code: &str, message: &str) -> Vec<String> {
        let mut ended = Vec::new();
        for child in self.children.iter_mut().filter(|c| c.running()) {
            child.summary.status = SubagentStatus::Failed {
                code: code.into(),
                message: message.into(),
            };
            child.summary.current = None;
            ended.push(child.session_id.clone());
        }
        ended
    }

    /// Applies one event of a child. `prompt`: the task prompt of its
    /// `task` call, when `subagent.started` comes (its transcript opens
    /// with it).
    pub fn apply(&mut self, event: &Event, prompt: Option<String>, now: Instant) -> Change {
        let (Some(parent), Some(session_id)) = (&event.parent, &event.session_id) else {
            return Change::Nothing;
        };
        if let EventBody::SubagentStarted(started) = &event.body {
            if self.get(session_id).is_none() {
                self.start(session_id, parent, started, prompt);
                return Change::Card;
            }
        }
        let Some(child) = self.get_mut(session_id) else {
            return Change::Nothing;
        };
        child.apply(event, now)
    }

    fn start(
        &mut self,
        session_id: &str,
        parent: &Parent,
        started: &scv_protocol::SubagentStarted,
        prompt: Option<String>,
    ) {
        if self.children.len() >= MAX_CHILDREN {
            let drop = self.children.iter().position(|c| !c.running()).unwrap_or(0);
            self.children.remove(drop);
        }
        let mut transcript = Transcript::new(MAX_CHILD_ITEMS, MAX_CHILD_BYTES);
        if let Some(prompt) = prompt.filter(|p| !p.trim().is_empty()) {
            transcript.push(ItemKind::User(cut_bytes(&prompt, MAX_PROMPT_BYTES)));
        }
        self.children.push_back(Child {
            session_id: session_id.to_string(),
            parent: parent.clone(),
            depth: started.depth,
            turn_id: None,
            tools: started
                .tools
                .iter()
                .take(64)
                .map(|t| cut_chars(t, MAX_LABEL_CHARS))
                .collect(),
            summary: SubagentCard {
                session_id: session_id.to_string(),
                agent: started.agent.as_deref().map(label),
                description: label(&started.description),
                model: label(&format!("{}/{}", started.provider, started.model)),
                status: SubagentStatus::Running,
                current: None,
                steps: 0,
                tokens: None,
                tail: String::new(),
                nested: Vec::new(),
                nested_more: 0,
            },
            transcript,
            denied: VecDeque::new(),
        });
    }
}

impl Child {
    fn apply(&mut self, event: &Event, now: Instant) -> Change {
        let transcript = &mut self.transcript;
        let card = &mut self.summary;
        match &event.body {
            EventBody::TurnStarted {} => {
                self.turn_id = event.turn_id.clone();
                Change::Transcript
            }
            EventBody::ReasoningDelta { content } => {
                transcript.reasoning_delta(content.clone(), now);
                Change::Transcript
            }
            EventBody::AssistantDelta { content } => {
                transcript.assistant_delta(content.clone(), now);
                Change::Transcript
            }
            EventBody::AssistantCompleted { content } => {
                transcript.assistant_completed(content.clone(), now);
                card.steps += 1;
                if !content.trim().is_empty() {
                    card.tail = tail_bytes(content, MAX_TAIL_BYTES);
                }
                Change::Card
            }
            EventBody::ToolProposed {
                call_id,
                name,
                arguments,
            } => {
                card.current = Some((title(name, arguments), false));
                transcript.tool_proposed(
                    call_id.clone(),
                    name.clone(),
                    arguments.clone(),
                    None,
                    now,
                );
                Change::Card
            }
            EventBody::ApprovalRequested { call_id, name, .. } => {
                let mut arguments = serde_json::Value::Null;
                transcript.update_tool(call_id, |c| {
                    c.state = ToolState::AwaitingApproval;
                    arguments = c.arguments.clone();
                });
                card.current = Some((title(name, &arguments), true));
                Change::Card
            }
            EventBody::ToolStarted { call_id, name } => {
                let mut arguments = serde_json::Value::Null;
                transcript.update_tool(call_id, |c| {
                    c.state = ToolState::Running;
                    arguments = c.arguments.clone();
                });
                card.current = Some((title(name, &arguments), false));
                Change::Card
            }
            EventBody::ToolCompleted {
                call_id,
                success,
                output,
                truncated,
                ..
            } => {
                let denied = match self.denied.iter().position(|c| c == call_id) {
                    Some(at) => self.denied.remove(at).is_some(),
                    None => false,
                };
                transcript.tool_completed(call_id, *success, denied, output.clone(), *truncated);
                card.current = None;
                Change::Card
            }
            EventBody::TurnCompleted { steps, usage, .. } => {
                transcript.end_streaming(now);
                card.status = SubagentStatus::Completed;
                card.steps = (*steps).max(card.steps);
                card.tokens = usage.map(|u| u.input_tokens + u.output_tokens);
                card.current = None;
                Change::Card
            }
            EventBody::TurnCancelled {} => {
                transcript.end_streaming(now);
                transcript.push(ItemKind::Notice("subagent cancelled".into()));
                card.status = SubagentStatus::Cancelled;
                card.current = None;
                Change::Card
            }
            EventBody::TurnFailed { code, message } => {
                transcript.end_streaming(now);
                transcript.push(ItemKind::Error {
                    code: code.as_str().to_string(),
                    message: cut_bytes(message, MAX_TAIL_BYTES),
                });
                card.status = SubagentStatus::Failed {
                    code: code.as_str().to_string(),
                    message: label(message),
                };
                card.current = None;
                Change::Card
            }
            EventBody::HookMessage(note) => {
                let verb = if note.blocked { "blocked" } else { "says" };
                transcript.push(ItemKind::Notice(format!(
                    "{} {verb}: {}",
                    note.hook,
                    cut_bytes(&note.message, MAX_TAIL_BYTES)
                )));
                Change::Transcript
            }
            EventBody::ContextCompacted {
                before_tokens,
                after_tokens,
                ..
            } => {
                transcript.push(ItemKind::Notice(format!(
                    "context compacted: {before_tokens} → {after_tokens} tokens"
                )));
                Change::Transcript
            }
            EventBody::BudgetWarning(warning) => {
                transcript.push(ItemKind::Notice(format!(
                    "budget: {}",
                    cut_bytes(&warning.message, MAX_TAIL_BYTES)
                )));
                Change::Transcript
            }
            // A second `subagent.started`, errors, anything a child does
            // not send: nothing to show.
            _ => Change::Nothing,
        }
    }
}

/// A call's title for a card's "current call" line: its first line, cut.
fn title(name: &str, arguments: &serde_json::Value) -> String {
    let title = tool_title(name, arguments);
    cut_chars(title.lines().next().unwrap_or(""), MAX_TITLE_CHARS)
}

/// A one-line label: the first line, cut at [`MAX_LABEL_CHARS`].
fn label(text: &str) -> String {
    cut_chars(text.trim().lines().next().unwrap_or(""), MAX_LABEL_CHARS)
}

/// At most `max` characters of `text`, `…` when cut.
fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// At most `max` bytes of the start of `text` (on a character boundary).
fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut at = max;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}…", &text[..at])
}

/// At most `max` bytes of the end of `text` (on a character boundary).
fn tail_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut at = text.len() - max;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    format!("…{}", &text[at..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(value: serde_json::Value) -> Event {
        serde_json::from_value(value).expect("a valid event")
    }

    fn child_event(child: &str, mut value: serde_json::Value) -> Event {
        value["session_id"] = json!(child);
        value["turn_id"] = json!(format!("{child}-turn"));
        value["parent"] =
            json!({"session_id":"sess-1","turn_id":"turn-1","call_id":format!("call-{child}")});
        event(value)
    }

    fn started(child: &str, description: &str) -> Event {
        child_event(
            child,
            json!({"type":"subagent.started","seq":0,"description":description,
                "provider":"openai","model":"gpt-4.1","tools":["read_file"],"depth":1}),
        )
    }

    #[test]
    fn keeps_at_most_max_children_dropping_ended_ones_first() {
        let mut agents = Subagents::default();
        let now = Instant::now();
        agents.apply(&started("first", "runs on"), None, now);
        for i in 0..MAX_CHILDREN + 5 {
            let id = format!("c{i}");
            agents.apply(&started(&id, "short"), None, now);
            agents.apply(
                &child_event(&id, json!({"type":"turn.completed","seq":2,"steps":1})),
                None,
                now,
            );
        }
        assert_eq!(agents.len(), MAX_CHILDREN);
        assert!(
            agents.get("first").is_some(),
            "the running child is kept while ended ones go"
        );
        assert!(agents.get("c0").is_none());
        assert_eq!(agents.running(), 1);
    }

    #[test]
    fn a_childs_text_and_labels_are_bounded() {
        let mut agents = Subagents::default();
        let now = Instant::now();
        let long = "d".repeat(10 * MAX_LABEL_CHARS);
        agents.apply(
            &started("c", &format!("{long}\nsecond line")),
            Some("p".repeat(3 * MAX_PROMPT_BYTES)),
            now,
        );
        let chunk = "x".repeat(1000) + "\n";
        for i in 0..2000 {
            agents.apply(
                &child_event(
                    "c",
                    json!({"type":"assistant.delta","seq":i + 1,"content":chunk}),
                ),
                None,
                now,
            );
            if i % 10 == 0 {
                agents.apply(
                    &child_event(
                        "c",
                        json!({"type":"assistant.completed","seq":i + 1,"content":chunk.repeat(10)}),
                    ),
                    None,
                    now,
                );
            }
        }
        let child = agents.get("c").expect("kept");
        assert!(child.transcript.bytes() <= MAX_CHILD_BYTES);
        assert!(child.transcript.len() <= MAX_CHILD_ITEMS);
        let card = agents.card("c").expect("a card");
        assert_eq!(card.description.chars().count(), MAX_LABEL_CHARS + 1);
        assert!(!card.description.contains('\n'));
        assert!(card.tail.len() <= MAX_TAIL_BYTES + '…'.len_utf8());
        assert_eq!(card.steps, 200);
    }

    #[test]
    fn a_card_lists_its_childs_own_subagents() {
        let mut agents = Subagents::default();
        let now = Instant::now();
        agents.apply(&started("c", "outer"), None, now);
        for i in 0..MAX_NESTED + 2 {
            let mut e = started(&format!("g{i}"), "inner");
            e.parent = Some(Parent {
                session_id: "c".into(),
                turn_id: "c-turn".into(),
                call_id: format!("t{i}"),
            });
            agents.apply(&e, None, now);
        }
        let card = agents.card("c").expect("a card");
        assert_eq!(card.nested.len(), MAX_NESTED);
        assert_eq!(card.nested_more, 2);
        assert_eq!(
            card.nested.last().map(|c| c.session_id.as_str()),
            Some("g9")
        );
    }

    #[test]
    fn cuts_keep_character_boundaries() {
        assert_eq!(cut_chars("ééé", 2), "éé…");
        assert_eq!(cut_bytes("ééé", 3), "é…");
        assert_eq!(tail_bytes("ééé", 3), "…é");
    }
}
