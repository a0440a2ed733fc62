//! A session's MCP requests: `elicitation.resolve` (capability
//! `elicitation`) and a server's prompt run as a command
//! (`/mcp__SERVER__PROMPT args`).

use super::SessionHost;
use crate::session::reject::{invalid, Handled, Reject};
use std::sync::Arc;

impl SessionHost {
    /// `elicitation.resolve` (capability `elicitation`, granted:
    /// `dispatch`).
    pub(super) fn answer(&mut self, answer: scv_protocol::ElicitationResolve) -> Handled {
        // A subagent's questions wait with its root session's.
        let session_id = match self.child(&answer.session_id) {
            Some(child) => child.root,
            None => answer.session_id.as_str().into(),
        };
        let session = self.session(&session_id)?;
        session
            .mcp_state
            .elicitations
            .resolve(&answer.elicitation_id, answer.action, answer.content)
            .map_err(invalid)
    }
}

/// `prompt` as an MCP server's prompt run as a command, or `None` when it
/// is not one (`/mcp__SERVER__PROMPT args`).
pub(super) async fn prompt(
    own: Option<Arc<scv_mcp::Hub>>,
    shared: &crate::server::Shared,
    prompt: &str,
) -> Option<Result<String, Reject>> {
    let (server, name, args) = scv_mcp::prompt_command(prompt)?;
    // The session's own hub (it brought servers), else the daemon's.
    let hub = own.unwrap_or_else(|| shared.mcp.clone());
    hub.wait_started().await;
    // The connection waits for this: one bound for the whole of it.
    let got = tokio::time::timeout(scv_mcp::CONTENT_TIMEOUT, hub.get_prompt(server, name, args))
        .await
        .unwrap_or(Err(scv_mcp::CallError::TimedOut(scv_mcp::CONTENT_TIMEOUT)));
    Some(got.map_err(|err| invalid(format!("/mcp__{server}__{name}: {err}"))))
}
