//! The wires SCV speaks.

use serde::{Deserialize, Serialize};

/// The API a provider speaks (`wire` in a provider definition), and the
/// tag on provider data, so that data goes back only to the wire it came
/// from. What each wire sends and reads is its row of the provider layer's
/// wire table; adding a wire is a variant here, a file and that row.
///
/// The config names come from serde (`rename_all`), so an unknown `wire`
/// is reported by serde as it always was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Wire {
    /// OpenAI Chat Completions and the servers compatible with it.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Anthropic,
}
