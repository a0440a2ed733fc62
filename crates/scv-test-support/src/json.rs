//! JSON as the services write their events, and words for a JSON value's
//! kind (for violation messages). A leaf.

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
