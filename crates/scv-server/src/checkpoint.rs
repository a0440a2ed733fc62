//! A session's checkpoints (capability `checkpoints`; the store and its
//! format are `scv-checkpoint`'s): the workspace recorded before the
//! first call of each turn that may change files, and again as that
//! turn ends, before its terminal event (what changed after its end is
//! marked as someone else's), so a restore knows what the agent changed and what
//! someone else did since. Every snapshot and restore runs on the blocking pool.
//!
//! The checkpoints of a session are kept in the store's index for the
//! session id, so they outlive the daemon with the session's journal.

use scv_checkpoint::{
    Change, ChangeKind, Checkpoint, CheckpointError, CheckpointStore, RestoreError, Snapshot,
};
use scv_protocol::{
    CheckpointInfo, ErrorCode, FileChange, FileChangeKind, MAX_CHECKPOINT_DIFF_BYTES,
};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The checkpoint store of this server process, its bound, and the newest
/// checkpoint of every session open here (never evicted).
pub(crate) struct Store {
    store: Arc<CheckpointStore>,
    max_bytes: u64,
    newest: Mutex<HashMap<Arc<str>, String>>,
    /// The checkpoint taken last here (any session): never evicted, so the
    /// turn that just began can always be undone. The other sessions'
    /// newest are spared while anything else can go, then evicted too, so
    /// the bound holds however many sessions are open.
    latest: Mutex<Option<String>>,
    /// What the bound evicted from sessions open here, by session: their
    /// lists drop it before they are next used or saved.
    evicted: Mutex<HashMap<String, HashSet<String>>>,
    /// The store was left past its bound by the last enforcement (said
    /// once in the log, until it is within again).
    over: std::sync::atomic::AtomicBool,
    /// Held (shared) from a snapshot until its index is saved, and
    /// (alone) by a sweep: a sweep deletes objects no index reaches, so it
    /// must not run between the two.
    sweep: Arc<tokio::sync::RwLock<()>>,
}

/// Past [`high_water`], the store is brought down to this fraction of
/// its bound (7/8), so the next checkpoint does not evict again at once.
fn low_water(max_bytes: u64) -> u64 {
    max_bytes - max_bytes / 8
}

/// The store is kept under this (15/16 of its bound) when a checkpoint is
/// taken: the rest is room for what the turn's `after` adds as the turn
/// ends (its trees and the index; no contents),
/// so the bound holds while that is recorded too.
fn high_water(max_bytes: u64) -> u64 {
    max_bytes - max_bytes / 16
}

/// What one snapshot may take on. A workspace past it (a home directory,
/// a disk of datasets) gets no checkpoints rather than being copied into
/// the store: said once in the log, and `checkpoint.list` is empty.
const LIMITS: scv_checkpoint::SnapshotLimits = scv_checkpoint::SnapshotLimits {
    max_entries: 500_000,
    max_bytes_read: 2 << 30,
};

impl Store {
    /// The store under `scv_home`; `None` when `checkpoints = false` or it
    /// cannot be used (said on stderr: sessions run without checkpoints).
    pub(crate) fn open(enabled: bool, max_bytes: u64, scv_home: &Path) -> Option<Arc<Store>> {
        if !enabled {
            return None;
        }
        match CheckpointStore::open(scv_home) {
            Ok(store) => Some(Arc::new(Store {
                store: Arc::new(store),
                max_bytes,
                newest: Mutex::new(HashMap::new()),
                latest: Mutex::new(None),
                evicted: Mutex::new(HashMap::new()),
                over: std::sync::atomic::AtomicBool::new(false),
                sweep: Arc::new(tokio::sync::RwLock::new(())),
            })),
            Err(err) => {
                tracing::warn!("no checkpoints will be taken: {err}");
                None
            }
        }
    }

