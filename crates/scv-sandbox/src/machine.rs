//! The made-up machine a sandboxed command sees: a root built up from an
//! empty tmpfs, with only what the policy lists bound into it.
//!
//! - The system's software, read-only: `/usr`, `/bin`, `/lib*`, `/etc`,
//!   `/opt`, `/nix`, … ([`SYSTEM`]), with the host's secrets under `/etc`
//!   shown empty (`credentials::MASKED_SYSTEM`). `/proc` and `/sys`
//!   (read-only) as they are; a `/dev` of its own holding `null`, `zero`,
//!   `full`, `random`, `urandom` (and GPUs), no terminal.
//! - A home that is an empty tmpfs (writable, gone when the call ends) with
//!   only the toolchain and cache trees of the allow-list bound into it,
//!   read-only; credential files inside them shown empty and configuration
//!   files shown with their credential lines taken out (`credentials`).
//!   Nothing else of the home exists, not even its names.
//! - The session's own `/tmp`, `/var/tmp` and `/dev/shm` (kept between the
//!   calls of a session, so builds sharing `/tmp` keep working; never the
//!   shared ones another user or program writes).
//! - The workspace (writable in `workspace-write`), the repository around
//!   it, `sandbox_writable_roots` and `sandbox_readable_roots`; every git
//!   directory under a writable root read-only (`policy::Policy::git`).
//!
//! Everything is planned before `fork` ([`Machine::plan`]); the child runs
//! only system calls ([`Machine::apply`]): it enters a user and mount
//! namespace, clones each source tree (`open_tree`, so every source is
//! taken before anything is hidden), mounts a tmpfs on `/tmp` as the new
//! root, builds the skeleton, attaches the clones (`move_mount`), masks,
//! makes the root read-only and pivots into it. The old root is detached,
//! so nothing that was not placed can be reached by any path.

use crate::credentials;
use crate::policy::{Mode, Policy};
use crate::ruleset::{DEVICES, GPU_DEVICES};
use crate::sys;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// The system's software, shown read-only where it exists. A top-level
/// link (`/bin -> usr/bin` on merged systems) is made as the same link.
pub const SYSTEM: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix",
    "/snap",
    "/gnu",
    "/var/cache",
    "/var/lib/dpkg",
    "/var/lib/apt",
    "/var/lib/rpm",
    "/var/lib/alternatives",
    "/var/lib/dbus",
    "/var/run",
    "/var/lock",
];

/// The scratch home's size: what a session's commands write in their home
/// (a history file, a tool's settings) lives in memory until the session
/// ends.
pub(crate) const HOME_BYTES: u64 = 256 << 20;
/// The root, `/dev`, fresh temp directories: folders and links only.
const SMALL: u64 = 1 << 20;
/// The scratch the filtered configuration files are written to.
const SCRATCH_BYTES: u64 = 16 << 20;

fn tmpfs_options(size: u64) -> CString {
    CString::new(format!("mode=0755,size={size}")).unwrap_or_else(|_| c"mode=0755".to_owned())
}

/// Where the new root is built, inside the command's own namespace (the
/// host's `/tmp` is never seen again once the root is pivoted).
const STAGE: &str = "/tmp";

/// How one source tree is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    ReadOnly,
    Writable,
    /// As it is on the host (`/proc`).
    AsIs,
}

/// One thing placed in the new root, at a path of the command's view.
#[derive(Debug)]
enum Place {
    /// A host tree or file bound at `at`.
    Bind {
        source: PathBuf,
        access: Access,
        /// A missing source is skipped (it may vanish before the fork).
        optional: bool,
        /// A folder of the session's own: mount points below it may be
        /// made in it (a workspace under `/tmp`).
        own: bool,
    },
    /// A fresh tmpfs (the home, `/dev`), of at most this many bytes.
    Tmpfs(u64),
    /// A link, as on the host.
    Link(PathBuf),
    /// An empty read-only file or folder over what is there.
    Mask { dir: bool },
    /// A file with these contents (a configuration file, filtered).
    Contents(Vec<u8>),
}

