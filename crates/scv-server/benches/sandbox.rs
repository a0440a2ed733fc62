#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
//! The sandbox's cost per `bash` call (`cargo bench -p scv-server --bench
//! sandbox`): the same trivial command (`true`) through the release
//! `scv-server --stdio` with `sandbox = "off"`, `"workspace-write"` and
//! `"workspace-write"` with the network off and with the allowlist (a
//! network namespace of the session's own, joined per call), `"read-only"`, and
//! `"workspace-write"` with `$SCV_HOME` inside /tmp, turns interleaved
//! across the servers so drift hits all alike. A call is timed from
//! `tool.started` to `tool.completed` as the client sees them; the added
//! cost is the median's difference to `off` in the same run. Also prints
//! what building the ruleset and filters alone costs (done in the tool
//! process before `fork`).
//!
//! `SCV_BENCH_BEFORE_BIN=PATH` adds a server built from another commit
//! (say, before the second wall) to the same interleaved run; the mode
//! "no second wall" is this build with user namespaces refused, so the
//! namespace's own share shows. Two floors run in the same loop: a bare
//! `fork`/`exec` of `bash -c true` from this process, and Codex's
//! sandbox, `bwrap --unshare-all` (Debian's `bubblewrap`, when
//! installed) doing the same, both timed around the whole process.

use scv_test_support::client::{TestHome, TestServer};
use scv_test_support::mock_provider::{MockProvider, Reply};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const CALLS: usize = 60;

struct Mode {
    name: &'static str,
    mock: MockProvider,
    _home: TestHome,
    server: TestServer,
    session: String,
    times: Vec<Duration>,
}

/// A server with `config`; its `$SCV_HOME` beside the build (as `~/.scv`
/// is: not in a temp directory) unless `home_in_tmp`.
async fn mode(name: &'static str, config: &str, home_in_tmp: bool) -> Mode {
    mode_of(name, BIN, config, home_in_tmp, &[]).await
}

async fn mode_of(
    name: &'static str,
    bin: &str,
    config: &str,
    home_in_tmp: bool,
    env: &[(&str, &str)],
) -> Mode {
    let mock = MockProvider::start().await;
    let parent = if home_in_tmp {
        std::env::temp_dir()
    } else {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
    };
    let home = TestHome::new_in(
        &parent,
        &mock.base_url(),
        &format!("auto_approve = [\"read\", \"process\"]\n{config}"),
    );
    let mut server = TestServer::spawn_with(bin, home.path(), env);
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

/// One turn with one `bash true`: the call's time as the client sees it.
async fn call(mode: &mut Mode) -> Duration {
    mode.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": "true"}),
    )]));
    mode.mock.push(Reply::text(["ok"]));
    mode.server.start_turn(&mode.session, "t", "go").await;
    let mut started = None;
    loop {
        let event = mode.server.next().await;
        match event["type"].as_str().unwrap() {
            "tool.started" => started = Some(Instant::now()),
            "tool.completed" => {
                assert_eq!(event["success"], true, "{event}");
                let elapsed = started.unwrap().elapsed();
                mode.server.until_terminal().await;
                return elapsed;
            }
            _ => {}
        }
    }
}

/// The whole run of `command`, spawn to exit.
fn timed(command: &mut std::process::Command) -> Duration {
    let start = Instant::now();
    let status = command
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{command:?}");
    start.elapsed()
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if !matches!(scv_sandbox::probe(), scv_sandbox::Support::Enforced { .. }) {
        println!("the sandbox is unavailable here; nothing to measure");
        return;
    }
    let mut modes = vec![
        mode("off", "sandbox = \"off\"", false).await,
        mode("workspace-write", "", false).await,
        mode("no network", "sandbox_network = false", false).await,
        mode("allowlist", "sandbox_network = \"allowlist\"", false).await,
        mode("read-only", "sandbox = \"read-only\"", false).await,
        // A temp directory holding $SCV_HOME is cut entry by entry, and the
        // command gets its own TMPDIR.
        mode("home in /tmp", "", true).await,
        mode_of(
            "no second wall",
            BIN,
            "",
            false,
            &[("SCV_SANDBOX_TEST_NO_USERNS", "1")],
        )
        .await,
    ];
    if let Ok(before) = std::env::var("SCV_BENCH_BEFORE_BIN") {
        let before: &'static str = Box::leak(before.into_boxed_str());
        modes.push(mode_of("before (ws-write)", before, "", false, &[]).await);
    }
    for mode in &mut modes {
        call(mode).await; // warm-up
    }
    let bwrap = which("bwrap");
    let (mut bare, mut bwrapped) = (Vec::new(), Vec::new());
    for _ in 0..CALLS {
        for mode in &mut modes {
            let time = call(mode).await;
            mode.times.push(time);
        }
        bare.push(timed(
            std::process::Command::new("bash").args(["-c", "true"]),
        ));
        if let Some(bwrap) = &bwrap {
            bwrapped.push(timed(std::process::Command::new(bwrap).args([
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--unshare-all",
                "--die-with-parent",
                "--new-session",
                "--",
                "/bin/bash",
                "-c",
                "true",
            ])));
        }
    }
    let show = |name: &str, times: Vec<Duration>| {
        println!(
            "{name:>16}: {:.2} ms median over {CALLS} runs",
            median(times).as_secs_f64() * 1e3
        );
    };
    show("floor: bare", bare);
    if bwrap.is_some() {
        show("floor: bwrap", bwrapped);
    }
    let base = median(modes[0].times.clone());
    for mode in &modes {
        let time = median(mode.times.clone());
        println!(
            "{:>16}: bash `true` {:.2} ms median over {CALLS} calls ({:+.2} ms vs off)",
            mode.name,
            time.as_secs_f64() * 1e3,
            (time.as_secs_f64() - base.as_secs_f64()) * 1e3
        );
    }

    // The build alone, as the tool process does it.
    let home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let workspace = tempfile::tempdir().unwrap();
    for network in [scv_sandbox::Network::On, scv_sandbox::Network::Off] {
        let settings = scv_sandbox::Settings {
            mode: scv_sandbox::Mode::WorkspaceWrite,
            network,
            protect_git: true,
            max_processes: 1024,
            mount_namespace: true,
            scv_home: home.join(".scv"),
            user_home: Some(home.clone()),
            ..Default::default()
        };
        let policy = scv_sandbox::Policy::new(&settings, workspace.path());
        let mut builds = Vec::new();
        for _ in 0..200 {
            let start = Instant::now();
            let prepared = scv_sandbox::Prepared::new(&policy).unwrap();
            builds.push(start.elapsed());
            drop(prepared);
        }
        println!(
            "  ruleset{} build: {:.3} ms median",
            if network.sockets() {
                ""
            } else {
                " + seccomp filters"
            },
            median(builds).as_secs_f64() * 1e3
        );
    }
}
