//! The store: `$SCV_HOME/sessions/`, one journal per session
//! (`SESSION_ID.jsonl`) and beside it a small summary for listing
//! (`SESSION_ID.meta`, rewritten whole by the journal's owner; a summary
//! that does not match its journal's length is recomputed from the
//! journal, never trusted).
//!
//! Nothing in the directory is followed or trusted blindly: the directory
//! must be private (0700, ours, not a link); a journal must be a regular
//! file of ours with one link, opened with `O_NOFOLLOW`; names that are not
//! a session's are skipped with a diagnostic; session ids are checked
//! before they become paths.

use crate::error::StoreError;
use crate::journal::Journal;
use crate::record::{ForkedFrom, Header, Record};
use crate::replay::Replay;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

const JOURNAL: &str = "jsonl";

/// The fewest characters of a session id that name it (`resolve`).
pub(crate) const MIN_ID_PREFIX: usize = 4;
const META: &str = "meta";

/// A session as `session.list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub session_id: String,
    pub cwd: String,
    pub title: String,
    pub created: u64,
    pub updated: u64,
    pub turns: u64,
    pub provider: String,
    pub model: String,
    /// Live on some connection (its journal is locked).
    pub open: bool,
    /// Why it cannot be resumed, if it cannot.
    pub damaged: Option<String>,
    /// Bytes on disk (journal and summary).
    pub bytes: u64,
    /// The journal's last change in nanoseconds: orders sessions updated
    /// within the same second.
    pub modified_nanos: i128,
    /// A subagent's: the `task` call that started it.
    pub parent: Option<scv_protocol::Parent>,
    /// A fork's: the session it came from.
    pub forked_from: Option<ForkedFrom>,
}

/// A listed session as `session.listed` (and `scv sessions list --json`)
/// shows it.
impl From<Listed> for scv_protocol::StoredSession {
    fn from(s: Listed) -> scv_protocol::StoredSession {
        scv_protocol::StoredSession {
            session_id: s.session_id,
            cwd: s.cwd,
            title: s.title,
            created_unix_seconds: s.created,
            updated_unix_seconds: s.updated,
            turns: s.turns,
            provider: s.provider,
            model: s.model,
            open: s.open,
            damaged: s.damaged,
            parent: s.parent,
            forked_from: s.forked_from,
            live: None,
        }
    }
}

/// What the summary file holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub cwd: String,
    pub title: String,
    pub created: u64,
    pub updated: u64,
    pub turns: u64,
    pub provider: String,
    pub model: String,
    /// The journal's length when this was written.
    pub len: u64,
    /// A subagent's: the `task` call that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<scv_protocol::Parent>,
    /// A fork's: the session it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkedFrom>,
}

#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

