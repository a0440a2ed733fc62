//! The mount layer of the second wall: the command runs in a user and
//! mount namespace of its own, in which every mount is read-only except the
//! writable roots, and inside those a repository's `.git/config`,
//! `.git/config.worktree`, `.git/hooks`, `.git/info` and `.git/modules`
//! are read-only again (and `.git` itself cannot be renamed or replaced).
//!
//! Landlock rules opening files, not changing their metadata: without this
//! layer a sandboxed `chmod`, `chown`, `setfattr` or `touch` reaches any
//! file the user owns (`chmod 666 ~/.ssh/id_ed25519`). A read-only mount
//! refuses them all (EROFS). And a `.git/config` that a command may
//! rewrite is code the user's next plain `git status` runs
//! (`core.fsmonitor`, hooks, filter drivers).
//!
//! The namespace maps the user's own uid and gid only (files of other
//! users show as `nobody`); mounts copied from the parent namespace are
//! locked by the kernel, and Landlock forbids every mount change once the
//! sandbox is applied, so the command cannot undo any of this.

use crate::policy::Policy;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Entries of a `.git` directory that are code or select code.
const GIT_PROTECTED: &[&str] = &["config", "config.worktree", "hooks", "info", "modules"];

/// Everything [`Mounts::apply`] needs, made before `fork`.
pub(crate) struct Mounts {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    writable: Vec<CString>,
    /// `.git` directories bound onto themselves (still writable): a mount
    /// point cannot be renamed or removed, so no other `.git` can take its
    /// place.
    pinned: Vec<CString>,
    /// Bound onto themselves, then made read-only.
    protected: Vec<CString>,
    /// The working directory, entered again once the mounts are made: the
    /// old one is on the mount that is now read-only.
    cwd: Option<CString>,
}

impl Mounts {
    /// The mounts for `policy`, whose writable roots are `writable`
    /// (canonical; the ones that exist are kept).
    pub(crate) fn plan(policy: &Policy, writable: &[PathBuf]) -> Mounts {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let mut pinned = Vec::new();
        let mut protected = Vec::new();
        let existing: Vec<&PathBuf> = writable.iter().filter(|p| p.exists()).collect();
        if policy.protect_git {
            for root in &existing {
                let git = root.join(".git");
                match std::fs::symlink_metadata(&git) {
                    Ok(meta) if meta.is_dir() => {
                        pinned.extend(c_path(&git));
                        for name in GIT_PROTECTED {
                            let path = git.join(name);
                            if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_symlink()) {
                                protected.extend(c_path(&path));
                            }
                        }
                    }
                    // A worktree's or submodule's `gitdir:` file: it must
                    // not be pointed at a planted repository.
                    Ok(meta) if meta.is_file() => protected.extend(c_path(&git)),
                    _ => {}
                }
            }
        }
        Mounts {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            writable: existing.into_iter().filter_map(|p| c_path(p)).collect(),
            pinned,
            protected,
            cwd: std::env::current_dir().ok().and_then(|cwd| c_path(&cwd)),
        }
    }

    /// The paths made read-only inside the writable roots.
    #[cfg(test)]
    pub(crate) fn protected(&self) -> impl Iterator<Item = &std::ffi::CStr> {
        self.protected.iter().map(CString::as_c_str)
    }

    /// Enters a new user and mount namespace and makes the mounts. For the
    /// child between `fork` and `exec` of a single-threaded parent.
    pub(crate) fn apply(&self) -> io::Result<()> {
        // SAFETY: plain system calls on this process.
        check(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) })?;
        // Without "deny" an unprivileged process may not write its gid map.
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid_map)?;
        write_file(c"/proc/self/gid_map", &self.gid_map)?;
        // Nothing done here may reach the parent namespace.
        mount(None, c"/", libc::MS_REC | libc::MS_PRIVATE)?;
        for root in &self.writable {
            mount(Some(root), root, libc::MS_BIND | libc::MS_REC)?;
        }
        for path in self.pinned.iter().chain(&self.protected) {
            mount(Some(path), path, libc::MS_BIND | libc::MS_REC)?;
        }
        set_read_only(c"/", true)?;
        for root in &self.writable {
            set_read_only(root, false)?;
        }
        for path in &self.protected {
            set_read_only(path, true)?;
        }
        if let Some(cwd) = &self.cwd {
            // SAFETY: a NUL-terminated path.
            check(unsafe { libc::chdir(cwd.as_ptr()) })?;
        }
        Ok(())
    }
}

