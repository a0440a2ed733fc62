//! The Chat Completions wire (`wire = "chat"`): OpenAI's
//! `POST {base_url}/chat/completions` and the many servers compatible with
//! it. Requests carry `stream: true` with usage in the final chunk, tools
//! as function tools, results as `role: "tool"` messages.
//!
//! What real servers send, and how it is read (shapes and sources in
//! docs/DESIGN.md and the tests):
//! - tool calls are assembled by `index`; servers that send no `index` (or
//!   reuse one for several calls, as Ollama does) are told apart by `id`;
//!   a name repeated on later fragments is not appended;
//! - `delta.content` may be an array of typed parts (Mistral): `text`
//!   parts are answer, `thinking` parts are reasoning;
//! - `reasoning_content` (DeepSeek, vLLM ≤0.10, LM Studio) and `reasoning`
//!   (vLLM ≥0.11, Ollama, OpenRouter) are reasoning; so is content that
//!   opens with `<think>` … `</think>` (Qwen3 and R1 distills on servers
//!   without a reasoning parser);
//! - an `error` object (or string) in a chunk, or a chunk with
//!   `"object": "error"` (older vLLM), fails the turn with its message;
//! - `refusal` deltas are shown as the answer;
//! - `extra_content` on a tool call (Gemini's thought signature) is kept
//!   and sent back with that call.

use super::assemble::Assembler;
use super::body::Body;
use super::errors::{self, ProviderError, Redactor};
use super::settings::{to_json, Provider, Request};
use super::wire::{Flow, WireParser};
use crate::model::{Image, Message, Parts, ProviderData, Text, ToolSpec, Usage, Wire, EMPTY_TEXT};
use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::HashMap;

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a Text,
    },
    /// A prompt with images: content parts, the text first.
    #[serde(rename = "user")]
    UserParts {
        content: Vec<Value>,
    },
    Assistant {
        content: Option<&'a Text>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<&'a Text>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a Text,
    },
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_content: Option<&'a Value>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a Text,
}

fn message(message: &Message, replay: bool) -> WireMessage<'_> {
    match message {
        Message::User { content, images } if images.is_empty() => WireMessage::User { content },
        Message::User { content, images } => WireMessage::UserParts {
            content: image_parts(content, images),
        },
        Message::Assistant(assistant) => WireMessage::Assistant {
            content: assistant.text.as_ref(),
            tool_calls: assistant
                .tool_calls
                .iter()
                .map(|call| WireCall {
                    id: &call.id,
                    kind: "function",
                    function: WireFunction {
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                    extra_content: call
                        .provider_data
                        .as_ref()
                        .filter(|d| d.wire == Wire::Chat)
                        .map(|d| &d.value),
                })
                .collect(),
            // Every tool-calling turn carries its reasoning back ("" when
            // there was none), as DeepSeek's thinking mode requires.
            reasoning_content: (replay && !assistant.tool_calls.is_empty())
                .then(|| assistant.reasoning.as_ref().unwrap_or(&EMPTY_TEXT)),
        },
        Message::Tool {
            call_id, content, ..
        } => WireMessage::Tool {
            tool_call_id: call_id,
            content,
        },
    }
}

/// A prompt's text and images as Chat Completions content parts: `text`,
/// then `image_url` parts with a `data:` URL (OpenAI's API reference,
/// "Create chat completion", `ChatCompletionContentPartImage`).
fn image_parts(content: &Text, images: &[Image]) -> Vec<Value> {
    let mut parts = Vec::with_capacity(images.len() + 1);
    if content.len() > 0 {
        parts.push(json!({"type": "text", "text": content}));
    }
    for image in images {
        parts.push(json!({"type": "image_url", "image_url": {"url": image.data_url()}}));
    }
    parts
}

pub(super) fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": &*spec.parameters,
        }
    })
}

/// One history message as a `messages` entry.
pub(super) fn fragment(provider: &Provider, m: &Message) -> Vec<u8> {
    to_json(&message(m, provider.reasoning_replay))
}