impl SessionStore {
    /// The store under `scv_home/sessions`, made (0700) when missing. A
    /// directory that is a link, not ours, or open to others is refused.
    pub fn open(scv_home: &Path) -> Result<SessionStore, StoreError> {
        let dir = scv_home.join("sessions");
        match std::fs::symlink_metadata(&dir) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&dir)
                    .map_err(|e| StoreError::io("cannot create the session store", &dir, e))?;
            }
            Err(err) => return Err(StoreError::io("cannot use the session store", &dir, err)),
            Ok(meta) => check_private_dir(&dir, &meta)?,
        }
        Ok(SessionStore { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, session_id: &str, ext: &str) -> Result<PathBuf, StoreError> {
        if !valid_id(session_id) {
            return Err(StoreError::NotFound(session_id.to_string()));
        }
        Ok(self.dir.join(format!("{session_id}.{ext}")))
    }

    /// A new journal for `header`'s session, locked, its header written and
    /// durable (the file and the directory entry).
    pub fn create(&self, header: &Header) -> Result<Journal, StoreError> {
        let mut journal = self.create_file(header)?;
        let written = journal
            .append(&Record::Session(header.clone()))
            .and_then(|_| journal.sync());
        if let Err(err) = written {
            // Nothing half made is left behind.
            self.remove_new(&journal);
            return Err(err);
        }
        sync_dir(&self.dir);
        Ok(journal)
    }

    /// A new journal as [`SessionStore::create`] makes it, except that a
    /// header the disk refuses (it is full) waits in the journal's
    /// backlog, written before its first record once there is room: the
    /// file stays empty meanwhile (an empty journal is not listed, and
    /// one left so by a crash is removed by the bounds). Returns the
    /// journal and why its header waits, if it does.
    pub fn create_waiting(
        &self,
        header: &Header,
    ) -> Result<(Journal, Option<StoreError>), StoreError> {
        let mut journal = self.create_file(header)?;
        let recorded = journal.record(&Record::Session(header.clone()))?;
        if let Some(err) = recorded.error {
            return Ok((journal, Some(err)));
        }
        let synced = journal.sync();
        sync_dir(&self.dir);
        Ok((journal, synced.err()))
    }

    /// The new, empty, locked journal file for `header`'s session.
    fn create_file(&self, header: &Header) -> Result<Journal, StoreError> {
        let path = self.path(&header.session_id, JOURNAL)?;
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| StoreError::io("cannot create the journal", &path, e))?;
        if let Err(err) = lock(&file, &path, &header.session_id) {
            let _ = std::fs::remove_file(&path);
            return Err(err);
        }
        Ok(Journal::new(file, path, 0))
    }

    /// Removes a journal this process just made and could not fill.
    fn remove_new(&self, journal: &Journal) {
        let _ = std::fs::remove_file(journal.path());
        sync_dir(&self.dir);
    }

    /// A fork: a new session `new_id` holding `source`'s journal up to the
    /// end of `turn_id` (all of it without one); its header is the
    /// source's, made at `created`, and says where it came from
    /// (`forked_from`). Returns the new journal and its replay.
    pub fn fork(
        &self,
        source: &str,
        turn_id: Option<&str>,
        new_id: &str,
        created: u64,
    ) -> Result<(Journal, Replay), StoreError> {
        let bytes = self.read_bytes(source)?;
        let replay = Replay::read(&bytes, turn_id).map_err(|d| StoreError::Damaged {
            session_id: source.to_string(),
            why: d.to_string(),
        })?;
        if let Some(turn) = turn_id {
            if !replay.has_ended_turn(turn) {
                return Err(StoreError::NoSuchTurn(turn.to_string()));
            }
        }
        let mut header = replay.header.clone();
        header.session_id = new_id.to_string();
        header.created = created;
        header.forked_from = Some(ForkedFrom {
            session_id: source.to_string(),
            turn_id: turn_id.map(String::from),
        });
        header.provider = replay.provider.clone();
        header.model = replay.model.clone();
        // A fork of a subagent's session is the user's own.
        header.parent = None;
        let mut journal = self.create(&header)?;
        // The source's records after its header, as they were.
        let body = &bytes[replay.header_len as usize..replay.valid_len as usize];
        if let Err(err) = journal.append_raw(body).and_then(|()| journal.sync()) {
            // A fork the disk cannot take is not left half made.
            self.remove_new(&journal);
            return Err(err);
        }
        let mut forked = replay;
        forked.header = header;
        Ok((journal, forked))
    }

    /// Takes the session for this connection: its journal locked (another
    /// holder means it is open elsewhere), a torn tail cut back, and its
    /// replay.
    pub fn resume(&self, session_id: &str) -> Result<(Journal, Replay), StoreError> {
        let path = self.path(session_id, JOURNAL)?;
        let mut file = open_journal(&path, session_id, true)?;
        lock(&file, &path, session_id)?;
        // Deleted while we waited for the lock: the name is gone.
        if !same_file(&file, &path) {
            return Err(StoreError::NotFound(session_id.to_string()));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io("cannot read the journal", &path, e))?;
        let replay = Replay::read(&bytes, None).map_err(|d| StoreError::Damaged {
            session_id: session_id.to_string(),
            why: d.to_string(),
        })?;
        if replay.valid_len < bytes.len() as u64 {
            file.set_len(replay.valid_len)
                .map_err(|e| StoreError::io("cannot cut the journal's torn tail", &path, e))?;
        }
        file.seek(SeekFrom::End(0))
            .map_err(|e| StoreError::io("cannot read the journal", &path, e))?;
        Ok((Journal::new(file, path, replay.valid_len), replay))
    }

    /// A session whose journal this process still holds, with records
    /// waiting for room (it closed while the disk was full), taken again:
    /// its replay is the file's records and then those waiting.
    pub fn resume_waiting(
        &self,
        session_id: &str,
        journal: Journal,
    ) -> Result<(Journal, Replay), StoreError> {
        let mut bytes = self.read_bytes(session_id)?;
        bytes.truncate(journal.len() as usize);
        for line in journal.waiting() {
            bytes.extend_from_slice(line);
        }
        let replay = Replay::read(&bytes, None).map_err(|d| StoreError::Damaged {
            session_id: session_id.to_string(),
            why: d.to_string(),
        })?;
        Ok((journal, replay))
    }

    /// The session's replay without taking it (export, a look at one open
    /// elsewhere); `until`: up to the end of that turn.
    pub fn read(&self, session_id: &str, until: Option<&str>) -> Result<Replay, StoreError> {
        let bytes = self.read_bytes(session_id)?;
        Replay::read(&bytes, until).map_err(|d| StoreError::Damaged {
            session_id: session_id.to_string(),
            why: d.to_string(),
        })
    }

    /// The session as it was just before turn `turn_id` started (`None`:
    /// no such turn).
    pub fn read_before(
        &self,
        session_id: &str,
        turn_id: &str,
    ) -> Result<Option<Replay>, StoreError> {
        let bytes = self.read_bytes(session_id)?;
        Replay::read_before(&bytes, turn_id).map_err(|d| StoreError::Damaged {
            session_id: session_id.to_string(),
            why: d.to_string(),
        })
    }

    pub(crate) fn read_bytes(&self, session_id: &str) -> Result<Vec<u8>, StoreError> {
        let path = self.path(session_id, JOURNAL)?;
        let mut file = open_journal(&path, session_id, false)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io("cannot read the journal", &path, e))?;
        Ok(bytes)
    }

    /// Whether the session is live on some connection now.
    pub fn is_open(&self, session_id: &str) -> bool {
        let Ok(path) = self.path(session_id, JOURNAL) else {
            return false;
        };
        match open_journal(&path, session_id, false) {
            Ok(file) => held(&file),
            Err(_) => false,
        }
    }

    /// Rewrites the session's summary (its journal's owner does, after
    /// each turn).
    pub fn write_meta(&self, session_id: &str, meta: &Meta) -> Result<(), StoreError> {
        let path = self.path(session_id, META)?;
        let tmp = self.dir.join(format!(".{session_id}.meta.tmp"));
        let text = serde_json::to_vec(meta).map_err(StoreError::Encode)?;
        let written = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&tmp)?;
            file.write_all(&text)?;
            std::fs::rename(&tmp, &path)
        })();
        written.map_err(|e| {
            // No temporary file left behind (a full disk left an empty
            // one); the summary is a cache, recomputed when stale.
            let _ = std::fs::remove_file(&tmp);
            StoreError::io("cannot write the session summary", &path, e)
        })
    }

    /// Every session in the store, most recently updated first, and the
    /// diagnostics of what was skipped.
    pub fn list(&self) -> (Vec<Listed>, Vec<String>) {
        let mut listed = Vec::new();
        let mut skipped = Vec::new();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(err) => {
                return (Vec::new(), vec![format!("{}: {err}", self.dir.display())]);
            }
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Some(id) = name.strip_suffix(".jsonl") else {
                let ours = name.ends_with(".meta") || name.starts_with('.');
                if !ours {
                    skipped.push(format!("{name}: not a session's file; skipped"));
                }
                continue;
            };
            if !valid_id(id) {
                skipped.push(format!("{name}: not a session's name; skipped"));
                continue;
            }
            if entry.metadata().is_ok_and(|m| m.is_file() && m.len() == 0) {
                // A session whose header waits for room on the disk, or
                // one a crash left so: nothing to show.
                skipped.push(format!(
                    "{name}: empty (its first record was never written); skipped"
                ));
                continue;
            }
            listed.push(self.listed(id));
        }
        listed.sort_by(|a, b| {
            b.updated
                .cmp(&a.updated)
                .then(b.modified_nanos.cmp(&a.modified_nanos))
                .then(a.session_id.cmp(&b.session_id))
        });
        (listed, skipped)
    }

    fn listed(&self, id: &str) -> Listed {
        let mut listed = Listed {
            session_id: id.to_string(),
            cwd: String::new(),
            title: String::new(),
            created: 0,
            updated: 0,
            turns: 0,
            provider: String::new(),
            model: String::new(),
            open: false,
            damaged: None,
            bytes: 0,
            modified_nanos: 0,
            parent: None,
            forked_from: None,
        };
        let path = self.dir.join(format!("{id}.jsonl"));
        // What a damaged one is dated by.
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            listed.updated = meta.mtime().max(0) as u64;
            listed.created = listed.updated;
            listed.modified_nanos =
                i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
        }
        let file = match open_journal(&path, id, false) {
            Ok(file) => file,
            Err(err) => {
                listed.damaged = Some(err.to_string());
                return listed;
            }
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        listed.open = held(&file);
        let meta_path = self.dir.join(format!("{id}.meta"));
        let meta = read_meta(&meta_path).filter(|m| m.len == len);
        listed.bytes = len + std::fs::metadata(&meta_path).map(|m| m.len()).unwrap_or(0);
        let meta = match meta {
            Some(meta) => meta,
            None => {
                let mut bytes = Vec::new();
                let mut file = file;
                if let Err(err) = file.read_to_end(&mut bytes) {
                    listed.damaged = Some(err.to_string());
                    return listed;
                }
                match Replay::read(&bytes, None) {
                    Ok(replay) => replay.meta(len),
                    Err(damage) => {
                        listed.damaged = Some(damage.to_string());
                        return listed;
                    }
                }
            }
        };
        listed.cwd = meta.cwd;
        listed.title = meta.title;
        listed.created = meta.created;
        listed.updated = meta.updated;
        listed.turns = meta.turns;
        listed.provider = meta.provider;
        listed.model = meta.model;
        listed.parent = meta.parent;
        listed.forked_from = meta.forked_from;
        listed
    }

    /// The stored session `id` names: itself, or the one session whose id
    /// starts with it (at least [`MIN_ID_PREFIX`] characters: the short
    /// ids front ends print). Unknown → `NotFound`; a start of more than
    /// one → `Ambiguous`.
    pub fn resolve(&self, id: &str) -> Result<String, StoreError> {
        let path = self.path(id, JOURNAL)?;
        if std::fs::symlink_metadata(&path).is_ok() || id.len() < MIN_ID_PREFIX {
            return Ok(id.to_string());
        }
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| StoreError::io("cannot list the session store", &self.dir, e))?;
        let mut found: Option<String> = None;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            if stem.starts_with(id) && valid_id(stem) {
                if found.is_some() {
                    return Err(StoreError::Ambiguous(id.to_string()));
                }
                found = Some(stem.to_string());
            }
        }
        found.ok_or_else(|| StoreError::NotFound(id.to_string()))
    }

    /// Deletes a session that is not open (journal and summary).
    pub fn delete(&self, session_id: &str) -> Result<(), StoreError> {
        let path = self.path(session_id, JOURNAL)?;
        let file = open_journal(&path, session_id, false)?;
        // Held while the name goes, so nobody takes the session meanwhile.
        lock(&file, &path, session_id)?;
        std::fs::remove_file(&path).map_err(|e| StoreError::io("cannot delete", &path, e))?;
        let _ = std::fs::remove_file(self.dir.join(format!("{session_id}.meta")));
        sync_dir(&self.dir);
        Ok(())
    }

    /// Deletes sessions not updated within `retention_days` (0: no age
    /// limit), then the oldest until the store is within `max_bytes` —
    /// never an open one. Returns what was deleted and the bytes left.
    pub fn enforce(&self, retention_days: u64, max_bytes: u64, now: u64) -> Enforced {
        let (mut listed, _) = self.list();
        let mut deleted = self.remove_empty(now);
        let cutoff = match retention_days {
            0 => 0,
            days => now.saturating_sub(days.saturating_mul(86_400)),
        };
        // A journal this build cannot read (another format version, a
        // planted file) is reported, never deleted by the bounds: only a
        // person's `session.delete` removes it.
        listed.retain(|s| s.damaged.is_none());
        listed.retain(|s| {
            let stale = s.updated < cutoff && !s.open;
            if stale && self.delete(&s.session_id).is_ok() {
                deleted.push(s.session_id.clone());
                return false;
            }
            true
        });
        let mut total: u64 = listed.iter().map(|s| s.bytes).sum();
        // Oldest first.
        for session in listed.iter().rev() {
            if total <= max_bytes {
                break;
            }
            if session.open {
                continue;
            }
            if self.delete(&session.session_id).is_ok() {
                total = total.saturating_sub(session.bytes);
                deleted.push(session.session_id.clone());
            }
        }
        Enforced {
            deleted,
            bytes: total,
        }
    }
}

