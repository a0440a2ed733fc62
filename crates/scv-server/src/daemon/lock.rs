//! One daemon per socket: an exclusive `flock` on `<socket>.lock`, held for
//! the life of the process (the kernel releases it however the process
//! ends). Holding the lock makes a leftover socket file provably stale.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub(super) struct DaemonLock {
    path: PathBuf,
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub(super) enum LockError {
    #[error("another scv-server{} is already serving {socket}", .pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Held { socket: PathBuf, pid: Option<u32> },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl DaemonLock {
    pub(super) fn acquire(socket: &Path) -> Result<DaemonLock, LockError> {
        let path = lock_path(socket);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        // SAFETY: flock on a valid, owned descriptor.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if !locked {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            return Err(LockError::Held {
                socket: socket.to_path_buf(),
                pid: text.trim().parse().ok(),
            });
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        Ok(DaemonLock { path, _file: file })
    }

    /// Removes the lock file (the lock itself goes with the descriptor).
    pub(super) fn release(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

pub(super) fn lock_path(socket: &Path) -> PathBuf {
    let mut name = socket.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}
