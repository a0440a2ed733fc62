//! Opening a session on the daemon: connect (starting it when asked),
//! `initialize` with a version check, `session.start` in a workspace.
//! Every failure is one readable line.

use anyhow::{Context, Result};
use scv_client::Connection;
use scv_protocol::{Capabilities, Event, PeerInfo, SessionStart};
use std::path::Path;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;

pub type DaemonConnection = Connection<OwnedReadHalf, OwnedWriteHalf>;

pub struct Opened {
    pub conn: DaemonConnection,
    /// `initialized`, `session.started`, `queue.snapshot`.
    pub events: Vec<Event>,
    pub session_id: String,
}

/// Connects to the daemon; with `start`, launches it when absent.
pub async fn connect(home: &Path, socket: &Path, start: bool) -> Result<DaemonConnection> {
    let stream = if start {
        scv_client::ensure_daemon(home, socket).await?
    } else {
        UnixStream::connect(socket)
            .await
            .with_context(|| format!("cannot reach the SCV daemon at {}", socket.display()))?
    };
    let (reader, writer) = stream.into_split();
    Ok(Connection::new(reader, writer))
}

/// The provider and model a session asks for (`--provider`, `--model`);
/// `None` takes the daemon's configured ones.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    pub provider: Option<String>,
    pub model: Option<String>,
}

pub async fn open(
    home: &Path,
    socket: &Path,
    cwd: &Path,
    start: bool,
    client: &str,
    choice: &Choice,
) -> Result<Opened> {
    open_with(home, socket, cwd, start, client, choice, None).await
}

/// [`open`], asking for protocol extensions (`capabilities`).
pub async fn open_with(
    home: &Path,
    socket: &Path,
    cwd: &Path,
    start: bool,
    client: &str,
    choice: &Choice,
    capabilities: Option<Capabilities>,
) -> Result<Opened> {
    let mut conn = connect(home, socket, start).await?;
    let scv_client::Opened { events, session_id } = conn
        .handshake(
            Some(PeerInfo {
                name: client.into(),
                version: env!("CARGO_PKG_VERSION").into(),
            }),
            capabilities,
            SessionStart {
                cwd: cwd.display().to_string(),
                provider: choice.provider.clone(),
                model: choice.model.clone(),
                ..Default::default()
            },
        )
        .await?;
    Ok(Opened {
        conn,
        events,
        session_id,
    })
}
