#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Shared set-up for the `scv` command tests: the binaries, a home with a
//! mock provider, and a guard that stops any daemon a test started.
#![allow(dead_code, unused_imports)]

pub(crate) use scv_test_support::tmpfs;

pub(crate) use scv_test_support::fake_ilink::FakeIlink;
pub(crate) use scv_test_support::mock_provider::{Ending, MockProvider, Reply};
pub(crate) use scv_test_support::TestHome;
pub(crate) use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) const SCV: &str = env!("CARGO_BIN_EXE_scv");

/// `scv-server` beside `scv`, built first if this test run did not build it.
pub(crate) fn server_bin() -> PathBuf {
    let path = Path::new(SCV).with_file_name("scv-server");
    if !path.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "-p", "scv-server", "--bin", "scv-server"])
            .status()
            .expect("cargo build scv-server");
        assert!(status.success());
    }
    path
}

/// What a finished command wrote on stdout.
pub(crate) fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What a finished command wrote on stderr.
pub(crate) fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A home with config pointing at `mock`; stops its daemon when dropped.
pub(crate) struct Home {
    pub home: TestHome,
}

impl Home {
    pub(crate) fn new(mock: &MockProvider, extra: &str) -> Home {
        Home {
            home: TestHome::new(&mock.base_url(), extra),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.home.path()
    }

    pub(crate) fn socket(&self) -> PathBuf {
        self.home.path().join("server.sock")
    }

    pub(crate) fn workspace(&self) -> PathBuf {
        self.home.workspace()
    }

    /// `scv` with this home, run in the workspace.
    pub(crate) fn scv(&self) -> std::process::Command {
        let mut command = std::process::Command::new(SCV);
        command
            .env("SCV_HOME", self.path())
            .env(
                "CLAUDE_CONFIG_DIR",
                scv_test_support::client::claude_dir(self.path()),
            )
            .env("SCV_SERVER_BIN", server_bin())
            .env_remove("OPENAI_API_KEY")
            .current_dir(self.workspace());
        command
    }

    /// `scv clawbot login --account ACCOUNT` against `ilink`, polling its
    /// QR status every 10 ms.
    pub(crate) fn clawbot_login(&self, ilink: &FakeIlink, account: &str) -> std::process::Command {
        let mut command = self.scv();
        command
            .args(["clawbot", "login", "--account", account])
            .args(["--base-url", &ilink.base_url()])
            .env("SCV_CLAWBOT_POLL_MS", "10");
        command
    }

    /// The running daemon's pid, from its lock file.
    pub(crate) fn daemon_pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.path().join("server.sock.lock"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        if let Some(pid) = self.daemon_pid() {
            unsafe { libc::kill(pid, libc::SIGTERM) };
            for _ in 0..200 {
                if !self.socket().exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
        }
    }
}

/// The `get_qrcode_status` answer that confirms a login of `bot_id` with
/// token `tok-1`.
pub(crate) fn qr_confirmed(ilink: &FakeIlink, bot_id: &str) -> Value {
    json!({"status":"confirmed","bot_token":"tok-1","ilink_bot_id":bot_id,
           "ilink_user_id":"owner@im.wechat","baseurl":ilink.base_url()})
}