/// `{"model", "messages": [system, …history], "stream", "stream_options",
/// "tools", "reasoning_effort"}`, the history's entries as `fragments`
/// holds them.
pub(super) fn body(
    provider: &Provider,
    request: &Request<'_>,
    fragments: &[Parts],
) -> Result<Body, ProviderError> {
    let mut body = Body::default();
    body.push(&b"{\"model\":"[..]);
    body.push_json(&provider.model)?;
    body.push(&b",\"messages\":["[..]);
    body.push_json(&WireMessage::System {
        content: request.system,
    })?;
    for fragment in fragments {
        body.push(&b","[..]);
        body.push_parts(fragment);
    }
    body.push(&b"],\"stream\":true,\"stream_options\":{\"include_usage\":true}"[..]);
    if let Some(cap) = request.max_output_tokens {
        // Only when a budget holds it: without one, the server's default,
        // as before (a local server may refuse a cap above its context).
        body.push(&b","[..]);
        body.push_json(provider.chat_cap_field())?;
        body.push(&b":"[..]);
        body.push_json(&cap)?;
    }
    if !request.tools.is_empty() {
        body.push(&b",\"tools\":"[..]);
        body.push_json(&request.tools.iter().map(tool).collect::<Vec<_>>())?;
    }
    if let Some(effort) = provider.reasoning_effort {
        body.push(&b",\"reasoning_effort\":"[..]);
        body.push_json(effort.as_str())?;
    }
    body.push(&b"}"[..]);
    Ok(body)
}

/// What one chunk says: its top-level fields and its first choice's,
/// filled in place as the chunk is read. A chunk is read for every
/// streamed delta; read as nested structs and returned level by level, its
/// ~270 bytes were copied some 25 times per delta (a fifth of the stream
/// path's time, by `perf`).
#[derive(Default)]
struct Chunk<'a> {
    /// Read field by field: a figure that is missing, negative or not a
    /// number counts as 0 rather than failing the stream.
    usage: Option<Value>,
    error: Option<Value>,
    /// `"error"` on older vLLM's error bodies.
    object: Option<Cow<'a, str>>,
    /// The first of `choices` (SCV asks for one; any others are skipped
    /// unread): its delta (`null` and absent alike leave this empty) and
    /// finish reason.
    delta: Delta<'a>,
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Default)]
struct Delta<'a> {
    content: Option<Content<'a>>,
    reasoning_content: Option<Content<'a>>,
    reasoning: Option<Content<'a>>,
    refusal: Option<Content<'a>>,
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

