//! The model vocabulary: the canonical history (messages, tool calls,
//! opaque provider data), the tools as offered, the wires, reasoning effort
//! and token usage.
//!
//! A leaf on purpose: it imports nothing of this crate, so the context,
//! the provider layer, the tools, the agent and the configuration can all
//! speak it without importing each other. The protocol's own types stay
//! out too; what a client sees (`turn.completed`'s usage) is converted
//! where that event is built.

mod effort;
mod image;
mod message;
mod rendered;
mod text;
mod tool;
mod usage;
mod wire;

pub(crate) use effort::Effort;
pub(crate) use image::{Image, IMAGE_WEIGHT};
pub(crate) use message::{AssistantMessage, Message, ProviderData, ToolCall};
pub(crate) use rendered::{RenderKey, Rendered};
pub(crate) use text::{share, Parts, Text, EMPTY as EMPTY_TEXT};
pub(crate) use tool::ToolSpec;
pub(crate) use usage::Usage;
pub use wire::Wire;
