//! Workspace paths for `@` completion: a walk of the workspace through the
//! `ignore` crate (`.gitignore`, `.ignore` and hidden files respected,
//! whether or not it is a git repository), bounded, cached for a few
//! seconds, and matched against what follows the `@`.

use ignore::WalkBuilder;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// At most this many paths are indexed.
pub const MAX_PATHS: usize = 50_000;
/// Entries offered at once.
pub const MAX_MATCHES: usize = 8;
/// The index is walked again after this long.
const STALE: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub struct FileIndex {
    root: Option<PathBuf>,
    paths: Vec<String>,
    built: Option<Instant>,
}

impl FileIndex {
    /// The workspace's paths (directories end in `/`), relative to `root`.
    pub fn paths(&mut self, root: &Path, now: Instant) -> &[String] {
        let fresh = self.root.as_deref() == Some(root)
            && self
                .built
                .is_some_and(|at| now.saturating_duration_since(at) < STALE);
        if !fresh {
            self.paths = walk(root);
            self.root = Some(root.to_path_buf());
            self.built = Some(now);
        }
        &self.paths
    }
}

fn walk(root: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    let walker = WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(Some(16))
        .build();
    for entry in walker.flatten() {
        if paths.len() >= MAX_PATHS {
            break;
        }
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(relative) = relative.to_str().filter(|r| !r.is_empty()) else {
            continue;
        };
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        paths.push(if is_dir {
            format!("{relative}/")
        } else {
            relative.to_string()
        });
    }
    paths.sort();
    paths
}

/// Paths for `typed` (what follows the `@`): those starting with it, then
/// those whose file name starts with it; at most [`MAX_MATCHES`].
pub fn matches(paths: &[String], typed: &str) -> Vec<String> {
    // Below a directory typed so far, only its direct entries.
    let direct = |p: &str| {
        let rest = &p[typed.len()..];
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        !rest.contains('/')
    };
    let mut found: Vec<String> = paths
        .iter()
        .filter(|p| p.starts_with(typed) && p.len() > typed.len() && direct(p))
        .take(MAX_MATCHES)
        .cloned()
        .collect();
    if found.len() < MAX_MATCHES && !typed.is_empty() && !typed.contains('/') {
        for path in paths {
            let name = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            if name.starts_with(typed) && !found.contains(path) {
                found.push(path.clone());
                if found.len() >= MAX_MATCHES {
                    break;
                }
            }
        }
    }
    found
}

/// The longest prefix all of `paths` share.
/// The paths to offer for the `@path` before the input's cursor (none
/// when no `@path` is being typed, or there is no workspace).
pub fn offer(
    input: &super::input_box::InputBox,
    cwd: Option<&str>,
    index: &mut FileIndex,
    now: Instant,
) -> Vec<String> {
    let (Some((_, typed)), Some(cwd)) = (input.at_word(), cwd) else {
        return Vec::new();
    };
    matches(index.paths(Path::new(cwd), now), typed)
}

/// Tab on an `@path`: completes as far as the offered paths agree, or to
/// the first; a file gets a space after it. Whether it completed.
pub fn complete(input: &mut super::input_box::InputBox, offered: &[String]) -> bool {
    let Some((start, typed)) = input.at_word() else {
        return false;
    };
    if offered.is_empty() {
        return false;
    }
    let common = common_prefix(offered);
    let completed = if offered.len() == 1 {
        let only = &offered[0];
        if only.ends_with('/') {
            only.clone()
        } else {
            format!("{only} ")
        }
    } else if common.len() > typed.len() && common.starts_with(typed) {
        common
    } else {
        offered[0].clone()
    };
    input.replace_word(start, &format!("@{completed}"));
    true
}

pub fn common_prefix(paths: &[String]) -> String {
    let Some(first) = paths.first() else {
        return String::new();
    };
    let mut end = first.len();
    for path in &paths[1..] {
        end = end.min(
            first
                .char_indices()
                .zip(path.chars())
                .find(|((_, a), b)| a != b)
                .map_or(first.len().min(path.len()), |((i, _), _)| i),
        );
    }
    first[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_prefixes_then_file_names() {
        let paths: Vec<String> = [
            "README.md",
            "src/",
            "src/lib.rs",
            "src/main.rs",
            "src/tui/",
            "src/tui/app.rs",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(matches(&paths, "sr"), ["src/"]);
        assert_eq!(
            matches(&paths, "src/"),
            ["src/lib.rs", "src/main.rs", "src/tui/"]
        );
        assert_eq!(matches(&paths, "app"), ["src/tui/app.rs"]);
        assert_eq!(common_prefix(&matches(&paths, "src/")), "src/");
        assert_eq!(
            common_prefix(&["src/lib.rs".into(), "src/list.rs".into()]),
            "src/li"
        );
    }
}
