#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
//! Resuming a 16 MiB session, and its first request after, against the
//! same session's live request (`cargo bench -p scv-server --bench resume`).
//!
//! A real turn (a `read_file` call and a ~14 KiB streamed answer) is run
//! through the daemon; its journal records are then repeated under new
//! turn ids until the journal holds `JOURNAL_BYTES` (the shape of the
//! `long_session` bench's thousandth turn, written in a second instead of
//! run for minutes). Then, five times, on a new connection each:
//!
//! - `session.resume` → its `session.transcript` on a daemon started for
//!   the run, and the daemon's peak resident memory over it (`VmHWM`
//!   after `clear_refs`) and while it is open, above what it held before;
//! - the first turn after the resume: `turn.start` → the provider request's
//!   head at the mock ("to request"), and its whole body ("received");
//! - the turn after it, the session live: the same two.
//!
//! `SCV_BENCH_SERVER=PATH` runs another build of the daemon (a before /
//! after pair). Figures go to docs/BENCHMARKS.md; nothing here asserts a
//! time.

use scv_store::{Record, SessionStore};
use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use scv_test_support::mock_provider::{MockProvider, Reply};
use scv_test_support::procfs::{cpu_seconds, status_field};
use scv_test_support::{TestHome, TestServer};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const JOURNAL_BYTES: u64 = 16 * 1024 * 1024;
const RUNS: usize = 5;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn range(samples: &[f64]) -> String {
    let lo = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = samples.iter().copied().fold(0.0, f64::max);
    format!(
        "median {:.2} (range {lo:.2}–{hi:.2})",
        median(samples.to_vec())
    )
}

async fn initialize(client: &mut TestServer) {
    client
        .send(
            json!({"type":"initialize","request_id":"init","protocol_version":2,
            "client":{"name":"bench","version":"0"},"capabilities":{"sessions":true}}),
        )
        .await;
    client.expect("initialized").await;
}

/// One real turn in a new session; the session's id.
async fn template_session(mock: &MockProvider, client: &mut TestServer, cwd: &Path) -> String {
    let file: String = (0..32)
        .map(|i| format!("line {i:02}: {}\n", "x".repeat(54)))
        .collect();
    std::fs::write(cwd.join("notes.txt"), file).unwrap();
    let answer: Vec<String> = (0..40)
        .map(|i| format!("part {i:02} {} ", "y".repeat(350)))
        .collect();
    let session = client.start_session(cwd).await;
    mock.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path": "notes.txt"}),
    )]));
    mock.push(Reply::text(&answer));
    client.start_turn(&session, "t0", "read the notes").await;
    let seen = client.until_terminal().await;
    assert_eq!(seen.last().unwrap()["type"], "turn.completed", "{seen:?}");
    mock.take_requests();
    session
}

/// A session whose journal repeats `source`'s turn until it holds
/// `bytes`: its id and journal size.
fn grown(home: &Path, source: &str, bytes: u64) -> (String, u64) {
    let store = SessionStore::open(home).unwrap();
    let journal = std::fs::read(store.dir().join(format!("{source}.jsonl"))).unwrap();
    let records: Vec<Record> = journal
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let Record::Session(mut header) = records[0].clone() else {
        panic!("a journal opens with its header")
    };
    let started = records
        .iter()
        .find(|r| matches!(r, Record::TurnStarted { .. }))
        .unwrap()
        .clone();
    let ended = records
        .iter()
        .find(|r| matches!(r, Record::TurnEnded { .. }))
        .unwrap()
        .clone();
    let id = "00000000-0000-4000-8000-000000000016".to_string();
    header.session_id = id.clone();
    let mut copy = store.create(&header).unwrap();
    let mut seq = 1;
    for n in 0.. {
        if copy.len() >= bytes {
            break;
        }
        let (mut s, mut e) = (started.clone(), ended.clone());
        if let Record::TurnStarted {
            turn_id, seq: at, ..
        } = &mut s
        {
            *turn_id = format!("g{n}");
            *at = seq;
        }
        if let Record::TurnEnded {
            turn_id, seq: at, ..
        } = &mut e
        {
            *turn_id = format!("g{n}");
            *at = seq + 1;
        }
        seq += 2;
        copy.append(&s).unwrap();
        copy.append(&e).unwrap();
    }
    let len = copy.len();
    drop(copy);
    (id, len)
}

