//! One turn: provider step → tool calls → approvals → tool runs → repeat,
//! until the model answers without tool calls (a response the provider
//! paused is continued by the next step; a refused one fails the turn).
//!
//! The turn task owns the session history while it runs and hands it back
//! when it ends, with exactly one terminal event for the connection to emit;
//! every failure after `turn.started` becomes `turn.failed`. Cancellation (the turn's token)
//! interrupts provider reads, approval waits, tool runs and waits for
//! writer capacity, because each of those is raced against the token.

pub(crate) mod prompt;

mod approvals;
mod budget;
mod compact;
pub(crate) mod elicit;
mod hooked;
mod limits;
mod mentions;
pub(crate) mod plan;
pub(crate) mod session_mcp;
mod sink;
pub(crate) mod subagent;

pub(crate) use budget::{Spending, Warned, WARN_PERCENT};

pub(crate) use limits::Limits;

use crate::context::compaction::{self, SUMMARY_SYSTEM_PROMPT};
use crate::context::trim::{self, Trimmed};
use crate::context::History;
use crate::model::{Message, ToolCall, ToolSpec, Usage};
use crate::provider::{
    Delta, End, Failure, Provider, ProviderError, Reply, Request, ResponseStream,
};
use crate::tools::{Registry, ToolContext, ToolError, ToolOutput};
pub(crate) use approvals::Approvals;
use scv_protocol::{EventBody, FailureCode, ProviderRetrying};
use serde_json::Value;
pub(crate) use sink::{EmitError, SessionSink};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What stopped a turn early.
enum Stop {
    Cancelled,
    Failed(FailureCode, String),
    /// A budget refused the next request ("budget reached: …"):
    /// `turn.failed` with `step_limit`, or `budget_exceeded` for a
    /// connection with capability `budgets`.
    Budget(String),
    /// The provider said the prompt does not fit its context window.
    Overflow(String),
    /// The model declined to answer.
    Refused,
    /// The connection is gone; no terminal event can be delivered.
    Disconnected,
}

impl From<EmitError> for Stop {
    fn from(err: EmitError) -> Self {
        match err {
            EmitError::TooLarge(_) => Stop::Failed(FailureCode::ResponseLimit, err.to_string()),
            EmitError::Send(_) => Stop::Disconnected,
        }
    }
}

impl From<ProviderError> for Stop {
    fn from(err: ProviderError) -> Self {
        if err.context_overflow {
            Stop::Overflow(err.message)
        } else {
            Stop::Failed(err.code, err.message)
        }
    }
}

/// Deltas queued as one batch, at most: half the writer's 256 frames, so
/// a batch waits only while the writer holds more than another one, and
/// a 15,000-delta stream is ~120 writes rather than ~240 (64 before).
const MAX_BATCH_EVENTS: usize = 128;
/// Bytes of delta text in one batch, at most (the writer holds 16 MiB).
const MAX_BATCH_BYTES: usize = 256 * 1024;

/// Text the model sees for calls that never ran.
const INTERRUPTED: &str = "The tool call was interrupted before it finished.";
const DENIED: &str = "The user denied this tool call. Do not retry it unchanged.";
const NO_TOOLS: &str = "Tools are disabled in this session; answer without them.";
/// `turn.failed`'s message for a refusal. Anthropic sends no refusal text
/// of its own and asks that the refused turn be removed before the
/// conversation continues (streaming refusals doc); so it is.
const REFUSED: &str = "the model declined to answer for safety reasons (the provider reported a refusal); this turn was removed from the conversation, so rephrase the request or ask something else";

/// What a session was started with; fixed for its life.
#[derive(Clone)]
pub(crate) struct SessionSettings {
    pub cwd: PathBuf,
    pub provider: Provider,
    /// The model's context window, from its provider definition.
    pub context_max_tokens: u64,
    pub tools: Arc<Registry>,
    pub no_tools: bool,
    /// The label queue entries carry as `submitter`.
    pub submitter: String,
    /// The sandbox of the session's commands (its read-only form for a
    /// read-only subagent); `None`: they run unconfined.
    pub sandbox: Option<crate::sandbox::SandboxView>,
    /// The sandbox's second wall is whole here, so `sandboxed` may
    /// auto-approve (`Sandbox::trusted`).
    pub sandbox_trusted: bool,
    /// The environment of its tool processes (no credentials).
    pub tool_env: Arc<[(std::ffi::OsString, std::ffi::OsString)]>,
    /// `default` or `plan`; shared with the running turn.
    pub mode: Arc<plan::ModeCell>,
    /// Its hooks, custom commands and skills.
    pub custom: Arc<crate::customize::Customization>,
    /// `$SCV_HOME` (hooks from there are the user's own).
    pub scv_home: Arc<std::path::Path>,
    /// The configuration the session started (or last switched) with: a
    /// later edit of `config.toml` reaches new sessions, not this one.
    pub config: Arc<crate::config::Config>,
    /// Its turn limits, made from `config`.
    pub limits: Arc<Limits>,
    /// Its transcript in Claude Code's format, for its hooks
    /// (`transcript_path`); `None` without hooks (and for a subagent).
    pub transcript: Option<Arc<crate::transcript::Transcript>>,
    /// Its background processes (shared with its subagents); they end
    /// when the last holder of this goes, with the session.
    pub background: Arc<crate::background::Background>,
    /// Its additional directories (`tools::roots`), checked.
    pub roots: Arc<[crate::tools::roots::Root]>,
}

