//! A stored history, as the agent's messages again.

use crate::context::History;
use crate::model::Message;
use scv_store::Replay;
use serde::Deserialize;

/// The canonical history `replay` ends with, calibration included; a
/// message this build cannot read makes the session unusable (named).
pub(crate) fn history_of(replay: &Replay) -> Result<History, String> {
    let mut messages = Vec::with_capacity(replay.history.len());
    for (index, value) in replay.history.iter().enumerate() {
        let message = Message::deserialize(value)
            .map_err(|err| format!("history message {index} is unreadable: {err}"))?;
        messages.push(message);
    }
    Ok(History::restore(messages, replay.tokens_per_byte))
}
