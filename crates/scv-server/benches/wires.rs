#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
//! Per-delta cost of each provider wire (`cargo bench -p scv-server --bench
//! wires`): one response of 15,000 text deltas, streamed by the mock the
//! way each service streams (Chat Completions chunks, Anthropic
//! `content_block_delta` events with their `event:` lines, Responses
//! `response.output_text.delta` events with sequence numbers and
//! obfuscation padding), through the release `scv-server --stdio`. Prints
//! the median turn time and server CPU per delta for each wire and each
//! new wire's ratio to the chat wire, all measured in the same run.

use scv_test_support::mock_provider::{MockProvider, Reply};
use scv_test_support::procfs::cpu_seconds;
use scv_test_support::TestHome;
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const DELTAS: usize = 15_000;
const RUNS: usize = 7;

/// One turn on `provider` whose reply is `reply`: wall time and server CPU.
async fn turn(
    home: &TestHome,
    provider: &str,
    reply: Reply,
    mock: &MockProvider,
) -> (Duration, f64) {
    mock.push(reply.batched(256));
    let mut child = Command::new(BIN)
        .arg("--stdio")
        .env("SCV_HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let send = |v: Value| format!("{v}\n");
    stdin
        .write_all(
            send(json!({"type":"initialize","request_id":"1","protocol_version":2})).as_bytes(),
        )
        .await
        .unwrap();
    lines.next_line().await.unwrap().unwrap();
    stdin
        .write_all(
            send(json!({"type":"session.start","request_id":"2","cwd":home.workspace(),"provider":provider}))
                .as_bytes(),
        )
        .await
        .unwrap();
    let started: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    lines.next_line().await.unwrap().unwrap();
    let cpu_before = cpu_seconds(pid);
    let start = Instant::now();
    stdin
        .write_all(
            send(json!({"type":"turn.start","request_id":"3","session_id":started["session_id"],"prompt":"go"}))
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut deltas = 0;
    let mut reader = lines.into_inner();
    let mut pending = Vec::with_capacity(1 << 20);
    'read: loop {
        let buf = reader.fill_buf().await.unwrap();
        assert!(!buf.is_empty(), "server closed early");
        pending.extend_from_slice(buf);
        let used = buf.len();
        reader.consume(used);
        let mut at = 0;
        while let Some(end) = memchr::memchr(b'\n', &pending[at..]) {
            let line = &pending[at..at + end];
            at += end + 1;
            if line.starts_with(b"{\"type\":\"assistant.delta\"") {
                deltas += 1;
            } else if line.starts_with(b"{\"type\":\"turn.completed\"") {
                break 'read;
            } else if line.starts_with(b"{\"type\":\"turn.failed\"") {
                panic!("{}", String::from_utf8_lossy(line));
            }
        }
        pending.drain(..at);
    }
    let elapsed = start.elapsed();
    let cpu = cpu_seconds(pid) - cpu_before;
    assert_eq!(deltas, DELTAS);
    drop(stdin);
    child.wait().await.unwrap();
    (elapsed, cpu)
}

fn median<T: Copy + PartialOrd>(mut values: Vec<T>) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mock = MockProvider::start().await;
    let base = mock.base_url();
    let home = TestHome::new(
        &base,
        &format!(
            "[providers.anthropic]\nbase_url = \"{base}\"\n[providers.openai-responses]\nbase_url = \"{base}\"\n"
        ),
    );
    // Realistic fragments: a few characters of prose each.
    let fragments: Vec<String> = (0..DELTAS).map(|i| format!(" word{}", i % 100)).collect();
    type Build = fn(&[String]) -> Reply;
    let wires: [(&str, Build); 3] = [
        ("openai", |f| Reply::text(f)),
        ("anthropic", |f| Reply::anthropic_text(f)),
        ("openai-responses", |f| Reply::responses_text(f)),
    ];
    let mut results = Vec::new();
    for (provider, build) in wires {
        let mut times = Vec::new();
        let mut cpus = Vec::new();
        // Interleaved would be fairer still; one warm-up turn first.
        turn(&home, provider, build(&fragments), &mock).await;
        for _ in 0..RUNS {
            let (time, cpu) = turn(&home, provider, build(&fragments), &mock).await;
            times.push(time);
            cpus.push(cpu);
        }
        let (time, cpu) = (median(times), median(cpus));
        println!(
            "{provider:>17}: {DELTAS} deltas in {:.1} ms median ({:.2} us/delta), server CPU {:.1} ms ({:.2} us/delta)",
            time.as_secs_f64() * 1e3,
            time.as_secs_f64() * 1e6 / DELTAS as f64,
            cpu * 1e3,
            cpu * 1e6 / DELTAS as f64
        );
        results.push((provider, time, cpu));
    }
    let (_, chat_time, chat_cpu) = results[0];
    for (provider, time, cpu) in &results[1..] {
        println!(
            "{provider:>17}: {:.2}x the chat wire's time, {:.2}x its CPU",
            time.as_secs_f64() / chat_time.as_secs_f64(),
            cpu / chat_cpu
        );
    }
}
