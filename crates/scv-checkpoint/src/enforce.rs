//! The store's bound: evict the oldest checkpoints, then sweep what no
//! remaining snapshot reaches.
//!
//! Reachability is counted, not recomputed: each tree is read once (its
//! children listed, not loaded recursively), each object's references
//! counted (roots from every index, children from every tree), and
//! evicting a checkpoint drops its roots' counts, cascading down; the
//! bytes freed are known before anything is deleted.

use crate::checkpoint::Checkpoint;
use crate::error::CheckpointError;
use crate::hash::Hash;
use crate::store::{dir_flags, CheckpointStore, Kind};
use crate::tree::{Node, Tree};
use rustix::fs::{AtFlags, FileType, Mode};
use std::collections::{HashMap, HashSet};
use std::os::fd::AsFd;
use std::sync::Arc;

/// What [`CheckpointStore::enforce`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Enforced {
    /// The checkpoints evicted (their ids), oldest first.
    pub evicted: Vec<String>,
    /// The store's bytes after.
    pub bytes: u64,
    /// Objects (blobs and trees) deleted by the sweep, and their bytes.
    pub swept: u64,
    pub swept_bytes: u64,
    /// What could not be read: a damaged index or tree. While an index
    /// cannot be read nothing is swept (its snapshots' objects are unknown).
    pub errors: Vec<String>,
}

type Key = (Kind, Hash);

struct Graph {
    refs: HashMap<Key, u32>,
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

    /// Drops one reference to `key`; the bytes that become unreachable.
    fn release(&mut self, store: &CheckpointStore, key: Key) -> u64 {
        let mut freed = 0;
        let mut stack = vec![key];
        while let Some(key) = stack.pop() {
            let Some(count) = self.refs.get_mut(&key) else {
                continue;
            };
            *count = count.saturating_sub(1);
            if *count > 0 {
                continue;
            }
            freed += self.size(store, key);
            if key.0 == Kind::Tree {
                if let Some(kids) = self.children.get(&key.1) {
                    stack.extend(kids.iter().copied());
                }
            }
        }
        freed
    }
}

fn object_size(store: &CheckpointStore, (kind, hash): Key) -> Option<u64> {
    let hex = hash.hex();
    let fan = rustix::fs::openat(store.base(kind), &hex[..2], dir_flags(), Mode::empty()).ok()?;
    let st = rustix::fs::statat(&fan, &hex[2..], AtFlags::SYMLINK_NOFOLLOW).ok()?;
    (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile).then_some(st.st_size as u64)
}

pub(crate) fn enforce(store: &CheckpointStore, max_bytes: u64, keep: &HashSet<String>) -> Enforced {
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
    let mut graph = Graph {
        refs: HashMap::new(),
        children: HashMap::new(),
        sizes: HashMap::new(),
    };
    let root_of = |id: &crate::snapshot::SnapshotId| id.hash().ok().map(|h| (Kind::Tree, h));
    let mut pending: Vec<Hash> = Vec::new();
    for (_, list) in &sessions {
        for c in list {
            for key in std::iter::once(root_of(&c.before))
                .chain(c.after.as_ref().map(root_of))
                .flatten()
            {
                *graph.refs.entry(key).or_insert(0) += 1;
                pending.push(key.1);
            }
        }
    }
    // Each tree read once; its children counted once per reference.
    let mut seen: HashSet<Hash> = HashSet::new();
    let empty = Arc::new(Tree::default());
    while let Some(hash) = pending.pop() {
        if !seen.insert(hash) {
            continue;
        }
        match children_of(store, &hash, &empty) {
            Ok(kids) => {
                for &key in &kids {
                    *graph.refs.entry(key).or_insert(0) += 1;
                    if key.0 == Kind::Tree {
                        pending.push(key.1);
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
    let keys: Vec<Key> = graph.refs.keys().copied().collect();
    let mut live: u64 = keys.iter().map(|&k| graph.size(store, k)).sum();
    // Oldest first across sessions; ties by session then position.
    let mut order: Vec<(u64, usize, usize)> = Vec::new();
    for (s, (_, list)) in sessions.iter().enumerate() {
        for (i, c) in list.iter().enumerate() {
            order.push((c.created_unix_seconds, s, i));
        }
    }
    order.sort();
    let mut evicted: HashSet<(usize, usize)> = HashSet::new();
    for &(_, s, i) in &order {
        if live <= max_bytes {
            break;
        }
        let c = &sessions[s].1[i];
        if keep.contains(&c.checkpoint_id) {
            continue;
        }
        for key in std::iter::once(root_of(&c.before))
            .chain(c.after.as_ref().map(root_of))
            .flatten()
        {
            live = live.saturating_sub(graph.release(store, key));
        }
        evicted.insert((s, i));
        report.evicted.push(c.checkpoint_id.clone());
    }
    for (s, (id, list)) in sessions.iter().enumerate() {
        if !(0..list.len()).any(|i| evicted.contains(&(s, i))) {
            continue;
        }
        let left: Vec<Checkpoint> = list
            .iter()
            .enumerate()
            .filter(|(i, _)| !evicted.contains(&(s, *i)))
            .map(|(_, c)| c.clone())
            .collect();
        if let Err(e) = store.save_index(id, &left) {
            // Not saved: its objects must stay.
            sweepable = false;
            report.errors.push(e.to_string());
        }
    }
    if sweepable {
        let reachable = |key: &Key| graph.refs.get(key).is_some_and(|&n| n > 0);
        for kind in [Kind::Blob, Kind::Tree] {
            sweep(store, kind, &reachable, &mut report);
        }
        sweep_tmp(store);
        if report.swept > 0 {
            if let Err(e) = store.bump_generation() {
                report.errors.push(e.to_string());
            }
        }
    }
    report.bytes = store.bytes();
    report
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
                    report.swept_bytes += st.st_size as u64;
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
