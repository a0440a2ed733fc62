//! Daemon components behind one trait: what the supervisor starts,
//! reconciles with what is saved (every two seconds and on `reload`),
//! reports in `daemon.status`, hands management commands to, and stops.
//!
//! ClawBot accounts (`clawbot::component`) and the daemon's MCP servers
//! (`mcp_component`) are the two; a new one is one module implementing
//! [`Component`] and one line in the supervisor's list
//! (`daemon/supervisor.rs`).

use crate::handles::{Connector, ControlError};
use crate::server::Shared;
use scv_protocol::{ComponentKind, ComponentStatus, DaemonCommand};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The daemon as a component sees it: the shared configuration, where its
/// state lives, the daemon workspace, and how it opens sessions.
pub(crate) struct Context {
    pub shared: Arc<Shared>,
    pub home: PathBuf,
    pub workspace: PathBuf,
    pub connector: Arc<dyn Connector>,
}

pub(crate) trait Component: Send + Sync {
    /// What it is: its statuses' ids carry it, and management commands
    /// for it are routed by it.
    fn kind(&self) -> ComponentKind;

    /// At daemon start, before the first reconcile.
    fn start<'a>(&'a self, cx: &'a Context) -> BoxFuture<'a, ()>;

    /// Makes what runs match what is saved; `reload`: a client asked, so
    /// configuration read once (not only saved state) is read again.
    fn reconcile<'a>(&'a self, cx: &'a Context, reload: bool) -> BoxFuture<'a, ()>;

    /// Its statuses, as `daemon.status` lists them.
    fn status<'a>(&'a self, cx: &'a Context) -> BoxFuture<'a, Vec<ComponentStatus>>;

    /// Carries out `command` if it is this component's (`None`: not
    /// mine, the default: a component without commands of its own). The
    /// supervisor answers with the whole status afterwards.
    fn control<'a>(
        &'a self,
        _cx: &'a Context,
        _command: &'a DaemonCommand,
    ) -> Option<BoxFuture<'a, Result<(), ControlError>>> {
        None
    }

    /// Stops and joins everything it runs.
    fn stop<'a>(&'a self, cx: &'a Context) -> BoxFuture<'a, ()>;
}

/// The kind of component a management command is for (`None`: the
/// daemon's own: status, reload).
pub(crate) fn kind_of(command: &DaemonCommand) -> Option<ComponentKind> {
    match command {
        DaemonCommand::Status | DaemonCommand::Reload => None,
        DaemonCommand::ClawbotSet { .. } | DaemonCommand::ClawbotLogout { .. } => {
            Some(ComponentKind::Clawbot)
        }
    }
}
