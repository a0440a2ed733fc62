//! Where a turn consults the user's hooks: once per session before its
//! first turn (`SessionStart`), on each prompt (`UserPromptSubmit`),
//! around every tool call whatever its tool or client (`PreToolUse`,
//! `PostToolUse`, from `call_tool`, the one path every call takes), when
//! the model would end the turn (`Stop`) and before compaction
//! (`PreCompact`). A session without hooks skips all of it.
//!
//! Fail closed: what `scv_hooks::interpret` cannot read from a
//! `PreToolUse` or `UserPromptSubmit` hook is a denial naming the hook.

use super::{Stop, Turn};
use crate::hooks::Hooked;
use crate::model::ToolCall;
use crate::permissions::Verdict;
use crate::tools::registry::Tool;
use crate::tools::ToolOutput;
use scv_hooks::{Decision, Event, Input};
use scv_protocol::{EventBody, FailureCode, HookMessage, Risk};
use serde_json::Value;
use std::future::Future;

/// How many times a `Stop` (or `SubagentStop`) hook may send the model
/// back in one turn; blocking once more ends the turn anyway, with its
/// answer, telling the user (a hook that always blocks would otherwise
/// run the turn to `max_steps`).
pub(crate) const MAX_STOP_HOOK_ROUNDS: u32 = 3;

/// What the `PreToolUse` hooks decided for one call.
#[derive(Default)]
pub(super) struct Gate {
    /// Blocked: the text the model reads as the call's result.
    pub denied: Option<String>,
    /// Ask the user, whatever `auto_approve` says.
    pub ask: bool,
    /// Run without asking.
    pub allowed: bool,
    /// The hook's reason for `allow` / `ask`, shown with the approval.
    pub reason: Option<String>,
    /// Context the hooks added, for the model, after the call's result.
    pub context: Vec<String>,
}

impl Turn {
    /// `fut`, with `Notification` hooks (`permission_prompt`, saying
    /// `message`) running beside it: they are told SCV waits for the
    /// user, and never hold the wait up (those still running when `fut`
    /// ends are stopped).
    pub(super) async fn notifying<T>(&self, message: &str, fut: impl Future<Output = T>) -> T {
        if self.settings.custom.hooks.is_empty() {
            return fut.await;
        }
        let input = Input::Notification {
            message,
            notification_type: "permission_prompt",
        };
        let notify = self.hooks(Event::Notification, Some("permission_prompt"), None, &input);
        tokio::pin!(fut, notify);
        let mut told = false;
        loop {
            tokio::select! {
                out = &mut fut => return out,
                _ = &mut notify, if !told => told = true,
            }
        }
    }

    /// `SubagentStart`, as a child session `agent_id` running `agent_type`
    /// starts (it blocks nothing).
    pub(super) async fn subagent_start_hooks(&self, agent_id: &str, agent_type: &str) {
        let input = Input::SubagentStart {
            agent_id,
            agent_type,
        };
        let _ = self
            .hooks(Event::SubagentStart, Some(agent_type), None, &input)
            .await;
    }

    /// Adds `message` to `history` and the transcript hooks read.
    pub(super) async fn record(
        &self,
        history: &mut crate::context::History,
        message: crate::model::Message,
    ) {
        history.push(message);
        self.mirror(history).await;
    }

    /// Brings the session's transcript (`transcript_path`) up to
    /// `history` before hooks read it; nothing without hooks.
    pub(super) async fn mirror(&self, history: &crate::context::History) {
        let Some(transcript) = &self.settings.transcript else {
            return;
        };
        let Some(pending) = transcript.pending(history.messages()) else {
            return;
        };
        let transcript = transcript.clone();
        let session = self.sink.session_id().to_string();
        let cwd = self.settings.cwd.clone();
        let _ = crate::blocking::run(move || transcript.write(pending, &session, &cwd)).await;
    }

    /// Runs the hooks of `event`; what they say to the user is sent (to a
    /// connection with capability `hooks`) or logged, and a `continue:
    /// false` ends the turn.
    async fn hooks(
        &self,
        event: Event,
        tool: Option<&str>,
        call_id: Option<&str>,
        input: &Input<'_>,
    ) -> Result<Option<Hooked>, Stop> {
        let custom = &self.settings.custom;
        if custom.hooks.is_empty() {
            return Ok(None);
        }
        let cx = self.settings.hook_context(self.sink.session_id());
        let run = crate::hooks::run(&custom.hooks, &cx, event, tool, input);
        let Some(hooked) = self.cancellable(run).await? else {
            return Ok(None);
        };
        for note in &hooked.notes {
            // `hook.message` to a connection that asked; the log has it
            // either way.
            tracing::info!("{} {}: {}", event.as_str(), note.hook, note.message);
            self.emit(EventBody::HookMessage(HookMessage {
                event: event.as_str().to_string(),
                hook: note.hook.clone(),
                message: note.message.clone(),
                blocked: note.blocked,
                call_id: call_id.map(str::to_string),
            }))
            .await?;
        }
        if let Some(reason) = &hooked.outcome.stop {
            return Err(Stop::Failed(
                FailureCode::StepLimit,
                format!("a {} hook stopped the turn: {reason}", event.as_str()),
            ));
        }
        Ok(Some(hooked))
    }

