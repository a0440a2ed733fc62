#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The session store on a real directory: journals created, locked,
//! resumed with a torn tail cut, forked, listed, deleted and bounded; and
//! what it refuses — a store open to others, a planted file, a journal
//! linked outside the store, a journal of another format — each without a
//! crash and without touching what it refuses.

use proptest::prelude::*;
use scv_store::{Header, HistoryChange, Outcome, Record, SessionStore, StoreError, FORMAT_VERSION};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;

fn header(id: &str) -> Header {
    Header {
        v: FORMAT_VERSION,
        session_id: id.into(),
        cwd: "/w".into(),
        created: 100,
        provider: "openai".into(),
        model: "m".into(),
        base_url: None,
        no_tools: false,
        forked_from: None,
        parent: None,
    }
}

fn turn(id: &str, prompt: &str, at: u64) -> [Record; 2] {
    [
        Record::TurnStarted {
            turn_id: id.into(),
            prompt: prompt.into(),
            at,
            seq: at,
        },
        Record::TurnEnded {
            turn_id: id.into(),
            at,
            seq: at + 1,
            outcome: Outcome::Completed,
            code: None,
            message: None,
            messages: vec![
                json!({"role": "user", "text": prompt}),
                json!({"role": "assistant"}),
            ],
            history: HistoryChange::Append,
            usage: None,
            tokens_per_byte: None,
            spent: None,
            no_undo: None,
        },
    ]
}

const A: &str = "0a0a0a0a-0000-4000-8000-000000000001";
const B: &str = "0b0b0b0b-0000-4000-8000-000000000002";

fn store() -> (tempfile::TempDir, SessionStore) {
    let home = tempfile::tempdir().unwrap();
    let store = SessionStore::open(home.path()).unwrap();
    (home, store)
}

#[test]
fn a_session_is_locked_while_open_and_resumes_after() {
    let (home, store) = store();
    let mut journal = store.create(&header(A)).unwrap();
    for r in turn("t1", "hello", 200) {
        journal.append(&r).unwrap();
    }
    journal.sync().unwrap();
    let mode = std::fs::metadata(journal.path())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(home.path().join("sessions"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);
    assert!(matches!(store.resume(A), Err(StoreError::Open(_))));
    assert!(matches!(store.delete(A), Err(StoreError::Open(_))));
    let (listed, _) = store.list();
    assert!(listed[0].open);
    drop(journal);
    let (_journal, replay) = store.resume(A).unwrap();
    assert_eq!(replay.history.len(), 2);
    assert_eq!(replay.title.as_deref(), Some("hello"));
    let (listed, _) = store.list();
    assert!(listed[0].open, "open again on the resuming side");
}

#[test]
fn a_torn_tail_is_cut_on_resume_and_the_session_goes_on() {
    let (_home, store) = store();
    let mut journal = store.create(&header(A)).unwrap();
    for r in turn("t1", "one", 200) {
        journal.append(&r).unwrap();
    }
    let path = journal.path().to_path_buf();
    drop(journal);
    let good = std::fs::metadata(&path).unwrap().len();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"{\"kind\":\"turn_started\",\"turn_id\":\"t2\",\"pro");
    std::fs::write(&path, &bytes).unwrap();
    let (mut journal, replay) = store.resume(A).unwrap();
    assert_eq!(replay.turns.len(), 1);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), good);
    for r in turn("t2", "two", 300) {
        journal.append(&r).unwrap();
    }
    drop(journal);
    assert_eq!(store.read(A, None).unwrap().turns.len(), 2);
}