/// Whether a child can enter a user and mount namespace and make the
/// mounts a command gets (the error, in words, if not). Forks; the child
/// makes only system calls, so a multi-threaded caller is fine.
pub(crate) fn probe() -> Result<(), String> {
    let policy = Policy::new(
        &crate::policy::Settings {
            mode: crate::policy::Mode::ReadOnly,
            ..Default::default()
        },
        Path::new("/"),
    );
    let tmp = crate::paths::canonical(&std::env::temp_dir());
    let mounts = Mounts::plan(&policy, std::slice::from_ref(&tmp));
    // SAFETY: the child only makes system calls and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("cannot fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        let code = match mounts.apply() {
            Ok(()) => 0,
            Err(err) => err.raw_os_error().unwrap_or(libc::EPERM),
        };
        // SAFETY: ends the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child we forked.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(format!("cannot wait: {}", io::Error::last_os_error()));
        }
    }
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(()),
        (true, errno) => Err(io::Error::from_raw_os_error(errno).to_string()),
        _ => Err("the probe was killed".into()),
    }
}

fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: open/write/close on a path and a buffer we own.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if written != bytes.len() as isize {
            return Err(err);
        }
    }
    Ok(())
}

fn mount(
    source: Option<&CString>,
    target: &std::ffi::CStr,
    flags: libc::c_ulong,
) -> io::Result<()> {
    let source = source.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: NUL-terminated paths; no data argument.
    check(unsafe {
        libc::mount(
            source,
            target.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    })
}

/// `struct mount_attr` of `mount_setattr(2)` (Linux 5.12).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// Sets or clears read-only on the mount at `path` and every mount below
/// it. A mount below that the kernel locked read-only (it was read-only in
/// the parent namespace) cannot be made writable; then only the top one is.
fn set_read_only(path: &std::ffi::CStr, read_only: bool) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    let call = |flags: libc::c_uint| {
        // SAFETY: a NUL-terminated path and an attribute struct we own.
        unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                path.as_ptr(),
                flags,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        }
    };
    if call(libc::AT_RECURSIVE as libc::c_uint) == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if read_only || err.raw_os_error() != Some(libc::EPERM) {
        return Err(err);
    }
    check(call(0) as libc::c_int)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::policy::{Mode, Settings};

    #[test]
    fn a_repository_in_a_writable_root_has_its_code_paths_protected() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        std::fs::write(ws.join(".git/config"), "").unwrap();
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/.git"), "gitdir: ../.git/modules/sub").unwrap();
        let settings = Settings {
            mode: Mode::WorkspaceWrite,
            protect_git: true,
            ..Settings::default()
        };
        let policy = Policy::new(&settings, &ws);
        let mounts = Mounts::plan(&policy, &[ws.clone(), ws.join("sub")]);
        let protected: Vec<String> = mounts
            .protected()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let at = |rel: &str| ws.join(rel).display().to_string();
        assert_eq!(
            protected,
            [at(".git/config"), at(".git/hooks"), at("sub/.git")]
        );
        let unprotected = Mounts::plan(
            &Policy::new(
                &Settings {
                    protect_git: false,
                    ..settings
                },
                &ws,
            ),
            std::slice::from_ref(&ws),
        );
        assert_eq!(unprotected.protected().count(), 0);
    }
}