/// A one-line answer's turn: (to request, received, request bytes).
async fn timed_turn(
    mock: &MockProvider,
    client: &mut TestServer,
    session: &str,
    turn: &str,
) -> (f64, f64, usize) {
    mock.push(Reply::text(["fine."]));
    let start = Instant::now();
    client.start_turn(session, turn, "and now?").await;
    let seen = client.until_terminal().await;
    assert_eq!(seen.last().unwrap()["type"], "turn.completed", "{seen:?}");
    let requests = mock.take_requests();
    let first = &requests[0];
    (
        ms(first.arrived.duration_since(start)),
        ms(first.received.duration_since(start)),
        first.body_bytes,
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "context_max_tokens = 100000000\n");
    let socket = home.path().join("server.sock");
    let log = DaemonLog::default();
    // `SCV_BENCH_SERVER`: another build of the daemon (a before/after pair).
    let bin = std::env::var("SCV_BENCH_SERVER").unwrap_or_else(|_| BIN.to_string());
    println!("daemon: {bin}");
    let mut daemon = spawn_daemon(&bin, home.path(), &socket, &log);
    wait_for_socket(&socket).await;
    let mut pid = daemon.id().unwrap();
    let mut client = TestServer::connect(&socket).await;
    initialize(&mut client).await;
    let template = template_session(&mock, &mut client, &home.workspace()).await;
    drop(client);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (big, journal) = grown(home.path(), &template, JOURNAL_BYTES);
    println!(
        "the session: journal {:.1} MiB; daemon resident {:.1} MiB before the first resume",
        journal as f64 / 1048576.0,
        status_field(pid, "VmRSS:") as f64 / 1024.0
    );

    let (mut resume, mut peak, mut open) = (Vec::new(), Vec::new(), Vec::new());
    let mut cpu = Vec::new();
    let (mut first_to, mut first_received) = (Vec::new(), Vec::new());
    let (mut live_to, mut live_received) = (Vec::new(), Vec::new());
    let mut request_bytes = 0;
    for run in 0..RUNS {
        // A fresh daemon each run: memory the last resume freed is not
        // handed back to the system, so only a fresh one's peak says what
        // a resume takes.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        daemon.wait().await.unwrap();
        let _ = std::fs::remove_file(&socket);
        daemon = spawn_daemon(&bin, home.path(), &socket, &log);
        wait_for_socket(&socket).await;
        pid = daemon.id().unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = status_field(pid, "VmRSS:");
        // The peak from here on (clear_refs 5 resets VmHWM to VmRSS).
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
        let mut client = TestServer::connect(&socket).await;
        initialize(&mut client).await;
        let cpu_before = cpu_seconds(pid);
        let start = Instant::now();
        client
            .send(json!({"type":"session.resume","request_id":format!("r{run}"),"session_id":big}))
            .await;
        client.until("session.transcript").await;
        resume.push(ms(start.elapsed()));
        cpu.push((cpu_seconds(pid) - cpu_before) * 1e3);
        peak.push((status_field(pid, "VmHWM:") as f64 - before as f64) / 1024.0);
        open.push((status_field(pid, "VmRSS:") as f64 - before as f64) / 1024.0);
        let (to, received, bytes) = timed_turn(&mock, &mut client, &big, &format!("a{run}")).await;
        first_to.push(to);
        first_received.push(received);
        request_bytes = bytes;
        let (to, received, _) = timed_turn(&mock, &mut client, &big, &format!("b{run}")).await;
        live_to.push(to);
        live_received.push(received);
        drop(client);
    }
    println!(
        "session.resume → session.transcript: {} ms ({RUNS} runs)",
        range(&resume)
    );
    println!(
        "  the daemon's CPU time over it (user + system, 10 ms ticks): {} ms",
        range(&cpu)
    );
    println!(
        "  daemon memory over the resume: peak {} MiB above before, {} MiB while open",
        range(&peak),
        range(&open)
    );
    println!(
        "first request after the resume ({:.1} MiB): to request {} ms, received {} ms",
        request_bytes as f64 / 1048576.0,
        range(&first_to),
        range(&first_received)
    );
    println!(
        "the next request, live: to request {} ms, received {} ms",
        range(&live_to),
        range(&live_received)
    );
    println!(
        "first / live: to request {:.2}×, received {:.2}×",
        median(first_to) / median(live_to),
        median(first_received) / median(live_received)
    );
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    daemon.wait().await.unwrap();
}
