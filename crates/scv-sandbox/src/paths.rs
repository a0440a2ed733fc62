//! Paths as the sandbox compares them. A leaf.

use std::path::{Path, PathBuf};

/// `path` with links resolved; for a path that does not exist yet, its
/// deepest existing ancestor resolved and the rest appended (so a missing
/// `~/.aws` stays denied if it is created later).
pub(crate) fn canonical(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => canonical(parent).join(name),
        _ => path.to_path_buf(),
    }
}
