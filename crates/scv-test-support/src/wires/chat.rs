//! OpenAI Chat Completions request rules.
//!
//! The stream builders are [`Reply::text`](crate::Reply::text),
//! [`Reply::tool_calls`](crate::Reply::tool_calls) and
//! [`Reply::response`](crate::Reply::response) (chunk shapes from the
//! `openai` SDK's `chat_completion_chunk.py`, research notes section 3.1).

use serde_json::Value;

/// The Chat Completions rules `body` breaks (empty = fine):
///
/// - `messages` is an array;
/// - every assistant `tool_calls[i].id` is answered by a `role: "tool"`
///   message with that `tool_call_id` before the next non-tool message
///   (or the end of the request);
/// - no tool message without a matching call in the assistant message
///   it follows, and no second answer to one call.
pub fn check_request(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(messages) = body["messages"].as_array() else {
        out.push("`messages` is not an array".into());
        return out;
    };
    // Calls of the last assistant message still waiting for an answer,
    // and the ones already answered.
    let mut pending: Vec<String> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        if role == "tool" {
            let id = message["tool_call_id"].as_str().unwrap_or("");
            if let Some(at) = pending.iter().position(|p| p == id) {
                answered.push(pending.remove(at));
            } else if answered.iter().any(|a| a == id) {
                out.push(format!(
                    "messages[{index}]: second tool message for tool_call_id {id:?}"
                ));
            } else {
                out.push(format!(
                    "messages[{index}]: tool message with tool_call_id {id:?} answers no tool call of the assistant message before it"
                ));
            }
            continue;
        }
        for id in pending.drain(..) {
            out.push(format!(
                "tool call {id:?} is not answered before messages[{index}] ({role})"
            ));
        }
        answered.clear();
        if role == "assistant" {
            if let Some(calls) = message["tool_calls"].as_array() {
                for (i, call) in calls.iter().enumerate() {
                    match call["id"].as_str() {
                        Some(id) if !id.is_empty() => pending.push(id.to_string()),
                        _ => out.push(format!("messages[{index}].tool_calls[{i}] has no id")),
                    }
                }
            }
        }
    }
    for id in pending {
        out.push(format!("tool call {id:?} is never answered"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}})
    }

    #[test]
    fn answered_calls_pass() {
        let body = json!({"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "b", "content": "B"},
            {"role": "tool", "tool_call_id": "a", "content": "A"},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "more"},
        ]});
        assert_eq!(check_request(&body), Vec::<String>::new());
    }

    #[test]
    fn unanswered_late_and_stray_results_fail() {
        let body = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "A"},
            {"role": "user", "content": "wait"},
            {"role": "tool", "tool_call_id": "b", "content": "late"},
            {"role": "tool", "tool_call_id": "zzz", "content": "stray"},
        ]});
        let v = check_request(&body);
        assert_eq!(v.len(), 3, "{v:#?}");
        assert!(
            v[0].contains("\"b\" is not answered before messages[3]"),
            "{v:#?}"
        );
        assert!(v[1].contains("messages[4]") && v[1].contains("answers no tool call"));
        assert!(v[2].contains("messages[5]"));
    }

    #[test]
    fn duplicate_answer_and_trailing_call_fail() {
        let body = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "A"},
            {"role": "tool", "tool_call_id": "a", "content": "again"},
            {"role": "assistant", "tool_calls": [call("c")]},
        ]});
        let v = check_request(&body);
        assert_eq!(v.len(), 2, "{v:#?}");
        assert!(v[0].contains("second tool message"));
        assert!(v[1].contains("\"c\" is never answered"));
    }

    #[test]
    fn missing_messages_fails() {
        assert_eq!(check_request(&json!({})).len(), 1);
    }
}
