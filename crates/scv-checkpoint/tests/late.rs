#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly

//! A turn's `after` is taken once its terminal event is out: what changed
//! after the turn's end is told from the turn's own changes (listed as
//! late, and so a conflict of a restore), and the store is compressed yet
//! gives every byte back.

mod common;

use common::Fixture;
use scv_checkpoint::{Checkpoint, SnapshotLimits};

#[test]
fn changes_after_the_end_are_late_and_conflicts_the_turns_own_are_not() {
    let f = Fixture::new();
    f.sh("printf one > a.txt && printf two > b.txt && mkdir dir && printf three > dir/c.txt && printf keep > dir/d.txt");
    let before = f.store.snapshot(f.path(), None).unwrap();
    // The turn: rewrites b.txt and removes dir/d.txt.
    f.sh("printf TWO > b.txt && rm dir/d.txt");
    // No pause either side: the end waits out the clock's tick itself.
    let ended = scv_checkpoint::end_of_turn();
    // Someone else, right after the end: an edit, a new file, a removal.
    f.sh("printf ONE > a.txt && printf new > n.txt && rm dir/c.txt");
    let after = f
        .store
        .snapshot_ending(f.path(), Some(&before), SnapshotLimits::NONE, ended)
        .unwrap();
    // dir/d.txt too: a name gone from a directory changed after the end
    // cannot be told to be the turn's (the safe side: a conflict).
    assert_eq!(after.late, ["a.txt", "dir/c.txt", "dir/d.txt", "n.txt"]);
    assert!(!after.late.contains(&"b.txt".to_string()));
    // A snapshot not told of an end lists nothing.
    let plain = f.store.snapshot(f.path(), Some(&after)).unwrap();
    assert!(plain.late.is_empty(), "{:?}", plain.late);

    let checkpoint = Checkpoint {
        checkpoint_id: "ck-1".into(),
        turn_id: "t1".into(),
        prompt: "p".into(),
        created_unix_seconds: 1,
        before: before.id.clone(),
        after: Some(after.id.clone()),
        late: after.late.clone(),
    };
    f.store
        .save_index("ab12", std::slice::from_ref(&checkpoint))
        .unwrap();
    // Kept through the index.
    assert_eq!(
        f.store.index("ab12").unwrap(),
        std::slice::from_ref(&checkpoint)
    );
    let conflicts = f.store.conflicts(&[checkpoint], 0, &plain).unwrap();
    assert_eq!(conflicts, ["a.txt", "dir/c.txt", "dir/d.txt", "n.txt"]);

    // Forced, the restore puts back the turn's start, byte for byte, from
    // the compressed store.
    f.store.restore(f.path(), &before, &plain).unwrap();
    let read = |p: &str| std::fs::read_to_string(f.path().join(p)).unwrap();
    assert_eq!(read("a.txt"), "one");
    assert_eq!(read("b.txt"), "two");
    assert_eq!(read("dir/c.txt"), "three");
    assert_eq!(read("dir/d.txt"), "keep");
    assert!(!f.path().join("n.txt").exists());
}

#[test]
fn source_text_is_stored_compressed() {
    let f = Fixture::new();
    let line = "    let value = compute(seed, \"0123456789abcdef\");\n";
    std::fs::write(f.path().join("big.rs"), line.repeat(20_000)).unwrap();
    let store_before = f.store.bytes();
    let snap = f.store.snapshot(f.path(), None).unwrap();
    let grown = f.store.bytes() - store_before;
    let len = (line.len() * 20_000) as u64;
    assert!(grown < len / 10, "{grown} bytes stored for {len}");
    let restored = tempfile::tempdir().unwrap();
    let empty = f.store.snapshot(restored.path(), None).unwrap();
    f.store.restore(restored.path(), &snap, &empty).unwrap();
    assert_eq!(
        std::fs::read(restored.path().join("big.rs")).unwrap(),
        std::fs::read(f.path().join("big.rs")).unwrap()
    );
}
