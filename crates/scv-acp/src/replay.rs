//! A stored session's past conversation as ACP `session/update`s, for
//! `session/load`: prompts as user message chunks, answers as agent
//! message chunks, tool calls as finished `tool_call`s with their output.
//! A past edit shows no diff: the file on disk is today's, not the one
//! the call changed. Turns that did not complete say so in one line.

use crate::updates::{first_line, kind, title};
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallStatus,
};
use scv_protocol::{TranscriptItem, TurnOutcome};

/// The updates that draw `items`, oldest first; `truncated` (older items
/// left out) opens with a note.
pub fn updates(items: Vec<TranscriptItem>, truncated: bool) -> Vec<SessionUpdate> {
    let mut out = Vec::with_capacity(items.len() + 1);
    if truncated {
        out.push(agent_text(
            "[older parts of this conversation are not shown]\n",
        ));
    }
    for (n, item) in items.into_iter().enumerate() {
        match item {
            TranscriptItem::User { text, .. } => {
                out.push(SessionUpdate::UserMessageChunk(chunk(text)));
            }
            TranscriptItem::Assistant { text, .. } => out.push(agent_text(&text)),
            TranscriptItem::Tool {
                name,
                arguments,
                output,
                success,
                truncated,
                ..
            } => {
                let args = serde_json::from_str(&arguments).unwrap_or(serde_json::Value::Null);
                let status = if success {
                    ToolCallStatus::Completed
                } else {
                    ToolCallStatus::Failed
                };
                let shown = if truncated {
                    format!("{output}\n[output cut for the transcript]")
                } else {
                    output
                };
                let call = ToolCall::new(format!("replay-{n}"), first_line(&title(&name, &args)))
                    .kind(kind(&name))
                    .status(status)
                    .raw_input(args)
                    .content(vec![ToolCallContent::from(ContentBlock::Text(
                        TextContent::new(shown),
                    ))]);
                out.push(SessionUpdate::ToolCall(call));
            }
            TranscriptItem::TurnEnded {
                outcome, message, ..
            } => {
                let note = match outcome {
                    TurnOutcome::Completed => continue,
                    TurnOutcome::Cancelled => "[the turn was cancelled]".to_string(),
                    TurnOutcome::Failed => format!(
                        "[the turn failed: {}]",
                        first_line(message.as_deref().unwrap_or(""))
                    ),
                    TurnOutcome::Interrupted => {
                        "[the turn was interrupted when SCV stopped; it did not run again]"
                            .to_string()
                    }
                };
                out.push(agent_text(&format!("\n{note}\n")));
            }
        }
    }
    out
}

pub(crate) fn chunk(text: String) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

fn agent_text(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(chunk(text.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_conversation_replays_in_order_with_finished_calls() {
        let turn = || "t1".to_string();
        let items = vec![
            TranscriptItem::User {
                turn_id: turn(),
                text: "list it".into(),
            },
            TranscriptItem::Tool {
                turn_id: turn(),
                call_id: "c1".into(),
                name: "bash".into(),
                arguments: r#"{"command":"ls"}"#.into(),
                output: "a.txt".into(),
                success: true,
                truncated: false,
            },
            TranscriptItem::Assistant {
                turn_id: turn(),
                text: "one file".into(),
            },
            TranscriptItem::TurnEnded {
                turn_id: turn(),
                outcome: TurnOutcome::Interrupted,
                code: None,
                message: None,
            },
        ];
        let updates = updates(items, true);
        let kinds: Vec<String> = updates
            .iter()
            .map(|u| {
                serde_json::to_value(u).unwrap()["sessionUpdate"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "agent_message_chunk",
                "user_message_chunk",
                "tool_call",
                "agent_message_chunk",
                "agent_message_chunk"
            ]
        );
        let call = serde_json::to_value(&updates[2]).unwrap();
        assert_eq!(call["title"], "Run shell command: ls");
        assert_eq!(call["status"], "completed");
        assert_eq!(call["kind"], "execute");
        assert_eq!(call["content"][0]["content"]["text"], "a.txt");
    }
}
