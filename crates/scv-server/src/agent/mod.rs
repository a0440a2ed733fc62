//! One turn: provider step → tool calls → approvals → tool runs → repeat,
//! until the model answers without tool calls.
//!
//! The turn task owns the session history while it runs and hands it back
//! when it ends. It emits exactly one terminal event; every failure after
//! `turn.started` becomes `turn.failed`. Cancellation (the turn's token)
//! interrupts provider reads, approval waits, tool runs and waits for
//! writer capacity, because each of those is raced against the token.

pub mod prompt;

use crate::context::History;
use crate::provider::{AssistantResponse, ChatMessage, ProviderError, ToolCall};
use crate::server::ServerContext;
use crate::session::{Approvals, EmitError, SessionSettings, SessionSink};
use crate::tools::{self, ToolContext, ToolOutput};
use scv_protocol::{EventBody, FailureCode, Usage};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// What stopped a turn early.
enum Stop {
    Cancelled,
    Failed(FailureCode, String),
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
        Stop::Failed(err.code, err.message)
    }
}

/// Text the model sees for calls that never ran.
const INTERRUPTED: &str = "The tool call was interrupted before it finished.";
const DENIED: &str = "The user denied this tool call. Do not retry it unchanged.";
const NO_TOOLS: &str = "Tools are disabled in this session; answer without them.";

pub struct Turn {
    pub ctx: Arc<ServerContext>,
    pub settings: Arc<SessionSettings>,
    pub sink: Arc<SessionSink>,
    pub approvals: Arc<Approvals>,
    pub request_id: Arc<str>,
    pub turn_id: Arc<str>,
    pub token: CancellationToken,
}

/// What a finished turn hands back to its session.
pub struct TurnOutcome {
    pub history: History,
    pub usage: Option<Usage>,
}

impl Turn {
    /// Runs the turn to its terminal event. `turn.started` was emitted by
    /// the caller, so it precedes anything else the session says.
    pub async fn run(self, mut history: History, prompt: String) -> TurnOutcome {
        history.push(ChatMessage::User { content: prompt });
        let mut usage = None;
        let result = self.drive(&mut history, &mut usage).await;
        history.close_open_tool_calls(INTERRUPTED);
        let terminal = match result {
            Ok(steps) => EventBody::TurnCompleted { steps, usage },
            Err(Stop::Cancelled) => EventBody::TurnCancelled {},
            Err(Stop::Failed(code, message)) => EventBody::TurnFailed { code, message },
            Err(Stop::Disconnected) => return TurnOutcome { history, usage },
        };
        // Not raced against the token: the terminal event must go out. The
        // writer's own send timeout bounds the wait.
        if let Err(err) = self.emit_now(&terminal).await {
            tracing::debug!("terminal event not delivered: {err}");
        }
        TurnOutcome { history, usage }
    }

    async fn drive(&self, history: &mut History, usage: &mut Option<Usage>) -> Result<u32, Stop> {
        let tools: &[Value] = if self.settings.no_tools {
            &[]
        } else {
            tools::definitions()
        };
        let system = ChatMessage::System {
            content: prompt::system_prompt(&self.settings.cwd, !self.settings.no_tools),
        };
        let max_steps = self.ctx.config.max_steps;
        let mut steps = 0;
        loop {
            let response = self.step(&system, history, tools).await?;
            steps += 1;
            if let Some(step_usage) = response.usage {
                let total = usage.get_or_insert_with(Usage::default);
                total.input_tokens += step_usage.input_tokens;
                total.output_tokens += step_usage.output_tokens;
            }
            self.emit(EventBody::AssistantCompleted {
                content: response.text.clone(),
            })
            .await?;
            let AssistantResponse {
                text, tool_calls, ..
            } = response;
            history.push(ChatMessage::Assistant {
                content: (!text.is_empty()).then_some(text),
                tool_calls: tool_calls.clone(),
            });
            if tool_calls.is_empty() {
                return Ok(steps);
            }
            if steps >= max_steps {
                return Err(Stop::Failed(
                    FailureCode::StepLimit,
                    format!("agent reached {max_steps} steps"),
                ));
            }
            for call in &tool_calls {
                let output = self.call_tool(call).await?;
                history.push(ChatMessage::Tool {
                    tool_call_id: call.id.clone(),
                    content: output,
                });
            }
        }
    }

