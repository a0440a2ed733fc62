#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly

//! Recording: what is recorded and what is skipped, never hanging or
//! following a link, reuse of unchanged files, dedup and growth.

mod common;

use common::{is_root, settle, within, Fixture};
use scv_checkpoint::{CheckpointStore, EntryKind, RestoreError, MAX_CONTENT_BYTES};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

#[test]
fn records_files_links_directories_and_modes_but_not_git_or_ignored() {
    let f = Fixture::new();
    f.sh(
        "mkdir -p a/b empty .git/objects && echo x > a/b/f && echo y > .hidden \
         && printf '#!/bin/sh\\n' > run && chmod 755 run && chmod 600 .hidden \
         && ln -s a/b/f link && echo g > .git/HEAD && echo 'ignored*' > .gitignore \
         && echo i > ignored.txt && mkdir -p sub && echo '*.tmp' > sub/.ignore \
         && echo t > sub/x.tmp && echo k > sub/keep.txt && echo t > top.tmp \
         && printf 'data/\\n!data/keep\\n' >> .gitignore && mkdir -p data && echo d > data/keep",
    );
    let snap = f.store.snapshot(f.path(), None).unwrap();
    let paths: Vec<_> = snap.entries().into_iter().map(|e| e.path).collect();
    assert_eq!(
        paths,
        vec![
            ".gitignore",
            ".hidden",
            "a",
            "a/b",
            "a/b/f",
            "empty",
            "link",
            "run",
            "sub",
            "sub/.ignore",
            "sub/keep.txt",
            "top.tmp",
        ]
    );
    let run = snap.get("run").unwrap();
    assert!(run.executable());
    assert_eq!(snap.get(".hidden").unwrap().mode, 0o600);
    let link = snap.get("link").unwrap();
    assert_eq!(link.kind, EntryKind::Symlink);
    assert_eq!(link.link_target.as_deref(), Some("a/b/f"));
    assert_eq!(snap.get("a/b").unwrap().kind, EntryKind::Dir);
    assert_eq!(snap.len(), 8);
    assert!(snap.skipped.is_empty());
    // The id is the root tree's hash: the same workspace, the same id.
    let again = f.store.snapshot(f.path(), None).unwrap();
    assert_eq!(again.id, snap.id);
    assert_eq!(f.store.load(&snap.id).unwrap().files(), snap.files());
}

#[test]
fn fifos_sockets_dangling_and_outside_links_never_hang() {
    let f = Fixture::new();
    f.sh("mkfifo pipe && ln -s /nonexistent/x dangling && ln -s /etc/passwd outside && echo ok > ok.txt");
    let sock = f.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let home = f.home.path().to_path_buf();
    let ws = f.path().to_path_buf();
    let snap = within(60, move || {
        let store = CheckpointStore::open(&home).unwrap();
        store.snapshot(&ws, None).unwrap()
    });
    let skipped: Vec<_> = snap
        .skipped
        .iter()
        .map(|(p, why)| (p.as_str(), why.as_str()))
        .collect();
    assert_eq!(skipped, vec![("pipe", "a FIFO"), ("sock", "a socket")]);
    assert_eq!(
        snap.get("dangling").unwrap().link_target.as_deref(),
        Some("/nonexistent/x")
    );
    assert_eq!(
        snap.get("outside").unwrap().link_target.as_deref(),
        Some("/etc/passwd")
    );
    // A link is recorded as a link, so /etc/passwd's content is not in it.
    assert_eq!(
        snap.get("outside").unwrap().size,
        "/etc/passwd".len() as u64
    );
    // Skipped entries survive a load, and a restore leaves them be.
    let loaded = f.store.load(&snap.id).unwrap();
    assert_eq!(loaded.skipped, snap.skipped);
    f.sh("echo changed > ok.txt && rm pipe");
    let now = f.store.snapshot(f.path(), Some(&snap)).unwrap();
    f.store.restore(f.path(), &snap, &now).unwrap();
    assert_eq!(std::fs::read(f.path().join("ok.txt")).unwrap(), b"ok\n");
}

#[test]
fn a_workspace_holding_the_store_does_not_record_it() {
    let ws = tempfile::tempdir().unwrap();
    common::sh(ws.path(), "mkdir .scv && echo a > a.txt");
    let store = CheckpointStore::open(&ws.path().join(".scv")).unwrap();
    let first = store.snapshot(ws.path(), None).unwrap();
    let second = store.snapshot(ws.path(), Some(&first)).unwrap();
    let paths: Vec<_> = second.files().into_iter().map(|e| e.path).collect();
    assert_eq!(paths, vec!["a.txt"]);
    assert_eq!(
        second.skipped,
        vec![(
            ".scv/checkpoints".to_string(),
            "the checkpoint store itself".to_string()
        )]
    );
}

