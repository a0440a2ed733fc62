//! A session's additional directories (ACP `additionalDirectories`, the
//! protocol's `session.start.additional_directories`): more roots the
//! file tools read beneath (and write, where config.toml's
//! `additional_directories_writable` covers them), and the sandbox shows
//! its commands. Checked once, when the session starts; every open still
//! goes through a handle on the root (`beneath::Workspace`), so a link
//! inside cannot lead out of it.

use super::beneath::{Rel, Workspace};
use std::path::{Path, PathBuf};

/// Additional directories one session may have.
pub(crate) const MAX_ADDITIONAL_DIRECTORIES: usize = 8;

/// One additional directory, canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Root {
    pub path: PathBuf,
    /// Beneath one of `additional_directories_writable`.
    pub writable: bool,
}

/// `dirs` as the session's roots, or why one is refused: each must be an
/// absolute path of an existing directory, not `/` (however reached), and
/// neither inside `$SCV_HOME` nor holding it. One inside the workspace (or
/// given twice) adds nothing and is left out.
pub(crate) fn check(
    dirs: &[String],
    workspace: &Path,
    scv_home: &Path,
    writable: &[PathBuf],
) -> Result<Vec<Root>, String> {
    if dirs.len() > MAX_ADDITIONAL_DIRECTORIES {
        return Err(format!(
            "{} additional directories; a session may have at most {MAX_ADDITIONAL_DIRECTORIES}",
            dirs.len()
        ));
    }
    let home = std::fs::canonicalize(scv_home).unwrap_or_else(|_| scv_home.to_path_buf());
    let writable: Vec<PathBuf> = writable
        .iter()
        .filter_map(|w| std::fs::canonicalize(w).ok())
        .collect();
    let mut roots: Vec<Root> = Vec::new();
    for dir in dirs {
        let given = Path::new(dir);
        if !given.is_absolute() {
            return Err(format!(
                "additional directory `{dir}` is not an absolute path"
            ));
        }
        let path = std::fs::canonicalize(given)
            .map_err(|err| format!("additional directory `{dir}` cannot be used: {err}"))?;
        if !path.is_dir() {
            return Err(format!("additional directory `{dir}` is not a directory"));
        }
        if path.parent().is_none() {
            return Err(format!(
                "additional directory `{dir}` is the whole file system (/); name the directories the session needs"
            ));
        }
        if path.starts_with(&home) || home.starts_with(&path) {
            return Err(format!(
                "additional directory `{dir}` holds SCV's own settings ($SCV_HOME, {}); SCV's tools do not read there",
                home.display()
            ));
        }
        if path.starts_with(workspace) || roots.iter().any(|r| r.path == path) {
            continue;
        }
        let writable = writable.iter().any(|w| path.starts_with(w));
        roots.push(Root { path, writable });
    }
    Ok(roots)
}

/// Where `path` (as the model wrote it) lies: beneath the workspace, or
/// — absolute — beneath one of `roots`; the handle to open it through and
/// the path below it. `write`: refused in a root that is not writable.
pub(crate) fn resolve(
    workspace: &Path,
    roots: &[Root],
    path: &str,
    write: bool,
) -> Result<(Workspace, Rel), String> {
    let given = Path::new(path.trim());
    if given.is_absolute() && !given.starts_with(workspace) {
        let root = roots
            .iter()
            .filter(|r| given.starts_with(&r.path))
            .max_by_key(|r| r.path.as_os_str().len());
        if let Some(root) = root {
            if write && !root.writable {
                return Err(format!(
                    "{} is in an additional directory that SCV only reads; a directory beneath `additional_directories_writable` in config.toml is writable",
                    given.display()
                ));
            }
            let ws = Workspace::open(&root.path)?;
            let rel = ws.relative(path)?;
            return Ok((ws, rel));
        }
    }
    let ws = Workspace::open(workspace)?;
    let rel = ws.relative(path)?;
    Ok((ws, rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_directories_are_refused() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let (ws, home, extra, open) = (
            base.join("ws"),
            base.join("home"),
            base.join("extra"),
            base.join("open"),
        );
        for d in [&ws, &home, &extra, &open] {
            std::fs::create_dir(d).unwrap();
        }
        std::os::unix::fs::symlink("/", base.join("root-link")).unwrap();
        let s = |p: &Path| p.display().to_string();
        let check = |dirs: &[String]| check(dirs, &ws, &home, std::slice::from_ref(&open));
        assert!(check(&["relative/dir".into()])
            .unwrap_err()
            .contains("not an absolute path"));
        assert!(check(&[s(&base.join("root-link"))])
            .unwrap_err()
            .contains("whole file system"));
        assert!(check(&[s(&home)]).unwrap_err().contains("$SCV_HOME"));
        assert!(
            check(&[s(&base)]).unwrap_err().contains("$SCV_HOME"),
            "holding it"
        );
        assert!(check(&[s(&base.join("nope"))])
            .unwrap_err()
            .contains("cannot be used"));
        let many: Vec<String> = (0..9).map(|_| s(&extra)).collect();
        assert!(check(&many).unwrap_err().contains("at most 8"));
        let roots = check(&[s(&extra), s(&open), s(&extra), s(&ws)]).unwrap();
        assert_eq!(
            roots,
            [
                Root {
                    path: extra.clone(),
                    writable: false
                },
                Root {
                    path: open.clone(),
                    writable: true
                }
            ]
        );
        std::fs::write(extra.join("a.txt"), "A").unwrap();
        let (_, rel) = resolve(&ws, &roots, &s(&extra.join("a.txt")), false).unwrap();
        assert_eq!(rel.shown, "a.txt");
        assert!(resolve(&ws, &roots, &s(&extra.join("a.txt")), true).is_err());
        assert!(resolve(&ws, &roots, &s(&open.join("b.txt")), true).is_ok());
        assert!(resolve(&ws, &roots, &s(&base.join("other/x")), false).is_err());
    }
}
