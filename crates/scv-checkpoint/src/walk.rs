//! Recording a workspace: a walk over directory fds (never a path, so a
//! directory swapped for a link mid-walk cannot lead it outside), the
//! ignore files applied as git would, unchanged files' hashes reused from
//! the previous snapshot, and the trees assembled bottom-up.

use crate::checkpoint::MAX_CONTENT_BYTES;
use crate::error::CheckpointError;
use crate::hash::{Hash, Hasher};
use crate::rules::{fingerprint, own_rules, read_exclude, Rules};
use crate::snapshot::{Snapshot, SnapshotStats};
use crate::store::{dir_flags, CheckpointStore, Kind};
use crate::tree::{Entry, Node, Stat, Tree, MAX_DEPTH};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// A file whose ctime is this close to the snapshot's start may change
/// again within the same timestamp tick, unseen by its stat: recorded as
/// racy, so the next snapshot reads it again (git's "racy clean" problem).
const RACY_NS: i64 = 2_000_000_000;
/// Files up to this are read whole into memory; bigger ones are streamed.
const SMALL_FILE: u64 = 1024 * 1024;

struct Job {
    id: usize,
    rel: String,
    fd: OwnedFd,
    prev: Option<(Hash, Arc<Tree>)>,
    rules: Arc<Rules>,
    depth: usize,
}

enum Pending {
    Done(Entry),
    Dir {
        name: String,
        mode: u32,
        child: usize,
    },
}

impl Pending {
    fn name(&self) -> &str {
        match self {
            Pending::Done(e) => &e.name,
            Pending::Dir { name, .. } => name,
        }
    }
}

struct DirResult {
    /// The directory's path, and the fingerprint of the rules in force.
    rel: String,
    rules: u64,
    entries: Vec<Pending>,
    prev: Option<(Hash, Arc<Tree>)>,
    skipped: Vec<(String, String)>,
    metadata_only: Vec<String>,
    /// Paths changed after [`Walk::late_since`] (see [`Snapshot::late`]).
    late: Vec<String>,
}

struct Queue {
    jobs: Vec<Job>,
    active: usize,
    failed: Option<CheckpointError>,
}

struct Walk<'a> {
    store: &'a CheckpointStore,
    start_ns: i64,
    /// The previous snapshot predates a sweep: confirm that each object
    /// it lends is still stored.
    check_reused: bool,
    /// The previous snapshot's rules fingerprint per directory.
    prev_rules: Option<Arc<HashMap<String, u64>>>,
    next_id: AtomicUsize,
    queue: Mutex<Queue>,
    wake: Condvar,
    files_read: AtomicU64,
    bytes_read: AtomicU64,
    /// Entries listed so far, against `limits.max_entries`.
    entries_seen: AtomicU64,
    limits: SnapshotLimits,
    /// When set, what changed after this instant (ns since the epoch) is
    /// listed in the snapshot's `late`.
    late_since: Option<i64>,
}

/// How much one snapshot may take on: a workspace past either bound (a
/// home directory, a disk image) is refused as too large rather than
/// copied into the store.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotLimits {
    /// Files, links and directories listed.
    pub max_entries: u64,
    /// Bytes of file content read (what is unchanged since the previous
    /// snapshot is not read).
    pub max_bytes_read: u64,
}

impl SnapshotLimits {
    pub const NONE: SnapshotLimits = SnapshotLimits {
        max_entries: u64::MAX,
        max_bytes_read: u64::MAX,
    };
}

