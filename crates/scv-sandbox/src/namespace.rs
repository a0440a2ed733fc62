//! Whether this machine can give commands the made-up machine
//! (`machine`): a user and mount namespace of their own, detached mount
//! trees (`open_tree`, `move_mount`, Linux 5.2), `mount_setattr` (5.12)
//! and `pivot_root`. Asked once by the server, by building one for real in
//! a forked child.

use crate::machine::Machine;
use crate::policy::{Mode, Policy, Settings};
use std::io;
use std::path::Path;

/// Whether a child can build the machine (the error, in words, if not).
/// Forks; the child only makes system calls, so a multi-threaded caller is
/// fine.
pub(crate) fn probe() -> Result<(), String> {
    let workspace = crate::paths::canonical(&std::env::temp_dir());
    let policy = Policy::new(
        &Settings {
            mode: Mode::ReadOnly,
            mount_namespace: true,
            ..Default::default()
        },
        Path::new(&workspace),
    );
    let mut machine = Machine::plan(&policy, Path::new("/"));
    // SAFETY: the child only makes system calls and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("cannot fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        let code = match machine.apply() {
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
