//! The store's bound: sweep what no indexed snapshot reaches, count the
//! store on disk, and while it is past the bound evict the oldest
//! checkpoints and sweep again.
//!
//! What a checkpoint needs: its `before` snapshot whole (a restore writes
//! it: trees and file contents), its `after` snapshot's trees only (a
//! restore compares it by hashes with the next checkpoint or the
//! workspace, and never reads its contents). So contents only an `after`
//! names — what the last turn wrote, until the next turn's `before`
//! records it again — are swept like any unreferenced object, and the
//! newest checkpoint of a session costs one copy of what its turn
//! changed, not two.
//!
//! Reachability is counted, not recomputed: each tree is read once (its
//! children listed, not loaded recursively), references counted twice —
//! per tree from every snapshot's root and every kept parent, and per
//! tree and blob from what needs contents (`before` roots and their
//! trees) — and evicting a checkpoint drops its roots' counts, cascading
//! down. The bytes it frees are estimated before anything is deleted
//! (what objects take on disk), and the store is counted again after each
//! sweep, so what the estimate misses (fan-out directories, index files)
//! is caught by the next round rather than left past the bound.

use crate::checkpoint::Checkpoint;
use crate::error::CheckpointError;
use crate::hash::Hash;
use crate::store::{cost, dir_flags, CheckpointStore, Kind};
use crate::tree::{Node, Tree};
use rustix::fs::{AtFlags, FileType, Mode};
use std::collections::{HashMap, HashSet};
use std::os::fd::AsFd;
use std::sync::Arc;

/// What [`CheckpointStore::enforce`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Enforced {
    /// The checkpoints evicted, oldest first: (session id, checkpoint id).
    pub evicted: Vec<(String, String)>,
    /// The store's bytes after (a count on disk, as
    /// [`CheckpointStore::bytes`]).
    pub bytes: u64,
    /// Still past the bound with nothing left to evict: the checkpoints
    /// kept (the newest of each open session) alone exceed it, or nothing
    /// could be swept.
    pub over: bool,
    /// Objects (blobs and trees) deleted by the sweep, and their bytes.
    pub swept: u64,
    pub swept_bytes: u64,
    /// What could not be read: a damaged index or tree. While an index
    /// cannot be read nothing is swept (its snapshots' objects are unknown).
    pub errors: Vec<String>,
}

type Key = (Kind, Hash);

#[derive(Default)]
struct Graph {
    /// Per tree: references from snapshots' roots and from kept trees.
    trees: HashMap<Hash, u32>,
    /// Per tree: references from `before` roots and from trees whose
    /// contents are needed.
    full: HashMap<Hash, u32>,
    /// Per blob: references from trees whose contents are needed.
    blobs: HashMap<Hash, u32>,
    /// Each tree read: its child trees and blobs.
    children: HashMap<Hash, Vec<Key>>,
    sizes: HashMap<Key, u64>,
}

impl Graph {
    fn size(&mut self, store: &CheckpointStore, key: Key) -> u64 {
        *self
            .sizes
            .entry(key)
            .or_insert_with(|| object_size(store, key).unwrap_or(0))
    }

    fn reachable(&self, (kind, hash): &Key) -> bool {
        let counts = match kind {
            Kind::Tree => &self.trees,
            Kind::Blob => &self.blobs,
        };
        counts.get(hash).is_some_and(|&n| n > 0)
    }

    /// Counts the contents under every tree `roots` reach (each tree's
    /// children once, however many reach it).
    fn need_contents(&mut self, roots: Vec<Hash>) {
        let mut seen: HashSet<Hash> = HashSet::new();
        let mut stack = roots;
        while let Some(tree) = stack.pop() {
            if !seen.insert(tree) {
                continue;
            }
            for &(kind, hash) in self.children.get(&tree).into_iter().flatten() {
                match kind {
                    Kind::Tree => {
                        *self.full.entry(hash).or_insert(0) += 1;
                        stack.push(hash);
                    }
                    Kind::Blob => *self.blobs.entry(hash).or_insert(0) += 1,
                }
            }
        }
    }

