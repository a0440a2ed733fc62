#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! When the disk under `$SCV_HOME` fills, through the real binary: turns
//! go on, one `session.warning` `journal_failed` says the session is no
//! longer being saved, a changing call says it has no undo point before it
//! runs, nothing half written is left behind; once space returns the next
//! record catches the journal up (`journal_recovered`), and a fresh server
//! resumes every completed turn, in order, once. A client that asked for
//! nothing sees protocol version 2 unchanged.
//!
//! `$SCV_HOME` is a 600 KiB tmpfs mounted for the test (root only, as CI
//! runs; skipped with a message otherwise), filled with a ballast file.

mod common;
use common::tmpfs::{fill, unfill, Tmpfs};
use common::*;
use std::path::Path;

/// `$SCV_HOME` on `tmpfs` with the mock's config.
fn home_on(tmpfs: &Tmpfs, mock: &MockProvider, extra: &str) {
    let config = format!(
        "model = \"mock-model\"\nbase_url = \"{}\"\n{extra}\n",
        mock.base_url()
    );
    std::fs::write(tmpfs.path().join("config.toml"), config).unwrap();
}

/// A server on `home` that asked for `capabilities`.
async fn server(home: &Path, capabilities: Value) -> TestServer {
    let mut server = TestServer::spawn(BIN, home);
    let mut init = json!({"type":"initialize","request_id":"init","protocol_version":2});
    if !capabilities.is_null() {
        init["capabilities"] = capabilities;
    }
    server.send(init).await;
    server.expect("initialized").await;
    server
}

/// About 10 KB of answer, different each turn.
fn answer(n: usize) -> String {
    format!("answer #{n}# {}", "lorem ipsum ".repeat(850))
}

/// Turn `n` (prompt `turn #n#`), which must complete; its events.
async fn run(
    server: &mut TestServer,
    mock: &MockProvider,
    id: &str,
    prompts: &mut Vec<String>,
    n: usize,
    reply: Reply,
) -> Vec<Value> {
    let prompt = format!("turn #{n}#");
    prompts.push(prompt.clone());
    mock.push(reply);
    server.start_turn(id, "t", &prompt).await;
    let events = server.until_terminal().await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    events
}

fn warnings<'a>(events: &'a [Value], code: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "session.warning" && e["code"] == code)
        .collect()
}

/// Every line of every journal parses: no torn record is left.
fn journals_whole(sessions: &Path) {
    for entry in std::fs::read_dir(sessions).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            !name.ends_with(".tmp"),
            "a temporary file was left behind: {name}"
        );
        if name.ends_with(".jsonl") {
            let text = std::fs::read_to_string(entry.path()).unwrap();
            assert!(text.is_empty() || text.ends_with('\n'), "{name} torn");
            for line in text.lines() {
                serde_json::from_str::<Value>(line)
                    .unwrap_or_else(|e| panic!("{name}: a torn record {line:.80}: {e}"));
            }
        }
    }
}

