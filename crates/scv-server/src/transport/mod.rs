//! Bytes in and out of a connection: the bounded writer queue and the
//! serialization of events into frames. Reading uses
//! [`scv_protocol::FrameCodec`] directly.

pub mod writer;

pub use writer::{spawn_writer, Outbound, SendError};

use bytes::Bytes;
use scv_protocol::EventRef;

/// Serializes one event into one frame (no newline). Events are plain data,
/// so serialization cannot fail.
pub fn encode(event: EventRef<'_>) -> Bytes {
    let mut buf = Vec::with_capacity(160);
    serde_json::to_writer(&mut buf, &event).expect("events always serialize");
    Bytes::from(buf)
}
