//! The small I/O driver beside the sans-I/O [`crate::SessionClient`]: the
//! handshake, a reader on a task of its own that hands events over in
//! batches through a bounded channel, and a writer that sends a batch of
//! requests in one write.
//!
//! The reader reads everything the socket has ready, then hands it over
//! as one [`Batch`]: a front end that keeps up gets each event as it
//! comes; one that falls behind gets what arrived meanwhile at once (one
//! render, one write per batch), so the server never waits on it. Past
//! [`MAX_BATCH_EVENTS`] or [`MAX_BATCH_BYTES`] waiting, the reader stops
//! reading until the front end takes them (the server's backpressure rule
//! then applies) and the batch says it lagged. Nothing is ever dropped.

use crate::connection::{frame_line, Connection, Open, Opened};
use crate::session::Request;
use futures_util::{FutureExt, StreamExt};
use scv_protocol::{Capabilities, Event, Frame, FrameCodec, PeerInfo};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

/// Events read and not yet taken, at most.
pub const MAX_BATCH_EVENTS: usize = 65_536;
/// Bytes of events read and not yet taken, at most.
pub const MAX_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// [`Batch::closed`] when the daemon ended the connection cleanly.
pub const CLOSED: &str = "the SCV daemon closed the connection";

/// Events read together.
#[derive(Debug, Default)]
pub struct Batch {
    pub events: Vec<Event>,
    /// The front end fell behind: the reader stopped reading for a while.
    pub lagged: bool,
    /// The connection ended, and why (the last batch).
    pub closed: Option<String>,
}

/// Reads `reader` into batches sent as `(key, batch)` until the
/// connection ends (a last batch with `closed`) or `tx` is dropped. For a
/// front end that multiplexes connections (ClawBot's chats) on one
/// channel; [`Driver`] runs it for one.
pub async fn read_batches<R, K>(
    reader: FramedRead<R, FrameCodec>,
    key: K,
    tx: mpsc::Sender<(K, Batch)>,
) where
    R: AsyncRead + Unpin,
    K: Clone,
{
    read_bounded(reader, key, tx, (MAX_BATCH_EVENTS, MAX_BATCH_BYTES)).await
}

/// [`read_batches`] with its bounds (events, bytes) given.
async fn read_bounded<R, K>(
    mut reader: FramedRead<R, FrameCodec>,
    key: K,
    tx: mpsc::Sender<(K, Batch)>,
    (max_events, max_bytes): (usize, usize),
) where
    R: AsyncRead + Unpin,
    K: Clone,
{
    let mut batch = Batch::default();
    let mut bytes = 0usize;
    loop {
        let behind = batch.events.len() >= max_events || bytes >= max_bytes;
        if batch.closed.is_some() || behind {
            batch.lagged |= behind;
            let closed = batch.closed.is_some();
            if tx
                .send((key.clone(), std::mem::take(&mut batch)))
                .await
                .is_err()
                || closed
            {
                return;
            }
            bytes = 0;
            continue;
        }
        tokio::select! {
            permit = tx.reserve(), if !batch.events.is_empty() => {
                let Ok(permit) = permit else { return };
                permit.send((key.clone(), std::mem::take(&mut batch)));
                bytes = 0;
            }
            frame = reader.next() => {
                take(frame, &mut batch, &mut bytes);
                // What the socket already gave, without waiting.
                while batch.closed.is_none() && batch.events.len() < max_events {
                    match reader.next().now_or_never() {
                        Some(frame) => take(frame, &mut batch, &mut bytes),
                        None => break,
                    }
                }
            }
        }
    }
}

/// One frame read into `batch`. An event this client cannot parse ends
/// the connection, as [`Connection::next_event`] does: a server sends a
/// client only the events it asked for.
fn take(frame: Option<Result<Frame, std::io::Error>>, batch: &mut Batch, bytes: &mut usize) {
    match frame {
        Some(Ok(Frame::Line(line))) => match serde_json::from_slice::<Event>(&line) {
            Ok(event) => {
                *bytes += line.len();
                batch.events.push(event);
            }
            Err(err) => {
                let start: String = String::from_utf8_lossy(&line).chars().take(200).collect();
                batch.closed = Some(format!("bad event ({err}): {start}"));
            }
        },
        Some(Ok(Frame::TooLong(n))) => {
            batch.closed = Some(format!("a server frame of {n} bytes exceeds the cap"))
        }
        Some(Err(err)) => batch.closed = Some(format!("reading from the SCV daemon: {err}")),
        None => batch.closed = Some(CLOSED.into()),
    }
}

/// One connection, driven: its reader on a task of its own (aborted when
/// the driver goes), its writer here.
pub struct Driver<W> {
    writer: W,
    batches: mpsc::Receiver<((), Batch)>,
    reader: tokio::task::JoinHandle<()>,
}

