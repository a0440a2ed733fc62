//! The per-connection writer: one task drains a queue bounded by 256 frames
//! and by bytes, writing what is queued in vectored writes straight from
//! the frames. Producers wait for capacity (nothing is dropped); a wait longer
//! than three seconds, or a failed write, trips the connection's `failed`
//! token so the connection enters cleanup.

use bytes::Bytes;
use scv_protocol::limits::{WRITER_QUEUE_BYTES, WRITER_QUEUE_FRAMES};
use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How long a send may wait for queue capacity before the connection is
/// considered stuck.
pub(crate) const SEND_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SendError {
    #[error("the connection is closed")]
    Closed,
    #[error("the client stopped reading for {}s", SEND_TIMEOUT.as_secs())]
    Timeout,
}

struct Queued {
    /// One frame, or several joined by newlines (a batch); the writer
    /// ends it with a newline.
    data: Bytes,
    /// Queue room (its frames, its bytes) held until it is written.
    _room: (OwnedSemaphorePermit, OwnedSemaphorePermit),
}

/// The queue between a connection's producers and its writer. A deque
/// rather than a channel: a channel keeps the blocks a burst made it
/// allocate for as long as the connection lives (1,000 connections that
/// had streamed held 2.6 MiB of them, scattered through the heap where
/// they kept freed pages from going back); the deque is freed whenever
/// the writer empties it.
struct Queue {
    pending: Mutex<Pending>,
    /// Wakes the writer: a frame was queued or the last sender went.
    ready: Notify,
    /// Every [`Outbound`] clone is gone: write what is left, then stop.
    senders_gone: AtomicBool,
    /// Room for frames ([`WRITER_QUEUE_FRAMES`]) and bytes
    /// ([`WRITER_QUEUE_BYTES`]); closed when the writer stops, which fails
    /// every send, waiting or not.
    frame_room: Arc<Semaphore>,
    byte_room: Arc<Semaphore>,
}

#[derive(Default)]
struct Pending {
    frames: VecDeque<Queued>,
    /// The writer found nothing and waits: the next push wakes it. While
    /// it is busy, pushes skip the wake-up (it looks again before waiting).
    writer_waiting: bool,
    /// The writer stopped (see [`Queue::close`]).
    closed: bool,
}

impl Queue {
    /// Queues a frame; false (and the frame dropped) once the writer stopped.
    fn push(&self, frame: Queued) -> bool {
        let wake = {
            let mut pending = crate::sync::lock(&self.pending);
            if pending.closed {
                return false;
            }
            pending.frames.push_back(frame);
            std::mem::take(&mut pending.writer_waiting)
        };
        if wake {
            self.ready.notify_one();
        }
        true
    }

    /// Moves every queued frame into `into` (empty), giving the queue
    /// `into`'s room to refill. When nothing is queued both are freed (a
    /// connection whose writer is dry holds no queue memory) and the
    /// writer is marked as waiting.
    fn take_all(&self, into: &mut VecDeque<Queued>) {
        let mut pending = crate::sync::lock(&self.pending);
        if pending.frames.is_empty() {
            pending.frames = VecDeque::new();
            pending.writer_waiting = true;
            *into = VecDeque::new();
        } else {
            std::mem::swap(&mut pending.frames, into);
        }
    }

    /// The writer stopped: every send fails from now on, and what was
    /// queued is dropped at once (not when the last sender goes).
    fn close(&self) {
        self.frame_room.close();
        self.byte_room.close();
        let dropped = {
            let mut pending = crate::sync::lock(&self.pending);
            pending.closed = true;
            std::mem::take(&mut pending.frames)
        };
        drop(dropped);
    }
}

/// Held by every [`Outbound`] clone; the last one dropped tells the writer.
struct Senders(Arc<Queue>);

impl Drop for Senders {
    fn drop(&mut self) {
        self.0.senders_gone.store(true, Ordering::Release);
        self.0.ready.notify_one();
    }
}

/// A cloneable handle that queues frames for one connection.
#[derive(Clone)]
pub(crate) struct Outbound {
    queue: Arc<Senders>,
    failed: CancellationToken,
}

impl Outbound {
    /// Whether `other` queues for the same connection.
    pub(crate) fn same(&self, other: &Outbound) -> bool {
        Arc::ptr_eq(&self.queue, &other.queue)
    }

    /// Queues one frame, waiting for room in the queue. Cancel-safe: dropping
    /// the future gives back whatever it had reserved.
    pub(crate) async fn send(&self, data: Bytes) -> Result<(), SendError> {
        self.send_frames(data, 1).await
    }

