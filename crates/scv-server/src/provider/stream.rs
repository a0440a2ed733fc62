//! One streamed response, for any wire: bounded SSE reading, the wire's
//! parser feeding the shared assembler, deltas handed out as they come.
//!
//! Caps (the protocol document's): an SSE event 1 MiB and the whole
//! response `max_response_bytes` (default the document's 4 MiB; it counts
//! wire bytes, ~40 × the text for small chunks, so a long answer may need
//! more); the assembler holds the rest. Each fails the turn with
//! `response_limit`, its message naming the limit and, when it is
//! configurable, how to raise it. Hitting one returns an error; the caller
//! drops the stream, which drops the HTTP body. The idle timer measures
//! model output, not bytes.

use super::assemble::{Assembler, Delta, End};
use super::errors::{ProviderError, Redactor};
use super::http;
use super::sse::{EventTooLarge, SseReader};
use super::wire::{Flow, WireParser};
use crate::model::{AssistantMessage, Usage};
use scv_protocol::limits::MAX_SSE_EVENT_BYTES;
use scv_protocol::FailureCode;
use std::time::{Duration, Instant};

/// What a finished response said.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Reply {
    pub message: AssistantMessage,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
    /// What the turn does next, whatever the wire called it.
    pub end: End,
}

/// What the bytes read so far hold.
enum Buffered {
    Delta(Delta),
    /// Nothing until more of the body is read.
    Empty,
    /// The response ended well.
    End,
}

pub(crate) struct ResponseStream {
    body: reqwest::Response,
    sse: SseReader,
    idle_timeout: Duration,
    max_response_bytes: usize,
    /// When the model last produced something (as of the last chunk read).
    last_output: Instant,
    /// The model produced something since `last_output` was stamped.
    progressed: bool,
    received: usize,
    done: bool,
    /// The parser has handed over what it held back.
    finished: bool,
    parser: Box<dyn WireParser>,
    asm: Assembler,
    redact: Redactor,
}

impl ResponseStream {
    pub(super) fn new(
        body: reqwest::Response,
        idle_timeout: Duration,
        max_response_bytes: usize,
        redact: Redactor,
        parser: Box<dyn WireParser>,
    ) -> Self {
        ResponseStream {
            body,
            sse: SseReader::new(MAX_SSE_EVENT_BYTES),
            idle_timeout,
            max_response_bytes,
            last_output: Instant::now(),
            progressed: false,
            received: 0,
            done: false,
            finished: false,
            parser,
            asm: Assembler::default(),
            redact,
        }
    }

    /// The next delta to show; `None` once the response ended well (the
    /// wire's end event, or end of body after a finish reason).
    pub(crate) async fn next_delta(&mut self) -> Result<Option<Delta>, ProviderError> {
        loop {
            match self.buffered()? {
                Buffered::Delta(delta) => return Ok(Some(delta)),
                Buffered::End => return Ok(None),
                Buffered::Empty => self.read_chunk().await?,
            }
        }
    }

    /// The next delta already read from the body, without waiting for
    /// more (`None`: the next one needs more bytes, or the response
    /// ended). Lets a caller take a whole chunk's deltas at once.
    pub(crate) fn next_buffered(&mut self) -> Result<Option<Delta>, ProviderError> {
        match self.buffered()? {
            Buffered::Delta(delta) => Ok(Some(delta)),
            Buffered::Empty | Buffered::End => Ok(None),
        }
    }

