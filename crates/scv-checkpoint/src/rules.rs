//! The ignore rules a walk applies: each directory's `.ignore` and
//! `.gitignore`, and the root's `.git/info/exclude`, matched as git and
//! ripgrep do, with a fingerprint of their texts (equal fingerprints,
//! equal decisions).

use crate::hash::Hash;
use crate::store::dir_flags;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use rustix::fs::Mode;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::Arc;

/// An ignore file bigger than this is not read.
const MAX_IGNORE_FILE: u64 = 1024 * 1024;

/// One level of ignore rules: the `.ignore` and `.gitignore` of a
/// directory, matched against paths relative to it.
pub(crate) struct Level {
    /// Byte length of the directory's relative path plus its `/` (0 at the
    /// root): what to cut from a path to match it here.
    cut: usize,
    ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
}

/// The rules in force in a directory: every level from the root down, and
/// the root's `.git/info/exclude`.
#[derive(Default)]
pub(crate) struct Rules {
    pub(crate) levels: Vec<Arc<Level>>,
    pub(crate) exclude: Option<Arc<Gitignore>>,
    /// Of every ignore file's text on the way here: equal fingerprints,
    /// equal decisions.
    pub(crate) fingerprint: u64,
}

impl Rules {
    pub(crate) fn is_empty(&self) -> bool {
        self.levels.is_empty() && self.exclude.is_none()
    }

    /// As the `ignore` crate decides: `.ignore` files first (deepest
    /// first), then `.gitignore`, then `.git/info/exclude`; a whitelist
    /// (`!pattern`) match keeps the path.
    pub(crate) fn ignored(&self, rel: &str, is_dir: bool) -> bool {
        if self.is_empty() {
            return false;
        }
        for pick in [0, 1] {
            for level in self.levels.iter().rev() {
                let matcher = if pick == 0 {
                    &level.ignore
                } else {
                    &level.gitignore
                };
                if let Some(m) = matcher {
                    match m.matched(Path::new(&rel[level.cut..]), is_dir) {
                        Match::Ignore(_) => return true,
                        Match::Whitelist(_) => return false,
                        Match::None => {}
                    }
                }
            }
        }
        if let Some(m) = &self.exclude {
            return m.matched(Path::new(rel), is_dir).is_ignore();
        }
        false
    }
}

/// A directory's own `.ignore` and `.gitignore`, when it lists any, and
/// their text (for the fingerprint).
pub(crate) fn own_rules(
    dir: BorrowedFd<'_>,
    rel: &str,
    has_ignore: bool,
    has_gitignore: bool,
) -> Option<(Level, String)> {
    let read = |present: bool, name: &str| {
        if present {
            read_text(dir, name)
        } else {
            None
        }
    };
    let ignore_text = read(has_ignore, ".ignore");
    let gitignore_text = read(has_gitignore, ".gitignore");
    if ignore_text.is_none() && gitignore_text.is_none() {
        return None;
    }
    let ignore = ignore_text.as_deref().and_then(build_rules);
    let gitignore = gitignore_text.as_deref().and_then(build_rules);
    let text = format!(
        "{}\0{}",
        ignore_text.unwrap_or_default(),
        gitignore_text.unwrap_or_default()
    );
    Some((
        Level {
            cut: if rel.is_empty() { 0 } else { rel.len() + 1 },
            ignore,
            gitignore,
        },
        text,
    ))
}

pub(crate) fn fingerprint(parent: u64, text: &str) -> u64 {
    let mut bytes = parent.to_le_bytes().to_vec();
    bytes.extend_from_slice(text.as_bytes());
    let h = Hash::of(&bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&h.0[..8]);
    u64::from_le_bytes(first)
}

/// The root's `.git/info/exclude` and its text (read, never written:
/// nothing in `.git` is ever opened for writing).
pub(crate) fn read_exclude(root: BorrowedFd<'_>) -> Option<(Gitignore, String)> {
    let git = rustix::fs::openat(root, ".git", dir_flags(), Mode::empty()).ok()?;
    let info = rustix::fs::openat(&git, "info", dir_flags(), Mode::empty()).ok()?;
    let text = read_text(info.as_fd(), "exclude")?;
    Some((build_rules(&text)?, text))
}

fn build_rules(text: &str) -> Option<Gitignore> {
    // Matched with paths relative to the file's directory: a root of "."
    // makes the matcher strip nothing.
    let mut builder = GitignoreBuilder::new(".");
    for line in text.lines() {
        // A line that is not a valid glob is skipped, as git does.
        let _ = builder.add_line(None, line);
    }
    builder.build().ok().filter(|g| !g.is_empty())
}

fn read_text(dir: BorrowedFd<'_>, name: &str) -> Option<String> {
    let bytes = crate::store::read_regular(dir, name, MAX_IGNORE_FILE)?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}