    /// Drops one reference to the tree `root` from a snapshot; with
    /// `contents`, one to its contents too (a `before`). The bytes that
    /// become unreachable.
    fn release(&mut self, store: &CheckpointStore, root: Hash, contents: bool) -> u64 {
        let mut freed = 0;
        let mut stack = vec![root];
        while let Some(tree) = stack.pop() {
            if !drop_one(&mut self.trees, &tree) {
                continue;
            }
            freed += self.size(store, (Kind::Tree, tree));
            for &(kind, hash) in self.children.get(&tree).into_iter().flatten() {
                if kind == Kind::Tree {
                    stack.push(hash);
                }
            }
        }
        if !contents {
            return freed;
        }
        let mut stack = vec![root];
        while let Some(tree) = stack.pop() {
            if !drop_one(&mut self.full, &tree) {
                continue;
            }
            let kids = self.children.get(&tree).cloned().unwrap_or_default();
            for (kind, hash) in kids {
                match kind {
                    Kind::Tree => stack.push(hash),
                    Kind::Blob => {
                        if drop_one(&mut self.blobs, &hash) {
                            freed += self.size(store, (Kind::Blob, hash));
                        }
                    }
                }
            }
        }
        freed
    }
}

/// Drops one count of `key`: whether that was its last.
fn drop_one(counts: &mut HashMap<Hash, u32>, key: &Hash) -> bool {
    match counts.get_mut(key) {
        Some(n) if *n > 0 => {
            *n -= 1;
            *n == 0
        }
        _ => false,
    }
}

fn object_size(store: &CheckpointStore, (kind, hash): Key) -> Option<u64> {
    let hex = hash.hex();
    let fan = rustix::fs::openat(store.base(kind), &hex[..2], dir_flags(), Mode::empty()).ok()?;
    let st = rustix::fs::statat(&fan, &hex[2..], AtFlags::SYMLINK_NOFOLLOW).ok()?;
    (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile).then(|| cost(&st))
}