    /// One provider request, streaming its text as `assistant.delta`.
    async fn step(
        &self,
        system: &ChatMessage,
        history: &History,
        tools: &[Value],
    ) -> Result<AssistantResponse, Stop> {
        let messages: Vec<&ChatMessage> =
            std::iter::once(system).chain(history.messages()).collect();
        let provider = &self.settings.provider;
        let mut stream = self.cancellable(provider.start(&messages, tools)).await??;
        while let Some(text) = self.cancellable(stream.next_text()).await?? {
            self.emit(EventBody::AssistantDelta { content: text })
                .await?;
        }
        Ok(self.cancellable(stream.finish()).await??)
    }

    /// Proposes, approves (when needed) and runs one call; returns what the
    /// model reads as its result.
    async fn call_tool(&self, call: &ToolCall) -> Result<String, Stop> {
        let name = call.function.name.as_str();
        let parsed: Result<Value, String> = match call.function.arguments.trim() {
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
        };
        let shown_arguments = match &parsed {
            Ok(value) => value.clone(),
            Err(_) => Value::String(call.function.arguments.clone()),
        };
        self.emit(EventBody::ToolProposed {
            call_id: call.id.clone(),
            name: name.to_string(),
            arguments: shown_arguments,
        })
        .await?;

        let refusal = if self.settings.no_tools {
            Some(NO_TOOLS.to_string())
        } else if tools::risk(name).is_none() {
            Some(format!("error: unknown tool `{name}`"))
        } else {
            parsed.as_ref().err().cloned()
        };
        if let Some(message) = refusal {
            return self.complete(call, ToolOutput::error(message)).await;
        }
        let arguments = parsed.expect("checked above");
        let risk = tools::risk(name).expect("checked above");

        if !self.ctx.config.auto_approve.contains(&risk)
            && !self.approve(call, risk, &arguments).await?
        {
            return self.complete(call, ToolOutput::error(DENIED)).await;
        }

        self.emit(EventBody::ToolStarted {
            call_id: call.id.clone(),
            name: name.to_string(),
        })
        .await?;
        let tool_ctx = ToolContext {
            workspace: &self.settings.cwd,
            bash_timeout: std::time::Duration::from_millis(self.ctx.config.bash_timeout_ms.max(1)),
            max_output_bytes: self.ctx.config.tool_output_max_bytes,
            cancel: &self.token,
        };
        let output = self
            .cancellable(tools::run(name, &arguments, &tool_ctx))
            .await?;
        self.complete(call, output).await
    }

    /// Asks the client; true when approved.
    async fn approve(
        &self,
        call: &ToolCall,
        risk: scv_protocol::Risk,
        arguments: &Value,
    ) -> Result<bool, Stop> {
        let (approval_id, answer) = self.approvals.request();
        let requested = EventBody::ApprovalRequested {
            approval_id: approval_id.clone(),
            call_id: call.id.clone(),
            name: call.function.name.clone(),
            risk,
            cwd: self.settings.cwd.display().to_string(),
            summary: tools::summary(&call.function.name, arguments),
        };
        let result: Result<bool, Stop> = async {
            self.emit(requested).await?;
            // A dropped sender (session gone) counts as a denial.
            Ok(self.cancellable(answer).await?.unwrap_or(false))
        }
        .await;
        // Whatever happened, this id is finished.
        self.approvals.forget(&approval_id);
        result
    }

    async fn complete(&self, call: &ToolCall, output: ToolOutput) -> Result<String, Stop> {
        let content = if output.truncated {
            format!("{}\n[output was truncated]", output.output)
        } else {
            output.output.clone()
        };
        self.emit(EventBody::ToolCompleted {
            call_id: call.id.clone(),
            name: call.function.name.clone(),
            success: output.success,
            output: output.output,
            truncated: output.truncated,
        })
        .await?;
        Ok(content)
    }

    /// Emits a turn event; a cancel interrupts the wait for writer room.
    async fn emit(&self, body: EventBody) -> Result<(), Stop> {
        self.cancellable(self.emit_now(&body)).await??;
        Ok(())
    }

    async fn emit_now(&self, body: &EventBody) -> Result<(), EmitError> {
        self.sink
            .emit(Some(&self.request_id), Some(&self.turn_id), body)
            .await
    }

    /// Races `work` against the turn's cancellation.
    async fn cancellable<T>(&self, work: impl Future<Output = T>) -> Result<T, Stop> {
        tokio::select! {
            biased;
            _ = self.token.cancelled() => Err(Stop::Cancelled),
            value = work => Ok(value),
        }
    }
}
