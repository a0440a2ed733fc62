//! A request body made of parts: the fixed JSON around the history and
//! each message's rendering as the history keeps it
//! ([`crate::model::Rendered`]). Sent from where the parts lie (no copy
//! into one buffer), with its exact length, so the request's head goes
//! out at once and a long history costs what its new messages cost to
//! encode.

use super::errors::ProviderError;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The parts of one request body, in order.
#[derive(Debug, Default, Clone)]
pub(super) struct Body {
    parts: VecDeque<Bytes>,
    len: u64,
}

impl Body {
    /// Appends bytes of the body's own JSON (keys, punctuation, values).
    pub(super) fn push(&mut self, bytes: impl Into<Bytes>) {
        let bytes = bytes.into();
        if !bytes.is_empty() {
            self.len += bytes.len() as u64;
            self.parts.push_back(bytes);
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
    pub(super) fn push_joined(&mut self, fragments: &[Bytes]) {
        let mut first = true;
        for part in fragments.iter().filter(|p| !p.is_empty()) {
            if !first {
                self.push(&b","[..]);
            }
            first = false;
            self.push(part.clone());
        }
    }

    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// The whole body in one buffer (tests and the fuzz targets).
    #[cfg(test)]
    pub(super) fn to_vec(&self) -> Vec<u8> {
        self.parts.iter().flat_map(|p| p.iter().copied()).collect()
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let next = self.parts.pop_front().map(|part| {
            self.len -= part.len() as u64;
            Ok(Frame::data(part))
        });
        Poll::Ready(next)
    }

    fn is_end_stream(&self) -> bool {
        self.parts.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
