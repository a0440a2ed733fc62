//! What both checkpoint benches share: a repo-shaped workspace, medians.

use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) fn text(seed: usize, len: usize) -> String {
    let mut out = String::with_capacity(len + 64);
    let mut n = seed;
    while out.len() < len {
        n = n
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push_str(&format!(
            "    let value_{} = compute({}, \"{:x}\");\n",
            n % 1000,
            seed,
            n >> 40
        ));
    }
    out.truncate(len);
    out
}

/// `files` files (of 1–8 KiB times `scale`) in leaf directories of 40 (at most 50 with the odd
/// extra), 3 or 4 deep, and an ignored `target/` of a tenth as many.
pub(crate) fn generate(root: &Path, files: usize, scale: usize) -> Vec<PathBuf> {
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::write(root.join("README.md"), text(1, 3000)).unwrap();
    let mut paths = Vec::with_capacity(files);
    let leaves = files.div_ceil(40);
    for leaf in 0..leaves {
        let mut dir = root.join(format!(
            "crate{:02}/src/mod{:02}/part{:02}",
            leaf / 250,
            (leaf / 25) % 10,
            leaf % 25
        ));
        if leaf % 3 == 0 {
            dir = dir.join("deep");
        }
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..40 {
            if paths.len() == files {
                break;
            }
            let n = paths.len();
            let path = dir.join(format!("file{i:02}.rs"));
            std::fs::write(&path, text(n, (1024 + (n * 7919) % 7168) * scale)).unwrap();
            paths.push(path);
        }
    }
    let target = root.join("target/debug/deps");
    std::fs::create_dir_all(&target).unwrap();
    for i in 0..files / 10 {
        std::fs::write(target.join(format!("obj{i}.o")), text(i, 512)).unwrap();
    }
    paths
}

pub(crate) fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// Files changed within 2 s of a snapshot are read again by the next
/// (racy); the rounds wait that out so each measures 10 changes only.
pub(crate) fn settle() {
    std::thread::sleep(Duration::from_millis(2100));
}
