//! A typed protocol connection: send [`ClientFrame`]s, read [`Event`]s.
//! Incoming lines are capped at the protocol's server-frame limit.

use anyhow::{anyhow, bail, Context, Result};
use futures_util::StreamExt;
use scv_protocol::limits::MAX_SERVER_FRAME_BYTES;
use scv_protocol::{
    Capabilities, ClientFrame, ClientMessage, ErrorCode, Event, EventBody, Frame, FrameCodec,
    Initialize, PeerInfo, SessionDelete, SessionFork, SessionList, SessionResume, SessionStart,
    SessionStarted, StoredSession, TranscriptItem, PROTOCOL_VERSION,
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
    /// `initialized`, `session.started`, `queue.snapshot` (and, for a
    /// resume or fork, `session.transcript`).
    pub events: Vec<Event>,
    pub session_id: String,
}

impl Opened {
    /// `session.started`'s body.
    pub fn started(&self) -> Option<&SessionStarted> {
        self.events.iter().find_map(|e| match &e.body {
            EventBody::SessionStarted(started) => Some(&**started),
            _ => None,
        })
    }

    /// A resumed or forked session's past conversation, and whether older
    /// items were left out.
    pub fn transcript(&self) -> Option<(&[TranscriptItem], bool)> {
        self.events.iter().find_map(|e| match &e.body {
            EventBody::SessionTranscript { items, truncated } => Some((&items[..], *truncated)),
            _ => None,
        })
    }
}

/// How a connection gets its session.
#[derive(Debug, Clone)]
pub enum Open {
    /// A new one (`session.start`).
    Start(SessionStart),
    /// A stored one, live again (`session.resume`).
    Resume(SessionResume),
    /// A new one holding a stored one's history (`session.fork`).
    Fork(SessionFork),
}

impl Open {
    fn stored(&self) -> bool {
        !matches!(self, Open::Start(_))
    }

    fn message(self) -> ClientMessage {
        match self {
            Open::Start(start) => ClientMessage::SessionStart(start),
            Open::Resume(resume) => ClientMessage::SessionResume(resume),
            Open::Fork(fork) => ClientMessage::SessionFork(fork),
        }
    }
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
        self.open(client, capabilities, Open::Start(start)).await
    }

    /// `initialize` (as `client`; a resume or fork asks for capability
    /// `sessions` too), then the session as `open` says: the events up to
    /// its queue snapshot, and its transcript for a stored one.
    pub async fn open(
        &mut self,
        client: Option<PeerInfo>,
        capabilities: Option<Capabilities>,
        open: Open,
    ) -> Result<Opened> {
        let capabilities = match (capabilities, open.stored()) {
            (Some(caps), true) => Some(Capabilities {
                sessions: true,
                ..caps
            }),
            (None, true) => Some(Capabilities {
                sessions: true,
                ..Default::default()
            }),
            (caps, false) => caps,
        };
        let stored = open.stored();
        let mut events = vec![self.initialize(client, capabilities).await?];
        self.open_session(open, stored, &mut events).await
    }

    /// The session `open` says, on an initialized connection.
    pub async fn open_more(&mut self, open: Open) -> Result<Opened> {
        let stored = open.stored();
        let mut events = Vec::new();
        self.open_session(open, stored, &mut events).await
    }

    async fn open_session(
        &mut self,
        open: Open,
        stored: bool,
        events: &mut Vec<Event>,
    ) -> Result<Opened> {
        let request = self.send(open.message()).await?;
        let started = self.answer(&request).await?;
        let session_id = started.session_id.clone().unwrap_or_default();
        events.push(started);
        // The queue snapshot follows session.started; a stored session's
        // transcript follows that.
        for _ in 0..if stored { 2 } else { 1 } {
            if let Some(event) = self.next_event().await? {
                events.push(event);
            }
        }
        Ok(Opened {
            events: std::mem::take(events),
            session_id,
        })
    }

    /// `session.list` on an initialized connection that asked for
    /// capability `sessions`.
    pub async fn list_sessions(
        &mut self,
        cwd: Option<String>,
        limit: Option<usize>,
    ) -> Result<Vec<StoredSession>> {
        let request = self
            .send(ClientMessage::SessionList(SessionList { cwd, limit }))
            .await?;
        match self.answer(&request).await?.body {
            EventBody::SessionListed { sessions } => Ok(sessions),
            other => bail!("unexpected answer to session.list: {}", other.type_name()),
        }
    }

    /// `session.delete`.
    pub async fn delete_session(&mut self, session_id: &str) -> Result<()> {
        let request = self
            .send(ClientMessage::SessionDelete(SessionDelete {
                session_id: session_id.into(),
            }))
            .await?;
        self.answer(&request).await.map(drop)
    }

    /// `session.detach` (capability `detach`): the session outlives this
    /// connection.
    pub async fn detach_session(&mut self, session_id: &str) -> Result<()> {
        let request = self
            .send(ClientMessage::SessionDetach(scv_protocol::SessionDetach {
                session_id: session_id.into(),
            }))
            .await?;
        self.answer(&request).await.map(drop)
    }

    /// `session.attach` (capability `detach`): `session.attached`, then
    /// the queue's snapshot and the transcript (the approvals still
    /// waiting and live events follow as events).
    pub async fn attach_session(&mut self, session_id: &str) -> Result<Vec<Event>> {
        let request = self
            .send(ClientMessage::SessionAttach(scv_protocol::SessionAttach {
                session_id: session_id.into(),
            }))
            .await?;
        let mut events = vec![self.answer(&request).await?];
        for _ in 0..2 {
            if let Some(event) = self.next_event().await? {
                events.push(event);
            }
        }
        Ok(events)
    }

    /// `session.close` (capability `detach`): cancels what runs and ends
    /// the session's life in the daemon (its journal stays).
    pub async fn close_session(&mut self, session_id: &str) -> Result<()> {
        let request = self
            .send(ClientMessage::SessionClose(scv_protocol::SessionClose {
                session_id: session_id.into(),
            }))
            .await?;
        self.answer(&request).await.map(drop)
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
                bail!(
                    "the SCV daemon refused: {}: {}",
                    crate::text::error_words(error.code),
                    error.message
                );
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