#[test]
fn a_fork_takes_the_history_up_to_its_turn() {
    let (_home, store) = store();
    let mut journal = store.create(&header(A)).unwrap();
    for (i, prompt) in ["one", "two", "three"].iter().enumerate() {
        for r in turn(&format!("t{i}"), prompt, 200 + i as u64) {
            journal.append(&r).unwrap();
        }
    }
    // Forking an open session is allowed: it reads, never takes it.
    let (forked, replay) = store.fork(A, Some("t1"), B, 100).unwrap();
    assert_eq!(replay.turns.len(), 2);
    assert_eq!(replay.history.len(), 4);
    assert_eq!(replay.header.forked_from.as_ref().unwrap().session_id, A);
    drop(forked);
    assert_eq!(store.read(B, None).unwrap().turns.len(), 2);
    assert!(matches!(
        store.fork(A, Some("nope"), "0c0c", 100),
        Err(StoreError::NoSuchTurn(_))
    ));
}

#[test]
fn list_delete_and_bounds() {
    let (_home, store) = store();
    for (id, at) in [(A, 1_000u64), (B, 5_000)] {
        let mut journal = store
            .create(&Header {
                created: at,
                ..header(id)
            })
            .unwrap();
        for r in turn("t", "p", at) {
            journal.append(&r).unwrap();
        }
    }
    let (listed, skipped) = store.list();
    assert!(skipped.is_empty());
    assert_eq!(
        listed
            .iter()
            .map(|s| s.session_id.as_str())
            .collect::<Vec<_>>(),
        [B, A],
        "most recently updated first"
    );
    assert_eq!(listed[0].turns, 1);
    // Retention: A is older than a day before `now`.
    let enforced = store.enforce(1, u64::MAX, 5_000 + 86_400 - 1);
    assert_eq!(enforced.deleted, [A]);
    assert_eq!(enforced.bytes, listed[0].bytes);
    // No age limit with 0 days.
    assert!(store.enforce(0, u64::MAX, u64::MAX / 2).deleted.is_empty());
    // Bytes: B goes when the bound is below it.
    let enforced = store.enforce(10_000, 10, 5_000);
    assert_eq!(enforced.deleted, [B]);
    assert_eq!(enforced.bytes, 0);
    assert!(store.list().0.is_empty());
    assert!(matches!(store.delete(A), Err(StoreError::NotFound(_))));
}

#[test]
fn bounds_never_delete_an_open_session() {
    let (_home, store) = store();
    let _open = store.create(&header(A)).unwrap();
    assert!(store.enforce(1, 0, u64::MAX / 2).deleted.is_empty());
    assert_eq!(store.list().0.len(), 1);
}

#[test]
fn a_store_open_to_others_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("sessions");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = SessionStore::open(home.path()).unwrap_err();
    assert!(matches!(err, StoreError::Unsafe(_)), "{err}");
    assert!(err.to_string().contains("open to other users"), "{err}");
    std::fs::remove_dir(&dir).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &dir).unwrap();
    assert!(matches!(
        SessionStore::open(home.path()),
        Err(StoreError::Unsafe(_))
    ));
}

