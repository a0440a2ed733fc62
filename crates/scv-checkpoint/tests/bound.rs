#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly

//! The store's bound as a server keeps it: after every checkpoint, what
//! the store takes on disk — counted here independently of the crate,
//! every file and directory under it at the larger of its length and its
//! allocated blocks (so at least `du -s` and `du -sb`) — is within
//! `max_bytes`, whatever mix of files is checkpointed, and the newest
//! checkpoint can still be restored.

mod common;

use common::{disk, Disk, Fixture};
use scv_checkpoint::{Checkpoint, CheckpointStore, Enforced, Snapshot};
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// What `root` takes on disk, read without the crate.
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

/// One session's checkpoints kept as the server keeps them: an index
/// saved after each snapshot, then the bound, the newest kept.
struct Session<'a> {
    store: &'a CheckpointStore,
    id: &'static str,
    list: Vec<Checkpoint>,
    max_bytes: u64,
    /// The largest the store was after any checkpoint.
    peak: u64,
}

impl Session<'_> {
    fn fit(&mut self) -> Option<Enforced> {
        let enforced = self.store.over(self.max_bytes).then(|| {
            let keep: HashSet<String> = self
                .list
                .last()
                .map(|c| c.checkpoint_id.clone())
                .into_iter()
                .collect();
            self.store.enforce(self.max_bytes, &keep)
        });
        // The server drops what was evicted from its list.
        self.list = self.store.index(self.id).unwrap();
        let now = on_disk(self.store.dir());
        self.peak = self.peak.max(now);
        assert!(
            now <= self.max_bytes,
            "the store takes {now} bytes, past its bound of {} ({enforced:?})",
            self.max_bytes
        );
        enforced
    }

    fn before(&mut self, n: usize, snapshot: &Snapshot) {
        self.list.push(Checkpoint {
            checkpoint_id: format!("ck-{n}"),
            turn_id: format!("turn-{n}"),
            prompt: format!("turn {n}"),
            created_unix_seconds: 1_000 + n as u64,
            before: snapshot.id.clone(),
            after: None,
            late: Vec::new(),
        });
        self.store.save_index(self.id, &self.list).unwrap();
        self.fit();
    }

    fn after(&mut self, snapshot: &Snapshot) {
        self.list.last_mut().unwrap().after = Some(snapshot.id.clone());
        self.store.save_index(self.id, &self.list).unwrap();
        self.fit();
    }
}

