#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Regression tests for what an adversarial pass broke in the tools: a
//! hostile cloned repository (dangling links out, ignore files that are
//! devices, huge lines, FIFOs), a hostile model (commands that escape their
//! process group, unbounded edits and timeouts) — each through the real
//! binary, memory items under an address-space limit so a regression fails
//! fast instead of eating the machine.

mod common;
use common::*;
use std::os::unix::fs::symlink;
use std::path::Path;

/// Address space the server gets in the memory tests: the idle debug
/// server maps about 100 MiB, so one runaway gigabyte fails at once.
const LIMIT: u64 = 512 * 1024 * 1024;

async fn limited_rig(extra: &str) -> Rig {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), extra);
    let mut server = TestServer::spawn_limited(BIN, home.path(), &[], LIMIT);
    server.initialize().await;
    Rig { mock, home, server }
}

/// The server is alive and still answers a turn.
async fn still_serves(rig: &mut Rig, session: &str) {
    assert!(rig.server.exited().is_none(), "the server died");
    rig.mock.push(Reply::text(["still here"]));
    let events = rig.turn(session, "are you there").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[tokio::test]
async fn writes_through_links_leading_outside_create_nothing() {
    let outside = tempfile::tempdir().unwrap();
    let mut rig = Rig::new("auto_approve = [\"read\", \"write\"]").await;
    let session = rig.session().await;
    let ws = rig.home.workspace();
    // What a cloned repository can ship: links to missing files outside,
    // absolute, relative and chained, and a directory link out.
    symlink(outside.path().join("x.txt"), ws.join("dangling")).unwrap();
    let up = "../".repeat(ws.components().count());
    let relative = format!("{up}{}", outside.path().join("y.txt").display());
    symlink(&relative, ws.join("relative")).unwrap();
    symlink("dangling", ws.join("chain")).unwrap();
    symlink(outside.path(), ws.join("out")).unwrap();
    rig.mock.push(Reply::tool_calls(&[
        (
            "a",
            "write_file",
            json!({"path": "dangling", "content": "k"}),
        ),
        (
            "r",
            "write_file",
            json!({"path": "relative", "content": "k"}),
        ),
        ("c", "write_file", json!({"path": "chain", "content": "k"})),
        (
            "d",
            "write_file",
            json!({"path": "out/new/z.txt", "content": "k"}),
        ),
    ]));
    rig.mock.push(Reply::text(["refused"]));
    let events = rig.turn(&session, "plant").await;
    let results = completed(&events);
    assert_eq!(results.len(), 4);
    for (id, success, output) in &results {
        assert!(!success, "{id}: {output}");
        assert!(output.contains("outside the workspace"), "{id}: {output}");
    }
    assert!(
        is_empty_dir(outside.path()),
        "something was created outside"
    );
}

/// m03: a file of the workspace hard-linked to one outside (pnpm's store
/// links into `node_modules` like this) is rewritten by breaking the link,
/// never through it.
#[tokio::test]
async fn writes_to_a_hard_linked_file_leave_its_other_links_alone() {
    let mut rig = Rig::new("auto_approve = [\"read\", \"write\"]").await;
    let session = rig.session().await;
    let ws = rig.home.workspace();
    // Beside the workspace, on the same filesystem (a hard link needs it).
    let outside = tempfile::tempdir_in(ws.parent().unwrap()).unwrap();
    let store = outside.path().join("store-a.js");
    std::fs::write(&store, "module.exports = 1;\n").unwrap();
    std::fs::hard_link(&store, ws.join("a.js")).unwrap();
    let store_b = outside.path().join("store-b.js");
    std::fs::write(&store_b, "module.exports = 2;\n").unwrap();
    std::fs::set_permissions(
        &store_b,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::hard_link(&store_b, ws.join("b.js")).unwrap();
    rig.mock.push(Reply::tool_calls(&[
        (
            "w",
            "write_file",
            json!({"path": "a.js", "content": "planted();\n"}),
        ),
        (
            "e",
            "edit_file",
            json!({"path": "b.js", "old_string": "2", "new_string": "planted()"}),
        ),
    ]));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(&session, "edit them").await;
    let results = completed(&events);
    for (id, success, output) in &results {
        assert!(*success, "{id}: {output}");
        assert!(output.contains("other hard links"), "{id}: {output}");
    }
    assert_eq!(
        std::fs::read_to_string(&store).unwrap(),
        "module.exports = 1;\n"
    );
    assert_eq!(
        std::fs::read_to_string(&store_b).unwrap(),
        "module.exports = 2;\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.js")).unwrap(),
        "planted();\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("b.js")).unwrap(),
        "module.exports = planted();\n"
    );
    use std::os::unix::fs::MetadataExt;
    let b = std::fs::metadata(ws.join("b.js")).unwrap();
    assert_eq!(b.nlink(), 1);
    assert_eq!(b.mode() & 0o777, 0o755, "the permission bits are kept");
    // No temporary file is left beside them.
    let names: Vec<String> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".scv-")), "{names:?}");
}

