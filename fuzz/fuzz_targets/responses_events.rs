//! The OpenAI Responses event parser with the assembler: each line of the input is
//! one event's data, as the SSE reader hands it out. Invariants (checked in
//! `scv_server::fuzzing`): the assembler's caps (text, reasoning, tool
//! calls and their arguments); deltas shown = text assembled; the API key
//! in no error.

#![no_main]

use libfuzzer_sys::fuzz_target;
use scv_server::fuzzing::{events, Wire};

fuzz_target!(|data: &[u8]| {
    events(Wire::Responses, data.split(|&b| b == b'\n'));
});
