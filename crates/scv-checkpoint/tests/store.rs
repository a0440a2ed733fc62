#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly

//! The store: private, refusing what is planted or damaged (never
//! following it, never letting a restore write), indexes, and the bound.

mod common;

use common::{disk, settle, Fixture};
use scv_checkpoint::{
    Checkpoint, CheckpointError, CheckpointStore, Enforced, RestoreError, Snapshot, SnapshotId,
};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn object(store: &CheckpointStore, dir: &str, hash: &str) -> PathBuf {
    store.dir().join(dir).join(&hash[..2]).join(&hash[2..])
}

fn blob_of(store: &CheckpointStore, content: &[u8]) -> PathBuf {
    object(store, "objects", &hex(content))
}

fn tree_of(store: &CheckpointStore, id: &SnapshotId) -> PathBuf {
    object(store, "trees", &id.0)
}

fn corrupt(err: &CheckpointError) -> bool {
    matches!(err, CheckpointError::Corrupt(_))
}

#[test]
fn the_store_is_private_and_refused_when_not() {
    let home = tempfile::tempdir().unwrap();
    let store = CheckpointStore::open(home.path()).unwrap();
    let mode = std::fs::metadata(store.dir()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
    for sub in ["objects", "trees", "sessions", "tmp"] {
        let m = std::fs::symlink_metadata(store.dir().join(sub)).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.permissions().mode() & 0o777, 0o700);
    }
    std::fs::set_permissions(store.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(matches!(
        CheckpointStore::open(home.path()),
        Err(CheckpointError::Unsafe(_))
    ));
    // A link in its place is never followed.
    let other = tempfile::tempdir().unwrap();
    let home2 = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(other.path(), home2.path().join("checkpoints")).unwrap();
    assert!(matches!(
        CheckpointStore::open(home2.path()),
        Err(CheckpointError::Unsafe(_))
    ));
    // Nor a link for one of its directories.
    let home3 = tempfile::tempdir().unwrap();
    let dir = home3.path().join("checkpoints");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(other.path(), dir.join("objects")).unwrap();
    assert!(matches!(
        CheckpointStore::open(home3.path()),
        Err(CheckpointError::Unsafe(_))
    ));
    assert_eq!(std::fs::read_dir(other.path()).unwrap().count(), 0);
}

/// A workspace, its snapshot, an edit, and the now snapshot.
fn edited() -> (Fixture, Snapshot, Snapshot) {
    let f = Fixture::new();
    f.sh("mkdir -p src && printf 'original\\n' > src/a.txt && echo b > b.txt");
    let before = f.store.snapshot(f.path(), None).unwrap();
    f.sh("echo edited > src/a.txt && rm b.txt && echo n > new.txt");
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    (f, before, now)
}

fn refused_and_untouched(f: &Fixture, before: &Snapshot, now: &Snapshot) {
    let disk_now = disk(f.path());
    match f.store.restore(f.path(), before, now) {
        Err(RestoreError::Store(err)) => assert!(corrupt(&err), "{err}"),
        other => panic!("expected the store's refusal, got {other:?}"),
    }
    assert_eq!(disk(f.path()), disk_now);
}

#[test]
fn a_blob_that_does_not_match_its_hash_is_refused_and_nothing_is_written() {
    let (f, before, now) = edited();
    let blob = blob_of(&f.store, b"original\n");
    std::fs::write(&blob, b"ORIGINAL\n").unwrap();
    refused_and_untouched(&f, &before, &now);
}

#[test]
fn a_blob_that_is_a_link_or_a_directory_is_refused() {
    let (f, before, now) = edited();
    let blob = blob_of(&f.store, b"original\n");
    // A link to a file with the right content is still refused.
    let elsewhere = tempfile::tempdir().unwrap();
    let good = elsewhere.path().join("good");
    std::fs::write(&good, b"original\n").unwrap();
    std::fs::remove_file(&blob).unwrap();
    std::os::unix::fs::symlink(&good, &blob).unwrap();
    refused_and_untouched(&f, &before, &now);
    std::fs::remove_file(&blob).unwrap();
    std::fs::create_dir(&blob).unwrap();
    refused_and_untouched(&f, &before, &now);
}

#[test]
fn damaged_trees_are_refused_on_load() {
    let (f, before, _now) = edited();
    let tree = tree_of(&f.store, &before.id);
    let good = std::fs::read(&tree).unwrap();
    assert!(f.store.load(&before.id).is_ok());
    let refused = |why: &str| {
        let err = f.store.load(&before.id).unwrap_err();
        assert!(corrupt(&err), "{why}: {err}");
    };
    std::fs::write(&tree, b"not zlib at all").unwrap();
    refused("bad zlib");
    // Valid zlib of other bytes: the hash does not match.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(b"SCVT\x01\x00").unwrap();
    std::fs::write(&tree, z.finish().unwrap()).unwrap();
    refused("a hash that does not match");
    let elsewhere = tempfile::tempdir().unwrap();
    let copy = elsewhere.path().join("copy");
    std::fs::write(&copy, &good).unwrap();
    std::fs::remove_file(&tree).unwrap();
    std::os::unix::fs::symlink(&copy, &tree).unwrap();
    refused("a link");
    std::fs::remove_file(&tree).unwrap();
    std::fs::create_dir(&tree).unwrap();
    refused("a directory");
    std::fs::remove_dir(&tree).unwrap();
    assert!(matches!(
        f.store.load(&before.id),
        Err(CheckpointError::Missing(_))
    ));
    std::fs::write(&tree, &good).unwrap();
    assert!(f.store.load(&before.id).is_ok());
    // A subtree damaged: the whole snapshot is refused.
    let sub = before.entries();
    assert!(sub.iter().any(|e| e.path == "src"));
    let trees: Vec<_> = walkdir(&f.store.dir().join("trees"));
    for t in &trees {
        if t != &tree {
            std::fs::write(t, b"junk").unwrap();
        }
    }
    let loaded = f.store.load(&before.id);
    assert!(loaded.is_err());
}

fn walkdir(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Plants a tree with `data` under its true hash.
fn plant(store: &CheckpointStore, data: &[u8]) -> SnapshotId {
    let id = hex(data);
    let path = object(store, "trees", &id);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).unwrap();
    std::fs::write(&path, z.finish().unwrap()).unwrap();
    SnapshotId(id)
}

#[test]
fn a_planted_tree_aiming_elsewhere_is_refused_even_with_its_true_hash() {
    let f = Fixture::new();
    for name in ["..", ".git", "a/b", "", "."] {
        // One skipped entry (tag 5, empty reason) named `name`.
        let mut data = b"SCVT\x01\x01".to_vec();
        data.push(name.len() as u8);
        data.extend_from_slice(name.as_bytes());
        data.extend_from_slice(&[5, 0]);
        let id = plant(&f.store, &data);
        let err = f.store.load(&id).unwrap_err();
        assert!(corrupt(&err), "{name:?}: {err}");
    }
    // And a well-formed one loads.
    let mut data = b"SCVT\x01\x01".to_vec();
    data.push(1);
    data.extend_from_slice(b"x");
    data.extend_from_slice(&[5, 0]);
    let id = plant(&f.store, &data);
    assert_eq!(f.store.load(&id).unwrap().skipped.len(), 1);
    // An id that is not one never becomes a path.
    for bad in ["../../etc/passwd", "ABCDEF", ""] {
        assert!(matches!(
            f.store.load(&SnapshotId(bad.to_string())),
            Err(CheckpointError::InvalidId { .. })
        ));
    }
}

fn checkpoint(id: &str, at: u64, before: &Snapshot, after: Option<&Snapshot>) -> Checkpoint {
    Checkpoint {
        checkpoint_id: id.to_string(),
        turn_id: format!("turn-{id}"),
        prompt: "do it".into(),
        created_unix_seconds: at,
        before: before.id.clone(),
        after: after.map(|s| s.id.clone()),
        late: Vec::new(),
    }
}

#[test]
fn indexes_round_trip_and_refuse_damage() {
    let (f, before, now) = edited();
    let session = "0123abcd-ef45-6789-abcd-ef0123456789";
    assert!(f.store.index(session).unwrap().is_empty());
    let id = scv_checkpoint::new_checkpoint_id(&before.id);
    assert!(id.starts_with("ck-") && id.len() == 19, "{id}");
    assert!(scv_checkpoint::valid_checkpoint_id(&id));
    let list = vec![
        checkpoint(&id, 1, &before, Some(&now)),
        checkpoint("ck-2", 2, &now, None),
    ];
    f.store.save_index(session, &list).unwrap();
    assert_eq!(f.store.index(session).unwrap(), list);
    let path = f
        .store
        .dir()
        .join("sessions")
        .join(format!("{session}.json"));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    for bad in ["../escape", "x/y", "", &"a".repeat(65), "zz"] {
        assert!(matches!(
            f.store.index(bad),
            Err(CheckpointError::InvalidId { .. })
        ));
        assert!(f.store.save_index(bad, &list).is_err());
    }
    let mut wrong = list.clone();
    wrong[0].checkpoint_id = "../x".into();
    assert!(f.store.save_index(session, &wrong).is_err());
    wrong[0].checkpoint_id = "ok".into();
    wrong[0].before = SnapshotId("nothex".into());
    assert!(f.store.save_index(session, &wrong).is_err());
    // Damage: bad JSON, a link.
    std::fs::write(&path, b"{not json").unwrap();
    assert!(corrupt(&f.store.index(session).unwrap_err()));
    let elsewhere = tempfile::tempdir().unwrap();
    let real = elsewhere.path().join("index.json");
    std::fs::write(&real, b"{\"version\":1,\"checkpoints\":[]}").unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&real, &path).unwrap();
    assert!(corrupt(&f.store.index(session).unwrap_err()));
    f.store.delete_session(session).unwrap();
    assert!(f.store.index(session).unwrap().is_empty());
    assert!(real.exists());
    f.store.delete_session(session).unwrap();
}

