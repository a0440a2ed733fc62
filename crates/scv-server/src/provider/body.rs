//! A request body made of parts: the fixed JSON around the history and
//! each message's rendering as the history keeps it
//! ([`crate::model::Rendered`]). Sent from where the parts lie (no copy
//! into one buffer), with its exact length, so the request's head goes
//! out at once and a long history costs what its new messages cost to
//! encode.

use super::errors::ProviderError;
use crate::model::Parts;
use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Parts shorter than this go out copied together with their small
/// neighbours: a history is mostly small pieces (keys, punctuation, short
/// messages) around a few long texts, and hyper writes at most 16 queued
/// frames per `writev`, so one frame per piece made a 16 MiB body some
/// 16,000 frames and its transfer ~30 % slower.
const COPY_BELOW: usize = 1024;
/// The most small parts copied into one frame.
const RUN_MAX: usize = 64 * 1024;

/// The parts of one request body, in order.
#[derive(Debug, Default, Clone)]
pub(super) struct Body {
    pieces: VecDeque<Piece>,
    /// The next part of the front piece, when that is a rendering.
    cursor: usize,
    len: u64,
}

/// Bytes of the body's own, or a message's whole rendering (taken as one
/// shared handle: a request of a long history takes thousands).
#[derive(Debug, Clone)]
enum Piece {
    Own(Bytes),
    Rendering(Parts),
}

impl Body {
    /// Appends bytes of the body's own JSON (keys, punctuation, values).
    pub(super) fn push(&mut self, bytes: impl Into<Bytes>) {
        let bytes = bytes.into();
        if !bytes.is_empty() {
            self.len += bytes.len() as u64;
            self.pieces.push_back(Piece::Own(bytes));
        }
    }

    /// Appends `value` as serde writes it.
    pub(super) fn push_json<T: serde::Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(), ProviderError> {
        self.push(super::settings::encode(value)?);
        Ok(())
    }

    /// Appends `fragments` as the entries of a JSON array, comma-joined
    /// (an empty one is a message that renders to nothing).
    pub(super) fn push_joined(&mut self, fragments: &[Parts]) {
        let mut first = true;
        for fragment in fragments.iter().filter(|f| !f.is_empty()) {
            if !first {
                self.push(&b","[..]);
            }
            first = false;
            self.push_parts(fragment);
        }
    }

    /// Appends one message's rendering.
    pub(super) fn push_parts(&mut self, fragment: &Parts) {
        if !fragment.is_empty() {
            self.len += fragment.len() as u64;
            self.pieces.push_back(Piece::Rendering(fragment.clone()));
        }
    }

    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// The part to send next.
    fn front(&self) -> Option<&Bytes> {
        match self.pieces.front()? {
            Piece::Own(bytes) => Some(bytes),
            Piece::Rendering(parts) => parts.as_slice().get(self.cursor),
        }
    }

    /// The parts still to send, in order.
    fn upcoming(&self) -> impl Iterator<Item = &Bytes> {
        self.pieces
            .iter()
            .enumerate()
            .flat_map(move |(i, piece)| match piece {
                Piece::Own(bytes) => std::slice::from_ref(bytes),
                Piece::Rendering(parts) => {
                    &parts.as_slice()[if i == 0 { self.cursor } else { 0 }..]
                }
            })
    }

    /// Moves past the part [`Body::front`] gave.
    fn advance(&mut self) {
        let done = match self.pieces.front() {
            Some(Piece::Rendering(parts)) => {
                self.cursor += 1;
                self.cursor == parts.as_slice().len()
            }
            _ => true,
        };
        if done {
            self.pieces.pop_front();
            self.cursor = 0;
        }
    }

    /// What is left to send, in one buffer (tests and the fuzz targets).
    #[cfg(test)]
    pub(super) fn to_vec(&self) -> Vec<u8> {
        self.upcoming().flat_map(|p| p.iter().copied()).collect()
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        // The run of small parts ahead, measured first so its frame is
        // allocated at its size (a 64 KiB buffer per run was 41 MB of
        // allocations in the load bench's burst).
        let (mut run, mut count) = (0, 0);
        for part in self.upcoming() {
            if part.len() >= COPY_BELOW || run + part.len() > RUN_MAX {
                break;
            }
            run += part.len();
            count += 1;
        }
        let frame = if count >= 2 {
            let mut frame = BytesMut::with_capacity(run);
            for _ in 0..count {
                if let Some(part) = self.front() {
                    frame.extend_from_slice(part);
                }
                self.advance();
            }
            frame.freeze()
        } else {
            let Some(part) = self.front().cloned() else {
                return Poll::Ready(None);
            };
            self.advance();
            part
        };
        self.len -= frame.len() as u64;
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }

    fn is_end_stream(&self) -> bool {
        self.pieces.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{share, Text};
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn the_parts_are_sent_in_order_with_their_exact_length() {
        let mut body = Body::default();
        body.push(&b"{\"a\":"[..]);
        body.push(Bytes::new());
        body.push_json(&[1, 2]).unwrap();
        body.push(Bytes::from_static(b"}"));
        assert_eq!(http_body::Body::size_hint(&body).exact(), Some(11));
        let whole = body.clone().collect().await.unwrap().to_bytes();
        assert_eq!(&whole[..], b"{\"a\":[1,2]}");
        assert_eq!(body.to_vec(), whole.to_vec());
    }

    #[tokio::test]
    async fn small_parts_go_out_together_and_long_ones_as_they_lie() {
        let long = Bytes::from(vec![b'x'; COPY_BELOW]);
        let mut body = Body::default();
        for _ in 0..3 {
            body.push(&b"ab"[..]);
        }
        body.push(long.clone());
        body.push(&b"c"[..]);
        for _ in 0..RUN_MAX {
            body.push(&b"d"[..]);
        }
        let expected = body.to_vec();
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            frames.push(frame.unwrap().into_data().unwrap());
        }
        let sizes: Vec<usize> = frames.iter().map(Bytes::len).collect();
        assert_eq!(sizes, [6, COPY_BELOW, RUN_MAX, 1]);
        assert_eq!(
            frames[1].as_ptr(),
            long.as_ptr(),
            "the long part is not copied"
        );
        assert_eq!(frames.concat(), expected);
        assert_eq!(http_body::Body::size_hint(&body).exact(), Some(0));

        // A kept rendering: its small parts join their neighbours, its
        // text goes out from the message's own bytes.
        let text = Text::new(&"t".repeat(2000));
        let rendering = format!(
            "{{\"c\":{text_json}}}",
            text_json = serde_json::to_string(&text).unwrap()
        );
        let mut body = Body::default();
        body.push(&b"[ab"[..]);
        body.push_parts(&share(rendering.clone().into_bytes(), [&text]));
        body.push(&b"]"[..]);
        let expected = format!("[ab{rendering}]");
        assert_eq!(
            http_body::Body::size_hint(&body).exact(),
            Some(expected.len() as u64)
        );
        let mut frames = Vec::new();
        while let Some(frame) = body.frame().await {
            frames.push(frame.unwrap().into_data().unwrap());
        }
        let sizes: Vec<usize> = frames.iter().map(Bytes::len).collect();
        assert_eq!(sizes, [8, 2002, 2]);
        assert_eq!(frames[1].as_ptr(), text.json().as_ptr());
        assert_eq!(frames.concat(), expected.as_bytes());
    }
}
