//! `session.transcript`: the past conversation as a client draws it —
//! prompts, answers, tool calls with their results, how each turn ended
//! (an interrupted one said so) — the most recent part that fits the
//! document's transcript bounds. The server sends it on resume and fork;
//! `scv sessions export` writes it.
//!
//! History messages are opaque to the rest of the store; this reads the
//! few fields a transcript shows (docs/DESIGN.md, "The session store",
//! names the message format).

use crate::record::Outcome;
use crate::replay::Turn;
use scv_protocol::limits::{MAX_SERVER_FRAME_BYTES, MAX_TRANSCRIPT_BYTES, MAX_TRANSCRIPT_ITEMS};
use scv_protocol::{TranscriptItem, TurnOutcome};
use serde::Deserialize;

/// What a transcript reads of a journaled history message.
#[derive(Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
enum Message {
    User {},
    Assistant {
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        tool_calls: Vec<Call>,
    },
    Tool {
        call_id: String,
        content: String,
        success: bool,
    },
}

#[derive(Deserialize)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

/// Bytes of one tool result a transcript shows (the model saw it whole).
pub const TRANSCRIPT_TOOL_OUTPUT_BYTES: usize = 8 * 1024;
/// Room left in the frame for the envelope around the items.
const ENVELOPE_BYTES: usize = 4 * 1024;

/// Every item of `turns`, unbounded (an export).
pub fn transcript_whole(turns: &[Turn]) -> Vec<TranscriptItem> {
    turns.iter().flat_map(items_of).collect()
}

/// The transcript of `turns`, and whether older items were left out.
pub fn transcript(turns: &[Turn]) -> (Vec<TranscriptItem>, bool) {
    let budget = MAX_TRANSCRIPT_BYTES.min(MAX_SERVER_FRAME_BYTES) - ENVELOPE_BYTES;
    // Newest first, until a bound is reached; then back in order.
    let mut items = Vec::new();
    let mut bytes = 0usize;
    let mut truncated = false;
    'turns: for turn in turns.iter().rev() {
        for item in items_of(turn).into_iter().rev() {
            let size = serde_json::to_vec(&item).map_or(usize::MAX, |v| v.len() + 1);
            if items.len() >= MAX_TRANSCRIPT_ITEMS || bytes.saturating_add(size) > budget {
                truncated = true;
                break 'turns;
            }
            bytes += size;
            items.push(item);
        }
    }
    items.reverse();
    (items, truncated)
}

/// One turn's items, in order.
fn items_of(turn: &Turn) -> Vec<TranscriptItem> {
    let turn_id = &turn.turn_id;
    let mut items = vec![TranscriptItem::User {
        turn_id: turn_id.clone(),
        text: turn.prompt.clone(),
    }];
    let Some(ended) = &turn.ended else {
        items.push(TranscriptItem::TurnEnded {
            turn_id: turn_id.clone(),
            outcome: TurnOutcome::Interrupted,
            code: None,
            message: Some("SCV stopped while this turn ran; it was not run again".into()),
        });
        return items;
    };
    // Each result follows its call; the call says what was run.
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for value in &ended.messages {
        let Ok(message) = Message::deserialize(value) else {
            // A message of a newer kind: not shown.
            continue;
        };
        match message {
            Message::User {} => {}
            Message::Assistant { text, tool_calls } => {
                if let Some(text) = text.filter(|t| !t.is_empty()) {
                    items.push(TranscriptItem::Assistant {
                        turn_id: turn_id.clone(),
                        text,
                    });
                }
                calls = tool_calls
                    .into_iter()
                    .map(|c| (c.id, c.name, c.arguments))
                    .collect();
            }
            Message::Tool {
                call_id,
                content,
                success,
            } => {
                let (name, arguments) = calls
                    .iter()
                    .find(|(id, _, _)| *id == call_id)
                    .map(|(_, name, arguments)| (name.clone(), arguments.clone()))
                    .unwrap_or_default();
                let shown = cut(&content, TRANSCRIPT_TOOL_OUTPUT_BYTES);
                items.push(TranscriptItem::Tool {
                    turn_id: turn_id.clone(),
                    call_id,
                    name,
                    arguments,
                    truncated: shown.len() < content.len(),
                    output: shown.to_string(),
                    success,
                });
            }
        }
    }
    items.push(TranscriptItem::TurnEnded {
        turn_id: turn_id.clone(),
        outcome: match ended.outcome {
            Outcome::Completed => TurnOutcome::Completed,
            Outcome::Cancelled => TurnOutcome::Cancelled,
            Outcome::Failed => TurnOutcome::Failed,
        },
        code: ended.code.clone(),
        message: ended.message.clone(),
    });
    items
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
