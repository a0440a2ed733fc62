#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench fails loudly

//! Checkpoints on repo-shaped workspaces of 20,000 and 100,000 files
//! (directories of at most 50 files, 3 to 4 deep, files of 1–8 KiB of
//! text, a `.gitignore` and an ignored `target/` full of files): the first
//! snapshot, a second one with `previous` after 10 files changed (median),
//! the store's growth per such checkpoint, the restore of those changes,
//! and the same with 10 files of 1 MiB. Prints; asserts no time.
//!
//! `SCV_BENCH_SIZES=20000` picks the sizes; `SCV_BENCH_ROUNDS=5` the
//! rounds per median.

mod support;

use scv_checkpoint::{CheckpointStore, Snapshot};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{generate, median, ms, settle, text};

/// CPU time of this process so far (every thread, user and system).
fn cpu() -> Duration {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn median_u64(mut v: Vec<u64>) -> u64 {
    v.sort();
    v[v.len() / 2]
}

struct Round {
    snapshot: Duration,
    snapshot_cpu: Duration,
    restore: Duration,
    growth: u64,
    files_read: u64,
    trees_written: u64,
}

/// Changes 10 files (`size` bytes each, or their own size when 0), takes
/// a snapshot with `previous`, restores `previous`.
fn round(
    store: &CheckpointStore,
    ws: &Path,
    paths: &[PathBuf],
    previous: &Snapshot,
    r: usize,
    size: usize,
) -> (Round, Snapshot) {
    let step = paths.len() / 10;
    let mut changed = Vec::new();
    for k in 0..10 {
        let p = &paths[(k * step + r * 131) % paths.len()];
        let len = if size == 0 {
            std::fs::metadata(p).unwrap().len() as usize
        } else {
            size
        };
        std::fs::write(p, text(1_000_000 + r * 100 + k, len)).unwrap();
        changed.push(p.clone());
    }
    let bytes = store.bytes();
    let (t, c) = (Instant::now(), cpu());
    let now = store.snapshot(ws, Some(previous)).unwrap();
    let (snapshot, snapshot_cpu) = (t.elapsed(), cpu() - c);
    let growth = store.bytes() - bytes;
    let t = Instant::now();
    let undone = store.restore(ws, previous, &now).unwrap();
    let restore = t.elapsed();
    assert_eq!(undone.len(), 10);
    settle();
    let base = store.snapshot(ws, Some(&now)).unwrap();
    assert!(store.changes(previous, &base).is_empty());
    (
        Round {
            snapshot,
            snapshot_cpu,
            restore,
            growth,
            files_read: now.stats.files_read,
            trees_written: now.stats.trees_written,
        },
        base,
    )
}

fn bench(files: usize, rounds: usize) {
    let home = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let store = CheckpointStore::open(home.path()).unwrap();
    let t = Instant::now();
    let paths = generate(ws.path(), files, 1);
    let generated = t.elapsed();
    let bytes_ws: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    settle();
    let t = Instant::now();
    let first = store.snapshot(ws.path(), None).unwrap();
    let first_time = t.elapsed();
    let store_bytes = store.bytes();
    println!(
        "{files} files ({:.1} MiB, + {} ignored in target/; made in {}):",
        bytes_ws as f64 / 1048576.0,
        files / 10,
        ms(generated)
    );
    println!(
        "  first snapshot: {} ({} files read, {} trees, store {:.1} MiB)",
        ms(first_time),
        first.stats.files_read,
        first.stats.trees_written,
        store_bytes as f64 / 1048576.0
    );
    // The unchanged case: every stat compared, nothing read or written.
    let (mut same, mut same_cpu) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (t, c) = (Instant::now(), cpu());
        let s = store.snapshot(ws.path(), Some(&first)).unwrap();
        same.push(t.elapsed());
        same_cpu.push(cpu() - c);
        assert_eq!(s.stats.files_read, 0);
    }
    println!(
        "  second snapshot, nothing changed: {} ({} CPU; medians)",
        ms(median(same)),
        ms(median(same_cpu))
    );
    for (label, size) in [("10 files changed", 0usize), ("10 files of 1 MiB", 1 << 20)] {
        let mut base = first.clone();
        let mut rs = Vec::new();
        for r in 0..rounds {
            let (one, next) = round(&store, ws.path(), &paths, &base, r, size);
            rs.push(one);
            base = next;
        }
        println!(
            "  {label}: snapshot {} ({} CPU; read {}, {} trees written), store growth {:.1} KiB, restore {} (medians)",
            ms(median(rs.iter().map(|r| r.snapshot).collect())),
            ms(median(rs.iter().map(|r| r.snapshot_cpu).collect())),
            median_u64(rs.iter().map(|r| r.files_read).collect()),
            median_u64(rs.iter().map(|r| r.trees_written).collect()),
            median_u64(rs.iter().map(|r| r.growth).collect()) as f64 / 1024.0,
            ms(median(rs.iter().map(|r| r.restore).collect())),
        );
    }
    let t = Instant::now();
    let loaded = store.load(&first.id).unwrap();
    println!("  load (every tree read and verified): {}", ms(t.elapsed()));
    assert_eq!(loaded.len(), first.len());
}

fn main() {
    let sizes: Vec<usize> = std::env::var("SCV_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![20_000, 100_000]);
    let rounds = std::env::var("SCV_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    println!(
        "scv-checkpoint on {} threads",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    for files in sizes {
        bench(files, rounds);
    }
}
