//! The hook events SCV fires, by Claude Code's names.

use std::fmt;

/// A point in a session where hooks run. The names are Claude Code's
/// (`hook_event_name` in the input, the keys of `hooks` in hooks.json).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Event {
    /// "Runs after Claude creates tool parameters and before processing the
    /// tool call."
    PreToolUse,
    /// "Runs immediately after a tool completes successfully." (SCV also
    /// runs it after a failed call; the input says `success: false`.)
    PostToolUse,
    /// "Runs when the user submits a prompt, before Claude processes it."
    UserPromptSubmit,
    /// "Runs when the main Claude Code agent has finished responding."
    Stop,
    /// "Runs when a Claude Code subagent (Task tool call) has finished
    /// responding." (SCV: a `task` call's child session.)
    SubagentStop,
    /// "Runs when Claude Code starts a new session or resumes an existing
    /// session."
    SessionStart,
    /// "Runs when a Claude Code session ends."
    SessionEnd,
    /// "Runs before Claude Code is about to run a compact operation."
    PreCompact,
    /// "Runs when Claude Code sends notifications": SCV fires it when it
    /// waits for the user's approval (`notification_type`
    /// `permission_prompt`).
    Notification,
    /// "Runs when a Claude Code subagent is spawned" (SCV: a `task`
    /// call's child session, as it starts).
    SubagentStart,
}

impl Event {
    /// Every event, in the order hooks.json lists are kept.
    pub const ALL: [Event; 10] = [
        Event::PreToolUse,
        Event::PostToolUse,
        Event::UserPromptSubmit,
        Event::Stop,
        Event::SubagentStop,
        Event::SessionStart,
        Event::SessionEnd,
        Event::PreCompact,
        Event::Notification,
        Event::SubagentStart,
    ];

    /// Claude Code's name of the event.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::PreToolUse => "PreToolUse",
            Event::PostToolUse => "PostToolUse",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Stop => "Stop",
            Event::SubagentStop => "SubagentStop",
            Event::SessionStart => "SessionStart",
            Event::SessionEnd => "SessionEnd",
            Event::PreCompact => "PreCompact",
            Event::Notification => "Notification",
            Event::SubagentStart => "SubagentStart",
        }
    }

    /// The event of that name (exactly, case-sensitive), if SCV has it.
    pub fn from_name(name: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether a matcher is tested against a tool name (PreToolUse and
    /// PostToolUse) rather than against some other word.
    pub fn is_tool_event(self) -> bool {
        matches!(self, Event::PreToolUse | Event::PostToolUse)
    }

    /// Where this event's hooks live in `Hooks` (the index in [`Event::ALL`]).
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
