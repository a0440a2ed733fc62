//! Custom slash commands: Markdown files in a commands folder, named by
//! their file stem, with optional frontmatter.
//!
//! Subfolders namespace a command without changing its name, as Claude Code
//! documents: ".claude/commands/frontend/component.md" is invoked as
//! `/component` and is described with "(project:frontend)" (a folder under
//! `SCV_HOME` says "user:"). Folders are read to [`MAX_DEPTH`] levels below
//! the root, a folder's own files before its subfolders, names in byte
//! order, so on a name clash inside one root the shallowest, then first,
//! file wins. Symlinked files are read; symlinked folders are not entered
//! (a link back up would loop). Folders are listed from a descriptor and
//! each file is opened once and read from it (see [`crate::open`]).

use std::collections::{HashMap, VecDeque};
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::frontmatter::{self, Value};
use crate::open::{self, Base, Opened};
use crate::shared::{self, Diagnostic, EntryKind, Scope};

/// At most this many commands are loaded; past it, a [`Diagnostic`] and the
/// rest are skipped.
pub const MAX_COMMANDS: usize = 500;
/// Subfolder levels read below a commands root.
const MAX_DEPTH: usize = 3;
/// Folder entries looked at per root, so a huge tree is not walked.
const MAX_ENTRIES_PER_ROOT: usize = 10_000;
/// A description taken from the body's first line is cut to this.
const MAX_DESCRIPTION_BYTES: usize = 160;

/// One custom slash command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Command {
    /// The file stem: what follows `/`.
    pub name: String,
    /// The frontmatter's `description`, else the body's first non-empty line
    /// (without leading `#`s), cut; followed by "(project:NAMESPACE)" when the
    /// file is in a subfolder.
    pub description: String,
    pub argument_hint: Option<String>,
    /// The text after the frontmatter, trimmed: the prompt template.
    pub body: String,
    pub path: PathBuf,
    pub scope: Scope,
    /// `allowed-tools`: Claude Code permission rules (a list, or one
    /// string of comma-separated rules), as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// `model`: the model its turn asks for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Whether `name` can be typed as `/name`: `[A-Za-z0-9_:.-]+`.
pub(crate) fn is_command_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.' | '-'))
}

/// Loads the commands of `roots`, in order: the first definition of a name
/// wins and each later one is a shadowed [`Diagnostic`].
pub(crate) fn load(roots: &[(PathBuf, Scope)], diagnostics: &mut Vec<Diagnostic>) -> Vec<Command> {
    let mut loader = Loader {
        commands: Vec::new(),
        by_name: HashMap::new(),
        diagnostics,
        full: false,
    };
    for (root, scope) in roots {
        if loader.full {
            break;
        }
        match shared::open_root(root, *scope) {
            Ok(Some(base)) => loader.root(&base, root, *scope),
            Ok(None) => {}
            Err(d) => loader.diagnostics.push(d),
        }
    }
    loader.commands
}

struct Loader<'a> {
    commands: Vec<Command>,
    by_name: HashMap<String, usize>,
    diagnostics: &'a mut Vec<Diagnostic>,
    full: bool,
}

