//! A policy made ready once for every command of a session, so a command
//! pays only for joining it: the made-up machine is built once, by a
//! holder process that keeps its user and mount namespace alive; the
//! Landlock ruleset and the seccomp filters are built once; each command's
//! child then joins the cgroup, enters the namespaces (`setns`), drops
//! every capability and restricts itself — system calls only.
//!
//! The holder is forked by the caller (the session's tool host, single
//! threaded), builds the machine exactly as a single command's child would
//! (`Machine::apply`), adds the ruleset's rules that name the machine's
//! own folders, says it is ready and sleeps; it dies with its parent
//! (`PR_SET_PDEATHSIG`) or when this is dropped. It stays outside the
//! Landlock domain, so a command can neither signal nor trace it.

use crate::machine::Machine;
use crate::policy::{Mode, Policy};
use crate::{doors, network, ruleset, sys};
use seccompiler::BpfProgram;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

pub struct Resident {
    /// The machine's holder and its namespaces; `None` without a mount
    /// namespace (Landlock alone, `ruleset::build`).
    holder: Option<Holder>,
    /// The Landlock ruleset every command restricts itself with.
    ruleset: OwnedFd,
    filters: Vec<BpfProgram>,
    /// The session cgroup's task file.
    join: Option<OwnedFd>,
    nproc: Option<u64>,
    tmpdir: PathBuf,
    /// A temp directory of the session's own on the host, where there is
    /// neither a session directory nor a machine.
    _private_tmp: Option<tempfile::TempDir>,
    /// The credential files there were when the machine was built.
    credentials: Vec<PathBuf>,
    /// The proxy's listener in the machine's network namespace, until the
    /// caller takes it (`sandbox_network = "allowlist"`, `egress`).
    listener: Option<OwnedFd>,
    /// What commands are told of the proxy (empty without one).
    proxy_env: Vec<(&'static str, String)>,
}

struct Holder {
    pid: libc::pid_t,
    user: OwnedFd,
    mnt: OwnedFd,
    /// The network namespace of its own (allowlist), and the proxy's
    /// listener the holder made in it.
    net: Option<(OwnedFd, Option<OwnedFd>)>,
    /// A path to mask went while the machine was built.
    gone: bool,
}

impl Drop for Holder {
    fn drop(&mut self) {
        // SAFETY: a signal to the holder we forked.
        unsafe { libc::kill(self.pid, libc::SIGKILL) };
    }
}

impl Resident {
    /// Builds what every command of `policy` shares; forks the holder
    /// (call it from a single-threaded process).
    pub fn new(policy: &Policy) -> Result<Resident, crate::Error> {
        let mut filters = doors::filters(ruleset::rules_unix_sockets())?;
        if policy.refuses_ip() {
            filters.extend(network::filters()?);
        }
        let join = match &policy.pids_cgroup {
            Some(dir) => Some(crate::pids::open_to_join(dir)?),
            None => None,
        };
        if policy.mount_namespace {
            let (ruleset, rights) = ruleset::for_machine(policy)?;
            let ruleset: OwnedFd = Option::<OwnedFd>::from(ruleset).ok_or_else(|| {
                crate::Error::io("no Landlock ruleset", io::ErrorKind::Other.into())
            })?;
            // Looked at before the plan: a file made in between is then
            // missing from this list, so the next call rebuilds.
            let credentials = crate::credentials::present(policy.home.as_deref());
            let machine = Machine::plan(policy, &policy.workspace);
            let mut paths = vec![(c"/".to_owned(), rights.read)];
            paths.extend(
                machine
                    .writable_tmpfs
                    .iter()
                    .map(|p| (p.clone(), rights.all)),
            );
            let mut holder =
                Holder::start(machine, ruleset.as_raw_fd(), &paths, policy.own_network())?;
            let listener = holder
                .net
                .as_mut()
                .and_then(|(_, listener)| listener.take());
            let nproc = (join.is_none() && policy.max_processes > 0)
                .then_some(u64::from(policy.max_processes));
            Ok(Resident {
                holder: Some(holder),
                ruleset,
                filters,
                join,
                nproc,
                tmpdir: PathBuf::from("/tmp"),
                _private_tmp: None,
                credentials,
                proxy_env: match &listener {
                    Some(_) => crate::egress::proxy_env(
                        policy
                            .no_proxy
                            .as_deref()
                            .unwrap_or(&crate::egress::DIRECT.join(",")),
                    ),
                    None => Vec::new(),
                },
                listener,
            })
        } else {
            let private_tmp = match policy.session_tmp() {
                Some(_) if policy.mode != Mode::ReadOnly => None,
                _ => Some(
                    tempfile::Builder::new()
                        .prefix("scv-tool-")
                        .tempdir()
                        .map_err(|e| crate::Error::io("cannot create a temp directory", e))?,
                ),
            };
            let private = private_tmp.as_ref().map(|d| d.path().to_path_buf());
            let ruleset: OwnedFd =
                Option::<OwnedFd>::from(ruleset::build(policy, private.as_deref())?).ok_or_else(
                    || crate::Error::io("no Landlock ruleset", io::ErrorKind::Other.into()),
                )?;
            let tmpdir = private
                .or_else(|| policy.session_tmp())
                .unwrap_or_else(std::env::temp_dir);
            // Without its own user namespace RLIMIT_NPROC counts all of
            // the user's tasks: the limit is what runs now plus the bound.
            let nproc = (join.is_none() && policy.max_processes > 0).then(|| {
                crate::prepared::tasks_now().saturating_add(u64::from(policy.max_processes))
            });
            Ok(Resident {
                holder: None,
                ruleset,
                filters,
                join,
                nproc,
                tmpdir,
                _private_tmp: private_tmp,
                credentials: crate::credentials::present(policy.home.as_deref()),
                listener: None,
                proxy_env: Vec::new(),
            })
        }
    }