impl SessionSettings {
    pub(crate) fn plan(&self) -> bool {
        self.mode.get() == scv_protocol::Mode::Plan
    }

    /// Where its hooks run now (the mode decides the sandbox).
    pub(crate) fn hook_context<'a>(&'a self, session_id: &'a str) -> crate::hooks::HookContext<'a> {
        let plan = self.plan();
        crate::hooks::HookContext {
            session_id,
            cwd: &self.cwd,
            env: &self.tool_env,
            plan,
            sandbox: self.sandbox_now(plan),
            transcript: self.transcript.as_deref().map(|t| t.path()),
        }
    }

    /// The sandbox of its commands now (read-only in plan mode).
    pub(crate) fn sandbox_now(&self, plan: bool) -> Option<crate::sandbox::SandboxView> {
        self.sandbox.as_ref().map(|view| view.with_read_only(plan))
    }
}

pub(crate) struct Turn {
    pub limits: Arc<Limits>,
    /// The session's checkpoints: taken before the turn's first call that
    /// may change files.
    pub checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// The turn's prompt, as its checkpoint shows it.
    pub prompt: Arc<str>,
    /// Images sent with the prompt (capability `images`), checked.
    pub images: Vec<crate::model::Image>,
    /// `/compact [focus]`: the turn only compacts the history now (the
    /// focus, when given, steers the summary) and asks the model nothing
    /// else.
    pub compact: Option<String>,
    pub settings: Arc<SessionSettings>,
    pub sink: Arc<SessionSink>,
    pub approvals: Arc<Approvals>,
    /// MCP questions waiting, MCP tools loaded (the session's).
    pub session_mcp: session_mcp::SessionMcp,
    pub request_id: Arc<str>,
    pub turn_id: Arc<str>,
    pub token: CancellationToken,
    /// The MCP servers this process runs (tools of connected ones are
    /// offered; calls go through it).
    pub mcp: Arc<scv_mcp::Hub>,
    /// The price, the budgets and what is spent; checked before each
    /// provider request.
    pub spending: Spending,
    /// The turn's OpenTelemetry trace (`None`: export is off).
    pub trace: Option<crate::telemetry::TurnTrace>,
    /// What it may start subagents with (`None`: no `task` tool).
    pub subagents: Option<Arc<subagent::Subagents>>,
    /// A subagent's turn: its tools, instructions and caps.
    pub child: Option<subagent::ChildRole>,
}

/// Adds `step` to `total` (usage is omitted until some is reported): a
/// session's usage, summed from its turns' reported figures.
pub(crate) fn add_usage(total: &mut Option<scv_protocol::Usage>, step: scv_protocol::Usage) {
    let total = total.get_or_insert_with(scv_protocol::Usage::default);
    // The provider's figures: saturated, never overflowed.
    total.input_tokens = total.input_tokens.saturating_add(step.input_tokens);
    total.output_tokens = total.output_tokens.saturating_add(step.output_tokens);
}

/// Adds one request's `step` to a turn's `total`, kept by kind.
fn add_step_usage(total: &mut Option<Usage>, step: Usage) {
    total.get_or_insert_with(Usage::default).add(step);
}

/// What a client is told: `turn.completed` carries the input and output
/// totals only, as the protocol document writes them. The breakdown stays
/// on the server side of this edge.
impl From<Usage> for scv_protocol::Usage {
    fn from(usage: Usage) -> Self {
        scv_protocol::Usage {
            input_tokens: usage.input_tokens(),
            output_tokens: usage.output_tokens(),
        }
    }
}

/// Index of the latest user message: where the current turn begins.
fn last_user(history: &History) -> usize {
    history
        .messages()
        .iter()
        .rposition(Message::is_user)
        .unwrap_or(0)
}

fn request<'a>(
    system: &'a str,
    history: &'a History,
    tools: &'a [ToolSpec],
    max_output_tokens: Option<u64>,
) -> Request<'a> {
    Request {
        system,
        history: history.messages(),
        rendered: Some(history.rendered()),
        tools,
        max_output_tokens,
    }
}

