#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Sessions that outlive their client (capability `detach`), through the
//! real daemon over its Unix socket against the mock provider: a turn
//! goes on after its client closes, a second connection attaches with the
//! queue, the transcript and live events whose `seq` continues without a
//! gap, two attached clients race an approval, `session.close`, exact
//! codes for bad ids, a daemon restart runs nothing, and a connection that
//! did not ask sees protocol version 2 unchanged (its EOF cancels).

mod common;
use common::*;
use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use std::path::PathBuf;
use std::time::Duration;
use tokio::process::Child;

struct Daemon {
    mock: MockProvider,
    home: TestHome,
    socket: PathBuf,
    child: Child,
    log: DaemonLog,
}

impl Daemon {
    async fn start() -> Daemon {
        let mock = MockProvider::start().await;
        let home = TestHome::new(&mock.base_url(), "");
        let socket = home.path().join("run").join("server.sock");
        let log = DaemonLog::default();
        let child = spawn_daemon(BIN, home.path(), &socket, &log);
        wait_for_socket(&socket).await;
        Daemon {
            mock,
            home,
            socket,
            child,
            log,
        }
    }

    /// A client that asked for `detach` and `sessions`.
    async fn client(&self) -> TestServer {
        let mut client = TestServer::connect(&self.socket).await;
        client
            .send(
                json!({"type":"initialize","request_id":"i","protocol_version":2,
                "capabilities":{"detach":true,"sessions":true}}),
            )
            .await;
        let initialized = client.expect("initialized").await;
        assert_eq!(initialized["capabilities"]["detach"], true);
        client
    }

    /// A client of protocol version 2 as the document writes it.
    async fn plain_client(&self) -> TestServer {
        let mut client = TestServer::connect(&self.socket).await;
        let initialized = client.initialize().await;
        assert!(initialized.get("capabilities").is_none());
        client
    }

    /// SIGTERM, and the exit awaited.
    async fn stop(&mut self) {
        let pid = self.child.id().unwrap() as i32;
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("daemon did not exit")
            .unwrap();
        assert!(status.success());
    }

    fn restart(&mut self) {
        self.child = spawn_daemon(BIN, self.home.path(), &self.socket, &self.log);
    }
}

/// A session started on `client` and detached from it.
async fn detached_session(client: &mut TestServer, daemon: &Daemon) -> String {
    let session = client.start_session(&daemon.home.workspace()).await;
    client
        .send(json!({"type":"session.detach","request_id":"d","session_id":session}))
        .await;
    assert_eq!(
        client.expect("session.detached").await,
        json!({"type":"session.detached","request_id":"d","session_id":session})
    );
    session
}

/// `session.list` entries of `session`, as a `detach` client sees it.
async fn listed(client: &mut TestServer, session: &str) -> Value {
    client
        .send(json!({"type":"session.list","request_id":"l"}))
        .await;
    let listed = client.expect("session.listed").await;
    listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == session)
        .cloned()
        .unwrap_or(Value::Null)
}

/// Polls `session.list` (bounded) until `check` holds for the entry.
async fn until_listed(client: &mut TestServer, session: &str, check: impl Fn(&Value) -> bool) {
    for _ in 0..400 {
        if check(&listed(client, session).await) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("session never matched: {}", listed(client, session).await);
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().filter_map(|e| e["seq"].as_u64()).collect()
}

#[tokio::test]
async fn a_detached_turn_completes_after_its_client_closes() {
    let daemon = Daemon::start().await;
    let words: Vec<String> = (0..30).map(|n| format!("w{n} ")).collect();
    daemon
        .mock
        .push(Reply::text(words.clone()).drip(Duration::from_millis(40)));
    let mut first = daemon.client().await;
    let session = detached_session(&mut first, &daemon).await;
    first.start_turn(&session, "t", "write thirty words").await;
    first.expect("turn.started").await;
    first.expect("assistant.delta").await;
    // The client goes away mid-turn.
    drop(first);

    let mut second = daemon.client().await;
    until_listed(&mut second, &session, |s| {
        s["turns"] == 1 && s["state"] == "idle" && s["live"] == true
    })
    .await;
    let entry = listed(&mut second, &session).await;
    assert_eq!(entry["attached"], 0, "nobody follows it now: {entry}");
    assert_eq!(entry["detached"], true);
    // Its journal has the whole answer, completed.
    second
        .send(json!({"type":"session.attach","request_id":"a","session_id":session}))
        .await;
    let attached = second.expect("session.attached").await;
    assert_eq!(attached["state"], "idle");
    assert!(
        attached.get("turn_id").is_none(),
        "nothing runs: {attached}"
    );
    second.expect("queue.snapshot").await;
    let transcript = second.expect("session.transcript").await;
    let items = transcript["items"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "assistant", "turn_ended"]);
    assert_eq!(items[1]["text"], words.concat());
    assert_eq!(items[2]["outcome"], "completed");
    assert_eq!(daemon.mock.dropped_streams(), 0, "the stream was not cut");
}

