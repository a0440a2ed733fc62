//! The per-connection reader: frames out of a byte stream, holding no
//! buffer while the client is quiet. tokio-util's `FramedRead` keeps an
//! 8 KiB buffer for the connection's whole life, which is most of what an
//! idle connection costs a daemon serving a thousand of them; here each
//! read lands on the stack first and only bytes of an unfinished line are
//! kept, in a buffer freed as soon as it holds none.

use bytes::BytesMut;
use futures_util::Stream;
use scv_protocol::{Frame, FrameCodec};
use std::io;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::Decoder;

/// Bytes one read may take: the same as `FramedRead`'s buffer.
const READ_BYTES: usize = 8 * 1024;

/// Room kept for an unfinished line; more is given back between reads.
const KEEP_BYTES: usize = 64 * 1024;

pub(crate) struct FrameReader<R> {
    io: R,
    codec: FrameCodec,
    /// Bytes read and not yet framed; empty (unallocated) between frames.
    pending: BytesMut,
    eof: bool,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(io: R, codec: FrameCodec) -> FrameReader<R> {
        FrameReader {
            io,
            codec,
            pending: BytesMut::new(),
            eof: false,
        }
    }
}

impl<R> FrameReader<R> {
    /// The frame cap from the next line on.
    pub(crate) fn set_max_bytes(&mut self, max_bytes: usize) {
        self.codec.set_max_bytes(max_bytes);
    }

    pub(crate) fn max_bytes(&self) -> usize {
        self.codec.max_bytes()
    }
}

impl<R: AsyncRead + Unpin> Stream for FrameReader<R> {
    type Item = io::Result<Frame>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.eof {
                return Poll::Ready(this.codec.decode_eof(&mut this.pending).transpose());
            }
            let frame = this.codec.decode(&mut this.pending)?;
            if this.pending.is_empty() && this.pending.capacity() > 0 {
                this.pending = BytesMut::new();
            } else if this.pending.capacity() > KEEP_BYTES && this.pending.len() <= READ_BYTES {
                // A short unfinished line after a long frame: do not keep
                // the long frame's room while the client is quiet.
                this.pending = BytesMut::from(&this.pending[..]);
            }
            if let Some(frame) = frame {
                return Poll::Ready(Some(Ok(frame)));
            }
            let mut chunk = [MaybeUninit::<u8>::uninit(); READ_BYTES];
            let mut read = ReadBuf::uninit(&mut chunk);
            ready!(Pin::new(&mut this.io).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                this.eof = true;
            } else {
                this.pending.extend_from_slice(read.filled());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn frames_come_whole_and_the_buffer_is_freed_between_them() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut frames = FrameReader::new(server, FrameCodec::new(32));
        client.write_all(b"{\"a\":1}\n{\"b\"").await.unwrap();
        assert_eq!(
            frames.next().await.unwrap().unwrap(),
            Frame::Line("{\"a\":1}".into())
        );
        client.write_all(b":2}\r\n").await.unwrap();
        assert_eq!(
            frames.next().await.unwrap().unwrap(),
            Frame::Line("{\"b\":2}".into())
        );
        assert_eq!(frames.pending.capacity(), 0, "nothing held between frames");
        client.write_all(&[b'x'; 40]).await.unwrap();
        client.write_all(b"\nlast\ncut off").await.unwrap();
        drop(client);
        assert_eq!(frames.next().await.unwrap().unwrap(), Frame::TooLong(40));
        assert_eq!(
            frames.next().await.unwrap().unwrap(),
            Frame::Line("last".into())
        );
        // A line without its newline at EOF was cut off: not a frame.
        assert!(frames.next().await.is_none());
        assert!(frames.next().await.is_none());
    }
}
