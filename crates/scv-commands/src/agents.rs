//! Subagent definitions (Claude Code's agent files): `*.md` files directly in
//! an agents folder, frontmatter then a body that is the subagent's system
//! prompt.
//!
//! Claude Code documents ("Create custom subagents") `name` (required, a
//! unique identifier in lowercase letters and hyphens), `description`
//! (required: when to delegate to the subagent), `tools` (optional, a
//! comma-separated string or a list; all of the parent's tools when
//! omitted) and `model` (optional: `inherit`, an alias such as `sonnet`, or
//! a model id), and more keys (`color`, `permissionMode`, `skills`,
//! `hooks`, ...) that are accepted and ignored here. So here:
//!
//! - no frontmatter, malformed frontmatter, a missing or empty `name` or
//!   `description`, a `name` outside a skill's rules (lowercase `a-z`,
//!   digits and single hyphens, at most 64 characters: the name is what the
//!   model passes to pick the subagent), `tools` that is neither a string
//!   nor a list, `model` that is not one value, an empty body (a subagent
//!   without a system prompt has no instructions), or a file over the cap:
//!   skipped, with a [`Diagnostic`];
//! - a `name` that differs from the file stem: a [`Diagnostic`], and the
//!   agent is loaded under its `name` (the name, not the file, is what
//!   identifies a subagent);
//! - `tools:` with nothing after it (YAML's null) or `tools: ""` is as if
//!   absent: the parent's tools; `tools: []` is no tools.
//!
//! SCV adds `sandbox`: `read-only` asks that the subagent run read-only
//! ([`Agent::read_only`]). It is the only value; anything else (a typo, a
//! Codex-style `workspace-write`) skips the file, since loading it without
//! the sandbox its author asked for would give it more than was meant.
//!
//! Only `AGENTS_ROOT/*.md` is looked at: subfolders are not entered, other
//! files are ignored. A file that is a symlink is read (inside the
//! workspace, for a workspace root); each file is opened once and read from
//! that descriptor (see [`crate::open`]).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::frontmatter::{self, Value};
use crate::open::Opened;
use crate::shared::{self, Diagnostic, EntryKind, Scope};
use crate::skills;

/// At most this many agents are loaded; past it, a [`Diagnostic`] and the
/// rest are skipped.
pub const MAX_AGENTS: usize = 64;
/// Folder entries looked at per root.
const MAX_ENTRIES_PER_ROOT: usize = 10_000;
/// The one `sandbox` value there is.
const READ_ONLY: &str = "read-only";

/// One subagent definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Agent {
    pub name: String,
    /// When the model should use it, on one line.
    pub description: String,
    /// As written (trimmed, empty items dropped, in order); `None`: the
    /// parent's tools.
    pub tools: Option<Vec<String>>,
    /// As written (trimmed); `None` when absent or empty.
    pub model: Option<String>,
    /// `sandbox: read-only` was asked for.
    pub read_only: bool,
    /// The body, trimmed: the subagent's system prompt.
    pub prompt: String,
    pub path: PathBuf,
    pub scope: Scope,
}

/// Loads the agents of `roots`, in order: the first definition of a name
/// wins and each later one is a shadowed [`Diagnostic`].
pub(crate) fn load(roots: &[(PathBuf, Scope)], diagnostics: &mut Vec<Diagnostic>) -> Vec<Agent> {
    let mut agents: Vec<Agent> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for (root, scope) in roots {
        let base = match shared::open_root(root, *scope) {
            Ok(Some(base)) => base,
            Ok(None) => continue,
            Err(d) => {
                diagnostics.push(d);
                continue;
            }
        };
        let entries = match shared::list_dir(&base, root) {
            Ok(Some(entries)) => entries,
            Ok(None) => continue,
            Err(d) => {
                diagnostics.push(d);
                continue;
            }
        };
        for (i, entry) in entries.into_iter().enumerate() {
            if i >= MAX_ENTRIES_PER_ROOT {
                diagnostics.push(Diagnostic::new(
                    root,
                    None,
                    format!("more than {MAX_ENTRIES_PER_ROOT} entries; the rest are not read"),
                ));
                break;
            }
            // A folder (even one named `x.md`) is not entered; a dangling
            // link is nothing to read.
            let Some(stem) = entry.name.strip_suffix(".md") else {
                continue;
            };
            if !matches!(entry.kind, EntryKind::File | EntryKind::Link) {
                continue;
            }
            let opened = match base.open_file(&entry.path) {
                Ok(Opened::Dir) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                opened => opened,
            };
            if agents.len() >= MAX_AGENTS {
                diagnostics.push(Diagnostic::new(
                    &entry.path,
                    None,
                    format!("more than {MAX_AGENTS} agents; this and the rest are skipped"),
                ));
                return agents;
            }
            let text = match opened
                .map_err(|e| shared::unopened(&entry.path, &e))
                .and_then(|opened| shared::read_opened(opened, &entry.path))
            {
                Ok(text) => text,
                Err(d) => {
                    diagnostics.push(d);
                    continue;
                }
            };
            let agent = match parse(&text, stem, &entry.path, *scope, diagnostics) {
                Ok(agent) => agent,
                Err(d) => {
                    diagnostics.push(d);
                    continue;
                }
            };
            if let Some(&winner) = by_name.get(&agent.name) {
                diagnostics.push(Diagnostic::new(
                    &entry.path,
                    None,
                    format!(
                        "the agent `{}` is already defined by {}; this one is shadowed",
                        agent.name,
                        agents[winner].path.display()
                    ),
                ));
                continue;
            }
            by_name.insert(agent.name.clone(), agents.len());
            agents.push(agent);
        }
    }
    agents
}

