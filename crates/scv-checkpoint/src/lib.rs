//! SCV's workspace checkpoints: snapshots of a workspace, taken before and
//! after each agent turn, that can put it back exactly as it was — undo
//! anything the agent did — without ever touching `.git`.
//!
//! **What is recorded.** Every regular file (content and permission bits),
//! symlink (its target text, never followed) and directory under the
//! workspace, except any entry named `.git` and what the ignore files
//! exclude (`.gitignore` and `.ignore` in any directory, the root's
//! `.git/info/exclude`, applied as git and ripgrep do, without a global
//! excludes file or the workspace's parents; hidden files are included).
//! FIFOs, sockets, devices, and what cannot be read are listed in the
//! snapshot's `skipped` with why; they are opened (if at all) with
//! `O_NONBLOCK|O_NOFOLLOW` and read only if `fstat` says regular file.
//! A file with holes (fewer blocks than its length, and `SEEK_HOLE` finds
//! one) is read by its data only and stored in the sparse form
//! (`sparse.rs`: its non-zero pages and where they go), so it costs the
//! store what it holds, not its length, and is restored with its holes.
//! Files with more than [`MAX_CONTENT_BYTES`] to store (their length, or
//! for one with holes its data) are recorded by metadata only. The walk
//! goes through directory fds opened with `O_NOFOLLOW`, so nothing outside
//! the workspace is read even if a directory is swapped for a link during
//! it. Names or link targets that are not UTF-8 are skipped.
//!
//! **The store.** `$SCV_HOME/checkpoints/` (0700, ours, not a link; files
//! 0600), content-addressed by SHA-256 and shared by every session:
//! `objects/ab/cdef…` holds file contents, each one zstd frame (`blob.rs`;
//! a store written before compression holds them as they are, still
//! read: the hash decides the form), named by the content's hash (a file
//! with holes: its sparse form, uncompressed, named by that form's hash);
//! `trees/ab/cdef…`
//! holds one directory each, zlib-compressed, named by the hash of its
//! uncompressed form (`tree.rs`: the sorted entries with name, kind, hash or
//! link target, mode, and for files and links the size, mtime, ctime,
//! inode and device a later snapshot compares to reuse a hash). A snapshot
//! is its root tree's hash, so a checkpoint adds only the files that
//! changed and the trees on their paths. `sessions/SESSION_ID.json` lists a
//! session's [`Checkpoint`]s (written by temp file, fsync, rename). Every
//! object is checked against its hash when read; a link, a directory, bad
//! zlib or JSON where an object or index must be is refused with a
//! diagnostic. Objects are written to a temp file and renamed, not fsynced
//! one by one (a first snapshot writes thousands; a crash of the process
//! loses nothing, a power cut may tear objects written in the last
//! seconds: their hashes catch it on reading, a restore then refuses, and
//! the next snapshot that needs one writes it again); an index, the
//! commit point, is fsynced.
//!
//! **Speed.** Given the previous snapshot, a file whose stat (size, mtime,
//! ctime, inode, device) is unchanged keeps its hash unread, and a
//! directory all of whose entries are unchanged keeps its tree unwritten.
//! A file changed within 2 s of the snapshot is marked racy and read again
//! next time (timestamps are coarse). Directories are read by a few threads.
//!
//! **After a turn** ([`CheckpointStore::snapshot_ending`], given
//! [`end_of_turn`]): taken once the turn's terminal event is out, it
//! stores trees only (what it reads is hashed and read again, and stored,
//! by the next snapshot) and lists in [`Snapshot::late`] what changed
//! after the turn's end — ctimes past it, names gone from a directory
//! whose mtime is past it — which [`CheckpointStore::conflicts`] counts as
//! someone else's.
//!
//! **Restore** (`restore.rs`) makes the paths `now` (a fresh snapshot)
//! and the target cover as the target has them, and never touches what
//! `now` does not cover (ignored, skipped, appeared since): a directory
//! holding such a thing stays. It refuses before changing anything when
//! it would need a file recorded without content or a damaged object; it
//! never writes through a link (directory fds, `O_NOFOLLOW`, temp file and
//! rename, `RENAME_NOREPLACE`); and on a failure part-way it puts back
//! what it changed and says whether that worked. What it replaces or
//! removes waits in a `.scv-restore-…` directory at the workspace root
//! until the end (a crash mid-restore leaves it there, with the old
//! files). Directory modes are applied only to directories it makes.
//!
//! **Bounds.** The store's size is what it takes on disk
//! ([`CheckpointStore::bytes`]: every file and directory under it, each
//! the larger of its length and its allocated blocks — at least what
//! `du -s` and `du -sb` say), indexes, trees and fan-out directories
//! included. [`CheckpointStore::over`] says cheaply whether it may be past
//! a bound (its last count plus what this handle wrote since; counted
//! again when that passes the bound, and every 16th call for what other
//! processes wrote). [`CheckpointStore::enforce`] sweeps every object no
//! indexed checkpoint needs — a `before` snapshot whole, an `after`
//! snapshot's trees only (a restore never writes an `after`, it compares
//! it) — counts the store, and while it is past the bound evicts the
//! oldest checkpoints across sessions, never one the caller keeps, and
//! sweeps and counts again. When what is kept alone is past the bound it
//! is kept and [`Enforced::over`] says so. Objects of a snapshot not yet
//! in an index are not protected: save the index first.