    /// `SessionStart` (once per session, before its first turn), then
    /// `UserPromptSubmit`: the prompt as the model gets it, or the turn
    /// fails (`step_limit`) and the prompt is not kept.
    pub(super) async fn submitted(&self, prompt: String) -> Result<String, Stop> {
        let custom = &self.settings.custom;
        if custom.hooks.is_empty() {
            return Ok(prompt);
        }
        let started = custom.started.get_or_try_init(|| async {
            let input = Input::SessionStart {
                source: custom.source,
            };
            let hooked = self.hooks(Event::SessionStart, None, None, &input).await?;
            Ok::<_, Stop>(hooked.map(|h| h.outcome.context).unwrap_or_default())
        });
        started.await?;
        let input = Input::UserPromptSubmit { prompt: &prompt };
        let Some(hooked) = self
            .hooks(Event::UserPromptSubmit, None, None, &input)
            .await?
        else {
            return Ok(prompt);
        };
        let outcome = hooked.outcome;
        if matches!(outcome.decision, Decision::Block | Decision::Deny) {
            return Err(Stop::Failed(
                FailureCode::StepLimit,
                format!(
                    "a UserPromptSubmit hook blocked this prompt; it was not sent: {}",
                    outcome.reason.unwrap_or_default()
                ),
            ));
        }
        if outcome.context.is_empty() {
            return Ok(prompt);
        }
        Ok(format!(
            "{prompt}\n\n<hook-context>\n{}\n</hook-context>",
            outcome.context.join("\n")
        ))
    }

    /// `PreToolUse` for one call that passed the tool and mode checks,
    /// then the permission rules (`crate::permissions`).
    pub(super) async fn pre_tool_hooks(
        &self,
        call: &ToolCall,
        tool: &Tool,
        arguments: &Value,
    ) -> Result<Gate, Stop> {
        // A call that stays in the sandbox: only such a call may skip its
        // approval (`unsandboxed: true`, an MCP tool, any command with the
        // sandbox off never does: a hook of the user's may run a script
        // the model can rewrite, and a rule is text the model can match).
        let enforced = self.settings.sandbox.is_some();
        let contained = matches!(tool.risk(), Risk::Read | Risk::Write)
            || tool.sandboxed(arguments, enforced) == Some(true);
        let input = Input::PreToolUse {
            tool: &call.name,
            arguments,
        };
        let mut gate = Gate::default();
        if let Some(hooked) = self
            .hooks(Event::PreToolUse, Some(&call.name), Some(&call.id), &input)
            .await?
        {
            let outcome = hooked.outcome;
            let reason = outcome.reason.clone();
            gate.context = outcome.context;
            match outcome.decision {
                Decision::Deny | Decision::Block => {
                    gate.denied = Some(format!(
                        "error: a PreToolUse hook blocked this call: {}",
                        reason.unwrap_or_else(|| "no reason given".into())
                    ));
                    return Ok(gate);
                }
                Decision::Ask => {
                    gate.ask = true;
                    gate.reason = reason;
                }
                Decision::Allow => {
                    // A repository hook's `allow` skips nothing the
                    // user's `auto_approve` asks.
                    gate.allowed = contained && !hooked.repository_allow;
                    gate.reason = reason;
                }
                Decision::None => {}
            }
        }
        self.permission_rules(call, arguments, contained, &mut gate);
        Ok(gate)
    }

    /// The rules the `allowed-tools` of the command this turn runs grant
    /// it (`inline::grant`).
    fn granted(&self) -> Vec<scv_hooks::Rule> {
        let Some(grant) = self.settings.custom.grant_of(&self.prompt) else {
            return Vec::new();
        };
        (grant.rules.iter())
            .filter_map(|r| scv_hooks::Rule::parse(r).ok())
            .collect()
    }

    /// What the permission rules say of the call, on top of the hooks'.
    fn permission_rules(
        &self,
        call: &ToolCall,
        arguments: &Value,
        contained: bool,
        gate: &mut Gate,
    ) {
        let permissions = &self.settings.custom.permissions;
        let granted = self.granted();
        if permissions.is_empty() && granted.is_empty() {
            return;
        }
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let places = scv_hooks::Places {
            cwd: &self.settings.cwd,
            home: home.as_deref(),
        };
        let verdict = permissions.check(&call.name, arguments, &places, contained);
        let verdict = verdict.or_else(|| {
            let mode = scv_hooks::Mode::All;
            let rule = (granted.iter()).find(|r| r.matches(&call.name, arguments, &places, mode));
            rule.filter(|_| contained)
                .map(|r| Verdict::Allow(format!("`{}` (the command's allowed-tools)", r.as_str())))
        });
        match verdict {
            Some(Verdict::Deny(rule)) => {
                gate.denied = Some(format!(
                    "error: the permission rule {rule} denies this call"
                ));
            }
            Some(Verdict::Ask(rule)) => {
                gate.ask = true;
                gate.allowed = false;
                gate.reason
                    .get_or_insert(format!("the permission rule {rule} asks"));
            }
            Some(Verdict::Allow(rule)) if !gate.ask => {
                gate.allowed = true;
                gate.reason
                    .get_or_insert(format!("allowed by the permission rule {rule}"));
            }
            _ => {}
        }
    }

