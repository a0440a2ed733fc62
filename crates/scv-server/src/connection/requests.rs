//! What a client frame becomes: `initialize` (the version check and the
//! capabilities granted), `daemon.control` (through the [`Control`]
//! handle; stdio has none), what a tool process's connection is refused,
//! and every session message handed to the session host — with the
//! `error` replies the protocol names.

use super::Flow;
use crate::handles::{Control, ControlError};
use crate::server::{SERVER_NAME, SERVER_VERSION};
use crate::session::{Handled, Reject, SessionHost};
use crate::transport::{encode, Outbound};
use scv_protocol::{
    ClientFrame, ClientMessage, DaemonCommand, DaemonControl, ErrorBody, ErrorCode, Event,
    EventBody, Initialize, PeerInfo, PROTOCOL_VERSION,
};
use std::sync::Arc;

/// One connection: the handshake, dispatch to the session host, replies.
pub(super) struct Connection {
    pub host: SessionHost,
    pub out: Outbound,
    pub control: Option<Arc<dyn Control>>,
    pub tool_peer: bool,
    /// Capability `detach` may be granted here.
    pub detach: bool,
    pub initialized: bool,
}

/// What a tool process's connection is refused.
fn from_tool(what: &str) -> Reject {
    Reject::new(
        ErrorCode::InvalidRequest,
        format!("{what} is refused: this connection comes from a process SCV runs as a tool, and only a person's client may ask for it"),
    )
}

impl Connection {
    pub(super) async fn handle(&mut self, line: &[u8]) -> Flow {
        let frame = match ClientFrame::parse(line) {
            Ok(frame) => frame,
            Err(err) => {
                let reject = Reject::new(err.code, err.message);
                self.reply_error(err.request_id, reject).await;
                return Flow::Continue;
            }
        };
        let rid = frame.request_id;
        if !self.initialized {
            return match frame.message {
                ClientMessage::Initialize(init) => self.initialize(rid, init).await,
                other => {
                    let message = format!("send initialize before {}", other.type_name());
                    self.reply_error(Some(rid), Reject::new(ErrorCode::NotInitialized, message))
                        .await;
                    Flow::Continue
                }
            };
        }
        let handled = match frame.message {
            ClientMessage::Initialize(_) => Err(Reject::new(
                ErrorCode::InvalidRequest,
                "already initialized",
            )),
            ClientMessage::DaemonControl(DaemonControl { .. }) if self.tool_peer => {
                Err(from_tool("daemon.control"))
            }
            ClientMessage::DaemonControl(DaemonControl { command }) => {
                self.daemon_control(&rid, command).await
            }
            ClientMessage::SessionStart(start)
                if self.tool_peer && (start.mcp_servers.is_some() || start.base_url.is_some()) =>
            {
                Err(from_tool("a session with its own MCP servers or base_url"))
            }
            ClientMessage::SessionList(_)
            | ClientMessage::SessionResume(_)
            | ClientMessage::SessionFork(_)
            | ClientMessage::SessionDelete(_)
            | ClientMessage::SessionClose(_)
                if self.tool_peer =>
            {
                Err(from_tool("the session store"))
            }
            ClientMessage::CheckpointList(_)
            | ClientMessage::CheckpointDiff(_)
            | ClientMessage::CheckpointRestore(_)
                if self.tool_peer =>
            {
                Err(from_tool("checkpoints"))
            }
            // A process SCV runs must never trust its own workspace.
            ClientMessage::WorkspaceTrust(_) if self.tool_peer => Err(from_tool("workspace trust")),
            // Nor keep a rule that would approve its own calls.
            ClientMessage::PermissionsList(_)
            | ClientMessage::PermissionsKeep(_)
            | ClientMessage::PermissionsRemove(_)
                if self.tool_peer =>
            {
                Err(from_tool("permission rules"))
            }
            // Nor answer an MCP server's question for the user.
            ClientMessage::ElicitationResolve(_) if self.tool_peer => {
                Err(from_tool("answering an MCP server's question"))
            }
            ClientMessage::SessionStart(mut start) => {
                // A tool process talking to the daemon gets an answer,
                // never a hand: its sessions run no tools.
                start.no_tools |= self.tool_peer;
                self.host
                    .handle(&rid, ClientMessage::SessionStart(start))
                    .await
            }
            message => self.host.handle(&rid, message).await,
        };
        if let Err(reject) = handled {
            self.reply_error(Some(rid), reject).await;
        }
        Flow::Continue
    }

    async fn initialize(&mut self, rid: String, init: Initialize) -> Flow {
        if init.protocol_version != PROTOCOL_VERSION {
            let message = format!(
                "protocol version {} is not supported; this server speaks version {PROTOCOL_VERSION}",
                init.protocol_version
            );
            let event = Event::error(Some(rid), ErrorCode::VersionMismatch, message, true);
            self.reply(&event).await;
            return Flow::Close;
        }
        if let Some(client) = &init.client {
            tracing::debug!("client {} {} initialized", client.name, client.version);
        }
        self.initialized = true;
        // Extensions go only to a client that asked; what was asked is
        // granted (a field the client did not know deserialized as false),
        // but `detach` only where sessions can outlive the connection.
        let granted = init.capabilities.map(|mut asked| {
            asked.detach &= self.detach;
            asked
        });
        if let Some(granted) = granted {
            self.host.grant(granted);
        }
        let event = Event::reply(
            Some(rid),
            EventBody::Initialized {
                protocol_version: PROTOCOL_VERSION,
                server: PeerInfo {
                    name: SERVER_NAME.into(),
                    version: SERVER_VERSION.into(),
                },
                capabilities: granted,
            },
        );
        self.reply(&event).await;
        Flow::Continue
    }

    /// `daemon.control`: management answers carry the request id but no
    /// session or seq, and are written after the component lock is released.
    async fn daemon_control(&mut self, rid: &str, command: DaemonCommand) -> Handled {
        let Some(control) = &self.control else {
            return Err(Reject::new(
                ErrorCode::Unsupported,
                "daemon.control is not available on stdio; connect to the daemon socket",
            ));
        };
        let status = control
            .control(command)
            .await
            .map_err(|refusal| match refusal {
                ControlError::Invalid(message) => Reject::new(ErrorCode::InvalidRequest, message),
                ControlError::Storage(message) => Reject::new(ErrorCode::ComponentError, message),
            })?;
        // The extension fields only for a connection that asked.
        let status = EventBody::DaemonStatus { status };
        if let Some(status) = crate::gate::shape_owned(self.host.caps(), status) {
            self.reply(&Event::reply(Some(rid.to_string()), status))
                .await;
        }
        Ok(())
    }

    pub(super) async fn reply(&self, event: &Event) {
        // A failed send trips the writer's token; the loop sees it.
        let _ = self.out.send(encode(event.as_ref())).await;
    }

    pub(super) async fn reply_error(&self, request_id: Option<String>, reject: Reject) {
        let event = Event::reply(
            request_id,
            EventBody::Error(ErrorBody {
                code: reject.code,
                message: reject.message,
                fatal: false,
                entry: reject.entry.map(|entry| *entry),
                conflicts: reject.conflicts.map(Vec::from),
            }),
        );
        self.reply(&event).await;
    }
}
