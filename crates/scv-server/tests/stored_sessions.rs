#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Durable sessions (capability `sessions`) through the real binary: every
//! session journaled, `session.list` / `resume` / `fork` / `delete`, the
//! history a resume restores compared with the one a live session sends,
//! and what the store refuses.

mod common;
use common::stored::{server, setup};
use common::*;
use std::path::Path;

async fn list(server: &mut TestServer, extra: Value) -> Vec<Value> {
    let mut request = json!({"type":"session.list","request_id":"ls"});
    for (k, v) in extra.as_object().unwrap() {
        request[k] = v.clone();
    }
    server.send(request).await;
    let listed = server.expect("session.listed").await;
    assert_eq!(listed["request_id"], "ls");
    listed["sessions"].as_array().unwrap().clone()
}

/// `session.resume` answered: started, snapshot, transcript.
async fn resume(server: &mut TestServer, id: &str) -> (Value, Value, Value) {
    server
        .send(json!({"type":"session.resume","request_id":"r","session_id":id}))
        .await;
    let started = server.expect("session.started").await;
    let snapshot = server.expect("queue.snapshot").await;
    let transcript = server.expect("session.transcript").await;
    (started, snapshot, transcript)
}

async fn turn(server: &mut TestServer, session: &str, prompt: &str) -> Vec<Value> {
    server.start_turn(session, "t", prompt).await;
    server.until_terminal().await
}

/// The texts of a transcript's items (prompts and answers), in order.
fn texts(transcript: &Value) -> Vec<&str> {
    transcript["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["text"].as_str())
        .collect()
}

fn messages(request: &scv_test_support::mock_provider::Recorded) -> Value {
    request.body["messages"].clone()
}

#[tokio::test]
async fn a_session_lives_on_after_its_server_and_resumes_with_the_same_history() {
    let (mock, home, workspace) = setup("").await;
    std::fs::write(workspace.join("notes.txt"), "alpha\n").unwrap();

    // First life: a plain v2 client (no capability): its session is
    // journaled all the same.
    let mut first = TestServer::spawn(BIN, home.path());
    first.initialize().await;
    let id = first.start_session(&workspace).await;
    mock.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path": "notes.txt"}),
    )]));
    mock.push(Reply::text(["it says alpha"]));
    let events = turn(&mut first, &id, "Read notes.txt\nplease").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    mock.push(Reply::text(["second answer"]));
    let events = turn(&mut first, &id, "and again").await;
    let last_seq = events.last().unwrap()["seq"].as_u64().unwrap();
    first.wait().await;

    let dir = home.path().join("sessions");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let journal = dir.join(format!("{id}.jsonl"));
    assert_eq!(
        std::fs::metadata(&journal).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // Second life.
    let mut second = server(home.path()).await;
    let sessions = list(&mut second, json!({})).await;
    assert_eq!(sessions.len(), 1);
    let s = &sessions[0];
    assert_eq!(s["session_id"], id.as_str());
    assert_eq!(s["cwd"], workspace.display().to_string());
    assert_eq!(s["title"], "Read notes.txt");
    assert_eq!(s["turns"], 2);
    assert_eq!(s["provider"], "openai");
    assert_eq!(s["model"], "mock-model");
    assert_eq!(s["open"], false);
    assert!(
        s["updated_unix_seconds"].as_u64().unwrap() >= s["created_unix_seconds"].as_u64().unwrap()
    );
    // Filtered by directory.
    assert_eq!(list(&mut second, json!({"cwd": workspace})).await.len(), 1);
    assert!(list(&mut second, json!({"cwd": "/nowhere"}))
        .await
        .is_empty());

    let requests_before = mock.request_count();
    let (started, snapshot, transcript) = resume(&mut second, &id).await;
    assert_eq!(started["session_id"], id.as_str());
    assert_eq!(started["request_id"], "r");
    assert_eq!(started["resumed"], true);
    assert_eq!(started["unsent_prompts"], json!([]));
    assert!(started.get("seq").is_none());
    assert_eq!(snapshot["entries"], json!([]));
    assert_eq!(
        snapshot["seq"].as_u64().unwrap(),
        last_seq + 1,
        "seq continues"
    );
    assert_eq!(transcript["seq"].as_u64().unwrap(), last_seq + 2);
    assert_eq!(transcript["truncated"], false);
    let items = transcript["items"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "user",
            "tool",
            "assistant",
            "turn_ended",
            "user",
            "assistant",
            "turn_ended"
        ]
    );
    assert_eq!(items[0]["text"], "Read notes.txt\nplease");
    assert_eq!(items[1]["name"], "read_file");
    assert_eq!(items[1]["success"], true);
    assert!(items[1]["output"].as_str().unwrap().contains("alpha"));
    assert_eq!(items[2]["text"], "it says alpha");
    assert_eq!(items[3]["outcome"], "completed");
    assert_eq!(
        mock.request_count(),
        requests_before,
        "a resume runs nothing"
    );

    // The next request carries exactly the history the first life built.
    let before = messages(mock.requests().last().unwrap());
    mock.push(Reply::text(["third answer"]));
    let events = turn(&mut second, &id, "third").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let after = messages(mock.requests().last().unwrap());
    let mut expected = before.as_array().unwrap().clone();
    expected.push(json!({"role":"assistant","content":"second answer"}));
    expected.push(json!({"role":"user","content":"third"}));
    assert_eq!(after, Value::Array(expected));
}

