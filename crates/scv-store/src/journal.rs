//! One session's journal, open for appending: `SESSION_ID.jsonl` in the
//! store, mode 0600, held under an exclusive `flock` for as long as the
//! session lives on a connection — which is also how another process tells
//! the session is open.
//!
//! Appends go straight to the file (a `write`; a killed process loses
//! nothing written). [`Journal::sync`] makes them durable (`fdatasync`);
//! the server calls it at each terminal turn event.
//!
//! When a write fails (the disk is full) the journal does not stop: the
//! part of a line that did get written is cut off again (the file ends
//! with whole records), and the record is kept in memory, in order, in a
//! bounded backlog (`backlog.rs`). The next record is written after it,
//! oldest first, so the journal catches up the moment a write succeeds
//! again. A failed write is tried again only with the next record (or
//! [`Journal::retry`]), never in a loop.

use crate::backlog::Backlog;
use crate::error::StoreError;
use crate::record::Record;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

/// The backlog's bound until the owner sets one (bytes).
pub const DEFAULT_BACKLOG_BYTES: u64 = 16 * 1024 * 1024;

pub struct Journal {
    file: File,
    path: PathBuf,
    /// Bytes of whole records in the file.
    len: u64,
    /// Records not written yet (the disk refused them), oldest first.
    backlog: Backlog,
    /// A failed write may have left part of a line past `len`; cut before
    /// the next write.
    torn: bool,
    /// Tests: bytes the "disk" still takes (`None`: the real disk's).
    #[cfg(test)]
    space: Option<u64>,
}

/// What [`Journal::record`] did.
#[derive(Debug)]
pub struct Recorded {
    /// Bytes that reached the file (waiting records and this one).
    pub bytes: u64,
    /// Records that waited in the backlog and are written now.
    pub caught_up: usize,
    /// Why the rest could not be written; it waits for the next record.
    /// `None`: nothing waits.
    pub error: Option<StoreError>,
}

