#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench fails loudly

//! The checkpoint store beside a shadow git on the same workspace, side by
//! side in one run: a repo-shaped workspace (`SCV_BENCH_FILES`, default
//! 50,000 files of 4–32 KiB of source-like text, `SCV_BENCH_SCALE` times
//! 1–8 KiB, default 4: about 0.9 GiB), then
//!
//! - the first checkpoint: a snapshot into an empty store against
//!   `git add -A && git commit` into an empty `GIT_DIR` outside the
//!   workspace; time and what each takes on disk (every file and directory,
//!   the larger of its length and its blocks: the store's own count);
//! - per turn (`SCV_BENCH_ROUNDS`, default 5): 10 files rewritten, then a
//!   snapshot given the previous one against `git add -A && git commit`;
//!   time and growth;
//! - undo of that turn: a fresh snapshot and a restore to the previous
//!   one (what `checkpoint.restore` does) against
//!   `git read-tree -u --reset HEAD~1`, from the same 10 changed files.
//!
//! Medians, the two alternating within each round. Prints; asserts only
//! that each side did the work (the files are back).

mod support;

use scv_checkpoint::CheckpointStore;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::{generate, median, ms, settle, text};

/// What a directory takes on disk, counted as the store counts itself.
fn on_disk(root: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.path().symlink_metadata().unwrap();
            total += meta.len().max(meta.blocks() * 512);
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    total
}

fn git(git_dir: &Path, ws: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .arg("--work-tree")
        .arg(ws)
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(["-c", "gc.auto=0", "-c", "maintenance.auto=false"])
        .args(args)
        .current_dir(ws)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn git_commit(git_dir: &Path, ws: &Path, message: &str) {
    git(git_dir, ws, &["add", "-A"]);
    git(git_dir, ws, &["commit", "-q", "--no-verify", "-m", message]);
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1048576.0)
}

fn kib(bytes: u64) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

/// Rewrites 10 files spread over the workspace (round `r`'s content).
fn change(paths: &[PathBuf], r: usize) -> Vec<(PathBuf, Vec<u8>)> {
    let step = paths.len() / 10;
    (0..10)
        .map(|k| {
            let p = &paths[(k * step + r * 131) % paths.len()];
            let was = std::fs::read(p).unwrap();
            std::fs::write(p, text(2_000_000 + r * 100 + k, was.len())).unwrap();
            (p.clone(), was)
        })
        .collect()
}

fn all_back(changed: &[(PathBuf, Vec<u8>)]) -> bool {
    changed
        .iter()
        .all(|(p, was)| std::fs::read(p).unwrap() == *was)
}

#[derive(Default)]
struct Side {
    turn: Vec<Duration>,
    growth: Vec<u64>,
    undo: Vec<Duration>,
}

