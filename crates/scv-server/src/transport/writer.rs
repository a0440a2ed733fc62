//! The per-connection writer: one task drains a queue bounded by 256 frames
//! and by bytes, writing through a buffer that is flushed and freed whenever
//! the queue runs dry. Producers wait for capacity (nothing is dropped); a wait longer
//! than three seconds, or a failed write, trips the connection's `failed`
//! token so the connection enters cleanup.

use bytes::Bytes;
use scv_protocol::limits::{WRITER_QUEUE_BYTES, WRITER_QUEUE_FRAMES};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The writer's buffer. Small, because a daemon holds one per connection;
/// bursts are still batched into one write per buffer-full.
const WRITE_BUFFER_BYTES: usize = 64 * 1024;

/// The buffer a burst starts with (one allocation for the usual burst).
const BURST_BUFFER_BYTES: usize = 4 * 1024;

/// How long a send may wait for queue capacity before the connection is
/// considered stuck.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("the connection is closed")]
    Closed,
    #[error("the client stopped reading for {}s", SEND_TIMEOUT.as_secs())]
    Timeout,
}

struct Queued {
    data: Bytes,
    /// Byte budget held until the frame is written.
    _bytes: OwnedSemaphorePermit,
}

/// A cloneable handle that queues frames for one connection.
#[derive(Clone)]
pub struct Outbound {
    frames: mpsc::Sender<Queued>,
    bytes: Arc<Semaphore>,
    failed: CancellationToken,
}

impl Outbound {
    /// Queues one frame, waiting for room in the queue. Cancel-safe: dropping
    /// the future gives back whatever it had reserved.
    pub async fn send(&self, data: Bytes) -> Result<(), SendError> {
        // Once the connection failed, nothing waits: cleanup stays bounded
        // however many sessions still have something to say.
        if self.failed.is_cancelled() {
            return Err(SendError::Closed);
        }
        let wanted = data.len().clamp(1, WRITER_QUEUE_BYTES) as u32;
        // Fast path: room now, so no timer is armed.
        if let Ok(permit) = self.frames.try_reserve() {
            if let Ok(bytes) = Arc::clone(&self.bytes).try_acquire_many_owned(wanted) {
                permit.send(Queued {
                    data,
                    _bytes: bytes,
                });
                return Ok(());
            }
        }
        let queue = async {
            let permit = self.frames.reserve().await.map_err(|_| SendError::Closed)?;
            let bytes = Arc::clone(&self.bytes)
                .acquire_many_owned(wanted)
                .await
                .map_err(|_| SendError::Closed)?;
            permit.send(Queued {
                data,
                _bytes: bytes,
            });
            Ok(())
        };
        let result = match tokio::time::timeout(SEND_TIMEOUT, queue).await {
            Ok(result) => result,
            Err(_) => Err(SendError::Timeout),
        };
        if result.is_err() {
            self.failed.cancel();
        }
        result
    }
}

/// Starts the writer task for `sink`. The task ends when every [`Outbound`]
/// clone is dropped (after writing what was queued) or when a write fails.
pub fn spawn_writer<W>(sink: W, failed: CancellationToken) -> (Outbound, JoinHandle<()>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(WRITER_QUEUE_FRAMES);
    let bytes = Arc::new(Semaphore::new(WRITER_QUEUE_BYTES));
    let outbound = Outbound {
        frames: tx,
        bytes: Arc::clone(&bytes),
        failed: failed.clone(),
    };
    let task = tokio::spawn(async move {
        if let Err(err) = drain(sink, rx).await {
            tracing::debug!("connection writer stopped: {err}");
            failed.cancel();
        }
        // Wake producers still waiting for byte budget.
        bytes.close();
    });
    (outbound, task)
}

/// Writes queued frames until every sender is gone. Frames that queue up
/// while a write is under way go out together, one write per
/// [`WRITE_BUFFER_BYTES`]; a frame that size or larger is written as it
/// is. The buffer is freed whenever the queue runs dry, so an idle
/// connection holds none of it (1,000 connections that had streamed kept
/// 64 KiB each resident while they stayed open).
async fn drain<W: AsyncWrite + Unpin>(
    mut sink: W,
    mut rx: mpsc::Receiver<Queued>,
) -> std::io::Result<()> {
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(frame) = rx.recv().await {
        buffer.reserve(BURST_BUFFER_BYTES.max(frame.data.len() + 1));
        let mut next = Some(frame);
        // One yield lets producers woken by the last write queue more.
        let mut yielded = false;
        loop {
            while let Some(frame) = next.take().or_else(|| rx.try_recv().ok()) {
                if frame.data.len() + 1 >= WRITE_BUFFER_BYTES {
                    write_out(&mut sink, &mut buffer).await?;
                    sink.write_all(&frame.data).await?;
                    sink.write_all(b"\n").await?;
                    continue;
                }
                if buffer.len() + frame.data.len() + 1 > WRITE_BUFFER_BYTES {
                    write_out(&mut sink, &mut buffer).await?;
                }
                buffer.extend_from_slice(&frame.data);
                buffer.push(b'\n');
            }
            if yielded {
                break;
            }
            yielded = true;
            tokio::task::yield_now().await;
        }
        write_out(&mut sink, &mut buffer).await?;
        sink.flush().await?;
        buffer = Vec::new();
    }
    sink.shutdown().await.or_else(|err| match err.kind() {
        std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::NotConnected => Ok(()),
        _ => Err(err),
    })
}

async fn write_out<W: AsyncWrite + Unpin>(
    sink: &mut W,
    buffer: &mut Vec<u8>,
) -> std::io::Result<()> {
    if !buffer.is_empty() {
        sink.write_all(buffer).await?;
        buffer.clear();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

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
