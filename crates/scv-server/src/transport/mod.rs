//! Bytes in and out of a connection: frames read with
//! [`scv_protocol::FrameCodec`] without a buffer held between them, the
//! bounded writer queue, and the serialization of events into frames.

pub(crate) mod reader;
pub(crate) mod writer;

pub(crate) use reader::FrameReader;
pub(crate) use writer::{spawn_writer, Outbound, SendError};

use bytes::Bytes;
use scv_protocol::EventRef;

/// Serializes one event into one frame (no newline). Events are plain data,
/// so serialization cannot fail.
pub(crate) fn encode(event: EventRef<'_>) -> Bytes {
    let mut buf = Vec::with_capacity(160);
    #[allow(clippy::expect_used)] // plain data with string keys always serializes
    serde_json::to_writer(&mut buf, &event).expect("events always serialize");
    Bytes::from(buf)
}