impl Loader<'_> {
    /// Every folder is listed, and every file opened, with `base`.
    fn root(&mut self, base: &Base, root: &Path, scope: Scope) {
        let mut queue: VecDeque<(PathBuf, Vec<String>)> = VecDeque::new();
        queue.push_back((root.to_path_buf(), Vec::new()));
        let mut seen_entries = 0;
        while let Some((dir, namespace)) = queue.pop_front() {
            let entries = match shared::list_dir(base, &dir) {
                Ok(Some(entries)) => entries,
                Ok(None) => continue,
                Err(d) => {
                    self.diagnostics.push(d);
                    continue;
                }
            };
            for entry in entries {
                seen_entries += 1;
                if seen_entries > MAX_ENTRIES_PER_ROOT {
                    self.diagnostics.push(Diagnostic::new(
                        root,
                        None,
                        format!("more than {MAX_ENTRIES_PER_ROOT} entries; the rest are not read"),
                    ));
                    return;
                }
                let markdown = entry.name.ends_with(".md");
                match entry.kind {
                    EntryKind::File if markdown => {
                        let opened = base.open_file(&entry.path);
                        self.file(&entry.path, &entry.name, &namespace, scope, opened);
                        if self.full {
                            return;
                        }
                    }
                    EntryKind::Dir if namespace.len() < MAX_DEPTH => {
                        let mut sub = namespace.clone();
                        sub.push(entry.name);
                        queue.push_back((entry.path, sub));
                    }
                    EntryKind::Dir => self.diagnostics.push(Diagnostic::new(
                        &entry.path,
                        None,
                        format!("more than {MAX_DEPTH} folder levels deep; not read"),
                    )),
                    // Opened once: a folder is not followed, a file is read
                    // from what was opened.
                    EntryKind::Link => match base.open_file(&entry.path) {
                        Ok(Opened::Dir) => self.diagnostics.push(Diagnostic::new(
                            &entry.path,
                            None,
                            "a symlink to a folder; not followed",
                        )),
                        // Dangling: nothing to read.
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                        Err(e) if !markdown && open::is_outside(&e) => self.diagnostics.push(
                            Diagnostic::new(&entry.path, None, format!("{e}; not followed")),
                        ),
                        opened if markdown => {
                            self.file(&entry.path, &entry.name, &namespace, scope, opened);
                            if self.full {
                                return;
                            }
                        }
                        _ => {}
                    },
                    EntryKind::File | EntryKind::Other => {}
                }
            }
        }
    }

    /// A command file, already opened (`opened`).
    fn file(
        &mut self,
        path: &Path,
        file_name: &str,
        namespace: &[String],
        scope: Scope,
        opened: io::Result<Opened>,
    ) {
        let name = file_name.strip_suffix(".md").unwrap_or(file_name);
        if !is_command_name(name) {
            self.diagnostics.push(Diagnostic::new(
                path,
                None,
                format!(
                    "`{name}` cannot be typed as /NAME (a name is letters, digits, `_`, `:`, `.`, `-`); skipped"
                ),
            ));
            return;
        }
        if let Some(&winner) = self.by_name.get(name) {
            let winner = &self.commands[winner].path;
            self.diagnostics.push(Diagnostic::new(
                path,
                None,
                format!(
                    "/{name} is already defined by {}; this one is shadowed",
                    winner.display()
                ),
            ));
            return;
        }
        if self.commands.len() >= MAX_COMMANDS {
            self.diagnostics.push(Diagnostic::new(
                path,
                None,
                format!("more than {MAX_COMMANDS} commands; this and the rest are skipped"),
            ));
            self.full = true;
            return;
        }
        let text = match opened
            .map_err(|e| shared::unopened(path, &e))
            .and_then(|opened| shared::read_opened(opened, path))
        {
            Ok(text) => text,
            Err(d) => return self.diagnostics.push(d),
        };
        match parse(name, &text, path, namespace, scope) {
            Ok(command) => {
                self.by_name
                    .insert(command.name.clone(), self.commands.len());
                self.commands.push(command);
            }
            Err(d) => self.diagnostics.push(d),
        }
    }
}

fn parse(
    name: &str,
    text: &str,
    path: &Path,
    namespace: &[String],
    scope: Scope,
) -> Result<Command, Diagnostic> {
    let parsed = frontmatter::parse(text).map_err(|e| {
        Diagnostic::new(
            path,
            Some(e.line),
            format!("{}; command skipped", e.message),
        )
    })?;
    let body = parsed.body.trim().to_owned();
    let string_field = |key: &str| -> Result<Option<String>, Diagnostic> {
        match parsed.get(key) {
            None => Ok(None),
            Some(field) => match &field.value {
                Value::Str(s) => Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty())),
                Value::List(items) if key == "argument-hint" => Ok(Some(items.join(" "))),
                _ => Err(Diagnostic::new(
                    path,
                    Some(field.line),
                    format!("`{key}` must be a single value; command skipped"),
                )),
            },
        }
    };
    let description = match string_field("description")? {
        Some(d) => shared::one_line(&d),
        None => first_line(&body),
    };
    let argument_hint = string_field("argument-hint")?;
    // `model` is a plain string in Claude Code; checked so a typo'd list is
    // reported. `allowed-tools` may be a string or a list (both parsed above).
    let model = string_field("model")?;
    let allowed_tools = match parsed.get("allowed-tools").map(|f| &f.value) {
        Some(Value::List(items)) => items.iter().map(|i| i.trim().to_owned()).collect(),
        Some(Value::Str(s)) => split_rules(s),
        _ => Vec::new(),
    };
    let description = if namespace.is_empty() {
        description
    } else {
        let label = format!("({}:{})", scope.label(), namespace.join(":"));
        if description.is_empty() {
            label
        } else {
            format!("{description} {label}")
        }
    };
    Ok(Command {
        name: name.to_owned(),
        description,
        argument_hint,
        body,
        path: path.to_path_buf(),
        scope,
        allowed_tools,
        model,
    })
}

