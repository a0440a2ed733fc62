#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
//! A month of turns on one session (`cargo bench -p scv-server --bench soak`).
//!
//! 10,000 turns through `scv-server --stdio`, each a ~1.5 KiB answer in 40
//! deltas, with `max_history_bytes` small enough that trimming runs on
//! every turn after the first few hundred. Resident memory is sampled every
//! 1,000 turns; after the warm-up (the first 1,000) it must stay flat
//! (the bench fails past 5 % growth).

use scv_test_support::client::{TestHome, TestServer};
use scv_test_support::mock_provider::{MockProvider, Reply};
use scv_test_support::procfs::status_field;
use std::time::Instant;

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const TURNS: usize = 10_000;
const SAMPLE_EVERY: usize = 1_000;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mock = MockProvider::start().await;
    // 256 KiB of history: ~170 turns of this size fit, so trimming is
    // active for 98 % of the run.
    let home = TestHome::new(&mock.base_url(), "max_history_bytes = 262144\n");
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    let session = server.start_session(&home.workspace()).await;
    let pid = server.pid();
    let words: Vec<String> = (0..40)
        .map(|i| format!("word{i:02} and some more text "))
        .collect();

    let start = Instant::now();
    let mut samples = Vec::new();
    let mut trimmed = 0usize;
    for n in 1..=TURNS {
        mock.push(Reply::text(&words));
        server
            .start_turn(
                &session,
                &format!("t{n}"),
                &format!("prompt number {n}: go on"),
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
        if n % SAMPLE_EVERY == 0 {
            samples.push(status_field(pid, "VmRSS:"));
        }
    }
    let elapsed = start.elapsed();
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!(
        "{TURNS} turns in {:.1} s ({:.2} ms per turn); session.trimmed on {trimmed} turns",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e3 / TURNS as f64
    );
    let shown: Vec<String> = samples.iter().map(|&k| format!("{:.1}", mib(k))).collect();
    println!(
        "resident memory every {SAMPLE_EVERY} turns (MiB): {}",
        shown.join(" ")
    );
    let warm = samples[0];
    let peak_after = *samples[1..].iter().max().unwrap();
    let growth = (peak_after as f64 - warm as f64) / warm as f64 * 100.0;
    println!(
        "after warm-up: {:.1} MiB → at most {:.1} MiB ({growth:+.1} %)",
        mib(warm),
        mib(peak_after)
    );
    assert!(trimmed > TURNS / 2, "trimming was not active");
    assert!(
        growth <= 5.0,
        "resident memory grew {growth:.1} % after warm-up"
    );
}
