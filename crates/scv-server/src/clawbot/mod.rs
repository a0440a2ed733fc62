//! ClawBot: WeChat chats driving SCV sessions, inside the daemon.
//!
//! Each enabled, logged-in account runs as one instance: a poll task
//! long-polls `getupdates` (saving the cursor before a batch is handled)
//! and a chat loop that gives every direct sender an SCV session, served
//! in-process by the same `connection::serve` that socket clients use,
//! over a duplex pipe. Dropping the instance's token drops its I/O and its
//! sessions at once.

mod chat;
mod poll;

use crate::server::ServerContext;
use scv_ilink::{AccountStore, Credentials, Settings};
use scv_protocol::{ComponentState, ComponentStatus, RemoteTools};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A running account.
pub struct Instance {
    pub fingerprint: String,
    pub status: Arc<Mutex<ComponentStatus>>,
    token: CancellationToken,
    task: JoinHandle<()>,
}

impl Instance {
    /// Stops and joins: I/O and sessions are dropped at once.
    pub async fn stop(self) {
        self.status.lock().unwrap().state = ComponentState::Stopping;
        self.token.cancel();
        let _ = self.task.await;
        self.status.lock().unwrap().state = ComponentState::Stopped;
    }

    pub fn finished(&self) -> bool {
        self.task.is_finished()
    }
}

/// What an account needs to run.
pub struct AccountSpec {
    pub account: String,
    pub credentials: Credentials,
    pub settings: Settings,
    pub workspace: PathBuf,
}

impl AccountSpec {
    /// Changes to any of these replace a running instance.
    pub fn fingerprint(&self) -> String {
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

    /// `owner` only when the setting says so and the owner is known.
    pub fn remote_tools_effective(&self) -> RemoteTools {
        if self.settings.remote_tools == "owner" && self.credentials.user_id.is_some() {
            RemoteTools::Owner
        } else {
            RemoteTools::None
        }
    }
}

/// The status of an account that is not running.
pub fn idle_status(
    account: &str,
    credentials: Option<&Credentials>,
    settings: &Settings,
    restarts: u32,
) -> ComponentStatus {
    let owner_known = credentials.is_some_and(|c| c.user_id.is_some());
    ComponentStatus {
        id: format!("clawbot:{account}"),
        account: account.into(),
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
        remote_tools: Some(if settings.remote_tools == "owner" && owner_known {
            RemoteTools::Owner
        } else {
            RemoteTools::None
        }),
    }
}

pub fn start(
    ctx: Arc<ServerContext>,
    store: AccountStore,
    spec: AccountSpec,
    restarts: u32,
    parent: &CancellationToken,
) -> Instance {
    let mut status = idle_status(
        &spec.account,
        Some(&spec.credentials),
        &spec.settings,
        restarts,
    );
    status.state = ComponentState::Starting;
    status.error = None;
    status.remote_tools = Some(spec.remote_tools_effective());
    let status = Arc::new(Mutex::new(status));
    let token = parent.child_token();
    let fingerprint = spec.fingerprint();
    let task = tokio::spawn(chat::run(ctx, store, spec, status.clone(), token.clone()));
    Instance {
        fingerprint,
        status,
        token,
        task,
    }
}

pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