#[test]
fn planted_linked_and_foreign_journals_are_skipped_never_followed() {
    let (home, store) = store();
    let dir = home.path().join("sessions");
    drop(store.create(&header(A)).unwrap());
    // A planted file, a link to a journal outside, a hard link, another
    // format.
    std::fs::write(dir.join("notes.txt"), "hi").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.jsonl");
    let mut bytes = Record::Session(header(B)).line().unwrap();
    bytes.extend(b"secret\n");
    std::fs::write(&secret, &bytes).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join(format!("{B}.jsonl"))).unwrap();
    let hard = "0d0d0d0d-0000-4000-8000-000000000004";
    std::fs::hard_link(
        dir.join(format!("{A}.jsonl")),
        dir.join(format!("{hard}.jsonl")),
    )
    .unwrap();
    let other = "0e0e0e0e-0000-4000-8000-000000000005";
    std::fs::write(
        dir.join(format!("{other}.jsonl")),
        "{\"kind\":\"session\",\"v\":99,\"session_id\":\"x\",\"cwd\":\"/\",\"created\":1,\"provider\":\"p\",\"model\":\"m\"}\n",
    )
    .unwrap();
    let (listed, skipped) = store.list();
    assert!(
        skipped.iter().any(|s| s.contains("notes.txt")),
        "{skipped:?}"
    );
    let damaged = |id: &str| {
        listed
            .iter()
            .find(|s| s.session_id == id)
            .and_then(|s| s.damaged.clone())
            .unwrap_or_default()
    };
    assert!(damaged(B).contains("link"), "{}", damaged(B));
    assert!(damaged(hard).contains("one link"), "{}", damaged(hard));
    assert!(
        damaged(A).contains("one link"),
        "the original is hard-linked too"
    );
    assert!(
        damaged(other).contains("format version 99"),
        "{}",
        damaged(other)
    );
    assert!(matches!(store.resume(B), Err(StoreError::Unsafe(_))));
    assert!(matches!(
        store.resume(other),
        Err(StoreError::Damaged { .. })
    ));
    assert!(matches!(
        store.resume("../../etc/passwd"),
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        std::fs::read(&secret).unwrap(),
        bytes,
        "nothing written outside"
    );
}

fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        ("[a-z]{1,3}", ".{0,20}").prop_map(|(t, p)| Record::TurnStarted {
            turn_id: t,
            prompt: p,
            at: 1,
            seq: 1
        }),
        ("[a-z]{1,3}", 0..3u8).prop_map(|(t, change)| Record::TurnEnded {
            turn_id: t,
            at: 2,
            seq: 2,
            outcome: Outcome::Completed,
            code: None,
            message: None,
            messages: vec![json!("m")],
            history: match change {
                0 => HistoryChange::Snapshot(vec![json!("s")]),
                1 => HistoryChange::Edit { drop: 1, keep: 1 },
                _ => HistoryChange::Append,
            },
            usage: None,
            tokens_per_byte: Some(0.3),
            spent: None,
            no_undo: None,
        }),
        Just(Record::Cleared { at: 3, seq: 3 }),
        prop::collection::vec(".{0,10}", 0..3)
            .prop_map(|prompts| Record::Queue { prompts, seq: 4 }),
    ]
}

proptest! {
    /// A journal cut at any byte (a crash mid-write) replays, without a
    /// panic, to exactly the records complete before the cut.
    #[test]
    fn a_journal_cut_anywhere_replays_its_complete_records(
        records in prop::collection::vec(record(), 0..20),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = Record::Session(header(A)).line().unwrap();
        let mut ends = vec![bytes.len()];
        for r in &records {
            bytes.extend(r.line().unwrap());
            ends.push(bytes.len());
        }
        let at = cut.index(bytes.len() + 1);
        let replay = scv_store::Replay::read(&bytes[..at], None);
        if at < ends[0] {
            prop_assert!(replay.is_err());
        } else {
            let replay = replay.unwrap();
            let complete = *ends.iter().filter(|e| **e <= at).max().unwrap();
            prop_assert_eq!(replay.valid_len as usize, complete);
            let whole = scv_store::Replay::read(&bytes[..complete], None).unwrap();
            prop_assert_eq!(replay, whole);
        }
    }
}

#[test]
fn bounds_never_delete_a_journal_they_cannot_read() {
    let (_home, store) = store();
    let newer = format!(
        "{{\"kind\":\"session\",\"v\":99,\"session_id\":\"{A}\",\"cwd\":\"/\",\"created\":1,\"provider\":\"p\",\"model\":\"m\"}}\n"
    );
    std::fs::write(store.dir().join(format!("{A}.jsonl")), newer).unwrap();
    let enforced = store.enforce(1, 0, u64::MAX / 2);
    assert!(enforced.deleted.is_empty());
    let (listed, _) = store.list();
    assert!(listed[0].damaged.as_deref().unwrap().contains("version 99"));
    assert!(listed[0].updated > 0, "dated by the file");
}