impl<W: AsyncWrite + Unpin> Driver<W> {
    /// `initialize` (as `client`, asking for `capabilities`) and the
    /// session `open` says, then the driver: the handshake's events are
    /// in the returned [`Opened`].
    pub async fn open<R>(
        mut conn: Connection<R, W>,
        client: Option<PeerInfo>,
        capabilities: Option<Capabilities>,
        open: Open,
    ) -> anyhow::Result<(Driver<W>, Opened)>
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let opened = conn.open(client, capabilities, open).await?;
        Ok((Driver::start(conn), opened))
    }

    /// Drives `conn` from here on.
    pub fn start<R>(conn: Connection<R, W>) -> Driver<W>
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let (reader, writer) = conn.into_parts();
        let (tx, batches) = mpsc::channel(4);
        let reader = tokio::spawn(read_batches(reader, (), tx));
        Driver {
            writer,
            batches,
            reader,
        }
    }

    /// The next batch; `None` once the last (closed) one was taken.
    pub async fn next(&mut self) -> Option<Batch> {
        self.batches.recv().await.map(|((), batch)| batch)
    }

    /// Sends `requests` in one write.
    pub async fn send(&mut self, requests: &[Request]) -> std::io::Result<()> {
        if requests.is_empty() {
            return Ok(());
        }
        let mut lines = Vec::new();
        for request in requests {
            lines.extend(
                frame_line(request.request_id.clone(), request.message.clone())
                    .map_err(std::io::Error::other)?,
            );
        }
        self.writer.write_all(&lines).await?;
        self.writer.flush().await
    }

    /// Closes the sending half (the server sees EOF).
    pub async fn close_write(&mut self) -> std::io::Result<()> {
        self.writer.shutdown().await
    }
}

impl<W> Drop for Driver<W> {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use scv_protocol::limits::MAX_SERVER_FRAME_BYTES;
    use scv_protocol::EventBody;

    fn line(n: usize) -> String {
        let event = Event::reply(
            Some(format!("r{n}")),
            EventBody::AssistantDelta {
                content: format!("delta {n}"),
            },
        );
        format!("{}\n", serde_json::to_string(&event).unwrap())
    }

    /// A reader over `text`, written (and closed) before reading starts.
    async fn reader(text: String) -> FramedRead<tokio::io::DuplexStream, FrameCodec> {
        let (mut ours, theirs) = tokio::io::duplex(1 << 20);
        ours.write_all(text.as_bytes()).await.unwrap();
        drop(ours);
        FramedRead::new(theirs, FrameCodec::new(MAX_SERVER_FRAME_BYTES))
    }

    #[tokio::test]
    async fn what_is_ready_comes_as_one_batch_then_the_end() {
        let text: String = (0..50).map(line).collect();
        let (tx, mut rx) = mpsc::channel(4);
        tokio::spawn(read_batches(reader(text).await, 7u8, tx));
        let (key, batch) = rx.recv().await.unwrap();
        assert_eq!(key, 7);
        assert_eq!(batch.events.len(), 50, "every ready event at once");
        assert_eq!(batch.events[49].request_id.as_deref(), Some("r49"));
        assert!(!batch.lagged);
        assert_eq!(batch.closed.as_deref(), Some(CLOSED));
        assert!(rx.recv().await.is_none(), "nothing after the last batch");
    }

    #[tokio::test]
    async fn a_front_end_behind_gets_bounded_batches_marked_lagged_and_loses_nothing() {
        let text: String = (0..35).map(line).collect();
        let (tx, mut rx) = mpsc::channel(1);
        tokio::spawn(read_bounded(reader(text).await, (), tx, (10, usize::MAX)));
        let mut seen = Vec::new();
        let mut lagged = 0;
        while let Some(((), batch)) = rx.recv().await {
            assert!(batch.events.len() <= 10, "{}", batch.events.len());
            lagged += usize::from(batch.lagged);
            seen.extend(batch.events.into_iter().map(|e| e.request_id.unwrap()));
        }
        let want: Vec<String> = (0..35).map(|n| format!("r{n}")).collect();
        assert_eq!(seen, want, "every event, in order");
        assert!(lagged >= 1, "the reader said it stopped reading");
    }

    #[tokio::test]
    async fn an_event_this_client_cannot_read_ends_the_connection() {
        let text = format!("{}{{\"type\":\"no.such.event\"}}\n{}", line(0), line(1));
        let (tx, mut rx) = mpsc::channel(4);
        tokio::spawn(read_batches(reader(text).await, (), tx));
        let ((), batch) = rx.recv().await.unwrap();
        assert_eq!(batch.events.len(), 1);
        let closed = batch.closed.unwrap();
        assert!(closed.starts_with("bad event"), "{closed}");
        assert!(rx.recv().await.is_none());
    }
}
