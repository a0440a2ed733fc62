//! The daemon control helper: one bounded `daemon.control` exchange.
//!
//! The whole exchange (connect, initialize, command, answer) has a 20-second
//! bound. A mutation is never retried: after a timeout the outcome is
//! unknown, and the caller is told to query status before trying again.

use crate::connection::Connection;
use scv_protocol::DaemonControl;
use scv_protocol::{
    Capabilities, ClientMessage, DaemonCommand, DaemonStatus, ErrorCode, EventBody, Initialize,
    PeerInfo, PROTOCOL_VERSION,
};
use std::path::Path;
use std::time::Duration;
use tokio::net::UnixStream;

pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(20);

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("the daemon is not running at {0}")]
    NotRunning(String),
    #[error("no answer within {}s: unknown outcome — query status before retrying", .0.as_secs())]
    UnknownOutcome(Duration),
    #[error("the daemon refused: {}: {message}", crate::text::error_words(*.code))]
    Refused { code: ErrorCode, message: String },
    #[error("control exchange failed: {0}")]
    Protocol(String),
}

/// Sends `command` to the daemon at `socket` and returns its status.
pub async fn control(socket: &Path, command: DaemonCommand) -> Result<DaemonStatus, ControlError> {
    control_within(socket, command, CONTROL_TIMEOUT).await
}

/// [`control`] with another bound (tests use a short one).
pub async fn control_within(
    socket: &Path,
    command: DaemonCommand,
    bound: Duration,
) -> Result<DaemonStatus, ControlError> {
    control_asking(socket, command, None, bound).await
}

/// [`control`] on a connection that asked for `capabilities` (the CLI's
/// own commands ask for `daemon_status`, whose answer carries the
/// extension fields), within `bound`.
pub async fn control_asking(
    socket: &Path,
    command: DaemonCommand,
    capabilities: Option<Capabilities>,
    bound: Duration,
) -> Result<DaemonStatus, ControlError> {
    let stream = UnixStream::connect(socket)
        .await
        .map_err(|_| ControlError::NotRunning(socket.display().to_string()))?;
    match tokio::time::timeout(bound, exchange(stream, command, capabilities)).await {
        Ok(result) => result,
        Err(_) => Err(ControlError::UnknownOutcome(bound)),
    }
}

async fn exchange(
    stream: UnixStream,
    command: DaemonCommand,
    capabilities: Option<Capabilities>,
) -> Result<DaemonStatus, ControlError> {
    let (reader, writer) = stream.into_split();
    let mut conn = Connection::new(reader, writer);
    let protocol = |err: anyhow::Error| ControlError::Protocol(err.to_string());
    let init = conn
        .send(ClientMessage::Initialize(Initialize {
            protocol_version: PROTOCOL_VERSION,
            client: Some(PeerInfo {
                name: "scv-control".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            }),
            capabilities,
        }))
        .await
        .map_err(protocol)?;
    let control = conn
        .send(ClientMessage::DaemonControl(DaemonControl { command }))
        .await
        .map_err(protocol)?;
    loop {
        let Some(event) = conn.next_event().await.map_err(protocol)? else {
            return Err(ControlError::Protocol(
                "the daemon closed the connection".into(),
            ));
        };
        let answers = event.request_id.as_deref();
        match event.body {
            EventBody::Error(error) if answers == Some(&init) || answers == Some(&control) => {
                return Err(ControlError::Refused {
                    code: error.code,
                    message: error.message,
                })
            }
            EventBody::DaemonStatus { status } if answers == Some(&control) => return Ok(status),
            _ => {}
        }
    }
}
