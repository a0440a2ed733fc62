//! A stored history, as the agent's messages again.

use crate::context::History;
use crate::model::Message;
use scv_store::Replay;
use serde::Deserialize;

/// The canonical history `replay` ends with, calibration included, taken
/// out of it (each stored message is let go of once it is a message, so a
/// 16 MiB history is not held twice); a message this build cannot read
/// makes the session unusable (named).
pub(crate) fn history_of(replay: &mut Replay) -> Result<History, String> {
    let stored = std::mem::take(&mut replay.history);
    let mut messages = Vec::with_capacity(stored.len());
    for (index, value) in stored.into_iter().enumerate() {
        let message = Message::deserialize(value)
            .map_err(|err| format!("history message {index} is unreadable: {err}"))?;
        messages.push(message);
    }
    Ok(History::restore(messages, replay.tokens_per_byte))
}
