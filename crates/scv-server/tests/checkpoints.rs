#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Checkpoints (capability `checkpoints`) through the real binary: one
//! before the first call of a turn that may change files (none for a
//! turn that only reads), a restore that undoes what `bash` and the edit
//! tools did — contents, modes, links, created and deleted paths — and
//! the conversation with it, never a byte of `.git`, conflicts with
//! someone else's changes, the exact codes of bad requests, and
//! checkpoints that outlive the server.

mod common;
use common::stored::setup;
use common::*;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const AUTO: &str = "auto_approve = [\"read\", \"write\", \"process\"]";

/// A `--stdio` server on `home` that asked for `sessions` and
/// `checkpoints`.
async fn server(home: &Path) -> TestServer {
    let mut server = TestServer::spawn(BIN, home);
    server
        .send(
            json!({"type":"initialize","request_id":"init","protocol_version":2,
            "capabilities":{"sessions":true,"checkpoints":true}}),
        )
        .await;
    let init = server.expect("initialized").await;
    assert_eq!(init["capabilities"]["checkpoints"], true, "{init}");
    server
}

/// Every path under `root` (but `.git` unless `git`), with what it is:
/// a file's mode bits and content, a link's target, a directory.
fn tree(root: &Path, git: bool) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if !git && rel == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("link -> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_string()
            } else {
                format!(
                    "file {:o} {}",
                    meta.permissions().mode() & 0o777,
                    String::from_utf8_lossy(&std::fs::read(&path).unwrap())
                )
            };
            out.insert(rel, what);
        }
    }
    out
}

async fn turn(server: &mut TestServer, session: &str, prompt: &str) -> Vec<Value> {
    server.start_turn(session, "t", prompt).await;
    let events = server.until_terminal().await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    events
}

async fn request(server: &mut TestServer, message: Value, answer: &str) -> Value {
    server.send(message).await;
    server.until(answer).await.pop().unwrap()
}

async fn list(server: &mut TestServer, session: &str) -> Vec<Value> {
    let listed = request(
        server,
        json!({"type":"checkpoint.list","request_id":"cl","session_id":session}),
        "checkpoint.listed",
    )
    .await;
    listed["checkpoints"].as_array().unwrap().clone()
}

async fn restore(server: &mut TestServer, session: &str, checkpoint: &str, extra: Value) -> Value {
    let mut message = json!({"type":"checkpoint.restore","request_id":"cr","session_id":session,"checkpoint_id":checkpoint});
    for (k, v) in extra.as_object().unwrap() {
        message[k] = v.clone();
    }
    server.send(message).await;
    loop {
        let event = server.next().await;
        if event["request_id"] == "cr" {
            return event;
        }
    }
}

fn bash(command: &str) -> Reply {
    Reply::tool_calls(&[("c1", "bash", json!({ "command": command }))])
}

#[tokio::test]
async fn a_changing_turn_takes_one_checkpoint_before_its_first_call_and_a_reading_one_none() {
    let (mock, home, workspace) = setup(AUTO).await;
    std::fs::write(workspace.join("a.txt"), "one\n").unwrap();
    let mut server = server(home.path()).await;
    let session = server.start_session(&workspace).await;

    mock.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    mock.push(Reply::text(["read it"]));
    let events = turn(&mut server, &session, "just read").await;
    assert!(
        !types(&events).contains(&"checkpoint.created"),
        "{events:?}"
    );

    mock.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path": "a.txt"}),
    )]));
    mock.push(Reply::tool_calls(&[
        (
            "c2",
            "write_file",
            json!({"path": "b.txt", "content": "two\n"}),
        ),
        ("c3", "bash", json!({"command": "echo three > c.txt"})),
    ]));
    mock.push(Reply::text(["wrote them"]));
    let events = turn(&mut server, &session, "write two files").await;
    let kinds = types(&events);
    assert_eq!(
        kinds.iter().filter(|k| **k == "checkpoint.created").count(),
        1,
        "{kinds:?}"
    );
    // After the read ran, before the write started.
    let created = kinds
        .iter()
        .position(|k| *k == "checkpoint.created")
        .unwrap();
    let started: Vec<usize> = kinds
        .iter()
        .enumerate()
        .filter(|(_, k)| **k == "tool.started")
        .map(|(i, _)| i)
        .collect();
    assert!(started[0] < created && created < started[1], "{kinds:?}");
    let event = &events[created];
    assert_eq!(event["session_id"], session.as_str());
    assert_eq!(event["turn_id"], events[0]["turn_id"]);
    assert!(event["seq"].is_u64());
    let listed = list(&mut server, &session).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["checkpoint_id"], event["checkpoint_id"]);
    assert_eq!(listed[0]["prompt"], "write two files");
    assert_eq!(listed[0]["turn_id"], events[0]["turn_id"]);
}

