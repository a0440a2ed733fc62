//! Entry points for the fuzz targets in `fuzz/` (cargo-fuzz), re-exported
//! as `scv_server::fuzzing`. Not an API: hidden from the docs and used by
//! nothing in the workspace. The wire parsers and the assembler stay
//! private; these functions drive them the way
//! [`ResponseStream`](super::ResponseStream) does, without the HTTP body,
//! and panic when a cap the protocol names, or another cheap invariant,
//! does not hold. Provider errors are expected outcomes, not findings.

use super::assemble::{Assembler, Delta};
use super::errors::{ProviderError, Redactor};
use super::sse::{EventTooLarge, SseReader};
use super::wire::{Flow, WireParser};
use scv_protocol::limits::{
    MAX_ASSISTANT_TEXT_BYTES, MAX_RESPONSE_BYTES, MAX_SSE_EVENT_BYTES, MAX_TOOL_ARGUMENT_BYTES,
    MAX_TOOL_CALLS_PER_RESPONSE,
};

/// The API key the fuzzed provider is given: no error may repeat it.
pub const FUZZ_API_KEY: &str = "sk-fuzz-0123456789";

/// Which wire's parser reads the events.
pub use crate::model::Wire;

fn parser(wire: Wire) -> Box<dyn WireParser> {
    (super::spec(wire).parser)()
}

/// The deltas handed out so far, joined.
#[derive(Default)]
struct Shown {
    text: String,
    reasoning: String,
}

impl Shown {
    fn drain(&mut self, asm: &mut Assembler) {
        while let Some(delta) = asm.next_delta() {
            match delta {
                Delta::Text(text) => self.text.push_str(&text),
                Delta::Reasoning(text) => self.reasoning.push_str(&text),
            }
        }
    }
}

/// One response body arriving in `chunks`, read like
/// `ResponseStream::next_delta`: the 4 MiB response cap, the 1 MiB SSE
/// event cap, the wire's parser, the assembler's caps, and the parser's
/// `finish` once the response ended well.
pub fn response_body<'a>(wire: Wire, chunks: impl IntoIterator<Item = &'a [u8]>) {
    let mut sse = SseReader::new(MAX_SSE_EVENT_BYTES);
    let mut parser = parser(wire);
    let mut asm = Assembler::default();
    let redact = Redactor::new(Some(FUZZ_API_KEY));
    let mut shown = Shown::default();
    let mut received = 0;
    let result = (|| -> Result<(), Option<ProviderError>> {
        let mut done = false;
        for chunk in chunks {
            received += chunk.len();
            if received > MAX_RESPONSE_BYTES {
                return Err(None);
            }
            sse.push(bytes::Bytes::copy_from_slice(chunk));
            while let Some(data) = sse.next_event().map_err(|EventTooLarge| None)? {
                assert!(data.len() <= MAX_SSE_EVENT_BYTES, "SSE event over the cap");
                let flow = parser.read(&data, &mut asm, &redact)?;
                shown.drain(&mut asm);
                if flow == Flow::Done {
                    done = true;
                    break;
                }
            }
            if done {
                break;
            }
        }
        if done || asm.finish_reason().is_some() {
            parser.finish(&mut asm)?;
            shown.drain(&mut asm);
        }
        Ok(())
    })();
    check_error(result.err().flatten());
    check(asm, shown);
}

/// Event payloads (what the SSE reader hands out) straight into the wire's
/// parser, then its `finish`; stops at the first error or the end event.
pub fn events<'a>(wire: Wire, events: impl IntoIterator<Item = &'a [u8]>) {
    let mut parser = parser(wire);
    let mut asm = Assembler::default();
    let redact = Redactor::new(Some(FUZZ_API_KEY));
    let mut shown = Shown::default();
    let result = (|| -> Result<(), ProviderError> {
        for data in events {
            let flow = parser.read(data, &mut asm, &redact)?;
            shown.drain(&mut asm);
            if flow == Flow::Done {
                break;
            }
        }
        parser.finish(&mut asm)?;
        shown.drain(&mut asm);
        Ok(())
    })();
    check_error(result.err());
    check(asm, shown);
}

/// The events the SSE reader yields for `chunks` with a cap of `max`
/// bytes; `None` when an event was over the cap.
pub fn sse_events<'a>(
    max: usize,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Option<Vec<Vec<u8>>> {
    let mut sse = SseReader::new(max);
    let mut out = Vec::new();
    for chunk in chunks {
        sse.push(bytes::Bytes::copy_from_slice(chunk));
        while let Some(data) = sse.next_event().ok()? {
            assert!(data.len() <= max, "SSE event over the cap");
            out.push(data.to_vec());
        }
    }
    Some(out)
}

fn check_error(error: Option<ProviderError>) {
    if let Some(error) = error {
        assert!(
            !error.message.contains(FUZZ_API_KEY),
            "the API key in an error: {}",
            error.message
        );
    }
}

/// The assembler's caps hold, and its deltas add up to what it assembled.
fn check(mut asm: Assembler, mut shown: Shown) {
    // After an error the stream stops handing out deltas (and the turn
    // fails), so some may still be queued: they count too.
    shown.drain(&mut asm);
    let (message, _usage, _finish) = asm.into_parts();
    let text = message.text.unwrap_or_default().to_string();
    let reasoning = message.reasoning.unwrap_or_default().to_string();
    assert!(
        text.len() <= MAX_ASSISTANT_TEXT_BYTES,
        "assistant text over the cap"
    );
    assert!(
        reasoning.len() <= MAX_ASSISTANT_TEXT_BYTES,
        "reasoning over the cap"
    );
    assert!(
        message.tool_calls.len() <= MAX_TOOL_CALLS_PER_RESPONSE,
        "too many tool calls"
    );
    for call in &message.tool_calls {
        assert!(
            call.arguments.len() <= MAX_TOOL_ARGUMENT_BYTES,
            "tool arguments over the cap"
        );
        assert!(!call.id.is_empty(), "a tool call without an id");
    }
    assert_eq!(
        shown.text, text,
        "text deltas differ from the assembled text"
    );
    assert_eq!(
        shown.reasoning, reasoning,
        "reasoning deltas differ from the assembled reasoning"
    );
}
