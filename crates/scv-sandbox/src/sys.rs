//! The system calls the sandbox makes between `fork` and `exec`: thin,
//! allocation-free wrappers over `libc` that return the OS error. A leaf.

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

pub(crate) fn check(result: libc::c_int) -> io::Result<()> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn check_fd(result: libc::c_long) -> io::Result<RawFd> {
    if result < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(result as RawFd)
    }
}

/// Writes `bytes` to a new or existing file at `path` (mode 0644 when
/// created), truncating it.
pub(crate) fn write_file(path: &CStr, bytes: &[u8], create: bool) -> io::Result<()> {
    let flags = libc::O_WRONLY
        | libc::O_CLOEXEC
        | libc::O_NOFOLLOW
        | if create {
            libc::O_CREAT | libc::O_TRUNC
        } else {
            0
        };
    // SAFETY: open/write/close on a NUL-terminated path and a buffer we own.
    unsafe {
        let fd = libc::open(path.as_ptr(), flags, 0o644 as libc::c_uint);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut done = 0usize;
        while done < bytes.len() {
            let n = libc::write(fd, bytes[done..].as_ptr().cast(), bytes.len() - done);
            if n <= 0 {
                let err = io::Error::last_os_error();
                libc::close(fd);
                return Err(err);
            }
            done += n as usize;
        }
        libc::close(fd);
    }
    Ok(())
}

pub(crate) fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: NUL-terminated strings or null.
    check(unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            ptr(data).cast(),
        )
    })
}

pub(crate) fn mkdir(path: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: a NUL-terminated path.
    match check(unsafe { libc::mkdir(path.as_ptr(), mode) }) {
        Err(err) if err.raw_os_error() == Some(libc::EEXIST) => Ok(()),
        other => other,
    }
}

pub(crate) fn symlink(target: &CStr, link: &CStr) -> io::Result<()> {
    // SAFETY: NUL-terminated paths.
    match check(unsafe { libc::symlink(target.as_ptr(), link.as_ptr()) }) {
        Err(err) if err.raw_os_error() == Some(libc::EEXIST) => Ok(()),
        other => other,
    }
}

pub(crate) fn chdir(path: &CStr) -> io::Result<()> {
    // SAFETY: a NUL-terminated path.
    check(unsafe { libc::chdir(path.as_ptr()) })
}

pub(crate) fn close(fd: RawFd) {
    // SAFETY: closes a descriptor this process opened.
    unsafe { libc::close(fd) };
}

/// `open_tree(2)` (Linux 5.2): a detached copy of the mount tree at
/// `path`, to attach elsewhere with [`move_mount`].
pub(crate) fn open_tree_clone(path: &CStr) -> io::Result<RawFd> {
    const OPEN_TREE_CLONE: libc::c_uint = 1;
    const OPEN_TREE_CLOEXEC: libc::c_uint = libc::O_CLOEXEC as libc::c_uint;
    let flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | libc::AT_RECURSIVE as libc::c_uint;
    // SAFETY: a NUL-terminated path; returns a new descriptor.
    check_fd(unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) })
}

/// `move_mount(2)`: attaches the detached tree `fd` at `target`.
pub(crate) fn move_mount(fd: RawFd, target: &CStr) -> io::Result<()> {
    const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
    // SAFETY: an open mount descriptor, an empty string and a path.
    let result = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd,
            c"".as_ptr(),
            libc::AT_FDCWD,
            target.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    check(result as libc::c_int)
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
const MOUNT_ATTR_NOSUID: u64 = 0x2;

fn setattr(dirfd: RawFd, path: &CStr, flags: libc::c_uint, set: u64, clear: u64) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a path and an attribute struct we own.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    check(result as libc::c_int)
}

/// Makes the mount at `path` (or the detached tree `fd`, with an empty
/// path) — and, `recursive`, every mount below it — read-only or
/// writable, and `nosuid`. A mount below that the kernel locked read-only
/// (it was read-only in the parent namespace) cannot be made writable;
/// then only the top one is.
pub(crate) fn set_read_only(
    fd: Option<RawFd>,
    path: &CStr,
    read_only: bool,
    recursive: bool,
) -> io::Result<()> {
    let (dirfd, empty) = match fd {
        Some(fd) => (fd, libc::AT_EMPTY_PATH as libc::c_uint),
        None => (libc::AT_FDCWD, 0),
    };
    let (set, clear) = if read_only {
        (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0)
    } else {
        (MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY)
    };
    let all = if recursive {
        empty | libc::AT_RECURSIVE as libc::c_uint
    } else {
        empty
    };
    match setattr(dirfd, path, all, set, clear) {
        Ok(()) => Ok(()),
        Err(err) if !read_only && err.raw_os_error() == Some(libc::EPERM) => {
            setattr(dirfd, path, empty, set, clear)
        }
        Err(err) => Err(err),
    }
}

/// `pivot_root(".", ".")` in the new root, then the old root (stacked on
/// top of it) detached: what is left is the new root alone.
pub(crate) fn pivot_here(new_root: &CStr) -> io::Result<()> {
    chdir(new_root)?;
    // SAFETY: NUL-terminated paths.
    check(unsafe { libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) } as i32)?;
    // SAFETY: a NUL-terminated path.
    check(unsafe { libc::umount2(c".".as_ptr(), libc::MNT_DETACH) })?;
    chdir(c"/")
}

/// Detaches the mount at `path` (lazily: what is bound from it stays).
pub(crate) fn detach(path: &CStr) -> io::Result<()> {
    // SAFETY: a NUL-terminated path.
    check(unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) })
}

pub(crate) fn rmdir(path: &CStr) -> io::Result<()> {
    // SAFETY: a NUL-terminated path.
    check(unsafe { libc::rmdir(path.as_ptr()) })
}

/// `struct landlock_path_beneath_attr` (packed in the kernel's header).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds a rule granting `access` beneath `path` to the Landlock ruleset
/// `ruleset`.
pub(crate) fn landlock_add_path(ruleset: RawFd, path: &CStr, access: u64) -> io::Result<()> {
    const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: fd,
    };
    // SAFETY: a ruleset descriptor and an attribute struct we own.
    let result = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    let err = io::Error::last_os_error();
    close(fd);
    if result < 0 {
        return Err(err);
    }
    Ok(())
}
