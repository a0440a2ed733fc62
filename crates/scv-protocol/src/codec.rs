//! Newline-delimited frames with a byte cap.
//!
//! Unlike `tokio_util::codec::LinesCodec`, an oversized line is not a stream
//! error: the codec skips to the next newline and yields [`Frame::TooLong`],
//! so the connection reports `invalid_request` and reads the next line
//! normally. A line is a frame only once its newline arrived: bytes left
//! without one at end of stream are dropped, since a connection cut in the
//! middle of a write leaves exactly that. Frames are bytes; JSON parsing is
//! the caller's.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// One line without its newline (a trailing `\r` is removed too).
    Line(Bytes),
    /// A line over the cap was skipped; holds how many bytes it had so far.
    TooLong(usize),
}

#[derive(Debug, Clone)]
pub struct FrameCodec {
    max_bytes: usize,
    /// Bytes of the current line already examined (no newline among them).
    scanned: usize,
    /// True while skipping the rest of an oversized line.
    discarding: bool,
    /// Size of the oversized line skipped so far.
    discarded: usize,
}

impl FrameCodec {
    pub fn new(max_bytes: usize) -> Self {
        FrameCodec {
            max_bytes,
            scanned: 0,
            discarding: false,
            discarded: 0,
        }
    }

    /// The cap from the next line on (a connection that opted into
    /// larger frames, such as capability `images`).
    pub fn set_max_bytes(&mut self, max_bytes: usize) {
        self.max_bytes = max_bytes;
    }

    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        loop {
            let newline = buf[self.scanned..].iter().position(|&b| b == b'\n');
            if self.discarding {
                match newline {
                    Some(offset) => {
                        let end = self.scanned + offset;
                        self.discarded += end;
                        buf.advance(end + 1);
                        self.scanned = 0;
                        self.discarding = false;
                        return Ok(Some(Frame::TooLong(std::mem::take(&mut self.discarded))));
                    }
                    None => {
                        self.discarded += buf.len();
                        buf.clear();
                        self.scanned = 0;
                        return Ok(None);
                    }
                }
            }
            match newline {
                Some(offset) => {
                    let end = self.scanned + offset;
                    self.scanned = 0;
                    let mut line = buf.split_to(end + 1);
                    line.truncate(end);
                    if line.last() == Some(&b'\r') {
                        line.truncate(end - 1);
                    }
                    if line.len() > self.max_bytes {
                        return Ok(Some(Frame::TooLong(line.len())));
                    }
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue; // blank lines carry nothing
                    }
                    return Ok(Some(Frame::Line(line.freeze())));
                }
                // `+ 1` leaves room for the `\r` of a full-size CRLF line.
                None if buf.len() > self.max_bytes + 1 => {
                    // Past the cap with no newline yet: stop buffering.
                    self.discarding = true;
                    self.scanned = 0;
                }
                None => {
                    self.scanned = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        match self.decode(buf)? {
            Some(frame) => Ok(Some(frame)),
            None if self.discarding => {
                self.discarding = false;
                Ok(Some(Frame::TooLong(std::mem::take(&mut self.discarded))))
            }
            None => {
                // A frame is complete only with its newline: bytes left at
                // EOF are a frame cut off by a broken connection.
                buf.clear();
                self.scanned = 0;
                Ok(None)
            }
        }
    }
}

/// Encodes already-serialized JSON by appending the newline.
impl Encoder<Bytes> for FrameCodec {
    type Error = std::io::Error;

    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> Result<(), std::io::Error> {
        dst.reserve(item.len() + 1);
        dst.extend_from_slice(&item);
        dst.extend_from_slice(b"\n");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(codec: &mut FrameCodec, input: &[u8]) -> Vec<Frame> {
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(frame) = codec.decode(&mut buf).unwrap() {
            out.push(frame);
        }
        if let Some(frame) = codec.decode_eof(&mut buf).unwrap() {
            out.push(frame);
        }
        out
    }

    #[test]
    fn splits_lines_and_skips_blank_ones() {
        let mut codec = FrameCodec::new(16);
        // The last line has no newline: it was cut off and is dropped.
        let frames = decode_all(&mut codec, b"{\"a\":1}\r\n\n  \n{\"b\":2}\n{\"c\":3");
        assert_eq!(
            frames,
            vec![
                Frame::Line(Bytes::from_static(b"{\"a\":1}")),
                Frame::Line(Bytes::from_static(b"{\"b\":2}")),
            ]
        );
    }

    #[test]
    fn oversized_line_is_reported_once_and_reading_goes_on() {
        let mut codec = FrameCodec::new(8);
        let mut input = vec![b'x'; 40];
        input.extend_from_slice(b"\nok\n");
        let frames = decode_all(&mut codec, &input);
        assert_eq!(
            frames,
            vec![Frame::TooLong(40), Frame::Line(Bytes::from_static(b"ok"))]
        );
    }

    #[test]
    fn oversized_line_arriving_in_pieces_is_not_buffered() {
        let mut codec = FrameCodec::new(8);
        let mut buf = BytesMut::new();
        for _ in 0..10 {
            buf.extend_from_slice(b"0123456789");
            assert_eq!(codec.decode(&mut buf).unwrap(), None);
            assert!(buf.len() <= 10, "the codec keeps skipped bytes");
        }
        buf.extend_from_slice(b"tail\nnext\n");
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(Frame::TooLong(104)));
        assert_eq!(
            codec.decode(&mut buf).unwrap(),
            Some(Frame::Line(Bytes::from_static(b"next")))
        );
    }

    #[test]
    fn line_of_exactly_the_cap_is_accepted() {
        let mut codec = FrameCodec::new(4);
        let frames = decode_all(&mut codec, b"abcd\nabcde\n");
        assert_eq!(
            frames,
            vec![Frame::Line(Bytes::from_static(b"abcd")), Frame::TooLong(5)]
        );
    }
}