    /// Queues `frames` frames at once (`data`: them joined by newlines, at
    /// most [`WRITER_QUEUE_FRAMES`]), taking their room in one step: a
    /// burst of deltas costs one wake-up and one reservation, not one per
    /// delta. Cancel-safe like [`Outbound::send`].
    pub(crate) async fn send_frames(&self, data: Bytes, frames: usize) -> Result<(), SendError> {
        // Once the connection failed, nothing waits: cleanup stays bounded
        // however many sessions still have something to say.
        if self.failed.is_cancelled() {
            return Err(SendError::Closed);
        }
        let queue = &self.queue.0;
        let wanted = data.len().clamp(1, WRITER_QUEUE_BYTES) as u32;
        let frames = frames.clamp(1, WRITER_QUEUE_FRAMES) as u32;
        // Fast path: room now, so no timer is armed.
        let now = Arc::clone(&queue.frame_room)
            .try_acquire_many_owned(frames)
            .ok()
            .and_then(|frame| {
                let bytes = Arc::clone(&queue.byte_room).try_acquire_many_owned(wanted);
                Some((frame, bytes.ok()?))
            });
        let room = match now {
            Some(room) => Ok(room),
            None => {
                let wait = async {
                    let frame = Arc::clone(&queue.frame_room)
                        .acquire_many_owned(frames)
                        .await?;
                    let bytes = Arc::clone(&queue.byte_room)
                        .acquire_many_owned(wanted)
                        .await?;
                    Ok::<_, tokio::sync::AcquireError>((frame, bytes))
                };
                match tokio::time::timeout(SEND_TIMEOUT, wait).await {
                    Ok(Ok(room)) => Ok(room),
                    Ok(Err(_)) => Err(SendError::Closed),
                    Err(_) => Err(SendError::Timeout),
                }
            }
        };
        let result = room.and_then(|room| match queue.push(Queued { data, _room: room }) {
            true => Ok(()),
            false => Err(SendError::Closed),
        });
        if result.is_err() {
            self.failed.cancel();
        }
        result
    }
}

/// Starts the writer task for `sink`. The task ends when every [`Outbound`]
/// clone is dropped (after writing what was queued) or when a write fails.
pub(crate) fn spawn_writer<W>(sink: W, failed: CancellationToken) -> (Outbound, JoinHandle<()>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let queue = Arc::new(Queue {
        pending: Mutex::new(Pending::default()),
        ready: Notify::new(),
        senders_gone: AtomicBool::new(false),
        frame_room: Arc::new(Semaphore::new(WRITER_QUEUE_FRAMES)),
        byte_room: Arc::new(Semaphore::new(WRITER_QUEUE_BYTES)),
    });
    let outbound = Outbound {
        queue: Arc::new(Senders(Arc::clone(&queue))),
        failed: failed.clone(),
    };
    // Closes the queue however the task ends (aborted included, even
    // before it first ran), so no producer waits for room that will never
    // come and nothing queued outlives the writer.
    struct CloseOnDrop(Arc<Queue>);
    impl Drop for CloseOnDrop {
        fn drop(&mut self) {
            self.0.close();
        }
    }
    let queue = CloseOnDrop(queue);
    let task = tokio::spawn(async move {
        // A sink without vectored writes (tokio's stdout on a terminal or
        // a file) would take one write per slice: frames are gathered in
        // a buffer for it instead.
        let drained = if sink.is_write_vectored() {
            drain(sink, &queue.0).await
        } else {
            drain(tokio::io::BufWriter::new(sink), &queue.0).await
        };
        if let Err(err) = drained {
            tracing::debug!("connection writer stopped: {err}");
            failed.cancel();
        }
    });
    (outbound, task)
}

/// Writes queued frames until every sender is gone. Whatever is queued
/// when the writer wakes goes out in vectored writes straight from the
/// frames (no copy into a buffer of its own), up to [`FRAMES_PER_WRITE`]
/// frames each: a stream's batches cost one write per wake-up, not one
/// per frame. The queue's memory is freed whenever it runs dry, so an
/// idle connection holds none.
async fn drain<W: AsyncWrite + Unpin>(mut sink: W, queue: &Queue) -> std::io::Result<()> {
    let mut batch: VecDeque<Queued> = VecDeque::new();
    loop {
        // Read before taking: a sender gone then has queued its last.
        let senders_gone = queue.senders_gone.load(Ordering::Acquire);
        queue.take_all(&mut batch);
        if batch.is_empty() {
            if senders_gone {
                break;
            }
            queue.ready.notified().await;
            continue;
        }
        write_frames(&mut sink, &mut batch).await?;
        // One yield lets producers woken by the last write queue more,
        // which go out before the flush.
        tokio::task::yield_now().await;
        queue.take_all(&mut batch);
        write_frames(&mut sink, &mut batch).await?;
        sink.flush().await?;
    }
    sink.shutdown().await.or_else(|err| match err.kind() {
        std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::NotConnected => Ok(()),
        _ => Err(err),
    })
}

