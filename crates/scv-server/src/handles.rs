//! Narrow handles that keep the layers from importing each other:
//! [`Control`] is how a connection reaches daemon management (stdio has
//! none), and [`Connector`] is how a daemon component (ClawBot) opens
//! protocol sessions without knowing the connection layer.

use scv_protocol::{DaemonCommand, DaemonStatus};
use std::future::Future;
use std::pin::Pin;
use tokio::io::DuplexStream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Why a management command was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ControlError {
    /// The command is wrong (`invalid_request`).
    Invalid(String),
    /// Saving or removing state failed (`component_error`).
    Storage(String),
}

pub(crate) type ControlFuture<'a> =
    Pin<Box<dyn Future<Output = Result<DaemonStatus, ControlError>> + Send + 'a>>;

/// Daemon management: a command in, a status or a coded error out.
pub(crate) trait Control: Send + Sync {
    fn control(&self, command: DaemonCommand) -> ControlFuture<'_>;
}

/// Opens a protocol connection served in-process: the caller speaks the
/// protocol as a client on the returned stream. The serving task runs on
/// `tracker` (so whoever owns the tracker awaits it) and ends when
/// `shutdown` is cancelled or the stream is dropped.
pub(crate) trait Connector: Send + Sync {
    fn connect(&self, tracker: &TaskTracker, shutdown: CancellationToken) -> DuplexStream;
}
