//! A small tmpfs for the disk-full tests (root only, as CI runs).

use std::io::Write;
use std::path::{Path, PathBuf};

/// A small tmpfs, unmounted when dropped (also when the test fails).
pub struct Tmpfs {
    dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (said on stderr) when not root or the mount fails.
    pub fn mount(size: &str) -> Option<Tmpfs> {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: mounting a tmpfs needs root (CI runs as root)");
            return None;
        }
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("scv-home");
        std::fs::create_dir(&dir).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("tmpfs")
            .arg(&dir)
            .status();
        match mounted {
            Ok(status) if status.success() => Some(Tmpfs {
                dir,
                _parent: parent,
            }),
            other => {
                eprintln!(
                    "skipped: cannot mount a tmpfs on {}: {other:?}",
                    dir.display()
                );
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // A daemon started with this as its SCV_HOME first: it holds
        // files on the mount.
        stop_daemon(&self.dir);
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .status();
    }
}

/// Stops the daemon whose `SCV_HOME` is `home`, if one runs, and waits
/// (up to five seconds) for its socket to go.
pub fn stop_daemon(home: &Path) {
    let pid = std::fs::read_to_string(home.join("server.sock.lock"))
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok());
    if let Some(pid) = pid {
        // SAFETY: a signal to the daemon this test started.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        for _ in 0..200 {
            if !home.join("server.sock").exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
    }
}

/// Fills the filesystem of `dir` with `dir/ballast` until nothing more
/// fits; returns its size.
pub fn fill(dir: &Path) -> u64 {
    let path = dir.join("ballast");
    let mut file = std::fs::File::create(&path).unwrap();
    let mut written = 0u64;
    for chunk in [64 * 1024, 4096, 512, 64, 1] {
        let block = vec![0xa5u8; chunk];
        loop {
            match file.write(&block) {
                Ok(0) | Err(_) => break,
                Ok(n) => written += n as u64,
            }
        }
    }
    written
}

pub fn unfill(dir: &Path) {
    std::fs::remove_file(dir.join("ballast")).unwrap();
}
