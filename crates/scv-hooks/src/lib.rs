//! Claude Code's hooks, for SCV: user commands that run at points of a
//! session (before and after a tool call, on a prompt, on stop, at session
//! start and end, before compaction) and can allow, deny, block, or add
//! context.
//!
//! This crate is the pure part, written to Claude Code's documentation
//! (<https://docs.anthropic.com/en/docs/claude-code/hooks>): parsing hooks.json
//! ([`Hooks`]), choosing the commands for an event ([`Hooks::matching`]), the
//! JSON a hook reads on stdin ([`input_json`]), and what a run means
//! ([`interpret`], [`combine`]). It spawns nothing: the server runs each
//! command itself, under its sandbox, with the input on stdin, captures at
//! most [`MAX_STDOUT_BYTES`] / [`MAX_STDERR_BYTES`], and hands the [`Run`]
//! back here.
//!
//! Module graph (no cycles): `event`, `tools` and `span` import nothing of
//! the crate; `matcher` imports `tools`; `rule` imports nothing of the
//! crate; `config` imports `event`, `matcher`, `rule`, `span`; `input` imports `event`, `tools`; `outcome` imports `config`,
//! `event`.

mod config;
mod event;
mod input;
mod matcher;
mod outcome;
mod rule;
mod span;
mod tools;

pub use config::{
    Condition, HookCommand, Hooks, LoadError, Origin, DEFAULT_TIMEOUT, MAX_FILE_BYTES, MAX_HOOKS,
    MAX_TIMEOUT_SECS,
};
pub use event::Event;
pub use input::{input_json, tool_input, Common, Input};
pub use outcome::{
    combine, interpret, Decision, Exit, Outcome, Run, MAX_CONTEXT_BYTES, MAX_MESSAGE_BYTES,
    MAX_STDERR_BYTES, MAX_STDOUT_BYTES,
};
pub use rule::{command_parts, Mode, Places, Rule, MAX_RULE_CHARS};
pub use tools::claude_tool_name;
