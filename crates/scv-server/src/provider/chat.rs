//! The Chat Completions wire (`wire = "chat"`): OpenAI's
//! `POST {base_url}/chat/completions` and the many servers compatible with
//! it. Requests carry `stream: true` with usage in the final chunk, tools
//! as function tools, results as `role: "tool"` messages.
//!
//! Streamed tool calls are assembled by `index`; servers that send no
//! `index` (or reuse one for several calls) are told apart by `id`.

use super::assemble::Assembler;
use super::stream::Flow;
use super::{errors, ProviderError, Redactor, Request, ToolSpec};
use crate::message::Message;
use scv_protocol::Usage;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::HashMap;

pub(super) fn url(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim_end_matches('/'))
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

fn message(message: &Message) -> WireMessage<'_> {
    match message {
        Message::User { content } => WireMessage::User { content },
        Message::Assistant(assistant) => WireMessage::Assistant {
            content: assistant.text.as_deref(),
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
                })
                .collect(),
        },
        Message::Tool { call_id, content } => WireMessage::Tool {
            tool_call_id: call_id,
            content,
        },
    }
}

fn tool(spec: &ToolSpec) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": &*spec.parameters,
        }
    })
}

pub(super) fn body(model: &str, request: &Request<'_>) -> Result<Vec<u8>, ProviderError> {
    let messages = std::iter::once(WireMessage::System {
        content: request.system,
    })
    .chain(request.history.iter().map(message))
    .collect();
    serde_json::to_vec(&Body {
        model,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: request.tools.iter().map(tool).collect(),
    })
    .map_err(|err| ProviderError::provider(format!("cannot encode request: {err}")))
}

/// Size of the tool definitions in a request.
pub(super) fn tools_bytes(tools: &[ToolSpec]) -> usize {
    if tools.is_empty() {
        return 0;
    }
    let tools: Vec<Value> = tools.iter().map(tool).collect();
    serde_json::to_vec(&tools).map_or(0, |v| v.len())
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// Reads chat-completion chunks into the assembler.
#[derive(Default)]
pub(super) struct Parser {
    /// Which call each wire `index` currently feeds.
    slots: HashMap<usize, usize>,
}

impl Parser {
    pub fn apply(
        &mut self,
        data: &[u8],
        asm: &mut Assembler,
        redact: &Redactor,
    ) -> Result<Flow, ProviderError> {
        if data == b"[DONE]" {
            return Ok(Flow::Done);
        }
        let chunk: Chunk = serde_json::from_slice(data).map_err(|err| {
            ProviderError::provider(format!("malformed provider stream chunk: {err}"))
        })?;
        if let Some(error) = chunk.error {
            return Err(errors::from_value(None, &error, redact));
        }
        if let Some(usage) = chunk.usage {
            asm.usage(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            });
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return Ok(Flow::Continue);
        };
        if let Some(reason) = choice.finish_reason {
            asm.finish(&reason);
        }
        let Some(delta) = choice.delta else {
            return Ok(Flow::Continue);
        };
        for call in delta.tool_calls.unwrap_or_default() {
            let id = call.id.as_deref().filter(|id| !id.is_empty());
            let slot = self.slot(asm, call.index, id)?;
            let function = call.function.as_ref();
            asm.tool_call(
                slot,
                id,
                function.and_then(|f| f.name.as_deref()),
                function.and_then(|f| f.arguments.as_deref()),
            )?;
        }
        if let Some(text) = delta.content {
            asm.text(&text)?;
        }
        Ok(Flow::Continue)
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
            .map(|c| (c.id, c.name, c.arguments))
            .collect()
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
            usage,
            Some(Usage {
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
