#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
//! A session's thousandth turn against its first
//! (`cargo bench -p scv-server --bench long_session`).
//!
//! One session through `scv-server --stdio`, 1,000 turns, each a
//! `read_file` of a 2 KiB file (auto-approved) and a ~14 KiB answer, so
//! the history reaches the default 16 MiB bound near the end and trimming
//! runs from there (the context window is set large enough that
//! compaction does not). Every 100th turn: the time from `turn.start`
//! written to the turn's first provider request arriving at the mock
//! (its head: the server's work before the request — the turn's start,
//! trimming, the body's parts), and to its whole body received (encoding
//! what is new, and sending all of it), the size of that request, the
//! whole turn, and the server's resident memory (anonymous and file-backed:
//! the binary's code pages are the second). Figures go to docs/BENCHMARKS.md; nothing here asserts a time.

use scv_test_support::client::{TestHome, TestServer};
use scv_test_support::mock_provider::{MockProvider, Reply};
use scv_test_support::procfs::resident;
use serde_json::json;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const TURNS: usize = 1_000;
const SAMPLE_EVERY: usize = 100;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "context_max_tokens = 100000000\n");
    let file: String = (0..32)
        .map(|i| format!("line {i:02}: {}\n", "x".repeat(54)))
        .collect();
    std::fs::write(home.workspace().join("notes.txt"), &file).unwrap();
    let answer: Vec<String> = (0..40)
        .map(|i| format!("part {i:02} {} ", "y".repeat(350)))
        .collect();
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    let session = server.start_session(&home.workspace()).await;
    let pid = server.pid();
    let mut trimmed = 0usize;
    println!(
        "turn  to-request  request-received  request-bytes  whole-turn  server-RSS  (anonymous, file)"
    );
    for n in 1..=TURNS {
        mock.push(Reply::tool_calls(&[(
            &format!("c{n}"),
            "read_file",
            json!({"path": "notes.txt"}),
        )]));
        mock.push(Reply::text(&answer));
        let start = Instant::now();
        server
            .start_turn(
                &session,
                &format!("t{n}"),
                &format!("turn {n}: read the notes"),
            )
            .await;
        for event in server.until_terminal().await {
            match event["type"].as_str().unwrap() {
                "session.trimmed" => trimmed += 1,
                "turn.completed" => {}
                "turn.failed" | "turn.cancelled" => panic!("turn {n}: {event}"),
                _ => {}
            }
        }
        let whole = start.elapsed();
        let requests = mock.take_requests();
        if n == 1 || n % SAMPLE_EVERY == 0 {
            let first = &requests[0];
            let to_request = first.arrived.duration_since(start);
            let resident = resident(pid);
            let received = first.received.duration_since(start);
            println!(
                "{n:>4}  {:>8.2} ms  {:>12.2} ms  {:>10.1} KiB  {:>7.1} ms  {:>7.1} MiB  ({:.1}, {:.1})",
                to_request.as_secs_f64() * 1e3,
                received.as_secs_f64() * 1e3,
                first.body_bytes as f64 / 1024.0,
                whole.as_secs_f64() * 1e3,
                resident.total,
                resident.anonymous,
                resident.file
            );
        }
    }
    println!("session.trimmed on {trimmed} of {TURNS} turns");
    server.close_stdin().await;
    server.wait().await;
}
