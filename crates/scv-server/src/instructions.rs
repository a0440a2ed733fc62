//! The instruction files a session's system prompt carries, in this order
//! (more general first, the workspace's own last):
//!
//! 1. the user's `~/.claude/CLAUDE.md` (`$CLAUDE_CONFIG_DIR/CLAUDE.md`);
//! 2. `CLAUDE.md` and `.claude/CLAUDE.md` of each folder from the
//!    repository root (the nearest folder above the workspace holding
//!    `.git`, at most [`MAX_PARENT_LEVELS`] up; none: the workspace alone)
//!    down to the workspace;
//! 3. in the workspace, then, `CLAUDE.local.md` and `AGENTS.md`.
//!
//! A `CLAUDE.md` may import files with `@path` (Claude Code's syntax:
//! relative to the importing file, `~/` the home, or absolute; not inside
//! code spans or fenced blocks; at most [`MAX_IMPORT_DEPTH`] hops); an
//! imported file follows the file that imports it. Instruction files are
//! prompts, not code: they load whether or not the workspace is trusted —
//! but a repository's file and what it imports are read beneath the
//! repository root only (a link or an `@../../..` leading elsewhere is not
//! followed), so a cloned repository cannot pull the user's files into the
//! prompt; the user's own file imports from beneath the home.
//!
//! Bounded: each file at most [`MAX_FILE_BYTES`] read and
//! [`MAX_KEPT_BYTES`] kept, [`MAX_FILES`] files and [`MAX_TOTAL_BYTES`]
//! in all; what is over is cut, and says so.

use crate::text::cut;
use crate::tools::beneath::Workspace;
use std::path::{Path, PathBuf};

/// The largest instruction file read at all.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most of one file kept.
pub(crate) const MAX_KEPT_BYTES: usize = 64 * 1024;
/// The most of all files together kept.
pub(crate) const MAX_TOTAL_BYTES: usize = 192 * 1024;
/// The most files (imports included).
pub(crate) const MAX_FILES: usize = 32;
/// How many imports deep an import may be ("a maximum depth of 5 hops").
pub(crate) const MAX_IMPORT_DEPTH: usize = 5;
/// How far above the workspace the repository root is looked for.
pub(crate) const MAX_PARENT_LEVELS: usize = 16;

/// One instruction file, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Instruction {
    pub path: PathBuf,
    pub text: String,
    /// The file whose `@path` brought it in.
    pub imported_by: Option<PathBuf>,
}

/// What the session's instruction files say, in order.
pub(crate) fn load(workspace: &Path) -> Vec<Instruction> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());
    let mut reader = Reader {
        home: home.clone(),
        out: Vec::new(),
        total: 0,
    };
    if let Some(dir) = crate::claude::user_dir() {
        // The user's own file imports from beneath the home (or its own
        // folder when that is elsewhere).
        let root = match &home {
            Some(home) if dir.starts_with(home) => home.clone(),
            _ => dir.clone(),
        };
        reader.file(&root, &dir.join("CLAUDE.md"), None, 0);
    }
    let root = repository_root(workspace);
    let mut folders: Vec<&Path> = workspace
        .ancestors()
        .take_while(|dir| dir.starts_with(&root))
        .collect();
    folders.reverse();
    for folder in folders {
        for name in ["CLAUDE.md", ".claude/CLAUDE.md"] {
            reader.file(&root, &folder.join(name), None, 0);
        }
    }
    reader.file(&root, &workspace.join("CLAUDE.local.md"), None, 0);
    // AGENTS.md: read as before (no imports: it is not Claude Code's).
    reader.file(&root, &workspace.join("AGENTS.md"), None, MAX_IMPORT_DEPTH);
    reader.out
}

/// The nearest folder at or above `workspace` holding `.git`; the
/// workspace when none is.
fn repository_root(workspace: &Path) -> PathBuf {
    workspace
        .ancestors()
        .take(MAX_PARENT_LEVELS + 1)
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .unwrap_or(workspace)
        .to_path_buf()
}

struct Reader {
    home: Option<PathBuf>,
    out: Vec<Instruction>,
    total: usize,
}

