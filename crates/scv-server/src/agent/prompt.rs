//! The system prompt: what SCV is, where it works, its tools and rules, and
//! the instruction files (`CLAUDE.md`s, `AGENTS.md`: `crate::instructions`
//! says which, in what order).

use crate::model::ToolSpec;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// What a session adds to the system prompt.
#[derive(Debug, Default)]
pub(crate) struct Extras {
    /// Plan mode is on.
    pub plan: bool,
    /// The skill index (`scv_commands::Catalog::skill_index`).
    pub skills: Option<String>,
    /// What the `SessionStart` hooks added.
    pub context: Vec<String>,
    /// A subagent's role and instructions.
    pub subagent: Option<String>,
}

/// The system prompt for a turn in `workspace` with `tools` (none: a
/// session without tools). Reads the instruction files off the async
/// threads.
pub(crate) async fn system_prompt(
    workspace: PathBuf,
    tools: &[ToolSpec],
    extras: Extras,
) -> String {
    let catalogue: Vec<(String, String)> = tools
        .iter()
        .map(|t| (t.name.clone(), t.description.clone()))
        .collect();
    let built = crate::blocking::run(move || build(&workspace, &catalogue, &extras)).await;
    built.unwrap_or_default()
}

fn build(workspace: &Path, tools: &[(String, String)], extras: &Extras) -> String {
    let tools_enabled = !tools.is_empty();
    let mut prompt = String::with_capacity(4096);
    let _ = writeln!(
        prompt,
        "You are SCV, a coding agent working for the user in a local workspace.\n\
         Workspace: {}\n",
        workspace.display()
    );
    if tools_enabled {
        prompt.push_str("You can act through these tools:\n");
        for (name, description) in tools {
            let _ = writeln!(prompt, "- {name}: {description}");
        }
        prompt.push_str(
            "\nRules:\n\
             - Paths are relative to the workspace; nothing outside it can be read or written.\n\
             - The user approves each call that writes files or runs commands and may deny it; \
               when a call is denied, do not retry it unchanged — ask or take another way.\n\
             - Read before you edit; edit_file needs old_string to match the file exactly.\n\
             - Prefer small, verifiable steps; run the project's tests when you change code.\n\
             - Tool output may be cut in the middle when it is long.\n",
        );
    } else {
        prompt.push_str("No tools are available in this session: answer in text only.\n");
    }
    if extras.plan {
        prompt.push_str(super::plan::PLAN_PROMPT);
    }
    if let Some(index) = &extras.skills {
        let _ = write!(
            prompt,
            "\nSkills: instructions for particular tasks. When a task matches one, load it with the skill tool first.\n{index}\n"
        );
    }
    if let Some(subagent) = &extras.subagent {
        prompt.push_str(subagent);
    }
    prompt.push_str("\nAnswer concisely in Markdown.\n");
    for file in crate::instructions::load(workspace) {
        let text = &file.text;
        if file.path == workspace.join("AGENTS.md") {
            let _ = write!(prompt, "\nThe workspace's AGENTS.md says:\n\n{text}\n");
            continue;
        }
        let path = file.path.display();
        match &file.imported_by {
            Some(by) => {
                let by = by.display();
                let _ = write!(prompt, "\n{path} (imported by {by}) says:\n\n{text}\n");
            }
            None => {
                let _ = write!(prompt, "\nInstructions in {path} say:\n\n{text}\n");
            }
        }
    }
    for context in &extras.context {
        let _ = write!(prompt, "\nA SessionStart hook adds:\n\n{context}\n");
    }
    prompt
}