fn main() {
    let files: usize = std::env::var("SCV_BENCH_FILES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000);
    let scale: usize = std::env::var("SCV_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let rounds: usize = std::env::var("SCV_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let version = Command::new("git").arg("--version").output().unwrap();
    println!(
        "checkpoint store vs shadow git ({}), {files} files, {rounds} rounds",
        String::from_utf8_lossy(&version.stdout).trim()
    );
    let home = tempfile::tempdir().unwrap();
    let shadow = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let paths = generate(ws.path(), files, scale);
    let ws_bytes: u64 = paths.iter().map(|p| p.metadata().unwrap().len()).sum();
    // What the same objects take kept raw, as the store did before it
    // compressed: each file's length, at least a 4 KiB block.
    let raw_bytes: u64 = paths
        .iter()
        .map(|p| p.metadata().unwrap().len().div_ceil(4096).max(1) * 4096)
        .sum();
    let git_dir = shadow.path().join("git");
    Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&git_dir)
        .status()
        .unwrap();
    let store = CheckpointStore::open(home.path()).unwrap();
    settle();

    let store_dir = store.dir().to_path_buf();
    let t = Instant::now();
    let mut previous = store.snapshot(ws.path(), None).unwrap();
    let ours_first = t.elapsed();
    let ours_bytes = on_disk(&store_dir);
    let t = Instant::now();
    git_commit(&git_dir, ws.path(), "first");
    let git_first = t.elapsed();
    let git_bytes = on_disk(&git_dir);
    println!(
        "workspace: {} in {files} files (+ an ignored target/ of {}); their contents kept raw would take {} ({:.2}x git's)",
        mib(ws_bytes),
        files / 10,
        mib(raw_bytes),
        raw_bytes as f64 / git_bytes as f64
    );
    println!(
        "first checkpoint: store {} in {} | shadow git {} in {} | size {:.2}x git's, time {:.2}x",
        mib(ours_bytes),
        ms(ours_first),
        mib(git_bytes),
        ms(git_first),
        ours_bytes as f64 / git_bytes as f64,
        ours_first.as_secs_f64() / git_first.as_secs_f64()
    );

    let (mut ours, mut theirs) = (Side::default(), Side::default());
    for r in 0..rounds {
        settle();
        let changed = change(&paths, r);
        // Record the turn: each side in turn, alternating which goes first.
        let record_ours = |side: &mut Side| {
            let before = on_disk(&store_dir);
            let t = Instant::now();
            let now = store.snapshot(ws.path(), Some(&previous)).unwrap();
            side.turn.push(t.elapsed());
            side.growth.push(on_disk(&store_dir) - before);
            now
        };
        let record_git = |side: &mut Side| {
            let before = on_disk(&git_dir);
            let t = Instant::now();
            git_commit(&git_dir, ws.path(), &format!("turn {r}"));
            side.turn.push(t.elapsed());
            side.growth.push(on_disk(&git_dir) - before);
        };
        let after = if r % 2 == 0 {
            let after = record_ours(&mut ours);
            record_git(&mut theirs);
            after
        } else {
            record_git(&mut theirs);
            record_ours(&mut ours)
        };
        settle();
        // Undo the turn, each side from the same 10 changed files.
        let undo_ours = |side: &mut Side| {
            let t = Instant::now();
            let now = store.snapshot(ws.path(), Some(&after)).unwrap();
            store.restore(ws.path(), &previous, &now).unwrap();
            side.undo.push(t.elapsed());
            assert!(all_back(&changed));
        };
        let undo_git = |side: &mut Side| {
            let t = Instant::now();
            git(
                &git_dir,
                ws.path(),
                &["read-tree", "-u", "--reset", "HEAD~1"],
            );
            side.undo.push(t.elapsed());
            assert!(all_back(&changed));
        };
        let redo = || {
            for (k, (p, _)) in changed.iter().enumerate() {
                let len = std::fs::metadata(p).unwrap().len() as usize;
                std::fs::write(p, text(2_000_000 + r * 100 + k, len)).unwrap();
            }
        };
        if r % 2 == 0 {
            undo_ours(&mut ours);
            redo();
            undo_git(&mut theirs);
        } else {
            undo_git(&mut theirs);
            redo();
            undo_ours(&mut ours);
        }
        // The git index now holds HEAD~1's tree: the next `add -A` makes
        // it the workspace again.
        settle();
        previous = store.snapshot(ws.path(), Some(&after)).unwrap();
    }
    let med = |v: &[u64]| {
        let mut v = v.to_vec();
        v.sort();
        v[v.len() / 2]
    };
    println!(
        "per turn (10 files changed): store {} growing {} | shadow git {} growing {} | growth {:.2}x git's, time {:.2}x",
        ms(median(ours.turn.clone())),
        kib(med(&ours.growth)),
        ms(median(theirs.turn.clone())),
        kib(med(&theirs.growth)),
        med(&ours.growth) as f64 / med(&theirs.growth) as f64,
        median(ours.turn.clone()).as_secs_f64() / median(theirs.turn.clone()).as_secs_f64()
    );
    println!(
        "undo that turn: snapshot + restore {} | git read-tree -u --reset {} | {:.2}x",
        ms(median(ours.undo.clone())),
        ms(median(theirs.undo.clone())),
        median(ours.undo.clone()).as_secs_f64() / median(theirs.undo.clone()).as_secs_f64()
    );
}
