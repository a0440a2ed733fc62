//! A directory as recorded: its entries sorted by name, and their binary
//! form (what is hashed, then zlib-compressed into `trees/`).
//!
//! The form, version 1: `SCVT` 0x01, a varint count, then per entry its
//! name (varint length, UTF-8), a tag and the tag's fields:
//! 1 file: sha256, mode, stat, flags; 2 file recorded by metadata only:
//! mode, stat, flags; 3 link: target (varint length, UTF-8), stat, flags;
//! 4 directory: its tree's sha256, mode; 5 skipped: reason; 6 file with
//! holes, stored in the sparse form (`sparse.rs`): that object's sha256,
//! mode, stat, flags (a reader without tag 6 refuses the tree, never
//! misreads it). A stat is size,
//! mtime ns, ctime ns (zigzag), inode, device, all varints. Names are
//! strictly increasing byte-wise, so one directory has one form.

use crate::hash::Hash;
use std::sync::Arc;

const MAGIC: &[u8; 5] = b"SCVT\x01";
/// A tree bigger than this uncompressed is refused (a planted bomb).
pub(crate) const MAX_TREE_BYTES: usize = 256 * 1024 * 1024;
/// Deeper than this is not descended (recorded as skipped), nor loaded.
pub(crate) const MAX_DEPTH: usize = 512;

/// What reuse compares: a file whose stat is unchanged is taken as
/// unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Stat {
    pub(crate) size: u64,
    pub(crate) mtime_ns: i64,
    pub(crate) ctime_ns: i64,
    pub(crate) ino: u64,
    pub(crate) dev: u64,
}

