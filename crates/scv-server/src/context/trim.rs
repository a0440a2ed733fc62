//! Bounding the history in bytes: the oldest messages go first, in whole
//! groups (a user message, or an assistant message with its tool results).

use super::History;
use crate::model::Message;

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Trimmed {
    /// Within the bound; nothing removed.
    Fits,
    /// This many oldest messages were removed.
    Removed(usize),
    /// The messages from `protect_from` on alone exceed the bound.
    TooLarge,
}

/// Drops the oldest groups until `history` fits `max_bytes`, never touching
/// messages at or after `protect_from` (the current turn).
pub(crate) fn trim(history: &mut History, max_bytes: usize, protect_from: usize) -> Trimmed {
    if history.bytes() <= max_bytes {
        return Trimmed::Fits;
    }
    let messages = history.messages();
    let protected: usize = messages[protect_from.min(messages.len())..]
        .iter()
        .map(Message::weight)
        .sum();
    if protected > max_bytes {
        return Trimmed::TooLarge;
    }
    let mut bytes = history.bytes();
    let mut cut = 0;
    while bytes > max_bytes && cut < protect_from {
        // Remove one group: the message at `cut` and the tool results after it.
        bytes -= messages[cut].weight();
        cut += 1;
        while cut < protect_from && matches!(messages[cut], Message::Tool { .. }) {
            bytes -= messages[cut].weight();
            cut += 1;
        }
    }
    history.drop_front(cut);
    Trimmed::Removed(cut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AssistantMessage, ToolCall};

    fn user(n: usize) -> Message {
        Message::user("u".repeat(n))
    }

    #[test]
    fn drops_oldest_groups_only() {
        let mut history = History::default();
        history.push(user(100));
        history.push(Message::Assistant(AssistantMessage {
            tool_calls: vec![ToolCall {
                id: "a".into(),
                name: "bash".into(),
                arguments: "{}".into(),
                provider_data: None,
            }],
            ..Default::default()
        }));
        history.push(Message::Tool {
            call_id: "a".into(),
            content: "r".repeat(100).into(),
            success: true,
        });
        history.push(user(100));
        let total = history.bytes();
        assert_eq!(trim(&mut history, total, 3), Trimmed::Fits);
        assert_eq!(trim(&mut history, total - 1, 3), Trimmed::Removed(1));
        // The assistant message goes together with its result.
        let smaller = history.bytes() - 1;
        assert_eq!(trim(&mut history, smaller, 2), Trimmed::Removed(2));
        assert_eq!(history.len(), 1);
        assert_eq!(trim(&mut history, 10, 0), Trimmed::TooLarge);
    }
}
