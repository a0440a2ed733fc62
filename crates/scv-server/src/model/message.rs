//! The conversation as SCV keeps it, independent of any provider's wire:
//! user prompts, assistant messages (text, tool calls, reasoning) and tool
//! results. Each wire renders these into its own JSON. Provider data that
//! must go back unchanged on later requests of the same wire (a reasoning
//! signature, an encrypted reasoning item, extra fields on a tool call) is
//! kept as opaque [`ProviderData`] tagged with the wire it came from, so it
//! is never sent to another wire's API.

use super::{Image, Text, Wire, IMAGE_WEIGHT};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Opaque data a provider attached, to be sent back unchanged by the same
/// wire (and dropped by any other).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProviderData {
    pub wire: Wire,
    pub value: Value,
}

/// One message of the history (the system prompt is not part of it; it is
/// rebuilt for every request). Serialized as the session journal keeps
/// it (`role`-tagged; docs/DESIGN.md, "The session store").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub(crate) enum Message {
    User {
        content: Text,
        /// Images sent with the prompt (capability `images`); absent from
        /// the journal's record when there are none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    Assistant(AssistantMessage),
    /// The result of one tool call.
    Tool {
        call_id: String,
        content: Text,
        /// What its `tool.completed` said: false when the call was denied,
        /// failed, named an unknown tool, or never finished (interrupted,
        /// cancelled). Anthropic marks such a result `is_error`; the
        /// other wires have no place for it.
        success: bool,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AssistantMessage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Text>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// What the model reasoned, as far as the provider showed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Text>,
    /// Reasoning state the wire needs back (Anthropic thinking blocks with
    /// signatures, Responses reasoning items, a chat `reasoning_content`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<ProviderData>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolCall {
    pub id: String,
    pub name: String,
    /// The JSON arguments exactly as the model wrote them.
    pub arguments: Text,
    /// Extra fields the provider put on the call (Gemini's
    /// `extra_content` with its thought signature).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<ProviderData>,
}

/// Fixed cost of a message in [`Message::weight`].
const OVERHEAD: usize = 16;

impl Message {
    /// Rough size in bytes, used for history bounds and token estimates.
    pub(crate) fn weight(&self) -> usize {
        OVERHEAD
            + match self {
                Message::User { content, images } => content.len() + images.len() * IMAGE_WEIGHT,
                Message::Assistant(message) => {
                    message.text.as_ref().map_or(0, Text::len)
                        + message.reasoning.as_ref().map_or(0, Text::len)
                        + message
                            .tool_calls
                            .iter()
                            .map(|c| c.id.len() + c.name.len() + c.arguments.len() + OVERHEAD)
                            .sum::<usize>()
                }
                Message::Tool {
                    call_id, content, ..
                } => call_id.len() + content.len(),
            }
    }

    /// Gives back the room its strings grew beyond their text: a history
    /// keeps its messages for the whole session. (Its [`Text`]s are held
    /// at their exact size already.)
    pub(crate) fn shrink_to_fit(&mut self) {
        match self {
            Message::User { images, .. } => images.shrink_to_fit(),
            Message::Tool { call_id, .. } => call_id.shrink_to_fit(),
            Message::Assistant(assistant) => assistant.tool_calls.shrink_to_fit(),
        }
    }

    /// Its texts, for a rendering to share ([`super::text::share`]).
    pub(crate) fn texts(&self) -> impl Iterator<Item = &Text> {
        let (first, second, calls, images) = match self {
            Message::User { content, images } => (Some(content), None, &[][..], &images[..]),
            Message::Tool { content, .. } => (Some(content), None, &[][..], &[][..]),
            Message::Assistant(assistant) => (
                assistant.text.as_ref(),
                assistant.reasoning.as_ref(),
                &assistant.tool_calls[..],
                &[][..],
            ),
        };
        first
            .into_iter()
            .chain(second)
            .chain(calls.iter().map(|call| &call.arguments))
            .chain(images.iter().map(|image| &image.data))
    }

    pub(crate) fn user(content: impl Into<Text>) -> Message {
        Message::User {
            content: content.into(),
            images: Vec::new(),
        }
    }

    /// A prompt with the images sent with it.
    pub(crate) fn user_with_images(content: impl Into<Text>, images: Vec<Image>) -> Message {
        Message::User {
            content: content.into(),
            images,
        }
    }

    pub(crate) fn is_user(&self) -> bool {
        matches!(self, Message::User { .. })
    }
}
