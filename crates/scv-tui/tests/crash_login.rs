#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Crash safety of the credentials (issue 16): `scv clawbot login` writes
//! `credentials.json` and `settings.json`, replaces the account that held
//! the same bot (a logout through the daemon, then a removal), and asks the
//! daemon to reload; the daemon meanwhile polls the account and saves its
//! delivery cursor. Here the login and the daemon are each killed with
//! SIGKILL at random moments, round after round. After every round each
//! file of every account parses, no two accounts hold the bot, and the
//! next start is clean; a last login that is left alone ends with exactly
//! its account holding the bot and the daemon serving it.

mod common;
use common::*;
use rand::Rng;
use scv_test_support::account_files::accounts_parse;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 30;
const BOT: &str = "bot@im.bot";

fn start_login(home: &Home, ilink: &FakeIlink, account: &str) -> Child {
    home.clawbot_login(ilink, account)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn kill(pid: i32) {
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// Waits (bounded) until `pid` no longer exists.
fn gone(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while unsafe { libc::kill(pid, 0) } == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits for `child` to end (a login waiting on a killed daemon gives up
/// by itself); kills it past the deadline.
fn reap(child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            kill(child.id() as i32);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The accounts holding the bot, after checking that every file parses.
fn holders(home: &Home) -> Vec<String> {
    accounts_parse(home.path())
        .into_iter()
        .filter(|(_, credentials)| credentials.as_ref().is_some_and(|c| c.bot_id == BOT))
        .map(|(account, _)| account)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_of_login_and_daemon_at_random_moments_tears_no_credentials() {
    let mock = MockProvider::start().await;
    let ilink = FakeIlink::start().await;
    ilink.allow_token("tok-1");
    let home = Home::new(&mock, "");
    let mut rng = rand::rng();
    let mut outcomes = [0usize; 2]; // [killed or failed, completed]
    let mut typical = Duration::from_millis(300);
    let mut holding = 0;

    for round in 0..ROUNDS {
        // The same bot each round, alternating accounts: every login after
        // the first replaces the other account.
        let account = if round % 2 == 0 { "a" } else { "b" };
        for _ in 0..rng.random_range(0..4) {
            ilink.qr_status(json!({"status":"wait"}));
        }
        ilink.qr_status(qr_confirmed(&ilink, BOT));
        let mut login = start_login(&home, &ilink, account);
        // Kills land within the time a whole login took last, so most cut
        // it somewhere: before, between or after its writes.
        let window = typical.as_millis() as u64 + 1;
        let kill_login = Duration::from_millis(rng.random_range(0..window));
        let kill_daemon = Duration::from_millis(rng.random_range(0..window));
        let started = Instant::now();
        let (mut login_done, mut daemon_done) = (false, false);
        let mut killed_daemon = None;
        while !(login_done && daemon_done) {
            let now = started.elapsed();
            if !login_done {
                if let Some(status) = login.try_wait().unwrap() {
                    if status.success() {
                        typical = now;
                    }
                    login_done = true;
                }
            }
            if !login_done && now >= kill_login {
                kill(login.id() as i32);
                login_done = true;
            }
            if !daemon_done && now >= kill_daemon {
                // No daemon yet (the login has not asked for one): none to kill.
                if let Some(pid) = home.daemon_pid() {
                    kill(pid);
                    killed_daemon = Some(pid);
                }
                daemon_done = true;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        reap(&mut login);
        if let Some(pid) = killed_daemon {
            // A dying daemon still accepts for a moment; what comes next
            // must meet what the kill left, not the daemon's last breath.
            gone(pid);
        }
        if login.wait().unwrap().success() {
            outcomes[1] += 1;
        } else {
            outcomes[0] += 1;
        }
        let held = holders(&home);
        holding += usize::from(!held.is_empty());
        assert!(
            held.len() <= 1,
            "round {round}: two accounts hold one bot: {held:?}"
        );
    }

    // The next start is clean whatever the last kill left, and a login left
    // alone completes: exactly its account holds the bot, and the daemon
    // serves it.
    let output = home
        .scv()
        .args(["clawbot", "status", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    ilink.qr_status(qr_confirmed(&ilink, BOT));
    let mut login = start_login(&home, &ilink, "final");
    reap(&mut login);
    assert!(login.wait().unwrap().success());
    assert_eq!(holders(&home), ["final"]);
    let output = home
        .scv()
        .args(["clawbot", "status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&output.stdout).unwrap();
    let components = status["status"]["components"].as_array().unwrap();
    assert!(
        components
            .iter()
            .any(|c| c["account"] == "final" && c["enabled"] == true),
        "the daemon serves the last login: {status}"
    );
    println!(
        "{} of {ROUNDS} logins were cut short by a kill, {} completed; an account held the bot \
         after {holding} rounds; no torn file, never two holders",
        outcomes[0], outcomes[1]
    );
}