/// Copies `home`'s session store to `to` (a journal as it stands now).
fn copy_store(home: &Path, to: &Path) {
    let from = home.join("sessions");
    let dest = to.join("sessions");
    std::fs::create_dir(&dest).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o700)).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dest.join(entry.file_name())).unwrap();
    }
}

/// Trimming or compaction (`extra`), `session.clear` and
/// `session.configure` shape the canonical history; a resumed session's
/// next request equals the one the live session sends next. Returns the
/// live session's event types.
async fn live_and_resumed_send_the_same(extra: &str) -> Vec<String> {
    let (mock, home, workspace) = setup(extra).await;
    let mut live = server(home.path()).await;
    let id = live
        .start_session_with(json!({"cwd": workspace, "no_tools": true}))
        .await;
    let mut seen = Vec::new();
    mock.push(Reply::text(["before the clear"]));
    turn(&mut live, &id, "forgotten").await;
    live.send(json!({"type":"session.clear","request_id":"c","session_id":id}))
        .await;
    live.expect("session.cleared").await;
    let long = "word ".repeat(300);
    for i in 0..4 {
        mock.push_matching("You compact the conversation", Reply::text(["SUMMARY"]));
        mock.push(Reply::text([long.as_str()]));
        let events = turn(&mut live, &id, &format!("question {i}")).await;
        assert_eq!(
            events.last().unwrap()["type"],
            "turn.completed",
            "{events:?}"
        );
        seen.extend(types(&events).into_iter().map(String::from));
    }
    live.send(
        json!({"type":"session.configure","request_id":"m","session_id":id,
                     "model":"mock-model-2"}),
    )
    .await;
    live.expect("session.configured").await;

    // The journal as it stands, in a second home.
    let other = TestHome::new(&mock.base_url(), extra);
    copy_store(home.path(), other.path());

    mock.push_matching("You compact the conversation", Reply::text(["SUMMARY"]));
    mock.push(Reply::text(["next"]));
    turn(&mut live, &id, "the next question").await;
    let live_request = mock.requests().last().unwrap().body.clone();

    let mut resumed = server(other.path()).await;
    let (started, _, transcript) = resume(&mut resumed, &id).await;
    assert_eq!(started["model"], "mock-model-2", "configure is restored");
    let items = transcript["items"].as_array().unwrap();
    assert!(
        !items.iter().any(|i| i["text"] == "forgotten"),
        "the transcript starts after the clear"
    );
    assert_eq!(items.len(), 4 * 3, "every turn since the clear is shown");
    mock.push_matching("You compact the conversation", Reply::text(["SUMMARY"]));
    mock.push(Reply::text(["next"]));
    turn(&mut resumed, &id, "the next question").await;
    let resumed_request = mock.requests().last().unwrap().body.clone();
    assert_eq!(resumed_request["model"], "mock-model-2");
    assert_eq!(resumed_request["messages"], live_request["messages"]);
    assert!(!live_request.to_string().contains("forgotten"));
    seen
}

#[tokio::test]
async fn a_resume_restores_compaction_clear_and_configure() {
    let seen = live_and_resumed_send_the_same("context_max_tokens = 1000").await;
    assert!(seen.iter().any(|t| t == "context.compacted"), "{seen:?}");
}