pub(crate) fn snapshot(
    store: &CheckpointStore,
    workspace: &Path,
    previous: Option<&Snapshot>,
    limits: SnapshotLimits,
    late_since: Option<i64>,
) -> Result<Snapshot, CheckpointError> {
    let _lock = store.lock(false)?;
    let generation = store.generation();
    let root = rustix::fs::open(
        workspace,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| CheckpointError::Workspace {
        path: workspace.display().to_string(),
        source: e.into(),
    })?;
    let start_ns = now_ns();
    let walk = Walk {
        store,
        start_ns,
        check_reused: previous.is_some_and(|p| p.generation != generation),
        prev_rules: previous.map(|p| p.rules.clone()),
        next_id: AtomicUsize::new(1),
        queue: Mutex::new(Queue {
            jobs: Vec::new(),
            active: 0,
            failed: None,
        }),
        wake: Condvar::new(),
        files_read: AtomicU64::new(0),
        bytes_read: AtomicU64::new(0),
        entries_seen: AtomicU64::new(0),
        limits,
        late_since,
    };
    let exclude = read_exclude(root.as_fd());
    let rules = Arc::new(Rules {
        levels: Vec::new(),
        fingerprint: fingerprint(0, exclude.as_ref().map_or("", |(_, t)| t.as_str())),
        exclude: exclude.map(|(g, _)| Arc::new(g)),
    });
    walk.push(Job {
        id: 0,
        rel: String::new(),
        fd: root,
        prev: previous.map(|p| (p.hash, p.root.clone())),
        rules,
        depth: 0,
    });
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 4);
    let mut results: Vec<(usize, DirResult)> = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(|| walk.work())).collect();
        for h in handles {
            match h.join() {
                Ok(mut r) => results.append(&mut r),
                Err(_) => walk.fail(CheckpointError::Corrupt("a walker thread panicked".into())),
            }
        }
    });
    let failed = walk
        .queue
        .lock()
        .map(|mut q| q.failed.take())
        .unwrap_or_else(|mut p| p.get_mut().failed.take());
    if let Some(err) = failed {
        return Err(err);
    }
    let count = walk.next_id.load(Ordering::Relaxed);
    let mut slots: Vec<Option<DirResult>> = (0..count).map(|_| None).collect();
    for (id, r) in results {
        slots[id] = Some(r);
    }
    // Bottom-up: a child's id is always above its parent's.
    let mut built: Vec<Option<(Hash, Arc<Tree>)>> = (0..count).map(|_| None).collect();
    let mut skipped = Vec::new();
    let mut metadata_only = Vec::new();
    let mut late = Vec::new();
    let mut trees_written = 0u64;
    let mut rules_seen = HashMap::with_capacity(count);
    for id in (0..count).rev() {
        let Some(r) = slots[id].take() else {
            return Err(CheckpointError::Corrupt(format!(
                "the walk lost directory #{id}"
            )));
        };
        skipped.extend(r.skipped);
        metadata_only.extend(r.metadata_only);
        late.extend(r.late);
        let mut entries = Vec::with_capacity(r.entries.len());
        rules_seen.insert(r.rel, r.rules);
        for p in r.entries {
            entries.push(match p {
                Pending::Done(e) => e,
                Pending::Dir { name, mode, child } => {
                    let Some((hash, tree)) = built[child].take() else {
                        return Err(CheckpointError::Corrupt(format!(
                            "the walk lost directory {name}"
                        )));
                    };
                    Entry {
                        name,
                        node: Node::Dir { hash, mode, tree },
                        stat: Stat::default(),
                        racy: false,
                    }
                }
            });
        }
        let reused = match r.prev {
            Some((hash, prev)) if prev.entries == entries => {
                if walk.check_reused && !store.has(Kind::Tree, &hash, None)? {
                    None
                } else {
                    Some((hash, prev))
                }
            }
            _ => None,
        };
        built[id] = Some(match reused {
            Some(hit) => hit,
            None => {
                let tree = Tree { entries };
                let hash = store.put_tree(&tree)?;
                trees_written += 1;
                (hash, Arc::new(tree))
            }
        });
    }
    let Some((hash, root)) = built[0].take() else {
        return Err(CheckpointError::Corrupt("the walk lost the root".into()));
    };
    skipped.sort();
    metadata_only.sort();
    late.sort();
    let mut snapshot = Snapshot::new(
        hash,
        root,
        skipped,
        metadata_only,
        generation,
        SnapshotStats {
            files_read: walk.files_read.load(Ordering::Relaxed),
            bytes_read: walk.bytes_read.load(Ordering::Relaxed),
            trees_written,
            directories: count as u64,
        },
        Arc::new(rules_seen),
    );
    snapshot.late = late;
    Ok(snapshot)
}

