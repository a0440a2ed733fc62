//! Making a workspace as a snapshot recorded it, all or nothing.
//!
//! The plan is the difference between `now` (a fresh snapshot of the
//! workspace) and the target, so nothing `now` does not cover (ignored,
//! skipped, or appeared since) is ever replaced or removed. Before any
//! change: files without content refuse the restore, and every blob it
//! will write is read and its hash checked. Then each step works through
//! directory fds opened with `O_NOFOLLOW`, so a link where a directory
//! was is never followed; an entry is replaced or removed only if it is
//! still what `now` says; files are written to a temp name in their
//! directory and renamed (never over something). What is replaced or
//! removed is moved into a trash directory at the workspace root, so a
//! failure part-way puts it back by renaming (inodes, times, even files
//! recorded without content come back as they were); the trash is emptied
//! once every step has succeeded.

use crate::diff::{changes, pair, Change};
use crate::error::{CheckpointError, RestoreError};
use crate::hash::Hash;
use crate::snapshot::join;
use crate::snapshot::Snapshot;
use crate::store::{dir_flags, CheckpointStore, Kind};
use crate::tree::{Entry, Node, Stat, Tree};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use std::fs::File;
use std::io::{Seek, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

/// For tests: make a restore fail after this many steps, to see it put
/// back what it did.
#[doc(hidden)]
#[derive(Clone, Debug, Default)]
pub struct RestoreOptions {
    pub fail_after: Option<usize>,
}

enum Step<'a> {
    /// A file or link of `now` goes (into the trash).
    Remove {
        path: String,
        was: &'a Entry,
    },
    /// A directory of `now` goes if it is empty by then; `must`: something
    /// else takes its place, so it has to.
    RemoveDir {
        path: String,
        mode: u32,
        must: bool,
    },
    MakeDir {
        path: String,
        mode: u32,
    },
    /// A file or link of the target is written, replacing `was`.
    Put {
        path: String,
        entry: &'a Entry,
        was: Option<&'a Entry>,
    },
    /// Same content, other permissions.
    Chmod {
        path: String,
        mode: u32,
        was: &'a Entry,
    },
}

fn plan<'a>(
    prefix: &str,
    now: Option<&'a Tree>,
    target: Option<&'a Tree>,
    out: &mut Vec<Step<'a>>,
) {
    for (name, x, y) in pair(now, target) {
        let path = join(prefix, name);
        match (x, y) {
            (Some(x), Some(y)) => match (&x.node, &y.node) {
                (Node::Dir { tree: tx, .. }, Node::Dir { tree: ty, .. }) => {
                    if !x.same_content(y) {
                        plan(&path, Some(tx), Some(ty), out);
                    }
                }
                (Node::Dir { tree: tx, mode, .. }, _) => {
                    remove_all(&path, tx, *mode, true, out);
                    out.push(Step::Put {
                        path,
                        entry: y,
                        was: None,
                    });
                }
                (_, Node::Dir { tree: ty, mode, .. }) => {
                    out.push(Step::Remove {
                        path: path.clone(),
                        was: x,
                    });
                    create_all(&path, ty, *mode, out);
                }
                (
                    Node::File {
                        hash: Some(a),
                        mode: m,
                        sparse: s,
                    },
                    Node::File {
                        hash: Some(b),
                        mode: n,
                        sparse: t,
                    },
                ) if a == b && s == t && m != n => out.push(Step::Chmod {
                    path,
                    mode: *n,
                    was: x,
                }),
                _ => {
                    if !x.same_content(y) {
                        out.push(Step::Put {
                            path,
                            entry: y,
                            was: Some(x),
                        });
                    }
                }
            },
            (Some(x), None) => match &x.node {
                Node::Dir { tree, mode, .. } => remove_all(&path, tree, *mode, false, out),
                _ => out.push(Step::Remove { path, was: x }),
            },
            (None, Some(y)) => match &y.node {
                Node::Dir { tree, mode, .. } => create_all(&path, tree, *mode, out),
                _ => out.push(Step::Put {
                    path,
                    entry: y,
                    was: None,
                }),
            },
            (None, None) => {}
        }
    }
}

fn remove_all<'a>(path: &str, tree: &'a Tree, mode: u32, must: bool, out: &mut Vec<Step<'a>>) {
    for (name, x, _) in pair(Some(tree), None) {
        let Some(x) = x else { continue };
        let child = join(path, name);
        match &x.node {
            Node::Dir { tree, mode, .. } => remove_all(&child, tree, *mode, false, out),
            _ => out.push(Step::Remove {
                path: child,
                was: x,
            }),
        }
    }
    out.push(Step::RemoveDir {
        path: path.to_string(),
        mode,
        must,
    });
}