/// Content of `len` bytes unique to `seed` (no run of zeros, nothing
/// shared between seeds).
fn unique(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn twelve_turns_rewriting_a_100_kib_file_stay_within_a_256_kib_bound() {
    let f = Fixture::new();
    std::fs::write(f.path().join("big.bin"), unique(0, 100 * 1024)).unwrap();
    let mut session = Session {
        store: &f.store,
        id: "1234abcd",
        list: Vec::new(),
        max_bytes: 256 * 1024,
        peak: 0,
    };
    let mut last: Option<Snapshot> = None;
    let mut before_last_turn = Vec::new();
    for turn in 1..=12 {
        let before = f.store.snapshot(f.path(), last.as_ref()).unwrap();
        session.before(turn, &before);
        before_last_turn = std::fs::read(f.path().join("big.bin")).unwrap();
        // The turn rewrites the file: a new 100 KiB to store.
        std::fs::write(f.path().join("big.bin"), unique(turn as u64, 100 * 1024)).unwrap();
        let after = f.store.snapshot(f.path(), Some(&before)).unwrap();
        session.after(&after);
        last = Some(after);
    }
    eprintln!(
        "twelve turns: at most {} bytes on disk, {} now, {} checkpoint(s) left",
        session.peak,
        on_disk(f.store.dir()),
        session.list.len()
    );
    assert_eq!(f.store.bytes(), on_disk(f.store.dir()));
    // The bound evicted the old checkpoints, never the newest, which
    // still undoes the last turn.
    assert!(session.list.len() < 12);
    let newest = session.list.last().unwrap();
    assert_eq!(newest.checkpoint_id, "ck-12");
    let target = f.store.load(&newest.before).unwrap();
    let now = f.store.snapshot(f.path(), last.as_ref()).unwrap();
    let changed = f.store.restore(f.path(), &target, &now).unwrap();
    assert_eq!(changed.len(), 1);
    assert_eq!(
        std::fs::read(f.path().join("big.bin")).unwrap(),
        before_last_turn
    );
}

#[test]
fn many_small_files_count_what_they_take_on_disk_not_their_length() {
    // 150 files of a few bytes: each a block on disk (and its fan-out
    // directory), though their lengths add up to almost nothing.
    let f = Fixture::new();
    let write = |round: usize| {
        for i in 0..150 {
            std::fs::write(f.path().join(format!("f{i:03}")), format!("{round}:{i}\n")).unwrap();
        }
    };
    let mut session = Session {
        store: &f.store,
        id: "5678abcd",
        list: Vec::new(),
        max_bytes: 2 << 20,
        peak: 0,
    };
    let mut last: Option<Snapshot> = None;
    let mut evicted = 0;
    for round in 0..8 {
        write(round);
        let snapshot = f.store.snapshot(f.path(), last.as_ref()).unwrap();
        session.list.push(Checkpoint {
            checkpoint_id: format!("ck-{round}"),
            turn_id: format!("turn-{round}"),
            prompt: String::new(),
            created_unix_seconds: 1_000 + round as u64,
            before: snapshot.id.clone(),
            after: None,
            late: Vec::new(),
        });
        f.store.save_index(session.id, &session.list).unwrap();
        // The existing API alone: enforce after every checkpoint.
        let keep: HashSet<String> = [format!("ck-{round}")].into();
        let out = f.store.enforce(session.max_bytes, &keep);
        evicted += out.evicted.len();
        assert!(!out.over, "{out:?}");
        session.list = f.store.index(session.id).unwrap();
        let now = on_disk(f.store.dir());
        assert!(now <= session.max_bytes, "{now} bytes on disk, {out:?}");
        // What the store counts is what is on disk, indexes and
        // directories included.
        assert_eq!(out.bytes, now);
        last = Some(snapshot);
    }
    assert!(evicted > 0, "eight rounds of 150 blocks must not all fit");
    let newest = session.list.last().unwrap();
    assert_eq!(newest.checkpoint_id, "ck-7");
    let target = f.store.load(&newest.before).unwrap();
    write(99);
    let now = f.store.snapshot(f.path(), last.as_ref()).unwrap();
    assert_eq!(f.store.restore(f.path(), &target, &now).unwrap().len(), 150);
    for (path, what) in disk(f.path()) {
        let i: usize = path[1..].parse().unwrap();
        assert!(
            matches!(&what, Disk::File { bytes, .. } if *bytes == format!("7:{i}\n").into_bytes()),
            "{path}: {what:?}"
        );
    }
}

#[test]
fn the_newest_checkpoint_alone_past_the_bound_is_kept_and_said() {
    let f = Fixture::new();
    std::fs::write(f.path().join("big.bin"), unique(1, 300 * 1024)).unwrap();
    let mut list = Vec::new();
    let mut last: Option<Snapshot> = None;
    for n in 0..3u64 {
        std::fs::write(f.path().join("big.bin"), unique(n + 10, 300 * 1024)).unwrap();
        let snapshot = f.store.snapshot(f.path(), last.as_ref()).unwrap();
        list.push(Checkpoint {
            checkpoint_id: format!("ck-{n}"),
            turn_id: format!("turn-{n}"),
            prompt: String::new(),
            created_unix_seconds: 1_000 + n,
            before: snapshot.id.clone(),
            after: None,
            late: Vec::new(),
        });
        last = Some(snapshot);
    }
    f.store.save_index("9abc", &list).unwrap();
    let keep: HashSet<String> = ["ck-2".to_string()].into();
    assert!(f.store.over(256 * 1024));
    let out = f.store.enforce(256 * 1024, &keep);
    let ids: Vec<&str> = out.evicted.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(ids, vec!["ck-0", "ck-1"]);
    assert!(out.over, "{out:?}");
    assert!(out.bytes > 256 * 1024);
    assert_eq!(out.bytes, on_disk(f.store.dir()));
    let left = f.store.index("9abc").unwrap();
    assert_eq!(left.len(), 1);
    // Whole: it restores.
    let dir = tempfile::tempdir().unwrap();
    let empty = f.store.snapshot(dir.path(), None).unwrap();
    let target = f.store.load(&left[0].before).unwrap();
    f.store.restore(dir.path(), &target, &empty).unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("big.bin")).unwrap(),
        unique(12, 300 * 1024)
    );
}

#[test]
fn over_adds_what_this_handle_wrote_and_recounts_every_16th_call() {
    let f = Fixture::new();
    let bound = 512 * 1024;
    // The first call counts.
    assert!(!f.store.over(bound));
    // What this handle writes is added to its count: past the bound, the
    // store is counted again, and found past it.
    std::fs::write(f.path().join("a.bin"), unique(3, 600 * 1024)).unwrap();
    let snapshot = f.store.snapshot(f.path(), None).unwrap();
    assert!(f.store.over(bound));
    // Unreferenced, the snapshot goes at the next enforce.
    let out = f.store.enforce(bound, &HashSet::new());
    assert!(out.swept >= 2, "{out:?}");
    assert!(!out.over);
    assert!(f.store.load(&snapshot.id).is_err());
    assert!(!f.store.over(bound));
    // Another process's writes are not in this handle's estimate, so the
    // next calls do not count the store; the 16th call does, and sees them.
    let other = CheckpointStore::open(f.home.path()).unwrap();
    std::fs::write(f.path().join("a.bin"), unique(4, 600 * 1024)).unwrap();
    other.snapshot(f.path(), None).unwrap();
    let calls = (0..16).take_while(|_| !f.store.over(bound)).count();
    assert!(calls > 0 && calls < 16, "{calls}");
    assert!(f.store.bytes() > bound);
}
