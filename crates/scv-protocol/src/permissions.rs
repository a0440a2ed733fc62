//! Kept permission rules (extension, capability `permissions`): the
//! Claude Code-style `permissions.allow|ask|deny` rules of the user's
//! settings files and of the session's workspace, listed, kept ("always
//! allow" made lasting) and removed. docs/PROTOCOL-EXTENSIONS.md describes
//! each.

use serde::{Deserialize, Serialize};

/// Where a kept rule is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleScope {
    /// `$SCV_HOME/settings.json`: every project of this user.
    User,
    /// The workspace's `.claude/settings.local.json` (a trusted workspace
    /// only).
    Project,
}

/// `permissions.list`: the rules that apply to the session's new turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionsList {
    pub session_id: String,
}

/// `permissions.keep` / `permissions.remove`: one `allow` rule in Claude
/// Code's syntax (`Bash(cargo test:*)`), added to or removed from the
/// settings file of `scope`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionsEdit {
    pub session_id: String,
    pub rule: String,
    pub scope: RuleScope,
}

/// `permissions.listed`: the answer to each of the three requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionsListed {
    pub rules: Vec<PermissionRule>,
}

/// One rule of a settings file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRule {
    pub rule: String,
    /// `allow`, `ask` or `deny`.
    pub kind: String,
    /// The settings file it is in.
    pub path: String,
    /// Whether `permissions.keep` / `permissions.remove` write that file
    /// (`$SCV_HOME/settings.json`, the workspace's
    /// `.claude/settings.local.json`); `None`: another file, read only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<RuleScope>,
}