/// What is below a placed path: a tmpfs of the machine's, a host tree,
/// or a host folder of the session's own (its temp directories), where a
/// missing mount point may be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Ours,
    Host,
    Own,
}

/// One step of the child's work.
#[derive(Debug)]
enum Op {
    Clone {
        slot: usize,
        source: CString,
        access: Access,
        optional: bool,
    },
    Mkdir(CString),
    Touch(CString),
    Link {
        target: CString,
        link: CString,
    },
    Tmpfs {
        target: CString,
        read_only: bool,
        /// `mount(2)`'s data: `mode=…,size=…`.
        options: CString,
    },
    Attach {
        slot: usize,
        target: CString,
    },
    Write {
        path: CString,
        bytes: Vec<u8>,
    },
    Bind {
        source: CString,
        target: CString,
    },
    ReadOnly(CString),
    Detach(CString),
    Rmdir(CString),
}

/// The machine of one call, ready for [`Machine::apply`] in its child.
pub(crate) struct Machine {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    ops: Vec<Op>,
    /// The clones' descriptors, by slot (filled in the child).
    slots: Vec<RawFd>,
    stage: CString,
    cwd: CString,
    /// The tmpfs folders the command may write (its home, and fresh temp
    /// directories when the session has none), as it sees them: they get
    /// their Landlock rules in the child, once they exist.
    pub(crate) writable_tmpfs: Vec<CString>,
    /// The step [`Machine::apply`] failed at, for the error to name.
    pub(crate) failed_at: Option<usize>,
    /// A path to mask went between the plan and the build: nothing of it
    /// is shown now, but a machine that lasts must be built again before
    /// it is used (the path could come back unmasked).
    pub(crate) gone: bool,
    /// A network namespace of its own too, holding only loopback
    /// (`sandbox_network = "allowlist"`, `egress`).
    own_network: bool,
}

/// A host path bound read-only where it is (and skipped when missing).
fn ro(source: &Path) -> Place {
    Place::Bind {
        source: source.to_path_buf(),
        access: Access::ReadOnly,
        optional: true,
        own: false,
    }
}

/// The system's trees, `/proc`, `/sys`, and a `/dev` of its own.
fn system_places(places: &mut BTreeMap<PathBuf, Place>) {
    for path in SYSTEM {
        add_host_path(places, Path::new(path));
    }
    // /etc/resolv.conf often leads into /run.
    if let Ok(target) = std::fs::canonicalize("/etc/resolv.conf") {
        if !target.starts_with("/etc") {
            places.insert(target.clone(), ro(&target));
        }
    }
    places.insert(
        PathBuf::from("/proc"),
        Place::Bind {
            source: PathBuf::from("/proc"),
            access: Access::AsIs,
            optional: false,
            own: false,
        },
    );
    places.insert(PathBuf::from("/sys"), ro(Path::new("/sys")));
    // A /dev of its own.
    places.insert(PathBuf::from("/dev"), Place::Tmpfs(SMALL));
    for device in DEVICES {
        places.insert(
            PathBuf::from(device),
            Place::Bind {
                source: PathBuf::from(device),
                access: Access::AsIs,
                optional: true,
                own: false,
            },
        );
    }
    for entry in std::fs::read_dir("/dev").into_iter().flatten().flatten() {
        let name = entry.file_name();
        if GPU_DEVICES
            .iter()
            .any(|prefix| name.to_string_lossy().starts_with(prefix))
        {
            places.insert(
                entry.path(),
                Place::Bind {
                    source: entry.path(),
                    access: Access::AsIs,
                    optional: true,
                    own: false,
                },
            );
        }
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        places.insert(
            Path::new("/dev").join(name),
            Place::Link(PathBuf::from(target)),
        );
    }
}