#[tokio::test]
async fn a_link_planted_after_approval_is_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let ws = rig.home.workspace();
    rig.mock.push(Reply::tool_calls(&[(
        "w",
        "write_file",
        json!({"path": "new.txt", "content": "ssh-ed25519 AAAA attacker"}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(&session, "t", "write").await;
    let events = rig.server.until("approval.requested").await;
    // Between approval and execution, a link to outside appears.
    symlink(outside.path().join("authorized_keys"), ws.join("new.txt")).unwrap();
    let approval = events.last().unwrap()["approval_id"].clone();
    rig.server
        .send(json!({"type":"approval.resolve","request_id":"ap","session_id":session,"approval_id":approval,"approved":true}))
        .await;
    let events = rig.server.until_terminal().await;
    let results = completed(&events);
    assert!(!results[0].1, "{:?}", results[0]);
    assert!(
        results[0].2.contains("outside the workspace"),
        "{:?}",
        results[0]
    );
    assert!(is_empty_dir(outside.path()));
}

#[tokio::test]
async fn approvals_show_the_whole_command_every_line() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let long = format!(
        "echo running-the-unit-tests-{}; touch PWNED",
        "x".repeat(300)
    );
    let two_lines = "git status\ntouch PWNED";
    rig.mock.push(Reply::tool_calls(&[
        ("long", "bash", json!({"command": long})),
        ("lines", "bash", json!({"command": two_lines})),
    ]));
    rig.mock.push(Reply::text(["ok"]));
    rig.server.start_turn(&session, "t", "run").await;
    for command in [long.as_str(), two_lines] {
        let events = rig.server.until("approval.requested").await;
        let request = events.last().unwrap();
        assert_eq!(
            request["summary"],
            format!("Run shell command: {command}"),
            "nothing cut, no lines joined"
        );
        rig.server
            .send(json!({"type":"approval.resolve","request_id":"ap","session_id":session,"approval_id":request["approval_id"],"approved":false}))
            .await;
    }
    rig.server.until_terminal().await;
    assert!(!rig.home.workspace().join("PWNED").exists());
}

#[tokio::test]
async fn ignore_files_that_are_devices_links_or_huge_are_skipped() {
    let mut rig = limited_rig("").await;
    let session = rig.session().await;
    let ws = rig.home.workspace();
    symlink("/dev/zero", ws.join(".gitignore")).unwrap();
    std::fs::create_dir(ws.join("sub")).unwrap();
    symlink("/dev/zero", ws.join("sub/.ignore")).unwrap();
    std::fs::create_dir(ws.join("fifo")).unwrap();
    mkfifo(&ws.join("fifo/.gitignore"));
    std::fs::create_dir(ws.join("huge")).unwrap();
    std::fs::write(ws.join("huge/.gitignore"), "x\n".repeat(1024 * 1024)).unwrap();
    // A well-formed ignore file still works.
    std::fs::create_dir(ws.join("plain")).unwrap();
    std::fs::write(ws.join("plain/.gitignore"), "skipped.txt\n").unwrap();
    for file in [
        "top.txt",
        "sub/a.txt",
        "fifo/b.txt",
        "huge/c.txt",
        "plain/kept.txt",
        "plain/skipped.txt",
    ] {
        std::fs::write(ws.join(file), "needle\n").unwrap();
    }
    rig.mock.push(Reply::tool_calls(&[(
        "s",
        "search",
        json!({"pattern": "needle"}),
    )]));
    rig.mock.push(Reply::text(["found"]));
    let events = rig.turn(&session, "search").await;
    let (_, success, output) = &completed(&events)[0];
    assert!(success, "{output}");
    let mut found: Vec<&str> = output.lines().collect();
    found.sort();
    assert_eq!(
        found,
        [
            "fifo/b.txt:1:needle",
            "huge/c.txt:1:needle",
            "plain/kept.txt:1:needle",
            "sub/a.txt:1:needle",
            "top.txt:1:needle",
        ]
    );
    still_serves(&mut rig, &session).await;
}

#[tokio::test]
async fn a_huge_single_line_file_is_skipped_by_search_and_counted() {
    let mut rig = limited_rig("").await;
    let session = rig.session().await;
    let ws = rig.home.workspace();
    // 256 MiB on one line, with the needle at its end: holding the line
    // would pass the server's address-space limit.
    {
        use std::io::Write;
        let mut file = std::fs::File::create(ws.join("minified.js")).unwrap();
        let block = vec![b'a'; 1024 * 1024];
        for _ in 0..256 {
            file.write_all(&block).unwrap();
        }
        file.write_all(b"needle\nneedle on a short line\n").unwrap();
    }
    rig.mock.push(Reply::tool_calls(&[(
        "s",
        "search",
        json!({"pattern": "needle"}),
    )]));
    rig.mock.push(Reply::text(["found"]));
    let events = rig.turn(&session, "search").await;
    let (_, success, output) = &completed(&events)[0];
    assert!(success, "{output}");
    assert_eq!(
        output,
        "minified.js:2:needle on a short line\n[1 line longer than 1048576 bytes was not searched]"
    );
    std::fs::remove_file(ws.join("minified.js")).unwrap();
    still_serves(&mut rig, &session).await;
}

#[tokio::test]
async fn an_edit_whose_result_would_be_huge_is_refused_before_it_is_built() {
    let mut rig = limited_rig("auto_approve = [\"read\", \"write\"]").await;
    let session = rig.session().await;
    let ws = rig.home.workspace();
    let original = "a".repeat(8 * 1024 * 1024);
    std::fs::write(ws.join("a.txt"), &original).unwrap();
    rig.mock.push(Reply::tool_calls(&[(
        "e",
        "edit_file",
        json!({"path": "a.txt", "old_string": "a", "new_string": "b".repeat(1024), "replace_all": true}),
    )]));
    rig.mock.push(Reply::text(["refused"]));
    let events = rig.turn(&session, "grow").await;
    let (_, success, output) = &completed(&events)[0];
    assert!(!success);
    assert!(
        output.contains("would make a.txt 8589934592 bytes; the limit is 33554432"),
        "{output}"
    );
    assert!(std::fs::read(ws.join("a.txt")).unwrap() == original.as_bytes());
    still_serves(&mut rig, &session).await;
}

#[tokio::test]
async fn reading_a_fifo_is_refused_at_once() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let ws = rig.home.workspace();
    mkfifo(&ws.join("pipe"));
    rig.mock.push(Reply::tool_calls(&[(
        "r",
        "read_file",
        json!({"path": "pipe"}),
    )]));
    rig.mock.push(Reply::text(["refused"]));
    let events = rig.turn(&session, "read").await;
    let (_, success, output) = &completed(&events)[0];
    assert!(!success);
    assert_eq!(
        output,
        "error: pipe is not a regular file (a FIFO); not opened"
    );
}

#[tokio::test]
async fn processes_that_leave_the_group_are_killed_when_the_command_ends() {
    let dir = tempfile::tempdir().unwrap();
    // The pid files are outside the workspace: a writable root (the
    // shared /tmp is not the sandbox's).
    let mut rig = Rig::new(&writable_root(dir.path())).await;
    let session = rig.session().await;
    // `setsid sleep &` keeps the output pipe open: the call must still end
    // when bash does, not wait out its timeout.
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": escaping(dir.path(), ""), "timeout_ms": 600000}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(&session, "escape").await;
    let (_, success, output) = &completed(&events)[0];
    assert!(success, "{output}");
    assert!(
        output.ends_with(
            "spawned\n[exit code: 0]\n[4 processes it left running were killed when it ended]"
        ),
        "{output}"
    );
    all_gone(&escaped_pids(dir.path()).await).await;
}

#[tokio::test]
async fn escaped_processes_die_on_cancel() {
    let dir = tempfile::tempdir().unwrap();
    // The pid files are outside the workspace: a writable root (the
    // shared /tmp is not the sandbox's).
    let mut rig = Rig::new(&writable_root(dir.path())).await;
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": escaping(dir.path(), "sleep 1000")}),
    )]));
    rig.server.start_turn(&session, "t", "escape").await;
    let events = rig.server.until("tool.started").await;
    let pids = escaped_pids(dir.path()).await;
    rig.server
        .send(json!({"type":"turn.cancel","request_id":"c","session_id":session,"turn_id":events[0]["turn_id"]}))
        .await;
    assert_eq!(
        types(&rig.server.until_terminal().await),
        ["turn.cancelled"]
    );
    all_gone(&pids).await;
}

