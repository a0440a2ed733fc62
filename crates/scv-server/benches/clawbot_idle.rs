#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Idle cost of a connected ClawBot account
//! (`cargo bench -p scv-server --bench clawbot_idle`).
//!
//! The release daemon runs one enabled account against the fake iLink
//! server, which parks each `getupdates` for 35 s like the real one. Over
//! 10 s of silence the daemon's CPU time and context switches (wake-ups)
//! are read from /proc, with no account and with the account connected.

use scv_ilink::{AccountStore, Credentials, Settings};
use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use scv_test_support::fake_ilink::FakeIlink;
use scv_test_support::procfs::{context_switches, cpu_seconds};
use scv_test_support::TestHome;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");

async fn measure(pid: u32, label: &str) {
    let (cpu0, sw0) = (cpu_seconds(pid), context_switches(pid));
    tokio::time::sleep(Duration::from_secs(10)).await;
    let (cpu1, sw1) = (cpu_seconds(pid), context_switches(pid));
    println!(
        "{label}: CPU {:.2} s over 10 s ({:.2}%), {:.1} wake-ups/s",
        cpu1 - cpu0,
        (cpu1 - cpu0) * 10.0,
        (&sw1 - &sw0) as f64 / 10.0
    );
}

#[tokio::main]
async fn main() {
    let ilink = FakeIlink::start().await;
    ilink.set_hold(Duration::from_secs(35));
    ilink.allow_token("bench-token");
    let home = TestHome::new("http://127.0.0.1:9/v1", "");
    let store = AccountStore::new(home.path());
    let socket = home.path().join("server.sock");
    let mut daemon = spawn_daemon(BIN, home.path(), &socket, &DaemonLog::default());
    let pid = daemon.id().unwrap();
    wait_for_socket(&socket).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    measure(pid, "idle daemon, no account").await;

    let credentials = Credentials {
        bot_token: "bench-token".into(),
        bot_id: "bot@im.bot".into(),
        user_id: Some("owner@im.wechat".into()),
        base_url: ilink.base_url(),
        saved_at: 1,
    };
    store.save_credentials("default", &credentials).unwrap();
    store
        .save_settings(
            "default",
            &Settings {
                enabled: true,
                workspace: None,
                remote_tools: "none".into(),
            },
        )
        .unwrap();
    // The 2-second reconcile starts the account; wait for the first poll.
    assert!(
        ilink
            .wait_until(|f| !f.calls("ilink/bot/getupdates").is_empty())
            .await
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    measure(pid, "idle daemon, one account connected (35 s long polls)").await;
    println!(
        "getupdates calls so far: {}",
        ilink.calls("ilink/bot/getupdates").len()
    );
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    daemon.wait().await.unwrap();
}
