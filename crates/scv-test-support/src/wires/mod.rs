//! Per-wire builders and request checkers for the mock provider.
//!
//! - [`chat`]: OpenAI Chat Completions request rules (its stream builders
//!   are [`Reply::text`](crate::Reply::text) and friends).
//! - [`anthropic`]: Anthropic Messages streams, error bodies and request
//!   rules.
//! - [`responses`]: OpenAI Responses streams, error bodies and request
//!   rules.
//!
//! Shapes are taken from the vendors' docs and real captures as collected
//! in the project's provider research notes; each builder names its
//! source. Each `check_request` returns the rules a request body breaks
//! (empty = fine) so a test can assert `mock.violations().is_empty()`.

pub mod anthropic;
pub mod chat;
pub mod responses;

use serde_json::Value;

/// `value` as compact JSON with each object's `"type"` key first (as the
/// services write their events), the other keys sorted (whether or not
/// serde_json's `preserve_order` is on: a dependency turns it on).
pub fn to_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            out.push('{');
            let typed = map.get_key_value("type");
            let mut rest: Vec<_> = map
                .iter()
                .filter(|(key, _)| key.as_str() != "type")
                .collect();
            rest.sort_by(|a, b| a.0.cmp(b.0));
            for (index, (key, item)) in typed.into_iter().chain(rest).enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_json(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A short description of a JSON value's kind, for violation messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_comes_first_at_every_level() {
        let value = json!({"index": 0, "type": "content_block_start",
            "content_block": {"text": "", "type": "text"}, "list": [{"b": 1, "type": "x"}]});
        assert_eq!(
            to_json(&value),
            r#"{"type":"content_block_start","content_block":{"type":"text","text":""},"index":0,"list":[{"type":"x","b":1}]}"#
        );
        let back: Value = serde_json::from_str(&to_json(&value)).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn strings_are_escaped() {
        let value = json!({"type": "t", "k\"ey": "a\nb\"c"});
        let back: Value = serde_json::from_str(&to_json(&value)).unwrap();
        assert_eq!(back, value);
    }
}