#[tokio::test]
async fn a_resume_restores_trimming_clear_and_configure() {
    let seen = live_and_resumed_send_the_same("max_history_bytes = 3000").await;
    assert!(seen.iter().any(|t| t == "session.trimmed"), "{seen:?}");
}

#[tokio::test]
async fn queued_prompts_come_back_unsent_and_never_run() {
    let (mock, home, workspace) = setup("").await;
    let mut first = server(home.path()).await;
    let id = first.start_session(&workspace).await;
    // A turn that streams slowly, and two prompts queued behind it.
    let words: Vec<String> = (0..400).map(|i| format!("w{i} ")).collect();
    mock.push(Reply::text(words).drip(std::time::Duration::from_millis(25)));
    first.start_turn(&id, "t1", "slow").await;
    first.expect("turn.started").await;
    first.start_turn(&id, "t2", "queued one").await;
    first.expect("queue.enqueued").await;
    first.start_turn(&id, "t3", "queued two").await;
    first.expect("queue.enqueued").await;
    // The connection goes: the turn is cancelled, the queue dropped.
    first.wait().await;
    let requests = mock.request_count();

    let mut second = server(home.path()).await;
    let (started, snapshot, transcript) = resume(&mut second, &id).await;
    assert_eq!(
        started["unsent_prompts"],
        json!(["queued one", "queued two"])
    );
    assert_eq!(snapshot["entries"], json!([]));
    let items = transcript["items"].as_array().unwrap();
    assert_eq!(items.last().unwrap()["outcome"], "cancelled");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(mock.request_count(), requests, "nothing ran by itself");
}

#[tokio::test]
async fn open_sessions_are_refused_to_others_and_forks_are_new_sessions() {
    let (mock, home, workspace) = setup("").await;
    let mut holder = server(home.path()).await;
    let id = holder.start_session(&workspace).await;
    mock.push(Reply::text(["one"]));
    let first_turn = turn(&mut holder, &id, "first").await;
    let first_turn_id = first_turn[0]["turn_id"].as_str().unwrap().to_string();
    mock.push(Reply::text(["two"]));
    turn(&mut holder, &id, "second").await;

    let mut other = server(home.path()).await;
    let sessions = list(&mut other, json!({})).await;
    assert_eq!(sessions[0]["open"], true);
    other
        .send(json!({"type":"session.resume","request_id":"r","session_id":id}))
        .await;
    let refused = other.expect_error("invalid_request", "r").await;
    assert!(
        refused["message"].as_str().unwrap().contains("fork"),
        "{refused}"
    );
    other
        .send(json!({"type":"session.delete","request_id":"d","session_id":id}))
        .await;
    other.expect_error("invalid_request", "d").await;
    // Resuming it again on its own connection is refused too.
    holder
        .send(json!({"type":"session.resume","request_id":"r2","session_id":id}))
        .await;
    holder.expect_error("invalid_request", "r2").await;

    // A fork up to the first turn.
    other
        .send(
            json!({"type":"session.fork","request_id":"f","session_id":id,
                     "turn_id":first_turn_id}),
        )
        .await;
    let started = other.expect("session.started").await;
    let fork = started["session_id"].as_str().unwrap().to_string();
    assert_ne!(fork, id);
    assert_eq!(
        started["forked_from"],
        json!({"session_id": id, "turn_id": first_turn_id})
    );
    assert!(started.get("resumed").is_none());
    other.expect("queue.snapshot").await;
    let transcript = other.expect("session.transcript").await;
    let texts = texts(&transcript);
    assert_eq!(texts, ["first", "one"]);
    mock.push(Reply::text(["forked answer"]));
    turn(&mut other, &fork, "on the fork").await;
    let sent = messages(mock.requests().last().unwrap());
    let contents: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["first", "one", "on the fork"]);
    // A fork of a turn that does not exist.
    other
        .send(
            json!({"type":"session.fork","request_id":"f2","session_id":id,
                     "turn_id":"no-such-turn"}),
        )
        .await;
    other.expect_error("invalid_request", "f2").await;

    // Both sessions are listed; the source stays untouched.
    let sessions = list(&mut other, json!({})).await;
    assert_eq!(sessions.len(), 2);
    holder.wait().await;
    let (_, _, transcript) = resume(&mut other, &id).await;
    assert_eq!(transcript["items"].as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn delete_and_the_exact_codes_of_bad_requests() {
    let (mock, home, workspace) = setup("").await;
    let mut first = server(home.path()).await;
    let id = first.start_session(&workspace).await;
    // A session nobody used leaves nothing behind.
    let unused = first.start_session(&workspace).await;
    mock.push(Reply::text(["kept"]));
    turn(&mut first, &id, "keep me").await;
    first.wait().await;
    let dir = home.path().join("sessions");
    assert!(!dir.join(format!("{unused}.jsonl")).exists());

    let mut server = server(home.path()).await;
    let unknown = "0a0a0a0a-0000-4000-8000-00000000dead";
    for (request, code) in [
        (
            json!({"type":"session.resume","request_id":"1","session_id":unknown}),
            "session_not_found",
        ),
        (
            json!({"type":"session.fork","request_id":"2","session_id":unknown}),
            "session_not_found",
        ),
        (
            json!({"type":"session.delete","request_id":"3","session_id":unknown}),
            "session_not_found",
        ),
        (
            json!({"type":"session.resume","request_id":"4","session_id":"../../etc/passwd"}),
            "session_not_found",
        ),
        (
            json!({"type":"session.resume","request_id":"5"}),
            "invalid_request",
        ),
        (
            json!({"type":"session.fork","request_id":"6","session_id":7}),
            "invalid_request",
        ),
        (
            json!({"type":"session.list","request_id":"7","limit":0}),
            "invalid_request",
        ),
        (
            json!({"type":"session.list","request_id":"8","limit":1001}),
            "invalid_request",
        ),
        (
            json!({"type":"session.list","request_id":"9","limit":"ten"}),
            "invalid_request",
        ),
    ] {
        let rid = request["request_id"].as_str().unwrap().to_string();
        server.send(request).await;
        server.expect_error(code, &rid).await;
    }
    // The connection carries on.
    assert_eq!(list(&mut server, json!({"limit": 1000})).await.len(), 1);
    server
        .send(json!({"type":"session.delete","request_id":"del","session_id":id}))
        .await;
    let deleted = server.expect("session.deleted").await;
    assert_eq!(deleted["session_id"], id.as_str());
    assert_eq!(deleted["request_id"], "del");
    assert!(list(&mut server, json!({})).await.is_empty());
    let dir = home.path().join("sessions");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "journal and summary gone"
    );
    server
        .send(json!({"type":"session.delete","request_id":"again","session_id":id}))
        .await;
    server.expect_error("session_not_found", "again").await;
}

