#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The daemon load generator (`cargo bench -p scv-server --bench load`).
//!
//! Starts the release daemon on a temporary socket against the mock
//! provider and measures:
//! - resident memory of the idle daemon;
//! - memory per idle session, on 1,000 connections with a session each and
//!   on one connection holding 1,000 sessions;
//! - CPU time and context switches (wake-ups) of the idle daemon over 10 s,
//!   with and without those sessions;
//! - 1,000 connections each streaming a turn at once: total events, events
//!   per second, and a check that every connection saw contiguous `seq`
//!   numbers, all its deltas, and exactly one terminal event; twice, with
//!   resident memory each second for 10 s after each round (the second
//!   round shows whether a burst leaves anything for good) and after the
//!   connections close.
//!
//! Figures go to docs/BENCHMARKS.md; nothing here asserts a time.

use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use scv_test_support::mock_provider::{MockProvider, Reply};
use scv_test_support::procfs::{context_switches, cpu_seconds, resident, status_field, Switches};
use scv_test_support::TestHome;
use serde::Deserialize;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const CONNECTIONS: usize = 1000;
const DELTAS_PER_TURN: usize = 200;
/// Streaming rounds (`SCV_LOAD_ROUNDS` sets another number).
const ROUNDS: usize = 2;

/// (CPU seconds, context switches) of the process.
fn cpu_and_switches(pid: u32) -> (f64, Switches) {
    (cpu_seconds(pid), context_switches(pid))
}

async fn idle_profile(pid: u32, label: &str) {
    let (cpu0, sw0) = cpu_and_switches(pid);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let (cpu1, sw1) = cpu_and_switches(pid);
    println!(
        "idle {label}: CPU {:.2} s over 10 s ({:.2}%), {:.1} wake-ups/s",
        cpu1 - cpu0,
        (cpu1 - cpu0) * 10.0,
        (&sw1 - &sw0) as f64 / 10.0
    );
}

fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

struct Client {
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    writer: tokio::net::unix::OwnedWriteHalf,
}

impl Client {
    async fn connect(socket: &Path) -> Client {
        let stream = UnixStream::connect(socket).await.expect("connect");
        let (reader, writer) = stream.into_split();
        let mut client = Client {
            lines: BufReader::new(reader).lines(),
            writer,
        };
        client
            .send(json!({"type":"initialize","request_id":"i","protocol_version":2}))
            .await;
        client.line().await;
        client
    }

    async fn send(&mut self, value: serde_json::Value) {
        let mut line = value.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    async fn line(&mut self) -> String {
        self.lines
            .next_line()
            .await
            .unwrap()
            .expect("daemon closed the connection")
    }

    async fn session(&mut self, cwd: &Path) -> String {
        self.send(json!({"type":"session.start","request_id":"s","cwd":cwd}))
            .await;
        let started: serde_json::Value = serde_json::from_str(&self.line().await).unwrap();
        self.line().await; // queue.snapshot
        started["session_id"].as_str().unwrap().to_string()
    }
}

#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    seq: Option<u64>,
}

/// Reads one turn; returns (events, deltas) or panics on a protocol fault.
async fn read_turn(client: &mut Client) -> (usize, usize) {
    let mut last_seq = None;
    let (mut events, mut deltas) = (0, 0);
    loop {
        let line = client.line().await;
        let frame: Frame = serde_json::from_str(&line).unwrap();
        events += 1;
        let seq = frame.seq.expect("turn events carry seq");
        if let Some(last) = last_seq {
            assert_eq!(seq, last + 1, "dropped or reordered frame");
        }
        last_seq = Some(seq);
        match frame.kind {
            "assistant.delta" => deltas += 1,
            "turn.completed" => return (events, deltas),
            "turn.failed" | "turn.cancelled" => panic!("turn ended badly: {line}"),
            _ => {}
        }
    }
}

/// Whether the daemon's binary was laid out (docs/DESIGN.md, "Code
/// layout"): how many of the functions `layout/hot-functions.txt` lists
/// it has (the list holds two builds' names, so each has about half; a
/// list gone stale with the toolchain or the dependencies matches fewer,
/// and `scripts/code-layout.sh` renews it) and how far apart they lie
/// (laid out: ~2.5 MB; not: anywhere in the 13 MB of code). `None` when
/// `nm` cannot read the binary.
fn layout_coverage() -> Option<(usize, usize, f64)> {
    let list = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/layout/hot-functions.txt"
    ))
    .ok()?;
    let listed: std::collections::HashSet<&str> = list
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let symbols = std::process::Command::new("nm").arg(BIN).output().ok()?;
    if !symbols.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&symbols.stdout);
    let mut found = std::collections::HashSet::new();
    let (mut low, mut high) = (u64::MAX, 0);
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(address), Some(_), Some(name)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if let (true, Ok(address)) = (listed.contains(name), u64::from_str_radix(address, 16)) {
            found.insert(name);
            low = low.min(address);
            high = high.max(address);
        }
    }
    let span = high.saturating_sub(low) as f64 / 1e6;
    Some((found.len(), listed.len(), span))
}

/// Resident memory once a second for `seconds` seconds, as "a b c …" MiB.
async fn rss_each_second(pid: u32, seconds: usize) -> String {
    let mut figures = Vec::with_capacity(seconds);
    for _ in 0..seconds {
        tokio::time::sleep(Duration::from_secs(1)).await;
        figures.push(format!(
            "{:.1}",
            status_field(pid, "VmRSS:") as f64 / 1024.0
        ));
    }
    figures.join(" ")
}

