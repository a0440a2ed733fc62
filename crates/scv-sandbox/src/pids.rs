//! A bound on the tasks (processes and threads) of one sandboxed call, so a
//! fork loop cannot take every pid of the machine from the daemon and the
//! other sessions' tools.
//!
//! - Run as root, where a pids cgroup can be made (cgroup v2 with the pids
//!   controller at `/sys/fs/cgroup`, or v1's `/sys/fs/cgroup/pids`): a
//!   cgroup of its own per call, `pids.max` set, removed when the call ends.
//!   (`RLIMIT_NPROC` is never enforced for root.)
//! - Otherwise `RLIMIT_NPROC`. In the call's own user namespace the kernel
//!   counts only the tasks of that namespace, so the limit is exactly the
//!   call's; without one it counts all of the user's tasks, so the limit is
//!   set to the machine's task count now plus the bound.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

const V2_ROOT: &str = "/sys/fs/cgroup";
const V1_ROOT: &str = "/sys/fs/cgroup/pids";

pub(crate) enum PidsBound {
    Cgroup(Cgroup),
    Rlimit(u64),
    Unbounded,
}

/// A call's own pids cgroup; removed (once empty) when dropped.
pub(crate) struct Cgroup {
    dir: PathBuf,
    /// `tasks` (v1) or `cgroup.procs` (v2), open for writing.
    procs: OwnedFd,
}

impl PidsBound {
    /// The bound for a call allowed `max` tasks; `own_namespace`: the
    /// command gets a user namespace of its own.
    pub(crate) fn prepare(max: u32, own_namespace: bool) -> io::Result<PidsBound> {
        if max == 0 {
            return Ok(PidsBound::Unbounded);
        }
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            return match cgroup_base() {
                Some(base) => Ok(PidsBound::Cgroup(Cgroup::new(&base, max)?)),
                None => Ok(PidsBound::Unbounded),
            };
        }
        if own_namespace {
            return Ok(PidsBound::Rlimit(u64::from(max)));
        }
        Ok(PidsBound::Rlimit(
            tasks_now().saturating_add(u64::from(max)),
        ))
    }
}

/// In the child, before it leaves the parent's user namespace: joins the
/// cgroup whose task file is open as `tasks`, by writing `0` (the writer
/// itself). On cgroup v1 that file is `tasks`, which moves the one thread
/// the child has without the global lock a `cgroup.procs` write takes —
/// that lock waits for an RCU grace period, 5–30 ms per call measured
/// here, against 0.6 ms.
pub(crate) fn join(tasks: RawFd) -> io::Result<()> {
    // SAFETY: a write to a descriptor the caller keeps open.
    if unsafe { libc::write(tasks, b"0".as_ptr().cast(), 1) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// In the child, after it entered its own user namespace: the task limit.
pub(crate) fn limit(max: u64) -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: max,
        rlim_max: max,
    };
    // SAFETY: setrlimit on this process.
    if unsafe { libc::setrlimit(libc::RLIMIT_NPROC, &limit) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether a call here can be bounded (for the server's probe): as root,
/// that a pids cgroup can be made and removed.
pub(crate) fn bound_available() -> Result<(), String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(());
    }
    let Some(base) = cgroup_base() else {
        return Err(
            "running as root, and no pids cgroup can be made (RLIMIT_NPROC does not bind root)"
                .into(),
        );
    };
    Cgroup::new(&base, 1).map(drop).map_err(|err| {
        format!(
            "running as root, and a pids cgroup in {} cannot be made: {err}",
            base.display()
        )
    })
}

impl Cgroup {
    pub(crate) fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    fn new(base: &Path, max: u32) -> io::Result<Cgroup> {
        // Unique per process and call (a process may sandbox several
        // commands at once).
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: getpid cannot fail.
        let pid = unsafe { libc::getpid() };
        let dir = base.join(format!("scv-tool-{pid}-{call}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            // Left by an earlier process of this pid that was killed.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
        let made = (|| {
            std::fs::write(dir.join("pids.max"), max.to_string())?;
            let file = if base == Path::new(V1_ROOT) {
                "tasks"
            } else {
                "cgroup.procs"
            };
            let procs = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join(file))?;
            Ok::<_, io::Error>(OwnedFd::from(procs))
        })();
        match made {
            Ok(procs) => Ok(Cgroup { dir, procs }),
            Err(err) => {
                let _ = std::fs::remove_dir(&dir);
                Err(err)
            }
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Empty by now: the reaper has reaped everything below it.
        if let Ok(path) = CString::new(self.dir.as_os_str().as_bytes()) {
            // SAFETY: rmdir of a path we made.
            unsafe { libc::rmdir(path.as_ptr()) };
        }
    }
}

/// Where a pids cgroup can be made: cgroup v2 with the pids controller
/// enabled for the root's children, else cgroup v1's pids hierarchy.
fn cgroup_base() -> Option<PathBuf> {
    let v2 = Path::new(V2_ROOT);
    if std::fs::read_to_string(v2.join("cgroup.subtree_control"))
        .is_ok_and(|enabled| enabled.split_whitespace().any(|c| c == "pids"))
    {
        return Some(v2.to_path_buf());
    }
    let v1 = Path::new(V1_ROOT);
    v1.join("cgroup.procs").exists().then(|| v1.to_path_buf())
}

/// Tasks on the machine now (`sysinfo`'s count: processes and threads).
fn tasks_now() -> u64 {
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
