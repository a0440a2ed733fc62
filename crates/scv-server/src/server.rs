//! What every connection of one server process shares: configuration, the
//! API key, and the HTTP client (built on first use, so start-up stays fast).

use crate::config::Config;
use crate::daemon::supervisor::Supervisor;
use std::sync::{Arc, OnceLock};

/// How this process serves clients.
pub enum Mode {
    /// `--stdio`: one client, no daemon management.
    Stdio,
    /// The socket daemon, with its component supervisor.
    Daemon(Arc<Supervisor>),
}

pub struct ServerContext {
    pub config: Config,
    pub api_key: Option<String>,
    pub mode: Mode,
    http: OnceLock<reqwest::Client>,
}

impl ServerContext {
    pub fn new(config: Config, mode: Mode) -> Self {
        let api_key = config.api_key();
        ServerContext {
            config,
            api_key,
            mode,
            http: OnceLock::new(),
        }
    }

    /// The supervisor, when this is the daemon.
    pub fn supervisor(&self) -> Option<Arc<Supervisor>> {
        match &self.mode {
            Mode::Stdio => None,
            Mode::Daemon(supervisor) => Some(supervisor.clone()),
        }
    }

    /// The shared HTTP client (connection pool) for provider requests.
    pub fn http(&self) -> reqwest::Client {
        self.http
            .get_or_init(|| {
                reqwest::Client::builder()
                    .connect_timeout(std::time::Duration::from_secs(15))
                    // Keep a few warm connections, not one per past turn.
                    .pool_max_idle_per_host(16)
                    .build()
                    .expect("the TLS backend initializes")
            })
            .clone()
    }
}

/// The server's name and version as `initialized` reports them.
pub const SERVER_NAME: &str = "scv-server";
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");