/// What a finished turn hands back to its session.
pub(crate) struct TurnOutcome {
    pub history: History,
    pub usage: Option<scv_protocol::Usage>,
    /// The same usage, by kind.
    pub detail: Option<Usage>,
    /// What it cost, USD (`None`: the model has no price).
    pub cost_usd: Option<f64>,
    /// The budget warnings given so far in the session.
    pub warned: Warned,
    /// The turn failed because a budget refused a request (its
    /// `turn.failed` carries `budget_exceeded` to a connection that asked).
    pub budget_reached: bool,
    /// `turn.completed`, `turn.cancelled` or `turn.failed`; `None` when the
    /// connection is already gone.
    pub terminal: Option<EventBody>,
}

impl Turn {
    /// Runs the turn and returns its terminal event for the connection to
    /// emit, so the session is idle again by the time a client sees it.
    /// `turn.started` was emitted by the caller.
    pub(crate) async fn run(mut self, mut history: History, prompt: String) -> TurnOutcome {
        let mut usage = None;
        self.mirror(&history).await;
        let result = match self.compact.take() {
            Some(focus) => self.compact_now(&mut history, &mut usage, focus).await,
            None => self.prompted(&mut history, &mut usage, prompt).await,
        };
        self.finish_run(history, usage, result).await
    }

    /// The turn of a prompt: the user's message, then the model's steps.
    async fn prompted(
        &mut self,
        history: &mut History,
        usage: &mut Option<Usage>,
        prompt: String,
    ) -> Result<u32, Stop> {
        match self.submitted(prompt).await {
            Ok(prompt) => {
                let prompt = mentions::attach(&self.mcp, prompt, &self.token).await;
                let images = std::mem::take(&mut self.images);
                if !images.is_empty() {
                    history.bound_images(&images);
                }
                history.push(Message::user_with_images(prompt, images));
                self.drive(history, usage).await
            }
            Err(stop) => Err(stop),
        }
    }

    /// The turn's end, however it went: usage, the terminal event, the
    /// outcome.
    async fn finish_run(
        mut self,
        mut history: History,
        usage: Option<Usage>,
        result: Result<u32, Stop>,
    ) -> TurnOutcome {
        let mut detail = usage;
        let mut cost_usd = self.spending.cost(detail.as_ref());
        if let Some(subagents) = &self.subagents {
            // Its children's, attributed to them and summed in here.
            let (children, children_cost) = subagents.spent();
            if let Some(children) = children {
                add_step_usage(&mut detail, children);
            }
            if let Some(children_cost) = children_cost {
                cost_usd = Some(cost_usd.unwrap_or(0.0) + children_cost);
            }
        }
        let usage = detail.map(scv_protocol::Usage::from);
        history.close_open_tool_calls(INTERRUPTED);
        let refused = matches!(result, Err(Stop::Refused));
        let budget_reached = matches!(result, Err(Stop::Budget(_)));
        let terminal = match result {
            Ok(steps) => Some(EventBody::TurnCompleted {
                steps,
                usage,
                cost: None,
            }),
            Err(Stop::Cancelled) => Some(EventBody::TurnCancelled {}),
            Err(Stop::Failed(code, message)) => Some(EventBody::TurnFailed { code, message }),
            Err(Stop::Budget(message)) => Some(EventBody::TurnFailed {
                code: FailureCode::StepLimit,
                message,
            }),
            Err(Stop::Overflow(message)) => Some(EventBody::TurnFailed {
                code: FailureCode::ContextLimit,
                message,
            }),
            Err(Stop::Refused) => Some(EventBody::TurnFailed {
                code: FailureCode::ProviderError,
                message: REFUSED.into(),
            }),
            Err(Stop::Disconnected) => None,
        };
        let cannot_fit = matches!(
            &terminal,
            Some(EventBody::TurnFailed {
                code: FailureCode::HistoryLimit | FailureCode::ContextLimit,
                ..
            })
        );
        if cannot_fit || refused {
            // A turn that cannot fit is not kept, or every later turn
            // would fail the same way; nor is a refused one, which would
            // be refused again.
            history.split_off(last_user(&history));
        }
        if let Some(trace) = self.trace.take() {
            let error = match &terminal {
                Some(EventBody::TurnFailed { code, .. }) => Some(code.as_str()),
                Some(EventBody::TurnCancelled {}) => Some("cancelled"),
                None => Some("disconnected"),
                _ => None,
            };
            trace.end(detail.as_ref(), cost_usd, error);
        }
        TurnOutcome {
            history,
            usage,
            detail,
            cost_usd,
            warned: self.spending.warned(),
            budget_reached,
            terminal,
        }
    }