#[tokio::test]
async fn a_second_connection_attaches_mid_turn_and_seq_goes_on_without_a_gap() {
    let daemon = Daemon::start().await;
    let words: Vec<String> = (0..40).map(|n| format!("w{n} ")).collect();
    daemon.mock.push(Reply::text(["earlier"]));
    daemon
        .mock
        .push(Reply::text(words.clone()).drip(Duration::from_millis(30)));
    let mut first = daemon.client().await;
    let session = detached_session(&mut first, &daemon).await;
    first.start_turn(&session, "t0", "an earlier turn").await;
    let mut seen = first.until_terminal().await;
    first.start_turn(&session, "t1", "write forty words").await;
    seen.extend(first.until("assistant.delta").await);

    let mut second = daemon.client().await;
    second
        .send(json!({"type":"session.attach","request_id":"a","session_id":session}))
        .await;
    let attached = second.expect("session.attached").await;
    assert_eq!(attached["request_id"], "a");
    assert_eq!(attached["session_id"], session.as_str());
    assert_eq!(attached["state"], "running");
    let running_turn = attached["turn_id"].as_str().unwrap().to_string();
    let last = attached["seq"].as_u64().unwrap();
    let snapshot = second.expect("queue.snapshot").await;
    assert_eq!(
        snapshot,
        json!({"type":"queue.snapshot","request_id":"a","session_id":session,"entries":[]})
    );
    let transcript = second.expect("session.transcript").await;
    let items = transcript["items"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "assistant", "turn_ended", "user"]);
    assert_eq!(items[3]["text"], "write forty words");
    assert_eq!(items[3]["turn_id"], running_turn.as_str());
    let live = second.until_terminal().await;
    assert_eq!(live.last().unwrap()["type"], "turn.completed");
    assert_eq!(live[0]["seq"].as_u64().unwrap(), last + 1, "{:?}", live[0]);
    assert_seq_contiguous(&live);

    // The first client got every event, in one run of seqs, and the
    // second's live ones are exactly the same events.
    seen.extend(first.until_terminal().await);
    let numbers = seqs(&seen);
    for pair in numbers.windows(2) {
        assert_eq!(pair[1], pair[0] + 1, "{numbers:?}");
    }
    let after: Vec<&Value> = seen
        .iter()
        .filter(|e| e["seq"].as_u64().is_some_and(|s| s > last))
        .collect();
    assert_eq!(after, live.iter().collect::<Vec<_>>());
    let text: String = live
        .iter()
        .chain(seen.iter())
        .filter(|e| e["type"] == "assistant.completed" && e["turn_id"] == running_turn.as_str())
        .map(|e| e["content"].as_str().unwrap().to_string())
        .next()
        .unwrap();
    assert_eq!(text, words.concat());
    // Either client steers it: a prompt from the second reaches both.
    daemon.mock.push(Reply::text(["from the second"]));
    second.start_turn(&session, "t2", "your turn").await;
    let theirs = second.until_terminal().await;
    assert_eq!(theirs[0]["type"], "turn.started");
    assert_eq!(theirs[0]["request_id"], "t2");
    let mine = first.until_terminal().await;
    assert_eq!(mine, theirs);
}