/// `keep`: never evicted. `spare`: evicted only once every checkpoint
/// in neither set is gone and the store is still over (oldest first, as
/// the rest).
pub(crate) fn enforce(
    store: &CheckpointStore,
    max_bytes: u64,
    keep: &HashSet<String>,
    spare: &HashSet<String>,
) -> Enforced {
    let mut report = Enforced::default();
    let _lock = match store.lock(true) {
        Ok(lock) => lock,
        Err(e) => {
            report.errors.push(e.to_string());
            report.bytes = store.bytes();
            return report;
        }
    };
    let mut sweepable = true;
    let (ids, _strays) = match store.session_ids() {
        Ok(found) => found,
        Err(e) => {
            report.errors.push(e.to_string());
            report.bytes = store.bytes();
            return report;
        }
    };
    let mut sessions: Vec<(String, Vec<Checkpoint>)> = Vec::new();
    for id in ids {
        match store.index(&id) {
            Ok(list) => sessions.push((id, list)),
            Err(e) => {
                sweepable = false;
                report.errors.push(e.to_string());
            }
        }
    }
    let mut graph = Graph::default();
    let root = |id: &crate::snapshot::SnapshotId| id.hash().ok();
    let mut pending: Vec<Hash> = Vec::new();
    let mut befores: Vec<Hash> = Vec::new();
    for (_, list) in &sessions {
        for c in list {
            let before = root(&c.before);
            befores.extend(before);
            for hash in before.into_iter().chain(c.after.as_ref().and_then(root)) {
                *graph.trees.entry(hash).or_insert(0) += 1;
                pending.push(hash);
            }
        }
    }
    // Each tree read once; its child trees counted once per tree.
    let mut seen: HashSet<Hash> = HashSet::new();
    let empty = Arc::new(Tree::default());
    while let Some(hash) = pending.pop() {
        if !seen.insert(hash) {
            continue;
        }
        match children_of(store, &hash, &empty) {
            Ok(kids) => {
                for &(kind, child) in &kids {
                    if kind == Kind::Tree {
                        *graph.trees.entry(child).or_insert(0) += 1;
                        pending.push(child);
                    }
                }
                graph.children.insert(hash, kids);
            }
            Err(e) => {
                // A damaged or missing tree only loses what is under it
                // (its snapshot is unusable anyway); a failure to read
                // might pass, so nothing is swept then.
                if !e.is_damage() {
                    sweepable = false;
                }
                report.errors.push(e.to_string());
            }
        }
    }
    for &hash in &befores {
        *graph.full.entry(hash).or_insert(0) += 1;
    }
    graph.need_contents(befores);
    let mut order = Order::new(&sessions);
    let mut evicted: HashSet<(usize, usize)> = HashSet::new();
    loop {
        if sweepable {
            let swept = report.swept;
            let reachable = |key: &Key| graph.reachable(key);
            for kind in [Kind::Blob, Kind::Tree] {
                sweep(store, kind, &reachable, &mut report);
            }
            sweep_tmp(store);
            // Before the count: the file is part of the store.
            if report.swept > swept {
                if let Err(e) = store.bump_generation() {
                    report.errors.push(e.to_string());
                }
            }
        }
        report.bytes = store.recount();
        if report.bytes <= max_bytes {
            break;
        }
        if !sweepable {
            // Evicting would free nothing on disk: the checkpoints stay.
            report.over = true;
            break;
        }
        // Enough checkpoints to cover the excess by what their objects
        // take; the count after the sweep says whether it did.
        let excess = report.bytes - max_bytes;
        let mut freed = 0u64;
        let mut touched: Vec<usize> = Vec::new();
        while freed < excess {
            let Some((s, i)) = order.next(&sessions, keep, spare, &evicted) else {
                break;
            };
            let c = &sessions[s].1[i];
            if let Some(hash) = root(&c.before) {
                freed = freed.saturating_add(graph.release(store, hash, true));
            }
            if let Some(hash) = c.after.as_ref().and_then(root) {
                freed = freed.saturating_add(graph.release(store, hash, false));
            }
            evicted.insert((s, i));
            report
                .evicted
                .push((sessions[s].0.clone(), c.checkpoint_id.clone()));
            if !touched.contains(&s) {
                touched.push(s);
            }
        }
        if touched.is_empty() {
            report.over = true;
            break;
        }
        for s in touched {
            let (id, list) = &sessions[s];
            let left: Vec<Checkpoint> = list
                .iter()
                .enumerate()
                .filter(|(i, _)| !evicted.contains(&(s, *i)))
                .map(|(_, c)| c.clone())
                .collect();
            let saved = if left.is_empty() {
                store.delete_session(id)
            } else {
                store.save_index(id, &left)
            };
            if let Err(e) = saved {
                // Not saved: its objects must stay.
                sweepable = false;
                report.errors.push(e.to_string());
            }
        }
    }
    report
}

/// Which checkpoint goes next: the oldest across sessions (ties by
/// session, then position), first among those in neither `keep` nor
/// `spare`; once those are gone, the spared ones, oldest first.
struct Order {
    order: Vec<(u64, usize, usize)>,
    next: usize,
    sparing: bool,
}

impl Order {
    fn new(sessions: &[(String, Vec<Checkpoint>)]) -> Order {
        let mut order: Vec<(u64, usize, usize)> = Vec::new();
        for (s, (_, list)) in sessions.iter().enumerate() {
            for (i, c) in list.iter().enumerate() {
                order.push((c.created_unix_seconds, s, i));
            }
        }
        order.sort();
        Order {
            order,
            next: 0,
            sparing: true,
        }
    }

