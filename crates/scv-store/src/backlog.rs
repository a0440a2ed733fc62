//! What a journal lacks while its writes fail (a full disk): the records
//! not yet written, in order, each as its journal line. The journal writes
//! them, oldest first, ahead of the next record it is given, and keeps
//! what still does not fit.
//!
//! Bounded by `limit` bytes (the server gives the session's
//! `max_history_bytes`: what it may hold as history anyway):
//!
//! - a `queue` record replaces any queue record waiting before it (only
//!   the last one counts when replayed);
//! - a record that carries the whole history (a turn's end with a
//!   `snapshot`, a `configured` or `rewound` with its history) that would
//!   pass the bound makes every history payload waiting before it
//!   redundant: those are *stripped* — a turn's end keeps its outcome,
//!   usage and spending but not its messages (its history change becomes
//!   none), a prompt is cut to [`STRIPPED_PROMPT_BYTES`], a `configured`
//!   or `rewound` loses its history — and the record that follows sets
//!   the history whole;
//! - still past the bound, the oldest stripped turns (start and end
//!   together) are dropped, then the oldest stripped queue records.
//!
//! So within the bound the journal catches up with every record, as if
//! no write had failed; past it, the conversation still resumes whole
//! (what the next provider request carries) and the transcript lacks the
//! answers of the stripped turns, or those turns.

use crate::record::{HistoryChange, Record};
use std::collections::VecDeque;

/// What a stripped turn keeps of its prompt (bytes, at a character
/// boundary).
pub const STRIPPED_PROMPT_BYTES: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    TurnStarted,
    TurnEnded,
    Queue,
    /// Carries the whole history (see the module's documentation).
    Whole,
    Other,
}

#[derive(Debug)]
struct Item {
    line: Vec<u8>,
    kind: Kind,
    /// The turn a `turn_started` / `turn_ended` belongs to.
    turn: Option<String>,
    stripped: bool,
}

#[derive(Debug)]
pub(crate) struct Backlog {
    items: VecDeque<Item>,
    bytes: u64,
    limit: u64,
}

impl Backlog {
    pub(crate) fn new(limit: u64) -> Backlog {
        Backlog {
            items: VecDeque::new(),
            bytes: 0,
            limit,
        }
    }

    pub(crate) fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Every line waiting, oldest first.
    pub(crate) fn lines(&self) -> impl Iterator<Item = &[u8]> {
        self.items.iter().map(|i| i.line.as_slice())
    }

    /// The oldest line waiting.
    pub(crate) fn front(&self) -> Option<&[u8]> {
        self.items.front().map(|i| i.line.as_slice())
    }

    pub(crate) fn pop_front(&mut self) {
        if let Some(item) = self.items.pop_front() {
            self.bytes -= item.line.len() as u64;
        }
    }

    /// Keeps `record` (encoded as `line`) after what waits, within the
    /// bound as the module's documentation says.
    pub(crate) fn push(&mut self, record: &Record, line: Vec<u8>) {
        let (kind, turn) = match record {
            Record::TurnStarted { turn_id, .. } => (Kind::TurnStarted, Some(turn_id.clone())),
            Record::TurnEnded {
                turn_id,
                history: HistoryChange::Snapshot(_),
                ..
            } => (Kind::Whole, Some(turn_id.clone())),
            Record::TurnEnded { turn_id, .. } => (Kind::TurnEnded, Some(turn_id.clone())),
            Record::Queue { .. } => (Kind::Queue, None),
            Record::Configured {
                history: Some(_), ..
            }
            | Record::Rewound { .. } => (Kind::Whole, None),
            _ => (Kind::Other, None),
        };
        if kind == Kind::Queue {
            self.items.retain(|item| item.kind != Kind::Queue);
            self.recount();
        }
        if kind == Kind::Whole && self.bytes + line.len() as u64 > self.limit {
            self.strip();
        }
        self.bytes += line.len() as u64;
        self.items.push_back(Item {
            line,
            kind,
            turn,
            stripped: false,
        });
        if self.bytes > self.limit {
            self.shed();
        }
    }

    fn recount(&mut self) {
        self.bytes = self.items.iter().map(|i| i.line.len() as u64).sum();
    }

    /// Strips every history payload waiting (a whole history follows).
    fn strip(&mut self) {
        for item in self.items.iter_mut().filter(|i| !i.stripped) {
            let Ok(mut record) = serde_json::from_slice::<Record>(&item.line) else {
                continue;
            };
            match &mut record {
                Record::TurnStarted { prompt, .. } if prompt.len() > STRIPPED_PROMPT_BYTES => {
                    let mut cut = STRIPPED_PROMPT_BYTES;
                    while !prompt.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    prompt.truncate(cut);
                    prompt.push('…');
                }
                Record::TurnEnded {
                    messages, history, ..
                } => {
                    messages.clear();
                    // Nothing dropped, everything kept, nothing added.
                    *history = HistoryChange::Edit {
                        drop: 0,
                        keep: u64::MAX,
                    };
                    item.kind = Kind::TurnEnded;
                }
                Record::Configured { history, .. } => *history = None,
                Record::Rewound { history, .. } => history.clear(),
                _ => {}
            }
            if let Ok(line) = record.line() {
                item.line = line;
            }
            item.stripped = true;
        }
        self.recount();
    }

