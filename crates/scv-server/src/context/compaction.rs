//! Choosing what compaction replaces, and the summary request's prompt.
//!
//! A cut is only made right before a `user` or `assistant` message: tool
//! results always follow their assistant message directly, so no call is
//! ever separated from its result. The latest user message is kept (moved
//! after the summary when the cut passes it).

use crate::model::Message;
use crate::text::{cut, floor_boundary};
use std::fmt::Write as _;

/// The first message that stays; everything before it is summarized.
pub(crate) fn plan(messages: &[Message], keep_bytes: usize) -> Option<usize> {
    // Walk back from the end, keeping recent messages within `keep_bytes`,
    // and remember the earliest clean boundary reached.
    let mut kept = 0usize;
    let mut cut = None;
    for index in (1..messages.len()).rev() {
        kept += messages[index].weight();
        if kept > keep_bytes && cut.is_some() {
            break;
        }
        if is_boundary(&messages[index]) {
            cut = Some(index);
        }
    }
    cut.filter(|&c| c > 0 && c < messages.len())
}

fn is_boundary(message: &Message) -> bool {
    matches!(message, Message::User { .. } | Message::Assistant(_))
}

/// The history after compaction: the summary, the latest user message if
/// it was among the removed ones, then the kept messages.
pub(crate) fn apply(messages: Vec<Message>, cut: usize, summary: String) -> (Vec<Message>, usize) {
    let latest_user = messages.iter().rposition(Message::is_user);
    let mut kept = Vec::with_capacity(messages.len() - cut + 2);
    kept.push(Message::user(format!(
        "[Summary of the earlier conversation, written when the context was compacted]\n{summary}"
    )));
    let mut removed = cut;
    if let Some(user) = latest_user.filter(|&u| u < cut) {
        kept.push(messages[user].clone());
        removed -= 1;
    }
    kept.extend(messages.into_iter().skip(cut));
    (kept, removed)
}

/// The system prompt of the summary request.
pub(crate) const SUMMARY_SYSTEM_PROMPT: &str = "You compact the conversation of a coding agent. \
Summarize the transcript you are given so the agent can continue the work without it: \
the user's goals and constraints, decisions made, files read or changed (with paths), \
commands run and their outcomes, errors still open, and what was about to happen next. \
Be concise and concrete; keep exact names, paths and numbers. Answer with the summary only.";

/// The transcript to summarize, each message cut to `per_message` bytes
/// and the whole to `total` bytes.
pub(crate) fn transcript(messages: &[Message], per_message: usize, total: usize) -> String {
    let mut out = String::new();
    for message in messages {
        let (role, text) = match message {
            Message::User { content, .. } => ("user", content.to_string()),
            Message::Assistant(assistant) => {
                let mut text = assistant
                    .text
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                for call in &assistant.tool_calls {
                    let _ = write!(text, "\n[calls {} with {}]", call.name, call.arguments);
                }
                ("assistant", text)
            }
            Message::Tool { content, .. } => ("tool result", content.to_string()),
        };
        let _ = writeln!(out, "## {role}\n{}\n", cut(&text, per_message));
        if out.len() > total {
            out.truncate(floor_boundary(&out, total));
            out.push_str("\n[transcript cut]");
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AssistantMessage, ToolCall};

    fn user(text: &str) -> Message {
        Message::user(text)
    }

    fn assistant(text: &str, calls: &[&str]) -> Message {
        Message::Assistant(AssistantMessage {
            text: Some(text.into()),
            tool_calls: calls
                .iter()
                .map(|id| ToolCall {
                    id: id.to_string(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                    provider_data: None,
                })
                .collect(),
            ..Default::default()
        })
    }

    fn tool(id: &str, text: &str) -> Message {
        Message::Tool {
            call_id: id.into(),
            content: text.into(),
            success: true,
        }
    }

    #[test]
    fn never_cuts_between_a_call_and_its_result() {
        let big = "x".repeat(100);
        let messages = vec![
            user(&big),
            assistant(&big, &["a"]),
            tool("a", &big),
            tool("a2", &big),
            assistant(&big, &[]),
            user("latest"),
            assistant("", &["b"]),
            tool("b", &big),
        ];
        for keep in [0, 50, 150, 300, 500, 10_000] {
            if let Some(cut) = plan(&messages, keep) {
                assert!(is_boundary(&messages[cut]), "keep {keep}: cut {cut}");
            }
        }
        // Keeping little still keeps the last clean group.
        assert_eq!(plan(&messages, 10), Some(6));
    }

    #[test]
    fn the_latest_user_message_survives() {
        let messages = vec![
            user("old"),
            assistant("a", &[]),
            user("latest"),
            assistant("", &["c"]),
            tool("c", "r"),
        ];
        let (kept, removed) = apply(messages, 3, "S".into());
        assert_eq!(removed, 2);
        assert!(
            matches!(&kept[0], Message::User { content, .. } if content.as_str().ends_with("\nS"))
        );
        assert_eq!(kept[1], user("latest"));
        assert!(matches!(kept[2], Message::Assistant(_)));
        assert_eq!(kept.len(), 4);
    }
}
