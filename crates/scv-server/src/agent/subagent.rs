//! Subagents: a `task` call runs a child session inside this turn — the
//! same workspace, connection, approvals (the parent's pending map), hooks
//! and mode cell, a subset of the parent's tools offered now, the parent's
//! sandbox or the read-only one — and its final answer is the call's
//! result. A child is never more than its parent: everything it runs goes
//! through the same `call_tool` path under the same checks.
//!
//! The child's events go out on a sink of its own (its session id, its
//! `seq`, `parent` on the envelope), to a connection that asked for
//! capability `subagents`; to one that did not they are numbered and
//! dropped, and the child's approvals are asked as the parent's (on the
//! `task` call). Cancelling the parent cancels the child (a child token);
//! its step and wall-clock caps end it as a failed call, never a failed
//! parent turn. What it spends is on the parent turn's ledger (budgets)
//! and summed into the parent turn's usage.

use super::{SessionSettings, SessionSink, Stop, Turn};
use crate::context::History;
use crate::customize::{use_model, Definition};
use crate::model::{Message, ToolCall, Usage};
use crate::tools::registry::Registry;
use crate::tools::task::{self, TaskArgs};
use crate::tools::ToolOutput;
use scv_protocol::{EventBody, FailureCode, Parent, Risk, SubagentStarted};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The live subagents of one connection by session id: where an approval
/// or cancel naming a child finds it.
#[derive(Default)]
pub(crate) struct ChildIndex {
    live: Mutex<HashMap<Arc<str>, Live>>,
}

/// A child that runs now.
#[derive(Clone)]
pub(crate) struct Live {
    /// The client's session it descends from (its approvals wait there).
    pub root: Arc<str>,
    pub turn_id: Arc<str>,
    pub token: CancellationToken,
}

impl ChildIndex {
    pub(crate) fn get(&self, session_id: &str) -> Option<Live> {
        self.lock().get(session_id).cloned()
    }

    fn insert(&self, session_id: Arc<str>, live: Live) {
        self.lock().insert(session_id, live);
    }

