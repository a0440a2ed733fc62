//! The per-connection writer: one task drains a queue bounded by 256 frames
//! and by bytes, writing through a buffer that is flushed whenever the queue
//! runs dry. Producers wait for capacity (nothing is dropped); a wait longer
//! than three seconds, or a failed write, trips the connection's `failed`
//! token so the connection enters cleanup.

use bytes::Bytes;
use scv_protocol::limits::{WRITER_QUEUE_BYTES, WRITER_QUEUE_FRAMES};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The writer's buffer. Small, because a daemon holds one per connection;
/// bursts are still batched into one write per buffer-full.
const WRITE_BUFFER_BYTES: usize = 64 * 1024;

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

async fn drain<W: AsyncWrite + Unpin>(
    sink: W,
    mut rx: mpsc::Receiver<Queued>,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER_BYTES, sink);
    while let Some(frame) = rx.recv().await {
        write_frame(&mut out, frame).await?;
        // Batch whatever is queued before paying for a flush; one yield lets
        // a producer that is mid-burst add to the batch.
        let mut yielded = false;
        loop {
            while let Ok(frame) = rx.try_recv() {
                write_frame(&mut out, frame).await?;
            }
            if yielded {
                break;
            }
            yielded = true;
            tokio::task::yield_now().await;
        }
        out.flush().await?;
    }
    out.shutdown().await.or_else(|err| match err.kind() {
        std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::NotConnected => Ok(()),
        _ => Err(err),
    })
}

async fn write_frame<W: AsyncWrite + Unpin>(
    out: &mut BufWriter<W>,
    frame: Queued,
) -> std::io::Result<()> {
    out.write_all(&frame.data).await?;
    out.write_all(b"\n").await
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