    /// `PostToolUse`: what the hooks say to the model about the result.
    pub(super) async fn post_tool_hooks(
        &self,
        call: &ToolCall,
        arguments: &Value,
        output: &ToolOutput,
    ) -> Result<Vec<String>, Stop> {
        let input = Input::PostToolUse {
            tool: &call.name,
            arguments,
            success: output.success,
            output: &output.output,
        };
        let Some(hooked) = self
            .hooks(Event::PostToolUse, Some(&call.name), Some(&call.id), &input)
            .await?
        else {
            return Ok(Vec::new());
        };
        let outcome = hooked.outcome;
        let mut notes = Vec::new();
        if let Some(reason) = outcome
            .reason
            .filter(|_| outcome.decision == Decision::Block)
        {
            notes.push(format!("[PostToolUse hook] {reason}"));
        }
        notes.extend(outcome.context);
        Ok(notes)
    }

    /// The model would end the turn: the reason a `Stop` hook sends it
    /// back, or `None` to end it — no hook blocked, or one blocked more
    /// than [`MAX_STOP_HOOK_ROUNDS`] times (`rounds`: this turn's so far),
    /// when the turn ends with its answer and the user is told.
    pub(super) async fn stop_round(&self, rounds: &mut u32) -> Result<Option<String>, Stop> {
        let Some(reason) = self.stop_hooks(*rounds > 0).await? else {
            self.idle_notification().await;
            return Ok(None);
        };
        *rounds += 1;
        if *rounds > MAX_STOP_HOOK_ROUNDS {
            self.stop_hook_gave_up(&reason).await?;
            self.idle_notification().await;
            return Ok(None);
        }
        Ok(Some(reason))
    }

    /// The session's own turn has its answer: `Notification` hooks
    /// (`idle_prompt`, as Claude Code names SCV waiting for the next
    /// prompt) are told before `turn.completed` (a subagent's end tells
    /// nobody: its parent goes on). What they decide is ignored.
    async fn idle_notification(&self) {
        if self.child.is_some() || self.settings.custom.hooks.is_empty() {
            return;
        }
        let input = Input::Notification {
            message: "SCV is waiting for your input",
            notification_type: "idle_prompt",
        };
        let _ = self
            .hooks(Event::Notification, Some("idle_prompt"), None, &input)
            .await;
    }

    /// A Stop hook blocked the end more than [`MAX_STOP_HOOK_ROUNDS`]
    /// times: the turn ends with its answer, and the user hears why
    /// (`hook.message`, or the server's log).
    async fn stop_hook_gave_up(&self, reason: &str) -> Result<(), Stop> {
        let event = if self.child.is_some() {
            Event::SubagentStop
        } else {
            Event::Stop
        };
        let message = format!(
            "a {} hook kept the turn from ending {MAX_STOP_HOOK_ROUNDS} times; the turn ended anyway (the most SCV allows), its last reason: {reason}",
            event.as_str()
        );
        tracing::warn!("{message}");
        self.emit(EventBody::HookMessage(HookMessage {
            event: event.as_str().to_string(),
            hook: format!("{} hooks", event.as_str()),
            message,
            blocked: false,
            call_id: None,
        }))
        .await
    }

    /// `Stop`: the reason to keep going when a hook blocks the end.
    async fn stop_hooks(&self, active: bool) -> Result<Option<String>, Stop> {
        // A subagent's end is `SubagentStop`, as in Claude Code.
        let (event, input) = if self.child.is_some() {
            let input = Input::SubagentStop {
                stop_hook_active: active,
            };
            (Event::SubagentStop, input)
        } else {
            let input = Input::Stop {
                stop_hook_active: active,
            };
            (Event::Stop, input)
        };
        let Some(hooked) = self.hooks(event, None, None, &input).await? else {
            return Ok(None);
        };
        let outcome = hooked.outcome;
        Ok((outcome.decision == Decision::Block)
            .then(|| outcome.reason.unwrap_or_else(|| "no reason given".into())))
    }

    /// `PreCompact`, before the history is summarized.
    pub(super) async fn pre_compact_hooks(&self) -> Result<(), Stop> {
        let input = Input::PreCompact {
            trigger: "auto",
            custom_instructions: "",
        };
        self.hooks(Event::PreCompact, None, None, &input).await?;
        Ok(())
    }
}