impl Journal {
    /// Wraps `file`, already locked, whose complete records end at `len`.
    pub(crate) fn new(file: File, path: PathBuf, len: u64) -> Journal {
        Journal {
            file,
            path,
            len,
            backlog: Backlog::new(DEFAULT_BACKLOG_BYTES),
            torn: false,
            #[cfg(test)]
            space: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of whole records in the file.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bounds what waits to be written (bytes; see `backlog.rs` for what
    /// happens past it).
    pub fn set_backlog_limit(&mut self, bytes: u64) {
        self.backlog.set_limit(bytes);
    }

    /// Records waiting to be written.
    pub fn backlog_len(&self) -> usize {
        self.backlog.len()
    }

    /// Bytes waiting to be written.
    pub fn backlog_bytes(&self) -> u64 {
        self.backlog.bytes()
    }

    /// The records waiting to be written, each as its journal line,
    /// oldest first.
    pub fn waiting(&self) -> impl Iterator<Item = &[u8]> {
        self.backlog.lines()
    }

    /// Appends one record after whatever waits; what cannot be written
    /// waits in the backlog (see [`Recorded`]). `Err` only when the record
    /// cannot be encoded.
    pub fn record(&mut self, record: &Record) -> Result<Recorded, StoreError> {
        let line = record.line().map_err(StoreError::Encode)?;
        if self.backlog.is_empty() && !self.torn {
            return Ok(match self.write_line(&line) {
                Ok(()) => Recorded {
                    bytes: line.len() as u64,
                    caught_up: 0,
                    error: None,
                },
                Err(err) => {
                    self.backlog.push(record, line);
                    Recorded {
                        bytes: 0,
                        caught_up: 0,
                        error: Some(err),
                    }
                }
            });
        }
        self.backlog.push(record, line);
        let mut recorded = self.retry();
        // This record is not one that waited.
        if recorded.error.is_none() {
            recorded.caught_up = recorded.caught_up.saturating_sub(1);
        }
        Ok(recorded)
    }

    /// Writes what waits, oldest first, as far as it goes (once; a failure
    /// stops it until the next call).
    pub fn retry(&mut self) -> Recorded {
        let mut recorded = Recorded {
            bytes: 0,
            caught_up: 0,
            error: None,
        };
        if self.torn {
            if let Err(err) = self.cut_back() {
                recorded.error = Some(err);
                return recorded;
            }
        }
        while let Some(line) = self.backlog.front() {
            let line = line.to_vec();
            match self.write_line(&line) {
                Ok(()) => {
                    self.backlog.pop_front();
                    recorded.bytes += line.len() as u64;
                    recorded.caught_up += 1;
                }
                Err(err) => {
                    recorded.error = Some(err);
                    break;
                }
            }
        }
        recorded
    }

    /// Writes one whole line at the end, or nothing (what a failed write
    /// left is cut off, or will be before the next write).
    fn write_line(&mut self, line: &[u8]) -> Result<(), StoreError> {
        match self.write_all(line) {
            Ok(()) => {
                self.len += line.len() as u64;
                Ok(())
            }
            Err(err) => {
                self.torn = true;
                // Best effort now; tried again before the next write.
                let _ = self.cut_back();
                Err(StoreError::io("cannot write the journal", &self.path, err))
            }
        }
    }

    #[cfg(not(test))]
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all(bytes)
    }

    /// Tests: a disk with `space` bytes left writes what fits, then fails
    /// as a full one does.
    #[cfg(test)]
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self.space {
            Some(space) if (bytes.len() as u64) > space => {
                self.file.write_all(&bytes[..space as usize])?;
                self.space = Some(0);
                Err(std::io::Error::from_raw_os_error(libc::ENOSPC))
            }
            Some(space) => {
                self.file.write_all(bytes)?;
                self.space = Some(space - bytes.len() as u64);
                Ok(())
            }
            None => self.file.write_all(bytes),
        }
    }

    /// Tests: how much the "disk" takes from now on.
    #[cfg(test)]
    pub(crate) fn set_space(&mut self, space: Option<u64>) {
        self.space = space;
    }

    /// Cuts what a failed write left past the last whole record.
    fn cut_back(&mut self) -> Result<(), StoreError> {
        #[cfg(test)]
        if let (Some(space), Ok(meta)) = (self.space, self.file.metadata()) {
            self.space = Some(space + meta.len().saturating_sub(self.len));
        }
        self.file
            .set_len(self.len)
            .map_err(|e| StoreError::io("cannot cut the journal back", &self.path, e))?;
        // A resumed journal writes at its position, not at the end (it is
        // not opened to append): a write cut short moved it past `len`,
        // and a hole of zeros would come before the next line.
        self.file
            .seek(SeekFrom::Start(self.len))
            .map_err(|e| StoreError::io("cannot cut the journal back", &self.path, e))?;
        self.torn = false;
        Ok(())
    }

    /// Appends one record now, or fails with nothing kept (a new
    /// journal's header; tools that write a journal whole). Refused while
    /// records wait in the backlog: it would write past them.
    pub fn append(&mut self, record: &Record) -> Result<u64, StoreError> {
        if !self.backlog.is_empty() {
            return Err(StoreError::io(
                "cannot write the journal past records waiting for room",
                &self.path,
                std::io::Error::from(std::io::ErrorKind::WouldBlock),
            ));
        }
        if self.torn {
            self.cut_back()?;
        }
        let line = record.line().map_err(StoreError::Encode)?;
        self.write_line(&line)?;
        Ok(line.len() as u64)
    }

    /// Appends bytes that are whole records already.
    pub(crate) fn write_raw(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.write_line(bytes)
    }

    /// Makes what was appended durable.
    pub fn sync(&self) -> Result<(), StoreError> {
        rustix::fs::fdatasync(self.file.as_fd())
            .map_err(|e| StoreError::io("cannot sync the journal", &self.path, e.into()))
    }

    /// A second handle on the file, for syncing off the caller's thread.
    pub fn sync_handle(&self) -> Result<SyncHandle, StoreError> {
        let file = self
            .file
            .try_clone()
            .map_err(|e| StoreError::io("cannot share the journal", &self.path, e))?;
        Ok(SyncHandle { file })
    }
}

/// Syncs a journal from another thread (the lock stays with the journal).
pub struct SyncHandle {
    file: File,
}

impl SyncHandle {
    pub fn sync(&self) -> std::io::Result<()> {
        rustix::fs::fdatasync(self.file.as_fd()).map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::record::{Header, HistoryChange, Outcome, FORMAT_VERSION};
    use crate::replay::Replay;
    use crate::store::SessionStore;
    use serde_json::json;

    fn header(id: &str) -> Header {
        Header {
            v: FORMAT_VERSION,
            session_id: id.into(),
            cwd: "/w".into(),
            created: 1,
            provider: "openai".into(),
            model: "m".into(),
            base_url: None,
            no_tools: false,
            forked_from: None,
            parent: None,
        }
    }

    fn turn(n: u64, text: &str) -> [Record; 2] {
        let id = format!("t{n}");
        [
            Record::TurnStarted {
                turn_id: id.clone(),
                prompt: format!("prompt {n}"),
                at: n,
                seq: n * 10,
            },
            Record::TurnEnded {
                turn_id: id,
                at: n,
                seq: n * 10 + 5,
                outcome: Outcome::Completed,
                code: None,
                message: None,
                messages: vec![
                    json!({"role": "user", "content": format!("prompt {n}")}),
                    json!({"role": "assistant", "text": text}),
                ],
                history: HistoryChange::Append,
                usage: None,
                tokens_per_byte: None,
                spent: None,
                no_undo: None,
            },
        ]
    }

    #[test]
    fn a_full_disk_keeps_records_and_the_next_write_catches_up_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let id = "0a0b";
        let mut journal = store.create(&header(id)).unwrap();
        let answer = "y".repeat(300);
        for record in turn(1, &answer) {
            assert!(journal.record(&record).unwrap().error.is_none());
        }
        let whole = journal.len();
        // 10 bytes left: the next line is cut part-way and cut back.
        journal.set_space(Some(10));
        let mut failures = 0;
        for n in 2..6 {
            for record in turn(n, &answer) {
                let recorded = journal.record(&record).unwrap();
                failures += usize::from(recorded.error.is_some());
                assert_eq!(recorded.bytes, 0);
            }
        }
        assert_eq!(failures, 8, "every record waits");
        assert_eq!(journal.backlog_len(), 8);
        let on_disk = std::fs::read(journal.path()).unwrap();
        assert_eq!(on_disk.len() as u64, whole, "no torn line left");
        let replay = Replay::read(&on_disk, None).unwrap();
        assert_eq!(replay.ended_turns, 1);
        // Space again: the next record writes the eight before it first.
        journal.set_space(None);
        let [start, end] = turn(6, &answer);
        let recorded = journal.record(&start).unwrap();
        assert!(recorded.error.is_none());
        assert_eq!(recorded.caught_up, 8);
        assert!(journal.record(&end).unwrap().error.is_none());
        assert_eq!(journal.backlog_len(), 0);
        let replay = Replay::read(&std::fs::read(journal.path()).unwrap(), None).unwrap();
        let ids: Vec<&str> = replay.turns.iter().map(|t| t.turn_id.as_str()).collect();
        assert_eq!(ids, ["t1", "t2", "t3", "t4", "t5", "t6"], "in order, once");
        assert!(replay.turns.iter().all(|t| t.ended.is_some()));
        assert_eq!(replay.history.len(), 12);
        assert_eq!(replay.seq, 65);
    }

