//! A policy made ready for one command: the ruleset, filters, mounts and
//! process bound prepared and the private temp directory made, all before
//! `fork`; what runs between `fork` and `exec` is only the system calls
//! that apply them.

use crate::namespace::Mounts;
use crate::pids::PidsBound;
use crate::policy::{Mode, Policy};
use crate::{caps, doors, network, ruleset};
use landlock::{RulesetCreated, RulesetStatus};
use seccompiler::BpfProgram;
use std::os::fd::RawFd;
use std::path::Path;

pub struct Prepared {
    confinement: Option<Confinement>,
    /// The command's own temp directory (read-only mode, or a temp
    /// directory holding a denied tree); removed when this is dropped.
    private_tmp: Option<tempfile::TempDir>,
    /// The call's pids cgroup, if it has one: kept (and removed at the
    /// end) by the reaper, which outlives every process of the call.
    _pids: PidsBound,
}

/// What [`Confinement::apply`] applies in the child.
pub struct Confinement {
    /// The cgroup's `cgroup.procs` to join.
    join: Option<RawFd>,
    mounts: Option<Mounts>,
    nproc: Option<u64>,
    ruleset: Option<RulesetCreated>,
    filters: Vec<BpfProgram>,
}

impl Prepared {
    pub fn new(policy: &Policy) -> Result<Prepared, crate::Error> {
        let temp = policy
            .temp_dirs
            .first()
            .map(|dir| crate::paths::canonical(dir))
            .unwrap_or_else(std::env::temp_dir);
        // A temp directory that holds a denied tree can only be written
        // below its entries, not at its top (`mktemp` would fail there).
        let holds_denied = policy
            .denied
            .iter()
            .any(|d| crate::paths::canonical(d).starts_with(&temp));
        let private_tmp = if policy.mode == Mode::ReadOnly || holds_denied {
            let dir = tempfile::Builder::new()
                .prefix("scv-tool-")
                .tempdir_in(&temp)
                .map_err(|e| {
                    crate::Error::io(
                        format!("cannot create a temp directory in {}", temp.display()),
                        e,
                    )
                })?;
            Some(dir)
        } else {
            None
        };
        let private = private_tmp.as_ref().map(|d| d.path());
        let ruleset = ruleset::build(policy, private)?;
        let mut filters = doors::filters(ruleset::rules_unix_sockets())?;
        if !policy.network {
            filters.extend(network::filters()?);
        }
        let mounts = policy
            .mount_namespace
            .then(|| Mounts::plan(policy, &policy.writable(private)));
        let pids = PidsBound::prepare(policy.max_processes, mounts.is_some())
            .map_err(|e| crate::Error::io("cannot bound the command's processes", e))?;
        let (join, nproc) = match &pids {
            PidsBound::Cgroup(cgroup) => (Some(cgroup.procs_fd()), None),
            PidsBound::Rlimit(max) => (None, Some(*max)),
            PidsBound::Unbounded => (None, None),
        };
        Ok(Prepared {
            confinement: Some(Confinement {
                join,
                mounts,
                nproc,
                ruleset: Some(ruleset),
                filters,
            }),
            private_tmp,
            _pids: pids,
        })
    }

    /// The temp directory to give the command as `TMPDIR`, if it has its own.
    pub fn tmpdir(&self) -> Option<&Path> {
        self.private_tmp.as_ref().map(|d| d.path())
    }

    /// The confinement, to move into the child's pre-exec hook (once).
    pub fn take_confinement(&mut self) -> Option<Confinement> {
        self.confinement.take()
    }
}

impl Confinement {
    /// Applies the sandbox to the calling process. Meant for the child
    /// between `fork` and `exec`: it allocates nothing and takes no lock.
    /// In order: the pids cgroup, the user and mount namespace with its
    /// read-only mounts, the task limit, every capability dropped, then
    /// Landlock (which sets no-new-privileges first) and the seccomp
    /// filters. A ruleset the kernel does not enforce fails with
    /// EOPNOTSUPP rather than run the command unconfined.
    pub fn apply(&mut self) -> std::io::Result<()> {
        let Some(ruleset) = self.ruleset.take() else {
            return Err(std::io::Error::from_raw_os_error(libc::EALREADY));
        };
        if let Some(fd) = self.join {
            crate::pids::join(fd)?;
        }
        if let Some(mounts) = &self.mounts {
            mounts.apply()?;
        }
        if let Some(max) = self.nproc {
            crate::pids::limit(max)?;
        }
        caps::drop_all()?;
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset == RulesetStatus::NotEnforced => {
                return Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP))
            }
            Ok(_) => {}
            Err(err) => return Err(std::io::Error::from_raw_os_error(errno_of(&err))),
        }
        for filter in &self.filters {
            if let Err(err) = seccompiler::apply_filter(filter) {
                return Err(std::io::Error::from_raw_os_error(errno_of(&err)));
            }
        }
        Ok(())
    }
}

/// Detaches a tool process from everything it inherited, sandbox or not:
/// a session of its own (no controlling terminal, so `/dev/tty` and
/// terminal job control are out of reach) and every descriptor above
/// stderr closed at `exec` (a daemon started from `make` holds its
/// jobserver, a shell's `exec 7>>file` another). For the child between
/// `fork` and `exec`.
pub fn detach() -> std::io::Result<()> {
    // SAFETY: system calls on this process only.
    unsafe {
        // EPERM only when already a group leader: keep what we have.
        libc::setsid();
        if libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ) < 0
        {
            // Before Linux 5.11: mark them one by one.
            let max = libc::sysconf(libc::_SC_OPEN_MAX).clamp(0, 1 << 20) as libc::c_int;
            for fd in 3..max {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
}

/// The OS error somewhere in `err`'s chain (EPERM if none), without
/// allocating.
fn errno_of(err: &(dyn std::error::Error + 'static)) -> i32 {
    let mut current = Some(err);
    while let Some(err) = current {
        if let Some(code) = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return code;
        }
        current = err.source();
    }
    libc::EPERM
}