impl<'a> Chunk<'a> {
    /// Reads `data` into this (empty) chunk, where it lies: returning
    /// the chunk would copy it twice more.
    fn read(&mut self, data: &'a [u8]) -> serde_json::Result<()> {
        let mut de = serde_json::Deserializer::from_slice(data);
        de::DeserializeSeed::deserialize(InPlace(self), &mut de)?;
        de.end()
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum ChunkField {
    Choices,
    Usage,
    Error,
    Object,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum ChoiceField {
    Delta,
    FinishReason,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum DeltaField {
    Content,
    ReasoningContent,
    Reasoning,
    Refusal,
    ToolCalls,
    #[serde(other)]
    Other,
}

/// Reads a chunk, its `choices`, its first choice or that choice's delta
/// into the [`Chunk`] it holds.
struct InPlace<'c, 'a>(&'c mut Chunk<'a>);
struct Choices<'c, 'a>(&'c mut Chunk<'a>);
struct FirstChoice<'c, 'a>(&'c mut Chunk<'a>);
struct DeltaOf<'c, 'a>(&'c mut Chunk<'a>);

impl<'de> de::DeserializeSeed<'de> for InPlace<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for InPlace<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a chat completion chunk")
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let chunk = self.0;
        while let Some(field) = map.next_key::<ChunkField>()? {
            match field {
                ChunkField::Choices => map.next_value_seed(Choices(&mut *chunk))?,
                ChunkField::Usage => chunk.usage = map.next_value()?,
                ChunkField::Error => chunk.error = map.next_value()?,
                ChunkField::Object => {
                    chunk.object = map.next_value::<Option<Str<'de>>>()?.map(|s| s.0)
                }
                ChunkField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// `choices`: a list (or `null`).
impl<'de> de::DeserializeSeed<'de> for Choices<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Choices<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of choices")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if seq.next_element_seed(FirstChoice(self.0))?.is_some() {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
        }
        Ok(())
    }
}

impl<'de> de::DeserializeSeed<'de> for FirstChoice<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FirstChoice<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a choice")
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let chunk = self.0;
        while let Some(field) = map.next_key::<ChoiceField>()? {
            match field {
                ChoiceField::Delta => map.next_value_seed(DeltaOf(&mut *chunk))?,
                ChoiceField::FinishReason => {
                    chunk.finish_reason = map.next_value::<Option<Str<'de>>>()?.map(|s| s.0)
                }
                ChoiceField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A choice's `delta`: an object (or `null`).
impl<'de> de::DeserializeSeed<'de> for DeltaOf<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DeltaOf<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a delta")
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let delta = &mut self.0.delta;
        while let Some(field) = map.next_key::<DeltaField>()? {
            match field {
                DeltaField::Content => delta.content = map.next_value()?,
                DeltaField::ReasoningContent => delta.reasoning_content = map.next_value()?,
                DeltaField::Reasoning => delta.reasoning = map.next_value()?,
                DeltaField::Refusal => delta.refusal = map.next_value()?,
                DeltaField::ToolCalls => delta.tool_calls = map.next_value()?,
                DeltaField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A string, borrowed from the chunk when it has no escapes.
#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

/// A content field: a string (the usual), an array of typed parts
/// (Mistral), or anything else (ignored).
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part>),
    Other,
}

/// One typed content part.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Part {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: Thinking,
    },
    #[serde(other)]
    Other,
}

/// Mistral's `thinking` is a list of text parts (or, elsewhere, a string).
#[derive(Deserialize, Default)]
#[serde(untagged)]
enum Thinking {
    Text(String),
    Parts(Vec<Part>),
    #[default]
    None,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                while let Some(part) = seq.next_element::<Part>()? {
                    parts.push(part);
                }
                Ok(Content::Parts(parts))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Content::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Content::Other)
            }
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

impl Content<'_> {
    /// The text of a string field.
    fn text(&self) -> Option<&str> {
        match self {
            Content::Text(text) => Some(text),
            _ => None,
        }
    }
}

fn thinking_text(thinking: &Thinking, out: &mut String) {
    match thinking {
        Thinking::Text(text) => out.push_str(text),
        Thinking::Parts(parts) => {
            for part in parts {
                if let Part::Text { text } = part {
                    out.push_str(text);
                }
            }
        }
        Thinking::None => {}
    }
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
    #[serde(default)]
    extra_content: Option<Value>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    arguments: Option<Arguments<'a>>,
}

/// Arguments as a JSON string (the usual) or, from some servers, an
/// object (taken as the whole arguments).
enum Arguments<'a> {
    Text(Cow<'a, str>),
    Object(String),
}

impl<'de: 'a, 'a> Deserialize<'de> for Arguments<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either<'a> {
            #[serde(borrow)]
            Text(Cow<'a, str>),
            Value(Value),
        }
        Ok(match Either::deserialize(deserializer)? {
            Either::Text(text) => Arguments::Text(text),
            Either::Value(value) => Arguments::Object(value.to_string()),
        })
    }
}

/// A Chat Completions `usage` object, kept by kind. `prompt_tokens`
/// includes the cached tokens (`prompt_tokens_details.cached_tokens`, or
/// DeepSeek's `prompt_cache_hit_tokens`), and `completion_tokens` the
/// reasoning tokens (`completion_tokens_details.reasoning_tokens`). The
/// object is the whole count for the request, whichever chunk carries it:
/// a stream that repeats it (some servers send it on every chunk, growing)
/// replaces the figures, never adds them.
fn wire_usage(usage: &Value) -> Usage {
    let prompt = number(usage, "/prompt_tokens");
    let cached = number(usage, "/prompt_tokens_details/cached_tokens")
        .max(number(usage, "/prompt_cache_hit_tokens"))
        .min(prompt);
    let output = number(usage, "/completion_tokens");
    Usage {
        input: prompt - cached,
        cache_read: cached,
        cache_write: 0,
        output,
        reasoning: number(usage, "/completion_tokens_details/reasoning_tokens").min(output),
    }
}