/// A snapshot of a workspace holding one file of `kib` KiB unique to `n`.
fn unique_snapshot(f: &Fixture, n: usize, kib: usize) -> Snapshot {
    // Noise, so the store's compression keeps every byte of it.
    let mut x = (n as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let content: Vec<u8> = (0..kib * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    assert_eq!(content.len(), kib * 1024);
    std::fs::write(f.path().join("unique.txt"), content).unwrap();
    std::fs::write(f.path().join("shared.txt"), "shared by all\n").unwrap();
    f.store.snapshot(f.path(), None).unwrap()
}

fn evicted(out: &Enforced) -> Vec<String> {
    out.evicted
        .iter()
        .map(|(s, c)| format!("{s}/{c}"))
        .collect()
}

/// Materializes `snap` in a fresh directory (a restore over an empty
/// workspace): whether every object it needs is there.
fn whole(store: &CheckpointStore, snap: &Snapshot) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let empty = store.snapshot(dir.path(), None).unwrap();
    store.restore(dir.path(), snap, &empty).is_ok()
}

#[test]
fn enforce_evicts_the_oldest_never_what_is_kept_and_sweeps() {
    let f = Fixture::new();
    // Two sessions, interleaved in time, 100 KiB unique per snapshot.
    let mut snaps = Vec::new();
    for n in 0..10 {
        snaps.push(unique_snapshot(&f, n, 100));
    }
    let a = "aaaa";
    let b = "bbbb";
    let a_list = vec![
        checkpoint("a1", 10, &snaps[0], Some(&snaps[1])),
        checkpoint("a2", 30, &snaps[2], Some(&snaps[3])),
        checkpoint("a3", 50, &snaps[4], None),
    ];
    let b_list = vec![
        checkpoint("b1", 20, &snaps[5], Some(&snaps[6])),
        checkpoint("b2", 40, &snaps[7], Some(&snaps[8])),
    ];
    f.store.save_index(a, &a_list).unwrap();
    f.store.save_index(b, &b_list).unwrap();
    // snaps[9] is in no index: swept by any enforce. The contents only
    // an `after` names (snaps 1, 3, 6, 8) go too: a restore never writes
    // an `after`, it only compares its trees.
    let keep: HashSet<String> = ["a3".to_string(), "b2".to_string()].into();
    let total = f.store.bytes();
    let out = f.store.enforce(u64::MAX, &keep);
    assert!(out.evicted.is_empty(), "{out:?}");
    assert!(out.errors.is_empty(), "{out:?}");
    assert!(!out.over);
    assert_eq!(
        out.swept, 6,
        "snaps[9]'s tree, its blob and 4 after-only blobs"
    );
    assert!(out.swept_bytes > 500 * 1024);
    assert_eq!(out.bytes, f.store.bytes());
    assert!(out.bytes < total);
    assert!(f.store.load(&snaps[9].id).is_err());
    for after in [1, 3, 6, 8] {
        assert!(f.store.load(&snaps[after].id).is_ok(), "snapshot {after}");
        assert!(!whole(&f.store, &snaps[after]), "snapshot {after}");
    }
    // Room for about one checkpoint and a half less: the two oldest go
    // (a1 at 10, b1 at 20), not a3 or b2.
    let out = f.store.enforce(out.bytes - 150 * 1024, &keep);
    assert_eq!(evicted(&out), vec!["aaaa/a1", "bbbb/b1"], "{out:?}");
    assert!(out.errors.is_empty(), "{out:?}");
    assert!(!out.over);
    assert!(out.swept >= 6);
    let ids = |s: &str| -> Vec<String> {
        f.store
            .index(s)
            .unwrap()
            .into_iter()
            .map(|c| c.checkpoint_id)
            .collect()
    };
    assert_eq!(ids(a), vec!["a2", "a3"]);
    assert_eq!(ids(b), vec!["b2"]);
    for gone in [0, 1, 5, 6] {
        assert!(matches!(
            f.store.load(&snaps[gone].id),
            Err(CheckpointError::Missing(_))
        ));
    }
    for left in [2, 4, 7] {
        assert!(whole(&f.store, &snaps[left]), "snapshot {left}");
    }
    // Nothing fits: all but what is kept goes, what is kept is whole, and
    // the store says it is still past its bound.
    let out = f.store.enforce(0, &keep);
    assert_eq!(evicted(&out), vec!["aaaa/a2"]);
    assert!(out.over);
    assert_eq!(ids(a), vec!["a3"]);
    assert_eq!(ids(b), vec!["b2"]);
    for left in [4, 7] {
        assert!(whole(&f.store, &snaps[left]), "snapshot {left}");
    }
    assert!(f.store.load(&snaps[8].id).is_ok());
    assert!(f.store.load(&snaps[2].id).is_err());
    // A session with nothing left loses its index file.
    let out = f.store.enforce(0, &HashSet::new());
    assert_eq!(evicted(&out), vec!["bbbb/b2", "aaaa/a3"]);
    assert!(!f.store.dir().join("sessions/aaaa.json").exists());
    assert!(!f.store.dir().join("sessions/bbbb.json").exists());
}

#[test]
fn nothing_is_swept_while_an_index_cannot_be_read() {
    let f = Fixture::new();
    let snap = unique_snapshot(&f, 1, 10);
    std::fs::write(f.store.dir().join("sessions/cccc.json"), b"[broken").unwrap();
    let out = f.store.enforce(0, &HashSet::new());
    assert_eq!(out.swept, 0);
    assert_eq!(out.errors.len(), 1, "{out:?}");
    assert!(whole(&f.store, &snap));
}

#[test]
fn a_snapshot_after_a_sweep_does_not_lend_swept_hashes() {
    let f = Fixture::new();
    f.sh("mkdir d && for i in $(seq 1 20); do echo $i > d/f$i; done");
    settle();
    let first = f.store.snapshot(f.path(), None).unwrap();
    // Not indexed: swept whole.
    let out = f.store.enforce(u64::MAX, &HashSet::new());
    assert!(out.swept > 20, "{out:?}");
    let second = f.store.snapshot(f.path(), Some(&first)).unwrap();
    assert_eq!(second.stats.files_read, 20);
    assert!(whole(&f.store, &second));
}

#[test]
fn a_link_planted_in_the_store_is_removed_by_the_sweep_not_followed() {
    let f = Fixture::new();
    let victim_dir = tempfile::tempdir().unwrap();
    let victim = victim_dir.path().join("precious");
    std::fs::write(&victim, b"keep me").unwrap();
    let fan = f.store.dir().join("objects/ab");
    std::fs::create_dir_all(&fan).unwrap();
    std::os::unix::fs::symlink(&victim, fan.join("c".repeat(62))).unwrap();
    std::os::unix::fs::symlink(victim_dir.path(), f.store.dir().join("objects/zz")).unwrap();
    let out = f.store.enforce(u64::MAX, &HashSet::new());
    assert!(out.swept >= 2, "{out:?}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    assert!(!f.store.dir().join("objects/zz").exists());
}