/// Reads one agent file: `Err` skips it; warnings go to `diagnostics`.
fn parse(
    text: &str,
    stem: &str,
    path: &Path,
    scope: Scope,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Agent, Diagnostic> {
    let parsed = frontmatter::parse(text).map_err(|e| {
        Diagnostic::new(path, Some(e.line), format!("{}; agent skipped", e.message))
    })?;
    if parsed.fields.is_none() {
        let message = "no frontmatter (an agent file starts with `---`, then `name:` and `description:`); agent skipped";
        return Err(Diagnostic::new(path, Some(1), message));
    }
    let (name, name_line) = shared::required(&parsed, "name", path, "agent")?;
    if let Some(problem) = skills::name_problem(&name) {
        return Err(Diagnostic::new(
            path,
            Some(name_line),
            format!("the name `{name}` {problem}; agent skipped"),
        ));
    }
    let (description, _) = shared::required(&parsed, "description", path, "agent")?;
    let tools = match parsed.get("tools") {
        None => None,
        Some(field) => match &field.value {
            Value::Str(s) if s.trim().is_empty() => None,
            Value::Str(s) => Some(items(s.split(','))),
            Value::List(list) => Some(items(list.iter().map(String::as_str))),
            Value::Map(_) => {
                return Err(Diagnostic::new(
                    path,
                    Some(field.line),
                    "`tools` must be a comma-separated string or a list; agent skipped",
                ))
            }
        },
    };
    let model = match parsed.get("model") {
        None => None,
        Some(field) => match &field.value {
            Value::Str(s) => Some(s.trim().to_owned()).filter(|s| !s.is_empty()),
            _ => {
                return Err(Diagnostic::new(
                    path,
                    Some(field.line),
                    "`model` must be a single value; agent skipped",
                ))
            }
        },
    };
    let read_only = match parsed.get("sandbox") {
        None => false,
        Some(field) => {
            let wrong = match &field.value {
                Value::Str(s) if s.trim() == READ_ONLY => None,
                Value::Str(s) if s.trim().is_empty() => Some("nothing".to_owned()),
                Value::Str(s) => Some(format!("`{}`", s.trim())),
                Value::List(_) | Value::Map(_) => Some("a list or a map".to_owned()),
            };
            if let Some(found) = wrong {
                return Err(Diagnostic::new(
                    path,
                    Some(field.line),
                    format!("`sandbox` must be `{READ_ONLY}` (the only sandbox there is), not {found}; agent skipped"),
                ));
            }
            true
        }
    };
    let prompt = parsed.body.trim();
    if prompt.is_empty() {
        return Err(Diagnostic::new(
            path,
            None,
            "the body (the subagent's system prompt) is empty; agent skipped",
        ));
    }
    if name != stem {
        diagnostics.push(Diagnostic::new(
            path,
            Some(name_line),
            format!(
                "the name `{name}` does not match the file name `{stem}.md` (loaded as `{name}`)"
            ),
        ));
    }
    Ok(Agent {
        name,
        description: shared::one_line(&description),
        tools,
        model,
        read_only,
        prompt: prompt.to_owned(),
        path: path.to_path_buf(),
        scope,
    })
}

/// Trimmed, empty ones dropped (`Read, , Grep,` is `Read`, `Grep`).
fn items<'a>(items: impl Iterator<Item = &'a str>) -> Vec<String> {
    items
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_as(stem: &str, text: &str) -> (Result<Agent, Diagnostic>, Vec<Diagnostic>) {
        let path = Path::new("/a").join(format!("{stem}.md"));
        let mut diags = Vec::new();
        let r = parse(text, stem, &path, Scope::User, &mut diags);
        (r, diags)
    }

    fn agent(text: &str) -> Agent {
        let (r, diags) = parse_as("x", text);
        assert!(diags.is_empty(), "{diags:?}");
        r.unwrap()
    }

    fn skip(text: &str) -> Diagnostic {
        let d = parse_as("x", text).0.unwrap_err();
        assert!(d.message.ends_with("; agent skipped"), "{d}");
        d
    }

    #[test]
    fn valid_agent() {
        let a = agent("---\nname: x\ndescription: >-\n  Reviews code.\n  Use after edits.\ncolor: blue\npermissionMode: plan\n---\n\nYou review code.\n\n");
        assert_eq!(a.name, "x");
        assert_eq!(a.description, "Reviews code. Use after edits.");
        assert_eq!((a.tools, a.model, a.read_only), (None, None, false));
        assert_eq!(a.prompt, "You review code.");
    }

    #[test]
    fn tools_as_a_string_or_a_list() {
        let tools = |t: &str| agent(&format!("---\nname: x\ndescription: d\n{t}\n---\nP")).tools;
        let expected = Some(vec!["Read".to_owned(), "Grep".into(), "Bash(git:*)".into()]);
        assert_eq!(tools("tools: Read, Grep ,, Bash(git:*),"), expected);
        assert_eq!(tools("tools: [Read, Grep, \"Bash(git:*)\"]"), expected);
        assert_eq!(
            tools("tools:\n  - Read\n  -\n  - Grep\n  - Bash(git:*)"),
            expected
        );
        assert_eq!(tools("tools: Read"), Some(vec!["Read".to_owned()]));
        assert_eq!(tools("tools: []"), Some(vec![]));
        assert_eq!(tools("tools:"), None);
        let d = skip("---\nname: x\ndescription: d\ntools:\n  a: b\n---\nP");
        assert_eq!(d.line, Some(4));
    }

    #[test]
    fn model_and_sandbox() {
        let a = |extra: &str| agent(&format!("---\nname: x\ndescription: d\n{extra}\n---\nP"));
        assert_eq!(a("model: inherit").model.as_deref(), Some("inherit"));
        assert_eq!(a("model: ' opus '").model.as_deref(), Some("opus"));
        assert_eq!(a("model: \"\"").model, None);
        assert!(a("sandbox: read-only").read_only);
        let d = skip("---\nname: x\ndescription: d\nsandbox: workspace-write\n---\nP");
        assert_eq!(d.line, Some(4));
        assert_eq!(
            d.message,
            "`sandbox` must be `read-only` (the only sandbox there is), not `workspace-write`; agent skipped"
        );
        let d = skip("---\nname: x\ndescription: d\nsandbox:\n---\nP");
        assert_eq!(d.line, Some(4));
        assert!(d.message.contains("not nothing"), "{d}");
        let d = skip("---\nname: x\ndescription: d\nsandbox:\n  - read-only\n---\nP");
        assert!(d.message.contains("not a list or a map"), "{d}");
        // Not a list key: `[read-only]` is text.
        let d = skip("---\nname: x\ndescription: d\nsandbox: [read-only]\n---\nP");
        assert!(d.message.contains("not `[read-only]`"), "{d}");
        assert_eq!(
            skip("---\nname: x\ndescription: d\nmodel:\n  - a\n---\nP").line,
            Some(4)
        );
    }

    #[test]
    fn skipped_with_their_line() {
        let cases: &[(&str, Option<usize>, &str)] = &[
            ("---\ndescription: d\n---\nP", Some(1), "no `name`"),
            ("---\nname: x\n---\nP", Some(1), "no `description`"),
            (
                "---\nname: x\ndescription: \"\"\n---\nP",
                Some(3),
                "`description` is empty",
            ),
            (
                "---\ndescription: d\nname: Reviewer\n---\nP",
                Some(3),
                "lowercase",
            ),
            ("---\nname: x\ndescription: d\n---\n \n\n", None, "body"),
            (
                "---\nname: x\ndescription: d\nnot a pair\n---\nP",
                Some(4),
                "expected `key: value`",
            ),
            ("---\nname: x\ndescription: d\n", Some(1), "never closed"),
            ("You review code.\n", Some(1), "no frontmatter"),
        ];
        for (text, line, message) in cases {
            let d = skip(text);
            assert_eq!(d.line, *line, "{text:?}: {d}");
            assert!(d.message.contains(message), "{text:?}: {d}");
        }
    }

    #[test]
    fn a_name_other_than_the_stem_warns_but_loads() {
        let (r, diags) = parse_as(
            "reviewer",
            "---\ndescription: d\nname: code-reviewer\n---\nP",
        );
        assert_eq!(r.unwrap().name, "code-reviewer");
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].line, Some(3));
        assert_eq!(
            diags[0].message,
            "the name `code-reviewer` does not match the file name `reviewer.md` (loaded as `code-reviewer`)"
        );
    }
}
