//! Bytes in and out of a connection: frames read with
//! [`scv_protocol::FrameCodec`] without a buffer held between them, the
//! bounded writer queue, and the serialization of events into frames.

pub(crate) mod reader;
pub(crate) mod writer;

pub(crate) use reader::FrameReader;
pub(crate) use writer::{spawn_writer, Outbound, SendError};

use bytes::Bytes;
use scv_protocol::{EventBody, EventRef, Parent};

/// Serializes one event into one frame (no newline). Events are plain data,
/// so serialization cannot fail.
pub(crate) fn encode(event: EventRef<'_>) -> Bytes {
    let mut buf = Vec::with_capacity(160);
    encode_into(&mut buf, event);
    Bytes::from(buf)
}

/// Serializes one event at the end of `buf` (no newline).
pub(crate) fn encode_into(buf: &mut Vec<u8>, event: EventRef<'_>) {
    if let Some(()) = encode_delta(buf, &event) {
        return;
    }
    #[allow(clippy::expect_used)] // plain data with string keys always serializes
    serde_json::to_writer(&mut *buf, &event).expect("events always serialize");
}

/// The stream's deltas, written field by field: byte for byte what serde
/// writes for them (the tests compare), without the map serializer the
/// flattened body costs — the one event sent thousands of times a turn.
fn encode_delta(buf: &mut Vec<u8>, event: &EventRef<'_>) -> Option<()> {
    let (kind, content) = match event.body {
        EventBody::AssistantDelta { content } => (DeltaKind::Answer, content),
        EventBody::ReasoningDelta { content } => (DeltaKind::Reasoning, content),
        _ => return None,
    };
    DeltaEnvelope::new(
        event.request_id,
        event.session_id,
        event.turn_id,
        event.parent,
    )
    .encode(buf, kind, content, event.seq);
    Some(())
}

/// Which delta event a streamed piece of text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeltaKind {
    /// `assistant.delta`
    Answer,
    /// `reasoning.delta`
    Reasoning,
}

/// What the deltas of one turn share: the keys and escaped ids after
/// their content (and a subagent's `parent` after their `seq`), encoded
/// once and copied for each delta of a batch (escaping three ids per
/// delta was a tenth of the stream's work).
pub(crate) struct DeltaEnvelope {
    /// `,"request_id":…,"session_id":…,"turn_id":…` (those present).
    ids: Vec<u8>,
    /// `,"parent":{…}` for a subagent's events, else empty.
    parent: Vec<u8>,
}

impl DeltaEnvelope {
    pub(crate) fn new(
        request_id: Option<&str>,
        session_id: Option<&str>,
        turn_id: Option<&str>,
        parent: Option<&Parent>,
    ) -> Self {
        let mut ids = Vec::with_capacity(128);
        for (key, value) in [
            ("request_id", request_id),
            ("session_id", session_id),
            ("turn_id", turn_id),
        ] {
            if let Some(value) = value {
                ids.extend_from_slice(b",\"");
                ids.extend_from_slice(key.as_bytes());
                ids.extend_from_slice(b"\":");
                string(&mut ids, value);
            }
        }
        let mut tail = Vec::new();
        if let Some(parent) = parent {
            tail.extend_from_slice(b",\"parent\":");
            #[allow(clippy::expect_used)] // three strings always serialize
            serde_json::to_writer(&mut tail, parent).expect("a parent serializes");
        }
        DeltaEnvelope { ids, parent: tail }
    }

    /// Bytes a delta's frame takes besides its content's.
    pub(crate) fn overhead(&self) -> usize {
        // `{"type":"reasoning.delta","content":""` + `,"seq":` + 20 digits + `}`
        64 + self.ids.len() + self.parent.len()
    }

    /// Writes one delta with `seq` at the end of `buf`.
    pub(crate) fn encode(
        &self,
        buf: &mut Vec<u8>,
        kind: DeltaKind,
        content: &str,
        seq: Option<u64>,
    ) {
        buf.extend_from_slice(match kind {
            DeltaKind::Answer => b"{\"type\":\"assistant.delta\",\"content\":",
            DeltaKind::Reasoning => b"{\"type\":\"reasoning.delta\",\"content\":",
        });
        string(buf, content);
        buf.extend_from_slice(&self.ids);
        if let Some(seq) = seq {
            buf.extend_from_slice(b",\"seq\":");
            buf.extend_from_slice(itoa::Buffer::new().format(seq).as_bytes());
        }
        buf.extend_from_slice(&self.parent);
        buf.push(b'}');
    }
}

/// `text` as a JSON string, as serde writes it.
fn string(buf: &mut Vec<u8>, text: &str) {
    #[allow(clippy::expect_used)] // a string always serializes
    serde_json::to_writer(&mut *buf, text).expect("strings serialize");
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn by_serde(event: &EventRef<'_>) -> Vec<u8> {
        serde_json::to_vec(event).unwrap()
    }

    proptest! {
        #[test]
        fn deltas_encode_as_serde_does(
            content in any::<String>(),
            request in proptest::option::of(any::<String>()),
            turn in proptest::option::of("[a-f0-9-]{0,36}"),
            seq in proptest::option::of(any::<u64>()),
            reasoning in any::<bool>(),
            parent in proptest::option::of(("[a-f0-9-]{0,36}", "[a-z0-9\"\\\\]{0,8}", any::<String>())),
        ) {
            let parent = parent.map(|(session_id, turn_id, call_id)| Parent { session_id, turn_id, call_id });
            let body = if reasoning {
                EventBody::ReasoningDelta { content }
            } else {
                EventBody::AssistantDelta { content }
            };
            let event = EventRef {
                body: &body,
                request_id: request.as_deref(),
                session_id: Some("5f0c-\u{1b}\"quoted\""),
                turn_id: turn.as_deref(),
                seq,
                parent: parent.as_ref(),
            };
            let mut fast = Vec::new();
            encode_into(&mut fast, event);
            prop_assert_eq!(String::from_utf8(fast).unwrap(), String::from_utf8(by_serde(&event)).unwrap());
        }
    }

    #[test]
    fn other_events_go_through_serde() {
        let body = EventBody::TurnStarted {};
        let event = EventRef {
            body: &body,
            request_id: Some("3"),
            session_id: Some("s"),
            turn_id: Some("t"),
            seq: Some(4),
            parent: None,
        };
        assert_eq!(&encode(event)[..], &by_serde(&event)[..]);
    }
}