    fn newest(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, String>> {
        crate::sync::lock(&self.newest)
    }

    /// Keeps the store within its bound after a checkpoint's index was
    /// saved: a cheap check (the store's last count plus what this
    /// process wrote since; counted again when that passes
    /// [`high_water`] and every 16th check), and past it, eviction down to
    /// [`low_water`] with no snapshot between its taking and its index.
    async fn enforce(self: &Arc<Self>) {
        let store = self.clone();
        match crate::blocking::run(move || store.store.over(high_water(store.max_bytes))).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(err) => {
                tracing::warn!("checkpoint store bound not checked: {err}");
                return;
            }
        }
        let _alone = self.sweep.clone().write_owned().await;
        let store = self.clone();
        if let Err(err) = crate::blocking::run(move || store.enforce_now()).await {
            tracing::warn!("checkpoint store bound not enforced: {err}");
        }
    }

    fn enforce_now(&self) {
        let latest = crate::sync::lock(&self.latest).clone();
        let (keep, spare, open) = {
            let newest = self.newest();
            let mut spare: HashSet<String> = newest.values().cloned().collect();
            let keep: HashSet<String> = latest.filter(|id| spare.remove(id)).into_iter().collect();
            let open: HashSet<Arc<str>> = newest.keys().cloned().collect();
            (keep, spare, open)
        };
        let enforced = self
            .store
            .enforce_sparing(low_water(self.max_bytes), &keep, &spare);
        if !enforced.evicted.is_empty() {
            let mut evicted = self.evicted();
            for (session, id) in &enforced.evicted {
                if open.contains(session.as_str()) {
                    evicted
                        .entry(session.clone())
                        .or_default()
                        .insert(id.clone());
                }
            }
            tracing::info!(
                "checkpoint store: evicted {} checkpoint(s) past its bound of {} bytes; it takes {} bytes",
                enforced.evicted.len(),
                self.max_bytes,
                enforced.bytes
            );
        }
        for err in &enforced.errors {
            tracing::warn!("checkpoint store: {err}");
        }
        let over = enforced.over && enforced.bytes > self.max_bytes;
        let was = self.over.swap(over, std::sync::atomic::Ordering::Relaxed);
        if over && !was {
            tracing::warn!(
                "checkpoint store: {} bytes, past its bound of {}: {}",
                enforced.bytes,
                self.max_bytes,
                if enforced.errors.is_empty() {
                    "the checkpoint taken last (never evicted: it is what undoes the turn that took it) is larger alone"
                } else {
                    "what it keeps, or what cannot be read (said above), is larger"
                }
            );
        }
    }

    fn evicted(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashSet<String>>> {
        crate::sync::lock(&self.evicted)
    }

    /// Drops from a session's list what the bound evicted from its index.
    fn forget_evicted(&self, session_id: &str, list: &mut Vec<Checkpoint>) {
        if let Some(gone) = self.evicted().remove(session_id) {
            list.retain(|c| !gone.contains(&c.checkpoint_id));
        }
    }

    /// A session's checkpoints are gone with it (`session.delete`).
    pub(crate) async fn delete_session(&self, session_id: &str) {
        let (store, id) = (self.store.clone(), session_id.to_string());
        if let Ok(Err(err)) = crate::blocking::run(move || store.delete_session(&id)).await {
            tracing::warn!("checkpoints of session {session_id} not deleted: {err}");
        }
    }
}

/// What a changing call without a checkpoint is told when the store's
/// disk is full (before the call runs).
pub(crate) const NO_UNDO_DISK_FULL: &str = "no undo point: disk full";

/// What [`Checkpoints::before_change`] did.
#[derive(Debug)]
pub(crate) enum Taken {
    /// A new checkpoint, its id.
    New(String),
    /// None needed (the turn has one) or none possible (too large, said
    /// once before).
    Nothing,
    /// It could not be taken: why, in words for the user.
    Failed(String),
}

/// What a session's checkpoints hold between calls.
#[derive(Default)]
struct State {
    /// Oldest first, as the store's index holds them.
    list: Vec<Checkpoint>,
    /// The latest snapshot taken (its unchanged files need no reading).
    last: Option<Arc<Snapshot>>,
    /// The turn that took the newest checkpoint and has not ended yet.
    open_turn: Option<String>,
    /// The workspace is too large to checkpoint: none is taken again.
    too_large: bool,
    /// The newest turn that changed files without a checkpoint (newer
    /// than every one listed), and why.
    missed: Option<scv_protocol::MissedCheckpoint>,
    /// The turn whose checkpoint failed (not tried again in it).
    failed_turn: Option<String>,
}

/// One session's checkpoints.
pub(crate) struct Checkpoints {
    store: Arc<Store>,
    session_id: Arc<str>,
    workspace: PathBuf,
    state: tokio::sync::Mutex<State>,
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        // Closed: its newest checkpoint may go like any other.
        self.store.newest().remove(&self.session_id);
        self.store.evicted().remove(&*self.session_id);
    }
}

