//! The model provider seam: a wire-neutral request (system prompt,
//! history, tool specs) goes out through one of the wires, and a
//! wire-neutral stream comes back (text and reasoning deltas to show, then
//! the assembled assistant message, usage and finish reason).
//!
//! Each wire is one file that renders its own JSON (tool definitions
//! included) and parses its own events into the shared
//! [`assemble::Assembler`], which enforces the protocol's caps the same way
//! for every wire. [`spec`] below is the one place that lists the wires.
//! Cancellation is structural: dropping the stream drops the HTTP body.
//!
//! Inside the layer, imports go one way: `mod.rs` (the dispatch) and the
//! stream use the wires; the wires use `settings`, `wire`, `assemble` and
//! `errors`, which use none of them. `presets` (provider definitions, read
//! by the configuration) uses only the model vocabulary.

mod anthropic;
mod assemble;
mod body;
mod chat;
mod errors;
pub(crate) mod fuzzing;
mod http;
mod models;
pub(crate) mod presets;
mod responses;
mod settings;
pub(crate) mod sse;
mod stream;
mod wire;

pub(crate) use assemble::{Delta, End};
pub(crate) use errors::ProviderError;
pub(crate) use http::Failure;
pub(crate) use settings::{Provider, Request};
pub(crate) use stream::{Reply, ResponseStream};

use crate::model::{share, Message, Parts, Rendered, ToolSpec, Wire};
use errors::Redactor;
use http::Auth;
use serde_json::Value;
use wire::{parser, WireSpec};

/// What each wire sends and reads: one row per wire. A `match`, so a new
/// [`Wire`] variant without its row does not compile.
fn spec(wire: Wire) -> &'static WireSpec {
    match wire {
        Wire::Chat => &WireSpec {
            path: "chat/completions",
            auth: Auth::Bearer,
            fragment: chat::fragment,
            body: chat::body,
            tool: chat::tool,
            parser: parser::<chat::Parser>,
        },
        Wire::Responses => &WireSpec {
            path: "responses",
            auth: Auth::Bearer,
            fragment: responses::fragment,
            body: responses::body,
            tool: responses::tool,
            parser: parser::<responses::Parser>,
        },
        Wire::Anthropic => &WireSpec {
            path: "messages",
            auth: Auth::Anthropic,
            fragment: anthropic::fragment,
            body: anthropic::body,
            tool: anthropic::tool,
            parser: parser::<anthropic::Parser>,
        },
    }
}

impl Provider {
    /// Sends attempt `attempt` (0: the first) of the request and returns
    /// the open stream once the provider answered 200.
    pub(crate) async fn start(
        &self,
        request: &Request<'_>,
        attempt: u32,
    ) -> Result<ResponseStream, Failure> {
        let spec = spec(self.wire);
        let redact = Redactor::new(self.api_key.as_deref());
        let url = format!("{}/{}", self.base_url.trim_end_matches('/'), spec.path);
        // A kept rendering lives as long as its message: it points at the
        // message's texts rather than holding them twice.
        let render = |m: &Message| share((spec.fragment)(self, m), m.texts());
        let fragments: Vec<Parts> = match request.rendered {
            Some(kept) => kept.of(self.render_key(), request.history, render),
            None => request.history.iter().map(render).collect(),
        };
        let body = (spec.body)(self, request, &fragments)?;
        let parser = (spec.parser)();
        let response = http::send(self, &url, body, spec.auth, &redact, attempt).await?;
        Ok(ResponseStream::new(
            response,
            self.idle_timeout,
            self.max_response_bytes,
            redact,
            parser,
        ))
    }

    /// Renders the messages of `history` that `rendered` does not hold
    /// yet, as this provider's requests send them, and keeps them there:
    /// a resumed session's whole history, before its first request (which
    /// otherwise rendered 16 MiB on the turn's path: 129 ms against the
    /// live session's 1.5 ms).
    pub(crate) fn render_ahead(&self, history: &[Message], rendered: &Rendered) {
        let spec = spec(self.wire);
        rendered.fill(self.render_key(), history, |m| {
            share((spec.fragment)(self, m), m.texts())
        });
    }

    /// Serialized size of the tool definitions as this wire sends them,
    /// for request-size estimates.
    pub(crate) fn tools_bytes(&self, tools: &[ToolSpec]) -> usize {
        if tools.is_empty() {
            return 0;
        }
        let rendered: Vec<Value> = tools.iter().map(spec(self.wire).tool).collect();
        serde_json::to_vec(&rendered).map_or(0, |v| v.len())
    }
}
