#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
//! `scv exec` against `scv-server --stdio` on the 15,000-delta turn
//! (`cargo build --release -p scv-server && cargo bench -p scv-tui --bench exec`).
//!
//! Both read the same scripted response from the mock provider (one
//! 15,000-delta answer, 256 SSE events a frame), interleaved, `RUNS`
//! each, timed from spawning the process to its exit:
//!
//! - `scv exec "stream"` against a running daemon, its stdout a pipe read
//!   to the end (the answer printed as text);
//! - `scv-server --stdio` driven over its pipes: initialize,
//!   `session.start`, the turn, every event line read to `turn.completed`,
//!   stdin closed.
//!
//! And a cold `scv exec`: no daemon running, so it starts one and waits
//! for it to listen (`COLD_RUNS`, the daemon stopped after each).
//! Figures go to docs/BENCHMARKS.md; nothing here asserts a time.

use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use scv_test_support::mock_provider::{MockProvider, Reply};
use scv_test_support::{TestHome, TestServer};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const SCV: &str = env!("CARGO_BIN_EXE_scv");
const DELTAS: usize = 15_000;
const RUNS: usize = 15;
const COLD_RUNS: usize = 7;

fn server_bin() -> PathBuf {
    let path = Path::new(SCV).with_file_name("scv-server");
    assert!(
        path.is_file(),
        "build it first: cargo build --release -p scv-server"
    );
    path
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn push_answer(mock: &MockProvider) {
    let fragments: Vec<String> = (0..DELTAS).map(|i| format!("t{} ", i % 10)).collect();
    mock.push(Reply::response(&fragments, &[], 64).batched(256));
}

/// One `scv exec` run, spawn to exit (ms), and the bytes it printed.
async fn exec(home: &TestHome) -> (f64, usize) {
    let start = Instant::now();
    let output = tokio::process::Command::new(SCV)
        .args(["exec", "stream"])
        .env("SCV_HOME", home.path())
        .env("SCV_SERVER_BIN", server_bin())
        .env_remove("OPENAI_API_KEY")
        .current_dir(home.workspace())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .await
        .unwrap();
    let took = start.elapsed().as_secs_f64() * 1e3;
    assert!(output.status.success(), "scv exec failed");
    (took, output.stdout.len())
}

/// One `scv-server --stdio` turn, spawn to exit (ms).
async fn stdio(home: &TestHome, bin: &Path) -> f64 {
    let start = Instant::now();
    let mut server = TestServer::spawn(bin.to_str().unwrap(), home.path());
    server.initialize().await;
    let session = server.start_session(&home.workspace()).await;
    server.start_turn(&session, "t", "stream").await;
    let mut line = Vec::new();
    loop {
        line.clear();
        assert!(server.next_raw(&mut line).await > 0, "server closed early");
        if line.starts_with(b"{\"type\":\"turn.completed\"") {
            break;
        }
        assert!(!line.starts_with(b"{\"type\":\"turn.failed\""));
    }
    server.close_stdin().await;
    server.wait().await;
    start.elapsed().as_secs_f64() * 1e3
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let bin = server_bin();
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), "");
    let socket = home.path().join("server.sock");
    let log = DaemonLog::default();
    let mut daemon = spawn_daemon(bin.to_str().unwrap(), home.path(), &socket, &log);
    wait_for_socket(&socket).await;
    // Warm-up, one each.
    push_answer(&mock);
    let (_, printed) = exec(&home).await;
    push_answer(&mock);
    stdio(&home, &bin).await;
    let (mut via_exec, mut via_stdio) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        push_answer(&mock);
        via_exec.push(exec(&home).await.0);
        push_answer(&mock);
        via_stdio.push(stdio(&home, &bin).await);
    }
    let (e, s) = (median(via_exec.clone()), median(via_stdio.clone()));
    println!(
        "15,000-delta turn ({printed} bytes printed): scv exec median {e:.1} ms, scv-server --stdio median {s:.1} ms ({RUNS} interleaved runs each): exec / stdio {:.2}",
        e / s
    );
    let ratios: Vec<f64> = via_exec
        .iter()
        .zip(&via_stdio)
        .map(|(e, s)| e / s)
        .collect();
    println!(
        "  pair by pair: median {:.2}, min {:.2}, max {:.2}",
        median(ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max)
    );
    let pid = daemon.id().unwrap();
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    daemon.wait().await.unwrap();

    // Cold: `scv exec` starts the daemon and waits for it to listen.
    let mut cold = Vec::new();
    for _ in 0..COLD_RUNS {
        let home = TestHome::new(&mock.base_url(), "");
        push_answer(&mock);
        cold.push(exec(&home).await.0);
        stop_daemon(home.path()).await;
    }
    println!(
        "cold scv exec (starts the daemon): median {:.1} ms ({COLD_RUNS} runs)",
        median(cold)
    );
}

/// Stops the daemon `scv exec` started in `home` (its pid, in its lock
/// file).
async fn stop_daemon(home: &Path) {
    let socket = home.join("server.sock");
    let pid = std::fs::read_to_string(home.join("server.sock.lock"))
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok());
    if let Some(pid) = pid {
        unsafe { libc::kill(pid, libc::SIGTERM) };
        for _ in 0..200 {
            if !scv_test_support::procfs::is_running(pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let _ = std::fs::remove_file(socket);
}
