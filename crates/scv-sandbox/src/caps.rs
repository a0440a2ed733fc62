//! Dropping every capability before `exec`, even as root: bounding,
//! ambient, permitted, effective and inheritable sets, and the securebits
//! that keep an `exec` as root from granting them back. Run as root (in
//! containers and CI), a command would otherwise keep
//! `CAP_SYS_PTRACE`, `CAP_DAC_READ_SEARCH` (`open_by_handle_at` walks past
//! path rules) and the rest.

use std::io;

// linux/securebits.h
const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;

/// linux/capability.h, version 3 (64-bit sets in two halves).
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops every capability of the calling process for good. For the child
/// between `fork` and `exec`: system calls only. The securebits and the
/// bounding set need `CAP_SETPCAP`; without it (an ordinary user outside a
/// user namespace) they stay as they are, which is harmless once the
/// permitted set is empty and no-new-privileges is set.
pub(crate) fn drop_all() -> io::Result<()> {
    let bits = SECBIT_NOROOT
        | SECBIT_NOROOT_LOCKED
        | SECBIT_NO_SETUID_FIXUP
        | SECBIT_NO_SETUID_FIXUP_LOCKED
        | SECBIT_KEEP_CAPS_LOCKED
        | SECBIT_NO_CAP_AMBIENT_RAISE
        | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: prctl and capset on this process only.
    unsafe {
        libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0);
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) < 0
                && *libc::__errno_location() == libc::EINVAL
            {
                break; // past the last capability this kernel knows
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let mut header = CapHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        ) < 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
