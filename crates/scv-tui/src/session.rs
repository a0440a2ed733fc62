//! Opening a session on the daemon: connect (starting it when asked),
//! `initialize` with a version check, `session.start` in a workspace.
//! Every failure is one readable line.

use anyhow::{anyhow, bail, Context, Result};
use scv_client::Connection;
use scv_protocol::{
    ClientMessage, ErrorCode, Event, EventBody, Initialize, PeerInfo, SessionStart,
    PROTOCOL_VERSION,
};
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

pub async fn open(
    home: &Path,
    socket: &Path,
    cwd: &Path,
    start: bool,
    client: &str,
) -> Result<Opened> {
    let mut conn = connect(home, socket, start).await?;
    let mut events = Vec::new();
    let init = conn
        .send(ClientMessage::Initialize(Initialize {
            protocol_version: PROTOCOL_VERSION,
            client: Some(PeerInfo {
                name: client.into(),
                version: env!("CARGO_PKG_VERSION").into(),
            }),
        }))
        .await?;
    events.push(answer(&mut conn, &init).await?);
    let start = conn
        .send(ClientMessage::SessionStart(SessionStart {
            cwd: cwd.display().to_string(),
            ..Default::default()
        }))
        .await?;
    let started = answer(&mut conn, &start).await?;
    let session_id = started.session_id.clone().unwrap_or_default();
    events.push(started);
    // The queue snapshot follows session.started.
    if let Some(snapshot) = conn.next_event().await? {
        events.push(snapshot);
    }
    Ok(Opened {
        conn,
        events,
        session_id,
    })
}

/// The event answering `request_id`, or its error as a one-line failure.
async fn answer(conn: &mut DaemonConnection, request_id: &str) -> Result<Event> {
    loop {
        let event = conn
            .next_event()
            .await?
            .ok_or_else(|| anyhow!("the SCV daemon closed the connection"))?;
        if event.request_id.as_deref() != Some(request_id) {
            continue;
        }
        if let EventBody::Error(error) = &event.body {
            if error.code == ErrorCode::VersionMismatch {
                bail!("the SCV daemon speaks another protocol version ({}); restart it with `scv daemon stop`", error.message);
            }
            bail!("the SCV daemon refused: {}: {}", error.code, error.message);
        }
        return Ok(event);
    }
}