#[tokio::test]
async fn escaped_processes_die_on_timeout_and_the_output_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // The pid files are outside the workspace: a writable root (the
    // shared /tmp is not the sandbox's).
    let mut rig = Rig::new(&writable_root(dir.path())).await;
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": escaping(dir.path(), "sleep 1000"), "timeout_ms": 3000}),
    )]));
    rig.mock.push(Reply::text(["slow"]));
    let events = rig.turn(&session, "escape").await;
    let (_, success, output) = &completed(&events)[0];
    assert!(!success);
    assert!(
        output.contains("spawned\n[command timed out after 3000 ms and was killed]"),
        "{output}"
    );
    all_gone(&escaped_pids(dir.path()).await).await;
}

#[tokio::test]
async fn escaped_processes_die_when_the_client_disconnects() {
    let dir = tempfile::tempdir().unwrap();
    // The pid files are outside the workspace: a writable root (the
    // shared /tmp is not the sandbox's).
    let mut rig = Rig::new(&writable_root(dir.path())).await;
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": escaping(dir.path(), "sleep 1000")}),
    )]));
    rig.server.start_turn(&session, "t", "escape").await;
    rig.server.until("tool.started").await;
    let pids = escaped_pids(dir.path()).await;
    assert!(rig.server.wait().await.success());
    all_gone(&pids).await;
}

