#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly

//! Restores on real workspaces: exact after each kind of change, never
//! through a link, never touching what is ignored or `.git`, all or
//! nothing.

mod common;

use common::{disk, inodes, sh, sh_out, Disk, Fixture};
use scv_checkpoint::{ChangeKind, RestoreError, RestoreOptions};
use std::path::Path;

const SETUP: &str = r#"
mkdir -p src/deep/er docs empty
printf 'fn main() {}\n' > src/main.rs
printf 'line one\nline two\nline three\n' > src/lib.rs
printf 'deep\n' > src/deep/er/x.txt
printf '# readme\n' > README.md
printf '#!/bin/sh\necho hi\n' > run.sh && chmod +x run.sh
printf 'guide\n' > docs/guide.md
printf '*.log\nbuild/\n' > .gitignore
printf 'old log\n' > keep.log
mkdir -p build && printf 'artifact\n' > build/out.bin
printf 'hidden\n' > .env.example
ln -s src/main.rs main-link
"#;

/// Takes a snapshot, runs `agent`, restores, and checks the workspace is
/// exactly as before, except the paths in `ignored_after` (which the agent
/// made in ignored places and a restore must leave alone).
fn round_trip(agent: &str, ignored_after: &[&str]) -> Vec<scv_checkpoint::Change> {
    let f = Fixture::new();
    f.sh(SETUP);
    let before_disk = disk(f.path());
    let before = f.store.snapshot(f.path(), None).unwrap();
    f.sh(agent);
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    let changed = f.store.restore(f.path(), &before, &now).unwrap();
    let mut after_disk = disk(f.path());
    for p in ignored_after {
        assert!(after_disk.remove(*p).is_some(), "{p} was removed");
    }
    assert_eq!(after_disk, before_disk, "after {agent}");
    // And the restored workspace records as the first snapshot did.
    let again = f.store.snapshot(f.path(), None).unwrap();
    assert!(f.store.changes(&before, &again).is_empty());
    changed
}

#[test]
fn restores_a_write_and_an_overwrite() {
    let changed = round_trip(
        "printf 'new\\n' > new.txt; printf 'replaced\\n' > README.md",
        &[],
    );
    let kinds: Vec<_> = changed.iter().map(|c| (c.path.as_str(), c.kind)).collect();
    assert_eq!(
        kinds,
        vec![
            ("README.md", ChangeKind::Modified),
            ("new.txt", ChangeKind::Deleted)
        ]
    );
}

#[test]
fn restores_an_edit() {
    round_trip("printf 'line four\\n' >> src/lib.rs", &[]);
}

#[test]
fn restores_rm() {
    round_trip("rm src/main.rs README.md", &[]);
}

#[test]
fn restores_rm_r_of_a_directory() {
    round_trip("rm -r src", &[]);
}

#[test]
fn restores_mv_of_a_file_and_a_directory() {
    round_trip(
        "mv README.md README.txt && mv src source && mv docs src",
        &[],
    );
}

#[test]
fn restores_sed_i() {
    round_trip(
        "sed -i 's/two/2/' src/lib.rs && sed -i '1d' src/main.rs",
        &[],
    );
}

#[test]
fn restores_chmod_plus_and_minus_x() {
    let changed = round_trip("chmod +x README.md && chmod -x run.sh", &[]);
    assert_eq!(changed.len(), 2);
}

#[test]
fn restores_kind_changes_and_empty_directories() {
    round_trip(
        "rm src/lib.rs && mkdir -p src/lib.rs/inner && echo x > src/lib.rs/inner/f \
         && rm -r docs && echo file > docs && rmdir empty && mkdir more \
         && rm main-link && ln -s README.md main-link",
        &[],
    );
}

#[test]
fn a_file_replaced_by_a_link_to_outside_is_restored_without_writing_there() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, b"outside content\n").unwrap();
    let agent = format!("rm README.md && ln -s {} README.md", victim.display());
    round_trip(&agent, &[]);
    assert_eq!(std::fs::read(&victim).unwrap(), b"outside content\n");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[test]