#[tokio::test]
async fn restore_undoes_bash_and_the_edit_tools_and_the_conversation_but_never_git() {
    let (mock, home, workspace) = setup(AUTO).await;
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&workspace)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    std::fs::write(workspace.join("keep.txt"), "keep\n").unwrap();
    std::fs::write(workspace.join("gone.txt"), "gone\n").unwrap();
    std::fs::write(workspace.join("moved.txt"), "moved\n").unwrap();
    std::fs::write(workspace.join("sed.txt"), "x marks\n").unwrap();
    std::fs::write(workspace.join("run.sh"), "echo hi\n").unwrap();
    std::fs::create_dir(workspace.join("dir")).unwrap();
    std::fs::write(workspace.join("dir/inner.txt"), "inner\n").unwrap();
    std::os::unix::fs::symlink("keep.txt", workspace.join("link")).unwrap();
    std::fs::write(workspace.join(".gitignore"), "build/\n").unwrap();
    std::fs::create_dir(workspace.join("build")).unwrap();
    std::fs::write(workspace.join("build/out.o"), "object\n").unwrap();
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "start"]);
    std::fs::write(workspace.join("sed.txt"), "x marks the spot\n").unwrap();
    let before = tree(&workspace, false);
    let git_before = tree(&workspace.join(".git"), true);
    let status_before = git(&["status", "--porcelain"]);
    let passwd = std::fs::read("/etc/passwd").unwrap();

    let mut server = server(home.path()).await;
    let session = server.start_session(&workspace).await;
    mock.push(Reply::text(["hello"]));
    turn(&mut server, &session, "first, just talk").await;
    mock.push(bash(
        "rm gone.txt && mv moved.txt dir/moved.txt && sed -i s/x/y/ sed.txt && chmod +x run.sh \
         && rm -r dir/inner.txt && mkdir -p new/deep && echo new > new/deep/f.txt \
         && rm link && ln -s /etc/passwd link && echo rebuilt > build/out.o",
    ));
    mock.push(Reply::tool_calls(&[
        (
            "c2",
            "write_file",
            json!({"path": "keep.txt", "content": "overwritten\n"}),
        ),
        (
            "c3",
            "edit_file",
            json!({"path": "sed.txt", "old_string": "spot", "new_string": "place"}),
        ),
    ]));
    mock.push(Reply::text(["changed everything"]));
    let events = turn(&mut server, &session, "change everything").await;
    let checkpoint = events
        .iter()
        .find(|e| e["type"] == "checkpoint.created")
        .unwrap()["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(tree(&workspace, false), before, "the turn changed things");

    let diffed = request(
        &mut server,
        json!({"type":"checkpoint.diff","request_id":"cd","session_id":session,"checkpoint_id":checkpoint}),
        "checkpoint.diffed",
    )
    .await;
    let changed: BTreeMap<String, String> = diffed["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().into(),
                f["change"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(changed["gone.txt"], "deleted", "{diffed}");
    assert_eq!(changed["new/deep/f.txt"], "added", "{diffed}");
    assert_eq!(changed["keep.txt"], "modified", "{diffed}");
    assert!(!changed.contains_key("build/out.o"), "ignored: {diffed}");
    assert!(
        diffed["diff"].as_str().unwrap().contains("+overwritten"),
        "{diffed}"
    );

    let restored = restore(&mut server, &session, &checkpoint, json!({})).await;
    assert_eq!(restored["type"], "checkpoint.restored", "{restored}");
    assert_eq!(restored["conversation_restored"], true);
    assert_eq!(restored["files_restored"], true);
    let put_back: Vec<&str> = restored["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(
        put_back.contains(&"gone.txt") && put_back.contains(&"keep.txt"),
        "{restored}"
    );
    let mut after = tree(&workspace, false);
    // The ignored file is the turn's, untouched by the restore.
    assert_eq!(after.remove("build/out.o").unwrap(), "file 644 rebuilt\n");
    let mut expected = before.clone();
    expected.remove("build/out.o");
    assert_eq!(after, expected);
    assert_eq!(
        tree(&workspace.join(".git"), true),
        git_before,
        ".git untouched"
    );
    assert_eq!(git(&["status", "--porcelain"]), status_before, "git status");
    assert_eq!(
        std::fs::read("/etc/passwd").unwrap(),
        passwd,
        "never written through"
    );

    // The conversation is back to before the turn: the next request holds
    // the first turn only.
    mock.push(Reply::text(["ok"]));
    turn(&mut server, &session, "what now").await;
    let sent = mock.requests().last().unwrap().body["messages"].to_string();
    assert!(sent.contains("first, just talk"), "{sent}");
    assert!(!sent.contains("change everything"), "{sent}");
    assert!(
        list(&mut server, &session).await.is_empty(),
        "the checkpoint was used"
    );
}

#[tokio::test]
async fn someone_elses_change_is_a_conflict_and_force_restores_over_it() {
    let (mock, home, workspace) = setup(AUTO).await;
    std::fs::write(workspace.join("agent.txt"), "v1\n").unwrap();
    std::fs::write(workspace.join("mine.txt"), "mine v1\n").unwrap();
    let mut server = server(home.path()).await;
    let session = server.start_session(&workspace).await;
    mock.push(bash("echo v2 > agent.txt && echo agent > mine.txt"));
    mock.push(Reply::text(["done"]));
    let events = turn(&mut server, &session, "edit").await;
    let checkpoint = events
        .iter()
        .find(|e| e["type"] == "checkpoint.created")
        .unwrap()["checkpoint_id"]
        .clone();
    // The user edits a file after the turn, and adds one.
    std::fs::write(workspace.join("mine.txt"), "mine v2, by hand\n").unwrap();
    std::fs::write(workspace.join("notes.txt"), "my notes\n").unwrap();
    let refused = restore(
        &mut server,
        &session,
        checkpoint.as_str().unwrap(),
        json!({}),
    )
    .await;
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(refused["code"], "invalid_request");
    assert_eq!(
        refused["conflicts"],
        json!(["mine.txt", "notes.txt"]),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("agent.txt")).unwrap(),
        "v2\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("mine.txt")).unwrap(),
        "mine v2, by hand\n",
        "nothing changed"
    );
    let forced = restore(
        &mut server,
        &session,
        checkpoint.as_str().unwrap(),
        json!({"force": true, "conversation": false}),
    )
    .await;
    assert_eq!(forced["type"], "checkpoint.restored", "{forced}");
    assert_eq!(forced["conversation_restored"], false);
    assert_eq!(
        std::fs::read_to_string(workspace.join("agent.txt")).unwrap(),
        "v1\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("mine.txt")).unwrap(),
        "mine v1\n"
    );
    assert!(!workspace.join("notes.txt").exists());
}

#[tokio::test]
async fn bad_requests_get_their_codes_and_change_nothing() {
    let (mock, home, workspace) = setup(AUTO).await;
    std::fs::write(workspace.join("f.txt"), "f\n").unwrap();
    let mut server = server(home.path()).await;
    let session = server.start_session(&workspace).await;
    mock.push(bash("echo changed > f.txt"));
    mock.push(Reply::text(["done"]));
    let events = turn(&mut server, &session, "change").await;
    let checkpoint = events
        .iter()
        .find(|e| e["type"] == "checkpoint.created")
        .unwrap()["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_string();
    let unknown = restore(&mut server, &session, "ck-nope", json!({})).await;
    assert_eq!(unknown["code"], "invalid_request", "{unknown}");
    server
        .send(json!({"type":"checkpoint.list","request_id":"cr","session_id":"no-such"}))
        .await;
    server.expect_error("session_not_found", "cr").await;
    let neither = restore(
        &mut server,
        &session,
        &checkpoint,
        json!({"files": false, "conversation": false}),
    )
    .await;
    assert_eq!(neither["code"], "invalid_request", "{neither}");
    // During a turn.
    mock.push(Reply::text(["slow", "never"]).then(2, Ending::Stall));
    server.start_turn(&session, "slow", "take your time").await;
    server.until("assistant.delta").await;
    let busy = restore(&mut server, &session, &checkpoint, json!({})).await;
    assert_eq!(busy["code"], "turn_active", "{busy}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("f.txt")).unwrap(),
        "changed\n"
    );

    // Without the capability.
    let mut plain = TestServer::spawn(BIN, home.path());
    plain.initialize().await;
    let other = plain.start_session(&workspace).await;
    plain
        .send(json!({"type":"checkpoint.list","request_id":"x","session_id":other}))
        .await;
    let refused = plain.expect_error("invalid_request", "x").await;
    assert!(
        refused["message"].as_str().unwrap().contains("capability"),
        "{refused}"
    );
}

#[tokio::test]
async fn checkpoints_outlive_the_server_and_a_hostile_workspace_takes_one_without_hanging() {
    let (mock, home, workspace) = setup(AUTO).await;
    std::fs::write(workspace.join("f.txt"), "before\n").unwrap();
    // A FIFO, a socket, a dangling link, a link leading outside.
    assert!(std::process::Command::new("mkfifo")
        .arg(workspace.join("fifo"))
        .status()
        .unwrap()
        .success());
    let _socket = std::os::unix::net::UnixListener::bind(workspace.join("sock")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/target", workspace.join("dangling")).unwrap();
    std::os::unix::fs::symlink("/etc", workspace.join("outside")).unwrap();
    let session = {
        let mut server = server(home.path()).await;
        let session = server.start_session(&workspace).await;
        mock.push(bash("echo after > f.txt"));
        mock.push(Reply::text(["done"]));
        turn(&mut server, &session, "change f").await;
        server.close_stdin().await;
        server.wait().await;
        session
    };
    let mut server = server(home.path()).await;
    server
        .send(json!({"type":"session.resume","request_id":"r","session_id":session}))
        .await;
    server.until("session.transcript").await;
    let listed = list(&mut server, &session).await;
    assert_eq!(listed.len(), 1, "the checkpoint came back with the session");
    let checkpoint = listed[0]["checkpoint_id"].as_str().unwrap().to_string();
    let restored = restore(&mut server, &session, &checkpoint, json!({})).await;
    assert_eq!(restored["type"], "checkpoint.restored", "{restored}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("f.txt")).unwrap(),
        "before\n"
    );
    assert!(
        std::fs::symlink_metadata(workspace.join("fifo")).is_ok(),
        "left alone"
    );
    assert_eq!(
        std::fs::read_link(workspace.join("outside")).unwrap(),
        Path::new("/etc")
    );
}

#[tokio::test]
async fn checkpoints_false_takes_none() {
    let (mock, home, workspace) = setup(&format!("{AUTO}\ncheckpoints = false")).await;
    let mut server = server(home.path()).await;
    let session = server.start_session(&workspace).await;
    mock.push(bash("echo x > f.txt"));
    mock.push(Reply::text(["done"]));
    let events = turn(&mut server, &session, "change").await;
    assert!(!types(&events).contains(&"checkpoint.created"));
    server
        .send(json!({"type":"checkpoint.list","request_id":"cl","session_id":session}))
        .await;
    server.expect_error("invalid_request", "cl").await;
    assert!(!home.path().join("checkpoints").exists());
}

#[tokio::test]
async fn a_client_that_did_not_ask_sees_version_2_unchanged_and_its_turns_are_still_undoable() {
    let (mock, home, workspace) = setup(AUTO).await;
    std::fs::write(workspace.join("f.txt"), "one\n").unwrap();
    let session = {
        let mut plain = TestServer::spawn(BIN, home.path());
        plain.initialize().await;
        let session = plain.start_session(&workspace).await;
        mock.push(bash("echo two > f.txt"));
        mock.push(Reply::text(["done"]));
        let events = turn(&mut plain, &session, "change f").await;
        assert!(
            !types(&events).contains(&"checkpoint.created"),
            "{events:?}"
        );
        assert!(events.iter().all(|e| e.get("conflicts").is_none()));
        plain.close_stdin().await;
        plain.wait().await;
        session
    };
    // A client that asks, later, can take the turn back.
    let mut server = server(home.path()).await;
    server
        .send(json!({"type":"session.resume","request_id":"r","session_id":session}))
        .await;
    server.until("session.transcript").await;
    let listed = list(&mut server, &session).await;
    assert_eq!(listed.len(), 1);
    let checkpoint = listed[0]["checkpoint_id"].as_str().unwrap().to_string();
    let restored = restore(&mut server, &session, &checkpoint, json!({})).await;
    assert_eq!(restored["type"], "checkpoint.restored", "{restored}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("f.txt")).unwrap(),
        "one\n"
    );
}

/// What `root` takes on disk: every file and directory under it, each the
/// larger of its length and its allocated blocks (at least `du -s` and
/// `du -sb`).
fn on_disk(root: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
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

#[tokio::test]
async fn the_store_stays_within_its_bound_over_twelve_turns_rewriting_a_big_file() {
    let bound = 256 * 1024;
    let (mock, home, workspace) =
        setup(&format!("{AUTO}\nmax_checkpoint_store_bytes = {bound}")).await;
    std::fs::write(workspace.join("notes.txt"), "a small file\n").unwrap();
    let mut server = server(home.path()).await;
    let session = server.start_session(&workspace).await;
    let store = home.path().join("checkpoints");
    let mut sizes = Vec::new();
    let mut before_last = Vec::new();
    let mut last_checkpoint = Value::Null;
    for n in 1..=12 {
        // Each turn rewrites big.bin with 100 KiB no turn wrote before.
        before_last = std::fs::read(workspace.join("big.bin")).unwrap_or_default();
        mock.push(bash("head -c 102400 /dev/urandom > big.bin"));
        mock.push(Reply::text(["rewritten"]));
        let events = turn(&mut server, &session, &format!("rewrite {n}")).await;
        last_checkpoint = events
            .iter()
            .find(|e| e["type"] == "checkpoint.created")
            .unwrap()["checkpoint_id"]
            .clone();
        sizes.push(on_disk(&store));
    }
    eprintln!("twelve turns of 100 KiB: the store took {sizes:?} bytes after each");
    assert!(
        sizes.iter().all(|&size| size <= bound),
        "past {bound}: {sizes:?}"
    );
    // The oldest went, never the newest, which still undoes the last turn.
    let listed = list(&mut server, &session).await;
    assert!(listed.len() < 12, "{listed:?}");
    assert_eq!(listed.last().unwrap()["checkpoint_id"], last_checkpoint);
    // What is listed is whole: an evicted checkpoint is not listed.
    for c in &listed {
        server
            .send(
                json!({"type":"checkpoint.diff","request_id":"cd","session_id":session,
            "checkpoint_id":c["checkpoint_id"]}),
            )
            .await;
        let diffed = loop {
            let event = server.next().await;
            if event["request_id"] == "cd" {
                break event;
            }
        };
        assert_eq!(diffed["type"], "checkpoint.diffed", "{diffed}");
    }
    let restored = restore(
        &mut server,
        &session,
        last_checkpoint.as_str().unwrap(),
        json!({}),
    )
    .await;
    assert_eq!(restored["type"], "checkpoint.restored", "{restored}");
    assert_eq!(before_last.len(), 100 * 1024);
    assert_eq!(
        std::fs::read(workspace.join("big.bin")).unwrap(),
        before_last
    );
}

/// The bound holds when the checkpoints are spread over sessions that
/// are all still open (each the newest of its session, which the store
/// prefers to keep): twelve sessions of one connection each rewrite the
/// same 100 KiB file once; past 256 KiB the oldest sessions' checkpoints
/// go too, and `/undo` of such a session says its checkpoint was evicted
/// rather than restoring something else. The newest still undoes.
#[tokio::test]
async fn the_bound_holds_over_twelve_open_sessions_each_rewriting_a_big_file() {
    let bound = 256 * 1024;
    let (mock, home, workspace) =
        setup(&format!("{AUTO}\nmax_checkpoint_store_bytes = {bound}")).await;
    let mut server = server(home.path()).await;
    let store = home.path().join("checkpoints");
    let mut sizes = Vec::new();
    let mut sessions = Vec::new();
    let mut before_last = Vec::new();
    for n in 1..=12 {
        let session = server.start_session(&workspace).await;
        before_last = std::fs::read(workspace.join("big.bin")).unwrap_or_default();
        mock.push(bash("head -c 102400 /dev/urandom > big.bin"));
        mock.push(Reply::text(["rewritten"]));
        let events = turn(&mut server, &session, &format!("rewrite {n}")).await;
        assert!(events.iter().any(|e| e["type"] == "checkpoint.created"));
        sizes.push(on_disk(&store));
        sessions.push(session);
    }
    eprintln!("twelve open sessions of 100 KiB: the store took {sizes:?} bytes after each");
    assert!(
        sizes.iter().all(|&size| size <= bound),
        "past {bound}: {sizes:?}"
    );
    // The first session's checkpoint went: listed as nothing to undo.
    assert!(list(&mut server, &sessions[0]).await.is_empty());
    // The last session's still puts the file back.
    let last = list(&mut server, sessions.last().unwrap()).await;
    let id = last.last().unwrap()["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_string();
    let restored = restore(&mut server, sessions.last().unwrap(), &id, json!({})).await;
    assert_eq!(restored["type"], "checkpoint.restored", "{restored}");
    assert_eq!(
        std::fs::read(workspace.join("big.bin")).unwrap(),
        before_last
    );
}

/// A turn whose `bash` changed no file keeps no checkpoint (it would undo
/// nothing): the list, and so `/undo`, reaches the last turn that did
/// change files.
#[tokio::test]
async fn a_bash_turn_that_changed_nothing_leaves_no_checkpoint() {
    let (mock, home, workspace) = setup(AUTO).await;
    std::fs::write(workspace.join("a.txt"), "one\n").unwrap();
    let mut server = server(home.path()).await;
    let session = server.start_session(&workspace).await;
    mock.push(bash("echo two > a.txt"));
    mock.push(Reply::text(["changed"]));
    turn(&mut server, &session, "change it").await;
    mock.push(bash("cat a.txt"));
    mock.push(Reply::text(["read"]));
    let events = turn(&mut server, &session, "read it").await;
    // Taken before the call (it might have changed files)…
    assert!(types(&events).contains(&"checkpoint.created"), "{events:?}");
    // …and dropped when the turn ended with nothing changed.
    let listed = list(&mut server, &session).await;
    let prompts: Vec<&str> = listed
        .iter()
        .map(|c| c["prompt"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["change it"], "{listed:?}");
    let id = listed[0]["checkpoint_id"].as_str().unwrap();
    let restored = restore(&mut server, &session, id, json!({})).await;
    assert_eq!(restored["type"], "checkpoint.restored", "{restored}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("a.txt")).unwrap(),
        "one\n"
    );
}

/// Undone turns leave the session's turn count: `session.list` says one
/// turn after two were taken and the second undone (as after a resume).
#[tokio::test]
async fn undone_turns_are_not_counted_in_the_session_list() {
    let (mock, home, workspace) = setup(AUTO).await;
    let mut server = server(home.path()).await;
    let session = server.start_session(&workspace).await;
    for (n, file) in ["a.txt", "b.txt"].iter().enumerate() {
        mock.push(bash(&format!("echo {n} > {file}")));
        mock.push(Reply::text(["done"]));
        turn(&mut server, &session, &format!("write {file}")).await;
    }
    let checkpoints = list(&mut server, &session).await;
    assert_eq!(checkpoints.len(), 2);
    let last = checkpoints[1]["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_string();
    let restored = restore(&mut server, &session, &last, json!({})).await;
    assert_eq!(restored["type"], "checkpoint.restored", "{restored}");
    let listed = request(
        &mut server,
        json!({"type":"session.list","request_id":"sl"}),
        "session.listed",
    )
    .await;
    let entry = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == session.as_str())
        .cloned()
        .unwrap();
    assert_eq!(entry["turns"], 1, "{entry}");
}
