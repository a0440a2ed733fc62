//! Subagents (SCV capability `subagents`) as nested content of the
//! parent's `task` tool call. ACP version 1 has no parent/child relation
//! between tool calls (the schema crate's `unstable_subagents` child
//! sessions are not part of the protocol), so a child session is shown
//! inside the `task` call that started it: each of the child's events
//! that changes what there is to see becomes a `tool_call_update` of that
//! call whose content lists the child's tool calls with their state, then
//! how the child ended and its answer. When the parent's `task` call
//! completes, its content keeps the list, followed by the call's output
//! (the child's answer as the model reads it). `_meta.scv.subagent` names
//! the child session, its agent and model, for clients that want them.
//!
//! A grandchild (a child's own `task`) is listed, indented, in the same
//! call as its parent child. A child's approval is asked about the `task`
//! call, titled with the child's call. Nothing of a child is ever the
//! parent's own text or the parent's turn.

use crate::updates::{first_line, title, ToolCalls};
use agent_client_protocol::v1::schema::{
    Meta, ToolCallContent, ToolCallId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
};
use scv_client::session::{Outcome, SessionClient, Subagent, ToolChange, Update};
use scv_protocol::Usage;
use serde_json::json;
use std::collections::HashMap;

/// Tool calls listed per `task` call; past it the oldest are counted in
/// one line.
pub const MAX_LISTED_CALLS: usize = 100;
/// The longest child answer shown before the `task` call completes.
pub const MAX_ANSWER_CHARS: usize = 8000;

/// One child tool call as listed.
#[derive(Debug)]
struct Listed {
    session: String,
    call_id: String,
    depth: u32,
    title: String,
    state: &'static str,
}

/// What a `task` call of the session shows of its child.
#[derive(Debug)]
struct Nest {
    id: ToolCallId,
    title: String,
    /// `agent explore, model gpt-4.1`.
    about: String,
    meta: Meta,
    calls: Vec<Listed>,
    /// Listed calls left out to stay within [`MAX_LISTED_CALLS`].
    dropped: usize,
    /// How the child ended.
    end: Option<String>,
    /// Its last answer, until the `task` call's output replaces it.
    answer: Option<String>,
    order: u64,
}

impl Nest {
    fn content(&self) -> Vec<ToolCallContent> {
        let mut list = self.about.clone();
        if self.dropped > 0 || !self.calls.is_empty() {
            list.push('\n');
        }
        if self.dropped > 0 {
            list.push_str(&format!("\n- … {} earlier call(s)", self.dropped));
        }
        for call in &self.calls {
            let indent = "  ".repeat(call.depth.saturating_sub(1) as usize);
            list.push_str(&format!("\n{indent}- {} ({})", call.title, call.state));
        }
        let mut content = vec![list.into()];
        if let Some(end) = &self.end {
            content.push(end.clone().into());
        }
        if let Some(answer) = &self.answer {
            content.push(answer.clone().into());
        }
        content
    }

    fn update(&self, status: ToolCallStatus) -> ToolCallUpdate {
        ToolCallUpdate::new(
            self.id.clone(),
            ToolCallUpdateFields::new()
                .title(self.title.clone())
                .kind(ToolKind::Think)
                .status(status)
                .content(self.content()),
        )
        .meta(self.meta.clone())
    }

    fn list(&mut self, call: Listed) {
        if self.calls.len() >= MAX_LISTED_CALLS {
            self.calls.remove(0);
            self.dropped += 1;
        }
        self.calls.push(call);
    }

    fn call(&mut self, session: &str, call_id: &str) -> Option<&mut Listed> {
        self.calls
            .iter_mut()
            .rev()
            .find(|c| c.session == session && c.call_id == call_id)
    }
}

/// `(2 steps, 120 tokens)`.
fn spent(steps: u32, usage: Option<&Usage>) -> String {
    let steps = if steps == 1 {
        "1 step".to_string()
    } else {
        format!("{steps} steps")
    };
    match usage {
        Some(u) => format!("({steps}, {} tokens)", u.input_tokens + u.output_tokens),
        None => format!("({steps})"),
    }
}

/// The title of a `task` call.
pub fn task_title(description: &str) -> String {
    first_line(&format!("subagent: {description}"))
}

