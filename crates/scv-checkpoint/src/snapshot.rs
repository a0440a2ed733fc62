//! A snapshot in memory: its root tree loaded whole, and what reading
//! the workspace skipped.

use crate::error::CheckpointError;
use crate::hash::Hash;
use crate::tree::{Node, Tree};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// A snapshot's id: the hex sha256 of its root tree.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SnapshotId(pub String);

impl SnapshotId {
    /// Refuses anything but 64 lowercase hex digits.
    pub fn parse(text: &str) -> Result<SnapshotId, CheckpointError> {
        let id = SnapshotId(text.to_string());
        id.hash()?;
        Ok(id)
    }
}

impl std::fmt::Display for SnapshotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What taking a snapshot cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnapshotStats {
    /// Files whose content was read (the rest reused their previous hash).
    pub files_read: u64,
    pub bytes_read: u64,
    /// Trees serialized (the rest were the previous snapshot's, unchanged).
    pub trees_written: u64,
    pub directories: u64,
}

/// A recorded workspace. Loaded whole; cheap to clone (trees are shared).
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub id: SnapshotId,
    /// Paths not recorded and why (FIFOs, sockets, devices, unreadable).
    pub skipped: Vec<(String, String)>,
    /// Files with more than [`crate::checkpoint::MAX_CONTENT_BYTES`] to
    /// store, recorded without content.
    pub metadata_only: Vec<String>,
    /// What this snapshot cost to take (zeros for one loaded).
    pub stats: SnapshotStats,
    /// Taken by [`crate::CheckpointStore::snapshot_ending`]: the paths
    /// changed after the instant it was given (files and links by their
    /// ctime; names gone from a directory whose mtime is later), sorted.
    /// Empty otherwise.
    pub late: Vec<String>,
    pub(crate) hash: Hash,
    pub(crate) root: Arc<Tree>,
    /// The store's sweep count when it was taken or loaded.
    pub(crate) generation: u64,
    /// The ignore rules' fingerprint per directory when it was taken (empty
    /// for one loaded): lets the next snapshot skip matching what it knows.
    pub(crate) rules: Arc<HashMap<String, u64>>,
    len: usize,
}

/// What a snapshot holds at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    File,
    Symlink,
    Dir,
}

/// One recorded path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// Relative, with `/`.
    pub path: String,
    pub kind: EntryKind,
    /// Bytes (files), target length (links), 0 (directories).
    pub size: u64,
    /// Permission bits (0 for links).
    pub mode: u32,
    pub link_target: Option<String>,
    /// False for a file recorded by metadata only.
    pub has_content: bool,
}

impl FileEntry {
    pub fn executable(&self) -> bool {
        self.kind == EntryKind::File && self.mode & 0o111 != 0
    }
}

impl Snapshot {
    pub(crate) fn new(
        hash: Hash,
        root: Arc<Tree>,
        skipped: Vec<(String, String)>,
        metadata_only: Vec<String>,
        generation: u64,
        stats: SnapshotStats,
        rules: Arc<HashMap<String, u64>>,
    ) -> Snapshot {
        let len = count(&root);
        Snapshot {
            id: SnapshotId(hash.hex()),
            skipped,
            metadata_only,
            stats,
            late: Vec::new(),
            hash,
            root,
            generation,
            rules,
            len,
        }
    }

    /// Files and links recorded (directories aside).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every recorded path (files, links and directories), sorted as a
    /// walk visits them (each directory before what is in it).
    pub fn entries(&self) -> Vec<FileEntry> {
        let mut out = Vec::with_capacity(self.len);
        collect(&self.root, "", &mut out);
        out
    }

    /// The files and links, by path.
    pub fn files(&self) -> Vec<FileEntry> {
        let mut out = self.entries();
        out.retain(|e| e.kind != EntryKind::Dir);
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// What is recorded at `path` (relative, with `/`).
    pub fn get(&self, path: &str) -> Option<FileEntry> {
        let mut tree = &self.root;
        let mut parts = path.split('/').peekable();
        while let Some(part) = parts.next() {
            let entry = tree.get(part)?;
            if parts.peek().is_none() {
                return public(entry, path.to_string());
            }
            tree = entry.tree()?;
        }
        None
    }
}

fn count(tree: &Tree) -> usize {
    tree.entries
        .iter()
        .map(|e| match &e.node {
            Node::Dir { tree, .. } => count(tree),
            Node::Skipped { .. } => 0,
            _ => 1,
        })
        .sum()
}

fn public(e: &crate::tree::Entry, path: String) -> Option<FileEntry> {
    Some(match &e.node {
        Node::File { hash, mode, .. } => FileEntry {
            path,
            kind: EntryKind::File,
            size: e.stat.size,
            mode: *mode,
            link_target: None,
            has_content: hash.is_some(),
        },
        Node::Link { target } => FileEntry {
            path,
            kind: EntryKind::Symlink,
            size: target.len() as u64,
            mode: 0,
            link_target: Some(target.clone()),
            has_content: true,
        },
        Node::Dir { mode, .. } => FileEntry {
            path,
            kind: EntryKind::Dir,
            size: 0,
            mode: *mode,
            link_target: None,
            has_content: true,
        },
        Node::Skipped { .. } => return None,
    })
}

fn collect(tree: &Tree, prefix: &str, out: &mut Vec<FileEntry>) {
    for e in &tree.entries {
        let path = join(prefix, &e.name);
        if let Some(p) = public(e, path.clone()) {
            out.push(p);
        }
        if let Node::Dir { tree, .. } = &e.node {
            collect(tree, &path, out);
        }
    }
}

pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

/// The skipped entries a tree records, as (path, reason).
pub(crate) fn skipped_in(tree: &Tree, prefix: &str, out: &mut Vec<(String, String)>) {
    for e in &tree.entries {
        match &e.node {
            Node::Skipped { reason } => out.push((join(prefix, &e.name), reason.clone())),
            Node::Dir { tree, .. } => skipped_in(tree, &join(prefix, &e.name), out),
            _ => {}
        }
    }
}

pub(crate) fn metadata_only_in(tree: &Tree, prefix: &str, out: &mut Vec<String>) {
    for e in &tree.entries {
        match &e.node {
            Node::File { hash: None, .. } => out.push(join(prefix, &e.name)),
            Node::Dir { tree, .. } => metadata_only_in(tree, &join(prefix, &e.name), out),
            _ => {}
        }
    }
}
