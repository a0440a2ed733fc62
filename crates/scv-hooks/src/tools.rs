//! SCV's tool names and Claude Code's.
//!
//! A hooks.json written for Claude Code names Claude Code's tools (`Bash`,
//! `Edit|Write`); one written for SCV may name SCV's (`bash`, `edit_file`).
//! A matcher matches a call when it matches either name. MCP tools are
//! `mcp__SERVER__TOOL` in both.

/// SCV's tool and the Claude Code tools that correspond to it. The first
/// Claude Code name is the one a hook is told (`tool_name`); the rest only
/// match (`MultiEdit` is an edit too).
const NAMES: [(&str, &[&str]); 11] = [
    ("bash", &["Bash"]),
    ("read_file", &["Read"]),
    ("write_file", &["Write"]),
    ("edit_file", &["Edit", "MultiEdit"]),
    ("list_dir", &["Glob"]),
    ("search", &["Grep"]),
    // Claude Code's subagent tool was `Task`, later also called `Agent`.
    ("task", &["Task", "Agent"]),
    ("skill", &["Skill"]),
    // A background `bash`'s output and its end (`KillShell` was `KillBash`).
    ("bash_output", &["BashOutput"]),
    ("bash_kill", &["KillShell", "KillBash"]),
    ("web_fetch", &["WebFetch"]),
];

/// Claude Code's name of SCV's tool `scv` (`bash` → `Bash`); an MCP tool or
/// a tool Claude Code has no counterpart of keeps its own name.
pub fn claude_tool_name(scv: &str) -> &str {
    claude_names(scv).first().copied().unwrap_or(scv)
}

/// Every Claude Code name a matcher may use for SCV's tool `scv` (empty for
/// MCP tools and tools Claude Code lacks).
pub(crate) fn claude_names(scv: &str) -> &'static [&'static str] {
    NAMES
        .iter()
        .find(|(name, _)| *name == scv)
        .map_or(&[], |(_, cc)| cc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scv_tool_has_its_claude_code_name() {
        assert_eq!(claude_tool_name("bash"), "Bash");
        assert_eq!(claude_tool_name("read_file"), "Read");
        assert_eq!(claude_tool_name("write_file"), "Write");
        assert_eq!(claude_tool_name("edit_file"), "Edit");
        assert_eq!(claude_tool_name("list_dir"), "Glob");
        assert_eq!(claude_tool_name("search"), "Grep");
        assert_eq!(claude_tool_name("task"), "Task");
        assert_eq!(claude_tool_name("skill"), "Skill");
        assert_eq!(claude_tool_name("bash_output"), "BashOutput");
        assert_eq!(claude_tool_name("bash_kill"), "KillShell");
        assert_eq!(claude_names("bash_kill"), &["KillShell", "KillBash"]);
        assert_eq!(claude_tool_name("web_fetch"), "WebFetch");
    }

    #[test]
    fn mcp_and_unknown_tools_keep_their_names() {
        assert_eq!(
            claude_tool_name("mcp__memory__create_entities"),
            "mcp__memory__create_entities"
        );
        assert_eq!(claude_tool_name("mcp_tool_search"), "mcp_tool_search");
        // Claude Code's names are not SCV's: no mapping backwards.
        assert_eq!(claude_tool_name("Bash"), "Bash");
        assert!(claude_names("Bash").is_empty());
    }

    #[test]
    fn multiedit_is_an_edit() {
        assert_eq!(claude_names("edit_file"), &["Edit", "MultiEdit"]);
    }
}
