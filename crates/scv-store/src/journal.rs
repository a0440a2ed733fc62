//! One session's journal, open for appending: `SESSION_ID.jsonl` in the
//! store, mode 0600, held under an exclusive `flock` for as long as the
//! session lives on a connection — which is also how another process tells
//! the session is open.
//!
//! Appends go straight to the file (a `write`; a killed process loses
//! nothing written). [`Journal::sync`] makes them durable (`fdatasync`);
//! the server calls it at each terminal turn event.

use crate::error::StoreError;
use crate::record::Record;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

pub struct Journal {
    file: File,
    path: PathBuf,
    /// Bytes in the file (what `append` has written).
    len: u64,
}

impl Journal {
    /// Wraps `file`, already locked, whose complete records end at `len`.
    pub(crate) fn new(file: File, path: PathBuf, len: u64) -> Journal {
        Journal { file, path, len }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends one record (one `write` of one whole line). Returns the
    /// bytes added.
    pub fn append(&mut self, record: &Record) -> Result<u64, StoreError> {
        let line = record.line().map_err(StoreError::Encode)?;
        self.file
            .write_all(&line)
            .map_err(|e| StoreError::io("cannot write the journal", &self.path, e))?;
        self.len += line.len() as u64;
        Ok(line.len() as u64)
    }

    /// Appends bytes that are whole records already.
    pub(crate) fn write_raw(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.file
            .write_all(bytes)
            .map_err(|e| StoreError::io("cannot write the journal", &self.path, e))?;
        self.len += bytes.len() as u64;
        Ok(())
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
