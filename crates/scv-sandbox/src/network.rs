//! `sandbox_network = false`: seccomp filters that refuse every socket but
//! local ones.
//!
//! Landlock (ABI 7) only rules TCP ports, not `socket()` itself, so the
//! filter is seccomp's: `socket` and `socketpair` for any family but
//! `AF_UNIX` and `AF_NETLINK` fail with EPERM (so the message says a policy
//! refused it), and io_uring, which can open and connect sockets without a
//! syscall the filter sees, fails with ENOSYS (callers fall back to epoll).
//! The x32 aliases of those calls are covered; 32-bit (i386) system calls
//! are killed by the filter's architecture check.

use seccompiler::{
    BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

#[cfg(target_arch = "x86_64")]
const ABI_BITS: &[i64] = &[0, 0x4000_0000];
#[cfg(not(target_arch = "x86_64"))]
const ABI_BITS: &[i64] = &[0];

pub(crate) fn filters() -> Result<Vec<BpfProgram>, crate::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let not_local = || -> Result<Vec<SeccompRule>, BackendError> {
        let family_is_not = |family: libc::c_int| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
        };
        Ok(vec![SeccompRule::new(vec![
            family_is_not(libc::AF_UNIX)?,
            family_is_not(libc::AF_NETLINK)?,
        ])?])
    };
    let mut sockets = BTreeMap::new();
    let mut uring = BTreeMap::new();
    for &bits in ABI_BITS {
        sockets.insert(bits | libc::SYS_socket, not_local()?);
        sockets.insert(bits | libc::SYS_socketpair, not_local()?);
        for call in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            uring.insert(bits | call, Vec::new());
        }
    }
    let sockets = SeccompFilter::new(
        sockets,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    let uring = SeccompFilter::new(
        uring,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    Ok(vec![sockets.try_into()?, uring.try_into()?])
}
