//! One client connection, over stdio or a socket.
//!
//! The connection task owns its sessions. It selects concurrently over
//! client input, finished turns and writer failure (the protocol's
//! "Ordering and backpressure"); turn tasks run beside it and are joined
//! through a `JoinSet`. Cleanup cancels active turns, gives them and the
//! writer a grace period, then aborts and joins whatever is left.
//!
//! This file is the loop and the cleanup; `requests.rs` is what a frame
//! becomes: the handshake, daemon management, the tool-process policy, the
//! session host's messages, and the replies.

mod requests;

use crate::handles::Control;
use crate::server::Shared;
use crate::session::{Reject, SessionHost, CLEANUP_GRACE};
use crate::transport::{spawn_writer, FrameReader};
use futures_util::StreamExt;
use requests::Connection;
use scv_protocol::images::MAX_IMAGES_CLIENT_FRAME_BYTES;
use scv_protocol::limits::MAX_CLIENT_FRAME_BYTES;
use scv_protocol::{ErrorCode, Event, Frame, FrameCodec};
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
    /// Capability `detach` may be granted: the daemon outlives this
    /// connection (not stdio, whose end is the server's; never a tool
    /// process's, which may not follow other sessions).
    pub detach: bool,
}

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
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
        detach: options.detach && !options.tool_peer,
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
                // The event is made inside the box too: held across the
                // await, it would sit in every idle connection's state.
                Box::pin(async {
                    let event = Event::error(
                        None,
                        ErrorCode::NotInitialized,
                        format!("no initialize within {waited} ms; closing the connection"),
                        true,
                    );
                    conn.reply(&event).await
                })
                .await;
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
                    let limit = frames.max_bytes();
                    let message = format!(
                        "frame of {bytes} bytes exceeds the {limit}-byte limit"
                    );
                    Box::pin(conn.reply_error(None, Reject::new(ErrorCode::InvalidRequest, message)))
                        .await;
                }
                Some(Ok(Frame::Line(line))) => {
                    if Box::pin(conn.handle(&line)).await == Flow::Close {
                        break Ending::Fatal;
                    }
                    if conn.host.caps().images {
                        // Capability `images`: a prompt's images at their
                        // bound fit in one frame.
                        frames.set_max_bytes(MAX_IMAGES_CLIENT_FRAME_BYTES);
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

#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Close,
}

impl Ending {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Ending::Eof => "the client closed it",
            Ending::Fatal => "fatal protocol error",
            Ending::WriterFailed => "the client stopped reading or the connection broke",
            Ending::Shutdown => "server shutdown",
            Ending::NotInitialized => "no initialize in time",
        }
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
