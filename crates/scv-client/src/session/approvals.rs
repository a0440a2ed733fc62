//! The one approval type every front end shows and resolves by id: the
//! session's own calls and its subagents' alike, with the arguments of
//! the call asked about (from its `tool.proposed`), and the calls this
//! client denied, so a denied call's failure can be shown as denied.

use scv_protocol::{Event, EventBody, Risk};
use std::collections::VecDeque;

/// Proposed calls remembered (per session and its children together);
/// past it the oldest is forgotten and an approval of it has no
/// arguments.
const MAX_PROPOSED: usize = 256;
/// Denied calls remembered until their `tool.completed`.
const MAX_DENIED: usize = 256;

/// An approval the server waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub approval_id: String,
    pub call_id: String,
    pub name: String,
    pub risk: Risk,
    pub cwd: String,
    pub summary: String,
    pub sandboxed: Option<bool>,
    /// The call's arguments, from its `tool.proposed` (`Null` when the
    /// call asked about is not the one proposed, as a subagent's approval
    /// asked on its `task` call for a client without `subagents`).
    pub arguments: serde_json::Value,
    /// The request id of the prompt whose turn asks.
    pub request_id: Option<String>,
    /// A subagent's call (capability `subagents`): the child session that
    /// asks, which the answer names; `None`: this session's own call.
    pub child_session: Option<String>,
    /// That subagent's description, to label the prompt with.
    pub subagent: Option<String>,
}

impl Approval {
    /// The approval an `approval.requested` event asks for.
    pub(super) fn of(
        event: &Event,
        arguments: serde_json::Value,
        child_session: Option<String>,
        subagent: Option<String>,
    ) -> Option<Approval> {
        let EventBody::ApprovalRequested {
            approval_id,
            call_id,
            name,
            risk,
            cwd,
            summary,
            sandboxed,
        } = &event.body
        else {
            return None;
        };
        Some(Approval {
            approval_id: approval_id.clone(),
            call_id: call_id.clone(),
            name: name.clone(),
            risk: *risk,
            cwd: cwd.clone(),
            summary: summary.clone(),
            sandboxed: *sandboxed,
            arguments,
            request_id: event.request_id.clone(),
            child_session,
            subagent,
        })
    }

    /// What session rules look at.
    pub fn call(&self) -> crate::rules::Call<'_> {
        crate::rules::Call {
            name: &self.name,
            risk: self.risk.as_str(),
            cwd: &self.cwd,
            summary: &self.summary,
            arguments: &self.arguments,
        }
    }

    /// The session whose call this is: the child's, else `own`.
    pub fn session<'a>(&'a self, own: &'a str) -> &'a str {
        self.child_session.as_deref().unwrap_or(own)
    }
}

/// A call: the session it belongs to (`None`: the client's own) and its id.
type CallKey = (Option<String>, String);

/// Proposed calls' arguments and denied calls, per session.
#[derive(Debug, Default)]
pub(super) struct Calls {
    proposed: VecDeque<(CallKey, String, serde_json::Value)>,
    denied: VecDeque<CallKey>,
}

impl Calls {
    pub(super) fn proposed(
        &mut self,
        session: Option<&str>,
        call_id: &str,
        name: &str,
        arguments: &serde_json::Value,
    ) {
        if self.proposed.len() >= MAX_PROPOSED {
            self.proposed.pop_front();
        }
        self.proposed.push_back((
            (session.map(str::to_string), call_id.to_string()),
            name.to_string(),
            arguments.clone(),
        ));
    }

    /// The arguments of call `call_id` of `session`, when it is a call of
    /// tool `name`: an approval asked on a `task` call about a child's
    /// tool names that tool, and the task's arguments are not that
    /// call's, so no rule may read them.
    pub(super) fn arguments(
        &self,
        session: Option<&str>,
        call_id: &str,
        name: Option<&str>,
    ) -> serde_json::Value {
        self.proposed
            .iter()
            .rev()
            .find(|((s, id), proposed, _)| {
                s.as_deref() == session && id == call_id && name.is_none_or(|n| n == proposed)
            })
            .map(|(_, _, arguments)| arguments.clone())
            .unwrap_or(serde_json::Value::Null)
    }

    pub(super) fn denied(&mut self, session: Option<&str>, call_id: &str) {
        if self.denied.len() >= MAX_DENIED {
            self.denied.pop_front();
        }
        self.denied
            .push_back((session.map(str::to_string), call_id.to_string()));
    }

    /// Whether this client denied call `call_id` of `session`; forgotten
    /// once asked (the call has ended).
    pub(super) fn was_denied(&mut self, session: Option<&str>, call_id: &str) -> bool {
        let key = (session.map(str::to_string), call_id.to_string());
        match self.denied.iter().position(|k| *k == key) {
            Some(index) => {
                self.denied.remove(index);
                true
            }
            None => false,
        }
    }

    /// A session's turn ended: its proposed calls go.
    pub(super) fn turn_ended(&mut self, session: Option<&str>) {
        self.proposed
            .retain(|((s, _), _, _)| s.as_deref() != session);
    }
}
