//! A bounded server-sent-events reader: bytes in, `data` payloads out.
//!
//! Only `data:` fields matter for chat completions; `event:`, `id:`,
//! `retry:` and comments are skipped. One event's data (and any partial line
//! still waiting for its newline) is capped, so a hostile or broken provider
//! cannot make us buffer without bound.

use bytes::{Buf, BytesMut};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventTooLarge;

pub(crate) struct SseReader {
    buf: BytesMut,
    /// Bytes of `buf` already searched for a line end.
    scanned: usize,
    /// The last line ended with a bare CR so far: a LF right after it
    /// belongs to the same line end (CRLF), not to an empty line.
    after_cr: bool,
    data: BytesMut,
    has_data: bool,
    max_event_bytes: usize,
}

impl SseReader {
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        SseReader {
            buf: BytesMut::with_capacity(16 * 1024),
            scanned: 0,
            after_cr: false,
            data: BytesMut::new(),
            has_data: false,
            max_event_bytes,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The data of the next complete event, or `None` until more bytes come.
    /// Lines end with LF, CRLF or a bare CR, as the SSE specification allows.
    pub(crate) fn next_event(&mut self) -> Result<Option<BytesMut>, EventTooLarge> {
        loop {
            if self.after_cr && !self.buf.is_empty() {
                self.after_cr = false;
                if self.buf[0] == b'\n' {
                    self.buf.advance(1);
                }
            }
            let Some(offset) = memchr::memchr2(b'\n', b'\r', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                if self.data.len() + self.buf.len() > self.max_event_bytes {
                    return Err(EventTooLarge);
                }
                return Ok(None);
            };
            let end = self.scanned + offset;
            self.scanned = 0;
            let mut line = self.buf.split_to(end + 1);
            if line[end] == b'\r' {
                // CRLF, or a bare CR: decided when the next byte comes.
                if self.buf.first() == Some(&b'\n') {
                    self.buf.advance(1);
                } else if self.buf.is_empty() {
                    self.after_cr = true;
                }
            }
            line.truncate(end);
            if line.is_empty() {
                if self.has_data {
                    self.has_data = false;
                    return Ok(Some(std::mem::take(&mut self.data)));
                }
                continue;
            }
            let Some(rest) = line.strip_prefix(b"data:") else {
                continue; // comments and other fields
            };
            let skip = line.len() - rest.len() + usize::from(rest.first() == Some(&b' '));
            line.advance(skip);
            if self.data.len() + line.len() + 1 > self.max_event_bytes {
                return Err(EventTooLarge);
            }
            if self.has_data {
                self.data.extend_from_slice(b"\n");
                self.data.extend_from_slice(&line);
            } else {
                self.data = line;
                self.has_data = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(reader: &mut SseReader) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(data) = reader.next_event().unwrap() {
            out.push(String::from_utf8(data.to_vec()).unwrap());
        }
        out
    }

    #[test]
    fn parses_events_split_anywhere() {
        let stream = b"data: {\"a\":1}\n\n: keepalive\n\nevent: x\ndata: one\r\ndata:two\r\n\r\ndata: cr\rdata: only\r\rdata: [DONE]\n\n";
        for split in 0..stream.len() {
            let mut reader = SseReader::new(1024);
            reader.push(&stream[..split]);
            let mut got = events(&mut reader);
            reader.push(&stream[split..]);
            got.extend(events(&mut reader));
            assert_eq!(
                got,
                vec!["{\"a\":1}", "one\ntwo", "cr\nonly", "[DONE]"],
                "split at {split}"
            );
        }
    }

    #[test]
    fn oversized_event_is_refused_even_without_newlines() {
        let mut reader = SseReader::new(16);
        reader.push(b"data: 0123456789");
        assert_eq!(reader.next_event(), Ok(None));
        reader.push(b"0123456789");
        assert_eq!(reader.next_event(), Err(EventTooLarge));

        let mut reader = SseReader::new(16);
        reader.push(b"data: 0123456789\ndata: 0123456789\n\n");
        assert_eq!(reader.next_event(), Err(EventTooLarge));
    }
}