    /// The next to evict (session, position), or `None`: only `keep` is
    /// left.
    fn next(
        &mut self,
        sessions: &[(String, Vec<Checkpoint>)],
        keep: &HashSet<String>,
        spare: &HashSet<String>,
        evicted: &HashSet<(usize, usize)>,
    ) -> Option<(usize, usize)> {
        loop {
            if self.next == self.order.len() {
                if !self.sparing || spare.is_empty() {
                    return None;
                }
                self.sparing = false;
                self.next = 0;
            }
            let (_, s, i) = self.order[self.next];
            self.next += 1;
            let id = &sessions[s].1[i].checkpoint_id;
            let spared = self.sparing && spare.contains(id);
            if !keep.contains(id) && !spared && !evicted.contains(&(s, i)) {
                return Some((s, i));
            }
        }
    }
}

/// A tree's children (trees and blobs), read without loading them.
fn children_of(
    store: &CheckpointStore,
    hash: &Hash,
    empty: &Arc<Tree>,
) -> Result<Vec<Key>, CheckpointError> {
    let mut kids = Vec::new();
    // Decoding asks for each child tree: noted, and a placeholder given.
    let mut noted: Vec<Hash> = Vec::new();
    let tree = store.load_tree_shallow(hash, &mut |h| {
        noted.push(h);
        Ok(empty.clone())
    })?;
    for e in &tree.entries {
        if let Node::File { hash: Some(h), .. } = &e.node {
            kids.push((Kind::Blob, *h));
        }
    }
    kids.extend(noted.into_iter().map(|h| (Kind::Tree, h)));
    Ok(kids)
}

fn sweep(
    store: &CheckpointStore,
    kind: Kind,
    reachable: &dyn Fn(&Key) -> bool,
    report: &mut Enforced,
) {
    let base = store.base(kind);
    let Ok(mut fans) = rustix::fs::Dir::read_from(base) else {
        report.errors.push(format!("cannot list {}", kind.dir()));
        return;
    };
    while let Some(Ok(fan)) = fans.read() {
        let fan_name = fan.file_name().to_string_lossy().into_owned();
        if fan_name == "." || fan_name == ".." {
            continue;
        }
        let Ok(fan_fd) = rustix::fs::openat(base, fan_name.as_str(), dir_flags(), Mode::empty())
        else {
            // A planted link or file in place of a fan-out directory: the
            // name itself goes, never what it points to.
            if rustix::fs::unlinkat(base, fan_name.as_str(), AtFlags::empty()).is_ok() {
                report.swept += 1;
            }
            continue;
        };
        let Ok(mut list) = rustix::fs::Dir::read_from(&fan_fd) else {
            continue;
        };
        while let Some(Ok(entry)) = list.read() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "." || name == ".." {
                continue;
            }
            let key = Hash::from_hex(&format!("{fan_name}{name}")).map(|h| (kind, h));
            let Ok(st) = rustix::fs::statat(&fan_fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            else {
                continue;
            };
            let regular = FileType::from_raw_mode(st.st_mode) == FileType::RegularFile;
            if regular && key.as_ref().is_some_and(reachable) {
                continue;
            }
            let flags = if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                report.errors.push(format!(
                    "{}/{fan_name}/{name} is a directory; left",
                    kind.dir()
                ));
                continue;
            } else {
                AtFlags::empty()
            };
            if rustix::fs::unlinkat(&fan_fd, name.as_str(), flags).is_ok() {
                report.swept += 1;
                if regular {
                    report.swept_bytes += cost(&st);
                }
            }
        }
        // An emptied fan-out directory goes too (fails, harmlessly, if not).
        let _ = rustix::fs::unlinkat(base, fan_name.as_str(), AtFlags::REMOVEDIR);
    }
}

/// Temp files left by a snapshot that died (none is running: the sweep
/// holds the store's lock exclusively).
fn sweep_tmp(store: &CheckpointStore) {
    let Ok(mut list) = rustix::fs::Dir::read_from(&store.tmp) else {
        return;
    };
    while let Some(Ok(entry)) = list.read() {
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        let _ = rustix::fs::unlinkat(store.tmp.as_fd(), name, AtFlags::empty());
    }
}
