//! A typed protocol connection: send [`ClientFrame`]s, read [`Event`]s.
//! Incoming lines are capped at the protocol's server-frame limit.

use anyhow::{bail, Context, Result};
use futures_util::StreamExt;
use scv_protocol::limits::MAX_SERVER_FRAME_BYTES;
use scv_protocol::{ClientFrame, ClientMessage, Event, Frame, FrameCodec};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::FramedRead;

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
        let frame = ClientFrame {
            request_id: request_id.clone(),
            message,
        };
        let mut line = serde_json::to_vec(&frame)?;
        line.push(b'\n');
        self.send_raw(&line).await?;
        Ok(request_id)
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
