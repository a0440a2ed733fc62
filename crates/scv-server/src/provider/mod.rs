//! The model provider: chat messages in the OpenAI wire shape, and the
//! streaming chat-completions client.

pub mod openai;
pub mod sse;
mod stream;

pub use openai::OpenAi;
pub use stream::{AssistantResponse, ResponseStream};

use scv_protocol::FailureCode;
use serde::{Deserialize, Serialize};

/// One message of the conversation, serialized as the provider expects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

impl ChatMessage {
    /// Rough size in bytes, used for history bounds and token estimates.
    pub fn weight(&self) -> usize {
        const OVERHEAD: usize = 16;
        OVERHEAD
            + match self {
                ChatMessage::System { content } | ChatMessage::User { content } => content.len(),
                ChatMessage::Assistant {
                    content,
                    tool_calls,
                } => {
                    content.as_ref().map_or(0, String::len)
                        + tool_calls
                            .iter()
                            .map(|c| {
                                c.id.len()
                                    + c.function.name.len()
                                    + c.function.arguments.len()
                                    + OVERHEAD
                            })
                            .sum::<usize>()
                }
                ChatMessage::Tool {
                    tool_call_id,
                    content,
                } => tool_call_id.len() + content.len(),
            }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionCall,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// The JSON arguments exactly as the model wrote them.
    pub arguments: String,
}

/// A failed provider request, already mapped to the turn failure code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    pub code: FailureCode,
    pub message: String,
    /// The provider said the prompt does not fit its context window.
    pub context_overflow: bool,
}

impl ProviderError {
    pub fn provider(message: impl Into<String>) -> Self {
        ProviderError {
            code: FailureCode::ProviderError,
            message: message.into(),
            context_overflow: false,
        }
    }

    pub fn limit(code: FailureCode, message: impl Into<String>) -> Self {
        ProviderError {
            code,
            message: message.into(),
            context_overflow: false,
        }
    }
}

/// Removes the API key from provider text, wherever it got in. Applied to
/// the raw text before anything is cut or reflowed, so no part of a key
/// survives a cut.
#[derive(Clone, Default)]
pub struct Redactor {
    key: Option<std::sync::Arc<str>>,
}

impl Redactor {
    pub fn new(key: Option<&str>) -> Self {
        Redactor {
            // Too short to find reliably, and no real key is this short.
            key: key.filter(|k| k.len() >= 4).map(Into::into),
        }
    }

    pub fn text(&self, text: &str) -> String {
        match &self.key {
            Some(key) => text.replace(&**key, "[redacted]"),
            None => text.to_string(),
        }
    }

    pub fn error(&self, mut error: ProviderError) -> ProviderError {
        error.message = self.text(&error.message);
        error
    }
}

impl std::fmt::Display for ProviderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}