/// Frames in one vectored write, at most (two slices each, within the
/// kernel's 1,024).
const FRAMES_PER_WRITE: usize = 256;

/// Writes `frames`, each followed by a newline, and lets them go (their
/// queue room with them) as each write completes.
async fn write_frames<W: AsyncWrite + Unpin>(
    sink: &mut W,
    frames: &mut VecDeque<Queued>,
) -> std::io::Result<()> {
    while !frames.is_empty() {
        let count = frames.len().min(FRAMES_PER_WRITE);
        let mut slices: Vec<IoSlice<'_>> = frames
            .iter()
            .take(count)
            .flat_map(|frame| [IoSlice::new(&frame.data), IoSlice::new(b"\n")])
            .collect();
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            let written = sink.write_vectored(rest).await?;
            if written == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            IoSlice::advance_slices(&mut rest, written);
        }
        drop(slices);
        frames.drain(..count);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_batch_arrives_as_its_frames_and_holds_their_room() {
        let (client, server) = tokio::io::duplex(1 << 16);
        let failed = CancellationToken::new();
        let (out, task) = spawn_writer(server, failed.clone());
        out.send_frames(Bytes::from_static(b"{\"n\":0}\n{\"n\":1}\n{\"n\":2}"), 3)
            .await
            .unwrap();
        out.send(Bytes::from_static(b"{\"n\":3}")).await.unwrap();
        drop(out);
        let mut text = String::new();
        let mut client = client;
        client.read_to_string(&mut text).await.unwrap();
        task.await.unwrap();
        assert_eq!(text, "{\"n\":0}\n{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n");
        assert!(!failed.is_cancelled());
    }

    /// Large frames go out from where they lie, small ones through the
    /// buffer, in order, whole, however little each write takes.
    #[tokio::test]
    async fn large_and_small_frames_keep_their_order_through_partial_writes() {
        let (client, server) = tokio::io::duplex(1000);
        let failed = CancellationToken::new();
        let (out, task) = spawn_writer(server, failed.clone());
        let reader = tokio::spawn(async move {
            let mut text = String::new();
            let mut client = client;
            client.read_to_string(&mut text).await.unwrap();
            text
        });
        let mut expected = String::new();
        for i in 0..40 {
            let frame = if i % 3 == 0 {
                format!("{{\"big\":\"{}\"}}", "x".repeat(8 * 1024 + i))
            } else {
                format!("{{\"n\":{i}}}")
            };
            expected.push_str(&frame);
            expected.push('\n');
            out.send(Bytes::from(frame)).await.unwrap();
        }
        drop(out);
        task.await.unwrap();
        assert_eq!(reader.await.unwrap(), expected);
        assert!(!failed.is_cancelled());
    }

    #[tokio::test]
    async fn frames_arrive_in_order_with_newlines() {
        let (client, server) = tokio::io::duplex(1024);
        let failed = CancellationToken::new();
        let (out, task) = spawn_writer(server, failed.clone());
        for i in 0..100 {
            out.send(Bytes::from(format!("{{\"n\":{i}}}")))
                .await
                .unwrap();
        }
        drop(out);
        let mut text = String::new();
        let mut client = client;
        client.read_to_string(&mut text).await.unwrap();
        task.await.unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 100);
        assert_eq!(lines[99], "{\"n\":99}");
        assert!(!failed.is_cancelled());
    }

    /// Aborted even before it first ran: sends fail at once (no 3 s wait
    /// for room that never comes) and nothing is kept for them.
    #[tokio::test]
    async fn an_aborted_writer_fails_every_send_at_once() {
        let (_client, server) = tokio::io::duplex(64);
        let failed = CancellationToken::new();
        let (out, task) = spawn_writer(server, failed.clone());
        task.abort();
        let _ = task.await;
        let sent = tokio::time::timeout(
            Duration::from_millis(500),
            out.send(Bytes::from_static(b"{}")),
        )
        .await;
        assert_eq!(sent, Ok(Err(SendError::Closed)));
        assert!(failed.is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn a_reader_that_stops_trips_the_failed_token() {
        let (_client, server) = tokio::io::duplex(64);
        let failed = CancellationToken::new();
        let (out, _task) = spawn_writer(server, failed.clone());
        let frame = Bytes::from(vec![b'x'; 1024]);
        let mut result = Ok(());
        for _ in 0..(4 * WRITER_QUEUE_FRAMES) {
            result = out.send(frame.clone()).await;
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result, Err(SendError::Timeout));
        assert!(failed.is_cancelled());
    }
}
