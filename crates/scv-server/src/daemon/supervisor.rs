//! The component supervisor: the daemon's components (`component.rs`:
//! ClawBot accounts, MCP servers) behind one lock. It reconciles each with
//! what is saved every two seconds and on `reload`, hands management
//! commands to the component they are for, and reports the status of all.
//! It is the daemon's [`Control`] handle.
//!
//! Management answers are built under the lock and written (by the
//! connection) after it is released, so a client that stops reading cannot
//! hold management or reconciliation.

use crate::component::{self, Component, Context};
use crate::handles::{Connector, Control, ControlError, ControlFuture};
use crate::live::Reread;
use crate::server::Shared;
use scv_protocol::{DaemonCommand, DaemonStatus};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

pub(crate) const RECONCILE_EVERY: Duration = Duration::from_secs(2);

pub(crate) struct Supervisor {
    cx: Context,
    components: Vec<Box<dyn Component>>,
    /// Held while reconciling or carrying out a command, so the two never
    /// interleave (a replacement is joined before the next change).
    lock: Mutex<()>,
}

impl Supervisor {
    pub(super) fn new(
        home: &Path,
        workspace: PathBuf,
        shared: Arc<Shared>,
        connector: Arc<dyn Connector>,
    ) -> Supervisor {
        let cx = Context {
            shared,
            home: home.to_path_buf(),
            workspace,
            connector,
        };
        let components = registered(&cx);
        Supervisor {
            cx,
            components,
            lock: Mutex::new(()),
        }
    }

    /// Live status: version, pid, every component's and the
    /// configuration file's (with what `reread` found changed).
    async fn status(&self, reread: Option<Reread>) -> DaemonStatus {
        let mut components = Vec::new();
        for component in &self.components {
            components.extend(component.status(&self.cx).await);
        }
        DaemonStatus {
            version: crate::server::SERVER_VERSION.into(),
            pid: std::process::id(),
            components,
            config: self.cx.shared.live.state(reread),
        }
    }

    async fn reconcile(&self, reload: bool) {
        for component in &self.components {
            component.reconcile(&self.cx, reload).await;
        }
    }

    /// Starts every component, reconciles every [`RECONCILE_EVERY`] until
    /// `shutdown`, then stops and joins every one.
    pub(super) async fn run(&self, shutdown: CancellationToken) {
        for component in &self.components {
            component.start(&self.cx).await;
        }
        let mut tick = tokio::time::interval(RECONCILE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => {
                    let _held = self.lock.lock().await;
                    // An edited config.toml is taken as `reload` would.
                    let edited = !self.cx.shared.live.refresh().await.is_empty();
                    self.reconcile(edited).await;
                }
            }
        }
        let _held = self.lock.lock().await;
        for component in &self.components {
            component.stop(&self.cx).await;
        }
    }
}

/// Every component of the daemon, in `daemon.status` order.
fn registered(cx: &Context) -> Vec<Box<dyn Component>> {
    vec![
        Box::new(crate::clawbot::component::Clawbot::new(&cx.home)),
        Box::new(crate::mcp_component::McpServers),
        Box::new(crate::hooks_component::UserHooks::default()),
    ]
}

impl Control for Supervisor {
    fn control(&self, command: DaemonCommand) -> ControlFuture<'_> {
        Box::pin(async move {
            let held = self.lock.lock().await;
            let mut reread = None;
            match component::kind_of(&command) {
                None if command == DaemonCommand::Status => {}
                None => {
                    self.cx.shared.live.refresh().await;
                    reread = Some(self.cx.shared.live.since_reload());
                    self.reconcile(true).await;
                    // What a leak would show: tasks that outlive what
                    // started them (tests compare two reloads).
                    tracing::info!(
                        "reload: {} tasks alive in the daemon",
                        tokio::runtime::Handle::current()
                            .metrics()
                            .num_alive_tasks()
                    );
                }
                Some(kind) => {
                    let handled = self
                        .components
                        .iter()
                        .filter(|component| component.kind() == kind)
                        .find_map(|component| component.control(&self.cx, &command));
                    match handled {
                        Some(work) => work.await?,
                        None => {
                            return Err(ControlError::Invalid(
                                "no component takes this command".into(),
                            ))
                        }
                    }
                }
            }
            let status = self.status(reread).await;
            drop(held);
            Ok(status)
        })
    }
}
