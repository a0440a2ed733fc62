//! What every connection of one server process shares: the live
//! configuration (with the turn limits, API keys and sandbox made from
//! it), the MCP servers, the session and checkpoint stores, the exporter,
//! and the HTTP client (built on first use, so start-up stays fast).

use crate::config::Config;
use crate::live::{Current, LiveConfig};
use crate::sandbox::Sandbox;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

pub struct Shared {
    /// `config.toml` as it is now, and what is made from it (limits, keys,
    /// sandbox): sessions take the current one when they start.
    pub(crate) live: Arc<LiveConfig>,
    /// The MCP servers: started by the daemon at start-up, by `--stdio`
    /// at the first `session.start`; shared by every session.
    pub(crate) mcp: Arc<scv_mcp::Hub>,
    /// The launch environment's values by name, where MCP servers find
    /// their bearer tokens (for hubs made later too: `session_hub`).
    mcp_secrets: HashMap<String, String>,
    mcp_started: AtomicBool,
    http: OnceLock<reqwest::Client>,
    /// The session store; `None` when `session_store = false` or it
    /// cannot be used.
    pub(crate) store: Option<Arc<crate::journal::Store>>,
    /// The checkpoint store; `None` when `checkpoints = false` or it
    /// cannot be used.
    pub(crate) checkpoints: Option<Arc<crate::checkpoint::Store>>,
    /// OpenTelemetry export; `None`: off (nothing is recorded).
    pub(crate) telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    /// `$SCV_HOME`: the user's hooks, commands and skills are here.
    pub(crate) scv_home: Arc<Path>,
    /// The detached sessions (capability `detach`) and their keepers.
    pub(crate) detached: crate::attach::Registry,
}

impl Shared {
    /// `launch_env` is the server's environment as it started (the live
    /// one no longer holds credentials: `scv_sandbox::env`).
    pub fn new(config: Config, scv_home: &Path, launch_env: &[(OsString, OsString)]) -> Self {
        // Every variable, not only those this configuration names: a
        // server added by a later edit may name another (hubs look values
        // up only by the names servers give).
        let secrets: HashMap<String, String> = launch_env
            .iter()
            .filter_map(|(name, value)| Some((name.to_str()?, value.to_str()?)))
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        let store = crate::journal::Store::open(&config.store, scv_home);
        let checkpoints = crate::checkpoint::Store::open(
            config.store.checkpoints,
            config.store.max_checkpoint_bytes,
            scv_home,
        );
        let telemetry = crate::telemetry::Telemetry::start(
            config.otel_endpoint.as_deref(),
            config.otel_log_content,
        );
        let live = Arc::new(LiveConfig::new(config, scv_home, launch_env));
        let mcp = Arc::new(new_hub(&live.current().sandbox, &secrets, scv_home));
        Shared {
            scv_home: scv_home.into(),
            telemetry,
            store,
            checkpoints,
            live,
            mcp,
            mcp_secrets: secrets,
            mcp_started: AtomicBool::new(false),
            http: OnceLock::new(),
            detached: crate::attach::Registry::default(),
        }
    }

    /// Stops the detached sessions (their turns cancelled, never run
    /// again by themselves) and waits for them, at most `within`.
    pub async fn stop_detached(&self, within: std::time::Duration) {
        self.detached.stop(within).await;
    }

    /// The configuration new sessions use now.
    pub(crate) fn current(&self) -> Arc<Current> {
        self.live.current()
    }

    /// The configuration new sessions use now.
    pub(crate) fn config(&self) -> Arc<Config> {
        self.live.current().config.clone()
    }

    /// A hub of its own for a session that brings MCP servers (the
    /// configured ones run in it too, so its tools are a superset).
    pub(crate) fn session_hub(&self) -> scv_mcp::Hub {
        new_hub(&self.current().sandbox, &self.mcp_secrets, &self.scv_home)
    }

    /// Starts the configured MCP servers (in the background) unless they
    /// were; `roots` is what they are told the workspace is.
    pub(crate) async fn start_mcp(&self, roots: &[PathBuf]) {
        if !self.mcp_started.swap(true, Ordering::SeqCst) {
            self.mcp.reconcile(&self.config().mcp_servers, roots).await;
        }
    }

    /// The shared HTTP client (connection pool) for provider and iLink
    /// requests.
    pub(crate) fn http(&self) -> reqwest::Client {
        // Keep a few warm connections, not one per past turn.
        self.http.get_or_init(|| http_client(16)).clone()
    }
}

/// An MCP hub whose stdio servers get the tool environment and run below
/// a reaper, so nothing a server starts outlives it.
fn new_hub(sandbox: &Sandbox, secrets: &HashMap<String, String>, home: &Path) -> scv_mcp::Hub {
    scv_mcp::Hub::new(scv_mcp::HubEnv {
        env: sandbox.env(),
        secrets: secrets.clone(),
        home: Some(home.to_path_buf()),
        command: Box::new(|program, args| {
            let mut command = crate::reaper::command(None);
            command.arg("--").arg(program).args(args);
            command
        }),
    })
}

/// An HTTP client keeping at most `idle_per_host` idle connections.
pub(crate) fn http_client(idle_per_host: usize) -> reqwest::Client {
    #[allow(clippy::expect_used)] // rustls with built-in roots has no runtime failure here
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(15))
        .pool_max_idle_per_host(idle_per_host)
        .build()
        .expect("the rustls backend initializes")
}

/// The server's name and version as `initialized` reports them.
pub(crate) const SERVER_NAME: &str = "scv-server";
pub(crate) const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");
