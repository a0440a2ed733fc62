#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Sessions that outlive their client from a shell, through the real `scv`
//! and daemon binaries against the mock provider: `scv --bg` returns with
//! the id while the turn runs; `scv agents` lists it (state, workspace,
//! what it waits for); `scv logs ID [--follow]` prints its conversation;
//! `scv stop ID` ends it (its journal stays).

mod common;
use common::*;
use std::time::Duration;

fn run(home: &Home, args: &[&str]) -> std::process::Output {
    home.scv().args(args).output().unwrap()
}

/// `scv --bg PROMPT`: the id on stdout.
fn background(home: &Home, prompt: &str) -> String {
    let out = run(home, &["--bg", prompt]);
    assert!(out.status.success(), "{}", stderr(&out));
    let id = stdout(&out).trim().to_string();
    assert_eq!(id.len(), 36, "a session id: {id:?}");
    assert!(stderr(&out).contains("scv logs"), "{}", stderr(&out));
    id
}

/// `scv agents --json`: the live entry of `id` (`Null`: not live).
fn agent(home: &Home, id: &str) -> Value {
    let out = run(home, &["agents", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    listed
        .into_iter()
        .find(|s| s["session_id"] == id)
        .unwrap_or(Value::Null)
}

async fn until_agent(home: &Home, id: &str, check: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..200 {
        let entry = agent(home, id);
        if check(&entry) {
            return entry;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("never matched: {}", agent(home, id));
}

#[tokio::test(flavor = "multi_thread")]
async fn bg_agents_logs_and_stop() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let words: Vec<String> = (0..30).map(|n| format!("w{n} ")).collect();
    mock.push(Reply::text(words.clone()).drip(Duration::from_millis(40)));
    let id = background(&home, "write thirty words");

    // Listed while it runs, with its workspace.
    let entry = until_agent(&home, &id, |e| e["state"] == "running").await;
    assert_eq!(entry["live"], true);
    assert_eq!(entry["detached"], true);
    assert_eq!(
        entry["cwd"],
        home.workspace()
            .canonicalize()
            .unwrap()
            .display()
            .to_string()
    );
    let table = stdout(&run(&home, &["agents"]));
    assert!(table.starts_with("SESSION"), "{table}");
    assert!(table.contains(&id[..8]), "{table}");

    // Followed to its end: the prompt, the whole answer, how it ended.
    let follow = run(&home, &["logs", &id[..8], "--follow"]);
    assert!(follow.status.success(), "{}", stderr(&follow));
    let text = stdout(&follow);
    assert!(text.contains("> write thirty words"), "{text}");
    assert!(text.contains("w29"), "{text}");
    assert!(text.trim_end().ends_with("[turn completed]"), "{text}");

    // The transcript alone, now that it is idle.
    let entry = until_agent(&home, &id, |e| e["state"] == "idle").await;
    assert_eq!(entry["turns"], 1);
    let logs = run(&home, &["logs", &id]);
    let text = stdout(&logs);
    assert!(text.contains(&words.concat()), "{text}");
    assert!(text.contains("[turn completed]"), "{text}");

    // Stopped: gone from the daemon, kept in the store.
    let stop = run(&home, &["stop", &id]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    assert_eq!(agent(&home, &id), Value::Null);
    assert_eq!(stdout(&run(&home, &["agents"])), "no live sessions\n");
    let gone = run(&home, &["logs", &id]);
    assert!(!gone.status.success());
    assert!(
        stderr(&gone).contains("the server has no such session"),
        "{}",
        stderr(&gone)
    );
    let stored = stdout(&run(&home, &["sessions", "list", "--json"]));
    let stored: Vec<Value> = serde_json::from_str(&stored).unwrap();
    let kept = stored
        .iter()
        .find(|s| s["session_id"] == id.as_str())
        .unwrap();
    assert_eq!(kept["turns"], 1);
    assert_eq!(kept["open"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_says_what_a_session_waits_for_and_stop_cancels_it() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "echo from the background"}),
    )]));
    let id = background(&home, "run a command");
    let entry = until_agent(&home, &id, |e| e["state"] == "awaiting_approval").await;
    assert_eq!(
        entry["waiting_for"],
        "Run shell command: echo from the background"
    );
    let table = stdout(&run(&home, &["agents"]));
    assert!(
        table.contains("waits for approval: Run shell command: echo from the background"),
        "{table}"
    );
    // Its log says so, and ends there (nothing to follow without a client
    // to answer: `scv attach` does).
    let logs = stdout(&run(&home, &["logs", &id]));
    assert!(
        logs.contains("[waiting for approval: Run shell command: echo from the background]"),
        "{logs}"
    );
    let stop = run(&home, &["stop", &id]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    let stored = stdout(&run(&home, &["sessions", "export", &id]));
    assert!(stored.contains("cancelled"), "{stored}");
    assert_eq!(mock.request_count(), 1, "the call never ran");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_ids_and_an_empty_prompt_are_one_line_each() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let empty = run(&home, &["--bg", "  "]);
    assert!(!empty.status.success());
    assert!(
        stderr(&empty).contains("--bg needs a prompt"),
        "{}",
        stderr(&empty)
    );
    // No daemon yet: nothing is live.
    assert_eq!(
        stdout(&run(&home, &["agents"])),
        "no live sessions (the SCV daemon is not running)\n"
    );
    mock.push(Reply::text(["ok"]));
    let _id = background(&home, "hello");
    for args in [["stop", "nope-nope"], ["logs", "nope-nope"]] {
        let out = run(&home, &args);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("the server has no such session"), "{err}");
    }
}

/// `scv exec --continue` while the last session here is live elsewhere (a
/// background run): it cannot be resumed, so the prompt runs in a fork of
/// it with the conversation so far, and stderr says so and how to follow
/// the live one.
#[tokio::test(flavor = "multi_thread")]
async fn continue_forks_a_session_open_elsewhere_and_says_so() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    mock.push(Reply::text(["first answer"]));
    let id = background(&home, "start it off");
    until_agent(&home, &id, |e| e["state"] == "idle" && e["turns"] == 1).await;
    mock.push(Reply::text(["continued in a fork"]));
    let out = run(&home, &["exec", "--continue", "and then?"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("is open elsewhere") && err.contains(&format!("scv attach {}", &id[..8])),
        "{err}"
    );
    assert!(stdout(&out).contains("continued in a fork"));
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("start it off"),
        "the fork has the conversation: {body}"
    );
    assert!(
        !err.contains(&format!("[session] {id}")),
        "not the live one: {err}"
    );
}
