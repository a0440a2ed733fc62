//! The directory: `$SCV_HOME/checkpoints/`, private, and everything in it
//! reached through directory fds opened without following links, so a
//! link planted in the store is refused, never followed.

use crate::checkpoint::Checkpoint;
use crate::error::CheckpointError;
use crate::hash::Hash;
use crate::snapshot::SnapshotId;
use crate::tree::{Decode, Tree, MAX_DEPTH, MAX_TREE_BYTES};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// An index bigger than this is refused (a planted file).
const MAX_INDEX_BYTES: u64 = 64 * 1024 * 1024;
const INDEX_VERSION: u32 = 1;

/// Where blobs and trees live: `objects/` and `trees/`, each fanned out by
/// the first two hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Blob,
    Tree,
}

impl Kind {
    pub(crate) fn dir(self) -> &'static str {
        match self {
            Kind::Blob => "objects",
            Kind::Tree => "trees",
        }
    }
}

#[derive(Debug)]
pub struct CheckpointStore {
    pub(crate) dir: PathBuf,
    pub(crate) fd: OwnedFd,
    pub(crate) objects: OwnedFd,
    pub(crate) trees: OwnedFd,
    pub(crate) sessions: OwnedFd,
    pub(crate) tmp: OwnedFd,
    /// The store directory's (device, inode): a workspace holding the
    /// store does not record it.
    pub(crate) ident: (u64, u64),
    counter: AtomicU64,
    /// The store's bytes at its last count (a walk of all of it), None
    /// before the first; held while counting.
    counted: Mutex<Option<u64>>,
    /// Bytes this handle wrote since that count (objects, fan-out
    /// directories, indexes): the count plus these is an upper bound of
    /// the store's bytes, unless another process wrote too.
    added: AtomicU64,
    /// Calls of [`CheckpointStore::over`], for its periodic recount.
    checks: AtomicU64,
}

/// [`CheckpointStore::over`] counts the store again every this many calls
/// whatever its estimate says: what other processes wrote is seen then.
const RECOUNT_EVERY: u64 = 16;

/// A session's index as stored.
#[derive(Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    checkpoints: Vec<Checkpoint>,
}

