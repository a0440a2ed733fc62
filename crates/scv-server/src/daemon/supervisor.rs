//! The component supervisor: the daemon's ClawBot accounts behind one
//! lock. It reconciles saved settings with running instances every two
//! seconds and on `reload` (start, stop, or replace — stopping and joining
//! the old instance first), and reports their status. It is the daemon's
//! [`Control`] handle.
//!
//! Management answers are built under the lock and written (by the
//! connection) after it is released, so a client that stops reading cannot
//! hold management or reconciliation. The account store is read and written
//! off the async threads.

use crate::clawbot::{self, AccountSpec, Instance};
use crate::handles::{Connector, Control, ControlError, ControlFuture};
use crate::server::Shared;
use scv_ilink::store::valid_account;
use scv_ilink::{AccountStore, Credentials, Settings};
use scv_protocol::{ComponentState, ComponentStatus, DaemonCommand, DaemonStatus, RemoteTools};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

pub(crate) const RECONCILE_EVERY: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Components {
    running: BTreeMap<String, Instance>,
    /// Starts after the first, per account, since the daemon started.
    restarts: HashMap<String, u32>,
}

/// What the store holds for one account, read in one go.
struct Saved {
    credentials: Option<Credentials>,
    settings: Settings,
}

pub(crate) struct Supervisor {
    home: PathBuf,
    store: AccountStore,
    /// The daemon workspace: accounts without their own use it.
    workspace: PathBuf,
    shared: Arc<Shared>,
    connector: Arc<dyn Connector>,
    components: Mutex<Components>,
}

impl Supervisor {
    pub fn new(
        home: &Path,
        workspace: PathBuf,
        shared: Arc<Shared>,
        connector: Arc<dyn Connector>,
    ) -> Supervisor {
        Supervisor {
            home: home.to_path_buf(),
            store: AccountStore::new(home),
            workspace,
            shared,
            connector,
            components: Mutex::new(Components::default()),
        }
    }

