//! ClawBot: WeChat chats driving SCV sessions, inside the daemon.
//!
//! Each enabled, logged-in account runs as one instance: a poll task
//! long-polls `getupdates` (saving the cursor before a batch is handled)
//! and a chat loop that gives every direct sender an SCV session, opened
//! through the daemon's [`Connector`] (the same connection code socket
//! clients get, served in-process). Every task of an instance — the chat
//! loop, the poller, each sender's session and reader, typing keep-alives —
//! runs on the instance's tracker, and stopping it cancels them all and
//! waits for every one.

mod chat;
pub(crate) mod component;
mod poll;
mod subagents;

use crate::handles::Connector;
use crate::server::Shared;
use scv_ilink::{AccountStore, Credentials, Settings};
use scv_protocol::{ComponentState, ComponentStatus, RemoteTools};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// An account's live status, shared by its tasks.
#[derive(Clone)]
pub(crate) struct Status(Arc<Mutex<ComponentStatus>>);

impl Status {
    fn new(status: ComponentStatus) -> Status {
        Status(Arc::new(Mutex::new(status)))
    }

    /// The status, recovering it if a task panicked while holding it.
    fn lock(&self) -> MutexGuard<'_, ComponentStatus> {
        crate::sync::lock(&self.0)
    }
}

/// A running account.
pub(crate) struct Instance {
    pub fingerprint: String,
    status: Status,
    token: CancellationToken,
    tasks: TaskTracker,
    account: String,
}

impl Instance {
    /// The status as it is now.
    pub(crate) fn status(&self, restarts: u32) -> ComponentStatus {
        let mut status = self.status.lock().clone();
        status.restarts = restarts;
        status
    }

    /// Stops and joins every task of the instance: its I/O and sessions
    /// are dropped at once.
    pub(crate) async fn stop(self) {
        self.status.lock().state = ComponentState::Stopping;
        self.token.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        self.status.lock().state = ComponentState::Stopped;
        tracing::info!("clawbot:{}: stopped", self.account);
    }
}

/// What an account needs to run.
pub(crate) struct AccountSpec {
    pub account: String,
    pub credentials: Credentials,
    pub settings: Settings,
    pub workspace: PathBuf,
}

impl AccountSpec {
    /// Changes to any of these replace a running instance.
    pub(crate) fn fingerprint(&self) -> String {
        let c = &self.credentials;
        format!(
            "{}|{}|{}|{:?}|{}|{}",
            c.bot_token,
            c.base_url,
            c.bot_id,
            c.user_id,
            self.workspace.display(),
            self.remote_tools_effective() == RemoteTools::Owner
        )
    }

    pub(crate) fn remote_tools_effective(&self) -> RemoteTools {
        effective_remote_tools(&self.settings, Some(&self.credentials))
    }
}

/// `owner` only when the setting says so and the owner is known.
fn effective_remote_tools(settings: &Settings, credentials: Option<&Credentials>) -> RemoteTools {
    if settings.remote_tools == "owner" && credentials.is_some_and(|c| c.user_id.is_some()) {
        RemoteTools::Owner
    } else {
        RemoteTools::None
    }
}

/// The status of an account that is not running.
pub(crate) fn idle_status(
    account: &str,
    credentials: Option<&Credentials>,
    settings: &Settings,
    restarts: u32,
) -> ComponentStatus {
    ComponentStatus {
        id: scv_protocol::ComponentKind::Clawbot.id(account),
        account: Some(account.into()),
        bot_id: credentials.map(|c| c.bot_id.clone()),
        user_id: credentials.and_then(|c| c.user_id.clone()),
        enabled: settings.enabled,
        state: if settings.enabled {
            ComponentState::Stopped
        } else {
            ComponentState::Disabled
        },
        last_success_unix_seconds: None,
        error: (settings.enabled && credentials.is_none())
            .then(|| "not logged in; run `scv clawbot login`".to_string()),
        restarts,
        remote_tools: Some(effective_remote_tools(settings, credentials)),
        tools: None,
        tool_names: None,
    }
}

pub(crate) fn start(
    shared: Arc<Shared>,
    connector: Arc<dyn Connector>,
    store: AccountStore,
    spec: AccountSpec,
    restarts: u32,
) -> Instance {
    let mut status = idle_status(
        &spec.account,
        Some(&spec.credentials),
        &spec.settings,
        restarts,
    );
    status.state = ComponentState::Starting;
    status.error = None;
    let status = Status::new(status);
    let token = CancellationToken::new();
    let tasks = TaskTracker::new();
    let fingerprint = spec.fingerprint();
    let account = spec.account.clone();
    tasks.spawn(chat::run(
        shared,
        connector,
        store,
        spec,
        status.clone(),
        token.clone(),
        tasks.clone(),
    ));
    Instance {
        fingerprint,
        status,
        token,
        tasks,
        account,
    }
}
