//! The Landlock ruleset of a [`Policy`].
//!
//! Landlock only grants, and a grant covers everything below a directory,
//! so "read everything except these trees" is built from grants on the
//! siblings along each path to a denied tree: every directory on the way
//! gets `ReadDir` only (names stay listable), every other entry beside it
//! gets the grant, and the denied tree none. Entries are opened relative to
//! their directory without following links, and links get no rule (what a
//! link points to is governed where it lives), so a link `~/x -> ~/.ssh`
//! grants nothing. The same cut is made in a writable root that holds a
//! denied tree (a temp directory holding `$SCV_HOME`).

use crate::policy::{Mode, Policy};
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, PathBeneath, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, RulesetError, Scope, ABI,
};
use rustix::fs::{FileType, Mode as FileMode, OFlags};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// The rights asked for; on an older kernel the ones it lacks are dropped
/// (the probe has checked the ones the promise needs are there).
const TARGET: ABI = ABI::V7;

/// Device files a command may read, write and drive (terminal ioctls).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
];

/// Builds the ruleset; `private_tmp` is the command's own temp directory.
pub(crate) fn build(
    policy: &Policy,
    private_tmp: Option<&Path>,
) -> Result<RulesetCreated, crate::Error> {
    let all = AccessFs::from_all(TARGET);
    let read = AccessFs::from_read(TARGET);
    let denied: Vec<PathBuf> = policy.denied.iter().map(|p| canonical(p)).collect();
    let mut rules = Rules::default();
    rules.grant(Path::new("/"), read, &denied)?;

    let mut writable: Vec<PathBuf> = Vec::new();
    if policy.mode == Mode::WorkspaceWrite {
        writable.push(policy.workspace.clone());
        writable.extend(policy.temp_dirs.iter().cloned());
        writable.extend(policy.writable_roots.iter().cloned());
        writable.push(PathBuf::from("/dev/shm"));
    }
    writable.extend(private_tmp.map(Path::to_path_buf));
    let mut seen = Vec::new();
    for root in writable {
        let root = canonical(&root);
        if !seen.contains(&root) {
            rules.grant(&root, all, &denied)?;
            seen.push(root);
        }
    }

    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    for path in DEVICES {
        rules.add_existing(Path::new(path), device)?;
    }
    rules.add_existing(Path::new("/dev/pts"), device | AccessFs::ReadDir)?;

    let mut ruleset = Ruleset::default()
        .handle_access(all)?
        .scope(Scope::from_all(TARGET))?;
    if !policy.network {
        // No TCP bind or connect either (Linux 6.7); seccomp does the rest.
        ruleset = ruleset.handle_access(AccessNet::from_all(TARGET))?;
    }
    let created = ruleset
        .create()?
        .add_rules(rules.into_rules().map(Ok::<_, RulesetError>))?;
    Ok(created)
}

