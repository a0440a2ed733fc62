//! `$SCV_HOME` (default `~/.scv`) and the default socket path inside it.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// `$SCV_HOME` when set and non-empty, else `~/.scv`.
pub fn scv_home() -> PathBuf {
    if let Some(home) = std::env::var_os("SCV_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home);
    }
    let user_home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    user_home.join(".scv")
}

/// `$SCV_HOME/server.sock`.
pub fn default_socket_path() -> PathBuf {
    scv_home().join("server.sock")
}

/// Creates `dir` and any missing parents with mode 0700 (existing ones are
/// left as they are).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Refuses a `$SCV_HOME` that someone else could plant files in: it must
/// belong to this user and be writable by nobody else. A home that does
/// not exist yet is fine (it will be created 0700).
pub fn check_home(home: &Path) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(home) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(format!("cannot use {}: {err}", home.display())),
    };
    let meta = if meta.file_type().is_symlink() {
        std::fs::metadata(home).map_err(|err| format!("cannot use {}: {err}", home.display()))?
    } else {
        meta
    };
    if !meta.is_dir() {
        return Err(format!("{} is not a directory", home.display()));
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "refusing {}: it belongs to uid {}, not to you (uid {me})",
            home.display(),
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "refusing {}: others can write to it (mode {mode:o}); run `chmod 700 {}`",
            home.display(),
            home.display()
        ));
    }
    Ok(())
}

/// Writes `path` whole (a temporary file renamed over it, mode 0600), its
/// folder made private if missing.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    let written = (|| {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(err) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("cannot write {}: {err}", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn homes_others_can_write_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        assert_eq!(check_home(&home), Ok(()), "missing is fine");
        create_private_dir(&home.join("deeper")).unwrap();
        let mode = std::fs::metadata(&home).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert_eq!(check_home(&home), Ok(()));
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = check_home(&home).unwrap_err();
        assert!(err.contains("others can write to it (mode 777)"), "{err}");
        std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(check_home(&home), Ok(()));
    }
}