impl Walk<'_> {
    fn push(&self, job: Job) {
        if let Ok(mut q) = self.queue.lock() {
            q.jobs.push(job);
        }
        self.wake.notify_one();
    }

    fn fail(&self, err: CheckpointError) {
        if let Ok(mut q) = self.queue.lock() {
            if q.failed.is_none() {
                q.failed = Some(err);
            }
            q.jobs.clear();
        }
        self.wake.notify_all();
    }

    /// Takes directories off the queue until none is left and none is
    /// being read (a directory being read may add more).
    fn work(&self) -> Vec<(usize, DirResult)> {
        let mut done = Vec::new();
        loop {
            let job = {
                let Ok(mut q) = self.queue.lock() else {
                    return done;
                };
                loop {
                    if q.failed.is_some() {
                        return done;
                    }
                    if let Some(job) = q.jobs.pop() {
                        q.active += 1;
                        break job;
                    }
                    if q.active == 0 {
                        self.wake.notify_all();
                        return done;
                    }
                    q = match self.wake.wait(q) {
                        Ok(q) => q,
                        Err(_) => return done,
                    };
                }
            };
            let id = job.id;
            match self.read_dir(job) {
                Ok((result, children)) => {
                    done.push((id, result));
                    if let Ok(mut q) = self.queue.lock() {
                        q.jobs.extend(children);
                        q.active -= 1;
                    }
                    self.wake.notify_all();
                }
                Err(err) => {
                    if let Ok(mut q) = self.queue.lock() {
                        q.active -= 1;
                    }
                    self.fail(err);
                    return done;
                }
            }
        }
    }

    /// One directory: its entries recorded (files read unless their stat
    /// lets the previous hash stand), its subdirectories queued.
    fn read_dir(&self, job: Job) -> Result<(DirResult, Vec<Job>), CheckpointError> {
        let rel_dir = job.rel;
        let path_of = |name: &str| {
            if rel_dir.is_empty() {
                name.to_string()
            } else {
                format!("{rel_dir}/{name}")
            }
        };
        let mut skipped = Vec::new();
        // The listing first (the fd then serves every stat), and from it
        // whether there are ignore files to read at all.
        let mut list = rustix::fs::Dir::new(job.fd).map_err(|e| CheckpointError::Io {
            what: "cannot list",
            path: rel_dir.clone(),
            source: e.into(),
        })?;
        let mut names: Vec<(String, FileType)> = Vec::new();
        let (mut has_ignore, mut has_gitignore) = (false, false);
        while let Some(item) = list.read() {
            let item = match item {
                Ok(item) => item,
                Err(e) => {
                    skipped.push((path_of("*"), format!("cannot list the directory: {e}")));
                    break;
                }
            };
            let bytes = item.file_name().to_bytes();
            if bytes == b"." || bytes == b".." || bytes == b".git" {
                continue;
            }
            match std::str::from_utf8(bytes) {
                Ok(name) => {
                    has_ignore |= name == ".ignore";
                    has_gitignore |= name == ".gitignore";
                    names.push((name.to_string(), item.file_type()));
                }
                Err(_) => skipped.push((
                    path_of(&String::from_utf8_lossy(bytes)),
                    "its name is not UTF-8".into(),
                )),
            }
        }
        let fd = list.fd().map_err(|e| CheckpointError::Io {
            what: "cannot list",
            path: rel_dir.clone(),
            source: e.into(),
        })?;
        let rules = match own_rules(fd, &rel_dir, has_ignore, has_gitignore) {
            Some((level, text)) => {
                let mut levels = job.rules.levels.clone();
                levels.push(Arc::new(level));
                Arc::new(Rules {
                    levels,
                    exclude: job.rules.exclude.clone(),
                    fingerprint: fingerprint(job.rules.fingerprint, &text),
                })
            }
            None => job.rules.clone(),
        };
        // Under the rules the previous snapshot saw here, what it recorded
        // was not ignored, and still is not.
        let known = self
            .prev_rules
            .as_ref()
            .and_then(|m| m.get(&rel_dir))
            .is_some_and(|&f| f == rules.fingerprint);
        let prev_tree = job.prev.as_ref().map(|(_, t)| t.clone());
        let mut out = DirResult {
            rel: String::new(),
            rules: rules.fingerprint,
            entries: Vec::with_capacity(names.len()),
            prev: job.prev,
            skipped,
            metadata_only: Vec::new(),
            late: Vec::new(),
        };
        let mut children = Vec::new();
        let seen = self
            .entries_seen
            .fetch_add(names.len() as u64, Ordering::Relaxed)
            + names.len() as u64;
        if seen > self.limits.max_entries {
            return Err(CheckpointError::TooLarge(format!(
                "more than {} files and directories",
                self.limits.max_entries
            )));
        }
        for (name, listed) in names {
            let mut kind = listed;
            let mut st = None;
            if kind == FileType::Unknown {
                match rustix::fs::statat(fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(s) => {
                        kind = FileType::from_raw_mode(s.st_mode);
                        st = Some(s);
                    }
                    Err(Errno::NOENT) => continue,
                    Err(e) => {
                        out.skipped
                            .push((path_of(&name), format!("cannot inspect: {e}")));
                        continue;
                    }
                }
            }
            let is_dir = kind == FileType::Directory;
            let prev = prev_tree.as_ref().and_then(|t| t.get(&name));
            let seen = known && prev.is_some_and(|p| p.is_dir() == is_dir && !p.is_skipped());
            if !seen && !rules.is_empty() && rules.ignored(&path_of(&name), is_dir) {
                continue;
            }
            if is_dir {
                let rel = path_of(&name);
                if job.depth + 1 > MAX_DEPTH {
                    out.entries.push(skip(&name, "nested too deep"));
                    out.skipped.push((rel, "nested too deep".into()));
                    continue;
                }
                match rustix::fs::openat(fd, name.as_str(), dir_flags(), Mode::empty()) {
                    Ok(child_fd) => {
                        let st = rustix::fs::fstat(&child_fd);
                        let store_here = st.as_ref().is_ok_and(|s| {
                            let s = Stat::of(s);
                            (s.dev, s.ino) == self.store.ident
                        });
                        if store_here {
                            let why = "the checkpoint store itself".to_string();
                            out.entries.push(skip(&name, &why));
                            out.skipped.push((rel, why));
                            continue;
                        }
                        let mode = st.map(|s| s.st_mode & 0o777).unwrap_or(0o755);
                        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                        let prev = prev.and_then(|e| match &e.node {
                            Node::Dir { hash, tree, .. } => Some((*hash, tree.clone())),
                            _ => None,
                        });
                        out.entries.push(Pending::Dir {
                            name,
                            mode,
                            child: id,
                        });
                        children.push(Job {
                            id,
                            rel,
                            fd: child_fd,
                            prev,
                            rules: rules.clone(),
                            depth: job.depth + 1,
                        });
                    }
                    Err(Errno::NOENT) => {}
                    Err(e) => {
                        let why = format!("cannot read the directory: {e}");
                        out.entries.push(skip(&name, &why));
                        out.skipped.push((rel, why));
                    }
                }
                continue;
            }
            let st = match st {
                Some(st) => st,
                None => match rustix::fs::statat(fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(s) => s,
                    Err(Errno::NOENT) => continue,
                    Err(e) => {
                        let why = format!("cannot inspect: {e}");
                        out.entries.push(skip(&name, &why));
                        out.skipped.push((path_of(&name), why));
                        continue;
                    }
                },
            };
            // The stat may show another kind than the listing did (replaced
            // in between): the stat is what is recorded.
            let why = match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => match self.file(fd, &name, &st, prev)? {
                    Ok(entry) => {
                        if matches!(entry.node, Node::File { hash: None, .. }) {
                            out.metadata_only.push(path_of(&name));
                        }
                        out.entries.push(Pending::Done(entry));
                        continue;
                    }
                    Err(why) => why,
                },
                FileType::Symlink => match self.link(fd, &name, &st, prev) {
                    Ok(entry) => {
                        out.entries.push(Pending::Done(entry));
                        continue;
                    }
                    Err(why) => why,
                },
                FileType::Directory => "became a directory during the snapshot".to_string(),
                FileType::Fifo => "a FIFO".to_string(),
                FileType::Socket => "a socket".to_string(),
                FileType::CharacterDevice => "a character device".to_string(),
                FileType::BlockDevice => "a block device".to_string(),
                _ => "not a file, link or directory".to_string(),
            };
            out.entries.push(skip(&name, &why));
            out.skipped.push((path_of(&name), why));
        }
        out.entries.sort_by(|a, b| a.name().cmp(b.name()));
        if let Some(since) = self.late_since {
            self.late(fd, since, prev_tree.as_deref(), &mut out, &path_of);
        }
        out.rel = rel_dir;
        Ok((out, children))
    }

    /// What changed here after `since`: files and links whose ctime is
    /// later, and, when the directory's own mtime is later (an entry came
    /// or went), the names `prev` had that are gone now (whoever removed
    /// them, the turn or someone after it: counted as late, the safe side).
    fn late(
        &self,
        dir: BorrowedFd<'_>,
        since: i64,
        prev: Option<&Tree>,
        out: &mut DirResult,
        path_of: &dyn Fn(&str) -> String,
    ) {
        for p in &out.entries {
            if let Pending::Done(e) = p {
                if matches!(e.node, Node::File { .. } | Node::Link { .. })
                    && e.stat.ctime_ns > since
                {
                    out.late.push(path_of(&e.name));
                }
            }
        }
        let dir_changed = rustix::fs::fstat(dir).map_or(true, |st| Stat::of(&st).mtime_ns > since);
        if let (true, Some(prev)) = (dir_changed, prev) {
            for e in &prev.entries {
                let here = out
                    .entries
                    .binary_search_by(|p| p.name().cmp(e.name.as_str()))
                    .is_ok();
                if !here && !e.is_skipped() {
                    out.late.push(path_of(&e.name));
                }
            }
        }
    }

    fn racy(&self, stat: &Stat) -> bool {
        stat.ctime_ns >= self.start_ns - RACY_NS || stat.mtime_ns >= self.start_ns - RACY_NS
    }

    /// A regular file: the previous hash when its stat is unchanged, else
    /// its content read (opened without following a link and without
    /// blocking, and only read if it is still a regular file). The inner
    /// error is why it is skipped; the outer one is the store failing.
    fn file(
        &self,
        dir: BorrowedFd<'_>,
        name: &str,
        st: &rustix::fs::Stat,
        prev: Option<&Entry>,
    ) -> Result<Result<Entry, String>, CheckpointError> {
        let stat = Stat::of(st);
        let mode = st.st_mode & 0o777;
        if let Some(prev) = prev {
            if let Node::File { hash, mode: m, .. } = &prev.node {
                if !prev.racy && prev.stat == stat && *m == mode {
                    let still_there = match hash {
                        Some(h) if self.check_reused => {
                            // A stored object's length is not the file's
                            // (compressed, or the sparse form).
                            self.store.has(Kind::Blob, h, None)?
                        }
                        _ => true,
                    };
                    if still_there {
                        return Ok(Ok(prev.clone()));
                    }
                }
            }
        }
        let metadata_only = |stat: Stat| Entry {
            name: name.to_string(),
            node: Node::File {
                hash: None,
                mode,
                sparse: false,
            },
            stat,
            racy: self.racy(&stat),
        };
        // What is to be stored: its length, or for a file with holes its
        // allocated blocks at most.
        if stat.size.min(allocated(st)) > MAX_CONTENT_BYTES {
            return Ok(Ok(metadata_only(stat)));
        }
        let fd = match rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(e) => return Ok(Err(format!("cannot read: {e}"))),
        };
        let st = match rustix::fs::fstat(&fd) {
            Ok(st) => st,
            Err(e) => return Ok(Err(format!("cannot inspect: {e}"))),
        };
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Ok(Err("replaced during the snapshot".into()));
        }
        let stat = Stat::of(&st);
        let mode = st.st_mode & 0o777;
        let mut file = File::from(fd);
        // Fewer blocks than its length: maybe holes, then only its data is
        // read and stored.
        let ranges = if allocated(&st) < stat.size {
            match crate::sparse::data_ranges(&file, stat.size) {
                Ok(ranges) => ranges,
                Err(e) => return Ok(Err(format!("cannot read: {e}"))),
            }
        } else {
            None
        };
        let to_read = match &ranges {
            Some(ranges) => ranges.iter().map(|(start, end)| end - start).sum(),
            None => stat.size,
        };
        if to_read > MAX_CONTENT_BYTES {
            return Ok(Ok(metadata_only(stat)));
        }
        let read = self.bytes_read.load(Ordering::Relaxed);
        if read.saturating_add(to_read) > self.limits.max_bytes_read {
            return Err(CheckpointError::TooLarge(format!(
                "more than {} MiB of files to read",
                self.limits.max_bytes_read >> 20
            )));
        }
        // An ending snapshot (an `after`, which a restore never writes)
        // only hashes what it reads: the next snapshot stores it.
        let unstored = ranges.is_none() && self.late_since.is_some();
        let stored = match &ranges {
            Some(ranges) => self.store_sparse(&file, stat.size, ranges)?,
            None if unstored => hash_content(&mut file, &self.bytes_read),
            None => self.store_content(&mut file, stat.size)?,
        };
        let hash = match stored {
            Ok(hash) => hash,
            Err(why) => return Ok(Err(why)),
        };
        // Changed while being read: what was read may be torn, so the next
        // snapshot reads it again.
        let after = rustix::fs::fstat(&file).map(|s| Stat::of(&s));
        let racy = unstored || self.racy(&stat) || !after.is_ok_and(|a| a == stat);
        self.files_read.fetch_add(1, Ordering::Relaxed);
        Ok(Ok(Entry {
            name: name.to_string(),
            node: Node::File {
                hash: Some(hash),
                mode,
                sparse: ranges.is_some(),
            },
            stat,
            racy,
        }))
    }

    /// Stores a file with holes in the sparse form (`sparse.rs`): only
    /// its data ranges are read.
    fn store_sparse(
        &self,
        file: &File,
        size: u64,
        ranges: &[(u64, u64)],
    ) -> Result<Result<Hash, String>, CheckpointError> {
        let (mut temp, temp_name) = self.store.temp_file()?;
        let (hash, written, read) = match crate::sparse::encode(file, size, ranges, &mut temp) {
            Ok(done) => done,
            Err(e) => {
                self.store.discard(&temp_name);
                // The store's side (its disk full) is not the file's.
                return match Errno::from_io_error(&e) {
                    Some(Errno::NOSPC) | Some(Errno::DQUOT) => Err(CheckpointError::io(
                        "cannot write",
                        &self.store.dir.join("tmp").join(&temp_name),
                        e,
                    )),
                    _ => Ok(Err(format!("cannot read: {e}"))),
                };
            }
        };
        drop(temp);
        self.bytes_read.fetch_add(read, Ordering::Relaxed);
        if self.store.has(Kind::Blob, &hash, Some(written))? {
            self.store.discard(&temp_name);
        } else {
            self.store.adopt(Kind::Blob, &hash, &temp_name)?;
        }
        Ok(Ok(hash))
    }

    /// Reads a file into the store: whole when small, else streamed to a
    /// temp file while hashing. At most [`MAX_CONTENT_BYTES`] are taken.
    fn store_content(
        &self,
        file: &mut File,
        size: u64,
    ) -> Result<Result<Hash, String>, CheckpointError> {
        let mut limited = file.take(MAX_CONTENT_BYTES);
        if size <= SMALL_FILE {
            let mut bytes = Vec::with_capacity(size as usize);
            if let Err(e) = limited.read_to_end(&mut bytes) {
                return Ok(Err(format!("cannot read: {e}")));
            }
            self.bytes_read
                .fetch_add(bytes.len() as u64, Ordering::Relaxed);
            let hash = Hash::of(&bytes);
            self.store.put_blob(&hash, &bytes)?;
            return Ok(Ok(hash));
        }
        let (temp, temp_name) = self.store.temp_file()?;
        let temp_path = || self.store.dir.join("tmp").join(&temp_name);
        let mut packer = match crate::blob::packer(temp) {
            Ok(p) => p,
            Err(e) => {
                self.store.discard(&temp_name);
                return Err(CheckpointError::io("cannot write", &temp_path(), e));
            }
        };
        let mut hasher = Hasher::new();
        let mut buf = vec![0u8; 256 * 1024];
        let mut total = 0u64;
        loop {
            let n = match limited.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.store.discard(&temp_name);
                    return Ok(Err(format!("cannot read: {e}")));
                }
            };
            hasher.update(&buf[..n]);
            total += n as u64;
            if let Err(e) = packer.write_all(&buf[..n]) {
                self.store.discard(&temp_name);
                return Err(CheckpointError::io("cannot write", &temp_path(), e));
            }
        }
        if let Err(e) = crate::blob::finish(packer) {
            self.store.discard(&temp_name);
            return Err(CheckpointError::io("cannot write", &temp_path(), e));
        }
        self.bytes_read.fetch_add(total, Ordering::Relaxed);
        let hash = hasher.finish();
        if self.store.has(Kind::Blob, &hash, None)? {
            self.store.discard(&temp_name);
        } else {
            self.store.adopt(Kind::Blob, &hash, &temp_name)?;
        }
        Ok(Ok(hash))
    }

    fn link(
        &self,
        dir: BorrowedFd<'_>,
        name: &str,
        st: &rustix::fs::Stat,
        prev: Option<&Entry>,
    ) -> Result<Entry, String> {
        let stat = Stat::of(st);
        if let Some(prev) = prev {
            if matches!(prev.node, Node::Link { .. }) && !prev.racy && prev.stat == stat {
                return Ok(prev.clone());
            }
        }
        let target = rustix::fs::readlinkat(dir, name, Vec::new())
            .map_err(|e| format!("cannot read the link: {e}"))?;
        let target = String::from_utf8(target.into_bytes())
            .map_err(|_| "its target is not UTF-8".to_string())?;
        if target.is_empty() {
            return Err("an empty link".into());
        }
        Ok(Entry {
            name: name.to_string(),
            node: Node::Link { target },
            stat,
            racy: self.racy(&stat),
        })
    }
}

/// A file's hash, its content not kept (at most [`MAX_CONTENT_BYTES`]).
fn hash_content(file: &mut File, bytes_read: &AtomicU64) -> Result<Hash, String> {
    let mut limited = file.take(MAX_CONTENT_BYTES);
    let mut hasher = Hasher::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match limited.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read: {e}")),
        };
        hasher.update(&buf[..n]);
        bytes_read.fetch_add(n as u64, Ordering::Relaxed);
    }
    Ok(hasher.finish())
}

fn skip(name: &str, why: &str) -> Pending {
    Pending::Done(Entry {
        name: name.to_string(),
        node: Node::Skipped {
            reason: why.to_string(),
        },
        stat: Stat::default(),
        racy: false,
    })
}

/// What a file's blocks take (its data, for a file with holes).
// The field types differ between architectures.
#[allow(clippy::unnecessary_cast)]
fn allocated(st: &rustix::fs::Stat) -> u64 {
    (st.st_blocks as u64).saturating_mul(512)
}

pub(crate) fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