impl CheckpointStore {
    /// `$SCV_HOME/checkpoints`, made private when absent, refused when not
    /// private (a link, another user's, open to others).
    pub fn open(scv_home: &Path) -> Result<CheckpointStore, CheckpointError> {
        let dir = scv_home.join("checkpoints");
        match std::fs::symlink_metadata(&dir) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                match rustix::fs::mkdir(&dir, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => {
                        return Err(CheckpointError::io(
                            "cannot create the checkpoint store",
                            &dir,
                            e.into(),
                        ))
                    }
                }
            }
            Err(err) => {
                return Err(CheckpointError::io(
                    "cannot use the checkpoint store",
                    &dir,
                    err,
                ))
            }
            Ok(_) => {}
        }
        let fd = rustix::fs::open(&dir, dir_flags(), Mode::empty()).map_err(|e| {
            if e == Errno::LOOP || e == Errno::NOTDIR {
                CheckpointError::Unsafe(format!(
                    "{} is not a directory (a link is not followed)",
                    dir.display()
                ))
            } else {
                CheckpointError::io("cannot open the checkpoint store", &dir, e.into())
            }
        })?;
        check_private(&fd, &dir)?;
        let ident = rustix::fs::fstat(&fd)
            .map(|st| {
                let s = crate::tree::Stat::of(&st);
                (s.dev, s.ino)
            })
            .map_err(|e| CheckpointError::io("cannot inspect", &dir, e.into()))?;
        let sub = |name: &str| open_subdir(&fd, &dir, name);
        let objects = sub("objects")?;
        let trees = sub("trees")?;
        let sessions = sub("sessions")?;
        let tmp = sub("tmp")?;
        Ok(CheckpointStore {
            dir,
            fd,
            objects,
            trees,
            sessions,
            tmp,
            ident,
            counter: AtomicU64::new(0),
            counted: Mutex::new(None),
            added: AtomicU64::new(0),
            checks: AtomicU64::new(0),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn base(&self, kind: Kind) -> BorrowedFd<'_> {
        match kind {
            Kind::Blob => self.objects.as_fd(),
            Kind::Tree => self.trees.as_fd(),
        }
    }

    fn display(&self, kind: Kind, hash: &Hash) -> String {
        let hex = hash.hex();
        format!("{}/{}/{}", kind.dir(), &hex[..2], &hex[2..])
    }

    /// A unique name for a temp file (this process, a counter, the clock).
    pub(crate) fn temp_name(&self, prefix: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        format!("{prefix}{}-{n}-{nanos:08x}.tmp", std::process::id())
    }

    /// The fan-out directory `objects/ab` (made when `create`); None when
    /// absent. One that is a link or not a directory is refused.
    fn fan(
        &self,
        kind: Kind,
        hash: &Hash,
        create: bool,
    ) -> Result<Option<OwnedFd>, CheckpointError> {
        let hex = hash.hex();
        let name = &hex[..2];
        let base = self.base(kind);
        for _ in 0..2 {
            match rustix::fs::openat(base, name, dir_flags(), Mode::empty()) {
                Ok(fd) => return Ok(Some(fd)),
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(base, name, Mode::from_raw_mode(0o700)) {
                        Ok(()) => {
                            if let Ok(st) =
                                rustix::fs::statat(base, name, AtFlags::SYMLINK_NOFOLLOW)
                            {
                                self.wrote(cost(&st));
                            }
                            continue;
                        }
                        Err(Errno::EXIST) => continue,
                        Err(e) => {
                            return Err(self.io_err(
                                "cannot create",
                                &format!("{}/{name}", kind.dir()),
                                e,
                            ))
                        }
                    }
                }
                Err(Errno::NOENT) => return Ok(None),
                Err(Errno::LOOP) | Err(Errno::NOTDIR) => {
                    return Err(CheckpointError::Corrupt(format!(
                        "{}/{name} is not a directory (a link is not followed)",
                        kind.dir()
                    )))
                }
                Err(e) => {
                    return Err(self.io_err("cannot open", &format!("{}/{name}", kind.dir()), e))
                }
            }
        }
        Err(CheckpointError::Unsafe(format!(
            "{}/{name} keeps disappearing",
            kind.dir()
        )))
    }

    pub(crate) fn io_err(&self, what: &'static str, rel: &str, e: Errno) -> CheckpointError {
        CheckpointError::io(what, &self.dir.join(rel), e.into())
    }

    /// Whether the store has the object, as a regular file (of `size`
    /// bytes, for a sparse blob; not empty, for the rest): a short one (a
    /// crash before the data reached the disk) counts as absent and is
    /// written again. A compressed object torn otherwise is caught by its
    /// hash when read (a restore then refuses before changing anything).
    pub(crate) fn has(
        &self,
        kind: Kind,
        hash: &Hash,
        size: Option<u64>,
    ) -> Result<bool, CheckpointError> {
        let Some(fan) = self.fan(kind, hash, false)? else {
            return Ok(false);
        };
        let hex = hash.hex();
        match rustix::fs::statat(&fan, &hex[2..], AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => {
                if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                    return Err(CheckpointError::Corrupt(format!(
                        "{} is not a regular file",
                        self.display(kind, hash)
                    )));
                }
                Ok(match size {
                    Some(s) => s == st.st_size as u64,
                    None => st.st_size > 0,
                })
            }
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(self.io_err("cannot inspect", &self.display(kind, hash), e)),
        }
    }

    /// A new temp file in `tmp/` for writing.
    pub(crate) fn temp_file(&self) -> Result<(File, String), CheckpointError> {
        let name = self.temp_name("");
        let fd = rustix::fs::openat(
            &self.tmp,
            name.as_str(),
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| self.io_err("cannot create", &format!("tmp/{name}"), e))?;
        Ok((File::from(fd), name))
    }

    /// Moves a written temp file to its object name (replacing a short one).
    pub(crate) fn adopt(&self, kind: Kind, hash: &Hash, temp: &str) -> Result<(), CheckpointError> {
        let fan = self
            .fan(kind, hash, true)?
            .ok_or_else(|| CheckpointError::Missing(kind.dir().to_string()))?;
        let hex = hash.hex();
        let size = rustix::fs::statat(&self.tmp, temp, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| cost(&st))
            .unwrap_or(0);
        rustix::fs::renameat(&self.tmp, temp, &fan, &hex[2..]).map_err(|e| {
            let _ = rustix::fs::unlinkat(&self.tmp, temp, AtFlags::empty());
            self.io_err("cannot store", &self.display(kind, hash), e)
        })?;
        self.wrote(size);
        Ok(())
    }

    /// Counts `bytes` this handle added to the store.
    fn wrote(&self, bytes: u64) {
        self.added.fetch_add(bytes, Ordering::Relaxed);
    }

    pub(crate) fn discard(&self, temp: &str) {
        let _ = rustix::fs::unlinkat(&self.tmp, temp, AtFlags::empty());
    }

    /// Stores `bytes` as the blob `hash` (compressed, `blob.rs`) unless it
    /// is there already.
    pub(crate) fn put_blob(&self, hash: &Hash, bytes: &[u8]) -> Result<(), CheckpointError> {
        if self.has(Kind::Blob, hash, None)? {
            return Ok(());
        }
        let packed = crate::blob::pack(bytes)
            .map_err(|e| CheckpointError::io("cannot compress a file for", &self.dir, e))?;
        self.write_object(Kind::Blob, hash, &packed)
    }

    fn write_object(&self, kind: Kind, hash: &Hash, bytes: &[u8]) -> Result<(), CheckpointError> {
        let (mut file, temp) = self.temp_file()?;
        if let Err(e) = file.write_all(bytes) {
            self.discard(&temp);
            return Err(CheckpointError::io(
                "cannot write",
                &self.dir.join("tmp").join(&temp),
                e,
            ));
        }
        drop(file);
        self.adopt(kind, hash, &temp)
    }

    /// Opens an object for reading: a regular file, never a link.
    pub(crate) fn open_object(&self, kind: Kind, hash: &Hash) -> Result<File, CheckpointError> {
        let name = self.display(kind, hash);
        let fan = self
            .fan(kind, hash, false)?
            .ok_or_else(|| CheckpointError::Missing(name.clone()))?;
        let hex = hash.hex();
        let fd = rustix::fs::openat(
            &fan,
            &hex[2..],
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOENT => CheckpointError::Missing(name.clone()),
            Errno::LOOP => CheckpointError::Corrupt(format!("{name} is a link; not followed")),
            e => self.io_err("cannot open", &name, e),
        })?;
        let st = rustix::fs::fstat(&fd).map_err(|e| self.io_err("cannot inspect", &name, e))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(CheckpointError::Corrupt(format!(
                "{name} is not a regular file"
            )));
        }
        Ok(File::from(fd))
    }

    /// A whole blob, its hash verified.
    pub(crate) fn read_blob(&self, hash: &Hash) -> Result<Vec<u8>, CheckpointError> {
        let name = self.display(Kind::Blob, hash);
        let mut file = self.open_object(Kind::Blob, hash)?;
        let bytes = std::cell::RefCell::new(Vec::new());
        let whole = crate::blob::read_into(
            &mut file,
            hash,
            crate::checkpoint::MAX_CONTENT_BYTES + 1,
            &mut |b| {
                bytes.borrow_mut().extend_from_slice(b);
                Ok(())
            },
            &mut || {
                bytes.borrow_mut().clear();
                Ok(())
            },
        )
        .map_err(|e| CheckpointError::Corrupt(format!("{name}: {e}")))?;
        if !whole {
            return Err(CheckpointError::Corrupt(format!(
                "{name} does not match its hash"
            )));
        }
        Ok(bytes.into_inner())
    }

    /// Reads a blob through without keeping it: whether it is whole.
    pub(crate) fn verify_blob(&self, hash: &Hash) -> Result<(), CheckpointError> {
        let name = self.display(Kind::Blob, hash);
        let mut file = self.open_object(Kind::Blob, hash)?;
        let whole =
            crate::blob::read_into(&mut file, hash, u64::MAX, &mut |_| Ok(()), &mut || Ok(()))
                .map_err(|e| CheckpointError::Corrupt(format!("{name}: {e}")))?;
        if !whole {
            return Err(CheckpointError::Corrupt(format!(
                "{name} does not match its hash"
            )));
        }
        Ok(())
    }

    /// Stores a tree (compressed) unless a whole copy is there; its hash.
    pub(crate) fn put_tree(&self, tree: &Tree) -> Result<Hash, CheckpointError> {
        let data = tree.encode();
        let hash = Hash::of(&data);
        if self.has(Kind::Tree, &hash, None)? && self.read_tree_bytes(&hash).is_ok() {
            return Ok(hash);
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
        z.write_all(&data)
            .map_err(|e| CheckpointError::io("cannot compress a tree for", &self.dir, e))?;
        let packed = z
            .finish()
            .map_err(|e| CheckpointError::io("cannot compress a tree for", &self.dir, e))?;
        self.write_object(Kind::Tree, &hash, &packed)?;
        Ok(hash)
    }

    /// A tree object's bytes, decompressed and verified.
    fn read_tree_bytes(&self, hash: &Hash) -> Result<Vec<u8>, CheckpointError> {
        let name = self.display(Kind::Tree, hash);
        let file = self.open_object(Kind::Tree, hash)?;
        let mut data = Vec::new();
        flate2::read::ZlibDecoder::new(file)
            .take(MAX_TREE_BYTES as u64 + 1)
            .read_to_end(&mut data)
            .map_err(|e| CheckpointError::Corrupt(format!("{name}: not zlib data ({e})")))?;
        if data.len() > MAX_TREE_BYTES {
            return Err(CheckpointError::Corrupt(format!("{name}: too big")));
        }
        if Hash::of(&data) != *hash {
            return Err(CheckpointError::Corrupt(format!(
                "{name} does not match its hash"
            )));
        }
        Ok(data)
    }

    /// One tree, verified, its child trees given by `child`.
    pub(crate) fn load_tree_shallow(
        &self,
        hash: &Hash,
        child: &mut dyn FnMut(Hash) -> Result<Arc<Tree>, CheckpointError>,
    ) -> Result<Tree, CheckpointError> {
        let data = self.read_tree_bytes(hash)?;
        Tree::decode(&data, child).map_err(|e| match e {
            Decode::Bad(why) => {
                CheckpointError::Corrupt(format!("{}: {why}", self.display(Kind::Tree, hash)))
            }
            Decode::Child(err) => err,
        })
    }

    /// A tree and every tree under it, verified; `cache` shares subtrees
    /// between snapshots.
    pub(crate) fn load_tree(
        &self,
        hash: &Hash,
        cache: &mut HashMap<Hash, Arc<Tree>>,
        depth: usize,
    ) -> Result<Arc<Tree>, CheckpointError> {
        if let Some(tree) = cache.get(hash) {
            return Ok(tree.clone());
        }
        if depth > MAX_DEPTH {
            return Err(CheckpointError::Corrupt(format!(
                "{}: nested deeper than {MAX_DEPTH}",
                self.display(Kind::Tree, hash)
            )));
        }
        let data = self.read_tree_bytes(hash)?;
        let mut child = |h: Hash| self.load_tree(&h, cache, depth + 1);
        let tree = match Tree::decode(&data, &mut child) {
            Ok(tree) => Arc::new(tree),
            Err(Decode::Bad(why)) => {
                return Err(CheckpointError::Corrupt(format!(
                    "{}: {why}",
                    self.display(Kind::Tree, hash)
                )))
            }
            Err(Decode::Child(err)) => return Err(err),
        };
        cache.insert(*hash, tree.clone());
        Ok(tree)
    }

    /// A lock on the store: shared while recording or restoring, exclusive
    /// while evicting and sweeping.
    pub(crate) fn lock(&self, exclusive: bool) -> Result<File, CheckpointError> {
        use rustix::fs::{flock, FlockOperation};
        let fd = rustix::fs::openat(
            &self.fd,
            "lock",
            OFlags::CREATE | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| match e {
            Errno::LOOP => CheckpointError::Unsafe("the store's lock file is a link".into()),
            e => self.io_err("cannot open", "lock", e),
        })?;
        let op = if exclusive {
            FlockOperation::LockExclusive
        } else {
            FlockOperation::LockShared
        };
        flock(&fd, op).map_err(|e| self.io_err("cannot lock", "lock", e))?;
        Ok(File::from(fd))
    }

    /// How many sweeps have deleted objects: a snapshot made before the
    /// last one cannot vouch that the objects it names are still there.
    pub(crate) fn generation(&self) -> u64 {
        read_regular(self.fd.as_fd(), "generation", 4096)
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
    }

    pub(crate) fn bump_generation(&self) -> Result<(), CheckpointError> {
        let next = self.generation() + 1;
        self.write_atomic(
            &self.fd,
            "generation",
            next.to_string().as_bytes(),
            "generation",
        )
    }

    /// temp + fsync + rename + fsync of the directory.
    fn write_atomic(
        &self,
        dir: &OwnedFd,
        name: &str,
        bytes: &[u8],
        shown: &str,
    ) -> Result<(), CheckpointError> {
        let temp = self.temp_name(".");
        let fd = rustix::fs::openat(
            dir,
            temp.as_str(),
            OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| self.io_err("cannot write", shown, e))?;
        let mut file = File::from(fd);
        let written = (|| {
            file.write_all(bytes).map_err(errno)?;
            file.sync_all().map_err(errno)?;
            let size = rustix::fs::fstat(&file).map(|st| cost(&st))?;
            rustix::fs::renameat(dir, temp.as_str(), dir, name)?;
            Ok(size)
        })();
        match written {
            // What it replaced is not subtracted: an upper bound.
            Ok(size) => self.wrote(size),
            Err(e) => {
                let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
                return Err(self.io_err("cannot write", shown, e));
            }
        }
        let _ = rustix::fs::fsync(dir);
        Ok(())
    }

    /// A session's checkpoints, oldest first (empty when none).
    pub fn index(&self, session_id: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        let name = index_name(session_id)?;
        let shown = format!("sessions/{name}");
        let fd = match rustix::fs::openat(
            &self.sessions,
            name.as_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(Vec::new()),
            Err(Errno::LOOP) => {
                return Err(CheckpointError::Corrupt(format!(
                    "{shown} is a link; not followed"
                )))
            }
            Err(e) => return Err(self.io_err("cannot open", &shown, e)),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| self.io_err("cannot inspect", &shown, e))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(CheckpointError::Corrupt(format!(
                "{shown} is not a regular file"
            )));
        }
        if st.st_size as u64 > MAX_INDEX_BYTES {
            return Err(CheckpointError::Corrupt(format!("{shown} is too big")));
        }
        let mut bytes = Vec::new();
        File::from(fd)
            .take(MAX_INDEX_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| CheckpointError::io("cannot read", &self.dir.join(&shown), e))?;
        let index: IndexFile = serde_json::from_slice(&bytes)
            .map_err(|e| CheckpointError::Corrupt(format!("{shown}: {e}")))?;
        if index.version != INDEX_VERSION {
            return Err(CheckpointError::Corrupt(format!(
                "{shown}: format version {} (this build reads {INDEX_VERSION})",
                index.version
            )));
        }
        for c in &index.checkpoints {
            validate(c).map_err(|e| CheckpointError::Corrupt(format!("{shown}: {e}")))?;
        }
        Ok(index.checkpoints)
    }

    pub fn save_index(
        &self,
        session_id: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), CheckpointError> {
        let name = index_name(session_id)?;
        for c in checkpoints {
            validate(c)?;
        }
        let index = IndexFile {
            version: INDEX_VERSION,
            checkpoints: checkpoints.to_vec(),
        };
        let bytes = serde_json::to_vec(&index)
            .map_err(|e| CheckpointError::Corrupt(format!("cannot encode the index: {e}")))?;
        self.write_atomic(&self.sessions, &name, &bytes, &format!("sessions/{name}"))
    }

    pub fn delete_session(&self, session_id: &str) -> Result<(), CheckpointError> {
        let name = index_name(session_id)?;
        match rustix::fs::unlinkat(&self.sessions, name.as_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {
                let _ = rustix::fs::fsync(&self.sessions);
                Ok(())
            }
            Err(e) => Err(self.io_err("cannot delete", &format!("sessions/{name}"), e)),
        }
    }

    /// The session ids that have an index, and what is in `sessions/` that
    /// is not one.
    pub(crate) fn session_ids(&self) -> Result<(Vec<String>, Vec<String>), CheckpointError> {
        let mut ids = Vec::new();
        let mut strays = Vec::new();
        let mut dir = rustix::fs::Dir::read_from(&self.sessions)
            .map_err(|e| self.io_err("cannot list", "sessions", e))?;
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(|e| self.io_err("cannot list", "sessions", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            match name.strip_suffix(".json") {
                Some(id) if valid_session_id(id) => ids.push(id.to_string()),
                _ => strays.push(name),
            }
        }
        ids.sort();
        Ok((ids, strays))
    }

    /// Bytes the store takes on disk now: every file, directory and
    /// anything else under it (objects, trees, indexes, the fan-out
    /// directories, temp files), each the larger of its length and its
    /// allocated blocks — at least what `du -s` and `du -sb` say. A walk
    /// of the whole store.
    pub fn bytes(&self) -> u64 {
        du(self.fd.as_fd(), 0) + rustix::fs::fstat(&self.fd).map_or(0, |st| cost(&st))
    }

    /// Counts the store again (see [`CheckpointStore::bytes`]) and keeps
    /// the count for [`CheckpointStore::over`].
    pub(crate) fn recount(&self) -> u64 {
        let mut counted = self
            .counted
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Reset first: what is written during the walk is then counted
        // once or twice, never not at all.
        self.added.store(0, Ordering::Relaxed);
        let total = self.bytes();
        *counted = Some(total);
        total
    }

    /// Whether the store may hold more than `max_bytes`, cheaply: its
    /// last count plus what this handle wrote since. When that passes
    /// `max_bytes`, on the first call and every 16th (other processes
    /// sharing the store write too) the store is counted again, so a
    /// `true` is always a fresh count past the bound.
    pub fn over(&self, max_bytes: u64) -> bool {
        let call = self.checks.fetch_add(1, Ordering::Relaxed);
        let known = *self
            .counted
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(known) = known {
            let estimate = known.saturating_add(self.added.load(Ordering::Relaxed));
            if estimate <= max_bytes && !call.is_multiple_of(RECOUNT_EVERY) {
                return false;
            }
        }
        self.recount() > max_bytes
    }
}