mod blob;
mod checkpoint;
mod diff;
mod enforce;
mod error;
mod hash;
mod restore;
mod rules;
mod snapshot;
mod sparse;
mod store;
mod tree;
mod walk;

pub use checkpoint::{new_checkpoint_id, Checkpoint, MAX_CONTENT_BYTES};
pub use diff::{Change, ChangeKind};
pub use enforce::Enforced;
pub use error::{CheckpointError, RestoreError};
#[doc(hidden)]
pub use restore::RestoreOptions;
pub use snapshot::{EntryKind, FileEntry, Snapshot, SnapshotId, SnapshotStats};
pub use store::{valid_checkpoint_id, valid_session_id, CheckpointStore};
pub use walk::SnapshotLimits;

use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The instant a turn ends, for [`CheckpointStore::snapshot_ending`]:
/// now, returned once the kernel's coarse clock (what file timestamps
/// are taken from) has passed it, so a change made after this returns has
/// a ctime later than it and one made before has not. Waits a clock tick
/// at most (a few ms); call it off the async runtime.
pub fn end_of_turn() -> std::time::SystemTime {
    use rustix::time::{clock_gettime, ClockId};
    let now = std::time::SystemTime::now();
    let wanted = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    for _ in 0..100 {
        let coarse = clock_gettime(ClockId::RealtimeCoarse);
        let coarse = coarse.tv_sec as u128 * 1_000_000_000 + coarse.tv_nsec as u128;
        if coarse > wanted {
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
    now
}

impl CheckpointStore {
    /// Records `workspace` (blobs and trees written to the store);
    /// `previous` lets unchanged files reuse their hashes.
    pub fn snapshot(
        &self,
        workspace: &Path,
        previous: Option<&Snapshot>,
    ) -> Result<Snapshot, CheckpointError> {
        walk::snapshot(self, workspace, previous, SnapshotLimits::NONE, None)
    }

    /// [`CheckpointStore::snapshot`] within `limits`: past them the
    /// snapshot stops with [`CheckpointError::TooLarge`] (what it stored
    /// so far is swept later like any unreferenced object).
    pub fn snapshot_within(
        &self,
        workspace: &Path,
        previous: Option<&Snapshot>,
        limits: SnapshotLimits,
    ) -> Result<Snapshot, CheckpointError> {
        walk::snapshot(self, workspace, previous, limits, None)
    }

    /// [`CheckpointStore::snapshot_within`] taken after a turn ended at
    /// `ended` (its terminal event already sent): what changed after that
    /// instant is listed in [`Snapshot::late`], so it can be told from the
    /// turn's own changes ([`Checkpoint::late`]); give it an instant from
    /// [`end_of_turn`] so that every change before has a ctime at or
    /// before it and every change after one past it. It stores trees
    /// only: the contents it reads are hashed and marked to be read (and
    /// stored) by the next snapshot — an `after` is compared by a restore,
    /// never written.
    pub fn snapshot_ending(
        &self,
        workspace: &Path,
        previous: Option<&Snapshot>,
        limits: SnapshotLimits,
        ended: std::time::SystemTime,
    ) -> Result<Snapshot, CheckpointError> {
        let since = ended
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        walk::snapshot(self, workspace, previous, limits, Some(since))
    }

    /// A stored snapshot by its root id (every tree verified).
    pub fn load(&self, id: &SnapshotId) -> Result<Snapshot, CheckpointError> {
        self.load_cached(id, &mut HashMap::new())
    }

    fn load_cached(
        &self,
        id: &SnapshotId,
        cache: &mut HashMap<hash::Hash, std::sync::Arc<tree::Tree>>,
    ) -> Result<Snapshot, CheckpointError> {
        let hash = id.hash()?;
        let _lock = self.lock(false)?;
        let generation = self.generation();
        let root = self.load_tree(&hash, cache, 0)?;
        let mut skipped = Vec::new();
        snapshot::skipped_in(&root, "", &mut skipped);
        let mut metadata_only = Vec::new();
        snapshot::metadata_only_in(&root, "", &mut metadata_only);
        Ok(Snapshot::new(
            hash,
            root,
            skipped,
            metadata_only,
            generation,
            SnapshotStats::default(),
            Default::default(),
        ))
    }

    /// What changed from `from` to `to`, sorted by path.
    pub fn changes(&self, from: &Snapshot, to: &Snapshot) -> Vec<Change> {
        diff::changes(&from.root, &to.root)
    }

    /// A unified diff from `from` to `to` (text files; binary and
    /// metadata-only files say so in a line), at most `max_bytes`, and
    /// whether it was cut.
    pub fn unified_diff(
        &self,
        from: &Snapshot,
        to: &Snapshot,
        max_bytes: usize,
    ) -> Result<(String, bool), CheckpointError> {
        diff::unified_diff(self, &from.root, &to.root, max_bytes)
    }

    /// Makes `workspace` as `target`, `now` being a fresh snapshot of it;
    /// all or nothing. Returns what it changed (from `now` to `target`).
    pub fn restore(
        &self,
        workspace: &Path,
        target: &Snapshot,
        now: &Snapshot,
    ) -> Result<Vec<Change>, RestoreError> {
        restore::restore(self, workspace, target, now, &RestoreOptions::default())
    }

    #[doc(hidden)]
    pub fn restore_with(
        &self,
        workspace: &Path,
        target: &Snapshot,
        now: &Snapshot,
        options: &RestoreOptions,
    ) -> Result<Vec<Change>, RestoreError> {
        restore::restore(self, workspace, target, now, options)
    }

    /// Paths changed outside the agent's turns since `checkpoints[from]`:
    /// those that differ between `after[j]` and `before[j+1]` for each
    /// j ≥ from, or between the last `after` and `now`, and each one's
    /// [`Checkpoint::late`]. A turn whose
    /// `after` is missing (it never ended) cannot be told apart from what
    /// happened around it, so its whole span counts: `before[j]` is
    /// compared instead — conservative, it may list the agent's own
    /// changes of that turn.
    pub fn conflicts(
        &self,
        checkpoints: &[Checkpoint],
        from: usize,
        now: &Snapshot,
    ) -> Result<Vec<String>, CheckpointError> {
        if from >= checkpoints.len() {
            return Err(CheckpointError::OutOfRange(from));
        }
        let mut cache = HashMap::new();
        let mut loaded: HashMap<SnapshotId, Snapshot> = HashMap::new();
        let mut get =
            |id: &SnapshotId, cache: &mut HashMap<_, _>| -> Result<Snapshot, CheckpointError> {
                if *id == now.id {
                    return Ok(now.clone());
                }
                if let Some(s) = loaded.get(id) {
                    return Ok(s.clone());
                }
                let s = self.load_cached(id, cache)?;
                loaded.insert(id.clone(), s.clone());
                Ok(s)
            };
        let mut paths = std::collections::BTreeSet::new();
        for j in from..checkpoints.len() {
            let c = &checkpoints[j];
            let start = get(c.after.as_ref().unwrap_or(&c.before), &mut cache)?;
            let end = match checkpoints.get(j + 1) {
                Some(next) => get(&next.before, &mut cache)?,
                None => now.clone(),
            };
            for change in diff::changes(&start.root, &end.root) {
                paths.insert(change.path);
            }
            // Changed after the turn ended, before its `after` was taken.
            paths.extend(c.late.iter().cloned());
        }
        Ok(paths.into_iter().collect())
    }

    /// Deletes every object no indexed checkpoint needs (a `before`
    /// snapshot whole, an `after` one's trees), counts the store on disk
    /// ([`CheckpointStore::bytes`]), and while that is over `max_bytes`
    /// evicts the oldest checkpoints (across every session's index),
    /// never one whose id is in `keep`, and sweeps again. When only kept
    /// checkpoints are left and the store is still over, it says so
    /// ([`Enforced::over`]) and keeps them.
    pub fn enforce(&self, max_bytes: u64, keep: &HashSet<String>) -> Enforced {
        enforce::enforce(self, max_bytes, keep, &HashSet::new())
    }

    /// [`CheckpointStore::enforce`] with a second tier: the checkpoints in
    /// `spare` are evicted (oldest first) only when every other one but
    /// `keep` is gone and the store is still over, so the bound holds
    /// unless `keep` alone exceeds it.
    pub fn enforce_sparing(
        &self,
        max_bytes: u64,
        keep: &HashSet<String>,
        spare: &HashSet<String>,
    ) -> Enforced {
        enforce::enforce(self, max_bytes, keep, spare)
    }
}