/// Why a checkpoint request was refused, with the protocol's code (the
/// session host turns it into its `error` event).
#[derive(Debug)]
pub(crate) struct Refusal {
    pub code: ErrorCode,
    pub message: String,
    /// A restore refused for paths someone else changed.
    pub conflicts: Option<Box<[String]>>,
}

impl Refusal {
    fn new(code: ErrorCode, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
            conflicts: None,
        }
    }
}

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::new(ErrorCode::InvalidRequest, message)
}

/// A store failure (or the blocking pool's) as the client hears it.
fn store_reject(err: impl std::fmt::Display) -> Refusal {
    Refusal::new(ErrorCode::InternalError, format!("checkpoint store: {err}"))
}

fn change(change: &Change) -> FileChange {
    FileChange {
        path: change.path.clone(),
        change: match change.kind {
            ChangeKind::Added => FileChangeKind::Added,
            ChangeKind::Modified => FileChangeKind::Modified,
            ChangeKind::Deleted => FileChangeKind::Deleted,
        },
    }
}

impl Checkpoints {
    /// The checkpoints of session `session_id` working in `workspace`;
    /// with `stored`, those its earlier life left in the store.
    pub(crate) async fn open(
        store: Arc<Store>,
        session_id: Arc<str>,
        workspace: PathBuf,
        stored: bool,
    ) -> Arc<Checkpoints> {
        let mut state = State::default();
        if stored {
            let (index, id) = (store.store.clone(), session_id.to_string());
            match crate::blocking::run(move || index.index(&id)).await {
                Ok(Ok(list)) => state.list = list,
                Ok(Err(err)) => tracing::warn!("checkpoints of session {session_id}: {err}"),
                Err(err) => tracing::warn!("checkpoints of session {session_id}: {err}"),
            }
        }
        if let Some(newest) = state.list.last() {
            store
                .newest()
                .insert(session_id.clone(), newest.checkpoint_id.clone());
        }
        Arc::new(Checkpoints {
            store,
            session_id,
            workspace,
            state: tokio::sync::Mutex::new(state),
        })
    }

    /// Records the workspace before the first call of turn `turn_id` that
    /// may change files: the new checkpoint's id; nothing when this turn
    /// has one already (or the workspace was found too large before); or
    /// why it could not be taken (said in the log too, and the call runs
    /// all the same).
    pub(crate) async fn before_change(&self, turn_id: &str, prompt: &str) -> Taken {
        let mut state = self.state.lock().await;
        if state.open_turn.as_deref() == Some(turn_id)
            || state.failed_turn.as_deref() == Some(turn_id)
            || state.too_large
        {
            return Taken::Nothing;
        }
        let sweep = self.store.sweep.clone().read_owned().await;
        self.store.forget_evicted(&self.session_id, &mut state.list);
        let previous = state.last.clone();
        let snapshot = match self.take(previous).await {
            Ok(snapshot) => snapshot,
            Err(err) => {
                state.too_large = matches!(err, CheckpointError::TooLarge(_));
                tracing::warn!(
                    "session {}: no checkpoint before this turn's changes{}: {err}",
                    self.session_id,
                    if state.too_large {
                        " (nor later ones)"
                    } else {
                        ""
                    }
                );
                // A full disk left no temporary file behind (the store
                // discards its own on a failed write).
                let message = if err.is_disk_full() {
                    format!("{NO_UNDO_DISK_FULL} — the checkpoint store under SCV_HOME has no room ({err}); this call runs without one")
                } else {
                    format!("no undo point: {err}; this call runs without one")
                };
                state.missed = Some(scv_protocol::MissedCheckpoint {
                    turn_id: turn_id.to_string(),
                    message: message.clone(),
                });
                // Once per turn: its later calls are told nothing more.
                state.failed_turn = Some(turn_id.to_string());
                return Taken::Failed(message);
            }
        };
        let checkpoint = Checkpoint {
            checkpoint_id: scv_checkpoint::new_checkpoint_id(&snapshot.id),
            turn_id: turn_id.to_string(),
            prompt: prompt.to_string(),
            created_unix_seconds: scv_store::now_unix(),
            before: snapshot.id.clone(),
            after: None,
            late: Vec::new(),
        };
        let id = checkpoint.checkpoint_id.clone();
        state.missed = None;
        state.list.push(checkpoint);
        state.last = Some(snapshot);
        state.open_turn = Some(turn_id.to_string());
        self.save(&state).await;
        // Kept before any sweep can run.
        self.store
            .newest()
            .insert(self.session_id.clone(), id.clone());
        *crate::sync::lock(&self.store.latest) = Some(id.clone());
        drop(sweep);
        drop(state);
        self.store.enforce().await;
        Taken::New(id)
    }

