//! Real workspaces in tempdirs, and what is on disk read independently of
//! the crate (to compare before and after).
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use scv_checkpoint::CheckpointStore;
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

pub struct Fixture {
    pub home: tempfile::TempDir,
    pub ws: tempfile::TempDir,
    pub store: CheckpointStore,
}

impl Fixture {
    pub fn new() -> Fixture {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let store = CheckpointStore::open(home.path()).unwrap();
        Fixture { home, ws, store }
    }

    pub fn path(&self) -> &Path {
        self.ws.path()
    }

    pub fn sh(&self, script: &str) {
        sh(self.path(), script);
    }
}

/// Runs `script` with bash in `dir`; panics on failure.
pub fn sh(dir: &Path, script: &str) {
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn sh_out(dir: &Path, script: &str) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One path as it is on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disk {
    File { bytes: Vec<u8>, mode: u32 },
    Link(PathBuf),
    Dir { mode: u32 },
    Other,
}

/// Everything under `root` (ignored files and `.git` too), never following
/// a link.
pub fn disk(root: &Path) -> BTreeMap<String, Disk> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Disk>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let ft = meta.file_type();
        if ft.is_symlink() {
            out.insert(rel, Disk::Link(std::fs::read_link(&path).unwrap()));
        } else if ft.is_dir() {
            out.insert(
                rel,
                Disk::Dir {
                    mode: meta.permissions().mode() & 0o777,
                },
            );
            walk(root, &path, out);
        } else if ft.is_file() {
            out.insert(
                rel,
                Disk::File {
                    bytes: std::fs::read(&path).unwrap(),
                    mode: meta.permissions().mode() & 0o777,
                },
            );
        } else {
            out.insert(rel, Disk::Other);
        }
    }
}

/// Inode and mtime of every regular file (what a rename-back preserves).
pub fn inodes(root: &Path) -> BTreeMap<String, (u64, i64, i64)> {
    let mut out = BTreeMap::new();
    for (path, d) in disk(root) {
        if let Disk::File { .. } = d {
            let m = std::fs::symlink_metadata(root.join(&path)).unwrap();
            out.insert(path, (m.ino(), m.mtime(), m.mtime_nsec()));
        }
    }
    out
}

/// Runs `f` on a thread and fails the test if it takes longer than
/// `secs` (a hang must not hang the suite).
pub fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("did not finish within {secs} s"))
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Waits out the racy window so the next snapshot's stats can be reused.
pub fn settle() {
    std::thread::sleep(Duration::from_millis(2100));
}