impl Reader {
    /// Reads `path` (beneath `root`) and, `depth` hops deep, what it
    /// imports.
    fn file(&mut self, root: &Path, path: &Path, by: Option<&Path>, depth: usize) {
        if self.out.len() >= MAX_FILES
            || self.total >= MAX_TOTAL_BYTES
            || self.out.iter().any(|i| i.path == path)
        {
            return;
        }
        let Some(text) = read_beneath(root, path) else {
            return;
        };
        let room = (MAX_TOTAL_BYTES - self.total).min(MAX_KEPT_BYTES);
        let text = if text.len() > room {
            format!(
                "{}\n[{} cut here: instruction files are kept to {MAX_KEPT_BYTES} bytes each, {MAX_TOTAL_BYTES} in all]",
                cut(&text, room),
                path.display()
            )
        } else {
            text
        };
        self.total += text.len();
        let imports = if depth < MAX_IMPORT_DEPTH {
            imports(&text)
        } else {
            Vec::new()
        };
        self.out.push(Instruction {
            path: path.to_path_buf(),
            text,
            imported_by: by.map(Path::to_path_buf),
        });
        let dir = path.parent().unwrap_or(root);
        for import in imports {
            let target = if let Some(rest) = import.strip_prefix("~/") {
                match &self.home {
                    Some(home) => home.join(rest),
                    None => continue,
                }
            } else {
                dir.join(&import)
            };
            self.file(root, &normalize(&target), Some(path), depth + 1);
        }
    }
}

/// The text of a regular file at `path`, opened beneath `root` (links
/// leading outside are refused at the open); `None` when it is missing,
/// outside, not a regular file or over [`MAX_FILE_BYTES`].
pub(crate) fn read_beneath(root: &Path, path: &Path) -> Option<String> {
    let ws = Workspace::open(root).ok()?;
    let rel = ws.relative(path.to_str()?).ok()?;
    let bytes = ws.read_small(&rel, MAX_FILE_BYTES)?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The `@path` imports of a CLAUDE.md: a word starting with `@` after the
/// start of a line or a space, outside fenced blocks and code spans, that
/// looks like a path (it has a `/` or a `.`).
pub(crate) fn imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans out: every other backquoted stretch.
        let outside: String = line
            .split('`')
            .enumerate()
            .map(|(i, part)| if i % 2 == 0 { part } else { " " })
            .collect::<Vec<_>>()
            .join(" ");
        for word in outside.split_whitespace() {
            let Some(path) = word.strip_prefix('@') else {
                continue;
            };
            let path = path.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']']);
            if !path.is_empty()
                && (path.contains('/') || path.contains('.'))
                && out.len() < MAX_FILES
            {
                out.push(path.to_string());
            }
        }
    }
    out
}

/// `path` with `.` and `..` resolved by name.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_words_outside_code() {
        let text = "See @docs/a.md and @README.md.\nMail me@example.com or @someone\n`@not/this.md`\n```\n@nor/this.md\n```\n@~/.claude/mine.md";
        assert_eq!(
            imports(text),
            ["docs/a.md", "README.md", "~/.claude/mine.md"]
        );
    }

    fn reader() -> Reader {
        Reader {
            home: None,
            out: Vec::new(),
            total: 0,
        }
    }

    #[test]
    fn imports_stop_at_five_hops_and_cycles_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for i in 0..8 {
            std::fs::write(
                root.join(format!("f{i}.md")),
                format!("file {i} @f{}.md @f0.md", i + 1),
            )
            .unwrap();
        }
        let mut r = reader();
        r.file(&root, &root.join("f0.md"), None, 0);
        let names: Vec<String> = r
            .out
            .iter()
            .map(|i| i.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            ["f0.md", "f1.md", "f2.md", "f3.md", "f4.md", "f5.md"]
        );
        assert_eq!(
            r.out[1].imported_by.as_deref(),
            Some(root.join("f0.md").as_path())
        );
    }

    #[test]
    fn files_are_cut_to_their_bound_and_the_total_holds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let big = "x".repeat(MAX_KEPT_BYTES * 2);
        for i in 0..6 {
            std::fs::write(root.join(format!("b{i}.md")), &big).unwrap();
        }
        let mut r = reader();
        for i in 0..6 {
            r.file(&root, &root.join(format!("b{i}.md")), None, 0);
        }
        assert!(r.out[0].text.len() < MAX_KEPT_BYTES + 300);
        assert!(r.out[0].text.contains("cut here"));
        let total: usize = r.out.iter().map(|i| i.text.len()).sum();
        assert!(total <= MAX_TOTAL_BYTES + 6 * 300, "{total}");
        assert!(r.out.len() < 6);
    }
}
