//! `daemon.control` for the CLI's own commands (`scv daemon status|reload`,
//! `scv mcp list`): as [`scv_client::control`] — one bounded exchange,
//! never retried — but asking for capability `daemon_status`, so the
//! answer carries the extension fields (`status.config`, MCP servers'
//! `tools` / `tool_names`) a client that asked for nothing never gets.

use scv_client::control::CONTROL_TIMEOUT;
use scv_client::{Connection, ControlError};
use scv_protocol::{Capabilities, DaemonCommand, DaemonStatus, EventBody, PeerInfo};
use std::path::Path;
use tokio::net::UnixStream;

/// Sends `command` to the daemon at `socket`; its status, extensions
/// included.
pub async fn control(socket: &Path, command: DaemonCommand) -> Result<DaemonStatus, ControlError> {
    let stream = UnixStream::connect(socket)
        .await
        .map_err(|_| ControlError::NotRunning(socket.display().to_string()))?;
    match tokio::time::timeout(CONTROL_TIMEOUT, exchange(stream, command)).await {
        Ok(result) => result,
        Err(_) => Err(ControlError::UnknownOutcome(CONTROL_TIMEOUT)),
    }
}

async fn exchange(
    stream: UnixStream,
    command: DaemonCommand,
) -> Result<DaemonStatus, ControlError> {
    let (reader, writer) = stream.into_split();
    let mut conn = Connection::new(reader, writer);
    let protocol = |err: anyhow::Error| ControlError::Protocol(err.to_string());
    let client = PeerInfo {
        name: "scv-control".into(),
        version: env!("CARGO_PKG_VERSION").into(),
    };
    let capabilities = Capabilities {
        daemon_status: true,
        ..Capabilities::default()
    };
    conn.initialize(Some(client), Some(capabilities))
        .await
        .map_err(protocol)?;
    let control = conn
        .send(scv_protocol::ClientMessage::DaemonControl(
            scv_protocol::DaemonControl { command },
        ))
        .await
        .map_err(protocol)?;
    loop {
        let Some(event) = conn.next_event().await.map_err(protocol)? else {
            return Err(ControlError::Protocol(
                "the daemon closed the connection".into(),
            ));
        };
        if event.request_id.as_deref() != Some(&control) {
            continue;
        }
        match event.body {
            EventBody::Error(error) => {
                return Err(ControlError::Refused {
                    code: error.code,
                    message: error.message,
                })
            }
            EventBody::DaemonStatus { status } => return Ok(status),
            _ => {}
        }
    }
}
