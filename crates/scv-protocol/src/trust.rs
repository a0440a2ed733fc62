//! Workspace trust (extension, capability `trust`): what a session's
//! workspace carries that could run or apply — hooks, MCP servers,
//! permission rules — and whether it may, on `session.started`; and the
//! request that trusts it. docs/PROTOCOL-EXTENSIONS.md describes each.

use serde::{Deserialize, Serialize};

/// `workspace.trust`: trust the session's workspace with its repository
/// configuration as it is now (as `scv trust DIR` does), and let the
/// session use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceTrustRequest {
    pub session_id: String,
}

/// A workspace's trust, on `session.started.trust` (only when the
/// workspace carries repository configuration) and `workspace.trusted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceTrust {
    /// The workspace (canonical).
    pub workspace: String,
    /// An entry of `trusted_workspaces` covers it.
    pub trusted: bool,
    /// Its repository configuration files.
    pub files: Vec<TrustFile>,
}

/// One repository configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustFile {
    /// Relative to the workspace (`.scv/hooks.json`, `.mcp.json`, …).
    pub path: String,
    /// `trusted` (it runs or applies), `untrusted` (the workspace is not
    /// trusted) or `changed` (changed or added since it was trusted).
    pub state: String,
    /// What trusting it enables, in words ("hooks: PreToolUse (2),
    /// SessionStart (1)").
    pub enables: Vec<String>,
}

impl WorkspaceTrust {
    /// Whether anything of it is skipped now (what a client asks about).
    pub fn asks(&self) -> bool {
        self.files.iter().any(|f| f.state != "trusted")
    }
}