    /// Whether credential files appeared or went since this was built: it
    /// must be built again, or a new one would be shown unmasked.
    pub fn stale(&self, policy: &Policy) -> bool {
        self.holder.as_ref().is_some_and(|h| h.gone)
            || crate::credentials::present(policy.home.as_deref()) != self.credentials
    }

    /// The temp directory to give commands as `TMPDIR`.
    pub fn tmpdir(&self) -> &Path {
        &self.tmpdir
    }

    /// The proxy's listener in the commands' network namespace, once:
    /// whoever takes it answers the commands' connections to the proxy.
    pub fn take_listener(&mut self) -> Option<OwnedFd> {
        self.listener.take()
    }

    /// What commands are told of the proxy, when they run in a network
    /// namespace of their own where it is the way out
    /// ([`crate::egress::proxy_env`]); empty otherwise.
    pub fn proxy_env(&self) -> &[(&'static str, String)] {
        &self.proxy_env
    }

    /// What a command's child applies to join this, working in `cwd`.
    /// Its descriptors are the resident's: it must outlive the spawn.
    pub fn joining(&self, cwd: &Path) -> Joining {
        Joining {
            join: self.join.as_ref().map(AsRawFd::as_raw_fd),
            namespaces: self.holder.as_ref().map(|h| {
                (
                    h.user.as_raw_fd(),
                    h.mnt.as_raw_fd(),
                    h.net.as_ref().map_or(-1, |(net, _)| net.as_raw_fd()),
                )
            }),
            nproc: self.nproc,
            ruleset: self.ruleset.as_raw_fd(),
            filters: self.filters.clone(),
            cwd: CString::new(std::os::unix::ffi::OsStrExt::as_bytes(cwd.as_os_str())).ok(),
        }
    }
}

/// One command's way into a [`Resident`]: applied in its child between
/// `fork` and `exec` (system calls only, no allocation). It names the
/// resident's descriptors, which must stay open until the command runs.
pub struct Joining {
    join: Option<RawFd>,
    /// User, mount and network (or -1) namespaces.
    namespaces: Option<(RawFd, RawFd, RawFd)>,
    nproc: Option<u64>,
    ruleset: RawFd,
    filters: Vec<BpfProgram>,
    cwd: Option<CString>,
}

impl Joining {
    /// In order: the session's cgroup, the machine's user and mount
    /// namespaces and the working directory in it, the task limit, every
    /// capability dropped, no new privileges, Landlock, seccomp.
    pub fn apply(&self) -> io::Result<()> {
        if let Some(fd) = self.join {
            crate::pids::join(fd)?;
        }
        if let Some((user, mnt, net)) = self.namespaces {
            // SAFETY: setns on the resident's descriptors, in a single
            // thread.
            sys::check(unsafe { libc::setns(user, libc::CLONE_NEWUSER) })?;
            // SAFETY: as above.
            sys::check(unsafe { libc::setns(mnt, libc::CLONE_NEWNS) })?;
            if net >= 0 {
                // SAFETY: as above.
                sys::check(unsafe { libc::setns(net, libc::CLONE_NEWNET) })?;
            }
        }
        if let Some(cwd) = &self.cwd {
            // Entering the mount namespace put us at its root.
            sys::chdir(cwd)?;
        }
        if let Some(max) = self.nproc {
            crate::pids::limit(max)?;
        }
        crate::caps::drop_all()?;
        // SAFETY: prctl on this process.
        sys::check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
        // SAFETY: a ruleset descriptor we hold; no flags.
        let restricted =
            unsafe { libc::syscall(libc::SYS_landlock_restrict_self, self.ruleset, 0u32) };
        if restricted < 0 {
            return Err(io::Error::last_os_error());
        }
        for filter in &self.filters {
            if let Err(err) = seccompiler::apply_filter(filter) {
                return Err(io::Error::from_raw_os_error(crate::prepared::errno_of(
                    &err,
                )));
            }
        }
        Ok(())
    }
}

/// Closes every descriptor above stderr but `keep`. For a forked child:
/// system calls only.
fn close_all_but(keep: &[RawFd]) {
    let mut keep: [RawFd; 2] = [
        keep.first().copied().unwrap_or(-1),
        keep.get(1).copied().unwrap_or(-1),
    ];
    keep.sort_unstable();
    let mut from: u32 = 3;
    for fd in keep {
        if fd < 3 {
            continue;
        }
        let fd = fd as u32;
        if fd > from {
            // SAFETY: close_range on this process's descriptors.
            unsafe { libc::syscall(libc::SYS_close_range, from, fd - 1, 0u32) };
        }
        from = fd + 1;
    }
    // SAFETY: as above.
    unsafe { libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32) };
}

/// The holder's life, in the forked child: builds `machine` (with the
/// network namespace and the proxy's listener when `own_network`), adds
/// `rules` to `ruleset`, reports on `write` (the errno, the step it failed
/// at, whether a masked path went; the listener with it) and sleeps until
/// killed. System calls only.
fn holder(
    machine: &mut Machine,
    write: &OwnedFd,
    ruleset: RawFd,
    rules: &[(CString, u64)],
    own_network: bool,
) -> ! {
    let mut step = 0usize;
    let mut listener: RawFd = -1;
    let code: i32 = (|| {
        // SAFETY: prctl on this process.
        sys::check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) })?;
        // Nothing the caller had open is held here for the
        // session's life (a request's pipes would never close).
        close_all_but(&[write.as_raw_fd(), ruleset]);
        machine.apply()?;
        for (index, (path, access)) in rules.iter().enumerate() {
            step = RULE_STEPS + index;
            sys::landlock_add_path(ruleset, path, *access)?;
        }
        if own_network {
            step = RULE_STEPS - 2;
            listener = crate::egress::listen()?;
        }
        Ok::<_, io::Error>(0)
    })()
    .unwrap_or_else(|err: io::Error| err.raw_os_error().unwrap_or(libc::EPERM));
    // The errno, and the step it failed at (a machine step, or a
    // rule past RULE_STEPS) for the error to name.
    let step = if step >= RULE_STEPS - 2 {
        step
    } else {
        machine.failed_at.unwrap_or(RULE_STEPS - 1)
    };
    let step = u16::try_from(step).unwrap_or(u16::MAX).to_le_bytes();
    let report = [
        code.clamp(0, 255) as u8,
        step[0],
        step[1],
        u8::from(machine.gone),
    ];
    let _ = crate::egress::send_with_fd(write.as_raw_fd(), &report, listener);
    if listener >= 0 {
        sys::close(listener);
    }
    // SAFETY: wait forever.
    unsafe {
        if code != 0 {
            libc::_exit(1);
        }
        loop {
            libc::pause();
        }
    }
}

