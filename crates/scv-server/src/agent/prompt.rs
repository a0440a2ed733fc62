//! The system prompt: what SCV is, where it works, its tools and rules, and
//! the workspace's own AGENTS.md when there is one.

use std::fmt::Write as _;
use std::path::Path;

/// Most of AGENTS.md we include.
const MAX_AGENTS_MD_BYTES: usize = 64 * 1024;

pub fn system_prompt(workspace: &Path, tools_enabled: bool) -> String {
    let mut prompt = String::with_capacity(4096);
    let _ = writeln!(
        prompt,
        "You are SCV, a coding agent working for the user in a local workspace.\n\
         Workspace: {}\n",
        workspace.display()
    );
    if tools_enabled {
        prompt.push_str("You can act through these tools:\n");
        for (name, description) in crate::tools::catalogue() {
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
    prompt.push_str("\nAnswer concisely in Markdown.\n");
    if let Some(agents) = read_agents_md(workspace) {
        let _ = write!(prompt, "\nThe workspace's AGENTS.md says:\n\n{agents}\n");
    }
    prompt
}

fn read_agents_md(workspace: &Path) -> Option<String> {
    let bytes = std::fs::read(workspace.join("AGENTS.md")).ok()?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if text.len() > MAX_AGENTS_MD_BYTES {
        let mut cut = MAX_AGENTS_MD_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[AGENTS.md cut here]");
    }
    Some(text)
}
