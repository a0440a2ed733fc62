//! The servers of one SCV process: reconciled with the configuration,
//! shared by every session, stopped together.

use crate::limits::{FIRST_REQUEST_WAIT, SHUTDOWN_WAIT};
use crate::result;
use crate::server;
use crate::spec::ServerSpec;
use crate::state::{lock, now_unix, HubEnv, Link, Live, ServerStatus, Shared, State};
use crate::tools::McpTool;
use crate::transport::over_the_cap;
use rmcp::model::CallToolRequestParams;
use rmcp::ServiceError;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

struct Running {
    spec: ServerSpec,
    shared: Arc<Shared>,
    stop: CancellationToken,
    done: TaskTracker,
}

/// The configured MCP servers of one SCV process.
pub struct Hub {
    env: Arc<HubEnv>,
    servers: tokio::sync::Mutex<BTreeMap<String, Running>>,
    /// Every server's tasks (supervisor, stderr readers).
    tracker: TaskTracker,
    /// Bumped on every change of any server's status or tools.
    changed: watch::Sender<u64>,
    /// What `roots/list` answers (the workspace).
    roots: Arc<Mutex<Vec<PathBuf>>>,
}

/// Why a call produced no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The server is not connected (starting, restarting, failed).
    NotConnected(String),
    TimedOut(Duration),
    Cancelled,
    Failed(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::NotConnected(why) => write!(f, "{why}"),
            CallError::TimedOut(after) => write!(f, "timed out after {} ms", after.as_millis()),
            CallError::Cancelled => write!(f, "cancelled"),
            CallError::Failed(why) => write!(f, "{why}"),
        }
    }
}