/// The resident memory's split: what the daemon allocated, and the
/// pages of its binary and libraries.
fn rss_split(pid: u32) -> String {
    let resident = resident(pid);
    format!(
        "{:.1} MiB anonymous, {:.1} MiB file-backed",
        resident.anonymous, resident.file
    )
}

/// One round: every connection streams a turn at once; prints the events
/// per second and the memory right after.
async fn streaming_round(
    mock: &MockProvider,
    fragments: &[String],
    clients: Vec<(Client, String)>,
    pid: u32,
) -> Vec<(Client, String)> {
    for _ in 0..clients.len() {
        mock.push(Reply::text(fragments).batched(20));
    }
    let (cpu0, _) = cpu_and_switches(pid);
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(clients.len());
    for (mut client, session) in clients {
        tasks.push(tokio::spawn(async move {
            client
                .send(json!({"type":"turn.start","request_id":"t","session_id":session,"prompt":"go"}))
                .await;
            let result = read_turn(&mut client).await;
            (result, client, session)
        }));
    }
    let mut events = 0;
    let mut clients = Vec::with_capacity(tasks.len());
    for task in tasks {
        let ((n, deltas), client, session) = task.await.expect("a connection failed");
        assert_eq!(deltas, DELTAS_PER_TURN, "missing deltas");
        events += n;
        clients.push((client, session));
    }
    let elapsed = start.elapsed();
    let (cpu1, _) = cpu_and_switches(pid);
    println!(
        "1,000 connections streaming at once: {events} events in {:.2} s = {:.0} events/s; \
         daemon CPU {:.2} s; every connection: contiguous seq, {DELTAS_PER_TURN} deltas, one terminal",
        elapsed.as_secs_f64(),
        events as f64 / elapsed.as_secs_f64(),
        cpu1 - cpu0
    );
    println!(
        "daemon RSS after the streaming round: {:.1} MiB (peak {:.1} MiB)",
        status_field(pid, "VmRSS:") as f64 / 1024.0,
        status_field(pid, "VmHWM:") as f64 / 1024.0
    );
    clients
}

#[tokio::main]
async fn main() {
    raise_fd_limit();
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let workspace = home.workspace();
    let socket = home.path().join("server.sock");
    let log = DaemonLog::default();
    let mut daemon = spawn_daemon(BIN, home.path(), &socket, &log);
    let pid = daemon.id().unwrap();
    wait_for_socket(&socket).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss = status_field(pid, "VmRSS:");
    println!(
        "idle daemon RSS: {:.1} MiB ({})",
        idle_rss as f64 / 1024.0,
        rss_split(pid)
    );
    if let Some((found, listed, span)) = layout_coverage() {
        println!(
            "code layout: the binary has {found} of the {listed} functions listed (two \
             builds' names), within {span:.1} MB of each other"
        );
    }
    idle_profile(pid, "daemon, no clients").await;

    // One connection holding 1,000 sessions.
    let mut single = Client::connect(&socket).await;
    let before = status_field(pid, "VmRSS:");
    for _ in 0..CONNECTIONS {
        single.session(&workspace).await;
    }
    let after = status_field(pid, "VmRSS:");
    println!(
        "1,000 idle sessions on one connection: +{:.1} MiB, {:.1} KiB per session",
        (after - before) as f64 / 1024.0,
        (after - before) as f64 / CONNECTIONS as f64
    );
    drop(single);
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 1,000 connections, a session each.
    let before = status_field(pid, "VmRSS:");
    let mut clients = Vec::with_capacity(CONNECTIONS);
    let mut sessions = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let mut client = Client::connect(&socket).await;
        sessions.push(client.session(&workspace).await);
        clients.push(client);
    }
    let after = status_field(pid, "VmRSS:");
    println!(
        "1,000 connections with an idle session each: +{:.1} MiB, {:.1} KiB per connection+session",
        (after - before) as f64 / 1024.0,
        (after - before) as f64 / CONNECTIONS as f64
    );
    idle_profile(pid, "daemon, 1,000 idle connections").await;

    // Every connection streams a turn at once, twice: what the second
    // round adds to the first's memory is what a burst leaves for good.
    let fragments: Vec<String> = (0..DELTAS_PER_TURN).map(|i| format!("d{i} ")).collect();
    let mut clients: Vec<(Client, String)> = clients.into_iter().zip(sessions).collect();
    let rounds = std::env::var("SCV_LOAD_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(ROUNDS);
    for round in 1..=rounds {
        clients = streaming_round(&mock, &fragments, clients, pid).await;
        println!(
            "  round {round}: with the 1,000 connections still open, 1 s … 10 s later: {} MiB \
             (at 10 s: {})",
            rss_each_second(pid, 10).await,
            rss_split(pid)
        );
    }
    drop(clients);
    println!(
        "  after they close, 1 s … 10 s later: {} MiB",
        rss_each_second(pid, 10).await
    );
    // With SCV_LOG=scv_server::memory=debug: live and free heap every 3 s.
    for line in log.lines().iter().filter(|l| l.contains("allocator:")) {
        println!("daemon: {line}");
    }
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = daemon.wait().await.unwrap();
    println!("daemon exit after SIGTERM: {status}");
}