#[tokio::test]
async fn two_attached_clients_race_an_approval_and_the_first_answers() {
    let daemon = Daemon::start().await;
    daemon.mock.push(Reply::tool_calls(&[(
        "call_1",
        "bash",
        json!({"command": "echo raced"}),
    )]));
    daemon.mock.push(Reply::text(["done"]));
    let mut first = daemon.client().await;
    let session = detached_session(&mut first, &daemon).await;
    first.start_turn(&session, "t", "run it").await;
    let asked = first.until("approval.requested").await;
    let request = asked.last().unwrap().clone();
    let approval_id = request["approval_id"].as_str().unwrap().to_string();

    let mut second = daemon.client().await;
    until_listed(&mut second, &session, |s| {
        s["state"] == "awaiting_approval"
            && s["waiting_for"] == "Run shell command: echo raced"
            && s["attached"] == 1
    })
    .await;
    second
        .send(json!({"type":"session.attach","request_id":"a","session_id":session}))
        .await;
    let attached = second.expect("session.attached").await;
    assert_eq!(attached["state"], "awaiting_approval");
    second.expect("queue.snapshot").await;
    second.expect("session.transcript").await;
    // The approval still waiting, as it was requested (no seq: a replay).
    let replayed = second.expect("approval.requested").await;
    let mut expected = request.clone();
    expected.as_object_mut().unwrap().remove("seq");
    assert_eq!(replayed, expected);

    let resolve = |rid: &str| {
        json!({"type":"approval.resolve","request_id":rid,"session_id":session,
            "approval_id":approval_id,"approved":true})
    };
    // Both answer at once: whichever the daemon takes first answers,
    // the other is told the approval is no longer waiting.
    second.send(resolve("second")).await;
    first.send(resolve("first")).await;
    let mut errors = Vec::new();
    let mut runs = Vec::new();
    for client in [&mut first, &mut second] {
        let mut events = client.until_terminal().await;
        // The refusal may come after the turn's end: a connection answers
        // in order, so it is in by the answer to a later request.
        client
            .send(json!({"type":"session.list","request_id":"sync"}))
            .await;
        events.extend(client.until("session.listed").await);
        events.pop();
        let (refused, rest): (Vec<Value>, Vec<Value>) =
            events.into_iter().partition(|e| e["type"] == "error");
        errors.extend(refused);
        runs.push(rest);
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    let error = &errors[0];
    assert_eq!(error["code"], "approval_not_found");
    assert!(matches!(
        error["request_id"].as_str(),
        Some("first" | "second")
    ));
    assert_eq!(error["fatal"], false);
    let theirs = runs.pop().unwrap();
    let mine = runs.pop().unwrap();
    assert_eq!(
        types(&theirs),
        [
            "tool.started",
            "tool.completed",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
    assert_eq!(mine, theirs, "both got every event");
    assert!(theirs[1]["output"].as_str().unwrap().contains("raced"));
    // The session goes on for both.
    daemon.mock.push(Reply::text(["again"]));
    first.start_turn(&session, "t2", "again").await;
    assert_eq!(
        first.until_terminal().await.last().unwrap()["type"],
        "turn.completed"
    );
    assert_eq!(
        second.until_terminal().await.last().unwrap()["type"],
        "turn.completed"
    );
}

#[tokio::test]
async fn close_cancels_the_turn_tells_every_client_and_ends_the_session() {
    let daemon = Daemon::start().await;
    daemon
        .mock
        .push(Reply::text(["never", "ends"]).then(2, Ending::Stall));
    let mut first = daemon.client().await;
    let session = detached_session(&mut first, &daemon).await;
    first.start_turn(&session, "t", "hang").await;
    first.until("assistant.delta").await;

    // Another client, not attached, stops it (as `scv stop` does).
    let mut other = daemon.client().await;
    other
        .send(json!({"type":"session.close","request_id":"c","session_id":&session[..8]}))
        .await;
    assert_eq!(
        other.expect("session.closed").await,
        json!({"type":"session.closed","request_id":"c","session_id":session})
    );
    let ended = first.until("session.closed").await;
    assert_eq!(types(&ended), ["turn.cancelled", "session.closed"]);
    assert_eq!(
        ended[1],
        json!({"type":"session.closed","session_id":session})
    );
    assert!(
        daemon.mock.wait_dropped(1).await,
        "the provider stream was cut"
    );

    // Gone from the daemon; its journal stays (a stored session).
    let entry = listed(&mut other, &session).await;
    assert_eq!(entry["live"], false, "{entry}");
    assert_eq!(entry["open"], false);
    for (kind, rid) in [
        ("session.attach", "a"),
        ("session.close", "c2"),
        ("session.detach", "d"),
    ] {
        other
            .send(json!({"type":kind,"request_id":rid,"session_id":session}))
            .await;
        other.expect_error("session_not_found", rid).await;
    }
    // Its prompts go nowhere now; the connection that followed it goes on.
    first.start_turn(&session, "late", "hello?").await;
    first.expect_error("session_not_found", "late").await;
    daemon.mock.push(Reply::text(["still here"]));
    let fresh = first.start_session(&daemon.home.workspace()).await;
    first.start_turn(&fresh, "f", "hi").await;
    assert_eq!(
        first.until_terminal().await.last().unwrap()["type"],
        "turn.completed"
    );
}

#[tokio::test]
async fn bad_requests_get_exact_codes_and_the_connection_goes_on() {
    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    for (kind, rid) in [
        ("session.attach", "a"),
        ("session.close", "c"),
        ("session.detach", "d"),
    ] {
        client
            .send(json!({"type":kind,"request_id":rid,"session_id":"no-such-session"}))
            .await;
        client.expect_error("session_not_found", rid).await;
    }
    client
        .send(json!({"type":"session.attach","request_id":"m"}))
        .await;
    client.expect_error("invalid_request", "m").await;
    // A session live here, not detached, cannot be attached elsewhere.
    let session = client.start_session(&daemon.home.workspace()).await;
    let mut other = daemon.client().await;
    other
        .send(json!({"type":"session.attach","request_id":"o","session_id":session}))
        .await;
    other.expect_error("session_not_found", "o").await;
    client
        .send(json!({"type":"session.attach","request_id":"self","session_id":session}))
        .await;
    client.expect_error("invalid_request", "self").await;
    // Attaching twice from one connection.
    client
        .send(json!({"type":"session.detach","request_id":"d1","session_id":session}))
        .await;
    client.expect("session.detached").await;
    client
        .send(json!({"type":"session.attach","request_id":"twice","session_id":session}))
        .await;
    client.expect_error("invalid_request", "twice").await;
    daemon.mock.push(Reply::text(["fine"]));
    client.start_turn(&session, "t", "still fine").await;
    assert_eq!(
        client.until_terminal().await.last().unwrap()["type"],
        "turn.completed"
    );
}

#[tokio::test]
async fn without_the_capability_protocol_2_is_unchanged_and_eof_cancels() {
    let daemon = Daemon::start().await;
    let mut plain = daemon.plain_client().await;
    let session = plain.start_session(&daemon.home.workspace()).await;
    plain
        .send(json!({"type":"session.detach","request_id":"d","session_id":session}))
        .await;
    let refused = plain.expect_error("invalid_request", "d").await;
    assert!(refused["message"]
        .as_str()
        .unwrap()
        .contains("capability `detach`"));
    daemon
        .mock
        .push(Reply::text(["stuck", "never"]).then(2, Ending::Stall));
    plain.start_turn(&session, "t", "hang").await;
    plain.until("assistant.delta").await;
    // Listed as it is by a `detach` client: live on its connection, running.
    let mut watcher = daemon.client().await;
    let entry = listed(&mut watcher, &session).await;
    assert_eq!(
        (&entry["state"], &entry["live"], &entry["attached"]),
        (&json!("running"), &json!(true), &json!(1)),
        "{entry}"
    );
    assert!(entry.get("detached").is_none(), "{entry}");
    drop(watcher);
    drop(plain);
    assert!(daemon.mock.wait_dropped(1).await, "EOF cancelled the turn");

    // A detach client's session that it did not detach: EOF cancels too.
    let mut client = daemon.client().await;
    let own = client.start_session(&daemon.home.workspace()).await;
    daemon
        .mock
        .push(Reply::text(["stuck", "never"]).then(2, Ending::Stall));
    client.start_turn(&own, "t", "hang").await;
    client.until("assistant.delta").await;
    drop(client);
    assert!(daemon.mock.wait_dropped(2).await, "EOF cancelled the turn");

    let mut check = daemon.client().await;
    for id in [&session, &own] {
        until_listed(&mut check, id, |s| s["open"] == false && s["turns"] == 1).await;
        let entry = listed(&mut check, id).await;
        assert_eq!(entry["live"], false);
    }
    check
        .send(json!({"type":"session.resume","request_id":"r","session_id":session}))
        .await;
    check.expect("session.started").await;
    check.expect("queue.snapshot").await;
    let transcript = check.expect("session.transcript").await;
    assert_eq!(transcript["items"][1]["outcome"], "cancelled");
    // The plain client's session.list is refused as before (no
    // capability), and no live fields reach a `sessions`-only client.
    let mut sessions_only = TestServer::connect(&daemon.socket).await;
    sessions_only
        .send(
            json!({"type":"initialize","request_id":"i","protocol_version":2,
            "capabilities":{"sessions":true}}),
        )
        .await;
    sessions_only.expect("initialized").await;
    sessions_only
        .send(json!({"type":"session.list","request_id":"l"}))
        .await;
    let listed = sessions_only.expect("session.listed").await;
    for entry in listed["sessions"].as_array().unwrap() {
        for field in ["state", "attached", "live", "detached"] {
            assert!(entry.get(field).is_none(), "{field} in {entry}");
        }
    }
}

#[tokio::test]
async fn a_daemon_restart_runs_no_detached_turn_again() {
    let mut daemon = Daemon::start().await;
    daemon
        .mock
        .push(Reply::text(["forever", "never"]).then(2, Ending::Stall));
    let mut client = daemon.client().await;
    let session = detached_session(&mut client, &daemon).await;
    client.start_turn(&session, "t", "hang").await;
    client.until("assistant.delta").await;
    drop(client);
    daemon.stop().await;
    assert_eq!(daemon.mock.request_count(), 1);

    daemon.restart();
    wait_for_socket(&daemon.socket).await;
    let mut after = daemon.client().await;
    let entry = listed(&mut after, &session).await;
    assert_eq!(entry["live"], false, "{entry}");
    assert_eq!(entry["open"], false);
    // Attach finds no live session: nothing was brought back.
    after
        .send(json!({"type":"session.attach","request_id":"a","session_id":session}))
        .await;
    after.expect_error("session_not_found", "a").await;
    after
        .send(json!({"type":"session.resume","request_id":"r","session_id":session}))
        .await;
    let started = after.expect("session.started").await;
    assert_eq!(started["unsent_prompts"], json!([]));
    after.expect("queue.snapshot").await;
    let transcript = after.expect("session.transcript").await;
    let end = &transcript["items"][1];
    assert_eq!(end["kind"], "turn_ended");
    assert!(
        matches!(end["outcome"].as_str(), Some("cancelled" | "interrupted")),
        "{end}"
    );
    assert_eq!(
        daemon.mock.request_count(),
        1,
        "the restarted daemon sent no provider request"
    );
}

/// Runs `n` sessions on `client`, each with one turn (detached when
/// `detach`); returns their ids once every turn completed.
async fn sessions_with_a_turn(
    client: &mut TestServer,
    daemon: &Daemon,
    n: usize,
    detach: bool,
) -> Vec<String> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(if detach {
            detached_session(client, daemon).await
        } else {
            client.start_session(&daemon.home.workspace()).await
        });
    }
    for (i, id) in ids.iter().enumerate() {
        daemon.mock.push_matching(
            &format!("question {i}."),
            Reply::text([format!("answer {i}")]),
        );
        client
            .start_turn(id, &format!("t{i}"), &format!("question {i}."))
            .await;
    }
    let mut completed = 0;
    while completed < n {
        let event = client.next().await;
        assert_ne!(event["type"], "turn.failed", "{event}");
        if event["type"] == "turn.completed" {
            completed += 1;
        }
    }
    ids
}

/// The daemon's anonymous resident memory in KiB, after the allocator
/// settled.
async fn settled_kib(pid: u32) -> f64 {
    tokio::time::sleep(Duration::from_millis(500)).await;
    scv_test_support::procfs::resident(pid).anonymous * 1024.0
}

/// 200 detached sessions with a turn each on one daemon, their client
/// gone: every one is listed idle with its turn and attachable with its
/// whole transcript. The memory a detached idle session costs beside an
/// idle session on a connection is printed (docs/BENCHMARKS.md).
/// `n` idle sessions with a turn each on a fresh daemon (detached, their
/// client gone, when `detach`): the daemon, their ids, and the anonymous
/// resident KiB each one costs over the daemon warmed by one of them.
async fn idle_sessions(n: usize, detach: bool) -> (Daemon, Vec<String>, TestServer, f64) {
    let daemon = Daemon::start().await;
    let pid = daemon.child.id().unwrap();
    let mut warm = daemon.client().await;
    sessions_with_a_turn(&mut warm, &daemon, 1, detach).await;
    let before = settled_kib(pid).await;
    let mut owner = daemon.client().await;
    let ids = sessions_with_a_turn(&mut owner, &daemon, n, detach).await;
    if detach {
        drop(owner);
        owner = daemon.client().await;
    }
    let after = settled_kib(pid).await;
    (daemon, ids, owner, (after - before) / n as f64)
}

#[tokio::test]
async fn two_hundred_detached_sessions_with_a_turn_each_are_all_attachable() {
    const N: usize = 200;
    let (plain, _, _held, on_connection) = idle_sessions(N, false).await;
    drop(plain);
    let (daemon, ids, _, detached) = idle_sessions(N, true).await;
    println!(
        "per idle session with one turn: {on_connection:.1} KiB on its connection, {detached:.1} KiB detached with its client gone (debug build, anonymous resident)"
    );
    let mut follower = daemon.client().await;
    follower
        .send(json!({"type":"session.list","request_id":"l","limit":1000}))
        .await;
    let listed = follower.expect("session.listed").await;
    let live: Vec<&Value> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["detached"] == true)
        .collect();
    assert_eq!(live.len(), N + 1, "the warm one too");
    for id in &ids {
        let entry = live
            .iter()
            .find(|s| s["session_id"] == id.as_str())
            .unwrap();
        assert_eq!(entry["state"], "idle");
        assert_eq!(entry["turns"], 1);
    }
    for (i, id) in ids.iter().enumerate() {
        follower
            .send(json!({"type":"session.attach","request_id":format!("a{i}"),"session_id":id}))
            .await;
        let attached = follower.expect("session.attached").await;
        assert_eq!(attached["session_id"], id.as_str());
        assert_eq!(attached["state"], "idle");
        follower.expect("queue.snapshot").await;
        let transcript = follower.expect("session.transcript").await;
        let items = &transcript["items"];
        assert_eq!(items[0]["text"], format!("question {i}."));
        assert_eq!(items[1]["text"], format!("answer {i}"));
        assert_eq!(items[2]["outcome"], "completed");
    }
}