impl Hub {
    pub fn new(env: HubEnv) -> Hub {
        // rmcp's HTTP client (reqwest with rustls and no built-in crypto
        // provider) needs a process default; an error means one is set.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (changed, _) = watch::channel(0);
        Hub {
            env: Arc::new(env),
            servers: tokio::sync::Mutex::new(BTreeMap::new()),
            tracker: TaskTracker::new(),
            changed,
            roots: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Makes the running servers the configured ones: new ones start in
    /// the background, removed or changed ones stop (awaited), unchanged
    /// ones keep running. `roots` is what `roots/list` answers from now on.
    pub async fn reconcile(&self, specs: &[ServerSpec], roots: &[PathBuf]) {
        *lock(&self.roots) = roots.to_vec();
        let mut servers = self.servers.lock().await;
        let wanted: BTreeMap<&str, &ServerSpec> =
            specs.iter().map(|s| (s.name.as_str(), s)).collect();
        let gone: Vec<String> = servers
            .iter()
            .filter(|(name, running)| wanted.get(name.as_str()) != Some(&&running.spec))
            .map(|(name, _)| name.clone())
            .collect();
        // Told at once, then awaited together: each stop is bounded (see
        // `transport::Process::end`), and so is the sum.
        let stopping: Vec<Running> = gone
            .iter()
            .filter_map(|name| servers.remove(name))
            .collect();
        for running in &stopping {
            running.stop.cancel();
            running.done.close();
        }
        for running in &stopping {
            running.done.wait().await;
        }
        for spec in specs {
            if servers.contains_key(&spec.name) {
                continue;
            }
            let state = if spec.enabled {
                State::Starting
            } else {
                State::Disabled
            };
            let shared = Arc::new(Shared {
                status: Mutex::new(ServerStatus {
                    name: spec.name.clone(),
                    enabled: spec.enabled,
                    state,
                    last_success_unix_seconds: None,
                    error: None,
                    restarts: 0,
                    tools: 0,
                    tool_names: Vec::new(),
                }),
                connection: Mutex::new(Live::default()),
                names: Mutex::new(BTreeMap::new()),
                changed: self.changed.clone(),
                askers: Arc::default(),
                initialize_only: Arc::default(),
            });
            let stop = CancellationToken::new();
            let done = TaskTracker::new();
            if spec.enabled {
                let task = server::supervise(
                    spec.clone(),
                    shared.clone(),
                    self.env.clone(),
                    self.roots.clone(),
                    stop.clone(),
                    self.tracker.clone(),
                );
                done.spawn(self.tracker.track_future(task));
            }
            servers.insert(
                spec.name.clone(),
                Running {
                    spec: spec.clone(),
                    shared,
                    stop,
                    done,
                },
            );
        }
        self.changed.send_modify(|v| *v += 1);
    }

    /// A number that changes whenever any server's tools (or status) do.
    pub fn version(&self) -> u64 {
        *self.changed.borrow()
    }

    /// The tools of every connected server, by server name.
    pub async fn tools(&self) -> Vec<Arc<McpTool>> {
        let servers = self.servers.lock().await;
        servers
            .values()
            .flat_map(|running| {
                lock(&running.shared.connection)
                    .tools
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Waits, at most [`FIRST_REQUEST_WAIT`], until no server is still
    /// starting for the first time.
    pub async fn wait_started(&self) {
        let mut changes = self.changed.subscribe();
        let _ = tokio::time::timeout(FIRST_REQUEST_WAIT, async {
            loop {
                if !self.any_first_start().await {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }

    async fn any_first_start(&self) -> bool {
        self.servers.lock().await.values().any(|running| {
            let status = lock(&running.shared.status);
            status.state == State::Starting
                && status.last_success_unix_seconds.is_none()
                && status.restarts == 0
        })
    }

    /// Calls `tool` with `arguments`, bounded by its server's timeout and
    /// by `cancel`; on either the server is told the call is cancelled.
    /// `traceparent` (traces on) goes in the request's `_meta`.
    /// Returns the result as text and whether the server says it failed.
    pub async fn call(
        &self,
        tool: &McpTool,
        arguments: &Value,
        cancel: &CancellationToken,
        elicitor: Option<crate::elicit::Elicitor>,
        traceparent: Option<&str>,
    ) -> Result<(String, bool), CallError> {
        let (link, shared, spec) = {
            let servers = self.servers.lock().await;
            let Some(running) = servers.get(&tool.server) else {
                return Err(CallError::NotConnected(format!(
                    "MCP server `{}` is no longer configured",
                    tool.server
                )));
            };
            let link = lock(&running.shared.connection).link.clone();
            (link, running.shared.clone(), running.spec.clone())
        };
        let Some(Link {
            peer,
            handler,
            oversized,
            broken,
            auth_refused,
        }) = link
        else {
            let state = lock(&shared.status).state;
            return Err(CallError::NotConnected(format!(
                "MCP server `{}` is not connected ({})",
                tool.server,
                state.as_str()
            )));
        };
        let mut params = CallToolRequestParams::new(tool.tool.clone());
        if let Some(object) = arguments.as_object() {
            params = params.with_arguments(object.clone());
        }
        if let Some(traceparent) = traceparent {
            rmcp::model::RequestParamsMeta::set_traceparent(&mut params, traceparent);
        }
        // While the call runs, the server's questions go to its session.
        let _asking = elicitor.map(|e| shared.askers.register(e));
        // Dropping the call (timeout, cancel) sends `notifications/cancelled`.
        let outcome = tokio::select! {
            outcome = crate::rounds::call_tool(&peer, &handler, params) => outcome,
            () = tokio::time::sleep(tool.timeout) => return Err(CallError::TimedOut(tool.timeout)),
            () = cancel.cancelled() => return Err(CallError::Cancelled),
        };
        match outcome {
            Ok(result) => {
                lock(&shared.status).last_success_unix_seconds = Some(now_unix());
                Ok(result::render(&result))
            }
            Err(ServiceError::McpError(error)) => Err(CallError::Failed(format!(
                "the server answered with an error: {}",
                self.env.sanitize(&error.message, &spec)
            ))),
            // The reader stopped at a message over the cap, which can only
            // be this call's answer or something sent while it ran.
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))
                if oversized.load(Ordering::SeqCst) =>
            {
                broken.cancel();
                tracing::warn!(target: "scv::mcp", server = %tool.server, "{}; restarting the server",
                    over_the_cap(&format!("the result of tool `{}`", tool.tool)));
                Err(CallError::Failed(format!(
                    "{}, so SCV broke the connection; the server is being restarted",
                    over_the_cap("the MCP server's result")
                )))
            }
            // The server refused the token and a refresh could not
            // mend it: the user has to log in again.
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))
                if auth_refused.load(Ordering::SeqCst) =>
            {
                broken.cancel();
                Err(CallError::Failed(if spec.client_credentials() {
                    format!(
                        "MCP server `{}` refused its token; SCV is getting a new one with its client credentials",
                        tool.server
                    )
                } else {
                    format!(
                        "MCP server `{}` {}",
                        tool.server,
                        crate::auth::needs_login(&tool.server)
                    )
                }))
            }
            Err(err @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                tracing::warn!(target: "scv::mcp", server = %tool.server, "a call failed: {}",
                    self.env.sanitize(&crate::errors::service(&err), &spec));
                broken.cancel();
                Err(CallError::Failed(
                    "the connection to the MCP server broke during the call; it is being restarted"
                        .into(),
                ))
            }
            Err(other) => Err(CallError::Failed(
                self.env.sanitize(&crate::errors::service(&other), &spec),
            )),
        }
    }

    /// The live connection of `server` (and its table).
    pub(crate) async fn link(
        &self,
        server: &str,
    ) -> Result<(rmcp::Peer<rmcp::RoleClient>, ServerSpec), CallError> {
        let servers = self.servers.lock().await;
        let Some(running) = servers.get(server) else {
            return Err(CallError::NotConnected(format!(
                "there is no MCP server `{server}`"
            )));
        };
        let link = lock(&running.shared.connection).link.clone();
        match link {
            Some(link) => Ok((link.peer, running.spec.clone())),
            None => Err(CallError::NotConnected(format!(
                "MCP server `{server}` is not connected ({})",
                lock(&running.shared.status).state.as_str()
            ))),
        }
    }

    /// What to tell a session as it opens about servers whose OAuth
    /// login is missing or was refused (their refresh too): ``MCP server
    /// `NAME` needs a login: run `scv mcp login NAME` ``, one a server.
    pub async fn logins_needed(&self) -> Vec<String> {
        let needs = crate::auth::needs_login("");
        let needs = needs.split('`').next().unwrap_or_default();
        self.status()
            .await
            .into_iter()
            .filter(|s| s.state == State::Failed)
            .filter(|s| s.error.as_deref().is_some_and(|e| e.contains(needs)))
            .map(|s| {
                format!(
                    "MCP server `{}` {}",
                    s.name,
                    crate::auth::needs_login(&s.name)
                )
            })
            .collect()
    }

    /// Every configured server's status, by name.
    pub async fn status(&self) -> Vec<ServerStatus> {
        self.servers
            .lock()
            .await
            .values()
            .map(|running| lock(&running.shared.status).clone())
            .collect()
    }

    /// Stops every server and waits, at most [`SHUTDOWN_WAIT`], until
    /// each is gone. Past that the processes left are still told to end
    /// (their reapers were sent SIGTERM) but not awaited.
    pub async fn shutdown(&self) {
        let roots = lock(&self.roots).clone();
        let stopping = async {
            self.reconcile(&[], &roots).await;
            self.tracker.close();
            self.tracker.wait().await;
        };
        if tokio::time::timeout(SHUTDOWN_WAIT, stopping).await.is_err() {
            tracing::warn!(target: "scv::mcp", "MCP servers did not stop within {} s; their reapers were told to end them", SHUTDOWN_WAIT.as_secs());
        }
    }
}

impl Drop for Hub {
    /// Dropped without [`Hub::shutdown`] (a task aborted): every server is
    /// still told to stop, so its supervisor ends its process; not awaited.
    fn drop(&mut self) {
        for running in self.servers.get_mut().values() {
            running.stop.cancel();
        }
    }
}
