#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
//! What a subagent costs (`cargo bench -p scv-server --bench subagents`),
//! through the release `scv-server --stdio` and the scripted provider:
//!
//! 1. **Starting one**, beyond its first provider request (budget ≤ 5 ms):
//!    the gap from the parent's first request to the next request the
//!    provider sees, when the model's call is `task` (the next request is
//!    the child's first) and when it is `read_file` (the parent's second).
//!    Both gaps stream the same tool-call reply and run one call; what the
//!    `task` gap has beyond it is what starting a child costs: its
//!    session, journal, sink, `subagent.started` / `turn.started`, system
//!    prompt and request. Turns interleave so drift hits both alike; the
//!    figure is the difference of the medians. The clock is the mock's
//!    (`Recorded::arrived`), one process, so no cross-process skew.
//! 2. **100 at once** across 10 sessions of one connection: 10 `task`
//!    calls per turn (`max_subagents = 10`), every child holding its
//!    stream open; the server's resident memory while all 100 stream, and
//!    10 s after they are cancelled.

use scv_test_support::client::{TestHome, TestServer};
use scv_test_support::mock_provider::{Ending, MockProvider, Reply};
use scv_test_support::procfs::status_field;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const TURNS: usize = 200;

async fn server(extra: &str) -> (MockProvider, TestHome, TestServer) {
    let mock = MockProvider::start().await;
    let home = TestHome::new_in(
        &PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        &mock.base_url(),
        extra,
    );
    std::fs::write(home.workspace().join("small.txt"), "hello\n").unwrap();
    let mut server = TestServer::spawn(BIN, home.path());
    server
        .send(
            json!({"type":"initialize","request_id":"i","protocol_version":2,
                     "capabilities":{"subagents":true}}),
        )
        .await;
    server.expect("initialized").await;
    (mock, home, server)
}

/// One turn; the gap from its first request to its second.
async fn gap(
    mock: &MockProvider,
    server: &mut TestServer,
    session: &str,
    n: usize,
    task: bool,
) -> Duration {
    let before = mock.request_count();
    let call = if task {
        let prompt = format!("BENCH-CHILD-{n}");
        mock.push_matching(&prompt, Reply::text(["child done"]));
        (
            "c",
            "task",
            json!({"description": "bench", "prompt": prompt}),
        )
    } else {
        ("c", "read_file", json!({"path": "small.txt"}))
    };
    mock.push(Reply::tool_calls(&[call]));
    mock.push(Reply::text(["ok"]));
    server.start_turn(session, "t", "go").await;
    let events = server.until_terminal().await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    let requests = mock.take_requests();
    assert!(requests.len() >= 2, "{before}");
    requests[1].arrived - requests[0].arrived
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn start_cost() {
    let (mock, home, mut server) = server("auto_approve = [\"read\"]").await;
    let session = server.start_session(&home.workspace()).await;
    mock.take_requests();
    // Warm-up: both paths once.
    gap(&mock, &mut server, &session, usize::MAX, true).await;
    gap(&mock, &mut server, &session, usize::MAX - 1, false).await;
    let (mut with_task, mut with_read) = (Vec::new(), Vec::new());
    for n in 0..TURNS {
        with_task.push(gap(&mock, &mut server, &session, n, true).await);
        with_read.push(gap(&mock, &mut server, &session, n, false).await);
        // A long session would grow every request; clear it each time.
        server
            .send(json!({"type":"session.clear","request_id":"c","session_id": session}))
            .await;
        server.expect("session.cleared").await;
    }
    let (task, read) = (median(with_task), median(with_read));
    println!(
        "starting a subagent: first request to next {:.3} ms with task, {:.3} ms with read_file; {:+.3} ms beyond its first provider request (median over {TURNS} turns each)",
        ms(task),
        ms(read),
        ms(task) - ms(read)
    );
}

async fn hundred_at_once() {
    let (mock, home, mut server) = server("max_subagents = 10\nsubagent_timeout_ms = 600000").await;
    let pid = server.pid();
    let mut sessions = Vec::new();
    for _ in 0..10 {
        sessions.push(server.start_session(&home.workspace()).await);
    }
    let idle = status_field(pid, "VmRSS:");
    for (s, session) in sessions.iter().enumerate() {
        let calls: Vec<(String, String, Value)> = (0..10)
            .map(|k| {
                let prompt = format!("MANY-{s}-{k}-END");
                mock.push_matching(&prompt, Reply::text(["streaming"]).then(2, Ending::Stall));
                (
                    format!("c{k}"),
                    "task".to_string(),
                    json!({"description": "many", "prompt": prompt}),
                )
            })
            .collect();
        let borrowed: Vec<(&str, &str, Value)> = calls
            .iter()
            .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
            .collect();
        mock.push(Reply::tool_calls(&borrowed));
        server
            .send(json!({"type":"turn.start","request_id": format!("t{s}"),
                         "session_id": session, "prompt": "fan out"}))
            .await;
    }
    // Every child has streamed its first delta.
    let (mut deltas, mut turns) = (0, Vec::new());
    while deltas < 100 {
        let event = server.next().await;
        if event["type"] == "assistant.delta" && event.get("parent").is_some() {
            deltas += 1;
        }
        if event["type"] == "turn.started" && event.get("parent").is_none() {
            turns.push((event["session_id"].clone(), event["turn_id"].clone()));
        }
    }
    let busy = status_field(pid, "VmRSS:");
    for (session, turn) in &turns {
        server
            .send(json!({"type":"turn.cancel","request_id":"x","session_id": session,"turn_id": turn}))
            .await;
    }
    let mut ended = 0;
    while ended < 10 {
        let event = server.next().await;
        if event["type"] == "turn.cancelled" && event.get("parent").is_none() {
            ended += 1;
        }
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
    let after = status_field(pid, "VmRSS:");
    println!(
        "100 subagents at once (10 sessions x 10): resident {:.1} MiB idle with 10 sessions, {:.1} MiB while all 100 stream, {:.1} MiB 10 s after they were cancelled",
        idle as f64 / 1024.0,
        busy as f64 / 1024.0,
        after as f64 / 1024.0
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    start_cost().await;
    hundred_at_once().await;
}
