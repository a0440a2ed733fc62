//! One client connection, over stdio or a socket.
//!
//! The connection task owns its sessions. It selects concurrently over
//! client input, finished turns and writer failure (the protocol's
//! "Ordering and backpressure"); turn tasks run beside it and are joined
//! through a `JoinSet`. Cleanup cancels active turns, gives them and the
//! writer a grace period, then aborts and joins whatever is left.

use crate::handles::{Control, ControlError};
use crate::host::{Handled, Reject, SessionHost, CLEANUP_GRACE};
use crate::server::{Shared, SERVER_NAME, SERVER_VERSION};
use crate::transport::{encode, spawn_writer, FrameReader, Outbound};
use futures_util::StreamExt;
use scv_protocol::limits::MAX_CLIENT_FRAME_BYTES;
use scv_protocol::{
    ApprovalResolve, DaemonControl, QueueMove, QueueRemove, QueueUpdate, SessionClear,
    SessionConfigure, SessionPause, TurnCancel, TurnStart,
};
use scv_protocol::{
    Capabilities, ClientFrame, ClientMessage, DaemonCommand, ErrorBody, ErrorCode, Event,
    EventBody, Frame, FrameCodec, Initialize, PeerInfo, PROTOCOL_VERSION,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

/// What a connection may do beyond sessions, by transport.
#[derive(Clone, Default)]
pub(crate) struct Options {
    /// Daemon management (`daemon.control`); stdio has none.
    pub control: Option<Arc<dyn Control>>,
    /// A client that has not initialized by then is told so and closed
    /// (the daemon's guard against idle connections).
    pub init_deadline: Option<Duration>,
    /// The peer is a process SCV runs as a tool (`daemon::peer`): it gets
    /// sessions without tools, and may not bring MCP servers, another
    /// provider URL or manage the daemon — what only a person may do.
    pub tool_peer: bool,
}

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The client closed its side.
    Eof,
    /// A fatal protocol error (version mismatch) closed it.
    Fatal,
    /// The writer failed or the client stopped reading.
    WriterFailed,
    /// The server is shutting down.
    Shutdown,
    /// No `initialize` came within the deadline.
    NotInitialized,
}

/// Serves one client until EOF, a fatal error, writer failure or shutdown.
pub(crate) async fn serve<R, W>(
    shared: Arc<Shared>,
    options: Options,
    reader: R,
    writer: W,
    shutdown: CancellationToken,
) -> Ending
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let failed = CancellationToken::new();
    let (out, mut writer_task) = spawn_writer(writer, failed.clone());
    let init_deadline = options.init_deadline;
    let mut conn = Connection {
        host: SessionHost::new(shared, out.clone()),
        out,
        control: options.control,
        tool_peer: options.tool_peer,
        initialized: false,
    };
    let mut frames = FrameReader::new(reader, FrameCodec::new(MAX_CLIENT_FRAME_BYTES));
    let init_by = init_deadline.map(|d| tokio::time::Instant::now() + d);
    // The loop's own state is what an idle connection costs; everything
    // done for a frame or a finished turn is boxed, so its (much larger)
    // state exists only while it runs: 3.2 KiB per idle connection before.
    let ending = loop {
        tokio::select! {
            biased;
            _ = shutdown.cancelled() => break Ending::Shutdown,
            _ = failed.cancelled() => break Ending::WriterFailed,
            _ = tokio::time::sleep_until(init_by.unwrap_or_else(tokio::time::Instant::now)),
                if init_by.is_some() && !conn.initialized =>
            {
                let waited = init_deadline.unwrap_or_default().as_millis();
                let event = Event::error(
                    None,
                    ErrorCode::NotInitialized,
                    format!("no initialize within {waited} ms; closing the connection"),
                    true,
                );
                Box::pin(conn.reply(&event)).await;
                break Ending::NotInitialized;
            }
            Some(joined) = conn.host.next_finished(), if conn.host.has_turns() => {
                Box::pin(conn.host.finish(joined)).await;
            }
            frame = frames.next() => match frame {
                None => break Ending::Eof,
                Some(Err(err)) => {
                    tracing::debug!("connection read failed: {err}");
                    break Ending::Eof;
                }
                Some(Ok(Frame::TooLong(bytes))) => {
                    let message = format!(
                        "frame of {bytes} bytes exceeds the {MAX_CLIENT_FRAME_BYTES}-byte limit"
                    );
                    Box::pin(conn.reply_error(None, Reject::new(ErrorCode::InvalidRequest, message)))
                        .await;
                }
                Some(Ok(Frame::Line(line))) => {
                    if Box::pin(conn.handle(&line)).await == Flow::Close {
                        break Ending::Fatal;
                    }
                }
            },
        }
    };
    Box::pin(conn.host.close()).await;
    drop(conn);
    // The writer drains what is queued (terminal events included) unless
    // the client is not reading; then it is aborted.
    if tokio::time::timeout(CLEANUP_GRACE, &mut writer_task)
        .await
        .is_err()
    {
        writer_task.abort();
        let _ = writer_task.await;
    }
    ending
}

