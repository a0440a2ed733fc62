//! Confining file tools to the session workspace.
//!
//! A path is joined to the workspace and normalized lexically; its deepest
//! existing ancestor is then canonicalized (following symlinks) and must
//! still be inside the workspace. So `..`, absolute paths elsewhere and
//! symlinks pointing out are all refused before anything is touched.

use std::path::{Component, Path, PathBuf};

/// Resolves `path` inside `workspace` (which must be canonical).
pub fn resolve(workspace: &Path, path: &str) -> Result<PathBuf, String> {
    let path = path.trim();
    let joined = if path.is_empty() {
        workspace.to_path_buf()
    } else {
        workspace.join(path)
    };
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    if !normal.starts_with(workspace) {
        return Err(outside(path));
    }
    // Canonicalize the deepest part that exists; the rest cannot be a link.
    let mut existing = normal.clone();
    let mut rest = Vec::new();
    let canonical = loop {
        match existing.canonicalize() {
            Ok(canonical) => break canonical,
            Err(_) => {
                let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                    return Err(outside(path));
                };
                rest.push(name);
                existing.pop();
            }
        }
    };
    if !canonical.starts_with(workspace) {
        return Err(outside(path));
    }
    let mut resolved = canonical;
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    Ok(resolved)
}

fn outside(path: &str) -> String {
    format!("path `{path}` is outside the workspace; only paths inside it can be used")
}

/// `path` relative to the workspace, for messages.
pub fn display(workspace: &Path, path: &Path) -> String {
    match path.strip_prefix(workspace) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_inside() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("src")).unwrap();
        assert_eq!(resolve(&ws, "src/../a.txt").unwrap(), ws.join("a.txt"));
        assert_eq!(
            resolve(&ws, "new/dir/file").unwrap(),
            ws.join("new/dir/file")
        );
        assert_eq!(resolve(&ws, "").unwrap(), ws);
        assert_eq!(
            resolve(&ws, ws.join("src").to_str().unwrap()).unwrap(),
            ws.join("src")
        );
        assert!(resolve(&ws, "../x").is_err());
        assert!(resolve(&ws, "src/../../x").is_err());
        assert!(resolve(&ws, "/etc/passwd").is_err());
    }

    #[test]
    fn symlinks_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("out")).unwrap();
        std::os::unix::fs::symlink(ws.join("src"), ws.join("in")).unwrap();
        std::fs::create_dir(ws.join("src")).unwrap();
        assert!(resolve(&ws, "out").is_err());
        assert!(resolve(&ws, "out/new-file").is_err());
        assert_eq!(resolve(&ws, "in/x").unwrap(), ws.join("src/x"));
    }
}