impl SessionStore {
    /// Removes empty journals nobody holds that are more than a minute
    /// old (a crash while the disk was full left them before their header
    /// was written: they hold nothing); returns their ids.
    fn remove_empty(&self, now: u64) -> Vec<String> {
        let mut removed = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return removed;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            let stale = entry
                .metadata()
                .is_ok_and(|m| m.is_file() && m.len() == 0 && (m.mtime().max(0) as u64) + 60 < now);
            if !stale || !valid_id(id) {
                continue;
            }
            let path = self.dir.join(&name);
            let Ok(file) = open_journal(&path, id, false) else {
                continue;
            };
            // Held: its owner is waiting for room to write its header.
            if lock(&file, &path, id).is_err() {
                continue;
            }
            if file.metadata().is_ok_and(|m| m.len() == 0) && std::fs::remove_file(&path).is_ok() {
                let _ = std::fs::remove_file(self.dir.join(format!("{id}.meta")));
                removed.push(id.to_string());
            }
        }
        if !removed.is_empty() {
            sync_dir(&self.dir);
        }
        removed
    }
}

/// What [`SessionStore::enforce`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforced {
    /// The sessions deleted.
    pub deleted: Vec<String>,
    /// The store's bytes after.
    pub bytes: u64,
}

impl Replay {
    /// The summary of this replay for a journal of `len` bytes.
    pub fn meta(&self, len: u64) -> Meta {
        Meta {
            cwd: self.header.cwd.clone(),
            title: self.title.clone().unwrap_or_default(),
            created: self.header.created,
            updated: self.updated,
            turns: self.ended_turns as u64,
            provider: self.provider.clone(),
            model: self.model.clone(),
            len,
            parent: self.header.parent.clone(),
            forked_from: self.header.forked_from.clone(),
        }
    }
}

