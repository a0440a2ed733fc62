//! The NDJSON frame codec fed arbitrary bytes in arbitrary pieces, and each
//! frame it yields parsed as a client message.
//!
//! Input: byte 0 picks the cut into pieces, byte 1 the frame cap (the real
//! 1 MiB one, or a small one so that oversized lines happen), the rest is
//! the stream. Invariants: the same frames whatever the cut (an oversized
//! line's reported size aside); no line over the cap, none with a newline
//! or blank; the codec never buffers more than the cap plus a CR; a parsed
//! message survives a serialize/parse round trip.

#![no_main]

mod split;

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use scv_protocol::limits::MAX_CLIENT_FRAME_BYTES;
use scv_protocol::{ClientFrame, Frame, FrameCodec, CLIENT_MESSAGE_TYPES};
use tokio_util::codec::Decoder;

fn check(frame: &Frame, max: usize) {
    match frame {
        Frame::Line(line) => {
            assert!(line.len() <= max, "a line over the cap");
            assert!(!line.contains(&b'\n'), "a newline inside a line");
            assert!(
                !line.iter().all(u8::is_ascii_whitespace),
                "a blank line as a frame"
            );
        }
        Frame::TooLong(size) => assert!(*size > max, "TooLong for a line within the cap"),
    }
}

/// What `FramedRead` would yield: `decode` after each piece, then
/// `decode_eof` until it has nothing more.
fn decode(max: usize, pieces: &[&[u8]]) -> Vec<Frame> {
    let mut codec = FrameCodec::new(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in pieces {
        buf.extend_from_slice(piece);
        while let Some(frame) = codec.decode(&mut buf).expect("decode does not fail") {
            check(&frame, max);
            out.push(frame);
        }
        assert!(buf.len() <= max + 1, "the codec buffers past the cap");
    }
    while let Some(frame) = codec
        .decode_eof(&mut buf)
        .expect("decode_eof does not fail")
    {
        check(&frame, max);
        out.push(frame);
    }
    out
}

fn normalized(frames: Vec<Frame>) -> Vec<Frame> {
    frames
        .into_iter()
        .map(|frame| match frame {
            Frame::TooLong(_) => Frame::TooLong(0),
            line => line,
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let [seed, cap, stream @ ..] = data else {
        return;
    };
    let max = if cap & 1 == 1 {
        MAX_CLIENT_FRAME_BYTES
    } else {
        usize::from(cap >> 1) + 1
    };
    let frames = decode(max, &split::pieces(*seed, stream));
    let whole = decode(max, &[stream]);
    assert_eq!(
        normalized(frames.clone()),
        normalized(whole),
        "the frames depend on the cut"
    );
    for frame in frames {
        let Frame::Line(line) = frame else { continue };
        let Ok(parsed) = ClientFrame::parse(&line) else {
            continue;
        };
        assert!(CLIENT_MESSAGE_TYPES.contains(&parsed.message.type_name()));
        let encoded = serde_json::to_vec(&parsed).expect("a client frame serializes");
        let again = ClientFrame::parse(&encoded).expect("a serialized frame parses");
        assert_eq!(parsed, again, "the round trip changed the frame");
    }
});