impl Ending {
    pub fn describe(self) -> &'static str {
        match self {
            Ending::Eof => "the client closed it",
            Ending::Fatal => "fatal protocol error",
            Ending::WriterFailed => "the client stopped reading or the connection broke",
            Ending::Shutdown => "server shutdown",
            Ending::NotInitialized => "no initialize in time",
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Close,
}

/// One connection: the handshake, dispatch to the session host, replies.
struct Connection {
    host: SessionHost,
    out: Outbound,
    control: Option<Arc<dyn Control>>,
    tool_peer: bool,
    initialized: bool,
}

/// What a tool process's connection is refused.
fn from_tool(what: &str) -> Reject {
    Reject::new(
        ErrorCode::InvalidRequest,
        format!("{what} is refused: this connection comes from a process SCV runs as a tool, and only a person's client may ask for it"),
    )
}

impl Connection {
    async fn handle(&mut self, line: &[u8]) -> Flow {
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
            ClientMessage::SessionStart(mut start) => {
                // A tool process talking to the daemon gets an answer,
                // never a hand: its sessions run no tools.
                start.no_tools |= self.tool_peer;
                self.host.start(&rid, start).await
            }
            ClientMessage::TurnStart(TurnStart { session_id, prompt }) => {
                self.host.submit(&rid, &session_id, prompt).await
            }
            ClientMessage::TurnCancel(TurnCancel {
                session_id,
                turn_id,
            }) => self.host.cancel(&session_id, &turn_id),
            ClientMessage::ApprovalResolve(ApprovalResolve {
                session_id,
                approval_id,
                approved,
            }) => self.host.resolve(&session_id, &approval_id, approved),
            ClientMessage::QueueUpdate(QueueUpdate {
                session_id,
                queue_id,
                revision,
                prompt,
            }) => {
                self.host
                    .queue_update(&rid, &session_id, &queue_id, revision, prompt)
                    .await
            }
            ClientMessage::QueueMove(QueueMove {
                session_id,
                queue_id,
                revision,
                before_queue_id,
            }) => {
                self.host
                    .queue_move(
                        &rid,
                        &session_id,
                        &queue_id,
                        revision,
                        before_queue_id.as_deref(),
                    )
                    .await
            }
            ClientMessage::QueueRemove(QueueRemove {
                session_id,
                queue_id,
                revision,
            }) => {
                self.host
                    .queue_remove(&rid, &session_id, &queue_id, revision)
                    .await
            }
            ClientMessage::SessionPause(SessionPause { session_id, paused }) => {
                self.host.pause(&rid, &session_id, paused).await
            }
            ClientMessage::SessionClear(SessionClear { session_id }) => {
                self.host.clear(&rid, &session_id).await
            }
            ClientMessage::SessionConfigure(SessionConfigure {
                session_id,
                provider,
                model,
            }) => {
                self.host
                    .configure(&rid, &session_id, provider, model)
                    .await
            }
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
        // Extensions go only to a client that asked; what it asked for and
        // SCV supports is echoed back.
        let granted = init.capabilities.map(|asked| Capabilities {
            reasoning: asked.reasoning,
        });
        if granted.is_some_and(|c| c.reasoning) {
            self.host.stream_reasoning();
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
        let event = Event::reply(Some(rid.to_string()), EventBody::DaemonStatus { status });
        self.reply(&event).await;
        Ok(())
    }

    async fn reply(&self, event: &Event) {
        // A failed send trips the writer's token; the loop sees it.
        let _ = self.out.send(encode(event.as_ref())).await;
    }

    async fn reply_error(&self, request_id: Option<String>, reject: Reject) {
        let event = Event::reply(
            request_id,
            EventBody::Error(ErrorBody {
                code: reject.code,
                message: reject.message,
                fatal: false,
                entry: reject.entry,
            }),
        );
        self.reply(&event).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// What one idle connection's task holds: the serve loop's own state.
    /// Work for a frame is boxed; were it inlined, the loop would carry
    /// its largest state (3.2 KiB measured) for the connection's life.
    #[tokio::test]
    async fn the_serve_loop_stays_small() {
        let home = tempfile::tempdir().unwrap();
        let shared = Arc::new(Shared::new(Config::default(), home.path(), &[]));
        let (reader, writer) = tokio::io::duplex(64);
        let (reader, _) = tokio::io::split(reader);
        let (_, writer) = tokio::io::split(writer);
        let serve = serve(
            shared,
            Options::default(),
            reader,
            writer,
            CancellationToken::new(),
        );
        let bytes = std::mem::size_of_val(&serve);
        println!("serve future: {bytes} bytes");
        // 1,024 bytes here in a debug build; inlining the frame work again
        // would triple it.
        assert!(bytes <= 1536, "the serve future grew to {bytes} bytes");
    }
}
