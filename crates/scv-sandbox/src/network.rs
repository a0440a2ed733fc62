//! `sandbox_network = false`: seccomp filters that refuse every socket but
//! local ones.
//!
//! Landlock (ABI 7) only rules TCP ports, not `socket()` itself, so the
//! filter is seccomp's: `socket` and `socketpair` for any family but
//! `AF_UNIX` and `AF_NETLINK` fail with EPERM (so the message says a policy
//! refused it). io_uring and the x32 calls are refused whatever the network
//! setting (`doors`).

use seccompiler::{
    BackendError, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

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
    sockets.insert(libc::SYS_socket, not_local()?);
    sockets.insert(libc::SYS_socketpair, not_local()?);
    let sockets = SeccompFilter::new(
        sockets,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    Ok(vec![sockets.try_into()?])
}
