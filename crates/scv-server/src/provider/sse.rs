//! A bounded server-sent-events reader: bytes in, `data` payloads out.
//!
//! Only `data:` fields matter for chat completions; `event:`, `id:`,
//! `retry:` and comments are skipped. One event's data (and any partial line
//! still waiting for its newline) is capped, so a hostile or broken provider
//! cannot make us buffer without bound.

use bytes::{Buf, Bytes, BytesMut};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventTooLarge;

/// Reads events out of the body's chunks where they lie: a line that ends
/// inside the chunk it started in is a slice of that chunk, not a copy
/// (the provider's chunks run to 400 KiB; copying each into a buffer was
/// the stream path's largest `memmove`). Only a line split across chunks
/// is copied, and only the data of an event of several `data:` lines; and
/// nothing of a chunk is held once its complete events are read.
pub(crate) struct SseReader {
    /// What is left of the last chunk, not yet read.
    chunk: Bytes,
    /// The start of a line whose end is in a later chunk.
    partial: BytesMut,
    /// The last line ended with a bare CR so far: a LF right after it
    /// belongs to the same line end (CRLF), not to an empty line.
    after_cr: bool,
    /// The event's data so far: its one `data:` line as read, or its
    /// lines joined once there are two.
    data: Data,
    max_event_bytes: usize,
}

#[derive(Default)]
enum Data {
    #[default]
    None,
    One(Bytes),
    Joined(BytesMut),
}

impl Data {
    fn len(&self) -> usize {
        match self {
            Data::None => 0,
            Data::One(line) => line.len(),
            Data::Joined(lines) => lines.len(),
        }
    }
}

impl SseReader {
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        SseReader {
            chunk: Bytes::new(),
            partial: BytesMut::new(),
            after_cr: false,
            data: Data::None,
            max_event_bytes,
        }
    }

    /// The next chunk of the body; call once [`SseReader::next_event`]
    /// has taken every event of the one before (it then holds at most an
    /// unfinished line, which moves aside).
    pub(crate) fn push(&mut self, bytes: Bytes) {
        debug_assert!(self.chunk.is_empty(), "push before the last chunk was read");
        self.chunk = bytes;
    }

    /// The next line of the chunk (its end found), without its line end.
    fn next_line(&mut self) -> Option<Bytes> {
        if self.after_cr && !self.chunk.is_empty() {
            self.after_cr = false;
            if self.chunk[0] == b'\n' {
                self.chunk.advance(1);
            }
        }
        let end = memchr::memchr2(b'\n', b'\r', &self.chunk)?;
        let line = self.chunk.split_to(end);
        if self.chunk[0] == b'\r' {
            // CRLF, or a bare CR: decided when the next byte comes.
            if self.chunk.get(1) == Some(&b'\n') {
                self.chunk.advance(2);
            } else {
                self.chunk.advance(1);
                self.after_cr = self.chunk.is_empty();
            }
        } else {
            self.chunk.advance(1);
        }
        if self.partial.is_empty() {
            return Some(line);
        }
        self.partial.extend_from_slice(&line);
        Some(std::mem::take(&mut self.partial).freeze())
    }

    /// The data of the next complete event, or `None` until more bytes come.
    /// Lines end with LF, CRLF or a bare CR, as the SSE specification allows.
    pub(crate) fn next_event(&mut self) -> Result<Option<Bytes>, EventTooLarge> {
        loop {
            let Some(mut line) = self.next_line() else {
                // The rest is the start of a line: it waits for the next
                // chunk, counted against the cap now, copied aside so the
                // HTTP client's read buffer is not held (it reuses it for
                // the next read only when nothing else refers to it).
                if self.data.len() + self.partial.len() + self.chunk.len() > self.max_event_bytes {
                    return Err(EventTooLarge);
                }
                let rest = std::mem::take(&mut self.chunk);
                self.partial.extend_from_slice(&rest);
                if let Data::One(line) = &self.data {
                    // An event's first line, waiting for the rest.
                    self.data = Data::Joined(BytesMut::from(&line[..]));
                }
                return Ok(None);
            };
            if line.is_empty() {
                match std::mem::take(&mut self.data) {
                    Data::None => continue,
                    Data::One(data) => return Ok(Some(data)),
                    Data::Joined(data) => return Ok(Some(data.freeze())),
                }
            }
            let Some(rest) = line.strip_prefix(b"data:") else {
                continue; // comments and other fields
            };
            let skip = line.len() - rest.len() + usize::from(rest.first() == Some(&b' '));
            line.advance(skip);
            if self.data.len() + line.len() + 1 > self.max_event_bytes {
                return Err(EventTooLarge);
            }
            self.data = match std::mem::take(&mut self.data) {
                Data::None => Data::One(line),
                Data::One(first) => {
                    let mut joined = BytesMut::with_capacity(first.len() + 1 + line.len());
                    joined.extend_from_slice(&first);
                    joined.extend_from_slice(b"\n");
                    joined.extend_from_slice(&line);
                    Data::Joined(joined)
                }
                Data::Joined(mut joined) => {
                    joined.extend_from_slice(b"\n");
                    joined.extend_from_slice(&line);
                    Data::Joined(joined)
                }
            };
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
            reader.push(Bytes::copy_from_slice(&stream[..split]));
            let mut got = events(&mut reader);
            reader.push(Bytes::copy_from_slice(&stream[split..]));
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
        reader.push(Bytes::from_static(b"data: 0123456789"));
        assert_eq!(reader.next_event(), Ok(None));
        reader.push(Bytes::from_static(b"0123456789"));
        assert_eq!(reader.next_event(), Err(EventTooLarge));

        let mut reader = SseReader::new(16);
        reader.push(Bytes::from_static(
            b"data: 0123456789\ndata: 0123456789\n\n",
        ));
        assert_eq!(reader.next_event(), Err(EventTooLarge));
    }
}