impl Stat {
    // The field types differ between architectures.
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn of(st: &rustix::fs::Stat) -> Stat {
        Stat {
            size: st.st_size as u64,
            mtime_ns: (st.st_mtime as i64)
                .saturating_mul(1_000_000_000)
                .saturating_add(st.st_mtime_nsec as i64),
            ctime_ns: (st.st_ctime as i64)
                .saturating_mul(1_000_000_000)
                .saturating_add(st.st_ctime_nsec as i64),
            ino: st.st_ino as u64,
            dev: st.st_dev as u64,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Node {
    /// `hash` is None for a file recorded by metadata only; `sparse`: its
    /// object holds the sparse form (the file has holes), not the content.
    File {
        hash: Option<Hash>,
        mode: u32,
        sparse: bool,
    },
    Link {
        target: String,
    },
    Dir {
        hash: Hash,
        mode: u32,
        tree: Arc<Tree>,
    },
    /// A FIFO, socket, device, unreadable file or directory: listed, never
    /// restored or removed.
    Skipped {
        reason: String,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) node: Node,
    /// Files and links only (zero otherwise).
    pub(crate) stat: Stat,
    /// Changed so recently that an equal stat later does not prove the
    /// content equal (timestamps are coarse): never reused.
    pub(crate) racy: bool,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        let node = match (&self.node, &other.node) {
            (
                Node::File {
                    hash: a,
                    mode: m,
                    sparse: x,
                },
                Node::File {
                    hash: b,
                    mode: n,
                    sparse: y,
                },
            ) => a == b && m == n && x == y,
            (Node::Link { target: a }, Node::Link { target: b }) => a == b,
            (
                Node::Dir {
                    hash: a, mode: m, ..
                },
                Node::Dir {
                    hash: b, mode: n, ..
                },
            ) => a == b && m == n,
            (Node::Skipped { reason: a }, Node::Skipped { reason: b }) => a == b,
            _ => false,
        };
        node && self.name == other.name && self.stat == other.stat && self.racy == other.racy
    }
}

impl Entry {
    pub(crate) fn is_dir(&self) -> bool {
        matches!(self.node, Node::Dir { .. })
    }

    pub(crate) fn is_skipped(&self) -> bool {
        matches!(self.node, Node::Skipped { .. })
    }

    pub(crate) fn tree(&self) -> Option<&Arc<Tree>> {
        match &self.node {
            Node::Dir { tree, .. } => Some(tree),
            _ => None,
        }
    }

    /// Same content as `other` (what a diff and a restore go by; stats
    /// aside). Files without content are the same when their size and
    /// mtime are.
    pub(crate) fn same_content(&self, other: &Entry) -> bool {
        match (&self.node, &other.node) {
            (
                Node::File {
                    hash: Some(a),
                    mode: m,
                    sparse: x,
                },
                Node::File {
                    hash: Some(b),
                    mode: n,
                    sparse: y,
                },
            ) => a == b && m == n && x == y,
            (
                Node::File {
                    hash: None,
                    mode: m,
                    ..
                },
                Node::File {
                    hash: None,
                    mode: n,
                    ..
                },
            ) => {
                m == n
                    && self.stat.size == other.stat.size
                    && self.stat.mtime_ns == other.stat.mtime_ns
            }
            (Node::Link { target: a }, Node::Link { target: b }) => a == b,
            (Node::Dir { hash: a, .. }, Node::Dir { hash: b, .. }) => a == b,
            _ => false,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Tree {
    pub(crate) entries: Vec<Entry>,
}

impl Tree {
    pub(crate) fn get(&self, name: &str) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| e.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.entries[i])
    }

    /// The binary form (entries must be sorted).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.entries.len() * 64);
        out.extend_from_slice(MAGIC);
        varint(&mut out, self.entries.len() as u64);
        for e in &self.entries {
            bytes(&mut out, e.name.as_bytes());
            let flags = u8::from(e.racy);
            match &e.node {
                Node::File {
                    hash: Some(hash),
                    mode,
                    sparse,
                } => {
                    out.push(if *sparse { 6 } else { 1 });
                    out.extend_from_slice(&hash.0);
                    varint(&mut out, u64::from(*mode));
                    stat(&mut out, &e.stat);
                    out.push(flags);
                }
                Node::File {
                    hash: None, mode, ..
                } => {
                    out.push(2);
                    varint(&mut out, u64::from(*mode));
                    stat(&mut out, &e.stat);
                    out.push(flags);
                }
                Node::Link { target } => {
                    out.push(3);
                    bytes(&mut out, target.as_bytes());
                    stat(&mut out, &e.stat);
                    out.push(flags);
                }
                Node::Dir { hash, mode, .. } => {
                    out.push(4);
                    out.extend_from_slice(&hash.0);
                    varint(&mut out, u64::from(*mode));
                }
                Node::Skipped { reason } => {
                    out.push(5);
                    bytes(&mut out, reason.as_bytes());
                }
            }
        }
        out
    }

    /// Reads the binary form; a directory's child tree comes from
    /// `child` (by its hash). Anything malformed is refused with why.
    pub(crate) fn decode(
        data: &[u8],
        child: &mut dyn FnMut(Hash) -> Result<Arc<Tree>, crate::CheckpointError>,
    ) -> Result<Tree, Decode> {
        let mut r = Reader { data, at: 0 };
        if r.take(MAGIC.len())? != MAGIC {
            return Err(Decode::Bad("not a tree (bad magic or version)".into()));
        }
        let count = r.varint()?;
        // Each entry takes at least 3 bytes: a count beyond that is a lie.
        if count > (data.len() as u64) / 3 + 1 {
            return Err(Decode::Bad("entry count beyond the data".into()));
        }
        let mut entries: Vec<Entry> = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let name = r.string()?;
            if !valid_name(&name) {
                return Err(Decode::Bad(format!("bad entry name {name:?}")));
            }
            if let Some(last) = entries.last() {
                if last.name.as_bytes() >= name.as_bytes() {
                    return Err(Decode::Bad("entries not strictly sorted".into()));
                }
            }
            let tag = r.byte()?;
            let (node, stat, racy) = match tag {
                1 | 6 => {
                    let hash = r.hash()?;
                    let mode = r.mode()?;
                    let stat = r.stat()?;
                    let racy = r.flags()?;
                    (
                        Node::File {
                            hash: Some(hash),
                            mode,
                            sparse: tag == 6,
                        },
                        stat,
                        racy,
                    )
                }
                2 => {
                    let mode = r.mode()?;
                    let stat = r.stat()?;
                    let racy = r.flags()?;
                    (
                        Node::File {
                            hash: None,
                            mode,
                            sparse: false,
                        },
                        stat,
                        racy,
                    )
                }
                3 => {
                    let target = r.string()?;
                    if target.is_empty() || target.contains('\0') {
                        return Err(Decode::Bad("bad link target".into()));
                    }
                    let stat = r.stat()?;
                    let racy = r.flags()?;
                    (Node::Link { target }, stat, racy)
                }
                4 => {
                    let hash = r.hash()?;
                    let mode = r.mode()?;
                    let tree = child(hash).map_err(Decode::Child)?;
                    (Node::Dir { hash, mode, tree }, Stat::default(), false)
                }
                5 => {
                    let reason = r.string()?;
                    (Node::Skipped { reason }, Stat::default(), false)
                }
                other => return Err(Decode::Bad(format!("unknown entry tag {other}"))),
            };
            entries.push(Entry {
                name,
                node,
                stat,
                racy,
            });
        }
        if r.at != data.len() {
            return Err(Decode::Bad("trailing bytes".into()));
        }
        Ok(Tree { entries })
    }
}

pub(crate) enum Decode {
    Bad(String),
    Child(crate::CheckpointError),
}

/// A name a directory entry may have: never `.`, `..`, `.git`, empty, or
/// with a `/` or NUL (so a planted tree cannot aim a restore elsewhere).
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name != ".git"
        && !name.bytes().any(|b| b == b'/' || b == 0)
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn stat(out: &mut Vec<u8>, s: &Stat) {
    varint(out, s.size);
    varint(out, zigzag(s.mtime_ns));
    varint(out, zigzag(s.ctime_ns));
    varint(out, s.ino);
    varint(out, s.dev);
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Decode> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| Decode::Bad("truncated".into()))?;
        let out = &self.data[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self) -> Result<u8, Decode> {
        Ok(self.take(1)?[0])
    }