/// The `task` calls of one ACP session that show a child (the children
/// themselves are the session client's views).
#[derive(Debug, Default)]
pub struct Subagents {
    /// By the parent session's `task` call id.
    nests: HashMap<String, Nest>,
    next: u64,
}

/// The `task` call of the session that `view` (a child, or a child's
/// child) shows in.
fn nest_key(client: &SessionClient, view: &Subagent) -> String {
    let mut top = view;
    while let Some(up) = client.subagent(&top.parent.session_id) {
        top = up;
    }
    top.parent.call_id.clone()
}

impl Subagents {
    /// What a child's update shows: an update of the `task` call it runs
    /// in, when anything there changed. `tools`: the session's own calls
    /// (the `task` call's ACP id).
    pub fn update(
        &mut self,
        view: &Subagent,
        client: &SessionClient,
        update: &Update,
        tools: &ToolCalls,
    ) -> Option<ToolCallUpdate> {
        let key = nest_key(client, view);
        if let Update::SubagentStarted { .. } = update {
            return self.started(view, key, tools);
        }
        let session = &view.session_id;
        let depth = view.depth;
        let nest = self.nests.get_mut(&key)?;
        match update {
            Update::Tool(ToolChange::Proposed {
                call_id,
                name,
                arguments,
            }) => nest.list(Listed {
                session: session.clone(),
                call_id: call_id.clone(),
                depth,
                title: title(name, arguments),
                state: "pending",
            }),
            Update::Tool(ToolChange::Running { call_id, .. }) => {
                nest.call(session, call_id)?.state = "running";
            }
            Update::Tool(ToolChange::Done {
                call_id, success, ..
            }) => {
                nest.call(session, call_id)?.state = if *success { "done" } else { "failed" };
            }
            Update::TextDone(content) if depth == 1 && !content.is_empty() => {
                let mut answer: String = content.chars().take(MAX_ANSWER_CHARS).collect();
                if answer.len() < content.len() {
                    answer.push_str(" …");
                }
                nest.answer = Some(answer);
                return None; // shown with the child's end
            }
            Update::Ended { outcome, .. } => {
                if depth > 1 {
                    // Its `task` call in the list says how it went.
                    return None;
                }
                nest.end = Some(match outcome {
                    Outcome::Completed { steps, usage, .. } => {
                        format!("subagent completed {}", spent(*steps, usage.as_ref()))
                    }
                    Outcome::Failed { code, message } => {
                        format!(
                            "subagent failed: {}: {message}",
                            scv_client::text::failure_words(*code)
                        )
                    }
                    Outcome::Cancelled => "subagent cancelled".to_string(),
                });
            }
            _ => return None,
        }
        Some(nest.update(ToolCallStatus::InProgress))
    }

