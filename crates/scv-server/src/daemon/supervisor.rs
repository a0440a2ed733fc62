//! The component supervisor: the daemon's ClawBot accounts behind one
//! lock. It reconciles saved settings with running instances every two
//! seconds and on `reload` (start, stop, or replace — stopping and joining
//! the old instance first), and reports their status.
//!
//! Management answers are built under the lock and written after it is
//! released, so a client that stops reading cannot hold management or
//! reconciliation.

use crate::clawbot::{self, AccountSpec, Instance};
use crate::server::ServerContext;
use scv_ilink::store::valid_account;
use scv_ilink::AccountStore;
use scv_protocol::{DaemonStatus, RemoteTools};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

pub const RECONCILE_EVERY: Duration = Duration::from_secs(2);

#[derive(Default)]
struct Components {
    running: BTreeMap<String, Instance>,
    /// Starts after the first, per account, since the daemon started.
    restarts: HashMap<String, u32>,
}

pub struct Supervisor {
    store: AccountStore,
    /// The daemon workspace: accounts without their own use it.
    workspace: PathBuf,
    components: Mutex<Components>,
    instances: CancellationToken,
}

/// Why a management command was refused.
pub enum Refusal {
    Invalid(String),
    Storage(String),
}

impl Supervisor {
    pub fn new(home: &Path, workspace: PathBuf) -> Supervisor {
        Supervisor {
            store: AccountStore::new(home),
            workspace,
            components: Mutex::new(Components::default()),
            instances: CancellationToken::new(),
        }
    }

    /// Live status: version, pid and one component per account.
    pub async fn status(&self) -> DaemonStatus {
        let components = self.components.lock().await;
        let mut accounts: BTreeSet<String> = self.store.accounts().into_iter().collect();
        accounts.extend(components.running.keys().cloned());
        let statuses = accounts
            .iter()
            .map(|account| {
                let restarts = components.restarts.get(account).copied().unwrap_or(0);
                match components.running.get(account) {
                    Some(instance) => {
                        let mut status = instance.status.lock().unwrap().clone();
                        status.restarts = restarts;
                        status
                    }
                    None => clawbot::idle_status(
                        account,
                        self.store.credentials(account).as_ref(),
                        &self.store.settings(account),
                        restarts,
                    ),
                }
            })
            .collect();
        DaemonStatus {
            version: crate::server::SERVER_VERSION.into(),
            pid: std::process::id(),
            components: statuses,
        }
    }

    /// Starts, stops or replaces instances to match what is saved.
    pub async fn reconcile(&self, ctx: &Arc<ServerContext>) {
        let mut components = self.components.lock().await;
        let mut accounts: BTreeSet<String> = self.store.accounts().into_iter().collect();
        accounts.extend(components.running.keys().cloned());
        for account in accounts {
            let settings = self.store.settings(&account);
            let spec = self
                .store
                .credentials(&account)
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
                });
            let wanted = spec.as_ref().map(AccountSpec::fingerprint);
            let had = match components.running.get(&account) {
                Some(instance) if Some(&instance.fingerprint) == wanted.as_ref() => continue,
                Some(_) => {
                    let old = components.running.remove(&account).expect("present");
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
                    ctx.clone(),
                    self.store.clone(),
                    spec,
                    restarts,
                    &self.instances,
                );
                components.running.insert(account, instance);
            }
        }
    }

    /// `clawbot_set`: persists the settings, then reconciles.
    pub async fn clawbot_set(
        &self,
        ctx: &Arc<ServerContext>,
        account: &str,
        enabled: bool,
        workspace: Option<&str>,
        remote_tools: Option<RemoteTools>,
    ) -> Result<DaemonStatus, Refusal> {
        if !valid_account(account) {
            return Err(Refusal::Invalid(format!(
                "invalid account name `{account}`"
            )));
        }
        if let Some(dir) = workspace {
            let path = Path::new(dir);
            if !path.is_absolute() || !path.is_dir() {
                return Err(Refusal::Invalid(format!(
                    "workspace `{dir}` must be an absolute path to an existing directory"
                )));
            }
        }
        let mut settings = self.store.settings(account);
        settings.enabled = enabled;
        if let Some(dir) = workspace {
            settings.workspace = Some(dir.to_string());
        }
        if let Some(tools) = remote_tools {
            settings.remote_tools = match tools {
                RemoteTools::None => "none".into(),
                RemoteTools::Owner => "owner".into(),
            };
        }
        self.store.save_settings(account, &settings).map_err(|_| {
            Refusal::Storage(format!("cannot save the settings of account `{account}`"))
        })?;
        self.reconcile(ctx).await;
        Ok(self.status().await)
    }

    /// `clawbot_logout`: disables, stops and joins, then forgets the account.
    pub async fn clawbot_logout(
        &self,
        ctx: &Arc<ServerContext>,
        account: &str,
    ) -> Result<DaemonStatus, Refusal> {
        if !valid_account(account) {
            return Err(Refusal::Invalid(format!(
                "invalid account name `{account}`"
            )));
        }
        let mut settings = self.store.settings(account);
        settings.enabled = false;
        if self.store.dir(account).exists() {
            self.store.save_settings(account, &settings).map_err(|_| {
                Refusal::Storage(format!("cannot save the settings of account `{account}`"))
            })?;
        }
        self.reconcile(ctx).await;
        self.store
            .remove(account)
            .map_err(|_| Refusal::Storage(format!("cannot remove account `{account}`")))?;
        self.components.lock().await.restarts.remove(account);
        Ok(self.status().await)
    }

    /// Reconciles every [`RECONCILE_EVERY`] until `shutdown`, then stops
    /// and joins every instance.
    pub async fn run(&self, ctx: Arc<ServerContext>, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(RECONCILE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => self.reconcile(&ctx).await,
            }
        }
        self.instances.cancel();
        let running = std::mem::take(&mut self.components.lock().await.running);
        for (_, instance) in running {
            instance.stop().await;
        }
    }
}
