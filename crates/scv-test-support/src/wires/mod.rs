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
pub mod images;
pub mod responses;

pub use crate::json::to_json;
use crate::reply::Wire;
use serde_json::Value;

/// `wire`'s request rules broken by `body` (empty when it is fine).
pub fn check_request(wire: Wire, body: &Value) -> Vec<String> {
    let mut broken = match wire {
        Wire::Chat => chat::check_request(body),
        Wire::Anthropic => anthropic::check_request(body),
        Wire::Responses => responses::check_request(body),
    };
    broken.extend(images::check(wire, body));
    broken
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