#[test]
fn an_unreadable_file_is_skipped() {
    if is_root() {
        // Root reads a file whatever its mode (and a directory without x):
        // nothing here is unreadable to it, so there is nothing to skip.
        eprintln!("skipped: running as root, nothing is unreadable");
        return;
    }
    let f = Fixture::new();
    f.sh("echo s > secret && chmod 000 secret && echo ok > ok");
    let snap = f.store.snapshot(f.path(), None).unwrap();
    assert_eq!(snap.skipped.len(), 1);
    assert_eq!(snap.skipped[0].0, "secret");
    std::fs::set_permissions(
        f.path().join("secret"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
}

#[test]
fn a_hundred_thousand_files_never_hang() {
    let f = Fixture::new();
    // 100 directories of 1,000 empty-ish files.
    for d in 0..100 {
        let dir = f.path().join(format!("d{d:03}"));
        std::fs::create_dir(&dir).unwrap();
        for i in 0..1000 {
            std::fs::write(dir.join(format!("f{i}")), format!("{d}-{i}")).unwrap();
        }
    }
    let home = f.home.path().to_path_buf();
    let ws: PathBuf = f.path().to_path_buf();
    let (first, second) = within(600, move || {
        let store = CheckpointStore::open(&home).unwrap();
        let first = store.snapshot(&ws, None).unwrap();
        let second = store.snapshot(&ws, Some(&first)).unwrap();
        (first, second)
    });
    assert_eq!(first.len(), 100_000);
    assert_eq!(second.len(), 100_000);
    assert!(f.store.changes(&first, &second).is_empty());
}

#[test]
fn a_second_snapshot_reads_only_what_changed() {
    let f = Fixture::new();
    for d in 0..40 {
        let dir = f.path().join(format!("dir{d}/sub"));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..50 {
            std::fs::write(dir.join(format!("f{i}.txt")), format!("{d} {i}\n")).unwrap();
        }
    }
    settle();
    let first = f.store.snapshot(f.path(), None).unwrap();
    assert_eq!(first.stats.files_read, 2000);
    let unchanged = f.store.snapshot(f.path(), Some(&first)).unwrap();
    assert_eq!(unchanged.id, first.id);
    assert_eq!(unchanged.stats.files_read, 0);
    assert_eq!(unchanged.stats.trees_written, 0);
    for d in 0..10 {
        std::fs::write(
            f.path().join(format!("dir{d}/sub/f7.txt")),
            format!("changed {d}\n"),
        )
        .unwrap();
    }
    let second = f.store.snapshot(f.path(), Some(&first)).unwrap();
    assert_eq!(second.stats.files_read, 10);
    // Each changed file's directory, its parent, and the root.
    assert_eq!(second.stats.trees_written, 21);
    assert_eq!(f.store.changes(&first, &second).len(), 10);
    // A loaded snapshot lends its hashes as well as a fresh one.
    let loaded = f.store.load(&first.id).unwrap();
    let third = f.store.snapshot(f.path(), Some(&loaded)).unwrap();
    assert_eq!(third.id, second.id);
    assert_eq!(third.stats.files_read, 10);
}

#[test]
fn a_file_changed_within_the_racy_window_is_read_again() {
    let f = Fixture::new();
    f.sh("echo aaaa > f");
    let first = f.store.snapshot(f.path(), None).unwrap();
    // Same size, and possibly the same coarse timestamp.
    f.sh("echo bbbb > f");
    let second = f.store.snapshot(f.path(), Some(&first)).unwrap();
    assert_eq!(second.stats.files_read, 1);
    assert_ne!(second.id, first.id);
    let (diff, cut) = f.store.unified_diff(&first, &second, 10_000).unwrap();
    assert!(!cut);
    assert!(diff.contains("-aaaa\n+bbbb\n"), "{diff}");
}

#[test]
fn the_same_tree_twice_adds_nothing_and_ten_changes_add_little() {
    let f = Fixture::new();
    for d in 0..20 {
        let dir = f.path().join(format!("src/mod{d}/deep"));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..50 {
            std::fs::write(dir.join(format!("f{i}.rs")), "x".repeat(2000 + i)).unwrap();
        }
    }
    settle();
    let first = f.store.snapshot(f.path(), None).unwrap();
    let bytes = f.store.bytes();
    let same = f.store.snapshot(f.path(), Some(&first)).unwrap();
    assert_eq!(same.id, first.id);
    assert_eq!(f.store.bytes(), bytes, "the same tree added bytes");
    // Another session's snapshot of a copy: the blobs are shared.
    let copy = tempfile::tempdir().unwrap();
    common::sh(copy.path(), &format!("cp -r {}/src .", f.path().display()));
    f.store.snapshot(copy.path(), None).unwrap();
    let blobs_added = f.store.bytes() - bytes;
    // The store counts what its files take on disk: the copy's 42 trees
    // are a block each, with their fan-out directories; its 1,000 blobs
    // would be 4 MB.
    assert!(
        blobs_added < 400 * 1024,
        "a copy added {blobs_added} bytes (only trees should be new)"
    );
    let bytes = f.store.bytes();
    let mut changed = 0;
    for d in 0..10 {
        let content = "y".repeat(4096);
        changed += content.len();
        std::fs::write(f.path().join(format!("src/mod{d}/deep/f3.rs")), content).unwrap();
    }
    f.store.snapshot(f.path(), Some(&first)).unwrap();
    let growth = f.store.bytes() - bytes;
    eprintln!("10 changed files ({changed} bytes) grew the store by {growth} bytes");
    // The blobs, and the 22 trees on their paths (each a block on disk,
    // perhaps with a new fan-out directory): never the unchanged files.
    assert!(
        growth as usize <= changed + 22 * 8 * 1024,
        "grew {growth} for {changed} changed"
    );
}

fn allocate(file: &std::fs::File, len: u64) {
    rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len).unwrap();
}

#[test]
fn a_big_file_is_recorded_by_metadata_only_and_a_restore_needing_it_refuses() {
    let f = Fixture::new();
    f.sh("echo small > small.txt");
    let big = f.path().join("big.bin");
    let file = std::fs::File::create(&big).unwrap();
    // Allocated, not sparse: 64 MiB and a byte to store.
    allocate(&file, MAX_CONTENT_BYTES + 1);
    drop(file);
    let before = f.store.snapshot(f.path(), None).unwrap();
    assert_eq!(before.metadata_only, vec!["big.bin"]);
    assert!(!before.get("big.bin").unwrap().has_content);
    assert!(f.store.bytes() < 1024 * 1024);
    // The agent deletes it and edits another: undoing needs its content.
    f.sh("rm big.bin && echo changed > small.txt");
    let disk_now = common::disk(f.path());
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    match f.store.restore(f.path(), &before, &now) {
        Err(RestoreError::NeedsContent(paths)) => assert_eq!(paths, vec!["big.bin"]),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(common::disk(f.path()), disk_now);
    let (diff, _) = f.store.unified_diff(&before, &now, 10_000).unwrap();
    assert!(diff.contains("recorded without it"), "{diff}");
}

#[test]
fn a_big_file_the_agent_made_can_still_be_undone() {
    let f = Fixture::new();
    f.sh("echo small > small.txt");
    let before = f.store.snapshot(f.path(), None).unwrap();
    let file = std::fs::File::create(f.path().join("big.bin")).unwrap();
    // Allocated, not sparse: 64 MiB and a byte to store.
    allocate(&file, MAX_CONTENT_BYTES + 1);
    drop(file);
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    assert_eq!(now.metadata_only, vec!["big.bin"]);
    f.store.restore(f.path(), &before, &now).unwrap();
    assert!(!f.path().join("big.bin").exists());
}

#[test]
fn unified_diffs_show_text_and_name_the_rest() {
    let f = Fixture::new();
    f.sh("printf 'a\\nb\\nc\\n' > t.txt && printf 'x\\0y' > bin && echo gone > gone.txt");
    let from = f.store.snapshot(f.path(), None).unwrap();
    f.sh("printf 'a\\nB\\nc\\n' > t.txt && printf 'x\\0z' > bin && rm gone.txt && echo new > new.txt && chmod +x new.txt");
    let to = f.store.snapshot(f.path(), Some(&from)).unwrap();
    let (diff, cut) = f.store.unified_diff(&from, &to, 100_000).unwrap();
    assert!(!cut);
    assert!(
        diff.contains("Binary files a/bin and b/bin differ"),
        "{diff}"
    );
    assert!(
        diff.contains("--- a/t.txt\n+++ b/t.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"),
        "{diff}"
    );
    assert!(
        diff.contains("--- a/gone.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-gone\n"),
        "{diff}"
    );
    assert!(
        diff.contains("--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,1 @@\n+new\n"),
        "{diff}"
    );
    let (short, cut) = f.store.unified_diff(&from, &to, 40).unwrap();
    assert!(cut);
    assert!(short.len() <= 40);
}

#[test]
fn a_workspace_past_the_limits_is_refused_as_too_large() {
    use scv_checkpoint::{CheckpointError, SnapshotLimits};
    let f = Fixture::new();
    f.sh("mkdir -p d && for i in $(seq 1 20); do echo $i > d/f$i; done && head -c 100000 /dev/zero > big");
    let entries = SnapshotLimits {
        max_entries: 10,
        max_bytes_read: u64::MAX,
    };
    let err = f
        .store
        .snapshot_within(f.path(), None, entries)
        .unwrap_err();
    assert!(matches!(err, CheckpointError::TooLarge(_)), "{err}");
    assert!(err.to_string().contains("more than 10 files"), "{err}");
    let bytes = SnapshotLimits {
        max_entries: u64::MAX,
        max_bytes_read: 50_000,
    };
    let err = f.store.snapshot_within(f.path(), None, bytes).unwrap_err();
    assert!(matches!(err, CheckpointError::TooLarge(_)), "{err}");
    // Within them, as without.
    let roomy = SnapshotLimits {
        max_entries: 100,
        max_bytes_read: 1 << 20,
    };
    // Past the racy window, so the next snapshot trusts the stats.
    settle();
    let snap = f.store.snapshot_within(f.path(), None, roomy).unwrap();
    assert_eq!(snap.len(), f.store.snapshot(f.path(), None).unwrap().len());
    // What is unchanged since the previous snapshot is not read again, so
    // it does not count.
    let again = f
        .store
        .snapshot_within(f.path(), Some(&snap), bytes)
        .unwrap();
    assert_eq!(again.len(), snap.len());
}