fn create_all<'a>(path: &str, tree: &'a Tree, mode: u32, out: &mut Vec<Step<'a>>) {
    out.push(Step::MakeDir {
        path: path.to_string(),
        mode,
    });
    for (name, _, y) in pair(None, Some(tree)) {
        let Some(y) = y else { continue };
        let child = join(path, name);
        match &y.node {
            Node::Dir { tree, mode, .. } => create_all(&child, tree, *mode, out),
            _ => out.push(Step::Put {
                path: child,
                entry: y,
                was: None,
            }),
        }
    }
}

pub(crate) fn restore(
    store: &CheckpointStore,
    workspace: &Path,
    target: &Snapshot,
    now: &Snapshot,
    options: &RestoreOptions,
) -> Result<Vec<Change>, RestoreError> {
    let _lock = store.lock(false)?;
    let mut steps = Vec::new();
    plan("", Some(&now.root), Some(&target.root), &mut steps);
    if steps.is_empty() {
        return Ok(Vec::new());
    }
    // Refused before anything changes: content the store does not have,
    // or has damaged.
    let mut needs = Vec::new();
    for step in &steps {
        if let Step::Put { path, entry, .. } = step {
            if let Node::File { hash: None, .. } = entry.node {
                needs.push(path.clone());
            }
        }
    }
    if !needs.is_empty() {
        return Err(RestoreError::NeedsContent(needs));
    }
    for step in &steps {
        if let Step::Put { entry, .. } = step {
            if let Node::File { hash: Some(h), .. } = &entry.node {
                store.verify_blob(h)?;
            }
        }
    }
    let root = rustix::fs::open(
        workspace,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        RestoreError::Store(CheckpointError::Workspace {
            path: workspace.display().to_string(),
            source: e.into(),
        })
    })?;
    let mut apply = Apply {
        store,
        root,
        stack: Vec::new(),
        trash: None,
        slots: 0,
        undo: Vec::new(),
    };
    for (n, step) in steps.iter().enumerate() {
        let result = if options.fail_after == Some(n) {
            Err(format!("failure injected after {n} steps"))
        } else {
            apply.step(step)
        };
        if let Err(why) = result {
            let rolled_back = apply.rollback();
            return Err(RestoreError::Failed { why, rolled_back });
        }
    }
    apply.empty_trash();
    Ok(changes(&now.root, &target.root))
}

/// What to do to put one step back.
enum Undo {
    /// Rename the trash's `slot` back to `path`.
    Untrash {
        path: String,
        slot: String,
    },
    /// Remove the file or link the restore made.
    Unlink {
        path: String,
    },
    /// Remove the directory the restore made.
    Rmdir {
        path: String,
    },
    /// Make again the directory the restore removed.
    Mkdir {
        path: String,
        mode: u32,
    },
    Chmod {
        path: String,
        mode: u32,
    },
}

struct Apply<'a> {
    store: &'a CheckpointStore,
    root: OwnedFd,
    /// The directories open from the root down to where the last step was
    /// (steps come in walk order, so this is a cursor, not a cache).
    stack: Vec<(String, OwnedFd)>,
    trash: Option<(String, OwnedFd)>,
    slots: usize,
    undo: Vec<Undo>,
}

fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

