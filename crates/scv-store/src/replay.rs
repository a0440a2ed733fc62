//! Reading a journal back: the canonical history as of the last turn that
//! ended, the transcript since the last clear, the prompts left queued,
//! the provider and model in force, the last `seq`.
//!
//! A journal's last line may be torn (the process died mid-write): it is
//! ignored, and [`Replay::valid_len`] says where the complete records end
//! so a writer can cut the file back there. Anything else unreadable — a
//! bad record before the end, a header of another format — makes the
//! journal damaged: it is reported, never guessed at.

use crate::record::{title_of, Header, HistoryChange, Outcome, Record, Spent, FORMAT_VERSION};
use serde_json::Value;

/// One turn as the transcript shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub turn_id: String,
    pub prompt: String,
    pub at: u64,
    /// `None`: the turn never ended — the process died while it ran.
    pub ended: Option<Ended>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    pub outcome: Outcome,
    pub code: Option<String>,
    pub message: Option<String>,
    pub messages: Vec<Value>,
    pub usage: Option<Value>,
    /// What the turn spent, when journaled.
    pub spent: Option<Spent>,
    /// It changed files without a checkpoint, and why.
    pub no_undo: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    pub header: Header,
    pub provider: String,
    pub model: String,
    /// The canonical history as of the last turn that ended.
    pub history: Vec<Value>,
    /// The last `seq` journaled.
    pub seq: u64,
    /// Turns since the last `session.clear`, oldest first.
    pub turns: Vec<Turn>,
    /// Turns that ended, over the whole session.
    pub ended_turns: usize,
    /// Prompts still queued when the journal ends.
    pub queue: Vec<String>,
    /// The session's first prompt, shortened (its title).
    pub title: Option<String>,
    /// The last calibration of the token estimate journaled.
    pub tokens_per_byte: Option<f64>,
    /// The session budget `session.configure` last set, if it did.
    pub max_session_cost_usd: Option<f64>,
    /// When the last record was written (unix seconds).
    pub updated: u64,
    /// Bytes of complete records; past it, a torn tail (or, with a fork
    /// point, where the replay stopped).
    pub valid_len: u64,
    /// Bytes of the header line.
    pub header_len: u64,
}

/// Why a journal cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Damage {
    #[error("the journal is empty")]
    Empty,
    #[error("the first record is not a session header")]
    NoHeader,
    #[error("format version {0} (this build reads {FORMAT_VERSION})")]
    Version(u32),
    #[error("record {line} is unreadable: {why}")]
    Record { line: usize, why: String },
}

impl Replay {
    /// Replays `bytes` (a whole journal); with `until`, only up to and
    /// including the end of that turn (a fork's point).
    pub fn read(bytes: &[u8], until: Option<&str>) -> Result<Replay, Damage> {
        Replay::read_to(bytes, until.map_or(Stop::Never, Stop::EndOf)).map(|(replay, _)| replay)
    }

    /// Replays `bytes` up to the start of turn `turn_id`: the session as it
    /// was just before that turn (`None` when no such turn started).
    pub fn read_before(bytes: &[u8], turn_id: &str) -> Result<Option<Replay>, Damage> {
        Replay::read_to(bytes, Stop::StartOf(turn_id))
            .map(|(replay, reached)| reached.then_some(replay))
    }

