//! What the command, skill and agent loaders share: where a definition came
//! from ([`Scope`]), what is reported about a file that was skipped or
//! shadowed ([`Diagnostic`]), reading one file under the size cap and
//! listing a folder (both opened once, see [`crate::open`]), a required
//! frontmatter field, and cutting text at a char boundary.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType};
use serde::Serialize;

use crate::frontmatter::{Parsed, Value};
use crate::open::{self, Base, Opened, ReadError};

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

/// How the files of `root` (a root of `scope`) are opened: beneath its
/// workspace (`WORKSPACE/.scv/commands` → `WORKSPACE`) for a workspace
/// root, anywhere for the user's. `Ok(None)`: the workspace does not exist.
pub(crate) fn open_root(root: &Path, scope: Scope) -> Result<Option<Base>, Diagnostic> {
    let workspace = match scope {
        Scope::Workspace => match workspace_of(root) {
            Some(workspace) => Some(workspace),
            None => {
                return Err(Diagnostic::new(
                    root,
                    None,
                    "no workspace above it; ignored",
                ))
            }
        },
        Scope::User => None,
    };
    match Base::new(workspace.as_deref()) {
        Ok(base) => Ok(Some(base)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Diagnostic::new(
            root,
            None,
            format!("cannot open the workspace: {e}"),
        )),
    }
}

/// The workspace of a workspace root: what its files must stay inside.
pub(crate) fn workspace_of(root: &Path) -> Option<PathBuf> {
    root.parent()?.parent().map(Path::to_path_buf)
}

/// Why `path` could not be opened, as the [`Diagnostic`] that skips it.
pub(crate) fn unopened(path: &Path, e: &io::Error) -> Diagnostic {
    if open::is_outside(e) {
        Diagnostic::new(path, None, format!("{e}; skipped"))
    } else {
        Diagnostic::new(path, None, format!("cannot read: {e}"))
    }
}

/// The text of what was opened at `path`: a regular file of at most
/// [`MAX_FILE_BYTES`] that is valid UTF-8, read from its descriptor.
pub(crate) fn read_opened(opened: Opened, path: &Path) -> Result<String, Diagnostic> {
    let (file, size) = match opened {
        Opened::File(file, size) => (file, size),
        Opened::Dir => {
            return Err(Diagnostic::new(
                path,
                None,
                "not a regular file (a folder); skipped",
            ))
        }
        Opened::Other(kind) => {
            return Err(Diagnostic::new(
                path,
                None,
                format!("not a regular file ({kind}); skipped"),
            ))
        }
    };
    let bytes = open::read_capped(file, size, MAX_FILE_BYTES).map_err(|e| match e {
        ReadError::TooBig(len) => Diagnostic::new(
            path,
            None,
            format!("{len} bytes, over the {MAX_FILE_BYTES}-byte limit; skipped"),
        ),
        ReadError::Io(e) => Diagnostic::new(path, None, format!("cannot read: {e}")),
    })?;
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

/// What an entry is, as its folder says (a link is not followed here).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    File,
    Dir,
    /// A symbolic link: what it leads to is known once it is opened.
    Link,
    /// Anything else: a FIFO, a socket, ...
    Other,
}

/// The entries of `dir` (opened with `base`, listed from that descriptor)
/// sorted by name, without hidden ones (`.git`, ...) and names that are not
/// UTF-8. `Ok(None)`: `dir` does not exist.
pub(crate) fn list_dir(base: &Base, dir: &Path) -> Result<Option<Vec<Entry>>, Diagnostic> {
    let fd = match base.open_dir(dir) {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
            return Err(Diagnostic::new(dir, None, "not a folder; ignored"));
        }
        Err(e) if open::is_outside(&e) => {
            return Err(Diagnostic::new(dir, None, format!("{e}; ignored")));
        }
        Err(e) => {
            return Err(Diagnostic::new(
                dir,
                None,
                format!("cannot read folder: {e}"),
            ))
        }
    };
    let mut read = match rustix::fs::Dir::new(fd) {
        Ok(read) => read,
        Err(e) => {
            return Err(Diagnostic::new(
                dir,
                None,
                format!("cannot read folder: {e}"),
            ))
        }
    };
    let mut entries = Vec::new();
    // An error ends the listing (what was read so far is kept).
    while let Some(Ok(entry)) = read.read() {
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let file_type = match entry.file_type() {
            // Not every filesystem fills in the type: ask the folder (the
            // name alone, the link itself).
            FileType::Unknown => match read
                .fd()
                .and_then(|fd| rustix::fs::statat(fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW))
            {
                Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                Err(_) => continue,
            },
            known => known,
        };
        let kind = match file_type {
            FileType::Directory => EntryKind::Dir,
            FileType::RegularFile => EntryKind::File,
            FileType::Symlink => EntryKind::Link,
            _ => EntryKind::Other,
        };
        entries.push(Entry {
            path: dir.join(name),
            name: name.to_owned(),
            kind,
        });
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