/// What a file or directory takes on disk: the larger of its length and
/// its allocated blocks (a directory's blocks, a small file's block
/// rounding; a sparse file's length, though the store writes none).
// The field types differ between architectures.
#[allow(clippy::unnecessary_cast)]
pub(crate) fn cost(st: &rustix::fs::Stat) -> u64 {
    (st.st_size as u64).max((st.st_blocks as u64).saturating_mul(512))
}

/// The store is three levels deep; anything planted deeper is counted to
/// this depth.
const MAX_DU_DEPTH: usize = 8;

fn du(dir: BorrowedFd<'_>, depth: usize) -> u64 {
    let Ok(mut list) = rustix::fs::Dir::read_from(dir) else {
        return 0;
    };
    let mut total = 0;
    while let Some(Ok(entry)) = list.read() {
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        total += cost(&st);
        if FileType::from_raw_mode(st.st_mode) == FileType::Directory && depth < MAX_DU_DEPTH {
            if let Ok(sub) = rustix::fs::openat(dir, name, dir_flags(), Mode::empty()) {
                total += du(sub.as_fd(), depth + 1);
            }
        }
    }
    total
}

pub(crate) fn errno(e: std::io::Error) -> Errno {
    Errno::from_io_error(&e).unwrap_or(Errno::IO)
}

