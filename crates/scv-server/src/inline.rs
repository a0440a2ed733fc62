//! `/NAME args` for a session (`turn.start.command`): the catalog's
//! expansion (`scv_commands`), then, for a custom command, what Claude
//! Code does with its body:
//!
//! - ``!`cmd` ``: `cmd` runs as a `bash` call of the session and its output
//!   takes the place of the reference — only inside the sandbox, only when
//!   the command is the user's or its workspace is trusted, and only when
//!   the command's `allowed-tools` (or a permission `allow` rule) covers
//!   it, every part of it, as a rule covers a call
//!   (`Bash(git status:*)`). Anything else stays text, and a note after
//!   the prompt says why it did not run. At most [`MAX_RUNS`] a command,
//!   each with the session's `bash` timeout and output cap.
//! - `model:` picks the model of the command's turn (a Claude Code alias
//!   on another wire than Anthropic's keeps the session's model).
//! - `allowed-tools` also lets the command's turn make the calls its rules
//!   cover without asking — only calls that stay in the sandbox, and only
//!   for the user's commands or a trusted workspace's (the turn is found
//!   by its prompt, as expanded; the last 16 commands are kept).
//! - `@path`: the file (beneath the workspace: a link leading out is not
//!   followed; opened once) is attached after the prompt. At most
//!   [`MAX_FILES`] files, each cut to [`MAX_FILE_BYTES`].

use crate::agent::SessionSettings;
use crate::tools::{ToolContext, ToolError};
use scv_commands::Kind;
use serde_json::json;
use std::sync::Arc;

/// The most ``!`…` `` references run for one command.
pub(crate) const MAX_RUNS: usize = 8;
/// The most `@path` files one command attaches.
pub(crate) const MAX_FILES: usize = 16;
/// The most of one attached file kept.
pub(crate) const MAX_FILE_BYTES: usize = 64 * 1024;

/// What the user typed, as the model gets it; the error is for the user.
pub(crate) async fn expand(
    settings: Arc<SessionSettings>,
    mcp: &scv_mcp::Hub,
    prompt: String,
) -> Result<String, String> {
    let custom = settings.custom.clone();
    let found = crate::blocking::run(move || {
        let Some(e) = custom.catalog.expand(&prompt).map_err(|e| e.to_string())? else {
            // Not `/NAME args`: sent as written.
            return Ok::<_, String>((prompt, None));
        };
        let command = (e.kind == Kind::Command)
            .then(|| custom.catalog.command(&e.name).cloned())
            .flatten();
        Ok((e.prompt, command))
    })
    .await
    .map_err(|err| err.to_string())??;
    let (prompt, Some(command)) = found else {
        return Ok(found.0);
    };
    // A plugin's command names its folder `${CLAUDE_PLUGIN_ROOT}`.
    let plugin = (settings.custom.plugins.iter()).find(|p| command.path.starts_with(&p.root));
    let root = plugin.map(|p| p.root.display().to_string());
    let with_root = |text: &str| match &root {
        Some(root) => text.replace("${CLAUDE_PLUGIN_ROOT}", root),
        None => text.to_string(),
    };
    let prompt = with_root(&prompt);
    let mut command = command;
    command.allowed_tools = command.allowed_tools.iter().map(|r| with_root(r)).collect();
    let (prompt, notes) = run_references(&settings, mcp, &command, prompt).await;
    let prompt = attach_files(&settings, prompt).await;
    let prompt = if notes.is_empty() {
        prompt
    } else {
        format!("{prompt}\n\n{}", notes.join("\n"))
    };
    grant(&settings, &command, &prompt);
    Ok(prompt)
}

/// Keeps what the command grants the turn of `prompt`: its `model:`, and
/// what its `allowed-tools` allow (`agent::hooked`: without asking, inside
/// the sandbox only) when the command is the user's or its workspace
/// trusted. A model is a choice of prompt, not code: a repository's
/// command picks its model either way (budgets still hold).
fn grant(settings: &SessionSettings, command: &scv_commands::Command, prompt: &str) {
    let trusted = command.scope == scv_commands::Scope::User
        || settings.custom.trust.as_ref().is_some_and(|t| t.trusted);
    let rules = if trusted {
        command.allowed_tools.clone()
    } else {
        Vec::new()
    };
    let model = command.model.clone().filter(|m| m != "inherit");
    if rules.is_empty() && model.is_none() {
        return;
    }
    let mut grants = crate::sync::lock(&settings.custom.grants);
    grants.retain(|g| g.prompt != prompt);
    if grants.len() >= crate::customize::MAX_GRANTS {
        grants.pop_front();
    }
    grants.push_back(crate::customize::Grant {
        prompt: prompt.to_string(),
        rules,
        model,
    });
}