    /// What the bytes read so far give next.
    fn buffered(&mut self) -> Result<Buffered, ProviderError> {
        loop {
            if let Some(delta) = self.asm.next_delta() {
                return Ok(Buffered::Delta(delta));
            }
            while !self.done {
                match self.sse.next_event() {
                    Err(EventTooLarge) => {
                        return Err(ProviderError::limit(
                            FailureCode::ResponseLimit,
                            format!("provider sent an SSE event over {MAX_SSE_EVENT_BYTES} bytes (the protocol's cap on one event; not configurable)"),
                        ))
                    }
                    Ok(None) => break,
                    Ok(Some(data)) => {
                        let flow = self.parser.read(&data, &mut self.asm, &self.redact)?;
                        // Stamped when the next chunk is read: one clock
                        // read per chunk, not per event.
                        self.progressed |= self.asm.take_progress();
                        self.done = flow == Flow::Done;
                        if let Some(delta) = self.asm.next_delta() {
                            return Ok(Buffered::Delta(delta));
                        }
                    }
                }
            }
            if self.done {
                if !self.finished {
                    self.finished = true;
                    self.parser.finish(&mut self.asm)?;
                    continue;
                }
                return Ok(Buffered::End);
            }
            return Ok(Buffered::Empty);
        }
    }

    /// Reads the next chunk of the body (bounded by the idle timeout and
    /// the response cap).
    async fn read_chunk(&mut self) -> Result<(), ProviderError> {
        if std::mem::take(&mut self.progressed) {
            self.last_output = Instant::now();
        }
        let deadline = self.last_output + self.idle_timeout;
        let chunk = tokio::time::timeout_at(deadline.into(), self.body.chunk())
            .await
            .map_err(|_| {
                ProviderError::provider(format!(
                    "provider stream was silent for {} ms",
                    self.idle_timeout.as_millis()
                ))
            })?
            .map_err(|err| {
                ProviderError::provider(format!("provider stream broke: {}", http::describe(&err)))
            })?;
        match chunk {
            Some(bytes) => {
                self.received += bytes.len();
                if self.received > self.max_response_bytes {
                    return Err(ProviderError::limit(
                        FailureCode::ResponseLimit,
                        format!(
                            "provider response exceeded max_response_bytes ({} bytes, counted as they come over the wire); raise `max_response_bytes` in config.toml for longer answers",
                            self.max_response_bytes
                        ),
                    ));
                }
                self.sse.push(bytes);
            }
            None if self.asm.finish_reason().is_some() => self.done = true,
            None => {
                return Err(ProviderError::provider(
                    "provider stream ended before its end event or a finish reason",
                ))
            }
        }
        Ok(())
    }

    /// Reads to the end and returns the assembled response.
    pub(crate) async fn finish(mut self) -> Result<Reply, ProviderError> {
        while self.next_delta().await?.is_some() {}
        let end = self.asm.ending();
        let (message, usage, finish_reason) = self.asm.into_parts();
        Ok(Reply {
            message,
            usage,
            finish_reason,
            end,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{anthropic, chat, responses};

    /// Found with the fuzz harness's invariant (`scv_server::fuzzing`) and an
    /// input replayed through the `anthropic_events` target:
    /// serde's message for an ill-typed field quotes the field's string,
    /// so a malformed event carrying the key put it into `turn.failed`.
    #[test]
    fn malformed_events_never_carry_the_api_key_into_the_error() {
        let key = "sk-test-0123456789";
        let redact = Redactor::new(Some(key));
        let cases: [(Box<dyn WireParser>, String); 3] = [
            (
                Box::new(chat::Parser::default()),
                format!(r#"{{"choices":"{key}"}}"#),
            ),
            (
                Box::new(responses::Parser::default()),
                format!(r#"{{"type":"response.output_text.delta","summary_index":"{key}"}}"#),
            ),
            (
                Box::new(anthropic::Parser::default()),
                format!(r#"{{"type":"ping","index":"{key}"}}"#),
            ),
        ];
        for (mut parser, event) in cases {
            let mut asm = Assembler::default();
            let err = parser
                .read(event.as_bytes(), &mut asm, &redact)
                .unwrap_err();
            assert!(err.message.contains("malformed"), "{}", err.message);
            assert!(!err.message.contains(key), "{}", err.message);
        }
    }
}
