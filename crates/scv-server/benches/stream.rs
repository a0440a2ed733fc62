#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The streaming-path benchmark (`cargo bench -p scv-server --bench stream`).
//!
//! Drives the release `scv-server --stdio` binary over pipes against the
//! same mock provider the tests use, and prints:
//! - spawn → `initialized` latency (median and p90 of 50 runs);
//! - resident memory after `initialize`;
//! - a turn of 100,000 small deltas end to end (turn.start written →
//!   turn.completed read; median of 5), and resident memory after it.
//!
//! One OpenAI-format response cannot carry 100,000 deltas: each chunk is
//! ~170 bytes and the protocol caps a whole response at 4 MiB. So the turn
//! is five responses of 20,000 deltas; the first four end with a `list_dir`
//! call (risk `read`, auto-approved), which makes the agent loop go on.
//! Figures go to docs/BENCHMARKS.md; nothing here asserts a time.

use scv_test_support::mock_provider::{MockProvider, Reply};
use scv_test_support::procfs::{cpu_seconds, status_field};
use scv_test_support::TestHome;
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const DELTAS: usize = 100_000;
const STEPS: usize = 5;

fn spawn(home: &TestHome) -> Child {
    Command::new(BIN)
        .arg("--stdio")
        .env("SCV_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn scv-server")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let init = format!(
        "{}\n",
        json!({"type":"initialize","request_id":"1","protocol_version":2,"client":{"name":"bench","version":"0"}})
    );

    // Spawn → initialized.
    let mut times = Vec::new();
    let mut rss_after_init = Vec::new();
    for _ in 0..50 {
        let start = Instant::now();
        let mut child = spawn(&home);
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        stdin.write_all(init.as_bytes()).await.unwrap();
        let line = lines.next_line().await.unwrap().unwrap();
        times.push(start.elapsed());
        assert!(line.contains("\"initialized\""), "{line}");
        rss_after_init.push(status_field(child.id().unwrap(), "VmRSS:"));
        drop(stdin);
        child.wait().await.unwrap();
    }
    times.sort();
    rss_after_init.sort();
    println!(
        "spawn -> initialized: median {:.2} ms, p90 {:.2} ms (50 runs)",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.9).as_secs_f64() * 1e3
    );
    println!(
        "RSS after initialize: median {:.1} MiB",
        rss_after_init[rss_after_init.len() / 2] as f64 / 1024.0
    );

    // 100,000-delta turns.
    let fragments: Vec<String> = (0..DELTAS).map(|i| format!("t{} ", i % 10)).collect();
    let mut turn_times = Vec::new();
    let mut rss_end = Vec::new();
    let mut hwm_end = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..5 {
        let list = [("call_list", "list_dir", json!({"path": "."}))];
        for step in 0..STEPS {
            let part = &fragments[step * DELTAS / STEPS..(step + 1) * DELTAS / STEPS];
            let calls: &[(&str, &str, serde_json::Value)] =
                if step + 1 < STEPS { &list } else { &[] };
            mock.push(Reply::response(part, calls, 64).batched(256));
        }
        let mut child = spawn(&home);
        let pid = child.id().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        stdin.write_all(init.as_bytes()).await.unwrap();
        lines.next_line().await.unwrap().unwrap();
        let start_session = json!({"type":"session.start","request_id":"2","cwd":home.workspace()});
        stdin
            .write_all(format!("{start_session}\n").as_bytes())
            .await
            .unwrap();
        let started = lines.next_line().await.unwrap().unwrap();
        let session: serde_json::Value = serde_json::from_str(&started).unwrap();
        lines.next_line().await.unwrap().unwrap(); // queue.snapshot
        let turn = json!({"type":"turn.start","request_id":"3","session_id":session["session_id"],"prompt":"stream"});
        let cpu_before = cpu_seconds(pid);
        let start = Instant::now();
        stdin
            .write_all(format!("{turn}\n").as_bytes())
            .await
            .unwrap();
        // Read raw bytes and look only at line starts: this measures the
        // server, not a client's JSON parser.
        let mut reader = lines.into_inner();
        let mut deltas = 0usize;
        let mut pending: Vec<u8> = Vec::with_capacity(1 << 20);
        'read: loop {
            let buf = reader.fill_buf().await.unwrap();
            assert!(!buf.is_empty(), "server closed early");
            pending.extend_from_slice(buf);
            let used = buf.len();
            reader.consume(used);
            let mut start = 0;
            while let Some(end) = memchr::memchr(b'\n', &pending[start..]) {
                let line = &pending[start..start + end];
                start += end + 1;
                if line.starts_with(b"{\"type\":\"assistant.delta\"") {
                    deltas += 1;
                } else if line.starts_with(b"{\"type\":\"turn.")
                    && !line.starts_with(b"{\"type\":\"turn.started\"")
                {
                    assert!(
                        line.starts_with(b"{\"type\":\"turn.completed\""),
                        "{}",
                        String::from_utf8_lossy(line)
                    );
                    break 'read;
                }
            }
            pending.drain(..start);
        }
        turn_times.push(start.elapsed());
        cpu.push(cpu_seconds(pid) - cpu_before);
        assert_eq!(deltas, DELTAS);
        rss_end.push(status_field(pid, "VmRSS:"));
        hwm_end.push(status_field(pid, "VmHWM:"));
        drop(stdin);
        child.wait().await.unwrap();
    }
    turn_times.sort();
    rss_end.sort();
    hwm_end.sort();
    let median = percentile(&turn_times, 0.5);
    println!(
        "{DELTAS}-delta turn: median {:.3} s ({:.2} us/delta), min {:.3} s, max {:.3} s (5 runs)",
        median.as_secs_f64(),
        median.as_secs_f64() * 1e6 / DELTAS as f64,
        turn_times[0].as_secs_f64(),
        turn_times[turn_times.len() - 1].as_secs_f64()
    );
    cpu.sort_by(f64::total_cmp);
    println!(
        "server CPU for the turn: median {:.3} s ({:.2} us/delta; 10 ms resolution)",
        cpu[cpu.len() / 2],
        cpu[cpu.len() / 2] * 1e6 / DELTAS as f64
    );
    println!(
        "RSS after the turn: median {:.1} MiB (peak {:.1} MiB)",
        rss_end[rss_end.len() / 2] as f64 / 1024.0,
        hwm_end[hwm_end.len() / 2] as f64 / 1024.0
    );
}
