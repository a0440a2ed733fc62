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
//! - a card lists at most [`MAX_NESTED`] of the child's own subagents.
//!
//! Where a child is (its parent call, its running turn, calls the user
//! denied) is the session client's view (`scv_client::session::Subagent`);
//! this keeps what the screen shows of it.

use super::transcript::{
    tool_title, ItemKind, SubagentCard, SubagentStatus, ToolState, Transcript,
};
use scv_client::session::{Approval, Outcome, Subagent, ToolChange, Update};
use scv_protocol::Parent;
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

/// One child session.
pub struct Child {
    pub session_id: String,
    /// Its `task` call: the session (ours, or another child's) and call.
    pub parent: Parent,
    pub depth: u32,
    /// The tools it may call (as `subagent.started` listed them, cut).
    pub tools: Vec<String>,
    /// Its summary as its card shows it (nested children filled in by
    /// [`Subagents::card`]).
    summary: SubagentCard,
    /// What it said and did, as the session's transcript would show it.
    pub transcript: Transcript,
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
    /// Puts `session_id`'s card under the `task` call that started it: in
    /// `ours` (the session's transcript, when its parent is `ours_id`) or
    /// in its parent subagent's transcript, whose own card goes up the
    /// same way (at most 16 levels).
    pub fn place_card(
        &mut self,
        session_id: &str,
        ours_id: Option<&str>,
        ours: &mut super::transcript::Transcript,
    ) {
        let mut id = session_id.to_string();
        for _ in 0..16 {
            let (Some(card), Some(parent)) =
                (self.card(&id), self.get(&id).map(|c| c.parent.clone()))
            else {
                return;
            };
            if ours_id == Some(parent.session_id.as_str()) {
                ours.update_tool(&parent.call_id, |c| c.set_subagent(card));
                return;
            }
            let Some(host) = self.transcript_mut(&parent.session_id) else {
                return;
            };
            host.update_tool(&parent.call_id, |c| c.set_subagent(card));
            id = parent.session_id;
        }
    }

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

    /// A child began (the session client's view of it): its record, its
    /// transcript opening with the task its `task` call gave it.
    pub fn started(&mut self, view: &Subagent) -> Change {
        if self.get(&view.session_id).is_some() {
            return Change::Nothing;
        }
        if self.children.len() >= MAX_CHILDREN {
            let drop = self.children.iter().position(|c| !c.running()).unwrap_or(0);
            self.children.remove(drop);
        }
        let mut transcript = Transcript::new(MAX_CHILD_ITEMS, MAX_CHILD_BYTES);
        if let Some(prompt) = view.prompt.as_ref().filter(|p| !p.trim().is_empty()) {
            transcript.push(ItemKind::User(cut_bytes(prompt, MAX_PROMPT_BYTES)));
        }
        self.children.push_back(Child {
            session_id: view.session_id.clone(),
            parent: view.parent.clone(),
            depth: view.depth,
            tools: view
                .tools
                .iter()
                .take(64)
                .map(|t| cut_chars(t, MAX_LABEL_CHARS))
                .collect(),
            summary: SubagentCard {
                session_id: view.session_id.clone(),
                agent: view.agent.as_deref().map(label),
                description: label(&view.description),
                model: label(&format!("{}/{}", view.provider, view.model)),
                status: SubagentStatus::Running,
                current: None,
                steps: 0,
                tokens: None,
                tail: String::new(),
                nested: Vec::new(),
                nested_more: 0,
            },
            transcript,
        });
        Change::Card
    }

    /// Applies one update of child `session_id`.
    pub fn apply(&mut self, session_id: &str, update: &Update, now: Instant) -> Change {
        match self.get_mut(session_id) {
            Some(child) => child.apply(update, now),
            None => Change::Nothing,
        }
    }

    /// Labels a call of subagent `child` waiting for approval with the
    /// subagent's description, and its arguments as its card has them
    /// when the approval came without.
    pub fn label(&self, child: &str, approval: &mut Approval) {
        let record = self.get(child);
        approval.subagent = Some(
            record
                .map(|c| c.card().description.clone())
                .unwrap_or_else(|| "?".into()),
        );
        if approval.arguments.is_null() {
            if let Some(card) = record.and_then(|c| c.transcript.tool(&approval.call_id)) {
                approval.arguments = card.arguments.clone();
            }
        }
    }

    /// A call of a child waits for approval: its card says so.
    pub fn approval_requested(&mut self, approval: &Approval) -> Change {
        let Some(child) = approval
            .child_session
            .as_deref()
            .and_then(|c| self.get_mut(c))
        else {
            return Change::Nothing;
        };
        let mut arguments = serde_json::Value::Null;
        child.transcript.update_tool(&approval.call_id, |c| {
            c.state = ToolState::AwaitingApproval;
            arguments = c.arguments.clone();
        });
        child.summary.current = Some((title(&approval.name, &arguments), true));
        Change::Card
    }
}