/// `/tmp`, `/var/tmp` and `/dev/shm`: the session's, or fresh ones.
fn temp_places(places: &mut BTreeMap<PathBuf, Place>, policy: &Policy) {
    let writable_tmp = |dir: &Path| Place::Bind {
        source: dir.to_path_buf(),
        access: Access::Writable,
        optional: false,
        own: true,
    };
    match &policy.session_dir {
        Some(session) => {
            places.insert(PathBuf::from("/tmp"), writable_tmp(&session.join("tmp")));
            places.insert(
                PathBuf::from("/var/tmp"),
                writable_tmp(&session.join("tmp")),
            );
            places.insert(
                PathBuf::from("/dev/shm"),
                writable_tmp(&session.join("shm")),
            );
        }
        None => {
            places.insert(PathBuf::from("/tmp"), Place::Tmpfs(HOME_BYTES));
            places.insert(PathBuf::from("/var/tmp"), Place::Tmpfs(HOME_BYTES));
            places.insert(PathBuf::from("/dev/shm"), Place::Tmpfs(HOME_BYTES));
        }
    }
}

/// The home (an empty tmpfs with the allow-listed trees in it), and the
/// credentials masked or filtered there and on the system.
fn home_places(places: &mut BTreeMap<PathBuf, Place>, policy: &Policy, home: Option<&Path>) {
    if let Some(home) = home {
        places.insert(home.to_path_buf(), Place::Tmpfs(HOME_BYTES));
        for tree in policy.home_trees() {
            places.insert(tree.clone(), ro(&tree));
        }
        // A link (a dotfiles manager's) is masked where it leads; one
        // that leads nowhere shows nothing anyway.
        for name in credentials::MASKED {
            for path in credentials::expand(&home.join(name)) {
                if let Ok(real) = std::fs::canonicalize(&path) {
                    let dir = real.is_dir();
                    places.insert(real, Place::Mask { dir });
                }
            }
        }
        for name in credentials::FILTERED {
            let path = home.join(name);
            if let (Some(text), Ok(real)) = (read_config(&path), std::fs::canonicalize(&path)) {
                places.insert(
                    real,
                    Place::Contents(credentials::filter(&text).into_bytes()),
                );
            }
        }
    }
    for pattern in credentials::MASKED_SYSTEM {
        for path in credentials::expand(Path::new(pattern)) {
            if let Ok(real) = std::fs::canonicalize(&path) {
                let dir = real.is_dir();
                places.insert(real, Place::Mask { dir });
            }
        }
    }
    // What the host keeps from other users (not readable by "others")
    // under the system's configuration and state, whatever its name:
    // a command run by root keeps root's uid.
    for (path, dir) in credentials::guarded(credentials::GUARDED_TREES) {
        places.insert(path, Place::Mask { dir });
    }
}

/// What the policy adds: readable roots, the repository, the workspace
/// and writable roots, sockets, `.git` read-only, shared files, and the
/// trees nothing may read.
fn policy_places(places: &mut BTreeMap<PathBuf, Place>, policy: &Policy) {
    for root in &policy.readable_roots {
        let root = crate::paths::canonical(root);
        places.insert(root.clone(), ro(&root));
    }
    for repo in &policy.repository {
        places.insert(repo.clone(), ro(repo));
    }
    let write = if policy.mode == Mode::WorkspaceWrite {
        Access::Writable
    } else {
        Access::ReadOnly
    };
    for root in std::iter::once(&policy.workspace).chain(&policy.writable_roots) {
        let root = crate::paths::canonical(root);
        places.insert(
            root.clone(),
            Place::Bind {
                source: root,
                access: write,
                optional: true,
                own: false,
            },
        );
    }
    for socket in &policy.unix_sockets {
        let socket = crate::paths::canonical(socket);
        places.insert(
            socket.clone(),
            Place::Bind {
                source: socket,
                access: Access::AsIs,
                optional: true,
                own: false,
            },
        );
    }
    if policy.protect_git {
        for git in &policy.git {
            places.insert(git.clone(), ro(git));
        }
    }
    for file in &policy.shared_files {
        places.insert(file.clone(), ro(file));
    }
    // Trees nothing may read ($SCV_HOME) where a bound tree holds one.
    for denied in &policy.denied {
        let denied = crate::paths::canonical(denied);
        if std::fs::symlink_metadata(&denied).is_ok() {
            let dir = denied.is_dir();
            places.insert(denied, Place::Mask { dir });
        }
    }
}

