//! Plan mode: the session looks before it touches anything. No `write`
//! tool is offered or run, `bash` runs only under the `read-only` sandbox
//! (never unsandboxed, never unconfined), MCP tools always ask. The mode
//! is shared by the session and its running turn, so a switch applies
//! from the turn's next step or call.

use crate::tools::registry::Tool;
use scv_protocol::{Mode, Risk};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};

/// A session's mode.
#[derive(Debug, Default)]
pub(crate) struct ModeCell(AtomicBool);

impl ModeCell {
    pub(crate) fn new(mode: Mode) -> ModeCell {
        ModeCell(AtomicBool::new(mode == Mode::Plan))
    }

    pub(crate) fn get(&self) -> Mode {
        if self.0.load(Ordering::Relaxed) {
            Mode::Plan
        } else {
            Mode::Default
        }
    }

    pub(crate) fn set(&self, mode: Mode) {
        self.0.store(mode == Mode::Plan, Ordering::Relaxed);
    }
}

/// What the system prompt says in plan mode.
pub(crate) const PLAN_PROMPT: &str = "\nPlan mode is on: investigate with tools that read (read_file, list_dir, search, and bash for commands that only look: they run in a read-only sandbox), then present a concrete plan — the files to change and how, the commands to run — and stop. Do not change files; tools that write are not available until the user leaves plan mode and asks you to carry out the plan.\n";

/// Why plan mode refuses this call without running it, if it does.
/// `sandboxed`: the session's commands run in an enforced sandbox.
pub(crate) fn refusal(
    name: &str,
    tool: &Tool,
    arguments: &Value,
    sandboxed: bool,
) -> Option<String> {
    if tool.risk() == Risk::Write {
        return Some(format!(
            "error: plan mode is on: `{name}` changes files and was not run. Present the plan instead; the user leaves plan mode to carry it out."
        ));
    }
    if tool.leaves_sandbox(arguments) {
        return Some(
            "error: plan mode is on: commands run only inside the read-only sandbox, so `unsandboxed` is refused. Run it without `unsandboxed`, or put it in the plan.".into(),
        );
    }
    if tool.sandboxed(arguments, sandboxed) == Some(false) {
        return Some(
            "error: plan mode is on: commands run only inside the read-only sandbox, and this session has none (the sandbox is off or this machine cannot enforce it). Put the command in the plan instead.".into(),
        );
    }
    None
}