    async fn drive(&self, history: &mut History, usage: &mut Option<Usage>) -> Result<u32, Stop> {
        let settings = &self.settings;
        if !settings.no_tools {
            // MCP servers still starting get a moment, not the turn.
            self.cancellable(self.mcp.wait_started()).await?;
        }
        let mut tools_version = self.tools_version();
        let mut plan = settings.plan();
        let mut registry = self.registry(plan).await;
        let (mut system, mut fixed_bytes) = self.system_prompt(&registry, plan).await;
        let max_steps = self.limits.max_steps;
        let mut steps = 0;
        // Times a Stop hook sent the model back in this turn.
        let mut stop_rounds = 0;
        loop {
            // A server's tools changed (or one was loaded), or the mode:
            // the next request offers the new set.
            if self.tools_version() != tools_version || settings.plan() != plan {
                tools_version = self.tools_version();
                plan = settings.plan();
                registry = self.registry(plan).await;
                (system, fixed_bytes) = self.system_prompt(&registry, plan).await;
            }
            let tools = self.offered(&registry);
            self.trim(history).await?;
            self.compact(fixed_bytes, history, usage, false).await?;
            let (reply, request_bytes, held) = self
                .send_request(&system, fixed_bytes, history, usage, tools)
                .await?;
            steps += 1;
            self.spent(held, reply.usage).await?;
            if let Some(step_usage) = reply.usage {
                history.calibrate(request_bytes, step_usage.input_tokens());
                add_step_usage(usage, step_usage);
                self.emit(EventBody::UsageUpdated {
                    step: step_usage.into(),
                    turn: usage.unwrap_or_default().into(),
                    steps,
                })
                .await?;
            }
            if reply.end == End::Refused {
                // Its text (if any) was streamed; it is no answer, and
                // none of its calls run.
                return Err(Stop::Refused);
            }
            let paused = reply.end == End::Paused;
            let message = reply.message;
            self.emit(EventBody::AssistantCompleted {
                content: message
                    .text
                    .as_ref()
                    .map(|t| t.as_str().into_owned())
                    .unwrap_or_default(),
            })
            .await?;
            let tool_calls = message.tool_calls.clone();
            self.record(history, Message::Assistant(message)).await;
            if tool_calls.is_empty() && !paused {
                // A Stop hook may send the model back to work, saying why.
                if let Some(reason) = self.stop_round(&mut stop_rounds).await? {
                    if steps >= max_steps {
                        return Err(Stop::Failed(
                            FailureCode::StepLimit,
                            format!("agent reached {max_steps} steps (a Stop hook asked for more: {reason})"),
                        ));
                    }
                    history.push(Message::user(format!(
                        "A Stop hook did not let the turn end yet: {reason}"
                    )));
                    continue;
                }
                self.trim(history).await?;
                return Ok(steps);
            }
            // Tool calls, or a paused turn: the next request continues it
            // (a paused one with the assistant's message last).
            if steps >= max_steps {
                return Err(Stop::Failed(
                    FailureCode::StepLimit,
                    format!("agent reached {max_steps} steps"),
                ));
            }
            self.run_calls(&tool_calls, &registry, history).await?;
        }
    }

    /// One provider request for the history as it stands, held against
    /// the budgets until it ends: on a context overflow, one compaction
    /// and one retry. Returns the reply, the request's size before any
    /// compaction (what calibrates the estimate), and what it holds.
    async fn send_request(
        &self,
        system: &str,
        fixed_bytes: usize,
        history: &mut History,
        usage: &mut Option<Usage>,
        tools: &[ToolSpec],
    ) -> Result<(Reply, usize, budget::Reservation), Stop> {
        let request_bytes = fixed_bytes + history.bytes();
        // Held until the request ends: settled by the caller, released
        // when it fails or the turn is cancelled (dropped with `?`).
        let mut held = self.reserve(history.estimate_tokens(request_bytes))?;
        let mut reply = self
            .step(&request(system, history, tools, held.max_output_tokens))
            .await;
        if let Err(Stop::Overflow(message)) = &reply {
            // One compaction, one retry; the refused request spent
            // nothing.
            tracing::info!("provider context overflow: {message}; compacting once");
            drop(held);
            self.compact(fixed_bytes, history, usage, true).await?;
            let request_bytes = fixed_bytes + history.bytes();
            held = self.reserve(history.estimate_tokens(request_bytes))?;
            reply = match self
                .step(&request(system, history, tools, held.max_output_tokens))
                .await
            {
                Err(Stop::Overflow(message)) => {
                    return Err(Stop::Failed(
                        FailureCode::ContextLimit,
                        format!("the conversation does not fit the model's context even after compaction: {message}"),
                    ))
                }
                other => other,
            };
        }
        Ok((reply?, request_bytes, held))
    }