/// The child's steps as [`Machine::build`] gathers them, and what each
/// placed path is: ours (a tmpfs or a folder made in one, where missing
/// parents are made) or an attached host tree (where they exist already).
#[derive(Default)]
struct Steps {
    clones: Vec<Op>,
    body: Vec<Op>,
    scratch: Vec<Op>,
    last: Vec<Op>,
    placed: BTreeMap<PathBuf, Context>,
    scratch_dir: PathBuf,
}

impl Steps {
    /// The steps that put `place` at `path` (staged at `target`); `ours`:
    /// its mount point may be made.
    fn place(
        &mut self,
        path: &Path,
        place: &Place,
        target: CString,
        meta: Option<&std::fs::Metadata>,
        ours: bool,
    ) {
        match place {
            Place::Bind {
                source,
                access,
                optional,
                own,
            } => {
                let Some(meta) = meta else {
                    return;
                };
                let Some(source) = c_path(source) else {
                    return;
                };
                let slot = self.clones.len();
                self.clones.push(Op::Clone {
                    slot,
                    source,
                    access: *access,
                    optional: *optional,
                });
                if ours {
                    self.body.push(if meta.is_dir() {
                        Op::Mkdir(target.clone())
                    } else {
                        Op::Touch(target.clone())
                    });
                }
                self.body.push(Op::Attach { slot, target });
                let inside = if *own { Context::Own } else { Context::Host };
                self.placed.insert(path.to_path_buf(), inside);
            }
            Place::Tmpfs(size) => {
                if ours {
                    self.body.push(Op::Mkdir(target.clone()));
                }
                self.body.push(Op::Tmpfs {
                    target,
                    read_only: false,
                    options: tmpfs_options(*size),
                });
                self.placed.insert(path.to_path_buf(), Context::Ours);
            }
            Place::Link(to) => {
                if let (true, Some(to)) = (ours, c_path(to)) {
                    self.body.push(Op::Link {
                        target: to,
                        link: target,
                    });
                    self.placed.insert(path.to_path_buf(), Context::Ours);
                }
            }
            // Nothing of a host tree is there to hide.
            Place::Mask { .. } if ours => {}
            // Made read-only once what is placed beneath it (a hooks
            // folder inside `$SCV_HOME`) is there.
            Place::Mask { dir: true } => {
                self.body.push(Op::Tmpfs {
                    target: target.clone(),
                    read_only: false,
                    options: tmpfs_options(4096),
                });
                self.last.push(Op::ReadOnly(target));
                self.placed.insert(path.to_path_buf(), Context::Ours);
            }
            Place::Mask { dir: false } | Place::Contents(_) => {
                let bytes = match place {
                    Place::Contents(bytes) => bytes.clone(),
                    _ => Vec::new(),
                };
                let Some(source) = c_path(&self.scratch_dir.join(self.scratch.len().to_string()))
                else {
                    return;
                };
                self.scratch.push(Op::Write {
                    path: source.clone(),
                    bytes,
                });
                if ours {
                    self.body.push(Op::Touch(target.clone()));
                }
                self.body.push(Op::Bind {
                    source,
                    target: target.clone(),
                });
                self.body.push(Op::ReadOnly(target));
                self.placed.insert(path.to_path_buf(), Context::Host);
            }
        }
    }
}