    /// The replay up to `stop`, and whether `stop` was reached.
    fn read_to(bytes: &[u8], stop: Stop<'_>) -> Result<(Replay, bool), Damage> {
        let mut lines = Lines::new(bytes);
        let Some((first, _)) = lines.next_complete() else {
            return Err(Damage::Empty);
        };
        let header = match serde_json::from_slice::<Record>(first) {
            Ok(Record::Session(header)) => header,
            Ok(_) => return Err(Damage::NoHeader),
            Err(_) => match serde_json::from_slice::<Value>(first)
                .ok()
                .and_then(|v| v.get("v").and_then(Value::as_u64))
            {
                Some(v) if v != u64::from(FORMAT_VERSION) => return Err(Damage::Version(v as u32)),
                _ => return Err(Damage::NoHeader),
            },
        };
        if header.v != FORMAT_VERSION {
            return Err(Damage::Version(header.v));
        }
        let mut replay = Replay {
            provider: header.provider.clone(),
            model: header.model.clone(),
            updated: header.created,
            header,
            history: Vec::new(),
            seq: 0,
            turns: Vec::new(),
            ended_turns: 0,
            queue: Vec::new(),
            title: None,
            tokens_per_byte: None,
            max_session_cost_usd: None,
            valid_len: lines.consumed as u64,
            header_len: lines.consumed as u64,
        };
        let mut line_no = 1;
        while let Some((line, last)) = lines.next_complete() {
            line_no += 1;
            let record = match Record::from_line(line) {
                Ok(record) => record,
                // The last complete line may still be a torn write that
                // happened to end in a newline byte of its payload: only
                // if it is last; anywhere else it is damage.
                Err(_) if last && !lines.more() => break,
                Err(err) => {
                    return Err(Damage::Record {
                        line: line_no,
                        why: err.to_string(),
                    })
                }
            };
            if let (Stop::StartOf(id), Record::TurnStarted { turn_id, .. }) = (&stop, &record) {
                if turn_id == id {
                    return Ok((replay, true));
                }
            }
            replay.valid_len = lines.consumed as u64;
            let until = match stop {
                Stop::EndOf(id) => Some(id),
                _ => None,
            };
            if replay.apply(record, until) {
                return Ok((replay, true));
            }
        }
        Ok((replay, false))
    }

    /// Applies one record; true when the fork point was reached.
    fn apply(&mut self, record: Record, until: Option<&str>) -> bool {
        match record {
            Record::Rewound {
                turn_id,
                at,
                seq,
                history,
            } => {
                self.seq = self.seq.max(seq);
                self.updated = self.updated.max(at);
                self.history = history;
                if let Some(at) = self.turns.iter().position(|t| t.turn_id == turn_id) {
                    // Undone turns are no longer the session's turns.
                    let undone = self.turns[at..]
                        .iter()
                        .filter(|t| t.ended.is_some())
                        .count();
                    self.ended_turns = self.ended_turns.saturating_sub(undone);
                    self.turns.truncate(at);
                }
            }
            Record::Session(_) | Record::Unknown => {}
            Record::TurnStarted {
                turn_id,
                prompt,
                at,
                seq,
            } => {
                self.seq = self.seq.max(seq);
                self.updated = self.updated.max(at);
                if self.title.is_none() {
                    self.title = Some(title_of(&prompt));
                }
                self.turns.push(Turn {
                    turn_id,
                    prompt,
                    at,
                    ended: None,
                });
            }
            Record::TurnEnded {
                turn_id,
                at,
                seq,
                outcome,
                code,
                message,
                messages,
                history,
                usage,
                tokens_per_byte,
                spent,
                no_undo,
            } => {
                self.seq = self.seq.max(seq);
                self.updated = self.updated.max(at);
                self.ended_turns += 1;
                match history {
                    HistoryChange::Append => self.history.extend(messages.iter().cloned()),
                    HistoryChange::Edit { drop, keep } => {
                        let drop = (drop as usize).min(self.history.len());
                        self.history.drain(..drop);
                        self.history.truncate(keep as usize);
                        self.history.extend(messages.iter().cloned());
                    }
                    HistoryChange::Snapshot(all) => self.history = all,
                }
                if tokens_per_byte.is_some() {
                    self.tokens_per_byte = tokens_per_byte;
                }
                let reached = until == Some(turn_id.as_str());
                if let Some(turn) = self.turns.iter_mut().rev().find(|t| t.turn_id == turn_id) {
                    turn.ended = Some(Ended {
                        outcome,
                        code,
                        message,
                        messages,
                        usage,
                        spent,
                        no_undo,
                    });
                }
                return reached;
            }
            Record::Cleared { at, seq } => {
                self.seq = self.seq.max(seq);
                self.updated = self.updated.max(at);
                self.history.clear();
                self.turns.clear();
                self.queue.clear();
            }
            Record::Configured {
                provider,
                model,
                at,
                seq,
                history,
                max_session_cost_usd,
            } => {
                self.seq = self.seq.max(seq);
                self.updated = self.updated.max(at);
                self.provider = provider;
                self.model = model;
                if max_session_cost_usd.is_some() {
                    self.max_session_cost_usd = max_session_cost_usd;
                }
                if let Some(history) = history {
                    self.history = history;
                }
            }
            Record::Queue { prompts, seq } => {
                self.seq = self.seq.max(seq);
                self.queue = prompts;
            }
        }
        false
    }