#[tokio::test]
async fn escaped_processes_die_on_sigterm_and_on_sigkill_of_the_server() {
    for signal in [libc::SIGTERM, libc::SIGKILL] {
        let dir = tempfile::tempdir().unwrap();
        // The pid files are outside the workspace: a writable root (the
        // shared /tmp is not the sandbox's).
        let mut rig = Rig::new(&writable_root(dir.path())).await;
        let session = rig.session().await;
        rig.mock.push(Reply::tool_calls(&[(
            "b",
            "bash",
            json!({"command": escaping(dir.path(), "sleep 1000")}),
        )]));
        rig.server.start_turn(&session, "t", "escape").await;
        rig.server.until("tool.started").await;
        let pids = escaped_pids(dir.path()).await;
        // SAFETY: signalling the test's own child.
        unsafe { libc::kill(rig.server.pid() as i32, signal) };
        all_gone(&pids).await;
    }
}

#[tokio::test]
async fn a_models_timeout_is_capped_by_bash_max_timeout_ms() {
    let mut rig =
        Rig::new("auto_approve = [\"read\", \"process\"]\nbash_max_timeout_ms = 300").await;
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": "sleep 30", "timeout_ms": u64::MAX}),
    )]));
    rig.mock.push(Reply::text(["capped"]));
    let events = rig.turn(&session, "wait").await;
    let (_, success, output) = &completed(&events)[0];
    assert!(!success);
    assert_eq!(output, "[command timed out after 300 ms and was killed]");
}

#[tokio::test]
async fn the_omitted_marker_survives_and_counts_exactly() {
    let mut rig =
        Rig::new("auto_approve = [\"read\", \"process\"]\ntool_output_max_bytes = 2000").await;
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": "seq 1 100000"}),
    )]));
    rig.mock.push(Reply::text(["long"]));
    let events = rig.turn(&session, "long").await;
    let (_, _, output) = &completed(&events)[0];
    assert!(output.len() <= 2000, "{}", output.len());
    let full: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    let (head, rest) = output.split_once("\n[... ").expect("one marker");
    let (count, tail) = rest
        .split_once(" bytes omitted ...]\n")
        .expect("whole marker");
    let tail = tail.strip_suffix("[exit code: 0]").unwrap();
    let omitted: usize = count.parse().unwrap();
    assert!(full.starts_with(head) && full.ends_with(tail));
    assert_eq!(head.len() + omitted + tail.len(), full.len());
}