impl Machine {
    /// Plans the machine of `policy` for a command whose working directory
    /// is `cwd`. `tmp`: the session's `/tmp` (else a fresh tmpfs per call);
    /// `shm`: its `/dev/shm`.
    pub(crate) fn plan(policy: &Policy, cwd: &Path) -> Machine {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let mut places: BTreeMap<PathBuf, Place> = BTreeMap::new();
        system_places(&mut places);
        temp_places(&mut places, policy);
        let home = policy.home.as_deref().map(crate::paths::canonical);
        home_places(&mut places, policy, home.as_deref());
        policy_places(&mut places, policy);
        places.remove(Path::new("/"));
        // A working directory outside the workspace (a client that runs
        // `git -C WORKSPACE` from elsewhere) may not exist on the machine.
        let cwd = if cwd.starts_with(&policy.workspace) {
            cwd
        } else {
            &policy.workspace
        };
        let cwd = c_path(cwd).unwrap_or_else(|| c"/".to_owned());
        let mut machine = Machine {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            ops: Vec::new(),
            slots: Vec::new(),
            stage: c_path(Path::new(STAGE)).unwrap_or_else(|| c"/tmp".to_owned()),
            cwd,
            writable_tmpfs: home.as_deref().and_then(c_path).into_iter().collect(),
            failed_at: None,
            gone: false,
            own_network: policy.own_network(),
        };
        if policy.session_dir.is_none() {
            machine.writable_tmpfs.extend([
                c"/tmp".to_owned(),
                c"/var/tmp".to_owned(),
                c"/dev/shm".to_owned(),
            ]);
        }
        machine.build(places);
        machine
    }

    /// Turns the places into the child's steps: clones first (while every
    /// source can still be reached), then the scratch files, then the
    /// skeleton, attachments and masks from the top down.
    fn build(&mut self, places: BTreeMap<PathBuf, Place>) {
        let stage = PathBuf::from(STAGE);
        let staged = |path: &Path| -> Option<CString> {
            c_path(&stage.join(path.strip_prefix("/").unwrap_or(path)))
        };
        // Parents before children.
        let mut order: Vec<(&PathBuf, &Place)> = places.iter().collect();
        order.sort_by_key(|(path, _)| path.components().count());
        let mut steps = Steps {
            scratch_dir: stage.join(".scv-scratch"),
            ..Steps::default()
        };
        steps.placed.insert(PathBuf::from("/"), Context::Ours);
        for (path, place) in order {
            let Some(target) = staged(path) else {
                continue;
            };
            // A source that is not there is not placed.
            let meta = match place {
                Place::Bind { source, .. } => match std::fs::metadata(source) {
                    Ok(meta) => Some(meta),
                    Err(_) => continue,
                },
                _ => None,
            };
            // The nearest placed ancestor decides.
            let (above, context) = steps
                .placed
                .iter()
                .filter(|(p, _)| path.starts_with(p) && *p != path)
                .max_by_key(|(p, _)| p.components().count())
                .map(|(p, context)| (p.clone(), *context))
                .unwrap_or((PathBuf::from("/"), Context::Ours));
            let ours = context != Context::Host;
            if ours {
                for parent in ancestors(path)
                    .into_iter()
                    .filter(|p| p.starts_with(&above) && *p != above)
                {
                    if let std::collections::btree_map::Entry::Vacant(entry) =
                        steps.placed.entry(parent)
                    {
                        steps.body.extend(staged(entry.key()).map(Op::Mkdir));
                        entry.insert(context);
                    }
                }
            }
            steps.place(path, place, target, meta.as_ref(), ours);
        }
        let Steps {
            clones,
            body,
            scratch,
            last,
            scratch_dir,
            ..
        } = steps;
        self.slots = vec![-1; clones.len()];
        self.ops = clones;
        let scratch_dir = c_path(&scratch_dir);
        let has_scratch = !scratch.is_empty();
        if let (true, Some(dir)) = (has_scratch, &scratch_dir) {
            self.ops.push(Op::Mkdir(dir.clone()));
            self.ops.push(Op::Tmpfs {
                target: dir.clone(),
                read_only: false,
                options: tmpfs_options(SCRATCH_BYTES),
            });
            self.ops.extend(scratch);
        }
        self.ops.extend(body);
        self.ops.extend(last);
        if let (true, Some(dir)) = (has_scratch, scratch_dir) {
            self.ops.push(Op::Detach(dir.clone()));
            self.ops.push(Op::Rmdir(dir));
        }
        if let Some(dev) = staged(Path::new("/dev")) {
            self.ops.push(Op::ReadOnly(dev));
        }
    }

