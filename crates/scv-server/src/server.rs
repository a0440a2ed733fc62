//! What every connection of one server process shares: configuration, the
//! API key, and the HTTP client (built on first use, so start-up stays fast).

use crate::config::Config;
use std::sync::OnceLock;

pub struct ServerContext {
    pub config: Config,
    pub api_key: Option<String>,
    /// True for `--stdio` (one client; no daemon management).
    pub stdio: bool,
    http: OnceLock<reqwest::Client>,
}

impl ServerContext {
    pub fn new(config: Config, stdio: bool) -> Self {
        let api_key = config.api_key();
        ServerContext {
            config,
            api_key,
            stdio,
            http: OnceLock::new(),
        }
    }

    /// The shared HTTP client (connection pool) for provider requests.
    pub fn http(&self) -> reqwest::Client {
        self.http
            .get_or_init(|| {
                reqwest::Client::builder()
                    .connect_timeout(std::time::Duration::from_secs(15))
                    .build()
                    .expect("the TLS backend initializes")
            })
            .clone()
    }
}

/// The server's name and version as `initialized` reports them.
pub const SERVER_NAME: &str = "scv-server";
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");