/// A subagent's approval in a detached session is answered, with the
/// child's id, from a connection that attached to it (its keeper takes it).
#[tokio::test]
async fn a_subagents_approval_is_answered_from_an_attached_connection() {
    let daemon = Daemon::start().await;
    daemon.mock.push(Reply::tool_calls(&[(
        "c1",
        "task",
        json!({"description": "make a file", "prompt": "CHILD-BASH"}),
    )]));
    daemon.mock.push_matching(
        "CHILD-BASH",
        Reply::tool_calls(&[("k1", "bash", json!({"command": "echo made > made.txt"}))]),
    );
    daemon
        .mock
        .push_matching("CHILD-BASH", Reply::text(["Made it."]));
    daemon.mock.push(Reply::text(["ok"]));
    let mut first = TestServer::connect(&daemon.socket).await;
    first
        .send(
            json!({"type":"initialize","request_id":"i","protocol_version":2,
            "capabilities":{"detach":true,"sessions":true,"subagents":true}}),
        )
        .await;
    first.expect("initialized").await;
    let session = detached_session(&mut first, &daemon).await;
    first.start_turn(&session, "t", "go").await;
    let asked = first.until("approval.requested").await.pop().unwrap();
    let child = asked["session_id"].as_str().unwrap().to_string();
    assert_ne!(child, session);
    drop(first);

    let mut second = TestServer::connect(&daemon.socket).await;
    second
        .send(
            json!({"type":"initialize","request_id":"i","protocol_version":2,
            "capabilities":{"detach":true,"sessions":true,"subagents":true}}),
        )
        .await;
    second.expect("initialized").await;
    second
        .send(json!({"type":"session.attach","request_id":"a","session_id":session}))
        .await;
    assert_eq!(second.expect("session.attached").await["state"], "running");
    second.expect("queue.snapshot").await;
    second.expect("session.transcript").await;
    second
        .send(
            json!({"type":"approval.resolve","request_id":"r","session_id":child,
            "approval_id":asked["approval_id"],"approved":true}),
        )
        .await;
    let events = second.until_terminal().await;
    assert!(!events.iter().any(|e| e["type"] == "error"), "{events:#?}");
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(daemon.home.workspace().join("made.txt").exists());
}

/// stdio ends with its client: `detach` is not granted there, and a
/// resume of a live detached session says to attach instead.
#[tokio::test]
async fn stdio_grants_no_detach_and_resume_points_to_attach() {
    let mut rig = Rig::with_capabilities("", json!({"detach": true, "sessions": true})).await;
    let session = rig.session().await;
    rig.server
        .send(json!({"type":"session.detach","request_id":"d","session_id":session}))
        .await;
    rig.server.expect_error("invalid_request", "d").await;

    let daemon = Daemon::start().await;
    let mut client = daemon.client().await;
    let live = detached_session(&mut client, &daemon).await;
    let mut other = daemon.client().await;
    other
        .send(json!({"type":"session.resume","request_id":"r","session_id":live}))
        .await;
    let refused = other.expect_error("invalid_request", "r").await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("attach to it"),
        "{refused}"
    );
}