/// ``!`cmd` `` references of `prompt` replaced by their output where they
/// may run; notes for the rest.
async fn run_references(
    settings: &SessionSettings,
    mcp: &scv_mcp::Hub,
    command: &scv_commands::Command,
    prompt: String,
) -> (String, Vec<String>) {
    let references = references(&prompt);
    if references.is_empty() {
        return (prompt, Vec::new());
    }
    let rules: Vec<scv_hooks::Rule> = command
        .allowed_tools
        .iter()
        .filter_map(|r| scv_hooks::Rule::parse(r).ok())
        .collect();
    let trusted = command.scope == scv_commands::Scope::User
        || settings.custom.trust.as_ref().is_some_and(|t| t.trusted);
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let places = scv_hooks::Places {
        cwd: &settings.cwd,
        home: home.as_deref(),
    };
    let mut out = prompt.clone();
    let mut notes = Vec::new();
    for (i, (original, line)) in references.into_iter().enumerate() {
        let args = json!({ "command": line });
        let covered = rules
            .iter()
            .any(|r| r.matches("bash", &args, &places, scv_hooks::Mode::All))
            || matches!(
                settings
                    .custom
                    .permissions
                    .check("bash", &args, &places, true),
                Some(crate::permissions::Verdict::Allow(_))
            );
        let why_not = if i >= MAX_RUNS {
            Some(format!("a command runs at most {MAX_RUNS}"))
        } else if settings.sandbox.is_none() {
            Some("commands run outside a sandbox here, and `!` lines run only inside one".into())
        } else if !trusted {
            Some("it is a command of a workspace you have not trusted (`scv trust`)".into())
        } else if !covered {
            Some(
                "the command's `allowed-tools` does not allow it (e.g. `Bash(git status:*)`)"
                    .into(),
            )
        } else {
            None
        };
        if let Some(why) = why_not {
            let shown = crate::text::cut(line.lines().next().unwrap_or(""), 200);
            notes.push(format!("[SCV did not run `{shown}`: {why}]"));
            continue;
        }
        let output = run(settings, mcp, &line).await;
        out = out.replacen(&original, &output, 1);
    }
    (out, notes)
}

/// The ``!`…` `` references and ```` ```! ```` blocks of a body, in
/// order: each as written and the command it holds.
fn references(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        let fence = rest
            .match_indices("```!\n")
            .map(|(i, _)| i)
            .find(|&i| i == 0 || rest[..i].ends_with('\n'));
        let inline = rest.find("!`");
        match (fence, inline) {
            (Some(open), inline) if inline.is_none_or(|i| open < i) => {
                // ```!\nCOMMAND\n```
                let body_start = open + 5;
                let Some(close) = rest[body_start..].find("\n```") else {
                    break;
                };
                let end = body_start + close + 4;
                let body = rest[body_start..body_start + close].trim();
                if !body.is_empty() {
                    out.push((rest[open..end].to_string(), body.to_string()));
                }
                rest = &rest[end..];
            }
            (_, Some(start)) => {
                let after = &rest[start + 2..];
                let Some(end) = after.find('`') else {
                    break;
                };
                let line = after[..end].trim();
                if !line.is_empty() && !line.contains('\n') {
                    out.push((format!("!`{}`", &after[..end]), line.to_string()));
                }
                rest = &after[end + 1..];
            }
            _ => break,
        }
    }
    out
}

/// Runs `line` as the session's `bash` tool does, in its sandbox; its
/// output (without the "exit code: 0" line when it succeeded).
async fn run(settings: &SessionSettings, mcp: &scv_mcp::Hub, line: &str) -> String {
    let cancel = tokio_util::sync::CancellationToken::new();
    let plan = settings.plan();
    let ctx = ToolContext {
        workspace: &settings.cwd,
        scv_home: &settings.scv_home,
        bash_timeout: settings.limits.bash_timeout,
        bash_max_timeout: settings.limits.bash_max_timeout,
        max_output_bytes: settings.limits.tool_output_max_bytes,
        cancel: &cancel,
        sandbox: settings.sandbox_now(plan),
        env: &settings.tool_env,
        mcp,
        catalog: &settings.custom.catalog,
        background: &settings.background,
        web: &settings.limits.web,
        roots: &settings.roots,
        // A command's `!` line is bash: no MCP server asks anything.
        elicitor: None,
        traceparent: None,
    };
    match (crate::tools::bash::TOOL.run)(&json!({ "command": line }), &ctx).await {
        Ok(output) if output.success => output
            .output
            .trim_end()
            .trim_end_matches("[exit code: 0]")
            .trim_end()
            .to_string(),
        Ok(output) => output.output,
        Err(ToolError::Model(why) | ToolError::Internal(why)) => {
            format!("[`{line}` did not run: {why}]")
        }
    }
}

/// `prompt` with the files its `@path` words name attached after it.
async fn attach_files(settings: &SessionSettings, prompt: String) -> String {
    let paths: Vec<String> = crate::instructions::imports(&prompt)
        .into_iter()
        .filter(|p| !p.starts_with("~/"))
        .take(MAX_FILES)
        .collect();
    if paths.is_empty() {
        return prompt;
    }
    let workspace = settings.cwd.clone();
    let attached = crate::blocking::run(move || {
        let mut out = String::new();
        for rel in paths {
            let path = workspace.join(&rel);
            let Some(text) = crate::instructions::read_beneath(&workspace, &path) else {
                continue;
            };
            let text = crate::text::cut(&text, MAX_FILE_BYTES);
            out.push_str(&format!("\n\n<file path=\"{rel}\">\n{text}\n</file>"));
        }
        out
    })
    .await
    .unwrap_or_default();
    format!("{prompt}{attached}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_bang_backquoted() {
        let found = references("Status: !`git status`\nDiff: !`git diff HEAD` and `not this`");
        let lines: Vec<&str> = found.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(lines, ["git status", "git diff HEAD"]);
        assert_eq!(found[0].0, "!`git status`");
        assert!(references("plain ! and `code`").is_empty());
        let block = "Run:\n\n```!\n\"$R/setup.sh\" <<'E'\nargs\nE\n```\n\nThen !`ls`";
        let found = references(block);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].1, "\"$R/setup.sh\" <<'E'\nargs\nE");
        assert!(found[0].0.starts_with("```!") && found[0].0.ends_with("```"));
        assert_eq!(found[1].1, "ls");
    }
}