#[tokio::test]
async fn without_the_capability_the_requests_are_refused_and_v2_is_unchanged() {
    let mut rig = Rig::new("").await;
    rig.server
        .send(json!({"type":"session.list","request_id":"l"}))
        .await;
    let refused = rig.server.expect_error("invalid_request", "l").await;
    assert!(refused["message"].as_str().unwrap().contains("sessions"));
    let workspace = rig.home.workspace();
    rig.server
        .send(json!({"type":"session.start","request_id":"s","cwd":workspace}))
        .await;
    let started = rig.server.expect("session.started").await;
    for field in ["resumed", "unsent_prompts", "forked_from"] {
        assert!(started.get(field).is_none(), "{field} only on resume/fork");
    }
}

#[tokio::test]
async fn session_store_false_writes_nothing() {
    let (mock, home, workspace) = setup("session_store = false").await;
    let mut server = server(home.path()).await;
    let id = server.start_session(&workspace).await;
    mock.push(Reply::text(["hi"]));
    turn(&mut server, &id, "hello").await;
    assert!(list(&mut server, json!({})).await.is_empty());
    server.wait().await;
    let mut server = self::server(home.path()).await;
    server
        .send(json!({"type":"session.resume","request_id":"r","session_id":id}))
        .await;
    server.expect_error("session_not_found", "r").await;
    assert!(!home.path().join("sessions").exists());
}

