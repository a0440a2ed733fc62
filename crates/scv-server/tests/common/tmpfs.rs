//! A small tmpfs for the disk-full tests (root only, as CI runs).

use std::io::Write;
use std::path::{Path, PathBuf};

/// A small tmpfs, unmounted when dropped (also when the test fails).
pub(crate) struct Tmpfs {
    dir: PathBuf,
    _parent: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` (said on stderr) when not root or the mount fails.
    pub(crate) fn mount(size: &str) -> Option<Tmpfs> {
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

    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .status();
    }
}

/// Fills the filesystem of `dir` with `dir/ballast` until nothing more
/// fits; returns its size.
pub(crate) fn fill(dir: &Path) -> u64 {
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

pub(crate) fn unfill(dir: &Path) {
    std::fs::remove_file(dir.join("ballast")).unwrap();
}