/// `Bash(git add:*), Bash(git status:*), Read` as its rules: split at the
/// commas outside parentheses.
fn split_rules(text: &str) -> Vec<String> {
    let mut rules = Vec::new();
    let (mut depth, mut current) = (0usize, String::new());
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                rules.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    rules.push(current);
    rules
        .into_iter()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .collect()
}

/// The first non-empty line, without Markdown heading marks, cut.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    shared::cut(line, MAX_DESCRIPTION_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(text: &str) -> Command {
        parse("x", text, Path::new("/r/x.md"), &[], Scope::Workspace).unwrap()
    }

    #[test]
    fn description_from_frontmatter_or_first_line() {
        let c = parse_ok("---\ndescription: \"Review a PR\"\nargument-hint: [pr] [prio]\nallowed-tools:\n  - Read\nfuture-key: kept silently\n---\n\nReview PR $1.\n");
        assert_eq!(c.description, "Review a PR");
        assert_eq!(c.argument_hint.as_deref(), Some("[pr] [prio]"));
        assert_eq!(c.body, "Review PR $1.");
        assert_eq!(c.allowed_tools, ["Read"]);
        let c = parse_ok(
            "---\nallowed-tools: Bash(git add:*), Bash(git status:*), Read\nmodel: haiku\n---\nx",
        );
        assert_eq!(
            c.allowed_tools,
            ["Bash(git add:*)", "Bash(git status:*)", "Read"]
        );
        assert_eq!(c.model.as_deref(), Some("haiku"));
        let c = parse_ok("\n\n# Optimize this code\n\nMore.\n");
        assert_eq!(c.description, "Optimize this code");
        assert_eq!(c.argument_hint, None);
        let long = format!("{}\n", "word ".repeat(100));
        assert!(parse_ok(&long).description.len() <= MAX_DESCRIPTION_BYTES);
    }

    #[test]
    fn namespace_label() {
        let ns = ["frontend".to_owned()];
        let c = parse(
            "component",
            "Make one.",
            Path::new("/r/frontend/component.md"),
            &ns,
            Scope::Workspace,
        )
        .unwrap();
        assert_eq!(c.description, "Make one. (project:frontend)");
        let c = parse(
            "component",
            "",
            Path::new("/h/a/b/component.md"),
            &["a".into(), "b".into()],
            Scope::User,
        )
        .unwrap();
        assert_eq!(c.description, "(user:a:b)");
    }

    #[test]
    fn malformed_frontmatter_is_a_diagnostic_with_its_line() {
        let d = parse(
            "x",
            "---\ndescription: a\nnot a pair\n---\n",
            Path::new("/r/x.md"),
            &[],
            Scope::Workspace,
        )
        .unwrap_err();
        assert_eq!(d.line, Some(3));
        assert!(d.message.contains("command skipped"), "{d}");
        let d = parse(
            "x",
            "---\ndescription:\n  - a\n---\n",
            Path::new("/r/x.md"),
            &[],
            Scope::Workspace,
        )
        .unwrap_err();
        assert_eq!(d.line, Some(2));
    }

    #[test]
    fn names() {
        for ok in ["review", "a_b", "ns:x", "v1.2", "fix-it", "X"] {
            assert!(is_command_name(ok), "{ok}");
        }
        for bad in ["", "a b", "usr/bin", "é", "a$"] {
            assert!(!is_command_name(bad), "{bad}");
        }
    }
}