impl Child {
    fn apply(&mut self, update: &Update, now: Instant) -> Change {
        let transcript = &mut self.transcript;
        let card = &mut self.summary;
        match update {
            Update::TurnBegan { .. } => Change::Transcript,
            Update::Reasoning(content) => {
                transcript.reasoning_delta(content.clone(), now);
                Change::Transcript
            }
            Update::Text(content) => {
                transcript.assistant_delta(content.clone(), now);
                Change::Transcript
            }
            Update::TextDone(content) => {
                transcript.assistant_completed(content.clone(), now);
                card.steps += 1;
                if !content.trim().is_empty() {
                    card.tail = tail_bytes(content, MAX_TAIL_BYTES);
                }
                Change::Card
            }
            Update::Tool(ToolChange::Proposed {
                call_id,
                name,
                arguments,
            }) => {
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
            Update::Tool(ToolChange::Running { call_id, name }) => {
                let mut arguments = serde_json::Value::Null;
                transcript.update_tool(call_id, |c| {
                    c.state = ToolState::Running;
                    arguments = c.arguments.clone();
                });
                card.current = Some((title(name, &arguments), false));
                Change::Card
            }
            Update::Tool(ToolChange::Done {
                call_id,
                success,
                output,
                truncated,
                denied,
                ..
            }) => {
                transcript.tool_completed(call_id, *success, *denied, output.clone(), *truncated);
                card.current = None;
                Change::Card
            }
            Update::Ended { outcome, .. } => {
                transcript.end_streaming(now);
                card.current = None;
                match outcome {
                    Outcome::Completed { steps, usage, .. } => {
                        card.status = SubagentStatus::Completed;
                        card.steps = (*steps).max(card.steps);
                        card.tokens = usage.map(|u| u.input_tokens + u.output_tokens);
                    }
                    Outcome::Cancelled => {
                        transcript.push(ItemKind::Notice("subagent cancelled".into()));
                        card.status = SubagentStatus::Cancelled;
                    }
                    Outcome::Failed { code, message } => {
                        transcript.push(ItemKind::Error {
                            code: code.as_str().to_string(),
                            message: cut_bytes(message, MAX_TAIL_BYTES),
                        });
                        card.status = SubagentStatus::Failed {
                            code: code.as_str().to_string(),
                            message: label(message),
                        };
                    }
                }
                Change::Card
            }
            Update::Hook(note) => {
                let verb = if note.blocked { "blocked" } else { "says" };
                transcript.push(ItemKind::Notice(format!(
                    "{} {verb}: {}",
                    note.hook,
                    cut_bytes(&note.message, MAX_TAIL_BYTES)
                )));
                Change::Transcript
            }
            Update::Compacted {
                before_tokens,
                after_tokens,
                ..
            } => {
                transcript.push(ItemKind::Notice(format!(
                    "context compacted: {before_tokens} → {after_tokens} tokens"
                )));
                Change::Transcript
            }
            Update::Budget(warning) => {
                transcript.push(ItemKind::Notice(format!(
                    "budget: {}",
                    cut_bytes(&warning.message, MAX_TAIL_BYTES)
                )));
                Change::Transcript
            }
            // Anything a child does not send: nothing to show.
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
    use scv_client::session::SubagentState;

    fn view(child: &str, parent: &str, description: &str, prompt: Option<String>) -> Subagent {
        Subagent {
            session_id: child.into(),
            parent: Parent {
                session_id: parent.into(),
                turn_id: "turn-1".into(),
                call_id: format!("call-{child}"),
            },
            depth: 1,
            description: description.into(),
            agent: None,
            provider: "openai".into(),
            model: "gpt-4.1".into(),
            tools: vec!["read_file".into()],
            prompt,
            turn_id: None,
            state: SubagentState::Running,
        }
    }

    fn completed() -> Update {
        Update::Ended {
            request_id: None,
            turn_id: "t".into(),
            outcome: Outcome::Completed {
                steps: 1,
                usage: None,
                cost: None,
            },
            cancelled_by_us: false,
        }
    }

    #[test]
    fn keeps_at_most_max_children_dropping_ended_ones_first() {
        let mut agents = Subagents::default();
        let now = Instant::now();
        agents.started(&view("first", "sess-1", "runs on", None));
        for i in 0..MAX_CHILDREN + 5 {
            let id = format!("c{i}");
            agents.started(&view(&id, "sess-1", "short", None));
            agents.apply(&id, &completed(), now);
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
        agents.started(&view(
            "c",
            "sess-1",
            &format!("{long}\nsecond line"),
            Some("p".repeat(3 * MAX_PROMPT_BYTES)),
        ));
        let chunk = "x".repeat(1000) + "\n";
        for i in 0..2000 {
            agents.apply("c", &Update::Text(chunk.clone()), now);
            if i % 10 == 0 {
                agents.apply("c", &Update::TextDone(chunk.repeat(10)), now);
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
        agents.started(&view("c", "sess-1", "outer", None));
        for i in 0..MAX_NESTED + 2 {
            agents.started(&view(&format!("g{i}"), "c", "inner", None));
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
