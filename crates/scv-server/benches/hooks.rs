#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
//! What hooks cost per tool call (`cargo bench -p scv-server --bench
//! hooks`): the same `read_file` call through the release `scv-server
//! --stdio` with no hooks, with 40 `PreToolUse` / `PostToolUse` hooks that
//! match nothing (the budget: ≤ 1 ms per call), and with one `true` hook
//! that matches (what spawning a hook below the reaper and the sandbox
//! costs). Turns interleave across the servers so drift hits all alike; a
//! turn of one call is timed from `turn.start` to `turn.completed` as the
//! client sees them, and the figure is the median's difference to "no
//! hooks".
//! Also the lookup alone (`Hooks::matching`) for the 40 hooks.

use scv_test_support::client::{TestHome, TestServer};
use scv_test_support::mock_provider::{MockProvider, Reply};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const CALLS: usize = 200;

struct Mode {
    name: &'static str,
    mock: MockProvider,
    _home: TestHome,
    server: TestServer,
    session: String,
    times: Vec<Duration>,
}

/// 40 hooks over both tool events, none of which matches `read_file`.
fn unmatched() -> Value {
    let groups: Vec<Value> = (0..20)
        .map(|i| {
            json!({"matcher": format!("Write|Edit|mcp__server{i}__.*"),
                   "hooks": [{"type": "command", "command": "exit 2"}]})
        })
        .collect();
    json!({"hooks": {"PreToolUse": groups.clone(), "PostToolUse": groups}})
}

async fn mode(name: &'static str, hooks: Option<Value>) -> Mode {
    let mock = MockProvider::start().await;
    let home = TestHome::new_in(
        &PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
        &mock.base_url(),
        "auto_approve = [\"read\"]",
    );
    std::fs::write(home.workspace().join("small.txt"), "hello\n").unwrap();
    if let Some(hooks) = hooks {
        std::fs::create_dir_all(home.workspace().join(".scv")).unwrap();
        std::fs::write(home.workspace().join(".scv/hooks.json"), hooks.to_string()).unwrap();
        // The repository's hooks run in a workspace the user trusts.
        home.trust_workspace();
    }
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    let session = server.start_session(&home.workspace()).await;
    Mode {
        name,
        mock,
        _home: home,
        server,
        session,
        times: Vec::new(),
    }
}

/// One turn with one `read_file`, from `turn.start` to its terminal
/// event: the whole of what the call's hooks add (the two provider
/// requests around it are the same in every mode).
async fn call(mode: &mut Mode) -> Duration {
    mode.mock.push(Reply::tool_calls(&[(
        "r",
        "read_file",
        json!({"path": "small.txt"}),
    )]));
    mode.mock.push(Reply::text(["ok"]));
    let start = Instant::now();
    mode.server.start_turn(&mode.session, "t", "go").await;
    let events = mode.server.until_terminal().await;
    let elapsed = start.elapsed();
    let done = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    assert_eq!(done["success"], true, "{done}");
    elapsed
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let matching = json!({"hooks": {"PreToolUse": [{"matcher": "Read",
        "hooks": [{"type": "command", "command": "true"}]}]}});
    let mut modes = vec![
        mode("no hooks", None).await,
        mode("40 unmatched", Some(unmatched())).await,
        mode("1 matching", Some(matching)).await,
    ];
    for mode in &mut modes {
        call(mode).await; // warm-up (and the session's start hooks)
    }
    for _ in 0..CALLS {
        for mode in &mut modes {
            let time = call(mode).await;
            mode.times.push(time);
        }
    }
    let base = median(modes[0].times.clone());
    for mode in &modes {
        let time = median(mode.times.clone());
        println!(
            "{:>14}: a turn with one read_file call {:.3} ms median over {CALLS} turns ({:+.3} ms vs no hooks)",
            mode.name,
            time.as_secs_f64() * 1e3,
            (time.as_secs_f64() - base.as_secs_f64()) * 1e3
        );
    }

    let hooks = scv_hooks::Hooks::parse(
        std::path::Path::new("/bench/hooks.json"),
        &unmatched().to_string(),
    )
    .unwrap();
    let rounds = 100_000;
    let start = Instant::now();
    let mut found = 0;
    for _ in 0..rounds {
        found += hooks
            .matching(
                scv_hooks::Event::PreToolUse,
                Some(std::hint::black_box("read_file")),
            )
            .len();
    }
    assert_eq!(found, 0);
    println!(
        "  lookup alone: {:.3} µs per call (40 hooks, none matching)",
        start.elapsed().as_secs_f64() * 1e6 / rounds as f64
    );
}