    /// Turn `turn_id` is ending: if it took a checkpoint, its state is held
    /// (nothing else of this session's checkpoints runs) until
    /// [`Ending::record`] has recorded what the turn left, which the caller
    /// runs before the turn's terminal event (a client may undo as soon as
    /// it hears it). What changes after the end's instant is listed as
    /// someone else's ([`Checkpoint::late`]).
    pub(crate) async fn turn_ending(&self, turn_id: &str) -> Option<Ending<'_>> {
        let state = self.state.lock().await;
        if state.open_turn.as_deref() != Some(turn_id) {
            return None;
        }
        // Past the clock tick: a change after this has a later ctime.
        let ended = crate::blocking::run(scv_checkpoint::end_of_turn)
            .await
            .unwrap_or_else(|_| std::time::SystemTime::now());
        Some(Ending {
            checkpoints: self,
            state,
            ended,
        })
    }

    /// The session's state, without what the bound evicted.
    async fn state(&self) -> tokio::sync::MutexGuard<'_, State> {
        let mut state = self.state.lock().await;
        self.store.forget_evicted(&self.session_id, &mut state.list);
        state
    }

    /// The checkpoints, oldest first, and the newest turn that changed
    /// files without one (newer than all of them), if any.
    pub(crate) async fn list(
        &self,
    ) -> (Vec<CheckpointInfo>, Option<scv_protocol::MissedCheckpoint>) {
        let state = self.state().await;
        let list = state
            .list
            .iter()
            .map(|c| CheckpointInfo {
                checkpoint_id: c.checkpoint_id.clone(),
                turn_id: c.turn_id.clone(),
                prompt: c.prompt.clone(),
                created_unix_seconds: c.created_unix_seconds,
            })
            .collect();
        (list, state.missed.clone())
    }

    /// Why turn `turn_id` changed files without a checkpoint, if it did
    /// (its journal keeps it, for `/undo` after a resume).
    pub(crate) async fn missed_in(&self, turn_id: &str) -> Option<String> {
        let state = self.state.lock().await;
        state
            .missed
            .as_ref()
            .filter(|m| m.turn_id == turn_id)
            .map(|m| m.message.clone())
    }

    /// A resumed session's journal says turn `missed.turn_id` changed
    /// files without a checkpoint, and `later` are the turns after it:
    /// it is the newest such turn unless a checkpoint of a later turn
    /// exists.
    pub(crate) async fn remember_missed(
        &self,
        missed: scv_protocol::MissedCheckpoint,
        later: &HashSet<&str>,
    ) {
        let mut state = self.state.lock().await;
        if state
            .list
            .iter()
            .any(|c| later.contains(c.turn_id.as_str()))
        {
            return;
        }
        state.missed = Some(missed);
    }

    /// The turn checkpoint `id` was taken before.
    pub(crate) async fn turn_of(&self, id: &str) -> Result<String, Refusal> {
        let state = self.state().await;
        let index = position(&state, id)?;
        Ok(state.list[index].turn_id.clone())
    }

    /// From checkpoint `id` to the workspace now: the paths and a unified
    /// diff (cut at `MAX_CHECKPOINT_DIFF_BYTES`, and whether it was).
    pub(crate) async fn diff(&self, id: &str) -> Result<(Vec<FileChange>, String, bool), Refusal> {
        let mut state = self.state.lock().await;
        // No sweep until the diff has read the fresh snapshot's contents
        // (in no index) and the checkpoint's.
        let _sweep = self.store.sweep.clone().read_owned().await;
        self.store.forget_evicted(&self.session_id, &mut state.list);
        let index = position(&state, id)?;
        let now = self.snapshot(state.last.clone()).await?;
        state.last = Some(now.clone());
        let (store, before) = (self.store.store.clone(), state.list[index].before.clone());
        drop(state);
        crate::blocking::run(move || {
            let then = store.load(&before)?;
            let files = store.changes(&then, &now).iter().map(change).collect();
            let (diff, cut) = store.unified_diff(&then, &now, MAX_CHECKPOINT_DIFF_BYTES)?;
            Ok::<_, CheckpointError>((files, diff, cut))
        })
        .await
        .map_err(store_reject)?
        .map_err(store_reject)
    }

    /// Puts the workspace back as checkpoint `id` found it (`files`), or
    /// only forgets the checkpoints from it on. A path someone other than
    /// the agent changed since is a conflict: nothing changes and the
    /// error lists them, unless `force`. The checkpoint and the later ones
    /// are dropped: what they recorded is undone (or, for the
    /// conversation alone, kept as the agent's own).
    pub(crate) async fn restore(
        &self,
        id: &str,
        files: bool,
        force: bool,
    ) -> Result<Vec<FileChange>, Refusal> {
        let mut state = self.state.lock().await;
        // The fresh snapshot's objects are what a failed restore puts back,
        // and the checkpoints' are what it restores and compares.
        let _sweep = self.store.sweep.clone().read_owned().await;
        self.store.forget_evicted(&self.session_id, &mut state.list);
        let index = position(&state, id)?;
        let now = self.snapshot(state.last.clone()).await?;
        let store = self.store.store.clone();
        let (list, workspace) = (state.list.clone(), self.workspace.clone());
        let restored = crate::blocking::run(move || {
            if files && !force {
                let conflicts = store.conflicts(&list, index, &now).map_err(store_reject)?;
                if !conflicts.is_empty() {
                    let refused = invalid(format!(
                        "{} path(s) changed since the checkpoint by someone other than the agent (force restores anyway): {}",
                        conflicts.len(),
                        conflicts.join(", ")
                    ));
                    return Err(Refusal {
                        conflicts: Some(conflicts.into_boxed_slice()),
                        ..refused
                    });
                }
            }
            if !files {
                return Ok((Vec::new(), now));
            }
            let target = store.load(&list[index].before).map_err(store_reject)?;
            let changed = store
                .restore(&workspace, &target, &now)
                .map_err(restore_reject)?;
            Ok((changed.iter().map(change).collect(), Arc::new(target)))
        })
        .await
        .map_err(store_reject)??;
        let (changed, left) = restored;
        state.list.truncate(index);
        if let Some(last) = state.list.last_mut() {
            if !files {
                // The files stay as the agent left them.
                last.after = Some(left.id.clone());
            }
        }
        state.last = Some(left);
        state.open_turn = None;
        // The turns from the checkpoint's on are undone or dropped.
        state.missed = None;
        self.save(&state).await;
        let newest = state.list.last().map(|c| c.checkpoint_id.clone());
        match newest {
            Some(newest) => self.store.newest().insert(self.session_id.clone(), newest),
            None => self.store.newest().remove(&self.session_id),
        };
        Ok(changed)
    }

    /// A snapshot of the workspace now, reusing `previous`'s hashes.
    async fn snapshot(&self, previous: Option<Arc<Snapshot>>) -> Result<Arc<Snapshot>, Refusal> {
        self.take(previous).await.map_err(store_reject)
    }

    /// [`Checkpoints::snapshot`], the store's error as it is.
    async fn take(
        &self,
        previous: Option<Arc<Snapshot>>,
    ) -> Result<Arc<Snapshot>, CheckpointError> {
        let (store, workspace) = (self.store.store.clone(), self.workspace.clone());
        crate::blocking::run(move || store.snapshot_within(&workspace, previous.as_deref(), LIMITS))
            .await
            .map_err(|err| CheckpointError::Io {
                what: "cannot run",
                path: "the snapshot".into(),
                source: std::io::Error::other(err.to_string()),
            })?
            .map(Arc::new)
    }

    /// Writes the index (a failure is logged: the checkpoints still work
    /// until the daemon stops).
    async fn save(&self, state: &State) {
        let (store, id, list) = (
            self.store.store.clone(),
            self.session_id.to_string(),
            state.list.clone(),
        );
        if let Ok(Err(err)) = crate::blocking::run(move || store.save_index(&id, &list)).await {
            tracing::warn!(
                "checkpoints of session {} not saved: {err}",
                self.session_id
            );
        }
    }
}

