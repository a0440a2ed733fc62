//! Finding every repository under a writable root, so that none of them
//! can be turned into a launcher: a `.git` directory (its config, hooks,
//! `commondir`, `info/`, `objects/info/alternates`, `worktrees/`,
//! `modules/` — everything git follows to find code), a `.git` file (a
//! worktree's or submodule's `gitdir:` pointer) and the git directory it
//! names when that lies under a writable root too, and a bare repository
//! (a folder holding `HEAD`, `objects/` and `refs/`: `cd` into it and git
//! reads its config). Each is mounted read-only for sandboxed commands
//! (`machine`), so nothing in it can be changed or created.
//!
//! The same walk finds the files that share their content with a file
//! outside the writable roots: a hard link (pnpm links its store into
//! `node_modules`) whose other names are not all inside. A write through
//! it would change the outside file, which no path rule sees; each is
//! mounted read-only too, up to [`MAX_SHARED_FILES`].

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The most hard-linked files made read-only; past it they are said, not
/// protected (a pnpm workspace links thousands).
pub const MAX_SHARED_FILES: usize = 512;

/// The most directory entries looked at under one root; past it the
/// search stops and says so (a repository below the cut is not protected).
pub const MAX_ENTRIES: usize = 500_000;

/// What [`repositories`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    /// The git directories, `.git` files and bare repositories, sorted.
    pub git: Vec<PathBuf>,
    /// Roots whose search stopped at [`MAX_ENTRIES`].
    pub cut_short: Vec<PathBuf>,
    /// Files with a name outside the writable roots (hard links), sorted.
    pub shared: Vec<PathBuf>,
    /// How many such files there were past [`MAX_SHARED_FILES`].
    pub shared_unprotected: usize,
}

/// Every repository under `roots` (canonical directories). Links are not
/// followed; a git directory is not entered.
pub fn repositories(roots: &[PathBuf]) -> Found {
    let mut found = Found::default();
    // Hard-linked files seen, by inode: their link count and the names
    // found inside.
    let mut links: HashMap<(u64, u64), (u64, Vec<PathBuf>)> = HashMap::new();
    for root in roots {
        let mut entries = 0usize;
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(list) = std::fs::read_dir(&dir) else {
                continue;
            };
            if looks_bare(&dir) && &dir != root {
                found.git.push(dir);
                continue;
            }
            for entry in list.flatten() {
                entries += 1;
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                if entry.file_name() == ".git" {
                    if kind.is_file() {
                        found.git.extend(gitdir_of(&path, roots));
                    }
                    if kind.is_dir() || kind.is_file() {
                        found.git.push(path);
                    }
                    continue;
                }
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file() {
                    if let Ok(meta) = entry.metadata() {
                        if meta.nlink() > 1 {
                            let seen = links
                                .entry((meta.dev(), meta.ino()))
                                .or_insert_with(|| (meta.nlink(), Vec::new()));
                            if !seen.1.contains(&path) {
                                seen.1.push(path);
                            }
                        }
                    }
                }
            }
            if entries > MAX_ENTRIES {
                found.cut_short.push(root.clone());
                break;
            }
        }
        if looks_bare(root) {
            found.git.push(root.clone());
        }
    }
    found.git.sort();
    found.git.dedup();
    let mut shared: Vec<PathBuf> = links
        .into_values()
        .filter(|(count, names)| (names.len() as u64) < *count)
        .flat_map(|(_, names)| names)
        .collect();
    shared.sort();
    found.shared_unprotected = shared.len().saturating_sub(MAX_SHARED_FILES);
    shared.truncate(MAX_SHARED_FILES);
    found.shared = shared;
    found
}

/// A bare repository: `HEAD`, `objects/` and `refs/` side by side.
fn looks_bare(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// The git directory a `.git` file names (`gitdir: PATH`), when it lies
/// under one of `roots` (elsewhere it is not writable anyway), and that
/// one's `commondir` target likewise.
fn gitdir_of(file: &Path, roots: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    let Some(target) = text.trim().strip_prefix("gitdir:") else {
        return Vec::new();
    };
    let base = file.parent().unwrap_or(Path::new("/"));
    let Ok(gitdir) = base.join(target.trim()).canonicalize() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Ok(common) = std::fs::read_to_string(gitdir.join("commondir")) {
        if let Ok(common) = gitdir.join(common.trim()).canonicalize() {
            out.push(common);
        }
    }
    out.push(gitdir);
    out.retain(|dir| roots.iter().any(|root| dir.starts_with(root)));
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn nested_repositories_submodules_and_bare_ones_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(ws.join("vendor/lib/.git")).unwrap();
        std::fs::create_dir_all(ws.join("node_modules/x/.git")).unwrap();
        std::fs::create_dir_all(ws.join("elsewhere-gitdir")).unwrap();
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/.git"), "gitdir: ../elsewhere-gitdir\n").unwrap();
        std::fs::create_dir_all(ws.join("mirror.git/objects")).unwrap();
        std::fs::create_dir_all(ws.join("mirror.git/refs")).unwrap();
        std::fs::write(ws.join("mirror.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let found = repositories(std::slice::from_ref(&ws));
        let rel: Vec<String> = found
            .git
            .iter()
            .map(|p| p.strip_prefix(&ws).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            [
                ".git",
                "elsewhere-gitdir",
                "mirror.git",
                "node_modules/x/.git",
                "sub/.git",
                "vendor/lib/.git"
            ]
        );
        assert!(found.cut_short.is_empty());
    }

    #[test]
    fn hard_links_with_a_name_outside_are_found_and_inside_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (ws, outside) = (base.join("ws"), base.join("outside"));
        std::fs::create_dir_all(ws.join("node_modules/x")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("store-file"), "shared").unwrap();
        std::fs::hard_link(
            outside.join("store-file"),
            ws.join("node_modules/x/index.js"),
        )
        .unwrap();
        std::fs::write(ws.join("a"), "inside twice").unwrap();
        std::fs::hard_link(ws.join("a"), ws.join("b")).unwrap();
        let found = repositories(std::slice::from_ref(&ws));
        assert_eq!(found.shared, [ws.join("node_modules/x/index.js")]);
        assert_eq!(found.shared_unprotected, 0);
    }
}
