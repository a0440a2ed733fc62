//! The ACP transport: newline-delimited JSON-RPC on stdin/stdout, with a
//! cap on input lines (the SDK's own transports have none) and a count of
//! `session/update` notifications not yet written, so the bridge stops
//! reading the daemon while an editor is not reading stdout.

use agent_client_protocol::Lines;
use futures_util::{Sink, Stream, StreamExt};
use scv_protocol::{Frame, FrameCodec};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;
use tokio_util::codec::FramedRead;

/// Largest input line read. A longer one is skipped to its newline and
/// answered with a JSON-RPC parse error (it was not read, so its id is
/// unknown). Room for a prompt well past the daemon's 256 KiB prompt cap,
/// so an oversized prompt still gets its own, precise error, and for a
/// prompt's images at their bound (base64, as the daemon's frame for them).
pub const MAX_LINE_BYTES: usize = scv_protocol::images::MAX_IMAGES_CLIENT_FRAME_BYTES;

/// `session/update` notifications handed to the SDK but not yet written
/// to stdout. At this many the bridge stops reading daemon events (the
/// daemon then holds its turns at its own bounded writer queue) until the
/// editor reads.
pub const MAX_UNWRITTEN_UPDATES: usize = 256;

/// How a `session/update` notification line starts as the SDK writes it
/// (`jsonrpc`, then `method`; tested in crates/scv-tui/tests/acp.rs).
const UPDATE_PREFIX: &str = r#"{"jsonrpc":"2.0","method":"session/update""#;

/// The count of unwritten `session/update` lines, and a wake-up when one
/// is written.
#[derive(Debug, Default)]
pub struct Outflow {
    unwritten: AtomicUsize,
    written: Notify,
}

impl Outflow {
    /// One more notification was handed to the SDK.
    pub fn sent(&self) {
        self.unwritten.fetch_add(1, Ordering::AcqRel);
    }

    fn wrote_update(&self) {
        let _ = self
            .unwritten
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        self.written.notify_waiters();
    }

    /// Fewer than [`MAX_UNWRITTEN_UPDATES`] are waiting.
    pub fn has_room(&self) -> bool {
        self.unwritten.load(Ordering::Acquire) < MAX_UNWRITTEN_UPDATES
    }

    /// Resolves once [`Outflow::has_room`] holds.
    pub async fn room(&self) {
        loop {
            // Registered before the check, so no write is missed.
            let written = self.written.notified();
            if self.has_room() {
                return;
            }
            written.await;
        }
    }
}

type LineSink = Pin<Box<dyn Sink<String, Error = io::Error> + Send>>;
type LineStream = Pin<Box<dyn Stream<Item = io::Result<String>> + Send>>;

/// The transport on this process's stdin and stdout.
pub fn transport(outflow: Arc<Outflow>) -> Lines<LineSink, LineStream> {
    let incoming = FramedRead::new(tokio::io::stdin(), FrameCodec::new(MAX_LINE_BYTES))
        .filter_map(|frame| std::future::ready(incoming_line(frame)));
    let outgoing = futures_util::sink::unfold(
        (tokio::io::stdout(), outflow),
        |(mut stdout, outflow), line: String| async move {
            let update = line.starts_with(UPDATE_PREFIX);
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            stdout.write_all(&bytes).await?;
            stdout.flush().await?;
            if update {
                outflow.wrote_update();
            }
            Ok::<_, io::Error>((stdout, outflow))
        },
    );
    Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

/// One input frame as the line the SDK parses; blank lines are skipped.
fn incoming_line(frame: io::Result<Frame>) -> Option<io::Result<String>> {
    match frame {
        Err(err) => Some(Err(err)),
        Ok(Frame::Line(bytes)) if bytes.iter().all(u8::is_ascii_whitespace) => None,
        Ok(Frame::Line(bytes)) => Some(Ok(String::from_utf8_lossy(&bytes).into_owned())),
        Ok(Frame::TooLong(size)) => {
            tracing::warn!("skipped an input line of {size} bytes (limit {MAX_LINE_BYTES})");
            // Not JSON: the SDK answers it with a parse error.
            Some(Ok(format!(
                "input line of {size} bytes exceeds the {MAX_LINE_BYTES}-byte limit and was skipped"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn oversized_and_blank_lines() {
        assert!(incoming_line(Ok(Frame::Line(" \t".into()))).is_none());
        let line = incoming_line(Ok(Frame::TooLong(9_000_000)))
            .unwrap()
            .unwrap();
        assert!(serde_json::from_str::<serde_json::Value>(&line).is_err());
        assert!(line.contains("9000000 bytes"), "{line}");
        let line = incoming_line(Ok(Frame::Line("{}".into())))
            .unwrap()
            .unwrap();
        assert_eq!(line, "{}");
    }

    #[tokio::test]
    async fn outflow_waits_for_room() {
        let outflow = Arc::new(Outflow::default());
        for _ in 0..MAX_UNWRITTEN_UPDATES {
            outflow.sent();
        }
        assert!(!outflow.has_room());
        let waiter = tokio::spawn({
            let outflow = outflow.clone();
            async move { outflow.room().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        outflow.wrote_update();
        waiter.await.unwrap();
        assert!(outflow.has_room());
        // More writes than sends never wrap around.
        for _ in 0..2 * MAX_UNWRITTEN_UPDATES {
            outflow.wrote_update();
        }
        assert_eq!(outflow.unwritten.load(Ordering::Acquire), 0);
    }
}