    /// A step's calls, their results pushed to the history: consecutive
    /// `task` calls together, the rest one by one.
    async fn run_calls(
        &self,
        tool_calls: &[ToolCall],
        registry: &Registry,
        history: &mut History,
    ) -> Result<(), Stop> {
        let mut rest = tool_calls;
        while !rest.is_empty() {
            // Consecutive `task` calls run together (each waits for one
            // of `max_subagents` slots); the rest one by one.
            let together = rest
                .iter()
                .take_while(|c| c.name == crate::tools::task::NAME)
                .count()
                .max(1);
            let (now, later) = rest.split_at(together);
            rest = later;
            let results = futures_util::future::join_all(
                now.iter().map(|call| self.call_tool(call, registry)),
            )
            .await;
            for (call, result) in now.iter().zip(results) {
                let (content, success) = result?;
                history.push(Message::Tool {
                    call_id: call.id.clone(),
                    content: content.into(),
                    success,
                });
            }
        }
        Ok(())
    }

    /// The session's tools now: the built-in ones (and `skill` when it
    /// has skills) and the connected MCP servers'; in plan mode, those
    /// that write are not offered.
    async fn registry(&self, plan: bool) -> Arc<Registry> {
        if self.settings.no_tools {
            return self.settings.tools.clone();
        }
        let offer = crate::tools::registry::Offer {
            skill: !self.settings.custom.catalog.skills.is_empty(),
            plan,
            task: self.subagents.as_ref().map(|s| s.description()),
        };
        let loaded = Some(&self.session_mcp.tool_search);
        let registry = Registry::for_session(&self.mcp.tools().await, offer, loaded);
        match &self.child {
            Some(child) => registry.only(&child.tools),
            None => registry,
        }
    }