/// `path` with links resolved; for a path that does not exist yet, its
/// deepest existing ancestor resolved and the rest appended (so a missing
/// `~/.aws` stays denied if it is created later).
pub(crate) fn canonical(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => canonical(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// The rules by path, so a path reached twice (a temp directory cut for
/// reading and again for writing) is opened once and gets one rule with
/// the union of its rights.
#[derive(Default)]
struct Rules {
    by_path: HashMap<PathBuf, Rule>,
}

struct Rule {
    fd: OwnedFd,
    dir: bool,
    access: BitFlags<AccessFs>,
}

impl Rules {
    /// Grants `access` on `root` and below, except the `denied` trees.
    fn grant(
        &mut self,
        root: &Path,
        access: BitFlags<AccessFs>,
        denied: &[PathBuf],
    ) -> Result<(), crate::Error> {
        if !self.by_path.contains_key(root) {
            let Some((fd, kind)) = open(root)? else {
                return Ok(());
            };
            if kind == FileType::Symlink {
                return Ok(());
            }
            let dir = kind == FileType::Directory;
            self.insert(root.to_path_buf(), fd, dir);
        }
        let inside: Vec<&PathBuf> = denied
            .iter()
            .filter(|d| d.starts_with(root) && d.as_path() != root)
            .collect();
        let Some(rule) = self.by_path.get_mut(root) else {
            return Ok(());
        };
        if inside.is_empty() || !rule.dir {
            rule.access |= access;
            return Ok(());
        }
        // On the way to a denied tree: names stay listable, every other
        // entry gets the grant.
        rule.access |= access & AccessFs::ReadDir;
        let entries = std::fs::read_dir(root)
            .map_err(|e| crate::Error::io(format!("cannot list {}", root.display()), e))?;
        let mut on_the_way = Vec::new();
        let mut opened = Vec::new();
        let Some(Rule { fd: dir_fd, .. }) = self.by_path.get(root) else {
            return Ok(());
        };
        for entry in entries.flatten() {
            let child = root.join(entry.file_name());
            if denied.contains(&child) {
                continue;
            }
            if inside.iter().any(|d| d.starts_with(&child)) {
                // A directory (never a link: denied paths are resolved).
                on_the_way.push(child);
                continue;
            }
            if self.by_path.contains_key(&child) {
                opened.push((child, None));
                continue;
            }
            // What a link points to is governed where it lives: no rule.
            let dir = match entry.file_type() {
                Ok(kind) if kind.is_symlink() => continue,
                Ok(kind) => kind.is_dir(),
                Err(_) => continue,
            };
            let fd = rustix::fs::openat(
                dir_fd,
                entry.file_name(),
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                FileMode::empty(),
            );
            match fd {
                Ok(fd) => opened.push((child, Some((fd, dir)))),
                // Gone meanwhile, or not ours to see.
                Err(_) => continue,
            }
        }
        for (child, fresh) in opened {
            if let Some((fd, dir)) = fresh {
                self.insert(child.clone(), fd, dir);
            }
            if let Some(rule) = self.by_path.get_mut(&child) {
                rule.access |= access;
            }
        }
        for child in on_the_way {
            self.grant(&child, access, denied)?;
        }
        Ok(())
    }

    /// A rule on `path` if it exists.
    fn add_existing(
        &mut self,
        path: &Path,
        access: BitFlags<AccessFs>,
    ) -> Result<(), crate::Error> {
        if !self.by_path.contains_key(path) {
            let Some((fd, kind)) = open(path)? else {
                return Ok(());
            };
            self.insert(path.to_path_buf(), fd, kind == FileType::Directory);
        }
        if let Some(rule) = self.by_path.get_mut(path) {
            rule.access |= access;
        }
        Ok(())
    }

    fn insert(&mut self, path: PathBuf, fd: OwnedFd, dir: bool) {
        self.by_path.insert(
            path,
            Rule {
                fd,
                dir,
                access: BitFlags::empty(),
            },
        );
    }

    fn into_rules(self) -> impl Iterator<Item = PathBeneath<OwnedFd>> {
        self.by_path.into_values().filter_map(|rule| {
            // Directory rights on a file would degrade the whole ruleset.
            let access = if rule.dir {
                rule.access
            } else {
                rule.access & AccessFs::from_file(TARGET)
            };
            (!access.is_empty()).then(|| PathBeneath::new(rule.fd, access))
        })
    }
}

/// Opens an absolute `path` as a handle only (`O_PATH`, following links):
/// `None` if it does not exist.
fn open(path: &Path) -> Result<Option<(OwnedFd, FileType)>, crate::Error> {
    let fd = match rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, FileMode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::ACCESS | rustix::io::Errno::NOTDIR) => {
            return Ok(None)
        }
        Err(err) => {
            return Err(crate::Error::io(
                format!("cannot open {}", path.display()),
                err.into(),
            ))
        }
    };
    let stat = rustix::fs::fstat(&fd)
        .map_err(|e| crate::Error::io(format!("cannot stat {}", path.display()), e.into()))?;
    Ok(Some((fd, FileType::from_raw_mode(stat.st_mode))))
}