    /// Drops the oldest stripped turns, then stripped queue records, while
    /// past the bound.
    fn shed(&mut self) {
        while self.bytes > self.limit {
            let turn = self
                .items
                .iter()
                .find(|i| i.stripped && i.kind == Kind::TurnEnded)
                .and_then(|i| i.turn.clone());
            match turn {
                Some(turn) => self.items.retain(|i| {
                    !(i.stripped
                        && matches!(i.kind, Kind::TurnStarted | Kind::TurnEnded)
                        && i.turn.as_deref() == Some(turn.as_str()))
                }),
                None => {
                    let Some(at) = self
                        .items
                        .iter()
                        .position(|i| i.stripped && i.kind == Kind::Queue)
                    else {
                        break;
                    };
                    self.items.remove(at);
                }
            }
            self.recount();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::record::Outcome;
    use serde_json::json;

    fn started(id: &str, prompt: &str) -> Record {
        Record::TurnStarted {
            turn_id: id.into(),
            prompt: prompt.into(),
            at: 1,
            seq: 1,
        }
    }

    fn ended(id: &str, history: HistoryChange, text: &str) -> Record {
        Record::TurnEnded {
            turn_id: id.into(),
            at: 2,
            seq: 2,
            outcome: Outcome::Completed,
            code: None,
            message: None,
            messages: vec![json!({"role": "assistant", "text": text})],
            history,
            usage: None,
            tokens_per_byte: None,
            spent: None,
            no_undo: None,
        }
    }

    fn push(backlog: &mut Backlog, record: Record) {
        let line = record.line().unwrap();
        backlog.push(&record, line);
    }

    fn records(backlog: &Backlog) -> Vec<Record> {
        backlog
            .items
            .iter()
            .map(|i| serde_json::from_slice(&i.line).unwrap())
            .collect()
    }

    #[test]
    fn within_the_bound_everything_is_kept_in_order_and_only_the_last_queue() {
        let mut backlog = Backlog::new(1 << 20);
        push(&mut backlog, started("t1", "one"));
        push(
            &mut backlog,
            Record::Queue {
                prompts: vec!["a".into()],
                seq: 3,
            },
        );
        push(&mut backlog, ended("t1", HistoryChange::Append, "x"));
        push(
            &mut backlog,
            Record::Queue {
                prompts: vec![],
                seq: 4,
            },
        );
        let kept = records(&backlog);
        assert_eq!(kept.len(), 3);
        assert!(matches!(kept[0], Record::TurnStarted { .. }));
        assert!(matches!(kept[1], Record::TurnEnded { .. }));
        assert!(matches!(kept[2], Record::Queue { seq: 4, .. }));
        assert_eq!(
            backlog.bytes(),
            backlog
                .items
                .iter()
                .map(|i| i.line.len() as u64)
                .sum::<u64>()
        );
    }

    #[test]
    fn past_the_bound_a_whole_history_strips_what_waits_and_sheds_the_oldest() {
        let big = "x".repeat(4000);
        let mut backlog = Backlog::new(10_000);
        for n in 0..2 {
            push(&mut backlog, started(&format!("t{n}"), &big));
            push(
                &mut backlog,
                ended(&format!("t{n}"), HistoryChange::Append, &big),
            );
        }
        assert!(backlog.bytes() > 10_000, "no whole history yet: kept");
        push(&mut backlog, started("t2", "three"));
        push(
            &mut backlog,
            ended(
                "t2",
                HistoryChange::Snapshot(vec![json!("all of it")]),
                "three",
            ),
        );
        assert!(backlog.bytes() <= 10_000, "{}", backlog.bytes());
        let kept = records(&backlog);
        assert_eq!(kept.len(), 6, "every turn still there, stripped");
        match &kept[1] {
            Record::TurnEnded {
                messages, history, ..
            } => {
                assert!(messages.is_empty());
                assert_eq!(
                    *history,
                    HistoryChange::Edit {
                        drop: 0,
                        keep: u64::MAX
                    }
                );
            }
            other => panic!("{other:?}"),
        }
        match &kept[0] {
            Record::TurnStarted { prompt, .. } => {
                assert!(prompt.len() <= STRIPPED_PROMPT_BYTES + 3)
            }
            other => panic!("{other:?}"),
        }
        // A tiny bound: stripped turns go, oldest first, in pairs.
        backlog.set_limit(600);
        push(&mut backlog, started("t3", "four"));
        push(
            &mut backlog,
            ended("t3", HistoryChange::Snapshot(vec![json!("all")]), "four"),
        );
        let ids: Vec<String> = records(&backlog)
            .iter()
            .filter_map(|r| match r {
                Record::TurnStarted { turn_id, .. } => Some(turn_id.clone()),
                _ => None,
            })
            .collect();
        assert!(!ids.contains(&"t0".to_string()), "{ids:?}");
        assert!(ids.contains(&"t3".to_string()), "{ids:?}");
        let ended_ids: Vec<String> = records(&backlog)
            .iter()
            .filter_map(|r| match r {
                Record::TurnEnded { turn_id, .. } => Some(turn_id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(ids, ended_ids, "starts and ends go together");
    }
}