#[tokio::test]
async fn a_full_disk_warns_once_turns_go_on_and_the_journal_catches_up_when_space_returns() {
    let Some(tmpfs) = Tmpfs::mount("600k") else {
        return;
    };
    let mock = MockProvider::start().await;
    home_on(
        &tmpfs,
        &mock,
        "auto_approve = [\"read\", \"write\", \"process\"]",
    );
    let workspace = tempfile::tempdir().unwrap();
    let workspace = workspace.path().canonicalize().unwrap();
    let home = tmpfs.path();

    let mut first = server(home, json!({"sessions": true, "checkpoints": true})).await;
    let id = first.start_session(&workspace).await;
    let mut prompts = Vec::new();
    let mut all = Vec::new();
    let mut n = 0;

    // Two turns while there is room.
    for _ in 0..2 {
        n += 1;
        let events = run(
            &mut first,
            &mock,
            &id,
            &mut prompts,
            n,
            Reply::text([answer(n)]),
        )
        .await;
        assert!(warnings(&events, "journal_failed").is_empty());
        all.extend(events);
    }

    // The disk fills: the turns go on.
    let ballast = fill(home);
    assert!(ballast > 0);
    for _ in 0..4 {
        n += 1;
        let events = run(
            &mut first,
            &mock,
            &id,
            &mut prompts,
            n,
            Reply::text([answer(n)]),
        )
        .await;
        all.extend(events);
    }
    // A changing call: it says it has no undo point before it runs.
    n += 1;
    mock.push(Reply::tool_calls(&[(
        "w1",
        "write_file",
        json!({"path": "out.txt", "content": "written while the disk was full\n"}),
    )]));
    let events = run(
        &mut first,
        &mock,
        &id,
        &mut prompts,
        n,
        Reply::text([answer(n)]),
    )
    .await;
    let kinds = types(&events);
    let failed = kinds
        .iter()
        .position(|k| *k == "checkpoint.failed")
        .unwrap_or_else(|| panic!("no checkpoint.failed: {kinds:?}"));
    let started = kinds.iter().position(|k| *k == "tool.started").unwrap();
    assert!(failed < started, "{kinds:?}");
    assert!(
        events[failed]["message"]
            .as_str()
            .unwrap()
            .starts_with("no undo point: disk full"),
        "{}",
        events[failed]
    );
    assert!(!kinds.contains(&"checkpoint.created"), "{kinds:?}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("out.txt")).unwrap(),
        "written while the disk was full\n",
        "the call ran all the same"
    );
    all.extend(events);
    // `/undo` says why it cannot.
    first
        .send(json!({"type":"checkpoint.list","request_id":"cl","session_id":id}))
        .await;
    let listed = first.expect("checkpoint.listed").await;
    assert!(
        listed["missed"]["message"]
            .as_str()
            .unwrap()
            .starts_with("no undo point: disk full"),
        "{listed}"
    );

    let failed = warnings(&all, "journal_failed");
    assert_eq!(
        failed.len(),
        1,
        "one warning, not one per write: {failed:?}"
    );
    // Inside a turn: after its `turn.started`, before its end.
    let at = all
        .iter()
        .position(|e| e["type"] == "session.warning")
        .unwrap();
    let started = all[..at]
        .iter()
        .rposition(|e| e["type"] == "turn.started")
        .unwrap();
    assert!(
        !types(&all[started..at]).contains(&"turn.completed"),
        "{:?}",
        types(&all[started..=at])
    );
    assert_eq!(failed[0]["session_id"], id.as_str());
    assert!(
        failed[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("not saved: the disk under SCV_HOME is full"),
        "{}",
        failed[0]
    );
    assert!(warnings(&all, "journal_recovered").is_empty());
    journals_whole(&home.join("sessions"));

    // Space returns: the next record catches the journal up.
    unfill(home);
    n += 1;
    let events = run(
        &mut first,
        &mock,
        &id,
        &mut prompts,
        n,
        Reply::text([answer(n)]),
    )
    .await;
    let recovered = warnings(&events, "journal_recovered");
    assert_eq!(recovered.len(), 1, "{:?}", types(&events));
    assert!(warnings(&events, "journal_failed").is_empty());
    // Said once the turn is under way (it caught up with the turn's
    // start), before the turn's end.
    let kinds = types(&events);
    let at = kinds.iter().position(|k| *k == "session.warning").unwrap();
    assert!(kinds[..at].contains(&"turn.started"), "{kinds:?}");
    assert!(at < kinds.len() - 1);
    all.extend(events);
    assert!(first.wait().await.success());
    journals_whole(&home.join("sessions"));
    let journal =
        std::fs::read_to_string(home.join("sessions").join(format!("{id}.jsonl"))).unwrap();
    assert!(
        journal.contains("\"no_undo\":\"no undo point: disk full"),
        "the turn without a checkpoint says so in its record"
    );

    // A fresh server resumes every completed turn, in order, once.
    let mut second = server(home, json!({"sessions": true})).await;
    second
        .send(json!({"type":"session.resume","request_id":"r","session_id":id}))
        .await;
    second.expect("session.started").await;
    second.expect("queue.snapshot").await;
    let transcript = second.expect("session.transcript").await;
    let items = transcript["items"].as_array().unwrap();
    let users: Vec<&str> = items
        .iter()
        .filter(|i| i["kind"] == "user")
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, prompts, "every completed turn, in order, once");
    let ended: Vec<&Value> = items.iter().filter(|i| i["kind"] == "turn_ended").collect();
    assert_eq!(ended.len(), prompts.len());
    assert!(
        ended.iter().all(|i| i["outcome"] == "completed"),
        "{ended:?}"
    );
    for k in 1..=n {
        let answers = items
            .iter()
            .filter(|i| i["kind"] == "assistant")
            .filter(|i| {
                i["text"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("answer #{k}#"))
            })
            .count();
        assert_eq!(answers, 1, "turn {k}'s answer");
    }
    // The next request carries the whole conversation.
    mock.push(Reply::text(["and on"]));
    second.start_turn(&id, "t", "one more").await;
    second.until_terminal().await;
    let request = mock.requests().last().unwrap().body.clone();
    let text = request["messages"].to_string();
    for prompt in &prompts {
        assert_eq!(
            text.matches(&format!("\"{prompt}\"")).count(),
            1,
            "{prompt}"
        );
    }
    // `/undo` still says why after the resume.
    second
        .send(json!({"type":"checkpoint.list","request_id":"cl","session_id":id}))
        .await;
    // No `checkpoints` capability asked here: refused, and that is all.
    second.expect_error("invalid_request", "cl").await;
    assert!(second.wait().await.success());
}

#[tokio::test]
async fn a_client_that_asked_for_nothing_sees_no_session_warning_and_a_new_session_waits_for_room()
{
    let Some(tmpfs) = Tmpfs::mount("600k") else {
        return;
    };
    let mock = MockProvider::start().await;
    home_on(&tmpfs, &mock, "");
    let workspace = tempfile::tempdir().unwrap();
    let workspace = workspace.path().canonicalize().unwrap();
    let home = tmpfs.path();

    // The store exists; then the disk fills before the session starts:
    // its journal's header waits too.
    let mut plain = server(home, Value::Null).await;
    fill(home);
    let id = plain.start_session(&workspace).await;
    let mut events = Vec::new();
    for n in 1..=3 {
        mock.push(Reply::text([answer(n)]));
        plain.start_turn(&id, "t", &format!("plain #{n}#")).await;
        let turn = plain.until_terminal().await;
        assert_eq!(turn.last().unwrap()["type"], "turn.completed");
        events.extend(turn);
    }
    unfill(home);
    mock.push(Reply::text(["last"]));
    plain.start_turn(&id, "t", "plain #4#").await;
    events.extend(plain.until_terminal().await);
    // Protocol version 2 as the document writes it: no extension event,
    // and `seq` without a gap.
    assert!(
        !types(&events).contains(&"session.warning"),
        "{:?}",
        types(&events)
    );
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    assert!(plain.wait().await.success());
    journals_whole(&home.join("sessions"));

    // Its journal caught up all the same, header first.
    let mut later = server(home, json!({"sessions": true})).await;
    later
        .send(json!({"type":"session.list","request_id":"ls"}))
        .await;
    let listed = later.expect("session.listed").await;
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["session_id"], id.as_str());
    assert_eq!(sessions[0]["turns"], 4);
    assert!(sessions[0].get("damaged").is_none(), "{listed}");
    assert!(later.wait().await.success());
}
