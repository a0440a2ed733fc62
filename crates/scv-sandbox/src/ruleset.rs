//! The Landlock ruleset of a [`Policy`]: on the made-up machine
//! ([`for_machine`]) a handful of rules, the machine itself holding only
//! what may be read; without a mount namespace ([`build`], the fallback)
//! "everything but these trees", cut out of the host as below.
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
//!
//! The user's home is cut out whole: only its toolchains and caches
//! (`policy.readable`) and the writable roots inside it get rules, so the
//! contents of the rest cannot be read (its names can: `ReadDir` on the
//! directories above it reaches down).

use crate::paths::canonical;
use crate::policy::Policy;
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

/// Device files a command may read, write and drive; the rest of `/dev`
/// is out of reach (its names stay listable). No terminal: a command has no
/// controlling terminal (it runs in a session of its own) and may open
/// neither `/dev/tty` nor another terminal (`/dev/pts/N`, `/dev/ptmx`, the
/// consoles), so it can neither type into the user's shell nor read what is
/// typed elsewhere; nor `/dev/input` (keyboards).
pub(crate) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Compute devices (GPUs) by name prefix in `/dev`, for test suites that
/// use them.
pub(crate) const GPU_DEVICES: &[&str] = &["nvidia", "dri", "kfd"];

/// Whether this kernel's Landlock rules `connect()` on pathname Unix
/// sockets (`ResolveUnix`, ABI 9).
pub(crate) fn rules_unix_sockets() -> bool {
    kernel_abi() >= 9
}

/// The kernel's Landlock ABI version (0 without Landlock).
pub(crate) fn kernel_abi() -> i64 {
    const VERSION: libc::c_uint = 1; // LANDLOCK_CREATE_RULESET_VERSION
                                     // SAFETY: asks for the version only; no pointer is read.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            VERSION,
        )
    };
    abi.max(0)
}

/// Builds the ruleset; `private_tmp` is the command's own temp directory.
pub(crate) fn build(
    policy: &Policy,
    private_tmp: Option<&Path>,
) -> Result<RulesetCreated, crate::Error> {
    let unix = rules_unix_sockets();
    let handled = handled_access(unix);
    let all = AccessFs::from_all(TARGET);
    let read = AccessFs::from_read(TARGET);
    let mut denied: Vec<PathBuf> = policy.denied.iter().map(|p| canonical(p)).collect();
    let home = policy.home.as_deref().map(canonical);
    if let Some(home) = &home {
        for name in crate::credentials::MASKED
            .iter()
            .chain(crate::credentials::FILTERED)
        {
            denied.extend(crate::credentials::expand(&home.join(name)));
        }
    }
    for pattern in crate::credentials::MASKED_SYSTEM {
        denied.extend(crate::credentials::expand(Path::new(pattern)));
    }
    let mut rules = Rules::default();
    // The home is cut out of the read grant whole: nothing in it is
    // readable (not even its names) but what is granted below. So are the
    // shared temp directories (another program's files, a Kerberos ticket
    // cache): a command gets its session's own.
    let mut cut = denied.clone();
    cut.extend(home.iter().cloned());
    cut.push(PathBuf::from("/dev"));
    cut.extend(policy.temp_dirs.iter().map(|p| canonical(p)));
    if let Some(session) = &policy.session_dir {
        cut.push(canonical(session));
    }
    rules.grant(Path::new("/"), read, &cut)?;
    // Any other grant above the home (a repository whose tree holds the
    // home, as a dotfiles repository does; a workspace of `/home`) cuts the
    // home out too: inside it only its own grants count.
    let mut home_cut = denied.clone();
    home_cut.extend(home.iter().cloned());
    let cut_for = |root: &Path| match &home {
        Some(home) if home.starts_with(root) && home != root => &home_cut,
        _ => &denied,
    };
    for path in &policy.readable() {
        let path = canonical(path);
        rules.grant(&path, read, cut_for(&path))?;
    }
    for root in policy.writable(private_tmp) {
        rules.grant(&root, all, cut_for(&root))?;
    }
    create(rules, policy, handled, unix)
}

/// The ruleset of a command on the made-up machine (`machine`), with the
/// rules that name host trees: writing the writable roots and the
/// session's temp directories, the devices, the listed Unix sockets. The
/// child adds reading `/` (the machine holds nothing else) and writing its
/// tmpfs home once they exist ([`Rights`]).
pub(crate) fn for_machine(policy: &Policy) -> Result<(RulesetCreated, Rights), crate::Error> {
    let unix = rules_unix_sockets();
    let handled = handled_access(unix);
    let all = AccessFs::from_all(TARGET);
    let mut rules = Rules::default();
    for root in policy.writable(None) {
        rules.add_existing(&root, all)?;
    }
    let created = create(rules, policy, handled, unix)?;
    let rights = Rights {
        read: (AccessFs::from_read(TARGET) & handled).bits(),
        all: (all & handled).bits(),
    };
    Ok((created, rights))
}

/// The access a ruleset handles: ABI 9's where the kernel rules Unix
/// sockets (`unix`), else the target ABI's.
fn handled_access(unix: bool) -> BitFlags<AccessFs> {
    if unix {
        AccessFs::from_all(ABI::V9)
    } else {
        AccessFs::from_all(TARGET)
    }
}

/// `rules` with what every command's ruleset has (the listed Unix
/// sockets where the kernel rules them, the devices), created: `handled`
/// access, scoped, and no TCP where the policy refuses IP.
fn create(
    mut rules: Rules,
    policy: &Policy,
    handled: BitFlags<AccessFs>,
    unix: bool,
) -> Result<RulesetCreated, crate::Error> {
    if unix {
        for socket in &policy.unix_sockets {
            rules.add_existing(&canonical(socket), AccessFs::ResolveUnix.into())?;
        }
    }
    add_devices(&mut rules)?;
    let mut ruleset = Ruleset::default()
        .handle_access(handled)?
        .scope(Scope::from_all(TARGET))?;
    if policy.refuses_ip() {
        // No TCP bind or connect either (Linux 6.7); seccomp does the rest.
        ruleset = ruleset.handle_access(AccessNet::from_all(TARGET))?;
    }
    let created = ruleset
        .create()?
        .add_rules(rules.into_rules(handled).map(Ok::<_, RulesetError>))?;
    Ok(created)
}

/// Rights as the kernel's bit sets, for the rules the child adds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rights {
    pub read: u64,
    pub all: u64,
}

/// Reading, writing and driving the allowed device files.
fn add_devices(rules: &mut Rules) -> Result<(), crate::Error> {
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    for path in DEVICES {
        rules.add_existing(Path::new(path), device)?;
    }
    for entry in std::fs::read_dir("/dev").into_iter().flatten().flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if GPU_DEVICES.iter().any(|prefix| name.starts_with(prefix)) {
            rules.add_existing(&entry.path(), device | AccessFs::ReadDir)?;
        }
    }
    Ok(())
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

    fn into_rules(self, handled: BitFlags<AccessFs>) -> impl Iterator<Item = PathBeneath<OwnedFd>> {
        let file_rights = AccessFs::from_file(ABI::V9) & handled;
        self.by_path.into_values().filter_map(move |rule| {
            // Directory rights on a file would degrade the whole ruleset.
            let access = if rule.dir {
                rule.access & handled
            } else {
                rule.access & file_rights
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