#[tokio::test]
async fn a_workspace_full_of_hostile_entries_breaks_no_tool() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    let mut rig = {
        let mock = MockProvider::start().await;
        let home = TestHome::new(&mock.base_url(), "auto_approve = [\"read\", \"write\"]");
        let mut server = TestServer::spawn_limited(BIN, home.path(), &[], 2 * LIMIT);
        server.initialize().await;
        Rig { mock, home, server }
    };
    let session = rig.session().await;
    let ws = rig.home.workspace();
    symlink(outside.path().join("missing.txt"), ws.join("dangling")).unwrap();
    symlink(outside.path().join("secret.txt"), ws.join("secret")).unwrap();
    symlink(outside.path(), ws.join("outdir")).unwrap();
    symlink("/dev/zero", ws.join("zero")).unwrap();
    symlink("/dev/zero", ws.join(".gitignore")).unwrap();
    symlink("loop", ws.join("loop")).unwrap();
    mkfifo(&ws.join("fifo"));
    let _socket = std::os::unix::net::UnixListener::bind(ws.join("sock")).unwrap();
    {
        use std::io::Write;
        let mut file = std::fs::File::create(ws.join("big.txt")).unwrap();
        let block = vec![b'x'; 1024 * 1024];
        for _ in 0..100 {
            file.write_all(&block).unwrap();
        }
    }
    let entries = [
        "dangling",
        "secret",
        "outdir/secret.txt",
        "zero",
        ".gitignore",
        "loop",
        "fifo",
        "sock",
        "big.txt",
    ];
    let mut calls = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        calls.push((format!("r{i}"), "read_file", json!({"path": entry})));
        calls.push((
            format!("w{i}"),
            "write_file",
            json!({"path": entry, "content": "planted"}),
        ));
        calls.push((
            format!("e{i}"),
            "edit_file",
            json!({"path": entry, "old_string": "x", "new_string": "y", "replace_all": true}),
        ));
    }
    // Within the 32 calls a response may carry: three batches.
    for batch in calls.chunks(12) {
        let batch: Vec<(&str, &str, Value)> = batch
            .iter()
            .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
            .collect();
        rig.mock.push(Reply::tool_calls(&batch));
    }
    rig.mock.push(Reply::tool_calls(&[
        ("list", "list_dir", json!({"path": "."})),
        ("search", "search", json!({"pattern": "secret|x"})),
    ]));
    rig.mock.push(Reply::text(["survived"]));
    let events = rig.turn(&session, "everything").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let results = completed(&events);
    assert_eq!(results.len(), entries.len() * 3 + 2);
    for (id, success, output) in &results {
        assert!(!output.contains("secret\n"), "{id} read outside: {output}");
        // Only big.txt is an ordinary file: reading it is refused for its
        // size, writing it works, editing it is refused for its size.
        if *success {
            assert!(
                id == "list" || id == "search" || id == "w8",
                "{id} should have failed: {output}"
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "secret\n"
    );
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        1,
        "nothing created outside"
    );
    still_serves(&mut rig, &session).await;
}

#[tokio::test]
async fn an_agents_md_linked_to_a_device_or_outside_is_not_read() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("AGENTS.md"), "secret instructions").unwrap();
    for target in [Path::new("/dev/zero"), &outside.path().join("AGENTS.md")] {
        let mut rig = limited_rig("").await;
        let session = rig.session().await;
        symlink(target, rig.home.workspace().join("AGENTS.md")).unwrap();
        rig.mock.push(Reply::text(["hi"]));
        let events = rig.turn(&session, "hello").await;
        assert_eq!(events.last().unwrap()["type"], "turn.completed");
        let system = rig.mock.requests()[0].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(!system.contains("AGENTS.md says"), "{system}");
    }
}

/// Config that auto-approves commands and lets them write `dir`.
fn writable_root(dir: &std::path::Path) -> String {
    format!(
        "auto_approve = [\"read\", \"process\"]\nsandbox_writable_roots = [\"{}\"]",
        dir.canonicalize().unwrap().display()
    )
}