/// A store open to others is not used; planted files, links and journals
/// of another format are skipped or reported, never followed.
#[tokio::test]
async fn a_hostile_store_is_refused_or_skipped_never_followed() {
    use std::os::unix::fs::PermissionsExt;
    let (mock, home, workspace) = setup("").await;
    let dir = home.path().join("sessions");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    {
        let mut server = server(home.path()).await;
        let id = server.start_session(&workspace).await;
        assert!(list(&mut server, json!({})).await.is_empty());
        server.wait().await;
        let mut server = self::server(home.path()).await;
        server
            .send(json!({"type":"session.resume","request_id":"r","session_id":id}))
            .await;
        server.expect_error("session_not_found", "r").await;
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "nothing written there"
        );
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();

    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("target.jsonl");
    let header = |id: &str, v: u32| {
        format!(
            "{{\"kind\":\"session\",\"v\":{v},\"session_id\":\"{id}\",\"cwd\":\"/\",\"created\":1,\"provider\":\"openai\",\"model\":\"m\"}}\n"
        )
    };
    let linked = "0a0a0a0a-0000-4000-8000-00000000000a";
    let hard = "0a0a0a0a-0000-4000-8000-00000000000b";
    let newer = "0a0a0a0a-0000-4000-8000-00000000000c";
    let garbage = "0a0a0a0a-0000-4000-8000-00000000000d";
    std::fs::write(&target, header(linked, 1)).unwrap();
    std::os::unix::fs::symlink(&target, dir.join(format!("{linked}.jsonl"))).unwrap();
    let hard_target = dir.join("hard-source");
    std::fs::write(&hard_target, header(hard, 1)).unwrap();
    std::fs::hard_link(&hard_target, dir.join(format!("{hard}.jsonl"))).unwrap();
    std::fs::write(dir.join(format!("{newer}.jsonl")), header(newer, 99)).unwrap();
    std::fs::write(
        dir.join(format!("{garbage}.jsonl")),
        "\u{0}\u{1}not json\n{}\n",
    )
    .unwrap();
    std::fs::write(dir.join("README.txt"), "planted").unwrap();

    let mut server = server(home.path()).await;
    let sessions = list(&mut server, json!({})).await;
    let damaged = |id: &str| {
        sessions
            .iter()
            .find(|s| s["session_id"] == id)
            .and_then(|s| s["damaged"].as_str())
            .unwrap_or_else(|| panic!("{id} listed as damaged: {sessions:?}"))
            .to_string()
    };
    assert!(damaged(linked).contains("link"));
    assert!(damaged(hard).contains("one link"));
    assert!(damaged(newer).contains("version 99"));
    damaged(garbage);
    assert_eq!(sessions.len(), 4, "the planted file is no session");
    for (rid, id) in [("1", linked), ("2", hard), ("3", newer), ("4", garbage)] {
        server
            .send(json!({"type":"session.resume","request_id":rid,"session_id":id}))
            .await;
        server.expect_error("invalid_request", rid).await;
    }
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        header(linked, 1),
        "never written through"
    );
    // Other sessions are unaffected.
    let id = server.start_session(&workspace).await;
    mock.push(Reply::text(["fine"]));
    let events = turn(&mut server, &id, "still works").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

fn journal_bytes(home: &Path) -> Vec<(String, u64)> {
    let mut files: Vec<(String, u64)> = std::fs::read_dir(home.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| {
            let name = e
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".jsonl")
                .to_string();
            (name, e.metadata().unwrap().len())
        })
        .collect();
    files.sort();
    files
}

/// `max_session_store_bytes` as the store grows (the oldest closed session
/// goes, never the open one), and `session_retention_days` at start.
#[tokio::test]
async fn the_store_keeps_its_bounds_and_never_deletes_an_open_session() {
    let (mock, home, workspace) = setup("max_session_store_bytes = 4000").await;
    let mut first = server(home.path()).await;
    let old = first.start_session(&workspace).await;
    mock.push(Reply::text(["old answer"]));
    turn(&mut first, &old, "old").await;
    first.wait().await;
    // A session not updated for 40 days, planted as an older server wrote it.
    let stale = "0a0a0a0a-0000-4000-8000-0000000000aa";
    let at = scv_store_now() - 40 * 86_400;
    std::fs::write(
        home.path().join("sessions").join(format!("{stale}.jsonl")),
        format!(
            "{{\"kind\":\"session\",\"v\":1,\"session_id\":\"{stale}\",\"cwd\":\"/\",\"created\":{at},\"provider\":\"openai\",\"model\":\"m\"}}\n"
        ),
    )
    .unwrap();

    let mut server = server(home.path()).await;
    let kept: Vec<String> = journal_bytes(home.path())
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(kept, [old], "retention removed the stale one at start");
    let live = server.start_session(&workspace).await;
    let answer = "x".repeat(1500);
    for i in 0..4 {
        mock.push(Reply::text([answer.as_str()]));
        turn(&mut server, &live, &format!("growing {i}")).await;
    }
    let left: Vec<String> = journal_bytes(home.path())
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(
        left,
        [live],
        "the oldest went as the store grew; the open one stays"
    );
    assert!(
        journal_bytes(home.path())[0].1 > 4000,
        "open, so kept past the bound"
    );
}