    fn offered<'a>(&self, registry: &'a Registry) -> &'a [ToolSpec] {
        if self.settings.no_tools {
            &[]
        } else {
            registry.specs()
        }
    }

    /// The system prompt for these tools, and what it and the tool
    /// definitions weigh (as a message would).
    async fn system_prompt(&self, registry: &Registry, plan: bool) -> (String, usize) {
        let tools = self.offered(registry);
        let custom = &self.settings.custom;
        let extras = prompt::Extras {
            plan: plan && !self.settings.no_tools,
            skills: (!self.settings.no_tools)
                .then(|| custom.catalog.skill_index())
                .flatten(),
            context: custom.started.get().cloned().unwrap_or_default(),
            subagent: self.child.as_ref().map(subagent::ChildRole::system),
        };
        let system = prompt::system_prompt(self.settings.cwd.clone(), tools, extras).await;
        let fixed =
            Message::user(system.as_str()).weight() + self.settings.provider.tools_bytes(tools);
        (system, fixed)
    }

    /// Keeps the history within `max_history_bytes`, dropping the oldest
    /// groups (never this turn's messages) and saying so.
    async fn trim(&self, history: &mut History) -> Result<(), Stop> {
        let max = self.limits.max_history_bytes;
        match trim::trim(history, max, last_user(history)) {
            Trimmed::Fits => Ok(()),
            Trimmed::Removed(removed) => {
                let trimmed = EventBody::SessionTrimmed {
                    removed_messages: removed as u64,
                    history_bytes: history.bytes() as u64,
                };
                // A session event: it answers the turn's request but is not
                // a turn event, so it carries no turn id.
                self.cancellable(self.sink.emit(Some(&self.request_id), None, &trimmed))
                    .await??;
                Ok(())
            }
            Trimmed::TooLarge => Err(Stop::Failed(
                FailureCode::HistoryLimit,
                format!("this turn does not fit the session history limit of {max} bytes"),
            )),
        }
    }

    /// One provider request, streaming its text as `assistant.delta`
    /// (its span, when traced).
    async fn step(&self, request: &Request<'_>) -> Result<Reply, Stop> {
        let max_tokens = request
            .max_output_tokens
            .unwrap_or(self.settings.provider.max_output_tokens);
        let span = self.trace.as_ref().map(|t| t.request(max_tokens));
        let result = self.stream_step(request).await;
        traced(span, &result, &self.spending);
        result
    }

    async fn stream_step(&self, request: &Request<'_>) -> Result<Reply, Stop> {
        let mut stream = self.open(request).await?;
        let mut batch = Vec::new();
        while let Some(first) = self.cancellable(stream.next_delta()).await?? {
            // The deltas of the chunk just read go out together: one
            // reservation of writer room, one wake-up, one cancellation
            // check for the lot.
            let mut next = Some(first);
            let mut bytes = 0;
            while let Some(delta) = next {
                // Reasoning only to a connection that opted in (the sink
                // decides); never in the answer.
                bytes += delta.text().len();
                batch.push(delta);
                next = if batch.len() < MAX_BATCH_EVENTS && bytes < MAX_BATCH_BYTES {
                    stream.next_buffered()?
                } else {
                    None
                };
            }
            if !batch.is_empty() {
                self.emit_deltas(&batch).await?;
                batch.clear();
            }
        }
        Ok(self.cancellable(stream.finish()).await??)
    }

    /// Proposes, approves (when needed) and runs one call; returns what the
    /// model reads as its result and whether the call succeeded (as its
    /// `tool.completed` says).
    async fn call_tool(
        &self,
        call: &ToolCall,
        registry: &Registry,
    ) -> Result<(String, bool), Stop> {
        let name = call.name.as_str();
        let arguments = call.arguments.as_str();
        let parsed = parse_arguments(&arguments);
        let shown_arguments = match &parsed {
            Ok(value) => value.clone(),
            Err(_) => Value::String(arguments.clone().into_owned()),
        };
        self.emit(EventBody::ToolProposed {
            call_id: call.id.clone(),
            name: name.to_string(),
            arguments: shown_arguments,
        })
        .await?;

        let tool = registry.get(name);
        let (tool, arguments) = match (self.settings.no_tools, tool, parsed) {
            (true, _, _) => return self.complete(call, ToolOutput::error(NO_TOOLS)).await,
            (false, None, _) => {
                let unknown = format!("error: unknown tool `{name}`");
                return self.complete(call, ToolOutput::error(unknown)).await;
            }
            (false, Some(_), Err(message)) => {
                return self.complete(call, ToolOutput::error(message)).await
            }
            (false, Some(tool), Ok(arguments)) => (tool, arguments),
        };
        let risk = tool.risk();
        let plan = self.settings.plan();
        let enforced = self.settings.sandbox.is_some();
        if plan {
            if let Some(why) = plan::refusal(name, tool, &arguments, enforced) {
                return self.complete(call, ToolOutput::error(why)).await;
            }
        }
        let sandboxed = tool.sandboxed(&arguments, enforced);
        let mut gate = self.pre_tool_hooks(call, tool, &arguments).await?;
        if let Some(reason) = gate.denied.take() {
            return self.complete(call, ToolOutput::error(reason)).await;
        }
        // Plan mode: MCP tools always ask.
        let ask = gate.ask || (plan && risk == scv_protocol::Risk::Mcp);
        let approved = if ask {
            false
        } else {
            gate.allowed || self.auto_approved(tool, &arguments, sandboxed)
        };
        if !approved {
            let mut summary = tool.summary(&arguments);
            if let Some(reason) = &gate.reason {
                summary.push_str(&format!(" (hook: {reason})"));
            }
            if !self.approve(call, risk, summary, sandboxed).await? {
                return self.complete(call, ToolOutput::error(DENIED)).await;
            }
        }

        if risk != scv_protocol::Risk::Read {
            self.checkpoint().await?;
        }
        self.emit(EventBody::ToolStarted {
            call_id: call.id.clone(),
            name: name.to_string(),
        })
        .await?;
        let output = self
            .run_approved(call, tool, &arguments, registry, plan)
            .await?;
        let mut notes = gate.context;
        notes.extend(self.post_tool_hooks(call, &arguments, &output).await?);
        let (mut content, success) = self.complete(call, output).await?;
        for note in notes {
            content.push_str("\n\n");
            content.push_str(&note);
        }
        Ok((content, success))
    }

    /// Runs an approved call (`task` starts a subagent) in the turn's
    /// tool context, traced; a cancelled turn stops here.
    async fn run_approved(
        &self,
        call: &ToolCall,
        tool: &crate::tools::registry::Tool,
        arguments: &Value,
        registry: &Registry,
        plan: bool,
    ) -> Result<ToolOutput, Stop> {
        let name = call.name.as_str();
        let span = self
            .trace
            .as_ref()
            .map(|t| t.tool(name, &call.id, &call.arguments.as_str()));
        let tool_ctx = ToolContext {
            workspace: &self.settings.cwd,
            scv_home: &self.settings.scv_home,
            bash_timeout: self.limits.bash_timeout,
            bash_max_timeout: self.limits.bash_max_timeout,
            max_output_bytes: self.limits.tool_output_max_bytes,
            cancel: &self.token,
            sandbox: self.settings.sandbox_now(plan),
            env: &self.settings.tool_env,
            mcp: &self.mcp,
            elicitor: self.elicitor(),
            traceparent: span.as_ref().map(|span| span.traceparent()),
            catalog: &self.settings.custom.catalog,
            background: &self.settings.background,
            web: &self.limits.web,
            roots: &self.settings.roots,
        };
        // Tools watch the token themselves, so a cancelled call has
        // finished cleaning up (bash: every process it started is gone)
        // before the turn ends.
        let result = if tool.is_task() {
            Ok(self.run_task(call, arguments, registry).await?)
        } else {
            tool.run(arguments, &tool_ctx).await
        };
        if self.token.is_cancelled() {
            if let Some(span) = span {
                span.failed("cancelled");
            }
            return Err(Stop::Cancelled);
        }
        let output = match result {
            Ok(output) => output,
            Err(ToolError::Model(message)) => ToolOutput::error(format!("error: {message}")),
            Err(ToolError::Internal(message)) => {
                if let Some(span) = span {
                    span.failed("internal_error");
                }
                return Err(Stop::Failed(FailureCode::InternalError, message));
            }
        };
        if let Some(span) = span {
            span.completed(output.success, &output.output);
        }
        Ok(output)
    }

    /// The workspace recorded before this turn's first call that may
    /// change files (once per turn), said to a client that asked.
    async fn checkpoint(&self) -> Result<(), Stop> {
        let Some(checkpoints) = &self.checkpoints else {
            return Ok(());
        };
        let taken = self
            .cancellable(checkpoints.before_change(&self.turn_id, &self.prompt))
            .await?;
        match taken {
            crate::checkpoint::Taken::New(checkpoint_id) => {
                self.emit(EventBody::CheckpointCreated { checkpoint_id })
                    .await?;
            }
            // Said before the call runs: it has no undo point.
            crate::checkpoint::Taken::Failed(message) => {
                self.emit(EventBody::CheckpointFailed { message }).await?;
            }
            crate::checkpoint::Taken::Nothing => {}
        }
        Ok(())
    }

    /// Whether a call runs without asking: its risk class is in
    /// `auto_approve`, or it is a command that will run inside an enforced
    /// sandbox whose second wall is whole and `sandboxed` is. A command
    /// asking to leave the sandbox always asks.
    fn auto_approved(
        &self,
        tool: &crate::tools::registry::Tool,
        arguments: &Value,
        sandboxed: Option<bool>,
    ) -> bool {
        let classes = &self.limits.auto_approve;
        if tool.leaves_sandbox(arguments) {
            return false;
        }
        classes.contains(&tool.risk())
            || tool.server_auto_approves()
            || (tool.is_web_fetch()
                && crate::tools::web_fetch::runs_unasked(arguments, &self.limits.web))
            || (sandboxed == Some(true)
                && self.settings.sandbox_trusted
                && classes.contains(&scv_protocol::Risk::Sandboxed))
    }

    /// Asks the client; true when approved.
    async fn approve(
        &self,
        call: &ToolCall,
        risk: scv_protocol::Risk,
        summary: String,
        sandboxed: Option<bool>,
    ) -> Result<bool, Stop> {
        let (approval_id, answer) = self.approvals.request();
        let (sink, turn_id, call_id, summary) = self.approval_target(&call.id, summary);
        let requested = EventBody::ApprovalRequested {
            approval_id: approval_id.clone(),
            call_id,
            name: call.name.clone(),
            risk,
            cwd: self.settings.cwd.display().to_string(),
            summary,
            sandboxed,
        };
        let result: Result<bool, Stop> = async {
            let emit = sink.emit(Some(&self.request_id), Some(turn_id), &requested);
            self.cancellable(emit).await??;
            // A dropped sender (session gone) counts as a denial.
            let message = format!("SCV needs your permission to use {}", call.name);
            let answer = self.notifying(&message, answer);
            Ok(self.cancellable(answer).await?.unwrap_or(false))
        }
        .await;
        // Whatever happened, this id is finished.
        self.approvals.forget(&approval_id);
        sink.approval_gone(&approval_id);
        result
    }

    async fn complete(&self, call: &ToolCall, output: ToolOutput) -> Result<(String, bool), Stop> {
        let success = output.success;
        let content = if output.truncated {
            format!("{}\n[output was truncated]", output.output)
        } else {
            output.output.clone()
        };
        self.emit(EventBody::ToolCompleted {
            call_id: call.id.clone(),
            name: call.name.clone(),
            success,
            output: output.output,
            truncated: output.truncated,
        })
        .await?;
        Ok((content, success))
    }

    /// The stream's deltas, queued as one batch; a cancel interrupts the
    /// wait for writer room.
    async fn emit_deltas(&self, deltas: &[Delta]) -> Result<(), Stop> {
        let reasoning = self.sink.sends("reasoning.delta");
        if !deltas
            .iter()
            .any(|d| reasoning || matches!(d, Delta::Text(_)))
        {
            // None leaves the sink: no wait, and no cancellation point.
            return Ok(());
        }
        let emit = self
            .sink
            .emit_deltas(Some(&self.request_id), Some(&self.turn_id), deltas);
        self.cancellable(emit).await??;
        Ok(())
    }

    /// Opens the provider's stream for `request`. A key the provider needs
    /// and does not have fails the turn before anything is sent; a
    /// transient refusal is waited out (cancellably), and told to a
    /// connection that asked (`provider.retrying`), up to the provider's
    /// `max_retries`.
    async fn open(&self, request: &Request<'_>) -> Result<ResponseStream, Stop> {
        let provider = &self.settings.provider;
        if let Some(message) = provider.missing_key_message("nothing was sent") {
            return Err(Stop::Failed(FailureCode::ProviderError, message));
        }
        let mut attempt = 0;
        loop {
            match self.cancellable(provider.start(request, attempt)).await? {
                Ok(stream) => return Ok(stream),
                Err(Failure::Failed(err)) => return Err(err.into()),
                Err(Failure::Retry(retry)) => {
                    attempt += 1;
                    self.emit(EventBody::ProviderRetrying(ProviderRetrying {
                        attempt,
                        max_retries: provider.max_retries,
                        wait_ms: retry.wait.as_millis() as u64,
                        status: retry.status,
                        reason: retry.reason.into(),
                    }))
                    .await?;
                    self.cancellable(tokio::time::sleep(retry.wait)).await?;
                }
            }
        }
    }

    /// Emits `body` for this turn, unless its connection did not ask for
    /// it (the sink's gate): then nothing waits, and nothing here can stop
    /// the turn.
    async fn emit(&self, body: EventBody) -> Result<(), Stop> {
        if !self.sink.sends(body.type_name()) {
            return Ok(());
        }
        let emit = self
            .sink
            .emit(Some(&self.request_id), Some(&self.turn_id), &body);
        self.cancellable(emit).await??;
        Ok(())
    }

    /// Races `work` against the turn's cancellation.
    async fn cancellable<T>(&self, work: impl Future<Output = T>) -> Result<T, Stop> {
        if self.token.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        let mut work = std::pin::pin!(work);
        // Most work (an emit with room in the writer's queue, a delta already
        // buffered) is ready at once: finish it without waiting on the token,
        // which locks the token's tree to register and again to unregister —
        // twice per streamed delta otherwise.
        let polled = {
            let mut ready = std::task::Context::from_waker(std::task::Waker::noop());
            work.as_mut().poll(&mut ready)
        };
        if let std::task::Poll::Ready(value) = polled {
            return Ok(value);
        }
        tokio::select! {
            biased;
            _ = self.token.cancelled() => Err(Stop::Cancelled),
            value = work => Ok(value),
        }
    }
}

