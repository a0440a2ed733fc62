//! What a session's turns spent, over its whole journal (a
//! `session.clear` empties the history, not what was spent): `scv usage`
//! reads it.

use crate::record::{Record, Spent};
use crate::{SessionStore, StoreError};

/// One turn's spending and when it ended (unix seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct SpentTurn {
    pub at: u64,
    pub spent: Spent,
}

/// Every ended turn's spending in `bytes` (a journal), oldest first. A
/// turn journaled before spending was recorded counts with its reported
/// input and output tokens and no price. Unreadable lines (a torn tail)
/// are skipped.
pub fn spending(bytes: &[u8]) -> Vec<SpentTurn> {
    let mut model = String::new();
    let mut turns = Vec::new();
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(record) = serde_json::from_slice::<Record>(line) else {
            continue;
        };
        match record {
            Record::Session(header) => model = header.model,
            Record::Configured { model: next, .. } => model = next,
            Record::TurnEnded {
                at, spent, usage, ..
            } => {
                let spent = match (spent, usage) {
                    (Some(spent), _) => spent,
                    (None, Some(usage)) => {
                        let number = |key: &str| usage.get(key).and_then(|v| v.as_u64());
                        Spent {
                            model: model.clone(),
                            usage_detail: scv_protocol::UsageDetail {
                                input: number("input_tokens").unwrap_or(0),
                                output: number("output_tokens").unwrap_or(0),
                                ..Default::default()
                            },
                            cost_usd: None,
                        }
                    }
                    (None, None) => continue,
                };
                turns.push(SpentTurn { at, spent });
            }
            _ => {}
        }
    }
    turns
}

impl SessionStore {
    /// What session `session_id`'s turns spent ([`spending`]).
    pub fn spending(&self, session_id: &str) -> Result<Vec<SpentTurn>, StoreError> {
        Ok(spending(&self.read_bytes(session_id)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_turn_counts_across_clears_and_old_records_count_tokens() {
        let lines = [
            json!({"kind":"session","v":1,"session_id":"s","cwd":"/w","created":1,"provider":"openai","model":"old-model"}),
            json!({"kind":"turn_ended","turn_id":"a","at":10,"seq":2,"outcome":"completed","messages":[],"history":"append","usage":{"input_tokens":5,"output_tokens":2}}),
            json!({"kind":"cleared","at":11,"seq":3}),
            json!({"kind":"configured","provider":"anthropic","model":"claude-x","at":12,"seq":4}),
            json!({"kind":"turn_ended","turn_id":"b","at":13,"seq":6,"outcome":"failed","code":"provider_error","message":"x","messages":[],"history":"append",
                "spent":{"model":"claude-x","usage_detail":{"input":1,"cache_read":2,"cache_write":3,"output":4,"reasoning":0},"cost_usd":0.5}}),
        ];
        let mut bytes = Vec::new();
        for line in lines {
            bytes.extend(line.to_string().bytes());
            bytes.push(b'\n');
        }
        bytes.extend(b"{\"kind\":\"turn_en");
        let turns = spending(&bytes);
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0].at, 10);
        assert_eq!(turns[0].spent.model, "old-model");
        assert_eq!(turns[0].spent.usage_detail.input, 5);
        assert_eq!(turns[0].spent.cost_usd, None);
        assert_eq!(turns[1].spent.model, "claude-x");
        assert_eq!(turns[1].spent.usage_detail.cache_write, 3);
        assert_eq!(turns[1].spent.cost_usd, Some(0.5));
    }
}