fn a_directory_replaced_by_a_link_to_outside_is_restored_without_writing_there() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("main.rs"), b"theirs\n").unwrap();
    let before_outside = disk(outside.path());
    let agent = format!("rm -r src && ln -s {} src", outside.path().display());
    round_trip(&agent, &[]);
    assert_eq!(disk(outside.path()), before_outside);
}

#[test]
fn a_new_directory_with_an_ignored_file_keeps_both() {
    let f = Fixture::new();
    f.sh(SETUP);
    let before = f.store.snapshot(f.path(), None).unwrap();
    f.sh("mkdir -p fresh/sub && echo a > fresh/a.txt && echo b > fresh/sub/b.log && echo c > fresh/sub/c.txt");
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    f.store.restore(f.path(), &before, &now).unwrap();
    assert!(!f.path().join("fresh/a.txt").exists());
    assert!(!f.path().join("fresh/sub/c.txt").exists());
    assert_eq!(
        std::fs::read(f.path().join("fresh/sub/b.log")).unwrap(),
        b"b\n"
    );
}

#[test]
fn ignored_paths_are_never_touched() {
    let f = Fixture::new();
    f.sh(SETUP);
    let before = f.store.snapshot(f.path(), None).unwrap();
    f.sh("echo changed > keep.log && echo more > build/out.bin && echo new > build/new.o && echo x > src/main.rs");
    let ignored: Vec<_> = ["keep.log", "build/out.bin", "build/new.o"]
        .iter()
        .map(|p| std::fs::read(f.path().join(p)).unwrap())
        .collect();
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    f.store.restore(f.path(), &before, &now).unwrap();
    for (p, bytes) in ["keep.log", "build/out.bin", "build/new.o"]
        .iter()
        .zip(ignored)
    {
        assert_eq!(std::fs::read(f.path().join(p)).unwrap(), bytes, "{p}");
    }
    assert_eq!(
        std::fs::read(f.path().join("src/main.rs")).unwrap(),
        b"fn main() {}\n"
    );
}