    fn varint(&mut self) -> Result<u64, Decode> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Decode::Bad("varint too long".into()))
    }

    fn signed(&mut self) -> Result<i64, Decode> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn string(&mut self) -> Result<String, Decode> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| Decode::Bad("length too big".into()))?;
        let b = self.take(len)?;
        String::from_utf8(b.to_vec()).map_err(|_| Decode::Bad("text not UTF-8".into()))
    }

    fn hash(&mut self) -> Result<Hash, Decode> {
        let b = self.take(32)?;
        let mut h = [0u8; 32];
        h.copy_from_slice(b);
        Ok(Hash(h))
    }

    fn mode(&mut self) -> Result<u32, Decode> {
        let m = self.varint()?;
        if m > 0o777 {
            return Err(Decode::Bad(format!("bad mode {m:o}")));
        }
        Ok(m as u32)
    }

    fn stat(&mut self) -> Result<Stat, Decode> {
        Ok(Stat {
            size: self.varint()?,
            mtime_ns: self.signed()?,
            ctime_ns: self.signed()?,
            ino: self.varint()?,
            dev: self.varint()?,
        })
    }

    fn flags(&mut self) -> Result<bool, Decode> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            f => Err(Decode::Bad(format!("unknown flags {f}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, n: u8) -> Entry {
        Entry {
            name: name.into(),
            node: Node::File {
                hash: Some(Hash([n; 32])),
                mode: 0o644,
                sparse: n == 3,
            },
            stat: Stat {
                size: 5,
                mtime_ns: -3,
                ctime_ns: 1_700_000_000_123_456_789,
                ino: 42,
                dev: 7,
            },
            racy: n.is_multiple_of(2),
        }
    }

    #[test]
    fn the_form_round_trips_and_refuses_damage() {
        let sub = Arc::new(Tree::default());
        let tree = Tree {
            entries: vec![
                file("a", 1),
                file("aa", 3),
                Entry {
                    name: "b".into(),
                    node: Node::Link {
                        target: "../x".into(),
                    },
                    stat: Stat::default(),
                    racy: false,
                },
                Entry {
                    name: "c".into(),
                    node: Node::Dir {
                        hash: Hash([9; 32]),
                        mode: 0o755,
                        tree: sub.clone(),
                    },
                    stat: Stat::default(),
                    racy: false,
                },
                Entry {
                    name: "d".into(),
                    node: Node::File {
                        hash: None,
                        mode: 0o600,
                        sparse: false,
                    },
                    stat: Stat::default(),
                    racy: true,
                },
                Entry {
                    name: "e".into(),
                    node: Node::Skipped {
                        reason: "a FIFO".into(),
                    },
                    stat: Stat::default(),
                    racy: false,
                },
            ],
        };
        let data = tree.encode();
        let mut child = |h: Hash| {
            assert_eq!(h, Hash([9; 32]));
            Ok(sub.clone())
        };
        let back = match Tree::decode(&data, &mut child) {
            Ok(t) => t,
            Err(_) => panic!("does not decode"),
        };
        assert_eq!(back.entries, tree.entries);
        assert_eq!(back.encode(), data);
        // Every truncation and a trailing byte are refused, never a panic.
        for cut in 0..data.len() {
            assert!(Tree::decode(&data[..cut], &mut child).is_err());
        }
        let mut longer = data.clone();
        longer.push(0);
        assert!(Tree::decode(&longer, &mut child).is_err());
        // A name aiming elsewhere is refused.
        let bad = Tree {
            entries: vec![file("..", 1)],
        };
        assert!(Tree::decode(&bad.encode(), &mut child).is_err());
        let unsorted = Tree {
            entries: vec![file("b", 1), file("a", 1)],
        };
        assert!(Tree::decode(&unsorted.encode(), &mut child).is_err());
    }
}
