//! A policy made ready for one command: the made-up machine planned, the
//! ruleset and filters built and the session's cgroup opened, all before
//! `fork`; what runs between `fork` and `exec` is only the system calls
//! that apply them.

use crate::machine::Machine;
use crate::policy::{Mode, Policy};
use crate::ruleset::Rights;
use crate::{caps, doors, network, ruleset};
use landlock::{RulesetCreated, RulesetStatus};
use seccompiler::BpfProgram;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

pub struct Prepared {
    confinement: Option<Confinement>,
    /// The command's `TMPDIR`: `/tmp` on the made-up machine (the
    /// session's own), else the session's temp directory on the host or a
    /// private one for this call.
    tmpdir: PathBuf,
    /// A private temp directory of this call (no session directory, no
    /// mount namespace); removed when this is dropped.
    _private_tmp: Option<tempfile::TempDir>,
}

/// What [`Confinement::apply`] applies in the child.
pub struct Confinement {
    /// The session cgroup's task file to join.
    join: Option<OwnedFd>,
    machine: Option<Machine>,
    nproc: Option<u64>,
    ruleset: Option<RulesetCreated>,
    /// The same ruleset, for the rules the child adds on the machine.
    child_rules: Option<(OwnedFd, Rights, Vec<CString>)>,
    filters: Vec<BpfProgram>,
}

impl Prepared {
    pub fn new(policy: &Policy) -> Result<Prepared, crate::Error> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let (machine, ruleset, child_rules, tmpdir, private_tmp) = if policy.mount_namespace {
            let machine = Machine::plan(policy, &cwd);
            let (ruleset, rights) = ruleset::for_machine(policy)?;
            let fd: Option<OwnedFd> = ruleset
                .try_clone()
                .map_err(|e| crate::Error::io("cannot share the Landlock ruleset", e))?
                .into();
            let mut paths = vec![c"/".to_owned()];
            paths.extend(machine.writable_tmpfs.iter().cloned());
            let child = fd.map(|fd| (fd, rights, paths));
            (Some(machine), ruleset, child, PathBuf::from("/tmp"), None)
        } else {
            let private_tmp = match policy.session_tmp() {
                Some(_) if policy.mode != Mode::ReadOnly => None,
                _ => Some(private_temp_dir(policy)?),
            };
            let private = private_tmp.as_ref().map(|d| d.path().to_path_buf());
            let ruleset = ruleset::build(policy, private.as_deref())?;
            let tmpdir = private
                .or_else(|| policy.session_tmp())
                .unwrap_or_else(std::env::temp_dir);
            (None, ruleset, None, tmpdir, private_tmp)
        };
        let mut filters = doors::filters(ruleset::rules_unix_sockets())?;
        if policy.refuses_ip() {
            filters.extend(network::filters()?);
        }
        let (join, nproc) = match (&policy.pids_cgroup, policy.max_processes) {
            (Some(dir), _) => (Some(crate::pids::open_to_join(dir)?), None),
            (None, 0) => (None, None),
            (None, max) if machine.is_some() => (None, Some(u64::from(max))),
            (None, max) => (None, Some(tasks_now().saturating_add(u64::from(max)))),
        };
        Ok(Prepared {
            confinement: Some(Confinement {
                join,
                machine,
                nproc,
                ruleset: Some(ruleset),
                child_rules,
                filters,
            }),
            tmpdir,
            _private_tmp: private_tmp,
        })
    }

    /// The temp directory to give the command as `TMPDIR`.
    pub fn tmpdir(&self) -> &Path {
        &self.tmpdir
    }

    /// The confinement, to move into the child's pre-exec hook (once).
    pub fn take_confinement(&mut self) -> Option<Confinement> {
        self.confinement.take()
    }
}

/// A temp directory of this call's own, in the system's.
fn private_temp_dir(policy: &Policy) -> Result<tempfile::TempDir, crate::Error> {
    let temp = policy
        .temp_dirs
        .first()
        .map(|dir| crate::paths::canonical(dir))
        .unwrap_or_else(std::env::temp_dir);
    tempfile::Builder::new()
        .prefix("scv-tool-")
        .tempdir_in(&temp)
        .map_err(|e| {
            crate::Error::io(
                format!("cannot create a temp directory in {}", temp.display()),
                e,
            )
        })
}

/// Tasks on the machine now (`sysinfo`'s count: processes and threads):
/// without a user namespace of its own, `RLIMIT_NPROC` counts all of the
/// user's tasks, so the limit is that plus the bound.
pub(crate) fn tasks_now() -> u64 {
    // SAFETY: sysinfo fills the struct we pass.
    unsafe {
        let mut info: libc::sysinfo = std::mem::zeroed();
        if libc::sysinfo(&mut info) == 0 {
            u64::from(info.procs)
        } else {
            0
        }
    }
}

impl Confinement {
    /// Applies the sandbox to the calling process. Meant for the child
    /// between `fork` and `exec`: it allocates nothing and takes no lock.
    /// In order: the session's pids cgroup, the user and mount namespace
    /// with the made-up machine, the task limit, the Landlock rules that
    /// name the machine's own folders, every capability dropped, then
    /// Landlock (which sets no-new-privileges first) and the seccomp
    /// filters. A ruleset the kernel does not enforce fails with
    /// EOPNOTSUPP rather than run the command unconfined.
    pub fn apply(&mut self) -> std::io::Result<()> {
        let Some(ruleset) = self.ruleset.take() else {
            return Err(std::io::Error::from_raw_os_error(libc::EALREADY));
        };
        if let Some(fd) = &self.join {
            crate::pids::join(fd.as_raw_fd())?;
        }
        if let Some(machine) = &mut self.machine {
            machine.apply()?;
        }
        if let Some(max) = self.nproc {
            crate::pids::limit(max)?;
        }
        if let Some((fd, rights, paths)) = &self.child_rules {
            for (i, path) in paths.iter().enumerate() {
                let access = if i == 0 { rights.read } else { rights.all };
                crate::sys::landlock_add_path(fd.as_raw_fd(), path, access)?;
            }
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
pub(crate) fn errno_of(err: &(dyn std::error::Error + 'static)) -> i32 {
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
