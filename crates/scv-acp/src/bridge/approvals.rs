//! Permission requests: an SCV approval asked of the editor as
//! `session/request_permission` (answered by a session rule "Always
//! allow" added before, when one matches), and the editor's answer back.

use super::{Bridge, Command, ALLOW, ALWAYS, REJECT};
use crate::updates::MAX_TRACKED_CALLS;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse,
};
use agent_client_protocol::{Error, RequestCancellationHandle};
use scv_client::rules::{self, Call, Rule};
use scv_client::session::Approval;

/// A permission request in flight, and the rule "Always allow" adds.
pub(super) struct Asked {
    pub(super) request: RequestCancellationHandle,
    rule: Option<Rule>,
    /// The call, as rules see it: a rule added meanwhile may answer it.
    call: OwnedCall,
}

/// A [`Call`]'s fields, kept while its permission request is open.
struct OwnedCall {
    name: String,
    risk: &'static str,
    cwd: String,
    summary: String,
    arguments: serde_json::Value,
}

impl OwnedCall {
    fn of(approval: &Approval) -> OwnedCall {
        OwnedCall {
            name: approval.name.clone(),
            risk: approval.risk.as_str(),
            cwd: approval.cwd.clone(),
            summary: approval.summary.clone(),
            arguments: approval.arguments.clone(),
        }
    }

    fn call(&self) -> Call<'_> {
        Call {
            name: &self.name,
            risk: self.risk,
            cwd: &self.cwd,
            summary: &self.summary,
            arguments: &self.arguments,
        }
    }
}

impl Bridge {
    /// `approval.requested` → `session/request_permission`, answered in a
    /// task of the connection (the bridge never waits for the client). A
    /// subagent's is about the `task` call it runs in, and is answered
    /// with the child's session id (the session client's).
    pub(super) async fn ask(&mut self, session_id: String, approval: Approval) {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        // A rule "Always allow" added answers by itself.
        let call = Call {
            name: &approval.name,
            risk: approval.risk.as_str(),
            cwd: &approval.cwd,
            summary: &approval.summary,
            arguments: &approval.arguments,
        };
        if session.rules.find(&call).is_some() {
            if let Some(resolve) = session.client.resolve(&approval.approval_id, true) {
                let _ = self.send_request(&resolve).await;
            }
            return;
        }
        let rule = rules::propose(&call).ok();
        let owned = OwnedCall::of(&approval);
        let Approval {
            approval_id,
            call_id,
            name,
            summary,
            child_session,
            ..
        } = approval;
        if session.approvals.len() >= MAX_TRACKED_CALLS {
            tracing::warn!("too many permission requests at once; denying {call_id}");
            if let Some(resolve) = session.client.resolve(&approval_id, false) {
                let _ = self.send_request(&resolve).await;
            }
            return;
        }
        let tool_call = child_session
            .and_then(|child| {
                session
                    .subagents
                    .permission(&session.client, &child, &summary)
            })
            .unwrap_or_else(|| session.tools.permission(&call_id, &name, &summary));
        let mut options = vec![PermissionOption::new(
            ALLOW,
            "Allow",
            PermissionOptionKind::AllowOnce,
        )];
        if let Some(rule) = &rule {
            options.push(PermissionOption::new(
                ALWAYS,
                format!("Always allow {} in this session", rule.scope()),
                PermissionOptionKind::AllowAlways,
            ));
        }
        options.push(PermissionOption::new(
            REJECT,
            "Reject",
            PermissionOptionKind::RejectOnce,
        ));
        let request = RequestPermissionRequest::new(session_id.clone(), tool_call, options);
        let sent = self.cx.send_request(request);
        session.approvals.insert(
            approval_id.clone(),
            Asked {
                request: sent.cancellation_handle(),
                rule,
                call: owned,
            },
        );
        let commands = self.commands.clone();
        let task = async move {
            let answer = sent.block_task().await;
            let _ = commands
                .send(Command::Permission {
                    session_id,
                    approval_id,
                    answer,
                })
                .await;
            Ok(())
        };
        if let Err(err) = self.cx.spawn(task) {
            tracing::warn!("cannot wait for a permission answer: {err}");
        }
    }

    /// Anything but "Allow" (a rejection, a cancelled request, an error)
    /// denies the call.
    pub(super) async fn permission(
        &mut self,
        session_id: String,
        approval_id: String,
        answer: Result<RequestPermissionResponse, Error>,
    ) {
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return;
        };
        let Some(asked) = session.approvals.remove(&approval_id) else {
            return; // the turn ended meanwhile
        };
        let chosen = match &answer {
            Ok(response) => match &response.outcome {
                RequestPermissionOutcome::Selected(selected) => Some(&*selected.option_id.0),
                _ => None,
            },
            Err(_) => None,
        };
        // The rule also answers the calls of this session still asking
        // (their requests are withdrawn).
        let mut answered_too = Vec::new();
        if let (Some(ALWAYS), Some(rule)) = (chosen, asked.rule) {
            let matching: Vec<String> = session
                .approvals
                .iter()
                .filter(|(_, other)| rule.matches(&other.call.call()))
                .map(|(id, _)| id.clone())
                .collect();
            for id in matching {
                if let Some(other) = session.approvals.remove(&id) {
                    let _ = other.request.cancel();
                    answered_too.extend(session.client.resolve(&id, true));
                }
            }
            session.rules.add(rule);
        }
        let approved = match &answer {
            Ok(_) => matches!(chosen, Some(ALLOW | ALWAYS)),
            Err(err) => {
                tracing::info!("permission request failed ({err}); denying the call");
                false
            }
        };
        if let Some(resolve) = session.client.resolve(&approval_id, approved) {
            let _ = self.send_request(&resolve).await;
        }
        for resolve in answered_too {
            let _ = self.send_request(&resolve).await;
        }
    }
}
