//! A typed protocol connection: send [`ClientFrame`]s, read [`Event`]s.
//! Incoming lines are capped at the protocol's server-frame limit.

use anyhow::{anyhow, bail, Context, Result};
use futures_util::StreamExt;
use scv_protocol::limits::MAX_SERVER_FRAME_BYTES;
use scv_protocol::{
    Capabilities, ClientFrame, ClientMessage, ErrorCode, Event, EventBody, Frame, FrameCodec,
    Initialize, PeerInfo, SessionStart, PROTOCOL_VERSION,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::FramedRead;

/// One client frame as a line, newline included.
pub fn frame_line(request_id: String, message: ClientMessage) -> Result<Vec<u8>> {
    let mut line = serde_json::to_vec(&ClientFrame {
        request_id,
        message,
    })?;
    line.push(b'\n');
    Ok(line)
}

/// What the handshake brought back.
pub struct Opened {
    /// `initialized`, `session.started`, `queue.snapshot`.
    pub events: Vec<Event>,
    pub session_id: String,
}

pub struct Connection<R, W> {
    reader: FramedRead<R, FrameCodec>,
    writer: W,
    next_request: u64,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Connection<R, W> {
    pub fn new(reader: R, writer: W) -> Self {
        Connection {
            reader: FramedRead::new(reader, FrameCodec::new(MAX_SERVER_FRAME_BYTES)),
            writer,
            next_request: 0,
        }
    }

    /// Sends a message with a fresh request id, which it returns.
    pub async fn send(&mut self, message: ClientMessage) -> Result<String> {
        self.next_request += 1;
        let request_id = self.next_request.to_string();
        let line = frame_line(request_id.clone(), message)?;
        self.send_raw(&line).await?;
        Ok(request_id)
    }

    /// Sends a request made by a [`crate::SessionClient`] (it owns the id).
    pub async fn send_request(&mut self, request: &crate::session::Request) -> Result<()> {
        let line = frame_line(request.request_id.clone(), request.message.clone())?;
        self.send_raw(&line).await
    }

    /// `initialize` (as `client`), then `session.start`: the events up to
    /// the session's queue snapshot. A refusal is one readable error.
    pub async fn handshake(
        &mut self,
        client: Option<PeerInfo>,
        capabilities: Option<Capabilities>,
        start: SessionStart,
    ) -> Result<Opened> {
        let mut events = vec![self.initialize(client, capabilities).await?];
        let start = self.send(ClientMessage::SessionStart(start)).await?;
        let started = self.answer(&start).await?;
        let session_id = started.session_id.clone().unwrap_or_default();
        events.push(started);
        // The queue snapshot follows session.started.
        if let Some(snapshot) = self.next_event().await? {
            events.push(snapshot);
        }
        Ok(Opened { events, session_id })
    }

    /// `initialize` (as `client`, asking for `capabilities`): the
    /// `initialized` event. A refusal is one readable error.
    pub async fn initialize(
        &mut self,
        client: Option<PeerInfo>,
        capabilities: Option<Capabilities>,
    ) -> Result<Event> {
        let init = self
            .send(ClientMessage::Initialize(Initialize {
                protocol_version: PROTOCOL_VERSION,
                client,
                capabilities,
            }))
            .await?;
        self.answer(&init).await
    }

    /// The event answering `request_id`, or its error as a one-line failure.
    async fn answer(&mut self, request_id: &str) -> Result<Event> {
        loop {
            let event = self
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

    /// Writes raw bytes (tests use this for malformed input).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.writer.write_all(bytes).await?;
        self.writer.flush().await?;
        Ok(())
    }

    /// The next event; `None` when the server closed the stream.
    pub async fn next_event(&mut self) -> Result<Option<Event>> {
        match self.reader.next().await {
            None => Ok(None),
            Some(Err(err)) => Err(err).context("reading from the server"),
            Some(Ok(Frame::TooLong(n))) => bail!("server frame of {n} bytes exceeds the cap"),
            Some(Ok(Frame::Line(line))) => {
                let event = serde_json::from_slice(&line)
                    .with_context(|| format!("bad event: {}", String::from_utf8_lossy(&line)))?;
                Ok(Some(event))
            }
        }
    }

    /// The reading and writing halves, for a reader task and a writer.
    pub fn into_parts(self) -> (FramedRead<R, FrameCodec>, W) {
        (self.reader, self.writer)
    }

    /// Closes the sending half (the server sees EOF).
    pub async fn close_write(&mut self) -> Result<()> {
        self.writer.shutdown().await?;
        Ok(())
    }
}
