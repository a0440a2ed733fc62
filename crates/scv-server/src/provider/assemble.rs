//! Assembling one response from any wire's events: text and reasoning are
//! handed out as they come and accumulated; tool calls are built up by
//! slot. The protocol's caps hold here for every wire: assistant text
//! 1 MiB (`response_limit`), 32 tool calls and 256 KiB of arguments per call
//! (`tool_limit`). Reasoning text is capped like assistant text.

use super::errors::ProviderError;
use crate::model::{AssistantMessage, ProviderData, Text, ToolCall, Usage};
use compact_str::CompactString;
use scv_protocol::limits::{
    MAX_ASSISTANT_TEXT_BYTES, MAX_TOOL_ARGUMENT_BYTES, MAX_TOOL_CALLS_PER_RESPONSE,
};
use scv_protocol::FailureCode;
use std::collections::VecDeque;

/// What a response streams to the client as it comes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Delta {
    Text(CompactString),
    Reasoning(CompactString),
}

impl Delta {
    pub(crate) fn text(&self) -> &str {
        match self {
            Delta::Text(text) | Delta::Reasoning(text) => text,
        }
    }
}

/// How a response ended, as far as the turn acts on it; each wire maps
/// its own stop reasons here (most end [`End::Finished`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum End {
    /// The turn goes on with the message's tool calls, or ends with it.
    #[default]
    Finished,
    /// The model declined to answer (Anthropic `stop_reason: "refusal"`,
    /// a Responses `refusal` content part).
    Refused,
    /// The provider paused a long turn: the message goes back as the
    /// assistant's and the next request continues it (Anthropic
    /// `stop_reason: "pause_turn"`).
    Paused,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    provider_data: Option<ProviderData>,
}

#[derive(Debug, Default)]
pub(super) struct Assembler {
    text: String,
    reasoning: String,
    /// Reasoning state the wire needs back, as the wire's own JSON.
    provider_data: Option<ProviderData>,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    end: End,
    /// Deltas not yet handed out.
    pending: VecDeque<Delta>,
    /// The model produced something since the last look (resets the idle
    /// timer; comments, pings and empty deltas do not count).
    progress: bool,
}

impl Assembler {
    pub(super) fn text(&mut self, text: &str) -> Result<(), ProviderError> {
        if text.is_empty() {
            return Ok(());
        }
        if self.text.len() + text.len() > MAX_ASSISTANT_TEXT_BYTES {
            return Err(ProviderError::limit(
                FailureCode::ResponseLimit,
                format!("assistant text exceeded {MAX_ASSISTANT_TEXT_BYTES} bytes (the protocol's cap on one answer's text; not configurable)"),
            ));
        }
        self.text.push_str(text);
        self.progress = true;
        self.pending.push_back(Delta::Text(text.into()));
        Ok(())
    }

    pub(super) fn reasoning(&mut self, text: &str) -> Result<(), ProviderError> {
        if text.is_empty() {
            return Ok(());
        }
        if self.reasoning.len() + text.len() > MAX_ASSISTANT_TEXT_BYTES {
            return Err(ProviderError::limit(
                FailureCode::ResponseLimit,
                format!("reasoning text exceeded {MAX_ASSISTANT_TEXT_BYTES} bytes (the protocol's cap on one answer's reasoning; not configurable)"),
            ));
        }
        self.reasoning.push_str(text);
        self.progress = true;
        self.pending.push_back(Delta::Reasoning(text.into()));
        Ok(())
    }

    /// Keeps reasoning state to send back with this message.
    pub(super) fn provider_data(&mut self, data: ProviderData) {
        self.progress = true;
        self.provider_data = Some(data);
    }

    /// Keeps extra fields a provider put on call `slot`.
    pub(super) fn call_data(&mut self, slot: usize, data: ProviderData) {
        if let Some(call) = self.calls.get_mut(slot) {
            self.progress = true;
            call.provider_data = Some(data);
        }
    }

