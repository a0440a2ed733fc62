//! The SSE reader with the chat-completions parser and the assembler: a
//! response body in arbitrary pieces, read as `ResponseStream` reads it.
//!
//! Input: byte 0 picks the cut, byte 1 a small SSE event cap for the split
//! check, the rest is the body. Invariants: the same events whatever the
//! cut (when no event hit the cap); a cut that fits the cap fits it whole
//! too; no event over the cap; the assembler's caps (text, reasoning, tool
//! calls and their arguments); deltas shown = text assembled; the API key
//! in no error (checked in `scv_server::fuzzing`).

#![no_main]

mod split;

use libfuzzer_sys::fuzz_target;
use scv_server::fuzzing::{response_body, sse_events, Wire};

fuzz_target!(|data: &[u8]| {
    let [seed, cap, body @ ..] = data else {
        return;
    };
    let pieces = split::pieces(*seed, body);
    let max = usize::from(*cap) * 4 + 8;
    let cut = sse_events(max, pieces.iter().copied());
    let whole = sse_events(max, [body]);
    if let Some(cut) = cut {
        assert_eq!(Some(cut), whole, "the events depend on the cut");
    }
    response_body(Wire::Chat, pieces);
});
