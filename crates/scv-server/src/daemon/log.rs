//! A size-bounded log file for a daemon started in the background: when it
//! passes its limit it is renamed to `<name>.1` (replacing the previous
//! one) and a new file is started, so the logs never hold more than twice
//! the limit.
//!
//! A full disk does not make the log a burden: a line the disk refuses is
//! dropped (what part of it was written is cut off again, so the file
//! holds whole lines), never retried in a loop; the next line that fits
//! is preceded by one saying how many were lost.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

pub const LOG_LIMIT_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Clone)]
pub struct RotatingLog {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    path: PathBuf,
    file: File,
    written: u64,
    limit: u64,
    /// Lines the disk refused since the last one written.
    lost: u64,
}

impl RotatingLog {
    pub fn open(path: PathBuf, limit: u64) -> std::io::Result<RotatingLog> {
        let file = open_private(&path)?;
        let written = file.metadata()?.len();
        Ok(RotatingLog {
            inner: Arc::new(Mutex::new(Inner {
                path,
                file,
                written,
                limit,
                lost: 0,
            })),
        })
    }
}

/// Opens for appending, 0600: logs can hold prompts and paths. A log left
/// readable by an older version is made private too.
fn open_private(path: &std::path::Path) -> std::io::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

impl Inner {
    /// Writes `bytes` whole, or cuts back what part of it got written.
    fn append_whole(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self.file.write_all(bytes) {
            Ok(()) => {
                self.written += bytes.len() as u64;
                Ok(())
            }
            Err(err) => {
                let _ = self.file.set_len(self.written);
                Err(err)
            }
        }
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        let mut old = self.path.as_os_str().to_owned();
        old.push(".1");
        std::fs::rename(&self.path, old)?;
        self.file = open_private(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl Write for RotatingLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut inner = crate::sync::lock(&self.inner);
        if inner.written + buf.len() as u64 > inner.limit && inner.written > 0 {
            inner.rotate()?;
        }
        if inner.lost > 0 {
            let note = format!(
                "scv-server: {} log line(s) lost: the disk was full\n",
                inner.lost
            );
            if inner.append_whole(note.as_bytes()).is_err() {
                inner.lost += 1;
                return Ok(buf.len());
            }
            inner.lost = 0;
        }
        if inner.append_whole(buf).is_err() {
            // Dropped, counted, said with the next line that fits.
            inner.lost += 1;
        }
        // Whole or not at all: the caller never writes the rest again.
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        crate::sync::lock(&self.inner).file.flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RotatingLog {
    type Writer = RotatingLog;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Whether stderr is a pipe: a client that starts the daemon in the
/// background reads it to show a start-up error (a malformed config.toml)
/// at once.
pub fn stderr_is_pipe() -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata("/proc/self/fd/2").is_ok_and(|meta| meta.file_type().is_fifo())
}

/// Lets go of stderr once the daemon listens: the client that reads the
/// pipe stops at its end, the log file has everything from now on, and a
/// pipe whose reader is gone would fail every write.
pub(crate) fn release_stderr() {
    let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") else {
        return;
    };
    use std::os::fd::AsRawFd;
    // SAFETY: dup2 onto descriptor 2 only replaces what stderr refers to;
    // Rust's stderr handle writes to the descriptor number, so it follows.
    unsafe { libc::dup2(null.as_raw_fd(), libc::STDERR_FILENO) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.log");
        let mut log = RotatingLog::open(path.clone(), 100).unwrap();
        for _ in 0..25 {
            log.write_all(b"0123456789\n").unwrap();
        }
        let current = std::fs::metadata(&path).unwrap().len();
        let rotated = std::fs::metadata(dir.path().join("server.log.1"))
            .unwrap()
            .len();
        assert!(current <= 100 && rotated <= 100, "{current} {rotated}");
        assert!(current > 0 && rotated > 0);
    }

    #[test]
    fn a_line_the_disk_refuses_is_dropped_whole_and_counted_once_there_is_room() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.log");
        let mut log = RotatingLog::open(path.clone(), 1 << 20).unwrap();
        log.write_all(b"before\n").unwrap();
        // The disk is full: /dev/full refuses every write.
        let kept = {
            let mut inner = log.inner.lock().unwrap();
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            std::mem::replace(&mut inner.file, full)
        };
        for _ in 0..3 {
            // Whole or not at all: the caller sees no error to retry.
            log.write_all(b"refused\n").unwrap();
        }
        log.inner.lock().unwrap().file = kept;
        log.write_all(b"after\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "before\nscv-server: 3 log line(s) lost: the disk was full\nafter\n"
        );
    }
}