/// Ends a provider request's span with what came of it (and records its
/// metrics).
fn traced(
    span: Option<crate::telemetry::ChildSpan>,
    result: &Result<Reply, Stop>,
    spending: &Spending,
) {
    let Some(span) = span else {
        return;
    };
    match result {
        Ok(reply) => span.answered(
            reply.usage.as_ref(),
            spending.cost(reply.usage.as_ref()),
            reply.finish_reason.as_deref(),
            reply.message.text.as_ref().map(|t| t.as_str()).as_deref(),
        ),
        Err(stop) => span.failed(match stop {
            Stop::Cancelled => "cancelled",
            Stop::Failed(code, _) => code.as_str(),
            Stop::Budget(_) => "budget_exceeded",
            Stop::Overflow(_) => "context_limit",
            Stop::Refused => "refused",
            Stop::Disconnected => "disconnected",
        }),
    }
}

/// A call's arguments as a JSON object (none: `{}`), or what the model
/// is told is wrong with them.
fn parse_arguments(arguments: &str) -> Result<Value, String> {
    match arguments.trim() {
        "" => Ok(Value::Object(Default::default())),
        raw => serde_json::from_str::<Value>(raw)
            .map_err(|err| format!("error: the arguments are not valid JSON ({err})"))
            .and_then(|v| {
                if v.is_object() {
                    Ok(v)
                } else {
                    Err("error: the arguments must be a JSON object".to_string())
                }
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Usage figures come from the provider: a turn's total saturates
    /// rather than overflowing (the same class as the `anthropic_events`
    /// fuzz finding, one level up).
    #[test]
    fn usage_totals_saturate() {
        let mut total = None;
        let huge = scv_protocol::Usage {
            input_tokens: u64::MAX,
            output_tokens: u64::MAX - 1,
        };
        add_usage(&mut total, huge);
        add_usage(&mut total, huge);
        assert_eq!(
            total,
            Some(scv_protocol::Usage {
                input_tokens: u64::MAX,
                output_tokens: u64::MAX
            })
        );
    }
}
