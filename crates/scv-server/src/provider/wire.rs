//! What a wire is to the rest of the provider layer: a [`WireSpec`] (its
//! request path, auth, body and tool renderers, parser) and the
//! [`WireParser`] trait its event parser implements.
//!
//! The table of specs is in `mod.rs` (`spec`), the one place that names
//! every wire; this file names none, so the wires can import it without a
//! cycle.

use super::assemble::Assembler;
use super::body::Body;
use super::errors::{ProviderError, Redactor};
use super::http::Auth;
use super::settings::{Provider, Request};
use crate::model::{Message, Parts, ToolSpec};
use serde_json::Value;

/// One wire, as the provider layer drives it.
pub(super) struct WireSpec {
    /// Appended to the definition's `base_url` (after one `/`).
    pub path: &'static str,
    /// How a request proves who it is.
    pub auth: Auth,
    /// One history message as this wire sends it (the entries it makes
    /// in the body's message array, comma-joined; empty: none). Made once
    /// per message and kept with a session's history.
    pub fragment: fn(&Provider, &Message) -> Vec<u8>,
    /// The request body: model, system prompt, the history (as its
    /// messages' fragments), tools, options.
    pub body: fn(&Provider, &Request<'_>, &[Parts]) -> Result<Body, ProviderError>,
    /// One tool definition as this wire sends it (also for size estimates).
    pub tool: fn(&ToolSpec) -> Value,
    /// A parser for one response's events.
    pub parser: fn() -> Box<dyn WireParser>,
}

/// A parser for `P`, as a spec names it.
pub(super) fn parser<P: WireParser + Default + 'static>() -> Box<dyn WireParser> {
    Box::<P>::default()
}

/// What a parsed event means for the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Continue,
    /// The wire's end-of-response event.
    Done,
}

/// Reads one response's events (SSE `data` payloads) into the shared
/// [`Assembler`]. One call per event: the cost of the indirect call is
/// nothing beside the JSON parse it leads to.
pub(super) trait WireParser: Send {
    fn apply(
        &mut self,
        data: &[u8],
        asm: &mut Assembler,
        redact: &Redactor,
    ) -> Result<Flow, ProviderError>;

    /// The response ended: hand over anything held back.
    fn finish(&mut self, asm: &mut Assembler) -> Result<(), ProviderError> {
        let _ = asm;
        Ok(())
    }
}

impl dyn WireParser {
    /// [`WireParser::apply`], with the key taken out of every error, not
    /// only the provider's own error events: serde's message for a
    /// malformed event quotes the event's strings.
    pub(super) fn read(
        &mut self,
        data: &[u8],
        asm: &mut Assembler,
        redact: &Redactor,
    ) -> Result<Flow, ProviderError> {
        self.apply(data, asm, redact)
            .map_err(|err| redact.error(err))
    }
}