fn scv_store_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The daemon and `--stdio` share one store: a session open on the daemon
/// is refused to the stdio server, and resumes there once the daemon
/// stopped.
#[tokio::test]
async fn daemon_and_stdio_share_the_store() {
    use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
    let (mock, home, workspace) = setup("").await;
    let socket = home.path().join("server.sock");
    let mut daemon = spawn_daemon(BIN, home.path(), &socket, &DaemonLog::default());
    wait_for_socket(&socket).await;
    let mut client = TestServer::connect(&socket).await;
    client.initialize().await;
    let id = client.start_session(&workspace).await;
    mock.push(Reply::text(["from the daemon"]));
    turn(&mut client, &id, "on the daemon").await;

    let mut stdio = server(home.path()).await;
    stdio
        .send(json!({"type":"session.resume","request_id":"r","session_id":id}))
        .await;
    stdio.expect_error("invalid_request", "r").await;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(daemon.id().unwrap() as i32, libc::SIGTERM) };
    daemon.wait().await.unwrap();
    let (started, _, transcript) = resume(&mut stdio, &id).await;
    assert_eq!(started["resumed"], true);
    let texts = texts(&transcript);
    assert_eq!(texts, ["on the daemon", "from the daemon"]);
}

/// A resume by the start of an id (the short id front ends print) opens
/// that session; a fork's listing says where it came from; a resumed
/// session's `session.started` says what it spent only to a client with
/// capability `usage`.
#[tokio::test]
async fn short_ids_resume_forks_are_listed_with_their_source_and_resumes_carry_spending() {
    let (mock, home, workspace) =
        setup("[pricing.\"mock-model\"]\ninput = 1.0\noutput = 4.0\n").await;
    let mut first = server(home.path()).await;
    let id = first.start_session(&workspace).await;
    mock.push(Reply::text(["one"]).with_usage(1000, 500));
    turn(&mut first, &id, "first").await;
    first.wait().await;

    // Without capability `usage`: no spending in session.started.
    let mut plain = server(home.path()).await;
    let short = &id[..8];
    let (started, _, _) = resume(&mut plain, short).await;
    assert_eq!(started["session_id"], id.as_str(), "the whole id");
    assert!(started.get("session_usage_detail").is_none(), "{started}");
    assert!(started.get("session_cost_usd").is_none(), "{started}");
    // A fork, listed with its source.
    plain
        .send(json!({"type":"session.fork","request_id":"f","session_id":short}))
        .await;
    let forked = plain.expect("session.started").await;
    plain.expect("queue.snapshot").await;
    plain.expect("session.transcript").await;
    assert_eq!(forked["forked_from"]["session_id"], id.as_str());
    let fork_id = forked["session_id"].as_str().unwrap().to_string();
    let sessions = list(&mut plain, json!({})).await;
    let fork = sessions
        .iter()
        .find(|s| s["session_id"] == fork_id.as_str())
        .unwrap();
    assert_eq!(fork["forked_from"]["session_id"], id.as_str());
    let source = sessions
        .iter()
        .find(|s| s["session_id"] == id.as_str())
        .unwrap();
    assert!(source.get("forked_from").is_none(), "{source}");
    plain.wait().await;

    let mut with_usage = TestServer::spawn(BIN, home.path());
    with_usage
        .send(
            json!({"type":"initialize","request_id":"init","protocol_version":2,
            "capabilities":{"sessions":true,"usage":true}}),
        )
        .await;
    with_usage.expect("initialized").await;
    let (started, _, _) = resume(&mut with_usage, &id).await;
    assert_eq!(
        started["session_usage_detail"],
        json!({"input":1000,"cache_read":0,"cache_write":0,"output":500,"reasoning":0})
    );
    let cost = started["session_cost_usd"].as_f64().unwrap();
    assert!((cost - 0.003).abs() < 1e-12, "{started}");
    // A start no session has is not found.
    with_usage
        .send(json!({"type":"session.resume","request_id":"x","session_id":"ffffffff"}))
        .await;
    with_usage.expect_error("session_not_found", "x").await;
}