#[test]
fn an_ignored_file_in_the_way_refuses_and_is_kept() {
    // The agent deleted a recorded file, ignored its name, and made an
    // ignored file there: the restore must not overwrite it.
    let f = Fixture::new();
    f.sh(SETUP);
    let before = f.store.snapshot(f.path(), None).unwrap();
    f.sh("rm docs/guide.md && echo 'guide.md' >> .gitignore && echo mine > docs/guide.md && echo x >> src/lib.rs");
    let disk_now = disk(f.path());
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    match f.store.restore(f.path(), &before, &now) {
        Err(RestoreError::Failed { why, rolled_back }) => {
            assert!(rolled_back, "{why}");
            assert!(why.contains("docs/guide.md"), "{why}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(disk(f.path()), disk_now);
}

fn git_state(root: &Path) -> std::collections::BTreeMap<String, Disk> {
    disk(&root.join(".git"))
}

#[test]
fn git_is_byte_for_byte_untouched() {
    let f = Fixture::new();
    f.sh(SETUP);
    f.sh("git init -q && git -c user.email=t@t -c user.name=t add -A && git -c user.email=t@t -c user.name=t commit -qm one && git status --porcelain >/dev/null");
    let status0 = sh_out(f.path(), "git status --porcelain");
    let g0 = git_state(f.path());
    let before = f.store.snapshot(f.path(), None).unwrap();
    assert_eq!(git_state(f.path()), g0, "a snapshot touched .git");
    assert!(f.store.changes(&before, &before).is_empty());
    assert!(before.files().iter().all(|e| !e.path.starts_with(".git/")));
    f.sh("echo edit >> src/lib.rs && rm README.md && echo n > new.txt && mkdir d && echo y > d/y");
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    assert_eq!(git_state(f.path()), g0);
    f.store.restore(f.path(), &before, &now).unwrap();
    assert_eq!(git_state(f.path()), g0, "a restore touched .git");
    assert_eq!(sh_out(f.path(), "git status --porcelain"), status0);
    assert_eq!(status0, "");
}

#[test]
fn git_info_exclude_is_honoured() {
    let f = Fixture::new();
    f.sh("git init -q && echo 'secret.txt' >> .git/info/exclude && echo s > secret.txt && echo p > public.txt");
    let snap = f.store.snapshot(f.path(), None).unwrap();
    let paths: Vec<_> = snap.files().into_iter().map(|e| e.path).collect();
    assert_eq!(paths, vec!["public.txt"]);
}

/// A workspace with every kind of step, the "now" disk state, and the two
/// snapshots.
fn many_steps(f: &Fixture) -> (scv_checkpoint::Snapshot, scv_checkpoint::Snapshot) {
    f.sh(SETUP);
    let before = f.store.snapshot(f.path(), None).unwrap();
    f.sh(
        "echo add > added.txt && echo mod >> src/lib.rs && rm src/main.rs && rm -r docs \
         && mkdir -p newdir/a && echo z > newdir/a/z && chmod -x run.sh && rm main-link \
         && ln -s nowhere main-link && rm src/deep/er/x.txt && mkdir src/deep/er/x.txt \
         && echo w > README.md",
    );
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    (before, now)
}

#[test]
fn a_failure_at_any_step_puts_everything_back() {
    // How many steps the restore takes.
    let steps = {
        let f = Fixture::new();
        let (before, now) = many_steps(&f);
        let mut n = 0;
        loop {
            let r = f.store.restore_with(
                f.path(),
                &before,
                &now,
                &RestoreOptions {
                    fail_after: Some(n),
                },
            );
            match r {
                Err(RestoreError::Failed { why, rolled_back }) => {
                    assert!(rolled_back && why.contains("injected"), "{why}");
                    n += 1
                }
                Ok(_) => break n,
                Err(e) => panic!("{e}"),
            }
            assert!(n < 1000);
        }
    };
    assert!(steps >= 10, "only {steps} steps");
    for k in 0..steps {
        let f = Fixture::new();
        let (before, now) = many_steps(&f);
        let disk_now = disk(f.path());
        let inodes_now = inodes(f.path());
        match f.store.restore_with(
            f.path(),
            &before,
            &now,
            &RestoreOptions {
                fail_after: Some(k),
            },
        ) {
            Err(RestoreError::Failed { rolled_back, why }) => {
                assert!(rolled_back, "step {k}: {why}")
            }
            other => panic!("step {k}: {other:?}"),
        }
        assert_eq!(disk(f.path()), disk_now, "after a failure at step {k}");
        // Put back by renaming: the very same files, times and all.
        assert_eq!(inodes(f.path()), inodes_now, "after a failure at step {k}");
        // And the restore still works afterwards.
        let now2 = f.store.snapshot(f.path(), Some(&now)).unwrap();
        assert!(f.store.changes(&now, &now2).is_empty());
        f.store.restore(f.path(), &before, &now2).unwrap();
        let done = f.store.snapshot(f.path(), None).unwrap();
        assert!(f.store.changes(&before, &done).is_empty(), "step {k}");
    }
}

#[test]
fn a_change_after_the_now_snapshot_is_refused_and_kept() {
    let f = Fixture::new();
    f.sh(SETUP);
    let before = f.store.snapshot(f.path(), None).unwrap();
    f.sh("echo agent >> README.md && echo a > a.txt");
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    // Someone edits it after `now`: same size, so only the stat tells.
    f.sh("sleep 0.01; printf '# README\\nagent\\n' > README.md");
    let disk_then = disk(f.path());
    match f.store.restore(f.path(), &before, &now) {
        Err(RestoreError::Failed { rolled_back, why }) => {
            assert!(rolled_back);
            assert!(why.contains("README.md"), "{why}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(disk(f.path()), disk_then);
}

#[test]
fn a_directory_holding_ignored_files_cannot_become_a_file() {
    let f = Fixture::new();
    f.sh("echo '*.log' > .gitignore && echo x > thing");
    let before = f.store.snapshot(f.path(), None).unwrap();
    f.sh("rm thing && mkdir thing && echo l > thing/a.log && echo t > thing/t.txt");
    let disk_now = disk(f.path());
    let now = f.store.snapshot(f.path(), Some(&before)).unwrap();
    match f.store.restore(f.path(), &before, &now) {
        Err(RestoreError::Failed { rolled_back, why }) => {
            assert!(rolled_back, "{why}");
            assert!(why.contains("thing"), "{why}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert_eq!(disk(f.path()), disk_now);
}

#[test]
fn restoring_the_same_state_changes_nothing() {
    let f = Fixture::new();
    f.sh(SETUP);
    let a = f.store.snapshot(f.path(), None).unwrap();
    let b = f.store.snapshot(f.path(), Some(&a)).unwrap();
    assert!(f.store.restore(f.path(), &a, &b).unwrap().is_empty());
}

#[test]
fn conflicts_are_changes_outside_the_agents_turns() {
    let f = Fixture::new();
    f.sh("echo 0 > agent.txt && echo 0 > user.txt && echo 0 > late.txt");
    let b0 = f.store.snapshot(f.path(), None).unwrap();
    f.sh("echo 1 > agent.txt");
    let a0 = f.store.snapshot(f.path(), Some(&b0)).unwrap();
    f.sh("echo 1 > user.txt");
    let b1 = f.store.snapshot(f.path(), Some(&a0)).unwrap();
    f.sh("echo 2 > agent.txt && echo new > agent-new.txt");
    let a1 = f.store.snapshot(f.path(), Some(&b1)).unwrap();
    f.sh("echo 1 > late.txt");
    let now = f.store.snapshot(f.path(), Some(&a1)).unwrap();
    let ck =
        |i: usize, before: &scv_checkpoint::Snapshot, after: Option<&scv_checkpoint::Snapshot>| {
            scv_checkpoint::Checkpoint {
                checkpoint_id: format!("ck-{i}"),
                turn_id: format!("t{i}"),
                prompt: "p".into(),
                created_unix_seconds: i as u64,
                before: before.id.clone(),
                after: after.map(|s| s.id.clone()),
                late: Vec::new(),
            }
        };
    let list = vec![ck(0, &b0, Some(&a0)), ck(1, &b1, Some(&a1))];
    assert_eq!(
        f.store.conflicts(&list, 0, &now).unwrap(),
        vec!["late.txt", "user.txt"]
    );
    assert_eq!(f.store.conflicts(&list, 1, &now).unwrap(), vec!["late.txt"]);
    // The second turn never ended: its span counts whole (conservative).
    let open = vec![ck(0, &b0, Some(&a0)), ck(1, &b1, None)];
    assert_eq!(
        f.store.conflicts(&open, 1, &now).unwrap(),
        vec!["agent-new.txt", "agent.txt", "late.txt"]
    );
    assert_eq!(
        f.store.conflicts(&open, 0, &now).unwrap(),
        vec!["agent-new.txt", "agent.txt", "late.txt", "user.txt"]
    );
    // The first never ended: b0..b1 counts, so the agent's own agent.txt.
    let gap = vec![ck(0, &b0, None), ck(1, &b1, Some(&a1))];
    assert_eq!(
        f.store.conflicts(&gap, 0, &now).unwrap(),
        vec!["agent.txt", "late.txt", "user.txt"]
    );
    assert!(f.store.conflicts(&list, 2, &now).is_err());
    // A restore of checkpoint 0 with no conflict left: exact.
    f.sh("echo 0 > late.txt && echo 0 > user.txt");
    let now = f.store.snapshot(f.path(), Some(&now)).unwrap();
    f.store.restore(f.path(), &b0, &now).unwrap();
    assert_eq!(std::fs::read(f.path().join("agent.txt")).unwrap(), b"0\n");
    assert!(!f.path().join("agent-new.txt").exists());
}

#[test]
fn the_workspace_root_may_be_reached_through_a_link() {
    let f = Fixture::new();
    f.sh(SETUP);
    let link_home = tempfile::tempdir().unwrap();
    let via = link_home.path().join("ws");
    std::os::unix::fs::symlink(f.path(), &via).unwrap();
    let before = f.store.snapshot(&via, None).unwrap();
    sh(&via, "echo x >> README.md");
    let now = f.store.snapshot(&via, Some(&before)).unwrap();
    f.store.restore(&via, &before, &now).unwrap();
    assert_eq!(
        std::fs::read(f.path().join("README.md")).unwrap(),
        b"# readme\n"
    );
}