/// Steps past this number in a holder's report are rules, not machine
/// steps.
const RULE_STEPS: usize = 0x8000;

impl Holder {
    /// Forks the holder, which builds `machine`, adds `rules` (paths as it
    /// sees them, rights) to the ruleset `ruleset`, and waits; returns
    /// once it is ready, with its namespaces open.
    fn start(
        mut machine: Machine,
        ruleset: RawFd,
        rules: &[(CString, u64)],
        own_network: bool,
    ) -> Result<Holder, crate::Error> {
        // A pipe that can carry the proxy's listener back.
        let (read, write) = crate::egress::report_pair()
            .map_err(|e| crate::Error::io("cannot make a socket pair", e))?;
        // SAFETY: the child makes only system calls (the machine was
        // planned before the fork) and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(crate::Error::io(
                "cannot fork the sandbox's holder",
                io::Error::last_os_error(),
            ));
        }
        if pid == 0 {
            holder(&mut machine, &write, ruleset, rules, own_network);
        }
        drop(write);
        let mut report = [255u8; 4];
        // One message of four bytes, with the listener if it made one.
        let (n, listener) =
            crate::egress::receive_with_fd(read.as_raw_fd(), &mut report).unwrap_or((0, None));
        let failed = |why: io::Error| {
            // SAFETY: the holder we forked.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            crate::Error::io("cannot build the sandbox's machine", why)
        };
        if n != 4 {
            return Err(failed(io::Error::other(
                "the holder ended before it was ready",
            )));
        }
        if report[0] != 0 {
            let step = usize::from(u16::from_le_bytes([report[1], report[2]]));
            let at = match step.checked_sub(RULE_STEPS) {
                _ if step == RULE_STEPS - 2 => {
                    format!(
                        "listening on the proxy's port {}",
                        crate::egress::PROXY_PORT
                    )
                }
                Some(rule) => match rules.get(rule) {
                    Some((path, _)) => format!(
                        "adding the rule on {}",
                        String::from_utf8_lossy(path.as_bytes())
                    ),
                    None => "adding a rule".into(),
                },
                None => machine.describe(step),
            };
            let errno = io::Error::from_raw_os_error(i32::from(report[0]));
            return Err(failed(io::Error::new(
                errno.kind(),
                format!("{at}: {errno}"),
            )));
        }
        let open = |name: &str| -> io::Result<OwnedFd> {
            let path = format!("/proc/{pid}/ns/{name}");
            std::fs::File::open(path).map(OwnedFd::from)
        };
        let user = open("user").map_err(failed)?;
        let mnt = open("mnt").map_err(failed)?;
        let net = if own_network {
            Some((open("net").map_err(failed)?, listener))
        } else {
            None
        };
        Ok(Holder {
            pid,
            user,
            mnt,
            net,
            gone: report[3] != 0,
        })
    }
}
