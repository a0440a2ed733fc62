//! `$SCV_HOME` (default `~/.scv`) and the default socket path inside it.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// `$SCV_HOME` when set and non-empty, else `~/.scv` (see [`scv_home_from`]).
pub fn scv_home() -> PathBuf {
    scv_home_from().0
}

/// Where the SCV home was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HomeSource {
    /// `$SCV_HOME`.
    ScvHome,
    /// `$HOME/.scv`.
    Home,
    /// Neither variable is set (an editor's trimmed environment, a
    /// service): `.scv` in this user's home directory as the user
    /// database (`/etc/passwd`) gives it.
    UserDatabase,
    /// Nothing said where: `/.scv`.
    Nowhere,
}

impl HomeSource {
    /// How a note names it ("from $HOME", …).
    pub fn describe(self) -> &'static str {
        match self {
            HomeSource::ScvHome => "from $SCV_HOME",
            HomeSource::Home => "from $HOME",
            HomeSource::UserDatabase => {
                "neither SCV_HOME nor HOME is set: the user database's home directory"
            }
            HomeSource::Nowhere => {
                "neither SCV_HOME nor HOME is set and the user database has no home for this user"
            }
        }
    }
}

/// The SCV home and where it came from: `$SCV_HOME`, else `$HOME/.scv`,
/// else `.scv` in the home directory the user database gives this user
/// (an editor may start `scv acp` with a trimmed environment), else `/.scv`.
pub fn scv_home_from() -> (PathBuf, HomeSource) {
    resolve_home(
        std::env::var_os("SCV_HOME"),
        std::env::var_os("HOME"),
        user_database_home,
    )
}

/// [`scv_home_from`] with its inputs given.
pub fn resolve_home(
    scv_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
    user_database: impl FnOnce() -> Option<PathBuf>,
) -> (PathBuf, HomeSource) {
    if let Some(dir) = scv_home.filter(|v| !v.is_empty()) {
        return (PathBuf::from(dir), HomeSource::ScvHome);
    }
    if let Some(dir) = home.filter(|v| !v.is_empty()) {
        return (PathBuf::from(dir).join(".scv"), HomeSource::Home);
    }
    match user_database() {
        Some(dir) => (dir.join(".scv"), HomeSource::UserDatabase),
        None => (PathBuf::from("/.scv"), HomeSource::Nowhere),
    }
}

/// This user's home directory in the user database (`getpwuid_r`), when
/// it names an absolute one.
fn user_database_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut buf = vec![0u8; 16 * 1024];
    let mut entry = std::mem::MaybeUninit::<libc::passwd>::uninit();
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: `entry` and `buf` outlive the call and `buf.len()` is the
    // buffer's size; the strings `entry` points to live in `buf`, read
    // below only when the call found an entry.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::geteuid(),
            entry.as_mut_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() {
        return None;
    }
    // SAFETY: the call succeeded, so `entry` is initialised and `pw_dir`
    // is a NUL-terminated string in `buf` (or null).
    let dir = unsafe {
        let entry = entry.assume_init_ref();
        if entry.pw_dir.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr(entry.pw_dir)
    };
    let dir = Path::new(std::ffi::OsStr::from_bytes(dir.to_bytes()));
    dir.is_absolute().then(|| dir.to_path_buf())
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
    fn the_home_comes_from_scv_home_then_home_then_the_user_database() {
        let db = || Some(PathBuf::from("/users/me"));
        let none = || None;
        assert_eq!(
            resolve_home(Some("/x".into()), Some("/h".into()), db),
            (PathBuf::from("/x"), HomeSource::ScvHome)
        );
        assert_eq!(
            resolve_home(Some("".into()), Some("/h".into()), db),
            (PathBuf::from("/h/.scv"), HomeSource::Home)
        );
        // An editor's trimmed environment: neither variable.
        assert_eq!(
            resolve_home(None, Some("".into()), db),
            (PathBuf::from("/users/me/.scv"), HomeSource::UserDatabase)
        );
        assert_eq!(
            resolve_home(None, None, none),
            (PathBuf::from("/.scv"), HomeSource::Nowhere)
        );
        // This user has a home in the database (the machine's own).
        assert!(user_database_home().is_some_and(|dir| dir.is_absolute()));
    }

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