impl Apply<'_> {
    /// Opens the directories down to `dir` (relative), each without
    /// following a link.
    fn cd(&mut self, dir: &str) -> Result<(), String> {
        let parts: Vec<&str> = if dir.is_empty() {
            Vec::new()
        } else {
            dir.split('/').collect()
        };
        let mut keep = 0;
        while keep < self.stack.len() && keep < parts.len() && self.stack[keep].0 == parts[keep] {
            keep += 1;
        }
        self.stack.truncate(keep);
        for (i, part) in parts.iter().enumerate().skip(keep) {
            let fd = {
                let base = self.here();
                rustix::fs::openat(base, *part, dir_flags(), Mode::empty())
            };
            let fd = fd.map_err(|e| match e {
                Errno::LOOP | Errno::NOTDIR => format!(
                    "{} is not a directory now (a link is never followed)",
                    parts[..=i].join("/")
                ),
                e => format!("cannot open {}: {e}", parts[..=i].join("/")),
            })?;
            self.stack.push((part.to_string(), fd));
        }
        Ok(())
    }

    fn here(&self) -> BorrowedFd<'_> {
        match self.stack.last() {
            Some((_, fd)) => fd.as_fd(),
            None => self.root.as_fd(),
        }
    }

    /// The trash directory at the root, made on first use.
    fn trash(&mut self) -> Result<BorrowedFd<'_>, String> {
        if self.trash.is_none() {
            let mut made = None;
            for _ in 0..16 {
                let name = self.store.temp_name(".scv-restore-");
                match rustix::fs::mkdirat(&self.root, name.as_str(), Mode::from_raw_mode(0o700)) {
                    Ok(()) => {
                        made = Some(name);
                        break;
                    }
                    Err(Errno::EXIST) => continue,
                    Err(e) => return Err(format!("cannot make a trash directory: {e}")),
                }
            }
            let name = made.ok_or("cannot name a trash directory")?;
            let fd = rustix::fs::openat(&self.root, name.as_str(), dir_flags(), Mode::empty())
                .map_err(|e| format!("cannot open the trash directory: {e}"))?;
            self.trash = Some((name, fd));
        }
        match &self.trash {
            Some((_, fd)) => Ok(fd.as_fd()),
            None => Err("no trash directory".into()),
        }
    }

    /// Moves `name` (in the current directory) into the trash.
    fn move_to_trash(&mut self, path: &str, name: &str) -> Result<String, String> {
        let slot = self.slots.to_string();
        self.slots += 1;
        self.trash()?;
        let (Some((_, trash)), here) = (&self.trash, self.here()) else {
            return Err("no trash directory".into());
        };
        rustix::fs::renameat(here, name, trash, slot.as_str()).map_err(|e| match e {
            Errno::XDEV => format!(
                "{path} is on another file system than the workspace root; it cannot be replaced safely"
            ),
            e => format!("cannot move {path} aside: {e}"),
        })?;
        Ok(slot)
    }

    /// Whether `name` is still what `now` recorded: kind, and for a file
    /// size, mtime, inode, device and mode. Not ctime: putting a file back
    /// from the trash (a rename) changes it, and a failed restore must
    /// leave `now` still true of the workspace.
    fn unchanged(&self, path: &str, name: &str, was: &Entry) -> Result<(), String> {
        let here = self.here();
        let changed = || format!("{path} changed after the snapshot of the workspace was taken");
        let st =
            rustix::fs::statat(here, name, AtFlags::SYMLINK_NOFOLLOW).map_err(|e| match e {
                Errno::NOENT => changed(),
                e => format!("cannot inspect {path}: {e}"),
            })?;
        let kind = FileType::from_raw_mode(st.st_mode);
        let same = match &was.node {
            Node::File { mode, .. } => {
                let now = Stat::of(&st);
                kind == FileType::RegularFile
                    && st.st_mode & 0o777 == *mode
                    && Stat {
                        ctime_ns: was.stat.ctime_ns,
                        ..now
                    } == was.stat
            }
            Node::Link { target } => {
                kind == FileType::Symlink
                    && rustix::fs::readlinkat(here, name, Vec::new())
                        .is_ok_and(|t| t.as_bytes() == target.as_bytes())
            }
            Node::Dir { .. } => kind == FileType::Directory,
            Node::Skipped { .. } => false,
        };
        if same {
            Ok(())
        } else {
            Err(changed())
        }
    }

    fn step(&mut self, step: &Step<'_>) -> Result<(), String> {
        match step {
            Step::Remove { path, was } => {
                let (dir, name) = split(path);
                self.cd(dir)?;
                self.unchanged(path, name, was)?;
                let slot = self.move_to_trash(path, name)?;
                self.undo.push(Undo::Untrash {
                    path: path.clone(),
                    slot,
                });
            }
            Step::RemoveDir { path, mode, must } => {
                let (dir, name) = split(path);
                self.cd(dir)?;
                match rustix::fs::unlinkat(self.here(), name, AtFlags::REMOVEDIR) {
                    Ok(()) => self.undo.push(Undo::Mkdir {
                        path: path.clone(),
                        mode: *mode,
                    }),
                    // Holds what the snapshot does not cover (ignored,
                    // skipped): it stays.
                    Err(Errno::NOTEMPTY) | Err(Errno::EXIST) if !must => {}
                    Err(Errno::NOTEMPTY) | Err(Errno::EXIST) => {
                        return Err(format!(
                            "{path} holds files the snapshot does not cover (ignored or new), so it cannot be replaced"
                        ))
                    }
                    Err(Errno::NOTDIR) => {
                        return Err(format!(
                            "{path} changed after the snapshot of the workspace was taken"
                        ))
                    }
                    Err(e) => return Err(format!("cannot remove {path}: {e}")),
                }
            }
            Step::MakeDir { path, mode } => {
                let (dir, name) = split(path);
                self.cd(dir)?;
                match make_dir(self.here(), name, *mode) {
                    Ok(()) => self.undo.push(Undo::Rmdir { path: path.clone() }),
                    Err(Errno::EXIST) => {
                        // Already there and not covered (ignored contents,
                        // say): used as it is, left as it is.
                        let st = rustix::fs::statat(self.here(), name, AtFlags::SYMLINK_NOFOLLOW)
                            .map_err(|e| format!("cannot inspect {path}: {e}"))?;
                        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
                            return Err(in_the_way(path));
                        }
                    }
                    Err(e) => return Err(format!("cannot make the directory {path}: {e}")),
                }
            }
            Step::Put { path, entry, was } => {
                let (dir, name) = split(path);
                self.cd(dir)?;
                let temp = self.store.temp_name(".scv-restore-");
                self.write_temp(path, &temp, entry)?;
                let placed = (|| {
                    if let Some(was) = was {
                        self.unchanged(path, name, was)?;
                        let slot = self.move_to_trash(path, name)?;
                        self.undo.push(Undo::Untrash {
                            path: path.clone(),
                            slot,
                        });
                    }
                    rename_new(self.here(), &temp, name).map_err(|e| match e {
                        Errno::EXIST => in_the_way(path),
                        e => format!("cannot write {path}: {e}"),
                    })
                })();
                if let Err(why) = placed {
                    let _ = rustix::fs::unlinkat(self.here(), temp.as_str(), AtFlags::empty());
                    return Err(why);
                }
                self.undo.push(Undo::Unlink { path: path.clone() });
            }
            Step::Chmod { path, mode, was } => {
                let (dir, name) = split(path);
                self.cd(dir)?;
                let old = match &was.node {
                    Node::File { mode, .. } => *mode,
                    _ => 0o644,
                };
                chmod(self.here(), name, *mode, Some(&was.stat))
                    .map_err(|why| format!("{path}: {why}"))?;
                self.undo.push(Undo::Chmod {
                    path: path.clone(),
                    mode: old,
                });
            }
        }
        Ok(())
    }

    /// A file (from its verified blob) or a link under a temp name in the
    /// current directory.
    fn write_temp(&mut self, path: &str, temp: &str, entry: &Entry) -> Result<(), String> {
        let here = self.here();
        match &entry.node {
            Node::Link { target } => rustix::fs::symlinkat(target.as_str(), here, temp)
                .map_err(|e| format!("cannot make the link {path}: {e}")),
            Node::File {
                hash: Some(hash),
                mode,
                sparse,
            } => {
                let fd = rustix::fs::openat(
                    here,
                    temp,
                    OFlags::CREATE
                        | OFlags::EXCL
                        | OFlags::WRONLY
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o600),
                )
                .map_err(|e| format!("cannot write {path}: {e}"))?;
                let mut file = File::from(fd);
                let copied = if *sparse {
                    self.store
                        .open_object(Kind::Blob, hash)
                        .map_err(|e| e.to_string())
                        .and_then(|blob| crate::sparse::decode(blob, hash, &file))
                } else {
                    copy_blob(self.store, hash, &mut file)
                };
                let written = copied.and_then(|()| {
                    rustix::fs::fchmod(&file, Mode::from_raw_mode(*mode))
                        .map_err(|e| format!("cannot set its mode: {e}"))
                });
                if let Err(why) = written {
                    drop(file);
                    let _ = rustix::fs::unlinkat(here, temp, AtFlags::empty());
                    return Err(format!("cannot write {path}: {why}"));
                }
                Ok(())
            }
            _ => Err(format!("{path} has no content to write")),
        }
    }

    /// Puts back every step done, last first. Whether all went back.
    fn rollback(&mut self) -> bool {
        let mut ok = true;
        while let Some(undo) = self.undo.pop() {
            let done = match &undo {
                Undo::Untrash { path, slot } => {
                    let (dir, name) = split(path);
                    self.cd(dir).is_ok()
                        && match &self.trash {
                            Some((_, trash)) => {
                                rename_new_from(trash.as_fd(), slot, self.here(), name).is_ok()
                            }
                            None => false,
                        }
                }
                Undo::Unlink { path } => {
                    let (dir, name) = split(path);
                    self.cd(dir).is_ok()
                        && rustix::fs::unlinkat(self.here(), name, AtFlags::empty()).is_ok()
                }
                Undo::Rmdir { path } => {
                    let (dir, name) = split(path);
                    self.cd(dir).is_ok()
                        && rustix::fs::unlinkat(self.here(), name, AtFlags::REMOVEDIR).is_ok()
                }
                Undo::Mkdir { path, mode } => {
                    let (dir, name) = split(path);
                    self.cd(dir).is_ok() && make_dir(self.here(), name, *mode).is_ok()
                }
                Undo::Chmod { path, mode } => {
                    let (dir, name) = split(path);
                    self.cd(dir).is_ok() && chmod(self.here(), name, *mode, None).is_ok()
                }
            };
            ok &= done;
        }
        if ok {
            self.remove_trash();
        }
        ok
    }

    fn empty_trash(&mut self) {
        if let Some((_, trash)) = &self.trash {
            for n in 0..self.slots {
                let _ = rustix::fs::unlinkat(trash, n.to_string().as_str(), AtFlags::empty());
            }
        }
        self.remove_trash();
    }

    fn remove_trash(&mut self) {
        if let Some((name, _)) = self.trash.take() {
            let _ = rustix::fs::unlinkat(&self.root, name.as_str(), AtFlags::REMOVEDIR);
        }
    }
}