    /// The arguments of call `slot` so far.
    pub(super) fn call_arguments(&self, slot: usize) -> &str {
        self.calls.get(slot).map_or("", |c| c.arguments.as_str())
    }

    /// The number of calls so far.
    pub(super) fn calls(&self) -> usize {
        self.calls.len()
    }

    /// The id of call `slot`, once known.
    pub(super) fn call_id(&self, slot: usize) -> Option<&str> {
        self.calls
            .get(slot)
            .map(|c| c.id.as_str())
            .filter(|id| !id.is_empty())
    }

    /// Starts a new call; returns its slot.
    pub(super) fn new_call(&mut self) -> Result<usize, ProviderError> {
        if self.calls.len() >= MAX_TOOL_CALLS_PER_RESPONSE {
            return Err(ProviderError::limit(
                FailureCode::ToolLimit,
                format!("provider requested more than {MAX_TOOL_CALLS_PER_RESPONSE} tool calls in one response"),
            ));
        }
        self.calls.push(PartialCall::default());
        Ok(self.calls.len() - 1)
    }

    /// A fragment of call `slot` (from [`Assembler::new_call`]).
    pub(super) fn tool_call(
        &mut self,
        slot: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) -> Result<(), ProviderError> {
        let Some(call) = self.calls.get_mut(slot) else {
            return Ok(());
        };
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            self.progress = true;
            call.id = id.to_string();
        }
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            self.progress = true;
            // Some servers repeat the whole name on every fragment; others
            // split it. A repeat is not appended.
            if call.name != name {
                call.name.push_str(name);
            }
        }
        if let Some(arguments) = arguments.filter(|a| !a.is_empty()) {
            self.progress = true;
            if call.arguments.len() + arguments.len() > MAX_TOOL_ARGUMENT_BYTES {
                return Err(ProviderError::limit(
                    FailureCode::ToolLimit,
                    format!("tool call arguments exceeded {MAX_TOOL_ARGUMENT_BYTES} bytes"),
                ));
            }
            call.arguments.push_str(arguments);
        }
        Ok(())
    }

    pub(super) fn usage(&mut self, usage: Usage) {
        self.progress = true;
        self.usage = Some(usage);
    }

    pub(super) fn finish(&mut self, reason: &str) {
        self.progress = true;
        self.finish_reason = Some(reason.to_string());
    }

    pub(super) fn finish_reason(&self) -> Option<&str> {
        self.finish_reason.as_deref()
    }

    /// Records how the response ended (for the turn, beyond the finish
    /// reason's text).
    pub(super) fn end(&mut self, end: End) {
        self.end = end;
    }

    pub(super) fn ending(&self) -> End {
        self.end
    }

    /// The next delta to hand out.
    pub(super) fn next_delta(&mut self) -> Option<Delta> {
        self.pending.pop_front()
    }

    /// Whether the model produced anything since the last call.
    pub(super) fn take_progress(&mut self) -> bool {
        std::mem::take(&mut self.progress)
    }

    /// The assembled message, usage and finish reason.
    pub(super) fn into_parts(self) -> (AssistantMessage, Option<Usage>, Option<String>) {
        let tool_calls = self
            .calls
            .into_iter()
            .filter(|c| !c.name.is_empty() || !c.id.is_empty() || !c.arguments.is_empty())
            .map(|c| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{}", uuid::Uuid::new_v4().simple())
                } else {
                    c.id
                },
                name: c.name,
                arguments: Text::new(&c.arguments),
                provider_data: c.provider_data,
            })
            .collect();
        // The history keeps these for the session's life, as `Text`s of
        // exactly their size (not with the room streaming grew them).
        let held = |text: String| (!text.is_empty()).then(|| Text::new(&text));
        let message = AssistantMessage {
            text: held(self.text),
            tool_calls,
            reasoning: held(self.reasoning),
            provider_data: self.provider_data,
        };
        (message, self.usage, self.finish_reason)
    }
}
