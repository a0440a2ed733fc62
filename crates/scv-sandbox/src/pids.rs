//! A bound on the tasks (processes and threads) of a session's sandboxed
//! commands and hooks, so a fork loop cannot take every pid of the machine
//! from the daemon and the other sessions.
//!
//! - Where the server may make cgroups (as root, or in a delegated
//!   subtree): one pids cgroup per session, *beneath the server's own
//!   cgroup* ([`CgroupTree`]: `SERVER_CGROUP/scv-PID/SESSION`), so every
//!   limit on the server holds for its tools too, and every command and
//!   hook of the session joins the same one: a repository cannot multiply
//!   the bound by shipping many hooks. (`RLIMIT_NPROC` is never enforced
//!   for root.)
//! - Otherwise `RLIMIT_NPROC`, set in the call's own user namespace where
//!   the kernel counts only that namespace's tasks, so the limit is the
//!   call's.

use std::io;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};

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

/// The file of a cgroup directory a task joins by writing `0` to it:
/// `tasks` on v1 (see [`join`]), `cgroup.procs` on v2.
pub(crate) fn tasks_file(dir: &Path) -> PathBuf {
    let tasks = dir.join("tasks");
    if tasks.exists() {
        tasks
    } else {
        dir.join("cgroup.procs")
    }
}

/// The session's cgroup `dir`, opened to join: a task joins by writing
/// `0` to it.
pub(crate) fn open_to_join(dir: &Path) -> Result<std::os::fd::OwnedFd, crate::Error> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(tasks_file(dir))
        .map(std::os::fd::OwnedFd::from)
        .map_err(|e| {
            crate::Error::io(
                format!("cannot join the session's cgroup {}", dir.display()),
                e,
            )
        })
}

/// The server's own subtree of the pids hierarchy, beneath the cgroup the
/// server runs in: `SERVER_CGROUP/scv-PID`. Removed (with what is left
/// in it) when dropped.
#[derive(Debug)]
pub struct CgroupTree {
    base: PathBuf,
}

impl CgroupTree {
    /// Makes the server's subtree; `Ok(None)` where this process may not
    /// make cgroups (not root, nothing delegated): then `RLIMIT_NPROC`.
    /// As root a failure is an error (root is not bound otherwise).
    pub fn open() -> Result<Option<CgroupTree>, String> {
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        let Some(own) = own_cgroup() else {
            return if root {
                Err("running as root, and no pids cgroup hierarchy is mounted (RLIMIT_NPROC does not bind root)".into())
            } else {
                Ok(None)
            };
        };
        sweep(&own);
        // SAFETY: getpid cannot fail.
        let base = own.join(format!("scv-{}", unsafe { libc::getpid() }));
        let made = (|| {
            match std::fs::create_dir(&base) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(err),
            }
            // On v2 a cgroup's children get the controller only through
            // its parent's `subtree_control`.
            let control = base.join("cgroup.subtree_control");
            if control.exists() {
                std::fs::write(&control, "+pids")?;
            }
            Ok(())
        })();
        match made {
            Ok(()) => Ok(Some(CgroupTree { base })),
            Err(err) => {
                let _ = std::fs::remove_dir(&base);
                if root {
                    Err(format!(
                        "running as root, and a pids cgroup beneath the server's own ({}) cannot be made: {err}",
                        own.display()
                    ))
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// Where the subtree is.
    pub fn path(&self) -> &Path {
        &self.base
    }

    /// A session's cgroup, bound to `max` tasks.
    pub fn session(&self, name: &str, max: u32) -> io::Result<SessionCgroup> {
        let dir = self.base.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
        let cgroup = SessionCgroup { dir };
        std::fs::write(cgroup.dir.join("pids.max"), max.to_string())?;
        Ok(cgroup)
    }
}

impl CgroupTree {
    /// Kills what is left below and removes the subtree (the server ends).
    pub fn remove(&self) {
        remove_tree(&self.base);
    }
}

impl Drop for CgroupTree {
    fn drop(&mut self) {
        remove_tree(&self.base);
    }
}

/// One session's pids cgroup; what is left in it is killed and the cgroup
/// removed when dropped.
#[derive(Debug)]
pub struct SessionCgroup {
    dir: PathBuf,
}

impl SessionCgroup {
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The tasks in it now.
    pub fn tasks(&self) -> Vec<i32> {
        read_pids(&self.dir)
    }
}

impl Drop for SessionCgroup {
    fn drop(&mut self) {
        remove_tree(&self.dir);
    }
}

/// Kills whatever is in `dir` and below, then removes the folders (a few
/// tries: a killed task leaves its cgroup when it is reaped).
fn remove_tree(dir: &Path) {
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    children.push(dir.to_path_buf());
    for cgroup in &children {
        for pid in read_pids(cgroup) {
            // SAFETY: kill only sends a signal.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    for cgroup in &children {
        for _ in 0..50 {
            match std::fs::remove_dir(cgroup) {
                Ok(()) => break,
                Err(err) if err.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Err(_) => break,
            }
        }
    }
}

fn read_pids(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Subtrees of servers that are gone (killed before they could clean up).
fn sweep(own: &Path) {
    for entry in std::fs::read_dir(own).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("scv-"))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            remove_tree(&entry.path());
        }
    }
}

/// The directory of the pids cgroup this process runs in: on cgroup v1 the
/// `pids` hierarchy's, on v2 the unified one's where the pids controller
/// is available there; `None` without either.
fn own_cgroup() -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == "pids") {
            let mount = mount_point(&mounts, |fstype, options| {
                fstype == "cgroup" && options.split(',').any(|o| o == "pids")
            })?;
            return Some(mount.join(path.trim_start_matches('/')));
        }
    }
    let path = cgroups.lines().find_map(|line| line.strip_prefix("0::"))?;
    let mount = mount_point(&mounts, |fstype, _| fstype == "cgroup2")?;
    let dir = mount.join(path.trim_start_matches('/'));
    let controllers = std::fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "pids")
        .then_some(dir)
}

/// The mount point of the first mount in `mountinfo` whose type and super
/// options `wanted` accepts.
fn mount_point(mountinfo: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let point = left.split_whitespace().nth(4)?;
        let mut right = right.split_whitespace();
        let fstype = right.next()?;
        let _source = right.next();
        let options = right.next().unwrap_or("");
        wanted(fstype, options).then(|| PathBuf::from(point))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_read_from_mountinfo() {
        let info = "30 25 0:26 / /sys/fs/cgroup/pids rw,relatime shared:13 - cgroup cgroup rw,pids\n31 25 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            mount_point(info, |t, o| t == "cgroup"
                && o.split(',').any(|o| o == "pids")),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(
            mount_point(info, |t, _| t == "cgroup2"),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
    }
}