impl Journal {
    /// Appends bytes that are whole records already (a fork's body).
    pub(crate) fn append_raw(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.write_raw(bytes)
    }
}

/// A session id as the server makes them: a UUID (hex and dashes), so it
/// can never name a path outside the store.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

fn check_private_dir(dir: &Path, meta: &std::fs::Metadata) -> Result<(), StoreError> {
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(StoreError::Unsafe(format!(
            "{} is not a directory (a link is not followed)",
            dir.display()
        )));
    }
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(StoreError::Unsafe(format!(
            "{} belongs to another user",
            dir.display()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(StoreError::Unsafe(format!(
            "{} is open to other users (mode {:o}); make it 0700",
            dir.display(),
            meta.permissions().mode() & 0o777
        )));
    }
    Ok(())
}

/// Opens a journal without following a link; refuses anything but a
/// regular file of ours with one link.
fn open_journal(path: &Path, session_id: &str, write: bool) -> Result<File, StoreError> {
    let file = OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StoreError::NotFound(session_id.to_string()),
            _ if e.raw_os_error() == Some(libc::ELOOP) => {
                StoreError::Unsafe(format!("{} is a link; not followed", path.display()))
            }
            _ => StoreError::io("cannot open the journal", path, e),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| StoreError::io("cannot inspect the journal", path, e))?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.is_file() || meta.nlink() != 1 || meta.uid() != me {
        return Err(StoreError::Unsafe(format!(
            "{} is not a journal of this user's (a regular file with one link); skipped",
            path.display()
        )));
    }
    Ok(file)
}