    /// Enters a new user and mount namespace (and network namespace,
    /// loopback up, for the allowlist), builds the machine and pivots
    /// into it. For the child between `fork` and `exec`: system calls only.
    pub(crate) fn apply(&mut self) -> io::Result<()> {
        // A network namespace of its own with the others (`egress`).
        let net = if self.own_network {
            libc::CLONE_NEWNET
        } else {
            0
        };
        // SAFETY: plain system calls on this process.
        sys::check(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | net) })?;
        // Without "deny" an unprivileged process may not write its gid map.
        sys::write_file(c"/proc/self/setgroups", b"deny", false)?;
        sys::write_file(c"/proc/self/uid_map", &self.uid_map, false)?;
        sys::write_file(c"/proc/self/gid_map", &self.gid_map, false)?;
        if self.own_network {
            crate::egress::loopback_up()?;
        }
        // Nothing done here may reach the parent namespace.
        sys::mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
        let result = self.run_ops();
        for fd in &mut self.slots {
            if *fd >= 0 {
                sys::close(*fd);
                *fd = -1;
            }
        }
        result?;
        sys::set_read_only(None, &self.stage, true, false)?;
        sys::pivot_here(&self.stage)?;
        sys::chdir(&self.cwd)
    }

    /// What step `index` of the plan does, to name it in an error.
    pub(crate) fn describe(&self, index: usize) -> String {
        let Some(op) = self.ops.get(index) else {
            return "entering the namespaces".into();
        };
        let show = |path: &CString| String::from_utf8_lossy(path.as_bytes()).into_owned();
        match op {
            Op::Clone { source, .. } => format!("cloning {}", show(source)),
            Op::Mkdir(path) => format!("making the folder {}", show(path)),
            Op::Touch(path) => format!("making the file {}", show(path)),
            Op::Link { link, .. } => format!("making the link {}", show(link)),
            Op::Tmpfs { target, .. } => format!("mounting a tmpfs on {}", show(target)),
            Op::Attach { target, .. } => format!("attaching {}", show(target)),
            Op::Write { path, .. } => format!("writing {}", show(path)),
            Op::Bind { source, target } => {
                format!("binding {} on {}", show(source), show(target))
            }
            Op::ReadOnly(path) => format!("making {} read-only", show(path)),
            Op::Detach(path) => format!("detaching {}", show(path)),
            Op::Rmdir(path) => format!("removing {}", show(path)),
        }
    }

    fn run_ops(&mut self) -> io::Result<()> {
        let mut staged = false;
        let mut gone = false;
        for (index, op) in self.ops.iter().enumerate() {
            self.failed_at = Some(index);
            if !staged && !matches!(op, Op::Clone { .. }) {
                // Every source is cloned: the stage may now cover /tmp.
                sys::mount(
                    Some(c"tmpfs"),
                    &self.stage,
                    Some(c"tmpfs"),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    Some(c"mode=0755"),
                )?;
                staged = true;
            }
            match op {
                Op::Clone {
                    slot,
                    source,
                    access,
                    optional,
                } => match sys::open_tree_clone(source) {
                    Ok(fd) => {
                        self.slots[*slot] = fd;
                        match access {
                            Access::ReadOnly => sys::set_read_only(Some(fd), c"", true, true)?,
                            Access::Writable => sys::set_read_only(Some(fd), c"", false, true)?,
                            Access::AsIs => {}
                        }
                    }
                    Err(err)
                        if *optional
                            && matches!(err.raw_os_error(), Some(libc::ENOENT | libc::EACCES)) => {}
                    Err(err) => return Err(err),
                },
                Op::Mkdir(path) => sys::mkdir(path, 0o755)?,
                Op::Touch(path) => match sys::write_file(path, b"", true) {
                    // A mount point that is there already (a device node).
                    Err(err) if err.raw_os_error() == Some(libc::EEXIST) => {}
                    other => other?,
                },
                Op::Link { target, link } => sys::symlink(target, link)?,
                Op::Tmpfs {
                    target,
                    read_only,
                    options,
                } => {
                    let flags = libc::MS_NOSUID
                        | libc::MS_NODEV
                        | if *read_only { libc::MS_RDONLY } else { 0 };
                    sys::mount(Some(c"tmpfs"), target, Some(c"tmpfs"), flags, Some(options))?;
                }
                Op::Attach { slot, target } => {
                    let fd = self.slots[*slot];
                    if fd >= 0 {
                        sys::move_mount(fd, target)?;
                    }
                }
                Op::Write { path, bytes } => sys::write_file(path, bytes, true)?,
                // A mask whose path went since the plan hides nothing.
                Op::Bind { source, target } => {
                    match sys::mount(Some(source), target, None, libc::MS_BIND, None) {
                        Err(err) if err.raw_os_error() == Some(libc::ENOENT) => gone = true,
                        other => other?,
                    }
                }
                Op::ReadOnly(path) => match sys::set_read_only(None, path, true, false) {
                    Err(err) if err.raw_os_error() == Some(libc::ENOENT) => gone = true,
                    other => other?,
                },
                Op::Detach(path) => sys::detach(path)?,
                Op::Rmdir(path) => sys::rmdir(path)?,
            }
        }
        self.gone = gone;
        self.failed_at = None;
        Ok(())
    }
}

