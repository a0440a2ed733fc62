#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Crash safety of the session store: `scv-server --stdio` is killed with
//! SIGKILL at random moments — between turns, mid-stream, mid-tool, while
//! queued prompts wait — over many rounds. After every kill each session
//! is listed (none damaged) and resumable; every turn a client saw end is
//! in the transcript as it ended, every turn it saw start is there (ended,
//! or marked interrupted); nothing runs again by itself; and the next
//! request carries every completed turn's prompt.

mod common;
use common::stored::server;
use common::*;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

const ROUNDS: usize = 14;

#[derive(Default)]
struct Seen {
    /// Turns whose `turn.started` arrived, by session.
    started: BTreeMap<String, BTreeSet<String>>,
    /// Turns whose terminal event arrived: the outcome as the transcript
    /// names it.
    ended: BTreeMap<String, BTreeMap<String, String>>,
    /// Prompts of turns that completed.
    prompts: BTreeMap<String, Vec<String>>,
}

fn outcome(kind: &str) -> Option<&'static str> {
    match kind {
        "turn.completed" => Some("completed"),
        "turn.cancelled" => Some("cancelled"),
        "turn.failed" => Some("failed"),
        _ => None,
    }
}

/// Runs turns on `session` forever (the caller's timeout ends it),
/// approving every call and recording what the client saw.
async fn drive(
    server: &mut TestServer,
    mock: &MockProvider,
    workspace: &Path,
    session: &str,
    seen: &mut Seen,
) {
    let mut n = 0;
    loop {
        n += 1;
        let prompt = format!("prompt {n} {}", rand::random::<u32>());
        match n % 3 {
            0 => mock.push(Reply::text(["a quick answer"])),
            1 => {
                let words: Vec<String> = (0..60).map(|i| format!("w{i} ")).collect();
                mock.push(Reply::text(words).drip(Duration::from_millis(4)));
            }
            _ => {
                let file = workspace.join(format!("f{n}.txt"));
                mock.push(Reply::tool_calls(&[(
                    &format!("c{n}"),
                    "bash",
                    json!({"command": format!("sleep 0.05; echo {n} > {}", file.display())}),
                )]));
                mock.push(Reply::text(["wrote it"]));
            }
        }
        server.start_turn(session, &format!("t{n}"), &prompt).await;
        // Sometimes a prompt waits behind the turn.
        if n % 4 == 0 {
            server
                .start_turn(session, &format!("q{n}"), "queued behind")
                .await;
        }
        loop {
            let Some(event) = server.next_opt().await else {
                return;
            };
            let kind = event["type"].as_str().unwrap_or_default();
            let turn = event["turn_id"].as_str().unwrap_or_default().to_string();
            if kind == "turn.started" {
                seen.started
                    .entry(session.into())
                    .or_default()
                    .insert(turn.clone());
            } else if kind == "approval.requested" {
                server
                    .send(json!({"type":"approval.resolve","request_id":"a",
                        "session_id":session,"approval_id":event["approval_id"],"approved":true}))
                    .await;
            } else if let Some(outcome) = outcome(kind) {
                seen.ended
                    .entry(session.into())
                    .or_default()
                    .insert(turn, outcome.into());
                if outcome == "completed" && event["request_id"] == format!("t{n}") {
                    seen.prompts
                        .entry(session.into())
                        .or_default()
                        .push(prompt.clone());
                }
                if event["request_id"] == format!("t{n}") && n % 4 != 0 {
                    break;
                }
                if event["request_id"] == format!("q{n}") {
                    break;
                }
            }
        }
    }
}

/// Every known session listed and resumed on `server`; what the client
/// saw is in each transcript; nothing runs by itself.
async fn check(server: &mut TestServer, mock: &MockProvider, seen: &Seen, sessions: &[String]) {
    server
        .send(json!({"type":"session.list","request_id":"ls","limit":1000}))
        .await;
    let listed = server.expect("session.listed").await;
    let listed = listed["sessions"].as_array().unwrap();
    for id in sessions {
        let entry = listed
            .iter()
            .find(|s| s["session_id"] == id.as_str())
            .unwrap_or_else(|| panic!("session {id} not listed: {listed:?}"));
        assert!(entry.get("damaged").is_none(), "{entry}");
        assert_eq!(entry["open"], false, "the killed server's lock is gone");
    }
    let requests = mock.request_count();
    for id in sessions {
        server
            .send(json!({"type":"session.resume","request_id":"r","session_id":id}))
            .await;
        let started = server.expect("session.started").await;
        assert_eq!(started["resumed"], true);
        server.expect("queue.snapshot").await;
        let transcript = server.expect("session.transcript").await;
        let items = transcript["items"].as_array().unwrap();
        let ends: BTreeMap<String, String> = items
            .iter()
            .filter(|i| i["kind"] == "turn_ended")
            .map(|i| {
                (
                    i["turn_id"].as_str().unwrap().to_string(),
                    i["outcome"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        for (turn, outcome) in seen.ended.get(id).into_iter().flatten() {
            assert_eq!(ends.get(turn), Some(outcome), "turn {turn} of {id}");
        }
        for turn in seen.started.get(id).into_iter().flatten() {
            assert!(
                ends.contains_key(turn),
                "turn {turn} of {id} is in the transcript"
            );
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        mock.request_count(),
        requests,
        "nothing re-ran after the kill"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_at_random_moments_loses_no_completed_turn_and_reruns_nothing() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(
        &mock.base_url(),
        "auto_approve = [\"read\", \"write\", \"process\"]",
    );
    let workspace = home.workspace();
    let mut seen = Seen::default();
    let mut sessions: Vec<String> = Vec::new();
    let mut rng = rand::rng();
    for round in 0..ROUNDS {
        let mut server = server(home.path()).await;
        check(&mut server, &mock, &seen, &sessions).await;
        // Continue a resumed session, or start one.
        let session = if sessions.is_empty() || rng.random_bool(0.3) {
            let id = server.start_session(&workspace).await;
            sessions.push(id.clone());
            id
        } else {
            sessions[rng.random_range(0..sessions.len())].clone()
        };
        if round > 0 {
            // The resumed history holds every completed prompt.
            mock.push(Reply::text(["checking"]));
            server.start_turn(&session, "h", "history check").await;
            let events = server.until_terminal().await;
            let started = events[0]["turn_id"].as_str().unwrap().to_string();
            seen.started
                .entry(session.clone())
                .or_default()
                .insert(started.clone());
            let kind = events.last().unwrap()["type"].as_str().unwrap();
            seen.ended
                .entry(session.clone())
                .or_default()
                .insert(started, outcome(kind).unwrap().into());
            let sent = mock.requests().last().unwrap().body.to_string();
            for prompt in seen.prompts.get(&session).into_iter().flatten() {
                assert!(
                    sent.contains(prompt.as_str()),
                    "{prompt} lost from {session}"
                );
            }
        }
        let pid = server.pid() as i32;
        let kill_after = Duration::from_millis(rng.random_range(20..700));
        let _ = tokio::time::timeout(
            kill_after,
            drive(&mut server, &mock, &workspace, &session, &mut seen),
        )
        .await;
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let _ = server.wait().await;
    }
    let mut server = server(home.path()).await;
    check(&mut server, &mock, &seen, &sessions).await;
    let turns: usize = seen.ended.values().map(|m| m.len()).sum();
    let interrupted = seen.started.values().map(|s| s.len()).sum::<usize>() - turns;
    println!(
        "{ROUNDS} kills, {} sessions, {turns} turns ended, {interrupted} interrupted",
        sessions.len()
    );
}
