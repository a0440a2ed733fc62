#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
//! Background processes (`cargo bench -p scv-server --bench background`):
//! what starting one costs against a foreground `bash true`, what
//! `bash_kill` of one that ignores SIGTERM and left a `setsid` child
//! costs, both with `sandbox = "off"` and `"workspace-write"`, turns
//! interleaved; then the server's resident memory with eight processes
//! whose rings are full (each wrote 3 MB; the ring keeps 1 MiB).
//!
//! Each call is a turn of its own, timed from `tool.proposed` to
//! `tool.completed` as the client sees them (`tool.started` and
//! `tool.completed` of a fast call reach the client together).

use scv_test_support::client::{TestHome, TestServer};
use scv_test_support::mock_provider::{MockProvider, Reply};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const RUNS: usize = 40;

struct Mode {
    name: &'static str,
    mock: MockProvider,
    home: TestHome,
    server: TestServer,
    session: String,
    next: usize,
}

async fn mode(name: &'static str, config: &str) -> Mode {
    let mock = MockProvider::start().await;
    let home = TestHome::new_in(
        &PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        &mock.base_url(),
        &format!("auto_approve = [\"read\", \"process\"]\n{config}"),
    );
    let mut server = TestServer::spawn_with(BIN, home.path(), &[]);
    server.initialize().await;
    let session = server.start_session(&home.workspace()).await;
    Mode {
        name,
        mock,
        home,
        server,
        session,
        next: 0,
    }
}

/// One turn with one call: the call's time as the client sees it, from
/// `tool.proposed` to `tool.completed` (which holds the checkpoint a
/// `bash` call takes first), and its output.
async fn call(mode: &mut Mode, name: &str, arguments: Value) -> (Duration, String) {
    mode.mock.push(Reply::tool_calls(&[("c", name, arguments)]));
    mode.mock.push(Reply::text(["ok"]));
    let start = Instant::now();
    mode.server.start_turn(&mode.session, "t", "go").await;
    let mut output = String::new();
    let mut marks = Vec::new();
    loop {
        let event = mode.server.next().await;
        let kind = event["type"].as_str().unwrap().to_string();
        marks.push((kind.clone(), start.elapsed()));
        if kind == "tool.completed" {
            assert_eq!(event["success"], true, "{event}");
            output = event["output"].as_str().unwrap().to_string();
        }
        if matches!(
            kind.as_str(),
            "turn.completed" | "turn.failed" | "turn.cancelled"
        ) {
            break;
        }
    }
    if std::env::var_os("SCV_BENCH_MARKS").is_some() {
        eprintln!("{name}: {marks:?}");
    }
    let at = |kind: &str| marks.iter().find(|(k, _)| k == kind).unwrap().1;
    (at("tool.completed") - at("tool.proposed"), output)
}

const STUBBORN: &str =
    "trap '' TERM; (setsid sh -c 'trap \"\" TERM; exec sleep 1000' &); exec sleep 1000";

fn median(mut values: Vec<Duration>) -> f64 {
    values.sort();
    values[values.len() / 2].as_secs_f64() * 1e3
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let sandboxed = matches!(scv_sandbox::probe(), scv_sandbox::Support::Enforced { .. });
    let mut modes = vec![mode("off", "sandbox = \"off\"").await];
    if sandboxed {
        modes.push(mode("workspace-write", "").await);
    }
    let mut times: Vec<[Vec<Duration>; 4]> = modes.iter().map(|_| Default::default()).collect();
    for run in 0..=RUNS {
        for (mode, times) in modes.iter_mut().zip(times.iter_mut()) {
            let (baseline, _) = call(mode, "list_dir", json!({"path": "."})).await;
            let (foreground, _) = call(mode, "bash", json!({"command": "true"})).await;
            let (start, output) = call(
                mode,
                "bash",
                json!({"command": STUBBORN, "background": true}),
            )
            .await;
            mode.next += 1;
            let id = format!("bg{}", mode.next);
            assert!(output.contains(&format!("process_id: {id}")), "{output}");
            let (kill, output) = call(mode, "bash_kill", json!({"process_id": id})).await;
            assert!(output.contains("killed"), "{output}");
            if run > 0 {
                times[0].push(baseline);
                times[1].push(foreground);
                times[2].push(start);
                times[3].push(kill);
            }
        }
    }
    for (mode, times) in modes.iter().zip(times) {
        let [baseline, foreground, start, kill] = times;
        println!(
            "{:>16}: list_dir {:.2} ms, bash `true` {:.2} ms, bash in the background {:.2} ms, bash_kill (SIGTERM ignored, a setsid child) {:.2} ms — medians over {RUNS}",
            mode.name,
            median(baseline),
            median(foreground),
            median(start),
            median(kill)
        );
    }

    // Memory: eight processes, each with its ring full.
    let mode = modes.last_mut().unwrap();
    let pid = mode.server.pid();
    let before = scv_test_support::procfs::resident(pid);
    for n in 0..8 {
        let command =
            format!("head -c 3000000 /dev/zero | tr '\\0' x; touch done{n}; exec sleep 1000");
        call(
            mode,
            "bash",
            json!({"command": command, "background": true}),
        )
        .await;
    }
    let workspace = mode.home.workspace();
    for n in 0..8 {
        while !workspace.join(format!("done{n}")).exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // The pipes drained into the rings.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let full = scv_test_support::procfs::resident(pid);
    println!(
        "{:>16}: server resident {:.1} MiB (anonymous {:.1}) before, {:.1} MiB (anonymous {:.1}) with 8 full rings: +{:.1} MiB anonymous",
        mode.name,
        before.total,
        before.anonymous,
        full.total,
        full.anonymous,
        full.anonymous - before.anonymous
    );
}