/// Places a host path of the system list: a link as the same link (and
/// what it leads to, where that is elsewhere), a tree read-only.
fn add_host_path(places: &mut BTreeMap<PathBuf, Place>, path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_symlink() {
        let Ok(to) = std::fs::read_link(path) else {
            return;
        };
        // Only the link: what it leads to is shown where it is listed
        // (`/var/run -> /run` must not bring the whole of /run).
        places.insert(path.to_path_buf(), Place::Link(to));
        return;
    }
    places.insert(
        path.to_path_buf(),
        Place::Bind {
            source: path.to_path_buf(),
            access: Access::ReadOnly,
            optional: true,
            own: false,
        },
    );
}

/// A configuration file of the user's to show filtered: regular, at most
/// `MAX_FILTERED_BYTES`, text. One that is bigger or not text is shown
/// empty (`Some("")`); one that is not there, not at all.
fn read_config(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.len() > credentials::MAX_FILTERED_BYTES {
        return Some(String::new());
    }
    let bytes = std::fs::read(path).ok()?;
    Some(String::from_utf8(bytes).unwrap_or_default())
}

/// The ancestors of `path` below `/`, from the top down (not `path`).
fn ancestors(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut at = PathBuf::from("/");
    let parts: Vec<Component> = path.components().skip(1).collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        at.push(part.as_os_str());
        out.push(at.clone());
    }
    out
}

fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ancestors_are_listed_from_the_top() {
        assert_eq!(
            ancestors(Path::new("/a/b/c")),
            [PathBuf::from("/a"), PathBuf::from("/a/b")]
        );
        assert!(ancestors(Path::new("/a")).is_empty());
    }
}
