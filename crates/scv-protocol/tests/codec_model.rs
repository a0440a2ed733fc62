#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The frame codec against a model: whatever the byte splits, oversized
//! lines and cut-off ends, the frames out are the model's.

use bytes::BytesMut;
use proptest::prelude::*;
use scv_protocol::codec::{Frame, FrameCodec};
use tokio_util::codec::Decoder;

const MAX: usize = 64;

/// What the codec must yield: a frame per newline-terminated line — its
/// bytes without the newline and one trailing `\r`; `TooLong` past the
/// cap; nothing for blank lines — and, for bytes left without a newline at
/// the end, `TooLong` if they already passed the cap (plus room for a
/// `\r`), nothing otherwise.
#[derive(Debug, PartialEq)]
enum Expected {
    Line(Vec<u8>),
    TooLong,
}

fn model(input: &[u8]) -> Vec<Expected> {
    let mut out = Vec::new();
    let mut pieces: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    let tail = pieces.pop().unwrap_or_default();
    for raw in pieces {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.len() > MAX {
            out.push(Expected::TooLong);
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            out.push(Expected::Line(line.to_vec()));
        }
    }
    if tail.len() > MAX + 1 {
        out.push(Expected::TooLong);
    }
    out
}

/// Feeds `input` to the codec in pieces of the given sizes (cycled), then
/// ends the stream.
fn decode(input: &[u8], splits: &[usize]) -> Vec<Expected> {
    let mut codec = FrameCodec::new(MAX);
    let mut buffer = BytesMut::new();
    let mut out = Vec::new();
    let mut at = 0;
    let mut sizes = splits.iter().cycle();
    let push = |frame: Frame, out: &mut Vec<Expected>| match frame {
        Frame::Line(line) => {
            assert!(line.len() <= MAX, "a frame over the cap came out");
            out.push(Expected::Line(line.to_vec()));
        }
        Frame::TooLong(size) => {
            assert!(size > MAX, "TooLong({size}) for a line within the cap");
            out.push(Expected::TooLong);
        }
    };
    while at < input.len() {
        let size = (*sizes.next().unwrap()).clamp(1, input.len() - at);
        buffer.extend_from_slice(&input[at..at + size]);
        at += size;
        while let Some(frame) = codec.decode(&mut buffer).unwrap() {
            push(frame, &mut out);
        }
        // The codec never holds much more than one frame's worth.
        assert!(
            buffer.len() <= MAX + 1 + size,
            "buffered {} bytes",
            buffer.len()
        );
    }
    while let Some(frame) = codec.decode_eof(&mut buffer).unwrap() {
        push(frame, &mut out);
    }
    out
}

/// Lines as clients write them, and as they go wrong: JSON-ish text,
/// blanks, CRLF endings, lines around and far past the cap.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => "[ -~]{0,40}".prop_map(|s| format!("{{\"type\":\"{s}\"}}").into_bytes()),
        1 => "[ \t]{0,4}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..80)
            .prop_map(|b| b.into_iter().filter(|&c| c != b'\n').collect()),
        1 => (MAX - 2..MAX + 3).prop_map(|n| vec![b'x'; n]),
        1 => (MAX + 3..4 * MAX).prop_map(|n| vec![b'y'; n]),
    ]
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec((line(), any::<bool>()), 0..20),
        prop::option::of(line()),
    )
        .prop_map(|(lines, tail)| {
            let mut out = Vec::new();
            for (line, crlf) in lines {
                out.extend_from_slice(&line);
                out.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
            }
            // A frame cut off by a closed connection.
            if let Some(tail) = tail {
                out.extend_from_slice(&tail);
            }
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn same_frames_whatever_the_split(
        input in input(),
        splits in prop::collection::vec(1usize..200, 1..16),
    ) {
        let whole = decode(&input, &[usize::MAX]);
        prop_assert_eq!(&whole, &model(&input));
        prop_assert_eq!(decode(&input, &splits), whole);
        // One byte at a time: the worst split there is.
        prop_assert_eq!(decode(&input, &[1]), model(&input));
    }
}
