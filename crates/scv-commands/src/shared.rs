//! What the command, skill and agent loaders share: where a definition came
//! from ([`Scope`]), what is reported about a file that was skipped or
//! shadowed ([`Diagnostic`]), reading one file under the size cap, listing a
//! folder, a required frontmatter field, and cutting text at a char
//! boundary.

use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::frontmatter::{Parsed, Value};

/// A file larger than this is not read (a [`Diagnostic`] says so).
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Whether a command, skill or agent came from the workspace (`.scv/`,
/// `.claude/`) or from `SCV_HOME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Workspace,
    User,
}

impl Scope {
    /// Claude Code's label for the scope, as in "(project:frontend)".
    pub(crate) fn label(self) -> &'static str {
        match self {
            Scope::Workspace => "project",
            Scope::User => "user",
        }
    }
}

/// Something about one file: why it was skipped, or what it shadows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub path: PathBuf,
    /// 1-based, when the problem is on one line.
    pub line: Option<usize>,
    pub message: String,
}

impl Diagnostic {
    pub(crate) fn new(path: &Path, line: Option<usize>, message: impl Into<String>) -> Self {
        Diagnostic {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// The workspace a root of `scope` belongs to (`WORKSPACE/.scv/commands`
/// → `WORKSPACE`): what its files must stay inside.
pub(crate) fn confine_of(root: &Path, scope: Scope) -> Option<PathBuf> {
    match scope {
        Scope::Workspace => root.parent()?.parent().map(Path::to_path_buf),
        Scope::User => None,
    }
}

/// Whether `path`, links resolved, is inside `confine`. A repository's
/// command, skill or agent may link anywhere; reading `~/.aws/credentials`
/// into a prompt because a repository said so would leak it to the model.
pub(crate) fn check_inside(path: &Path, confine: Option<&Path>) -> std::io::Result<()> {
    let Some(confine) = confine else {
        return Ok(());
    };
    let (real, root) = (fs::canonicalize(path)?, fs::canonicalize(confine)?);
    if real.starts_with(&root) {
        return Ok(());
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        format!(
            "it leads outside the workspace (to {}); a workspace's commands, skills and agents are read only from inside it",
            real.display()
        ),
    ))
}

/// Reads a regular file (a symlink to one is fine, inside `confine` when
/// given) of at most [`MAX_FILE_BYTES`] that is valid UTF-8.
pub(crate) fn read_text(path: &Path, confine: Option<&Path>) -> Result<String, Diagnostic> {
    let unreadable = |e: std::io::Error| Diagnostic::new(path, None, format!("cannot read: {e}"));
    check_inside(path, confine)
        .map_err(|e| Diagnostic::new(path, None, format!("{e}; skipped")))?;
    let meta = fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(Diagnostic::new(path, None, "not a regular file; skipped"));
    }
    let too_big = |len: u64| {
        Diagnostic::new(
            path,
            None,
            format!("{len} bytes, over the {MAX_FILE_BYTES}-byte limit; skipped"),
        )
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::new();
    fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        Diagnostic::new(
            path,
            Some(line),
            format!("not valid UTF-8 (byte {valid}); skipped"),
        )
    })
}

/// The frontmatter field `key`, which a `what` ("skill", "agent") must have:
/// its value, trimmed, and its line. Missing, empty or not one value: the
/// [`Diagnostic`] that skips the file.
pub(crate) fn required(
    parsed: &Parsed<'_>,
    key: &str,
    path: &Path,
    what: &str,
) -> Result<(String, usize), Diagnostic> {
    let Some(field) = parsed.get(key) else {
        // No line of its own; line 1 is where the frontmatter starts.
        return Err(Diagnostic::new(
            path,
            Some(1),
            format!("the frontmatter has no `{key}`, which is required; {what} skipped"),
        ));
    };
    match &field.value {
        Value::Str(s) if !s.trim().is_empty() => Ok((s.trim().to_owned(), field.line)),
        Value::Str(_) => Err(Diagnostic::new(
            path,
            Some(field.line),
            format!("`{key}` is empty; {what} skipped"),
        )),
        _ => Err(Diagnostic::new(
            path,
            Some(field.line),
            format!("`{key}` must be a single value; {what} skipped"),
        )),
    }
}

/// One entry of a folder being scanned.
pub(crate) struct Entry {
    pub(crate) path: PathBuf,
    pub(crate) name: String,
    pub(crate) kind: EntryKind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    Dir,
    /// A symlink to a folder.
    LinkedDir,
    /// Anything else: a dangling link, a FIFO, a socket, ...
    Other,
}

/// The entries of `dir` sorted by name, without hidden ones (`.git`, ...)
/// and names that are not UTF-8. `Ok(None)`: `dir` does not exist.
pub(crate) fn list_dir(dir: &Path) -> Result<Option<Vec<Entry>>, Diagnostic> {
    let read = match fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            return Err(Diagnostic::new(dir, None, "not a folder; ignored"));
        }
        Err(e) => {
            return Err(Diagnostic::new(
                dir,
                None,
                format!("cannot read folder: {e}"),
            ))
        }
    };
    let mut entries = Vec::new();
    for entry in read.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let kind = match entry.file_type() {
            Ok(t) if t.is_dir() => EntryKind::Dir,
            Ok(t) if t.is_file() => EntryKind::File,
            Ok(t) if t.is_symlink() => match fs::metadata(&path) {
                Ok(m) if m.is_dir() => EntryKind::LinkedDir,
                Ok(m) if m.is_file() => EntryKind::File,
                _ => EntryKind::Other,
            },
            _ => EntryKind::Other,
        };
        entries.push(Entry { path, name, kind });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Some(entries))
}

/// `text` if it fits in `max_bytes`, else its longest prefix that ends at a
/// char boundary and leaves room for "…", followed by "…" (so the result is
/// at most `max_bytes` long).
pub(crate) fn cut(text: &str, max_bytes: usize) -> String {
    const ELLIPSIS: &str = "…";
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let mut end = max_bytes.saturating_sub(ELLIPSIS.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ELLIPSIS}", text[..end].trim_end())
}

/// Runs of whitespace (newlines included) as one space, trimmed: a
/// description on one line.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_char_boundaries() {
        assert_eq!(cut("short", 10), "short");
        // "é" is 2 bytes; 10 bytes minus 3 for "…" leaves 7: "abcdeé" is 7.
        assert_eq!(cut("abcdeéfghij", 10), "abcdeé…");
        // 6 would split "é" (bytes 5..7): back to 5.
        assert_eq!(cut("abcdeéfghij", 9), "abcde…");
        assert!(cut("ééééééé", 8).len() <= 8);
    }

    #[test]
    fn diagnostic_display() {
        let d = Diagnostic::new(Path::new("/a/b.md"), Some(3), "bad");
        assert_eq!(d.to_string(), "/a/b.md:3: bad");
        let d = Diagnostic::new(Path::new("/a/b.md"), None, "bad");
        assert_eq!(d.to_string(), "/a/b.md: bad");
    }
}