/// A turn that took a checkpoint, ended, its after-state still to record
/// ([`Checkpoints::turn_ending`]).
pub(crate) struct Ending<'a> {
    checkpoints: &'a Checkpoints,
    state: tokio::sync::MutexGuard<'a, State>,
    ended: std::time::SystemTime,
}

impl Ending<'_> {
    /// Records what the turn left, so later changes by others can be told
    /// from its own; a turn that changed nothing keeps no checkpoint.
    pub(crate) async fn record(self) {
        let Ending {
            checkpoints: this,
            mut state,
            ended,
        } = self;
        state.open_turn = None;
        let sweep = this.store.sweep.clone().read_owned().await;
        this.store.forget_evicted(&this.session_id, &mut state.list);
        let previous = state.last.clone();
        let (store, workspace) = (this.store.store.clone(), this.workspace.clone());
        let taken = crate::blocking::run(move || {
            store.snapshot_ending(&workspace, previous.as_deref(), LIMITS, ended)
        })
        .await;
        let after = match taken {
            Ok(Ok(after)) => Arc::new(after),
            Ok(Err(err)) => return this.not_recorded(err),
            Err(err) => return this.not_recorded(err),
        };
        let unchanged = state
            .list
            .last()
            .is_some_and(|last| last.before == after.id);
        if unchanged {
            // The turn changed no file (a `bash` that only read): its
            // checkpoint would undo nothing, and `/undo` must reach the
            // last turn that did change files.
            state.list.pop();
            let mut newest = this.store.newest();
            match state.list.last() {
                Some(c) => newest.insert(this.session_id.clone(), c.checkpoint_id.clone()),
                None => newest.remove(&this.session_id),
            };
        } else if let Some(last) = state.list.last_mut() {
            last.after = Some(after.id.clone());
            last.late = after.late.clone();
        }
        state.last = Some(after);
        this.save(&state).await;
        drop(sweep);
        drop(state);
        // What the turn wrote is in the store now too.
        this.store.enforce().await;
    }
}

impl Checkpoints {
    fn not_recorded(&self, err: impl std::fmt::Display) {
        tracing::warn!(
            "session {}: the workspace after the turn was not recorded: {err}",
            self.session_id
        );
    }
}

fn position(state: &State, id: &str) -> Result<usize, Refusal> {
    state
        .list
        .iter()
        .position(|c| c.checkpoint_id == id)
        .ok_or_else(|| invalid(format!("no checkpoint {id} in this session")))
}

fn restore_reject(err: RestoreError) -> Refusal {
    match err {
        RestoreError::NeedsContent(paths) => invalid(format!(
            "the checkpoint recorded only the size of {} (more than {} MiB of content), so it cannot put back: {}",
            if paths.len() == 1 { "this file" } else { "these files" },
            scv_checkpoint::MAX_CONTENT_BYTES >> 20,
            paths.join(", ")
        )),
        RestoreError::Failed { why, rolled_back } => Refusal::new(
            ErrorCode::InternalError,
            if rolled_back {
                format!("the restore failed and what it had changed was put back: {why}")
            } else {
                format!("the restore failed part-way and could not put everything back: {why}")
            },
        ),
        RestoreError::Store(err) => store_reject(err),
    }
}