    /// Every saved account, read off the async threads.
    async fn saved(&self) -> BTreeMap<String, Saved> {
        let store = self.store.clone();
        crate::blocking::run(move || {
            store
                .accounts()
                .into_iter()
                .map(|account| {
                    let saved = Saved {
                        credentials: store.credentials(&account),
                        settings: store.settings(&account),
                    };
                    (account, saved)
                })
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// Runs blocking store work off the async threads.
    async fn store<T: Send + 'static>(
        &self,
        work: impl FnOnce(&AccountStore) -> T + Send + 'static,
    ) -> Option<T> {
        let store = self.store.clone();
        crate::blocking::run(move || work(&store)).await.ok()
    }

    /// Live status: version, pid and one component per account.
    async fn status(&self) -> DaemonStatus {
        let saved = self.saved().await;
        let components = self.components.lock().await;
        let mut accounts: BTreeSet<&String> = saved.keys().collect();
        accounts.extend(components.running.keys());
        let statuses = accounts
            .into_iter()
            .map(|account| {
                let restarts = components.restarts.get(account).copied().unwrap_or(0);
                match (components.running.get(account), saved.get(account)) {
                    (Some(instance), _) => instance.status(restarts),
                    (None, Some(saved)) => clawbot::idle_status(
                        account,
                        saved.credentials.as_ref(),
                        &saved.settings,
                        restarts,
                    ),
                    (None, None) => {
                        clawbot::idle_status(account, None, &Settings::default(), restarts)
                    }
                }
            })
            .collect::<Vec<_>>();
        let mut statuses = statuses;
        statuses.extend(self.shared.mcp.status().await.into_iter().map(mcp_status));
        DaemonStatus {
            version: crate::server::SERVER_VERSION.into(),
            pid: std::process::id(),
            components: statuses,
        }
    }

    /// Starts, stops or replaces instances to match what is saved.
    async fn reconcile(&self) {
        let mut saved = self.saved().await;
        let mut components = self.components.lock().await;
        let mut accounts: BTreeSet<String> = saved.keys().cloned().collect();
        accounts.extend(components.running.keys().cloned());
        for account in accounts {
            let spec = saved.remove(&account).and_then(|saved| {
                let settings = saved.settings;
                saved
                    .credentials
                    .filter(|_| settings.enabled)
                    .map(|credentials| AccountSpec {
                        workspace: settings
                            .workspace
                            .as_ref()
                            .map(PathBuf::from)
                            .unwrap_or_else(|| self.workspace.clone()),
                        account: account.clone(),
                        credentials,
                        settings,
                    })
            });
            let wanted = spec.as_ref().map(AccountSpec::fingerprint);
            let had = match components.running.remove(&account) {
                Some(instance) if Some(&instance.fingerprint) == wanted.as_ref() => {
                    components.running.insert(account, instance);
                    continue;
                }
                Some(old) => {
                    old.stop().await;
                    true
                }
                None => false,
            };
            if let Some(spec) = spec {
                if had {
                    *components.restarts.entry(account.clone()).or_default() += 1;
                }
                let restarts = components.restarts.get(&account).copied().unwrap_or(0);
                let instance = clawbot::start(
                    self.shared.clone(),
                    self.connector.clone(),
                    self.store.clone(),
                    spec,
                    restarts,
                );
                components.running.insert(account, instance);
            }
        }
    }

    /// `clawbot_set`: persists the settings, then reconciles.
    async fn clawbot_set(
        &self,
        account: String,
        enabled: bool,
        workspace: Option<String>,
        remote_tools: Option<RemoteTools>,
    ) -> Result<DaemonStatus, ControlError> {
        if !valid_account(&account) {
            return Err(ControlError::Invalid(format!(
                "invalid account name `{account}`"
            )));
        }
        if let Some(dir) = &workspace {
            let path = PathBuf::from(dir);
            let is_dir = crate::blocking::run(move || path.is_absolute() && path.is_dir())
                .await
                .unwrap_or(false);
            if !is_dir {
                return Err(ControlError::Invalid(format!(
                    "workspace `{dir}` must be an absolute path to an existing directory"
                )));
            }
        }
        let name = account.clone();
        let saved = self
            .store(move |store| {
                let mut settings = store.settings(&name);
                settings.enabled = enabled;
                if let Some(dir) = workspace {
                    settings.workspace = Some(dir);
                }
                if let Some(tools) = remote_tools {
                    settings.remote_tools = match tools {
                        RemoteTools::None => "none".into(),
                        RemoteTools::Owner => "owner".into(),
                    };
                }
                store.save_settings(&name, &settings)
            })
            .await;
        if !matches!(saved, Some(Ok(()))) {
            return Err(ControlError::Storage(format!(
                "cannot save the settings of account `{account}`"
            )));
        }
        self.reconcile().await;
        Ok(self.status().await)
    }

    /// `clawbot_logout`: disables, stops and joins, then forgets the account.
    async fn clawbot_logout(&self, account: String) -> Result<DaemonStatus, ControlError> {
        if !valid_account(&account) {
            return Err(ControlError::Invalid(format!(
                "invalid account name `{account}`"
            )));
        }
        let name = account.clone();
        let saved = self
            .store(move |store| {
                let mut settings = store.settings(&name);
                settings.enabled = false;
                if store.dir(&name).exists() {
                    store.save_settings(&name, &settings)
                } else {
                    Ok(())
                }
            })
            .await;
        if !matches!(saved, Some(Ok(()))) {
            return Err(ControlError::Storage(format!(
                "cannot save the settings of account `{account}`"
            )));
        }
        self.reconcile().await;
        let name = account.clone();
        if !matches!(
            self.store(move |store| store.remove(&name)).await,
            Some(Ok(()))
        ) {
            return Err(ControlError::Storage(format!(
                "cannot remove account `{account}`"
            )));
        }
        self.components.lock().await.restarts.remove(&account);
        Ok(self.status().await)
    }

    /// Reconciles every [`RECONCILE_EVERY`] until `shutdown`, then stops
    /// and joins every instance.
    pub async fn run(&self, shutdown: CancellationToken) {
        // MCP servers start in the background; sessions share them.
        self.shared
            .start_mcp(std::slice::from_ref(&self.workspace))
            .await;
        let mut tick = tokio::time::interval(RECONCILE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => self.reconcile().await,
            }
        }
        let running = std::mem::take(&mut self.components.lock().await.running);
        for (_, instance) in running {
            instance.stop().await;
        }
        self.shared.mcp.shutdown().await;
    }

    /// Re-reads `[mcp_servers]` and makes the running servers match; a
    /// configuration that no longer parses changes nothing (and is logged).
    async fn reload_mcp(&self) {
        let home = self.home.clone();
        match crate::blocking::run(move || crate::config::Config::load(&home)).await {
            Ok(Ok(config)) => {
                self.shared
                    .mcp
                    .reconcile(&config.mcp_servers, std::slice::from_ref(&self.workspace))
                    .await
            }
            Ok(Err(err)) => tracing::warn!("reload: MCP servers unchanged: {err:#}"),
            Err(err) => tracing::warn!("reload: cannot read the configuration: {err}"),
        }
    }
}

impl Control for Supervisor {
    fn control(&self, command: DaemonCommand) -> ControlFuture<'_> {
        Box::pin(async move {
            match command {
                DaemonCommand::Status => Ok(self.status().await),
                DaemonCommand::Reload => {
                    self.reconcile().await;
                    self.reload_mcp().await;
                    // What a leak would show: tasks that outlive what
                    // started them (tests compare two reloads).
                    tracing::info!(
                        "reload: {} tasks alive in the daemon",
                        tokio::runtime::Handle::current()
                            .metrics()
                            .num_alive_tasks()
                    );
                    Ok(self.status().await)
                }
                DaemonCommand::ClawbotSet {
                    account,
                    enabled,
                    workspace,
                    remote_tools,
                } => {
                    self.clawbot_set(account, enabled, workspace, remote_tools)
                        .await
                }
                DaemonCommand::ClawbotLogout { account } => self.clawbot_logout(account).await,
            }
        })
    }
}

/// An MCP server as a `daemon.status` component.
fn mcp_status(server: scv_mcp::ServerStatus) -> ComponentStatus {
    let state = match server.state {
        scv_mcp::State::Disabled => ComponentState::Disabled,
        scv_mcp::State::Starting => ComponentState::Starting,
        scv_mcp::State::Connected => ComponentState::Connected,
        scv_mcp::State::Backoff => ComponentState::Backoff,
        scv_mcp::State::Failed => ComponentState::Failed,
        scv_mcp::State::Stopped => ComponentState::Stopped,
    };
    ComponentStatus {
        id: format!("mcp:{}", server.name),
        account: None,
        bot_id: None,
        user_id: None,
        enabled: server.enabled,
        state,
        last_success_unix_seconds: server.last_success_unix_seconds,
        error: server.error,
        restarts: server.restarts,
        remote_tools: None,
        tools: Some(server.tools as u64),
    }
}