fn number(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// Where `<think>` handling stands in the content.
#[derive(Debug, Default, PartialEq, Eq)]
enum Think {
    /// Nothing but whitespace (or the start of a `<think>` tag) so far.
    #[default]
    Start,
    /// Inside `<think>` … `</think>`.
    Thinking,
    /// Past the reasoning (or there was none): content is answer.
    Answer,
}

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Reads chat-completion chunks into the assembler.
#[derive(Default)]
pub(super) struct Parser {
    /// Which call each wire `index` currently feeds.
    slots: HashMap<usize, usize>,
    think: Think,
    /// Content held back until it is known to be answer or reasoning (a
    /// tag may be split across chunks).
    held: String,
}

impl WireParser for Parser {
    fn apply(
        &mut self,
        data: &[u8],
        asm: &mut Assembler,
        redact: &Redactor,
    ) -> Result<Flow, ProviderError> {
        if data == b"[DONE]" {
            return Ok(Flow::Done);
        }
        let mut chunk = Chunk::default();
        chunk.read(data).map_err(|err| {
            ProviderError::provider(format!("malformed provider stream chunk: {err}"))
        })?;
        if let Some(error) = chunk.error.take().filter(|e| !e.is_null()) {
            return Err(errors::from_value(None, &error, redact));
        }
        if chunk.object.as_deref() == Some("error") {
            let whole: Value = serde_json::from_slice(data).unwrap_or(Value::Null);
            return Err(errors::from_value(None, &whole, redact));
        }
        if let Some(usage) = chunk.usage.take().filter(Value::is_object) {
            asm.usage(wire_usage(&usage));
        }
        self.apply_delta(&mut chunk.delta, asm)?;
        if let Some(reason) = chunk.finish_reason {
            if reason == "error" {
                return Err(ProviderError::provider(
                    "the provider ended the response with an error",
                ));
            }
            asm.finish(&reason);
        }
        Ok(Flow::Continue)
    }

    /// The response ended: what was held back goes where it was heading.
    fn finish(&mut self, asm: &mut Assembler) -> Result<(), ProviderError> {
        let held = std::mem::take(&mut self.held);
        match self.think {
            Think::Thinking => asm.reasoning(&held),
            Think::Start | Think::Answer => asm.text(&held),
        }
    }
}

impl Parser {
    fn apply_delta(
        &mut self,
        delta: &mut Delta<'_>,
        asm: &mut Assembler,
    ) -> Result<(), ProviderError> {
        for call in delta.tool_calls.take().unwrap_or_default() {
            let id = call
                .id
                .as_deref()
                .filter(|id| !id.is_empty() && *id != "null");
            let slot = self.slot(asm, call.index, id)?;
            let function = call.function.as_ref();
            let arguments = match function.and_then(|f| f.arguments.as_ref()) {
                Some(Arguments::Text(text)) => Some(text.as_ref()),
                Some(Arguments::Object(whole)) if asm.call_arguments(slot).is_empty() => {
                    Some(whole.as_str())
                }
                Some(Arguments::Object(_)) | None => None,
            };
            asm.tool_call(
                slot,
                id,
                function.and_then(|f| f.name.as_deref()),
                arguments,
            )?;
            if let Some(extra) = call.extra_content {
                asm.call_data(
                    slot,
                    ProviderData {
                        wire: Wire::Chat,
                        value: extra,
                    },
                );
            }
        }
        let reasoning = delta
            .reasoning_content
            .as_ref()
            .and_then(Content::text)
            .or_else(|| delta.reasoning.as_ref().and_then(Content::text));
        if let Some(reasoning) = reasoning {
            asm.reasoning(reasoning)?;
        }
        match delta.content.take() {
            Some(Content::Text(text)) => self.content(&text, asm)?,
            Some(Content::Parts(parts)) => {
                for part in parts {
                    match part {
                        Part::Text { text } => self.content(&text, asm)?,
                        Part::Thinking { thinking } => {
                            let mut text = String::new();
                            thinking_text(&thinking, &mut text);
                            asm.reasoning(&text)?;
                        }
                        Part::Other => {}
                    }
                }
            }
            Some(Content::Other) | None => {}
        }
        if let Some(refusal) = delta.refusal.as_ref().and_then(Content::text) {
            asm.text(refusal)?;
        }
        Ok(())
    }

    /// Answer text, unless it is `<think>` reasoning.
    fn content(&mut self, text: &str, asm: &mut Assembler) -> Result<(), ProviderError> {
        if self.think == Think::Answer {
            return asm.text(text);
        }
        self.held.push_str(text);
        loop {
            match self.think {
                Think::Start => {
                    let trimmed = self.held.trim_start();
                    if let Some(rest) = trimmed.strip_prefix(THINK_OPEN) {
                        self.held = rest.to_string();
                        self.think = Think::Thinking;
                    } else if THINK_OPEN.starts_with(trimmed) {
                        return Ok(()); // maybe a tag, split: wait
                    } else {
                        self.think = Think::Answer;
                        let held = std::mem::take(&mut self.held);
                        return asm.text(&held);
                    }
                }
                Think::Thinking => {
                    if let Some(end) = self.held.find(THINK_CLOSE) {
                        let rest = self.held.split_off(end);
                        asm.reasoning(&std::mem::take(&mut self.held))?;
                        self.think = Think::Answer;
                        let answer = rest[THINK_CLOSE.len()..].trim_start();
                        return asm.text(answer);
                    }
                    // Hand out all but what might be the start of `</think>`.
                    let keep = (1..THINK_CLOSE.len())
                        .rev()
                        .find(|&n| {
                            self.held.len() >= n
                                && self.held.is_char_boundary(self.held.len() - n)
                                && THINK_CLOSE.starts_with(&self.held[self.held.len() - n..])
                        })
                        .unwrap_or(0);
                    let tail = self.held.split_off(self.held.len() - keep);
                    let thinking = std::mem::replace(&mut self.held, tail);
                    return asm.reasoning(&thinking);
                }
                Think::Answer => {
                    let held = std::mem::take(&mut self.held);
                    return asm.text(&held);
                }
            }
        }
    }

    /// The call a fragment belongs to: by `index`; a new non-empty `id` at a
    /// known index (or with no index at all) starts a new call.
    fn slot(
        &mut self,
        asm: &mut Assembler,
        index: Option<usize>,
        id: Option<&str>,
    ) -> Result<usize, ProviderError> {
        let key = index.unwrap_or(usize::MAX);
        let current = self.slots.get(&key).copied().or_else(|| {
            // No index at all: fragments continue the latest call.
            index
                .is_none()
                .then(|| asm.calls().checked_sub(1))
                .flatten()
        });
        let starts_new = match (current, id) {
            (None, _) => true,
            (Some(slot), Some(id)) => asm.call_id(slot).is_some_and(|known| known != id),
            (Some(_), None) => false,
        };
        match current {
            Some(slot) if !starts_new => Ok(slot),
            _ => {
                let slot = asm.new_call()?;
                self.slots.insert(key, slot);
                Ok(slot)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scv_protocol::FailureCode;

    /// The body of a one-message request with output cap `cap`.
    fn capped(provider: &Provider, cap: Option<u64>) -> Value {
        let history = [Message::user("hi")];
        let fragments: Vec<Parts> = history
            .iter()
            .map(|m| crate::model::share(fragment(provider, m), m.texts()))
            .collect();
        let request = Request {
            system: "s",
            history: &history,
            rendered: None,
            tools: &[],
            max_output_tokens: cap,
        };
        serde_json::from_slice(&body(provider, &request, &fragments).unwrap().to_vec()).unwrap()
    }

    /// A budget's output cap goes in the body under the name the server
    /// takes (OpenAI's own at OpenAI); without one, no cap, as before.
    #[test]
    fn a_budget_cap_goes_in_the_body_under_the_servers_name() {
        let mut provider = Provider::for_tests(Wire::Chat);
        let plain = capped(&provider, None);
        assert!(plain.get("max_tokens").is_none(), "{plain}");
        assert!(plain.get("max_completion_tokens").is_none(), "{plain}");
        assert_eq!(capped(&provider, Some(1500))["max_tokens"], 1500);
        provider.base_url = "https://api.openai.com/v1".into();
        let openai = capped(&provider, Some(1500));
        assert_eq!(openai["max_completion_tokens"], 1500, "{openai}");
        assert!(openai.get("max_tokens").is_none(), "{openai}");
    }

    fn parse(chunks: &[&str]) -> Assembler {
        let mut parser = Parser::default();
        let mut asm = Assembler::default();
        for chunk in chunks {
            parser
                .apply(chunk.as_bytes(), &mut asm, &Redactor::default())
                .unwrap();
        }
        asm
    }

    fn calls_of(chunks: &[Value]) -> Vec<(String, String, String)> {
        let chunks: Vec<String> = chunks.iter().map(Value::to_string).collect();
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        parse(&chunks)
            .into_parts()
            .0
            .tool_calls
            .into_iter()
            .map(|c| (c.id, c.name, c.arguments.to_string()))
            .collect()
    }

    /// The chunk is read in place: every shape a chunk's choices and delta
    /// take reads as it did when they were nested structs — `null` and
    /// absent alike, only the first choice, escapes decoded, fields in any
    /// order, unknown fields skipped, anything else malformed.
    #[test]
    fn chunks_read_in_place_take_every_shape() {
        let asm = parse(&[
            r#"{"choices":null}"#,
            r#"{"choices":[]}"#,
            r#"{"choices":[{"delta":null,"finish_reason":null}]}"#,
            r#"{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":"a\"b\u00e9 "}}]}"#,
            r#"{"choices":[{"delta":{"content":"first "}},{"delta":{"content":"SECOND"}}]}"#,
            r#"{"choices":[{"finish_reason":null,"logprobs":{"content":[]},"delta":{"extra":[1,{"a":2}],"content":"last"}}],"object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#,
        ]);
        assert_eq!(asm.finish_reason(), Some("stop"));
        let (message, usage, _) = asm.into_parts();
        assert_eq!(
            message.text.as_ref().map(Text::as_str).as_deref(),
            Some("a\"b\u{e9} first last")
        );
        assert_eq!(usage.map(|u| (u.input, u.output)), Some((7, 3)));
        for malformed in [
            r#"{"choices":{"delta":{}}}"#,
            r#"{"choices":[null]}"#,
            r#"{"choices":[{"delta":"text"}]}"#,
            r#"{"choices":[{"delta":{"content":"a"}}]} trailing"#,
            r#"{"object":7}"#,
            r#"[1,2]"#,
        ] {
            let err = Parser::default()
                .apply(
                    malformed.as_bytes(),
                    &mut Assembler::default(),
                    &Redactor::default(),
                )
                .err()
                .unwrap_or_else(|| panic!("{malformed} was read"));
            assert!(
                err.to_string().contains("malformed provider stream chunk"),
                "{err}"
            );
        }
    }

    /// Usage figures are the provider's: a negative, fractional, missing or
    /// non-numeric one counts 0, a cached count above the prompt is capped
    /// at it, a huge one is kept; the stream never fails over usage.
    #[test]
    fn hostile_usage_figures_count_zero_and_never_fail_the_stream() {
        let max = u64::MAX;
        let asm = parse(&[
            r#"{"choices":[],"usage":{"prompt_tokens":-5,"completion_tokens":"many","prompt_tokens_details":null}}"#,
        ]);
        assert_eq!(asm.into_parts().1, Some(Usage::default()));
        let huge = format!(
            r#"{{"choices":[],"usage":{{"prompt_tokens":{max},"completion_tokens":{max},"prompt_tokens_details":{{"cached_tokens":{max}}},"completion_tokens_details":{{"reasoning_tokens":{max}}}}}}}"#
        );
        let asm = parse(&[
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2.5,"prompt_tokens_details":{"cached_tokens":99}}}"#,
        ]);
        assert_eq!(
            asm.into_parts().1,
            Some(Usage {
                input: 0,
                cache_read: 10,
                ..Usage::default()
            })
        );
        let asm = parse(&[huge.as_str()]);
        assert_eq!(
            asm.into_parts().1,
            Some(Usage {
                input: 0,
                cache_read: max,
                cache_write: 0,
                output: max,
                reasoning: max,
            })
        );
        let asm = parse(&[r#"{"choices":[],"usage":null}"#]);
        assert_eq!(asm.into_parts().1, None);
    }

    #[test]
    fn assembles_tool_calls_by_index() {
        let asm = parse(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"bash","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"comm"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"read_file","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}"#,
        ]);
        let (message, usage, finish) = asm.into_parts();
        assert_eq!(message.tool_calls.len(), 2);
        assert_eq!(message.tool_calls[0].id, "call_a");
        assert_eq!(message.tool_calls[0].arguments, "{\"command\":\"ls\"}");
        assert_eq!(message.tool_calls[1].name, "read_file");
        assert_eq!(
            usage.map(scv_protocol::Usage::from),
            Some(scv_protocol::Usage {
                input_tokens: 10,
                output_tokens: 3
            })
        );
        assert_eq!(finish.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn too_many_tool_calls_is_tool_limit() {
        let mut parser = Parser::default();
        let mut asm = Assembler::default();
        for index in 0..32 {
            let chunk = format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":{index},"id":"c{index}","function":{{"name":"bash"}}}}]}}}}]}}"#
            );
            parser
                .apply(chunk.as_bytes(), &mut asm, &Redactor::default())
                .unwrap();
        }
        // A huge index is one more call, not a billion slots.
        let chunk = r#"{"choices":[{"delta":{"tool_calls":[{"index":4000000000,"id":"x","function":{"name":"bash"}}]}}]}"#;
        let err = parser
            .apply(chunk.as_bytes(), &mut asm, &Redactor::default())
            .unwrap_err();
        assert_eq!(err.code, FailureCode::ToolLimit);
    }

    #[test]
    fn parallel_calls_without_index_are_told_apart_by_id() {
        // Several calls, none with an `index` or `type` (as some local
        // servers send them): a new id starts a new call.
        let got = calls_of(&[
            json!({"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"bash","arguments":"{\"command\":"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"\"ls\"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"bash","arguments":"{\"command\":\"pwd\"}"}}]}}]}),
        ]);
        assert_eq!(
            got,
            [
                ("a".into(), "bash".into(), "{\"command\":\"ls\"}".into()),
                ("b".into(), "bash".into(), "{\"command\":\"pwd\"}".into()),
            ]
        );
    }

    #[test]
    fn whole_calls_at_one_index_and_repeated_names_stay_separate_and_whole() {
        // Ollama sends each call whole, every one at index 0; other servers
        // repeat the name on every fragment of one call.
        let got = calls_of(&[
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b\"}"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c","function":{"name":"list_dir","arguments":"{\"pa"}}]}}]}),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"list_dir","arguments":"th\":\".\"}"}}]}}]}),
        ]);
        assert_eq!(
            got,
            [
                ("a".into(), "read_file".into(), "{\"path\":\"a\"}".into()),
                ("b".into(), "read_file".into(), "{\"path\":\"b\"}".into()),
                ("c".into(), "list_dir".into(), "{\"path\":\".\"}".into()),
            ]
        );
    }

    #[test]
    fn empty_deltas_are_not_progress() {
        let mut parser = Parser::default();
        let mut asm = Assembler::default();
        for chunk in [
            r#"{"choices":[{"delta":{}}]}"#,
            r#"{"choices":[{"delta":{"content":""}}]}"#,
            r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#,
            r#"{"choices":[]}"#,
        ] {
            parser
                .apply(chunk.as_bytes(), &mut asm, &Redactor::default())
                .unwrap();
            assert!(!asm.take_progress(), "{chunk}");
        }
        parser
            .apply(
                br#"{"choices":[{"delta":{"content":"hi"}}]}"#,
                &mut asm,
                &Redactor::default(),
            )
            .unwrap();
        assert!(asm.take_progress());
    }
}
