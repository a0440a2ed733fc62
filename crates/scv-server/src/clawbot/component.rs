//! ClawBot accounts as a daemon component: one instance per enabled,
//! logged-in account, reconciled with the account store (start, stop, or
//! replace — stopping and joining the old instance first), and the
//! `clawbot_set` / `clawbot_logout` commands. The store is read and
//! written off the async threads.

use super::{idle_status, AccountSpec, Instance};
use crate::component::{BoxFuture, Component, Context};
use crate::handles::ControlError;
use scv_ilink::store::valid_account;
use scv_ilink::{AccountStore, Credentials, Settings};
use scv_protocol::{ComponentKind, ComponentStatus, DaemonCommand, RemoteTools};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use tokio::sync::Mutex;

#[derive(Default)]
struct Running {
    instances: BTreeMap<String, Instance>,
    /// Starts after the first, per account, since the daemon started.
    restarts: HashMap<String, u32>,
}

/// What the store holds for one account, read in one go.
struct Saved {
    credentials: Option<Credentials>,
    settings: Settings,
}

pub(crate) struct Clawbot {
    store: AccountStore,
    running: Mutex<Running>,
}

impl Clawbot {
    pub(crate) fn new(home: &Path) -> Clawbot {
        Clawbot {
            store: AccountStore::new(home),
            running: Mutex::new(Running::default()),
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

    /// Starts, stops or replaces instances to match what is saved.
    async fn reconcile_accounts(&self, cx: &Context) {
        let mut saved = self.saved().await;
        let mut running = self.running.lock().await;
        let mut accounts: BTreeSet<String> = saved.keys().cloned().collect();
        accounts.extend(running.instances.keys().cloned());
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
                            .unwrap_or_else(|| cx.workspace.clone()),
                        account: account.clone(),
                        credentials,
                        settings,
                    })
            });
            let wanted = spec.as_ref().map(AccountSpec::fingerprint);
            let had = match running.instances.remove(&account) {
                Some(instance) if Some(&instance.fingerprint) == wanted.as_ref() => {
                    running.instances.insert(account, instance);
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
                    *running.restarts.entry(account.clone()).or_default() += 1;
                }
                let restarts = running.restarts.get(&account).copied().unwrap_or(0);
                let instance = super::start(
                    cx.shared.clone(),
                    cx.connector.clone(),
                    self.store.clone(),
                    spec,
                    restarts,
                );
                running.instances.insert(account, instance);
            }
        }
    }

    /// `clawbot_set`: persists the settings, then reconciles.
    async fn set(
        &self,
        cx: &Context,
        account: &str,
        enabled: bool,
        workspace: Option<String>,
        remote_tools: Option<RemoteTools>,
    ) -> Result<(), ControlError> {
        if !valid_account(account) {
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
        let name = account.to_string();
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
        self.reconcile_accounts(cx).await;
        Ok(())
    }

    /// `clawbot_logout`: disables, stops and joins, then forgets the account.
    async fn logout(&self, cx: &Context, account: &str) -> Result<(), ControlError> {
        if !valid_account(account) {
            return Err(ControlError::Invalid(format!(
                "invalid account name `{account}`"
            )));
        }
        let name = account.to_string();
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
        self.reconcile_accounts(cx).await;
        let name = account.to_string();
        if !matches!(
            self.store(move |store| store.remove(&name)).await,
            Some(Ok(()))
        ) {
            return Err(ControlError::Storage(format!(
                "cannot remove account `{account}`"
            )));
        }
        self.running.lock().await.restarts.remove(account);
        Ok(())
    }
}

impl Component for Clawbot {
    fn kind(&self) -> ComponentKind {
        ComponentKind::Clawbot
    }

    fn start<'a>(&'a self, _cx: &'a Context) -> BoxFuture<'a, ()> {
        // The first reconcile starts the saved accounts.
        Box::pin(async {})
    }

    fn reconcile<'a>(&'a self, cx: &'a Context, _reload: bool) -> BoxFuture<'a, ()> {
        Box::pin(self.reconcile_accounts(cx))
    }

    fn status<'a>(&'a self, _cx: &'a Context) -> BoxFuture<'a, Vec<ComponentStatus>> {
        Box::pin(async move {
            let saved = self.saved().await;
            let running = self.running.lock().await;
            let mut accounts: BTreeSet<&String> = saved.keys().collect();
            accounts.extend(running.instances.keys());
            accounts
                .into_iter()
                .map(|account| {
                    let restarts = running.restarts.get(account).copied().unwrap_or(0);
                    match (running.instances.get(account), saved.get(account)) {
                        (Some(instance), _) => instance.status(restarts),
                        (None, Some(saved)) => idle_status(
                            account,
                            saved.credentials.as_ref(),
                            &saved.settings,
                            restarts,
                        ),
                        (None, None) => idle_status(account, None, &Settings::default(), restarts),
                    }
                })
                .collect()
        })
    }

    fn control<'a>(
        &'a self,
        cx: &'a Context,
        command: &'a DaemonCommand,
    ) -> Option<BoxFuture<'a, Result<(), ControlError>>> {
        match command {
            DaemonCommand::ClawbotSet {
                account,
                enabled,
                workspace,
                remote_tools,
            } => Some(Box::pin(self.set(
                cx,
                account,
                *enabled,
                workspace.clone(),
                *remote_tools,
            ))),
            DaemonCommand::ClawbotLogout { account } => Some(Box::pin(self.logout(cx, account))),
            _ => None,
        }
    }

    fn stop<'a>(&'a self, _cx: &'a Context) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let instances = std::mem::take(&mut self.running.lock().await.instances);
            for (_, instance) in instances {
                instance.stop().await;
            }
        })
    }
}
