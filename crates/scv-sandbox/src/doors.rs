//! Seccomp filters that close the local doors out of the sandbox, whatever
//! `sandbox_network` says.
//!
//! Landlock (below ABI 9) does not rule `connect()` on a pathname Unix
//! socket, and every local service that listens on one and acts on what it
//! is told — SCV's own daemon, tmux, screen, the D-Bus session bus, SSH and
//! GPG agents, Docker, X11 — would be a way out. So no Unix socket can be
//! made: `socket(AF_UNIX, …)` fails (where Landlock ABI 9 rules `connect`,
//! it does that instead and only listed sockets are reachable). Stream and
//! seqpacket pairs made with `socketpair` are already connected to each
//! other and stay allowed; no other kind (`SOCK_DGRAM`, `SOCK_RAW`), which
//! could still `sendto` any path. `clone3` fails with ENOSYS (libc falls
//! back to `clone`): it could place a child in another cgroup.
//! Abstract sockets are fenced by Landlock's scope.
//!
//! Also refused: pushing input into a terminal (`TIOCSTI`, `TIOCLINUX`) or
//! taking the console (`TIOCCONS`); the kernel keyrings (`add_key`,
//! `request_key`, `keyctl`: Kerberos tickets and other secrets of the
//! user's session live there); and io_uring, which can open and connect
//! sockets without a system call the filter sees (callers fall back to
//! epoll). Every x32 system call fails (ENOSYS): x32 numbers differ from
//! x86_64's for some of these calls (`ioctl` is 514), so a filter listing
//! x86_64 numbers would not see them; 32-bit (i386) calls are killed by
//! the filters' architecture check.

use seccompiler::{
    sock_filter, BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp,
    SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// `ioctl` requests that act on another's terminal or the console.
const TERMINAL_IOCTLS: &[u64] = &[
    0x5412, // TIOCSTI: fake input
    0x541C, // TIOCLINUX: selection paste and console control
    0x541D, // TIOCCONS: redirect the console
];

/// The low bits of `socket`'s type that name the kind (the rest are
/// `SOCK_NONBLOCK` / `SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;

/// `unix_by_landlock`: Landlock rules `connect()` on Unix sockets here, so
/// `socket(AF_UNIX)` itself stays allowed.
pub(crate) fn filters(unix_by_landlock: bool) -> Result<Vec<BpfProgram>, crate::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let eq = |arg: u8, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
    };
    let rule = |conditions: Vec<SeccompCondition>| -> Result<SeccompRule, BackendError> {
        SeccompRule::new(conditions)
    };
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut unsupported = BTreeMap::new();
    if !unix_by_landlock {
        refused.insert(
            libc::SYS_socket,
            vec![rule(vec![eq(0, libc::AF_UNIX as u64)?])?],
        );
    }
    // Only stream and seqpacket pairs: a datagram pair (`SOCK_DGRAM`, and
    // `SOCK_RAW`, which AF_UNIX treats as one) could `sendto` any path.
    let mut pairs = Vec::new();
    for kind in 0..=SOCK_TYPE_MASK {
        if kind == libc::SOCK_STREAM as u64 || kind == libc::SOCK_SEQPACKET as u64 {
            continue;
        }
        let of_kind = SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
            kind,
        )?;
        pairs.push(rule(vec![eq(0, libc::AF_UNIX as u64)?, of_kind])?);
    }
    refused.insert(libc::SYS_socketpair, pairs);
    // `ioctl`'s request is an `unsigned int`: only its low 32 bits count,
    // which is what a double-word comparison looks at.
    let ioctls = TERMINAL_IOCTLS
        .iter()
        .map(|&request| rule(vec![eq(1, request)?]))
        .collect::<Result<Vec<_>, _>>()?;
    refused.insert(libc::SYS_ioctl, ioctls);
    for call in [libc::SYS_add_key, libc::SYS_request_key, libc::SYS_keyctl] {
        refused.insert(call, Vec::new());
    }
    // `clone3` can place the child in any cgroup it may write
    // (`CLONE_INTO_CGROUP`), out of the session's bound; without it, libc
    // falls back to `clone`, which cannot.
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_clone3,
    ] {
        unsupported.insert(call, Vec::new());
    }
    let refused = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    let unsupported = SeccompFilter::new(
        unsupported,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    let mut filters: Vec<BpfProgram> = vec![refused.try_into()?, unsupported.try_into()?];
    filters.extend(no_x32());
    Ok(filters)
}

/// A filter failing every x32 system call with ENOSYS (x86_64 only).
fn no_x32() -> Option<BpfProgram> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let stmt = |code: u32, k: u32| sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let ld_nr = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let ret = libc::BPF_RET | libc::BPF_K;
    Some(vec![
        // The system call number (offset 0 of `struct seccomp_data`).
        stmt(ld_nr, 0),
        sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        stmt(ret, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        stmt(ret, libc::SECCOMP_RET_ALLOW),
    ])
}