    fn remove(&self, session_id: &str) {
        let mut live = self.lock();
        live.remove(session_id);
        if live.is_empty() {
            // A burst of children leaves no table behind.
            *live = HashMap::new();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Live>> {
        crate::sync::lock(&self.live)
    }
}

/// What of the server a child needs: the turn limits (its caps), the
/// prices (its model's), the store (its journal).
#[derive(Clone)]
pub(crate) struct Server {
    pub limits: Arc<super::Limits>,
    pub config: Arc<crate::config::Config>,
    pub store: Option<Arc<crate::journal::Store>>,
}

/// What a turn may start subagents with (none: no `task` tool).
pub(crate) struct Subagents {
    /// What the server gives every turn.
    pub server: Server,
    /// The depth of the turn's session: 0 for a client's.
    pub depth: u32,
    /// The client's session this one descends from (itself at depth 0).
    pub root: Arc<str>,
    pub index: Arc<ChildIndex>,
    pub definitions: Arc<[Definition]>,
    /// The turn's children running at once, at most `max_subagents`.
    slots: tokio::sync::Semaphore,
    /// What its children spent: summed into the turn's usage and cost.
    spent: Mutex<(Option<Usage>, Option<f64>)>,
}

impl Subagents {
    /// For one turn of a session at `depth`; `None` when it may start no
    /// child (`max_subagents = 0`, or the depth is reached).
    pub(crate) fn for_turn(
        server: &Server,
        depth: u32,
        root: Arc<str>,
        index: Arc<ChildIndex>,
        definitions: Arc<[Definition]>,
    ) -> Option<Arc<Subagents>> {
        let limits = &server.limits;
        if limits.max_subagents == 0 || depth >= limits.max_subagent_depth {
            return None;
        }
        Some(Arc::new(Subagents {
            server: server.clone(),
            depth,
            root,
            index,
            definitions,
            slots: tokio::sync::Semaphore::new(limits.max_subagents),
            spent: Mutex::new((None, None)),
        }))
    }

    /// The `task` tool's description: its definitions listed.
    pub(crate) fn description(&self) -> Arc<str> {
        let index: Vec<String> = self
            .definitions
            .iter()
            .map(|d| {
                format!(
                    "- {}: {}",
                    d.name,
                    crate::text::cut(&d.description.replace('\n', " "), 160)
                )
            })
            .collect();
        task::description((!index.is_empty()).then(|| index.join("\n")).as_deref())
    }

    /// What the turn's children spent, usage and USD.
    pub(crate) fn spent(&self) -> (Option<Usage>, Option<f64>) {
        *crate::sync::lock(&self.spent)
    }

    fn add(&self, usage: Option<Usage>, cost: Option<f64>) {
        let mut spent = crate::sync::lock(&self.spent);
        if let Some(usage) = usage {
            spent.0.get_or_insert_with(Usage::default).add(usage);
        }
        if let Some(cost) = cost {
            spent.1 = Some(spent.1.unwrap_or(0.0) + cost);
        }
    }
}

/// What makes a turn a subagent's.
pub(crate) struct ChildRole {
    /// The tools it may call (a subset of the parent's).
    pub tools: Arc<[String]>,
    /// Its instructions: the definition's body, or the general ones.
    pub instructions: String,
    /// Where its approvals are asked of a client that does not see
    /// children: the parent's sink, as the `task` call's.
    relay: Relay,
}

struct Relay {
    sink: Arc<SessionSink>,
    turn_id: Arc<str>,
    call_id: String,
    label: String,
}

/// The general-purpose subagent's instructions.
const GENERAL: &str = "Carry out the task below with the tools you have, then stop.";

const ROLE: &str = "\nYou are a subagent: another agent started you for one task and reads only your final message, as its result. Work on your own (nobody answers questions), stay within the task, and end with a concise, complete report of what you found or did (files, commands, results).\n";

impl ChildRole {
    /// What the system prompt adds for a child.
    pub(crate) fn system(&self) -> String {
        format!("{ROLE}\nYour instructions:\n{}\n", self.instructions)
    }
}

impl Turn {
    /// Where this turn asks an approval: its own sink, or — for a child a
    /// client cannot see — its parent's, as the `task` call's, saying so.
    pub(super) fn approval_target(
        &self,
        call_id: &str,
        summary: String,
    ) -> (&SessionSink, &str, String, String) {
        match &self.child {
            Some(child) if !self.sink.visible() => (
                &child.relay.sink,
                &child.relay.turn_id,
                child.relay.call_id.clone(),
                format!("subagent «{}»: {summary}", child.relay.label),
            ),
            _ => (&self.sink, &self.turn_id, call_id.to_string(), summary),
        }
    }

    /// Runs one `task` call: the child's answer, or a failed call saying
    /// why (an `Err` only when the parent turn itself must stop).
    pub(super) async fn run_task(
        &self,
        call: &ToolCall,
        arguments: &serde_json::Value,
        registry: &Registry,
    ) -> Result<ToolOutput, Stop> {
        let Some(subagents) = &self.subagents else {
            return Ok(ToolOutput::error(
                "error: subagents are not available in this session",
            ));
        };
        let args = match task::parse(arguments) {
            Ok(args) => args,
            Err(message) => return Ok(ToolOutput::error(message)),
        };
        let definition = match &args.agent {
            None => None,
            Some(name) => match subagents.definitions.iter().find(|d| d.name == *name) {
                Some(definition) => Some(definition),
                None => {
                    let known: Vec<&str> = subagents
                        .definitions
                        .iter()
                        .map(|d| d.name.as_str())
                        .collect();
                    return Ok(ToolOutput::error(format!(
                        "error: no subagent definition named `{name}` ({}); leave `agent` out for a general-purpose subagent",
                        if known.is_empty() {
                            "this session has none".to_string()
                        } else {
                            format!("known: {}", known.join(", "))
                        }
                    )));
                }
            },
        };
        let tools = match self.child_tools(subagents, definition, registry) {
            Ok(tools) => tools,
            Err(message) => return Ok(ToolOutput::error(message)),
        };
        // Queued behind the turn's other children past `max_subagents`.
        let _slot = self.cancellable(subagents.slots.acquire()).await?;
        if tools.iter().any(|name| {
            registry
                .get(name)
                .is_some_and(|tool| tool.risk() != Risk::Read)
        }) {
            // What a child changes is undone with the parent's turn.
            self.checkpoint().await?;
        }
        let child = Child::new(self, call, &args, definition, tools);
        let agent_type = child.agent.as_deref().unwrap_or("general-purpose");
        self.subagent_start_hooks(&child.session_id, agent_type)
            .await;
        child.run(self, subagents, args).await
    }

    /// The child's tools: the parent's offered now (`task` only below the
    /// depth cap), narrowed by the definition — which may not name more.
    fn child_tools(
        &self,
        subagents: &Subagents,
        definition: Option<&Definition>,
        registry: &Registry,
    ) -> Result<Vec<String>, String> {
        let nests = subagents.depth + 1 < self.limits.max_subagent_depth;
        let offered: Vec<String> = registry
            .offered_names()
            .into_iter()
            .filter(|name| nests || name != task::NAME)
            .collect();
        let Some(wanted) = definition.and_then(|d| d.tools.as_ref()) else {
            return Ok(offered);
        };
        let missing: Vec<&str> = wanted
            .iter()
            .filter(|name| !offered.contains(name))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            let why = if self.settings.plan() {
                " (plan mode is on: tools that write are not offered)"
            } else {
                ""
            };
            return Err(format!(
                "error: subagent `{}` asks for {}, which this session does not offer now{why}; a subagent never gets more than its parent",
                definition.map_or("", |d| d.name.as_str()),
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(wanted.clone())
    }
}

/// One child session, made for one `task` call.
struct Child {
    session_id: Arc<str>,
    turn_id: Arc<str>,
    token: CancellationToken,
    timed_out: Arc<AtomicBool>,
    sink: Arc<SessionSink>,
    settings: Arc<SessionSettings>,
    label: String,
    agent: Option<String>,
    tools: Vec<String>,
    instructions: String,
    parent_call: String,
}

impl Child {
    fn new(
        parent: &Turn,
        call: &ToolCall,
        args: &TaskArgs,
        definition: Option<&Definition>,
        tools: Vec<String>,
    ) -> Child {
        let session_id: Arc<str> = uuid::Uuid::new_v4().to_string().into();
        let link = Parent {
            session_id: parent.sink.session_id().to_string(),
            turn_id: parent.turn_id.to_string(),
            call_id: call.id.clone(),
        };
        let sink = Arc::new(parent.sink.child(session_id.clone(), link));
        let from = &parent.settings;
        let mut provider = from.provider.clone();
        if let Some(model) = definition.and_then(|d| d.model.as_deref()) {
            use_model(&mut provider, model);
        }
        let read_only = definition.is_some_and(|d| d.read_only);
        let settings = SessionSettings {
            cwd: from.cwd.clone(),
            provider,
            context_max_tokens: from.context_max_tokens,
            tools: from.tools.clone(),
            no_tools: false,
            submitter: "subagent".into(),
            sandbox: from
                .sandbox
                .as_ref()
                .map(|view| view.with_read_only(read_only)),
            sandbox_trusted: from.sandbox_trusted,
            tool_env: from.tool_env.clone(),
            mode: from.mode.clone(),
            custom: from.custom.clone(),
            scv_home: from.scv_home.clone(),
            config: from.config.clone(),
            limits: from.limits.clone(),
            // A child's history is its own; its hooks get no transcript.
            transcript: None,
            // Its processes are the session's.
            background: from.background.clone(),
            // The session's roots; a read-only agent writes none.
            roots: from
                .roots
                .iter()
                .map(|root| crate::tools::roots::Root {
                    path: root.path.clone(),
                    writable: root.writable && !read_only,
                })
                .collect(),
        };
        Child {
            session_id,
            turn_id: uuid::Uuid::new_v4().to_string().into(),
            token: parent.token.child_token(),
            timed_out: Arc::default(),
            sink,
            settings: Arc::new(settings),
            label: args.description.trim().to_string(),
            agent: definition.map(|d| d.name.clone()),
            tools,
            instructions: definition.map_or_else(|| GENERAL.to_string(), |d| d.prompt.clone()),
            parent_call: call.id.clone(),
        }
    }

    /// Where the child asks approvals of a client that cannot see
    /// children: on the `task` call that started it — or, when its parent
    /// is itself such a child (depth 2 and more), on the call its
    /// top-level ancestor made, whose sink that client reads; the label
    /// names every subagent between.
    fn relay(&self, parent: &Turn) -> Relay {
        match &parent.child {
            Some(role) if !parent.sink.visible() => Relay {
                sink: role.relay.sink.clone(),
                turn_id: role.relay.turn_id.clone(),
                call_id: role.relay.call_id.clone(),
                label: format!("{} › {}", role.relay.label, self.label),
            },
            _ => Relay {
                sink: parent.sink.clone(),
                turn_id: parent.turn_id.clone(),
                call_id: self.parent_call.clone(),
                label: self.label.clone(),
            },
        }
    }

    async fn run(
        self,
        parent: &Turn,
        subagents: &Subagents,
        args: TaskArgs,
    ) -> Result<ToolOutput, Stop> {
        let server = &subagents.server;
        let limits = &server.limits;
        let started = EventBody::SubagentStarted(SubagentStarted {
            agent: self.agent.clone(),
            description: self.label.clone(),
            provider: self.settings.provider.name.clone(),
            model: self.settings.provider.model.clone(),
            tools: self.tools.clone(),
            depth: subagents.depth + 1,
        });
        let emit = |body: EventBody, turn: Option<Arc<str>>| {
            let sink = self.sink.clone();
            let request_id = parent.request_id.clone();
            async move { sink.emit(Some(&request_id), turn.as_deref(), &body).await }
        };
        parent
            .cancellable(emit(started, None))
            .await?
            .map_err(Stop::from)?;
        let mut journal = self.journal(server, parent).await;
        let seq = parent
            .cancellable(emit(EventBody::TurnStarted {}, Some(self.turn_id.clone())))
            .await?
            .map_err(Stop::from)?;
        if let Some(journal) = &mut journal {
            journal.turn_started(&self.turn_id, &args.prompt, seq);
            for warning in journal.warnings().await {
                let _ = emit(EventBody::SessionWarning(warning), None).await;
            }
        }
        subagents.index.insert(
            self.session_id.clone(),
            Live {
                root: subagents.root.clone(),
                turn_id: self.turn_id.clone(),
                token: self.token.clone(),
            },
        );
        let turn = self.turn(parent, subagents, &args.prompt);
        let cap = limits.subagent_timeout;
        let mut outcome = self.run_capped(turn, &args.prompt, cap).await;
        subagents.index.remove(&self.session_id);
        if self.timed_out.load(Ordering::Relaxed)
            && matches!(outcome.terminal, Some(EventBody::TurnCancelled {}))
        {
            outcome.terminal = Some(EventBody::TurnFailed {
                code: FailureCode::StepLimit,
                message: format!(
                    "subagent reached its time limit (subagent_timeout_ms = {})",
                    cap.as_millis()
                ),
            });
        }
        subagents.add(outcome.detail, outcome.cost_usd);
        let seq = self.sink.next_seq().await;
        if let Some(journal) = &mut journal {
            let spent = outcome.detail.map(|usage| scv_store::Spent {
                model: self.settings.provider.model.clone(),
                usage_detail: usage.detail(),
                cost_usd: outcome.cost_usd,
            });
            journal
                .turn_ended(
                    &self.turn_id,
                    &args.prompt,
                    seq,
                    &outcome.history,
                    crate::journal::TurnEnd {
                        terminal: outcome.terminal.as_ref(),
                        spent,
                        no_undo: None,
                    },
                )
                .await;
            // The child ends here: what its journal lacks gets one more
            // try now (no later record of it will come).
            journal.last_try().await;
            for warning in journal.warnings().await {
                let _ = emit(EventBody::SessionWarning(warning), None).await;
            }
        }
        if let Some(journal) = journal {
            // Records still waiting for room stay with the store.
            journal.close();
        }
        if let Some(terminal) = &outcome.terminal {
            // Even when the parent is being cancelled: a child's terminal
            // event comes before the parent's.
            let _ = emit(terminal.clone(), Some(self.turn_id.clone())).await;
        }
        if parent.token.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        Ok(self.result(&outcome, parent.limits.tool_output_max_bytes))
    }

    /// The child's turn: the settings it runs with (its own model and
    /// price, the parent's budgets and ledger, `subagent_max_steps`), and
    /// what it shares with its parent (approvals, MCP, the request).
    fn turn(&self, parent: &Turn, subagents: &Subagents, prompt: &str) -> Turn {
        let server = &subagents.server;
        let limits = &server.limits;
        let model = self.settings.provider.model.clone();
        let price = server.config.cost.pricing.price(&model);
        Turn {
            limits: Arc::new(super::Limits {
                max_steps: limits.subagent_max_steps,
                ..limits.as_ref().clone()
            }),
            checkpoints: None,
            prompt: prompt.into(),
            images: Vec::new(),
            compact: None,
            settings: self.settings.clone(),
            sink: self.sink.clone(),
            approvals: parent.approvals.clone(),
            session_mcp: parent.session_mcp.clone(),
            request_id: parent.request_id.clone(),
            turn_id: self.turn_id.clone(),
            token: self.token.clone(),
            mcp: parent.mcp.clone(),
            spending: parent.spending.child(model, price),
            trace: None,
            subagents: Subagents::for_turn(
                server,
                subagents.depth + 1,
                subagents.root.clone(),
                subagents.index.clone(),
                subagents.definitions.clone(),
            ),
            child: Some(ChildRole {
                tools: self.tools.clone().into(),
                instructions: self.instructions.clone(),
                relay: self.relay(parent),
            }),
        }
    }

    /// Runs `turn` until it ends or `cap` passes: then it is cancelled
    /// (and reads as timed out).
    async fn run_capped(
        &self,
        turn: Turn,
        prompt: &str,
        cap: std::time::Duration,
    ) -> super::TurnOutcome {
        let run = turn.run(History::default(), prompt.to_string());
        let mut run = std::pin::pin!(run);
        let timer = tokio::time::sleep(cap);
        let mut timer = std::pin::pin!(timer);
        let mut fired = false;
        loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                _ = &mut timer, if !fired => {
                    // The cap, not a person: the child ends as failed.
                    fired = true;
                    self.timed_out.store(true, Ordering::Relaxed);
                    self.token.cancel();
                }
            }
        }
    }

    /// The journal of the child (none when the store is off or refuses).
    async fn journal(&self, server: &Server, parent: &Turn) -> Option<crate::journal::LiveJournal> {
        let store = server.store.clone()?;
        let header = scv_store::Header {
            v: scv_store::FORMAT_VERSION,
            session_id: self.session_id.to_string(),
            cwd: self.settings.cwd.display().to_string(),
            created: scv_store::now_unix(),
            provider: self.settings.provider.name.clone(),
            model: self.settings.provider.model.clone(),
            base_url: None,
            no_tools: false,
            forked_from: None,
            parent: Some(Parent {
                session_id: parent.sink.session_id().to_string(),
                turn_id: parent.turn_id.to_string(),
                call_id: self.parent_call.clone(),
            }),
        };
        crate::journal::LiveJournal::start(store, header).await
    }

    /// What the parent's model reads: the child's final answer (capped),
    /// and where the rest is; or why it failed.
    fn result(&self, outcome: &super::TurnOutcome, max_bytes: usize) -> ToolOutput {
        let usage = outcome.detail.map_or_else(String::new, |u| {
            format!(
                "; {} tokens in, {} out",
                u.input_tokens(),
                u.output_tokens()
            )
        });
        let footer = |steps: &str| {
            format!(
                "[subagent «{}» (session {}){steps}{usage}]",
                self.label, self.session_id
            )
        };
        match &outcome.terminal {
            Some(EventBody::TurnCompleted { steps, .. }) => {
                let answer = outcome
                    .history
                    .messages()
                    .iter()
                    .rev()
                    .find_map(|m| match m {
                        Message::Assistant(a) => a
                            .text
                            .as_ref()
                            .map(ToString::to_string)
                            .filter(|t| !t.trim().is_empty()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "(the subagent ended without a report)".into());
                let (answer, cut) = crate::tools::output::cap(answer, max_bytes);
                let cut = if cut {
                    format!(
                        "\n[report cut at {max_bytes} bytes; the whole transcript is session {}]",
                        self.session_id
                    )
                } else {
                    String::new()
                };
                ToolOutput::ok(format!(
                    "{answer}{cut}\n\n{}",
                    footer(&format!(", {steps} steps"))
                ))
            }
            Some(EventBody::TurnFailed { code, message }) => ToolOutput::error(format!(
                "error: the subagent failed ({}): {message}\n\n{}",
                code.as_str(),
                footer("")
            )),
            _ => ToolOutput::error(format!(
                "error: the subagent was cancelled by the user before it finished\n\n{}",
                footer("")
            )),
        }
    }
}
