//! `sandbox_network = "allowlist"`: the commands' side of the wall.
//!
//! The holder of a session's machine (`resident`) enters a network
//! namespace of its own with its user and mount namespaces: it holds only
//! a loopback interface, which the holder brings up, so no route leads
//! anywhere. In it the holder makes one TCP listener, `127.0.0.1:`
//! [`PROXY_PORT`], and hands that descriptor out (`SCM_RIGHTS`) before it
//! sleeps: the daemon accepts on it, so a connection a command makes to
//! the proxy address arrives straight in the daemon's proxy (in the host's
//! namespace, where it may reach the allowed hosts) — no forwarder, no
//! copy in between. Every command joins that namespace with the others
//! (`setns`), and is told the proxy in [`proxy_env`].
//!
//! What is left to a command: loopback of its own namespace (its own
//! servers, the proxy), Unix socket pairs, nothing else. No name server is
//! reachable either: a client with a proxy sends host names to it and
//! never resolves them itself.

use crate::sys;
use std::io;
use std::os::fd::RawFd;

/// The proxy's port on the namespace's loopback (the namespace is the
/// session's own, so nothing else can hold it).
pub const PROXY_PORT: u16 = 3128;

/// The proxy as commands are told it.
pub fn proxy_url() -> String {
    format!("http://127.0.0.1:{PROXY_PORT}")
}

/// The loopback names a command reaches directly (its own namespace's
/// loopback), unless the allowlist names them.
pub const DIRECT: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// What a command in the namespace gets in its environment: the proxy
/// under each name clients read (curl, pip, npm, cargo, go, git read the
/// lower or upper case forms), and `direct` (`NO_PROXY`) left direct.
pub fn proxy_env(direct: &str) -> Vec<(&'static str, String)> {
    let url = proxy_url();
    let direct = direct.to_string();
    vec![
        ("HTTP_PROXY", url.clone()),
        ("HTTPS_PROXY", url.clone()),
        ("ALL_PROXY", url.clone()),
        ("http_proxy", url.clone()),
        ("https_proxy", url.clone()),
        ("all_proxy", url.clone()),
        ("NO_PROXY", direct.clone()),
        ("no_proxy", direct),
        // npm reads its own names before the common ones.
        ("npm_config_proxy", url.clone()),
        ("npm_config_https_proxy", url),
    ]
}

/// Brings up the namespace's loopback interface. For a forked child, with
/// `CAP_NET_ADMIN` in the namespace's user namespace: system calls only.
pub(crate) fn loopback_up() -> io::Result<()> {
    // SAFETY: a datagram socket for the interface requests, closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: an all-zero `ifreq` is valid; the name fits.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: interface requests on our socket with a request we own.
    let result = unsafe {
        if libc::ioctl(fd, libc::SIOCGIFFLAGS as _, &mut request) < 0 {
            -1
        } else {
            request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            libc::ioctl(fd, libc::SIOCSIFFLAGS as _, &request)
        }
    };
    let err = io::Error::last_os_error();
    sys::close(fd);
    if result < 0 {
        return Err(err);
    }
    Ok(())
}

/// A TCP listener on `127.0.0.1:PROXY_PORT` of the calling process's
/// namespace. For a forked child: system calls only.
pub(crate) fn listen() -> io::Result<RawFd> {
    // SAFETY: a stream socket we own.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: an all-zero `sockaddr_in` is valid; then the fields.
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_port = PROXY_PORT.to_be();
    addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
    // SAFETY: bind and listen on our socket with an address we own.
    let result = unsafe {
        if libc::bind(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) < 0
        {
            -1
        } else {
            libc::listen(fd, 1024)
        }
    };
    if result < 0 {
        let err = io::Error::last_os_error();
        sys::close(fd);
        return Err(err);
    }
    Ok(fd)
}

/// Space for one descriptor's control message (`CMSG_SPACE(4)` is 24 on
/// 64-bit Linux; rounded up).
const CONTROL: usize = 32;

/// `sendmsg` of `data` with `fd` (if not negative) on a Unix socket. For
/// a forked child: system calls only, nothing allocated.
pub(crate) fn send_with_fd(socket: RawFd, data: &[u8], fd: RawFd) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut control = [0u8; CONTROL];
    // SAFETY: a zeroed msghdr pointing at buffers on this stack.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if fd >= 0 {
        msg.msg_control = control.as_mut_ptr().cast();
        // SAFETY: the size macros compute constants.
        msg.msg_controllen =
            unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
        // SAFETY: one SCM_RIGHTS message in the buffer sized for it.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
            libc::CMSG_DATA(cmsg).cast::<RawFd>().write_unaligned(fd);
        }
    }
    // SAFETY: sendmsg of those buffers.
    if unsafe { libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `recvmsg` of one message into `buf`, with the descriptor it carries.
pub(crate) fn receive_with_fd(
    socket: RawFd,
    buf: &mut [u8],
) -> io::Result<(usize, Option<std::os::fd::OwnedFd>)> {
    use std::os::fd::FromRawFd;
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u8; CONTROL];
    // SAFETY: a zeroed msghdr pointing at buffers we own.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = CONTROL;
    let n = loop {
        // SAFETY: recvmsg into those buffers.
        let n = unsafe { libc::recvmsg(socket, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n as usize;
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    };
    let mut fd = None;
    // SAFETY: walking the control messages the kernel wrote.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if !cmsg.is_null()
            && (*cmsg).cmsg_level == libc::SOL_SOCKET
            && (*cmsg).cmsg_type == libc::SCM_RIGHTS
        {
            let raw = libc::CMSG_DATA(cmsg).cast::<RawFd>().read_unaligned();
            fd = Some(std::os::fd::OwnedFd::from_raw_fd(raw));
        }
    }
    Ok((n, fd))
}

/// A connected pair of `SOCK_SEQPACKET` sockets (close-on-exec): the
/// holder's report, which can carry a descriptor.
pub(crate) fn report_pair() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut pair = [0 as RawFd; 2];
    // SAFETY: a socket pair into an array we own.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            pair.as_mut_ptr(),
        )
    } < 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are ours from here on.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(pair[0]),
            std::os::fd::OwnedFd::from_raw_fd(pair[1]),
        )
    })
}
