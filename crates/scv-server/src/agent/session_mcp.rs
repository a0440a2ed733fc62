//! What a session keeps of its MCP servers beyond the shared hub: the
//! servers' questions waiting for its client, and the tools it loaded
//! through `mcp_tool_search`. Its turns (and their subagents') share it.

use super::elicit::Elicitations;
use super::Turn;
use crate::tools::tool_search::Loaded;
use std::sync::Arc;

#[derive(Clone)]
pub(crate) struct SessionMcp {
    pub elicitations: Arc<Elicitations>,
    pub tool_search: Arc<Loaded>,
}

impl SessionMcp {
    pub(crate) fn new() -> SessionMcp {
        SessionMcp {
            elicitations: Arc::new(Elicitations::new()),
            tool_search: Arc::default(),
        }
    }
}

impl Turn {
    /// What asks the session's client an MCP server's questions during
    /// this turn's calls (`None`: they are declined).
    pub(super) fn elicitor(&self) -> Option<scv_mcp::Elicitor> {
        self.session_mcp
            .elicitations
            .elicitor(self.sink.clone(), self.turn_id.clone())
    }

    /// Changes when the tools to offer may have: a server's tools, or a
    /// tool loaded by `mcp_tool_search`.
    pub(super) fn tools_version(&self) -> (u64, u64) {
        (self.mcp.version(), self.session_mcp.tool_search.version())
    }
}
