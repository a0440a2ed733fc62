//! A stored session's past conversation as ACP `session/update`s, for
//! `session/load`: prompts as user message chunks, answers as agent
//! message chunks, tool calls as finished `tool_call`s with their output.
//! A past `edit_file` shows the change it made as a diff of the region it
//! replaced (its `old_string` and `new_string`: the file on disk is
//! today's, not the one the call changed, so no whole-file diff is
//! made up). Turns that did not complete say so in one line.

use crate::updates::{first_line, kind, title};
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallStatus,
};
use scv_protocol::{TranscriptItem, TurnOutcome};
use std::path::Path;

/// The updates that draw `items`, oldest first; `truncated` (older items
/// left out) opens with a note.
pub fn updates(items: Vec<TranscriptItem>, truncated: bool, cwd: &Path) -> Vec<SessionUpdate> {
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
                let mut content = vec![ToolCallContent::from(ContentBlock::Text(
                    TextContent::new(shown),
                ))];
                if success {
                    content.extend(edit_diff(&name, &args, cwd));
                }
                let call = ToolCall::new(format!("replay-{n}"), first_line(&title(&name, &args)))
                    .kind(kind(&name))
                    .status(status)
                    .raw_input(args)
                    .content(content);
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

/// The region a past `edit_file` replaced, as a diff of its file.
fn edit_diff(name: &str, args: &serde_json::Value, cwd: &Path) -> Option<ToolCallContent> {
    if name != "edit_file" {
        return None;
    }
    let path = args.get("path").and_then(serde_json::Value::as_str)?;
    let old = args.get("old_string").and_then(serde_json::Value::as_str)?;
    let new = args.get("new_string").and_then(serde_json::Value::as_str)?;
    Some(
        Diff::new(cwd.join(path), new.to_string())
            .old_text(Some(old.to_string()))
            .into(),
    )
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
        let updates = updates(items, true, Path::new("/w"));
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

    #[test]
    fn a_past_edit_replays_with_the_diff_of_what_it_replaced() {
        let items = vec![TranscriptItem::Tool {
            turn_id: "t1".into(),
            call_id: "c1".into(),
            name: "edit_file".into(),
            arguments: r#"{"path":"src/a.rs","old_string":"a - b","new_string":"a + b"}"#.into(),
            output: "edited src/a.rs".into(),
            success: true,
            truncated: false,
        }];
        let updates = updates(items, false, Path::new("/w"));
        let call = serde_json::to_value(&updates[0]).unwrap();
        let diff = &call["content"][1];
        assert_eq!(diff["type"], "diff", "{call}");
        assert_eq!(diff["path"], "/w/src/a.rs");
        assert_eq!(diff["oldText"], "a - b");
        assert_eq!(diff["newText"], "a + b");
    }
}