    /// Whether `turn_id` is a turn of this session that ended.
    pub fn has_ended_turn(&self, turn_id: &str) -> bool {
        self.turns
            .iter()
            .any(|t| t.turn_id == turn_id && t.ended.is_some())
    }
}

/// Where a replay stops.
#[derive(Clone, Copy)]
enum Stop<'a> {
    Never,
    /// After that turn's end (a fork's point).
    EndOf(&'a str),
    /// Before that turn's start (a checkpoint's conversation).
    StartOf(&'a str),
}

/// Complete lines of a journal, and how far they reach.
struct Lines<'a> {
    bytes: &'a [u8],
    consumed: usize,
}

impl<'a> Lines<'a> {
    fn new(bytes: &'a [u8]) -> Lines<'a> {
        Lines { bytes, consumed: 0 }
    }

    /// The next line that ends in a newline (blank lines skipped), and
    /// whether it is the last complete one.
    fn next_complete(&mut self) -> Option<(&'a [u8], bool)> {
        loop {
            let rest = &self.bytes[self.consumed..];
            let end = memchr::memchr(b'\n', rest)?;
            self.consumed += end + 1;
            let line = &rest[..end];
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let last = memchr::memchr(b'\n', &self.bytes[self.consumed..]).is_none();
            return Some((line, last));
        }
    }

    /// Bytes left after the complete lines (a torn tail).
    fn more(&self) -> bool {
        self.consumed < self.bytes.len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn header() -> Record {
        Record::Session(Header {
            v: FORMAT_VERSION,
            session_id: "s".into(),
            cwd: "/w".into(),
            created: 1,
            provider: "openai".into(),
            model: "m".into(),
            base_url: None,
            no_tools: false,
            forked_from: None,
            parent: None,
        })
    }

    fn turn(id: &str, prompt: &str, history: HistoryChange) -> [Record; 2] {
        [
            Record::TurnStarted {
                turn_id: id.into(),
                prompt: prompt.into(),
                at: 2,
                seq: 1,
            },
            Record::TurnEnded {
                turn_id: id.into(),
                at: 3,
                seq: 5,
                outcome: Outcome::Completed,
                code: None,
                message: None,
                messages: vec![json!({"user": prompt}), json!({"assistant": "ok"})],
                history,
                usage: None,
                tokens_per_byte: None,
                spent: None,
                no_undo: None,
            },
        ]
    }

    fn journal(records: &[Record]) -> Vec<u8> {
        records.iter().flat_map(|r| r.line().unwrap()).collect()
    }

    #[test]
    fn history_transcript_and_queue_come_back() {
        let mut records = vec![header()];
        records.extend(turn("t1", "one", HistoryChange::Append));
        records.extend(turn(
            "t2",
            "two",
            HistoryChange::Snapshot(vec![json!("summary")]),
        ));
        records.push(Record::Queue {
            prompts: vec!["later".into()],
            seq: 6,
        });
        records.push(Record::TurnStarted {
            turn_id: "t3".into(),
            prompt: "three".into(),
            at: 9,
            seq: 9,
        });
        let replay = Replay::read(&journal(&records), None).unwrap();
        assert_eq!(replay.history, [json!("summary")]);
        assert_eq!(replay.turns.len(), 3);
        assert!(replay.turns[2].ended.is_none(), "interrupted");
        assert_eq!(replay.queue, ["later"]);
        assert_eq!(replay.title.as_deref(), Some("one"));
        assert_eq!(replay.ended_turns, 2);
        assert_eq!(replay.seq, 9);
    }

    #[test]
    fn before_a_turn_and_after_a_rewind() {
        let mut records = vec![header()];
        records.extend(turn("t1", "one", HistoryChange::Append));
        records.extend(turn("t2", "two", HistoryChange::Append));
        records.extend(turn("t3", "three", HistoryChange::Append));
        let bytes = journal(&records);
        let before = Replay::read_before(&bytes, "t2").unwrap().unwrap();
        assert_eq!(before.history.len(), 2, "t1 only");
        assert_eq!(before.turns.len(), 1);
        assert!(Replay::read_before(&bytes, "t9").unwrap().is_none());
        records.push(Record::Rewound {
            turn_id: "t2".into(),
            at: 10,
            seq: 11,
            history: before.history.clone(),
        });
        let rewound = Replay::read(&journal(&records), None).unwrap();
        assert_eq!(rewound.history, before.history);
        let ids: Vec<&str> = rewound.turns.iter().map(|t| t.turn_id.as_str()).collect();
        assert_eq!(ids, ["t1"], "t2 and t3 are gone from the transcript");
        assert_eq!(rewound.seq, 11);
    }

    #[test]
    fn a_torn_tail_is_ignored_and_measured() {
        let mut bytes = journal(&[header()]);
        let good = bytes.len() as u64;
        bytes.extend_from_slice(b"{\"kind\":\"turn_started\",\"turn_id\":\"t");
        let replay = Replay::read(&bytes, None).unwrap();
        assert_eq!(replay.valid_len, good);
        assert!(replay.turns.is_empty());
    }

    #[test]
    fn damage_is_named() {
        assert_eq!(Replay::read(b"", None), Err(Damage::Empty));
        let other = b"{\"kind\":\"session\",\"v\":7,\"session_id\":\"s\",\"cwd\":\"/\",\"created\":1,\"provider\":\"p\",\"model\":\"m\"}\n";
        assert_eq!(Replay::read(other, None), Err(Damage::Version(7)));
        let mut bad = journal(&[header()]);
        bad.extend_from_slice(b"not json\n");
        bad.extend(journal(&turn("t1", "x", HistoryChange::Append)));
        assert!(matches!(
            Replay::read(&bad, None),
            Err(Damage::Record { line: 2, .. })
        ));
    }

    #[test]
    fn a_fork_point_stops_the_replay_after_its_turn() {
        let mut records = vec![header()];
        records.extend(turn("t1", "one", HistoryChange::Append));
        records.extend(turn("t2", "two", HistoryChange::Append));
        let replay = Replay::read(&journal(&records), Some("t1")).unwrap();
        assert_eq!(replay.history.len(), 2);
        assert_eq!(replay.turns.len(), 1);
    }

    #[test]
    fn trimming_and_a_provider_switch_replay_as_they_happened() {
        let mut records = vec![header()];
        records.extend(turn("t1", "one", HistoryChange::Append));
        records.extend(turn("t2", "two", HistoryChange::Append));
        // Trimming dropped the first turn's two messages.
        records.extend(turn(
            "t3",
            "three",
            HistoryChange::Edit { drop: 2, keep: 2 },
        ));
        let replay = Replay::read(&journal(&records), None).unwrap();
        assert_eq!(
            replay.history,
            [
                json!({"user": "two"}),
                json!({"assistant": "ok"}),
                json!({"user": "three"}),
                json!({"assistant": "ok"})
            ]
        );
        records.push(Record::Configured {
            provider: "anthropic".into(),
            model: "c".into(),
            at: 10,
            seq: 11,
            history: Some(vec![json!("without provider data")]),
            max_session_cost_usd: None,
        });
        let replay = Replay::read(&journal(&records), None).unwrap();
        assert_eq!(replay.history, [json!("without provider data")]);
        assert_eq!(
            (replay.provider.as_str(), replay.model.as_str()),
            ("anthropic", "c")
        );
        assert_eq!(replay.seq, 11);
    }

    #[test]
    fn a_title_is_the_first_line_shortened() {
        assert_eq!(title_of("\n  fix the parser  \nplease"), "fix the parser");
        let long = "é".repeat(150);
        assert_eq!(title_of(&long).chars().count(), 101);
    }
}
