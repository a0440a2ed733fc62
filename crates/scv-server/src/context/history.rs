//! The canonical history of a session (without the system prompt, which is
//! rebuilt for every request) and its size in bytes.

use crate::provider::ChatMessage;

#[derive(Debug, Default, Clone)]
pub struct History {
    messages: Vec<ChatMessage>,
    bytes: usize,
}

impl History {
    pub fn push(&mut self, message: ChatMessage) {
        self.bytes += message.weight();
        self.messages.push(message);
    }

    pub fn messages(&self) -> &[ChatMessage] {
        &self.messages
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    pub fn clear(&mut self) {
        self.messages.clear();
        self.bytes = 0;
    }

    /// Gives every tool call of the last assistant message a result, so the
    /// next request is well-formed after a turn stopped between a call and
    /// its result (providers reject a call without its result).
    pub fn close_open_tool_calls(&mut self, note: &str) {
        let Some(last_assistant) = self
            .messages
            .iter()
            .rposition(|m| matches!(m, ChatMessage::Assistant { .. }))
        else {
            return;
        };
        let ChatMessage::Assistant { tool_calls, .. } = &self.messages[last_assistant] else {
            unreachable!()
        };
        let answered: Vec<&str> = self.messages[last_assistant + 1..]
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                _ => None,
            })
            .collect();
        let missing: Vec<String> = tool_calls
            .iter()
            .filter(|c| !answered.contains(&c.id.as_str()))
            .map(|c| c.id.clone())
            .collect();
        for id in missing {
            self.push(ChatMessage::Tool {
                tool_call_id: id,
                content: note.to_string(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{FunctionCall, ToolCall};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "bash".into(),
                arguments: "{}".into(),
            },
        }
    }

    #[test]
    fn open_tool_calls_get_a_result() {
        let mut history = History::default();
        history.push(ChatMessage::User {
            content: "hi".into(),
        });
        history.push(ChatMessage::Assistant {
            content: None,
            tool_calls: vec![call("a"), call("b")],
        });
        history.push(ChatMessage::Tool {
            tool_call_id: "a".into(),
            content: "ok".into(),
        });
        history.close_open_tool_calls("cancelled");
        assert_eq!(history.len(), 4);
        assert_eq!(
            history.messages()[3],
            ChatMessage::Tool {
                tool_call_id: "b".into(),
                content: "cancelled".into()
            }
        );
        let bytes = history.bytes();
        history.close_open_tool_calls("cancelled");
        assert_eq!((history.len(), history.bytes()), (4, bytes));
    }
}