fn in_the_way(path: &str) -> String {
    format!("{path}: something the snapshot does not cover (ignored, or new) is in the way")
}

/// mkdir, then the mode set exactly (mkdir's is masked by the umask).
fn make_dir(dir: BorrowedFd<'_>, name: &str, mode: u32) -> Result<(), Errno> {
    rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o700))?;
    if let Ok(fd) = rustix::fs::openat(dir, name, dir_flags(), Mode::empty()) {
        let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode));
    }
    Ok(())
}

/// Sets a file's mode through an fd opened without following a link or
/// blocking, after checking it is (still) the regular file `was`.
fn chmod(dir: BorrowedFd<'_>, name: &str, mode: u32, was: Option<&Stat>) -> Result<(), String> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| format!("cannot open: {e}"))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| format!("cannot inspect: {e}"))?;
    let same = |w: &Stat| {
        Stat {
            ctime_ns: w.ctime_ns,
            ..Stat::of(&st)
        } == *w
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || was.is_some_and(|w| !same(w))
    {
        return Err("changed after the snapshot of the workspace was taken".into());
    }
    rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))
        .map_err(|e| format!("cannot set its mode: {e}"))
}

/// Renames `from` to `to` in one directory, never over something.
fn rename_new(dir: BorrowedFd<'_>, from: &str, to: &str) -> Result<(), Errno> {
    rename_new_from(dir, from, dir, to)
}