/// Takes the journal's exclusive lock, or says the session is open. A
/// listing's probe holds a shared lock for an instant, so a refusal is
/// tried again a few times before it counts.
fn lock(file: &File, path: &Path, session_id: &str) -> Result<(), StoreError> {
    use rustix::fs::{flock, FlockOperation};
    for attempt in 0..4 {
        match flock(file.as_fd(), FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK) if attempt < 3 => {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => break,
            Err(err) => return Err(StoreError::io("cannot lock the journal", path, err.into())),
        }
    }
    Err(StoreError::Open(session_id.to_string()))
}

/// Whether `path` still names the open `file`.
fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Whether someone holds the journal's lock (probing with a shared lock,
/// released at once).
fn held(file: &File) -> bool {
    use rustix::fs::{flock, FlockOperation};
    match flock(file.as_fd(), FlockOperation::NonBlockingLockShared) {
        Ok(()) => {
            let _ = flock(file.as_fd(), FlockOperation::Unlock);
            false
        }
        Err(_) => true,
    }
}

fn read_meta(path: &Path) -> Option<Meta> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = Vec::new();
    file.take(64 * 1024).read_to_end(&mut text).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Makes a new or removed directory entry durable (best effort).
fn sync_dir(dir: &Path) {
    if let Ok(dir) = File::open(dir) {
        let _ = rustix::fs::fsync(dir.as_fd());
    }
}