    /// A child began: a child of the session gets the `task` call it runs
    /// in; a grandchild is listed in its parent child's.
    fn started(
        &mut self,
        view: &Subagent,
        key: String,
        tools: &ToolCalls,
    ) -> Option<ToolCallUpdate> {
        self.next += 1;
        if view.depth > 1 {
            return None;
        }
        if self.nests.len() >= crate::updates::MAX_TRACKED_CALLS && !self.nests.contains_key(&key) {
            let oldest = self
                .nests
                .iter()
                .min_by_key(|(_, n)| n.order)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.nests.remove(&oldest);
            }
        }
        let agent = view.agent.as_deref().unwrap_or("general-purpose");
        let mut meta = Meta::new();
        meta.insert(
            "scv".into(),
            json!({"subagent": {
                "sessionId": view.session_id,
                "agent": view.agent,
                "model": view.model,
                "depth": view.depth,
            }}),
        );
        let nest = Nest {
            id: tools
                .id(&view.parent.call_id)
                .unwrap_or_else(|| ToolCallId::new(view.parent.call_id.clone())),
            title: task_title(&view.description),
            about: format!("agent {agent}, model {}", view.model),
            meta,
            calls: Vec::new(),
            dropped: 0,
            end: None,
            answer: None,
            order: self.next,
        };
        let update = nest.update(ToolCallStatus::InProgress);
        self.nests.insert(key, nest);
        Some(update)
    }

    /// The tool call a child's permission request is about: the `task`
    /// call, titled with the child's call; its content the whole call.
    pub fn permission(
        &self,
        client: &SessionClient,
        child: &str,
        summary: &str,
    ) -> Option<ToolCallUpdate> {
        let view = client.subagent(child)?;
        let nest = self.nests.get(&nest_key(client, view))?;
        Some(
            ToolCallUpdate::new(
                nest.id.clone(),
                ToolCallUpdateFields::new()
                    .title(first_line(&format!(
                        "subagent «{}»: {summary}",
                        view.description
                    )))
                    .kind(ToolKind::Think)
                    .status(ToolCallStatus::Pending)
                    .content(vec![summary.to_string().into()]),
            )
            .meta(nest.meta.clone()),
        )
    }

    /// The parent's `task` call `call_id` completed: what its content
    /// shows before the call's output (which carries the child's answer).
    pub fn completed(&mut self, call_id: &str) -> Option<(Vec<ToolCallContent>, Meta)> {
        let mut nest = self.nests.remove(call_id)?;
        nest.answer = None;
        Some((nest.content(), nest.meta))
    }

    /// The parent's turn ended: its children are over.
    pub fn clear(&mut self) {
        self.nests.clear();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use scv_protocol::{Event, EventBody, FailureCode, Parent, SubagentStarted};
    use serde_json::{json, Value};

    /// What the bridge does with an event: through the session client,
    /// its subagents' updates shown in their `task` calls (the last one).
    fn feed(
        client: &mut SessionClient,
        subagents: &mut Subagents,
        event: &Event,
        tools: &ToolCalls,
    ) -> Option<ToolCallUpdate> {
        let mut shown = None;
        for update in client.apply(event).updates {
            let (child, update) = match update {
                Update::SubagentStarted { session_id } => {
                    (session_id.clone(), Update::SubagentStarted { session_id })
                }
                Update::Subagent { session_id, update } => (session_id, *update),
                _ => continue,
            };
            let view = client.subagent(&child).expect("a child the client follows");
            shown = subagents.update(view, client, &update, tools).or(shown);
        }
        shown
    }

    fn client() -> SessionClient {
        let mut client = SessionClient::new("acp1-");
        client.set_session("P");
        client
    }

    fn child(session: &str, parent: &str, call: &str, body: EventBody) -> Event {
        Event {
            body,
            request_id: Some("acp1-1".into()),
            session_id: Some(session.into()),
            turn_id: Some(format!("{session}-T")),
            seq: None,
            parent: Some(Parent {
                session_id: parent.into(),
                turn_id: "T".into(),
                call_id: call.into(),
            }),
        }
    }

    fn started(description: &str, depth: u32) -> EventBody {
        EventBody::SubagentStarted(SubagentStarted {
            agent: (depth == 1).then(|| "explore".to_string()),
            description: description.into(),
            provider: "openai".into(),
            model: "gpt-test".into(),
            tools: vec!["read_file".into()],
            depth,
        })
    }

    fn proposed(call: &str, name: &str, arguments: Value) -> EventBody {
        EventBody::ToolProposed {
            call_id: call.into(),
            name: name.into(),
            arguments,
        }
    }

    fn completed(call: &str, success: bool) -> EventBody {
        EventBody::ToolCompleted {
            call_id: call.into(),
            name: "read_file".into(),
            success,
            output: "x".into(),
            truncated: false,
        }
    }

    fn texts(update: &ToolCallUpdate) -> Vec<String> {
        let value = serde_json::to_value(update).unwrap();
        value["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["content"]["text"].as_str().unwrap().to_string())
            .collect()
    }

    async fn tools_with_tasks() -> ToolCalls {
        let dir = std::env::temp_dir();
        let mut tools = ToolCalls::default();
        for (call, description) in [("t1", "find auth"), ("t2", "count tests")] {
            let call = tools
                .proposed(
                    &dir,
                    call,
                    "task",
                    &json!({"description": description, "prompt": "go"}),
                )
                .await;
            let value = serde_json::to_value(&call).unwrap();
            assert_eq!(value["kind"], "think");
            assert_eq!(value["title"], format!("subagent: {description}"));
        }
        tools
    }

    #[tokio::test]
    async fn two_children_show_in_their_own_task_calls() {
        let tools = tools_with_tasks().await;
        let mut subagents = Subagents::default();
        let mut client = client();
        let events = [
            child("C1", "P", "t1", started("find auth", 1)),
            child("C2", "P", "t2", started("count tests", 1)),
            child("C1", "P", "t1", EventBody::TurnStarted {}),
            child(
                "C1",
                "P",
                "t1",
                EventBody::AssistantDelta {
                    content: "streamed child text".into(),
                },
            ),
            child(
                "C1",
                "P",
                "t1",
                proposed("k1", "read_file", json!({"path": "auth.rs"})),
            ),
            child(
                "C2",
                "P",
                "t2",
                proposed("k1", "search", json!({"pattern": "#[test]"})),
            ),
            child(
                "C1",
                "P",
                "t1",
                EventBody::ToolStarted {
                    call_id: "k1".into(),
                    name: "read_file".into(),
                },
            ),
            child("C1", "P", "t1", completed("k1", true)),
            child("C2", "P", "t2", completed("k1", false)),
            child(
                "C1",
                "P",
                "t1",
                EventBody::AssistantCompleted {
                    content: "It is in auth.rs.".into(),
                },
            ),
            child(
                "C1",
                "P",
                "t1",
                EventBody::TurnCompleted {
                    steps: 2,
                    usage: Some(Usage {
                        input_tokens: 100,
                        output_tokens: 20,
                    }),
                    cost: None,
                },
            ),
            child(
                "C2",
                "P",
                "t2",
                EventBody::TurnFailed {
                    code: FailureCode::ProviderError,
                    message: "503".into(),
                },
            ),
        ];
        let updates: Vec<Option<ToolCallUpdate>> = events
            .iter()
            .map(|e| feed(&mut client, &mut subagents, e, &tools))
            .collect();
        let shown: Vec<(String, Vec<String>)> = updates
            .iter()
            .flatten()
            .map(|u| (u.tool_call_id.0.to_string(), texts(u)))
            .collect();
        // Streamed text, turn starts and the answer alone show nothing.
        assert!(updates[2].is_none() && updates[3].is_none() && updates[9].is_none());
        let about = "agent explore, model gpt-test";
        assert_eq!(
            shown,
            [
                ("1-t1".to_string(), vec![about.to_string()]),
                ("2-t2".to_string(), vec![about.to_string()]),
                (
                    "1-t1".to_string(),
                    vec![format!("{about}\n\n- Read file: auth.rs (pending)")]
                ),
                (
                    "2-t2".to_string(),
                    vec![format!("{about}\n\n- Search for: #[test] (pending)")]
                ),
                (
                    "1-t1".to_string(),
                    vec![format!("{about}\n\n- Read file: auth.rs (running)")]
                ),
                (
                    "1-t1".to_string(),
                    vec![format!("{about}\n\n- Read file: auth.rs (done)")]
                ),
                (
                    "2-t2".to_string(),
                    vec![format!("{about}\n\n- Search for: #[test] (failed)")]
                ),
                (
                    "1-t1".to_string(),
                    vec![
                        format!("{about}\n\n- Read file: auth.rs (done)"),
                        "subagent completed (2 steps, 120 tokens)".to_string(),
                        "It is in auth.rs.".to_string()
                    ]
                ),
                (
                    "2-t2".to_string(),
                    vec![
                        format!("{about}\n\n- Search for: #[test] (failed)"),
                        "subagent failed: the model provider returned an error: 503".to_string()
                    ]
                ),
            ]
        );
        let first = serde_json::to_value(updates[0].as_ref().unwrap()).unwrap();
        assert_eq!(first["title"], "subagent: find auth");
        assert_eq!(first["kind"], "think");
        assert_eq!(first["status"], "in_progress");
        assert_eq!(first["_meta"]["scv"]["subagent"]["sessionId"], "C1");
        // The task call completes: the list stays, the output follows.
        let (content, _) = subagents.completed("t1").unwrap();
        assert_eq!(content.len(), 2, "the list and the end, not the answer");
        assert!(subagents.completed("t1").is_none());
    }

    #[tokio::test]
    async fn a_grandchild_is_listed_in_its_parents_call_and_approvals_name_the_task() {
        let tools = tools_with_tasks().await;
        let mut subagents = Subagents::default();
        let mut client = client();
        feed(
            &mut client,
            &mut subagents,
            &child("C1", "P", "t1", started("find auth", 1)),
            &tools,
        );
        feed(
            &mut client,
            &mut subagents,
            &child(
                "C1",
                "P",
                "t1",
                proposed(
                    "c-task",
                    "task",
                    json!({"description": "dig deeper", "prompt": "go"}),
                ),
            ),
            &tools,
        );
        assert!(feed(
            &mut client,
            &mut subagents,
            &child("G1", "C1", "c-task", started("dig deeper", 2)),
            &tools
        )
        .is_none());
        assert!(client.subagent("G1").is_some());
        let update = feed(
            &mut client,
            &mut subagents,
            &child(
                "G1",
                "C1",
                "c-task",
                proposed("g1", "bash", json!({"command": "ls"})),
            ),
            &tools,
        )
        .unwrap();
        assert_eq!(update.tool_call_id.0.as_ref(), "1-t1");
        let permission = subagents
            .permission(&client, "G1", "Run shell command: ls")
            .unwrap();
        let value = serde_json::to_value(&permission).unwrap();
        assert_eq!(value["toolCallId"], "1-t1");
        assert_eq!(
            value["title"],
            "subagent «dig deeper»: Run shell command: ls"
        );
        assert_eq!(
            value["content"][0]["content"]["text"],
            "Run shell command: ls"
        );
        assert!(feed(
            &mut client,
            &mut subagents,
            &child("G1", "C1", "c-task", EventBody::TurnCancelled {}),
            &tools
        )
        .is_none());
        let end = feed(
            &mut client,
            &mut subagents,
            &child("C1", "P", "t1", completed("c-task", false)),
            &tools,
        )
        .unwrap();
        assert_eq!(
            texts(&end),
            ["agent explore, model gpt-test\n\n- subagent: dig deeper (failed)\n  - Run shell command: ls (pending)"]
        );
        assert!(subagents.permission(&client, "nobody", "x").is_none());
        // Events of sessions nobody follows show nothing.
        let stranger = child("X", "Q", "t9", EventBody::TurnCancelled {});
        assert!(feed(&mut client, &mut subagents, &stranger, &tools).is_none());
    }

    #[tokio::test]
    async fn a_childs_approval_is_asked_about_its_task_call_and_answered_as_the_child() {
        use scv_protocol::{ClientMessage, Risk};
        let tools = tools_with_tasks().await;
        let mut subagents = Subagents::default();
        let mut client = client();
        let events = [
            child("C1", "P", "t1", started("find auth", 1)),
            child(
                "C1",
                "P",
                "t1",
                proposed("k1", "bash", json!({"command": "rm -r target"})),
            ),
            child(
                "C1",
                "P",
                "t1",
                EventBody::ApprovalRequested {
                    approval_id: "ap1".into(),
                    call_id: "k1".into(),
                    name: "bash".into(),
                    risk: Risk::Process,
                    cwd: "/w".into(),
                    summary: "Run shell command: rm -r target".into(),
                    sandboxed: None,
                },
            ),
        ];
        // What the bridge does with each child event.
        let mut asked = Vec::new();
        for event in &events {
            for update in client.apply(event).updates {
                match update {
                    Update::SubagentStarted { session_id } => {
                        let view = client.subagent(&session_id).unwrap();
                        let started = Update::SubagentStarted {
                            session_id: session_id.clone(),
                        };
                        subagents.update(view, &client, &started, &tools);
                    }
                    Update::Subagent { session_id, update } => {
                        let view = client.subagent(&session_id).unwrap();
                        subagents.update(view, &client, &update, &tools);
                    }
                    Update::ApprovalRequested(approval) => asked.push(approval),
                    other => panic!("{other:?}"),
                }
            }
        }
        assert_eq!(asked.len(), 1);
        let approval = asked.remove(0);
        assert_eq!(approval.child_session.as_deref(), Some("C1"));
        let call = subagents
            .permission(&client, "C1", &approval.summary)
            .unwrap();
        assert_eq!(call.tool_call_id.0.as_ref(), "1-t1", "the task call");
        let resolve = client.resolve(&approval.approval_id, true).unwrap();
        let ClientMessage::ApprovalResolve(resolve) = resolve.message else {
            panic!("{resolve:?}");
        };
        assert_eq!(resolve.session_id, "C1");
        assert!(resolve.approved);
        // The child's turn ending ends nothing of the parent's.
        let ended = client.apply(&child(
            "C1",
            "P",
            "t1",
            EventBody::TurnCompleted {
                steps: 1,
                usage: None,
                cost: None,
            },
        ));
        assert!(ended
            .updates
            .iter()
            .all(|u| matches!(u, Update::Subagent { .. })));
    }
}
