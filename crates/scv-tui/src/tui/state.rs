//! What the server has told the UI, as plain data: a call waiting for
//! approval (and later the session, the turn, the daemon's MCP servers).
//!
//! No behaviour and no imports from the rest of the UI, so any module
//! (the approval prompt, the rules, the overlays, the view) can read it
//! without depending on the App or on each other.

/// One `approval.requested`, with the arguments its `tool.proposed` had.
#[derive(Debug, Clone)]
pub struct PendingApproval {
    pub approval_id: String,
    pub call_id: String,
    pub name: String,
    pub risk: String,
    pub cwd: String,
    pub summary: String,
    pub arguments: serde_json::Value,
    /// A command's place: inside the sandbox or not (`None`: not a command,
    /// or an old server).
    pub sandboxed: Option<bool>,
}
