#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly

//! Files with holes (`truncate -s 64M` and a few KiB written): they cost
//! the store what they hold, not their length, and come back identical
//! and still sparse.

mod common;

use common::Fixture;
use scv_checkpoint::{Checkpoint, MAX_CONTENT_BYTES};
use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

/// What `root` takes on disk, read without the crate: every file and
/// directory, the larger of its length and its allocated blocks.
fn on_disk(root: &Path) -> u64 {
    let cost = |m: &std::fs::Metadata| m.len().max(m.blocks() * 512);
    let mut total = cost(&std::fs::symlink_metadata(root).unwrap());
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            total += cost(&meta);
            if meta.is_dir() {
                stack.push(path);
            }
        }
    }
    total
}

fn unique(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8 | 1
        })
        .collect()
}

/// A file of `len` bytes, nothing allocated but `data` at its offsets.
fn sparse(path: &Path, len: u64, data: &[(u64, Vec<u8>)]) {
    let file = File::create(path).unwrap();
    file.set_len(len).unwrap();
    for (at, bytes) in data {
        file.write_all_at(bytes, *at).unwrap();
    }
}

/// Whether two files hold the same bytes (read in pieces, holes too).
fn same(a: &Path, b: &Path) -> bool {
    let (fa, fb) = (File::open(a).unwrap(), File::open(b).unwrap());
    let len = fa.metadata().unwrap().len();
    if fb.metadata().unwrap().len() != len {
        return false;
    }
    let (mut x, mut y) = (vec![0u8; 4 << 20], vec![0u8; 4 << 20]);
    let mut at = 0;
    while at < len {
        let n = x.len().min((len - at) as usize);
        fa.read_exact_at(&mut x[..n], at).unwrap();
        fb.read_exact_at(&mut y[..n], at).unwrap();
        if x[..n] != y[..n] {
            return false;
        }
        at += n as u64;
    }
    true
}

fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn sparse_files_cost_the_store_what_they_hold_and_come_back_identical_and_sparse() {
    let f = Fixture::new();
    // Finding l04: eight files of 64 MiB, 4 KiB of data each (at offsets
    // of their own, not page-aligned), and one of 256 MiB past the 64 MiB
    // of content a file may store, holding 8 KiB.
    let mut names = Vec::new();
    for i in 0..8u64 {
        let name = format!("disk{i}.img");
        sparse(
            &f.path().join(&name),
            64 << 20,
            &[
                (i * (7 << 20) + 123, unique(i, 3000)),
                ((64 << 20) - 5000 - i * 4096, unique(i + 100, 1096)),
            ],
        );
        names.push(name);
    }
    sparse(
        &f.path().join("huge.img"),
        256 << 20,
        &[(100 << 20, unique(9, 8192))],
    );
    names.push("huge.img".to_string());
    for name in &names {
        assert!(allocated(&f.path().join(name)) < 64 * 1024, "{name}");
    }
    let empty = on_disk(f.store.dir());
    let before = f.store.snapshot(f.path(), None).unwrap();
    let growth = on_disk(f.store.dir()) - empty;
    eprintln!(
        "{} sparse files, {} MiB apparent, 40 KiB of data: the store grew by {growth} bytes",
        names.len(),
        (8 * 64 + 256)
    );
    assert!(growth < 512 * 1024, "the store grew by {growth} bytes");
    assert!(
        before.metadata_only.is_empty(),
        "{:?}",
        before.metadata_only
    );
    assert!(before.get("huge.img").unwrap().has_content);
    assert_eq!(before.get("huge.img").unwrap().size, 256 << 20);
    assert_eq!(f.store.bytes(), on_disk(f.store.dir()));

    // Kept aside to compare with (holes kept).
    let saved = tempfile::tempdir().unwrap();
    for name in &names {
        common::sh(
            f.path(),
            &format!(
                "cp --sparse=always {name} {}/{name}",
                saved.path().display()
            ),
        );
    }
    // The agent: deletes one, overwrites another's data, truncates one,
    // writes into a hole of another, fills one with data.
    std::fs::remove_file(f.path().join("disk0.img")).unwrap();
    File::options()
        .write(true)
        .open(f.path().join("disk1.img"))
        .unwrap()
        .write_all_at(&unique(50, 3000), (7 << 20) + 123)
        .unwrap();
    File::options()
        .write(true)
        .open(f.path().join("disk2.img"))
        .unwrap()
        .set_len(10)
        .unwrap();
    File::options()
        .write(true)
        .open(f.path().join("disk3.img"))
        .unwrap()
        .write_all_at(b"in a hole", 40 << 20)
        .unwrap();
    std::fs::write(f.path().join("disk4.img"), unique(60, 64 * 1024)).unwrap();
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    let changed = f.store.changes(&before, &now);
    assert_eq!(changed.len(), 5, "{changed:?}");
    let restored = f.store.restore(f.path(), &before, &now).unwrap();
    assert_eq!(restored.len(), 5);
    for name in &names {
        let path = f.path().join(name);
        assert!(same(&path, &saved.path().join(name)), "{name} differs");
        // Sparse again: its holes are not written.
        assert!(
            allocated(&path) < 256 * 1024,
            "{name}: {}",
            allocated(&path)
        );
    }
    // Restored, they are unchanged for the next snapshot.
    let again = f.store.snapshot(f.path(), Some(&now)).unwrap();
    assert!(f.store.changes(&before, &again).is_empty());
}

#[test]
fn an_unchanged_sparse_file_is_not_read_again_after_a_sweep() {
    let f = Fixture::new();
    sparse(
        &f.path().join("a.img"),
        64 << 20,
        &[(12345, unique(1, 5000))],
    );
    common::settle();
    let first = f.store.snapshot(f.path(), None).unwrap();
    assert_eq!(first.stats.files_read, 1);
    assert_eq!(first.stats.bytes_read, 8192, "its data pages only");
    let checkpoint = Checkpoint {
        checkpoint_id: "ck-1".into(),
        turn_id: "t".into(),
        prompt: String::new(),
        created_unix_seconds: 1,
        before: first.id.clone(),
        after: None,
        late: Vec::new(),
    };
    f.store.save_index("abcd", &[checkpoint]).unwrap();
    // Something to sweep, so the store's generation moves on: the next
    // snapshot checks that what it reuses is still stored.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("x"), "garbage").unwrap();
    f.store.snapshot(other.path(), None).unwrap();
    let out = f.store.enforce(u64::MAX, &HashSet::new());
    assert!(out.swept > 0, "{out:?}");
    let second = f.store.snapshot(f.path(), Some(&first)).unwrap();
    assert_eq!(second.id, first.id);
    assert_eq!(second.stats.files_read, 0);
}

#[test]
fn only_what_is_to_be_stored_counts_against_64_mib() {
    let f = Fixture::new();
    // Past 64 MiB of data: by size only, as before.
    let big = File::create(f.path().join("big.bin")).unwrap();
    rustix::fs::fallocate(
        &big,
        rustix::fs::FallocateFlags::empty(),
        0,
        MAX_CONTENT_BYTES + 4096,
    )
    .unwrap();
    drop(big);
    // Far past 64 MiB long, but a few KiB of data: stored.
    sparse(
        &f.path().join("long.img"),
        4 * MAX_CONTENT_BYTES,
        &[(3 * MAX_CONTENT_BYTES, unique(7, 4096))],
    );
    let snap = f.store.snapshot(f.path(), None).unwrap();
    assert_eq!(snap.metadata_only, vec!["big.bin"]);
    assert!(snap.get("long.img").unwrap().has_content);
}
