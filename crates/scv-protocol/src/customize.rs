//! Extensions that make a session the user's own: plan mode, custom
//! commands and skills, and what hooks have to say
//! (docs/PROTOCOL-EXTENSIONS.md, "Hooks, commands, skills and plan mode").

use serde::{Deserialize, Serialize};

/// A session's mode: `session.start.mode`, `session.configure.mode`, and on
/// `session.started` / `session.configured`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every tool, as approvals and the sandbox allow.
    #[default]
    Default,
    /// Looks before it touches: no `write` tool is offered or run, `bash`
    /// runs only under the `read-only` sandbox, MCP tools always ask.
    Plan,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Plan => "plan",
        }
    }
}

/// What a `/NAME` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommandKind {
    /// A custom command: a Markdown prompt template.
    Command,
    /// A skill: `/NAME` loads its instructions.
    Skill,
}

/// One custom command or skill the session offers as `/NAME`
/// (`session.started.commands`, capability `commands`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandInfo {
    pub name: String,
    pub kind: CommandKind,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument_hint: Option<String>,
    /// `workspace` or `user` (`$SCV_HOME`).
    pub scope: String,
}

/// `hook.message` (capability `hooks`): what a hook said or did that the
/// user should see — a blocked call or prompt, a non-blocking error, a
/// `systemMessage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookMessage {
    /// The hook event (`PreToolUse`, `Stop`, …).
    pub event: String,
    /// Names the hook: its command and the file it came from.
    pub hook: String,
    pub message: String,
    /// The hook blocked what it ran for (a call, a prompt, the end of a
    /// turn).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocked: bool,
    /// The tool call it ran for, on `PreToolUse` / `PostToolUse`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}