    #[test]
    fn a_catch_up_that_only_partly_fits_writes_whole_records_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let mut journal = store.create(&header("0c")).unwrap();
        journal.set_space(Some(0));
        for n in 1..4 {
            for record in turn(n, "short") {
                journal.record(&record).unwrap();
            }
        }
        assert_eq!(journal.backlog_len(), 6);
        // Room for a little over two records.
        let one = turn(1, "short")[0].line().unwrap().len() as u64;
        journal.set_space(Some(one * 2 + 40));
        let recorded = journal.retry();
        assert!(recorded.error.is_some());
        assert!(recorded.caught_up >= 1, "{recorded:?}");
        let bytes = std::fs::read(journal.path()).unwrap();
        assert_eq!(bytes.len() as u64, journal.len(), "whole records only");
        assert!(bytes.ends_with(b"\n"));
        Replay::read(&bytes, None).unwrap();
        journal.set_space(None);
        assert!(journal.retry().error.is_none());
        let replay = Replay::read(&std::fs::read(journal.path()).unwrap(), None).unwrap();
        assert_eq!(replay.ended_turns, 3);
        assert_eq!(replay.turns.len(), 3);
    }

    #[test]
    fn past_its_bound_the_backlog_still_resumes_the_whole_history() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let mut journal = store.create(&header("0d")).unwrap();
        journal.set_backlog_limit(2_000);
        journal.set_space(Some(0));
        let answer = "z".repeat(600);
        for n in 1..5 {
            for record in turn(n, &answer) {
                journal.record(&record).unwrap();
            }
        }
        // The server writes a turn's end whole once the backlog is past
        // its bound: the history as it is, all of it.
        let all = json!([{"role": "user", "content": "summary of it all"}]);
        let [start, _] = turn(5, "");
        journal.record(&start).unwrap();
        journal
            .record(&Record::TurnEnded {
                turn_id: "t5".into(),
                at: 5,
                seq: 55,
                outcome: Outcome::Completed,
                code: None,
                message: None,
                messages: vec![],
                history: HistoryChange::Snapshot(all.as_array().unwrap().clone()),
                usage: None,
                tokens_per_byte: None,
                spent: None,
                no_undo: None,
            })
            .unwrap();
        assert!(
            journal.backlog_bytes() <= 2_000,
            "{}",
            journal.backlog_bytes()
        );
        journal.set_space(None);
        assert!(journal.retry().error.is_none());
        let replay = Replay::read(&std::fs::read(journal.path()).unwrap(), None).unwrap();
        assert_eq!(serde_json::Value::Array(replay.history.clone()), all);
        assert_eq!(replay.seq, 55);
        assert!(
            replay.turns.iter().all(|t| t.ended.is_some()),
            "none interrupted"
        );
        assert_eq!(replay.turns.last().map(|t| t.turn_id.as_str()), Some("t5"));
    }

    #[test]
    fn a_journal_still_waiting_for_room_resumes_with_what_waits() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let mut journal = store.create(&header("0e")).unwrap();
        for record in turn(1, "one") {
            journal.record(&record).unwrap();
        }
        journal.set_space(Some(0));
        for record in turn(2, "two") {
            journal.record(&record).unwrap();
        }
        let (journal, replay) = store.resume_waiting("0e", journal).unwrap();
        assert_eq!(replay.ended_turns, 2);
        assert_eq!(replay.history.len(), 4);
        assert_eq!(journal.backlog_len(), 2, "still waiting, still held");
        let on_disk = Replay::read(&std::fs::read(journal.path()).unwrap(), None).unwrap();
        assert_eq!(on_disk.ended_turns, 1);
    }

    #[test]
    fn a_resumed_journal_cut_back_writes_its_next_line_where_the_last_whole_one_ends() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let mut journal = store.create(&header("0f")).unwrap();
        for record in turn(1, "one") {
            journal.record(&record).unwrap();
        }
        drop(journal);
        // Resumed: written at its position, not opened to append.
        let (mut journal, _) = store.resume("0f").unwrap();
        journal.set_space(Some(30));
        for record in turn(2, &"two ".repeat(50)) {
            assert!(journal.record(&record).unwrap().error.is_some());
        }
        journal.set_space(None);
        for record in turn(3, "three") {
            assert!(journal.record(&record).unwrap().error.is_none());
        }
        let bytes = std::fs::read(journal.path()).unwrap();
        assert!(!bytes.contains(&0), "no hole of zeros");
        assert_eq!(bytes.len() as u64, journal.len());
        let replay = Replay::read(&bytes, None).unwrap();
        let ids: Vec<&str> = replay.turns.iter().map(|t| t.turn_id.as_str()).collect();
        assert_eq!(ids, ["t1", "t2", "t3"]);
    }
}