pub(crate) fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The store's directory must be ours, a directory, and closed to others.
fn check_private(fd: &OwnedFd, path: &Path) -> Result<(), CheckpointError> {
    let st =
        rustix::fs::fstat(fd).map_err(|e| CheckpointError::io("cannot inspect", path, e.into()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return Err(CheckpointError::Unsafe(format!(
            "{} is not a directory",
            path.display()
        )));
    }
    if st.st_uid != rustix::process::geteuid().as_raw() {
        return Err(CheckpointError::Unsafe(format!(
            "{} belongs to another user",
            path.display()
        )));
    }
    if st.st_mode & 0o077 != 0 {
        return Err(CheckpointError::Unsafe(format!(
            "{} is open to other users (mode {:o}); make it 0700",
            path.display(),
            st.st_mode & 0o777
        )));
    }
    Ok(())
}

fn open_subdir(store: &OwnedFd, dir: &Path, name: &str) -> Result<OwnedFd, CheckpointError> {
    let path = dir.join(name);
    match rustix::fs::mkdirat(store, name, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(CheckpointError::io("cannot create", &path, e.into())),
    }
    let fd = rustix::fs::openat(store, name, dir_flags(), Mode::empty()).map_err(|e| {
        if e == Errno::LOOP || e == Errno::NOTDIR {
            CheckpointError::Unsafe(format!(
                "{} is not a directory (a link is not followed)",
                path.display()
            ))
        } else {
            CheckpointError::io("cannot open", &path, e.into())
        }
    })?;
    check_private(&fd, &path)?;
    Ok(fd)
}

/// The first `max` bytes of a regular file (None when absent, a link or
/// anything but a regular file; opened without blocking on a FIFO).
pub(crate) fn read_regular(dir: BorrowedFd<'_>, name: &str, max: u64) -> Option<Vec<u8>> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut out = Vec::new();
    File::from(fd).take(max).read_to_end(&mut out).ok()?;
    Some(out)
}

/// A session id as the server makes them (hex and dashes, at most 64), so
/// it can never name a path outside `sessions/`.
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

/// A checkpoint id: 1 to 64 of ASCII letters, digits, `-` and `_`.
pub fn valid_checkpoint_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn index_name(session_id: &str) -> Result<String, CheckpointError> {
    if !valid_session_id(session_id) {
        return Err(CheckpointError::InvalidId {
            what: "session id",
            id: session_id.to_string(),
        });
    }
    Ok(format!("{session_id}.json"))
}

fn validate(c: &Checkpoint) -> Result<(), CheckpointError> {
    if !valid_checkpoint_id(&c.checkpoint_id) {
        return Err(CheckpointError::InvalidId {
            what: "checkpoint id",
            id: c.checkpoint_id.clone(),
        });
    }
    c.before.hash()?;
    if let Some(after) = &c.after {
        after.hash()?;
    }
    Ok(())
}

impl SnapshotId {
    pub(crate) fn hash(&self) -> Result<Hash, CheckpointError> {
        Hash::from_hex(&self.0).ok_or_else(|| CheckpointError::InvalidId {
            what: "snapshot id",
            id: self.0.clone(),
        })
    }
}