fn rename_new_from(
    from_dir: BorrowedFd<'_>,
    from: &str,
    to_dir: BorrowedFd<'_>,
    to: &str,
) -> Result<(), Errno> {
    match rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE) {
        // A file system without RENAME_NOREPLACE: check, then rename.
        Err(Errno::INVAL) | Err(Errno::NOSYS) => {
            match rustix::fs::statat(to_dir, to, AtFlags::SYMLINK_NOFOLLOW) {
                Err(Errno::NOENT) => rustix::fs::renameat(from_dir, from, to_dir, to),
                Ok(_) => Err(Errno::EXIST),
                Err(e) => Err(e),
            }
        }
        other => other,
    }
}

/// Copies a blob into `out` (decompressed), checking its hash on the way
/// (it was checked before the restore began; this catches a change since).
fn copy_blob(store: &CheckpointStore, hash: &Hash, out: &mut File) -> Result<(), String> {
    let mut blob = store
        .open_object(Kind::Blob, hash)
        .map_err(|e| e.to_string())?;
    let out = std::cell::RefCell::new(out);
    let whole = crate::blob::read_into(
        &mut blob,
        hash,
        u64::MAX,
        &mut |b| out.borrow_mut().write_all(b).map_err(|e| e.to_string()),
        &mut || {
            let mut out = out.borrow_mut();
            out.set_len(0)
                .and_then(|()| out.seek(std::io::SeekFrom::Start(0)).map(|_| ()))
                .map_err(|e| e.to_string())
        },
    )?;
    if !whole {
        return Err("the stored content changed during the restore".into());
    }
    Ok(())
}
