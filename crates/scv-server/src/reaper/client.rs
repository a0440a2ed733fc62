//! The server's side of a session's tool host (`host`): started once, it
//! starts each sandboxed command or hook on request, and its reaper is
//! watched and signalled through a pidfd.

use super::host::{receive, send_fds, Request, REQUEST_FDS};
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// One session's tool host.
pub(crate) struct ToolHost {
    socket: AsyncFd<OwnedFd>,
    /// Killed when dropped (closing the socket ends it too).
    _process: tokio::process::Child,
    /// One request at a time: a reply answers the request before it.
    turn: tokio::sync::Mutex<()>,
}

/// A reaper the tool host forked.
pub(crate) struct Hosted {
    pub pid: i32,
    pidfd: AsyncFd<OwnedFd>,
    /// The proxy's listener in the network namespace of a sandbox the
    /// host made for this request (`sandbox_network = "allowlist"`).
    pub listener: Option<OwnedFd>,
}

impl ToolHost {
    /// Starts the host for the session whose policies are `policies`
    /// (`@PATH` each, in the order requests name them).
    pub(crate) fn start(policies: &[std::sync::Arc<str>]) -> std::io::Result<ToolHost> {
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
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both descriptors are ours from here on.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
        // SAFETY: fcntl on our descriptor.
        unsafe {
            let flags = libc::fcntl(ours.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(ours.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        let mut command = super::command_with(&[
            super::host::HOST.to_string(),
            theirs.as_raw_fd().to_string(),
        ]);
        command.args(policies.iter().map(|p| p.as_ref()));
        let inherit = theirs.as_raw_fd();
        // SAFETY: fcntl between fork and exec.
        unsafe {
            command.pre_exec(move || {
                libc::fcntl(inherit, libc::F_SETFD, 0);
                Ok(())
            });
        }
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true);
        let process = command.spawn()?;
        drop(theirs);
        Ok(ToolHost {
            socket: watch(ours, Interest::READABLE | Interest::WRITABLE)?,
            _process: process,
            turn: tokio::sync::Mutex::new(()),
        })
    }

    /// Starts `request` under the host's policy `policy`, with the given
    /// stdin, stdout, stderr and report descriptors.
    pub(crate) async fn spawn(
        &self,
        policy: usize,
        request: &Request,
        fds: [OwnedFd; REQUEST_FDS - 1],
    ) -> Result<Hosted, String> {
        let payload = memfd(&request.encode())
            .map_err(|e| format!("cannot pass the request to the tool host: {e}"))?;
        let mut all: Vec<RawFd> = vec![payload.as_raw_fd()];
        all.extend(fds.iter().map(AsRawFd::as_raw_fd));
        let header = policy.to_string();
        let _turn = self.turn.lock().await;
        loop {
            let mut ready = self
                .socket
                .writable()
                .await
                .map_err(|e| format!("the tool host is gone: {e}"))?;
            match ready.try_io(|fd| send_fds(fd.as_raw_fd(), header.as_bytes(), &all)) {
                Ok(Ok(())) => break,
                Ok(Err(e)) => return Err(format!("the tool host is gone: {e}")),
                Err(_would_block) => continue,
            }
        }
        drop((payload, fds));
        let mut buf = [0u8; 4096];
        let (n, received) = loop {
            let mut ready = self
                .socket
                .readable()
                .await
                .map_err(|e| format!("the tool host is gone: {e}"))?;
            match ready.try_io(|fd| receive(fd.as_raw_fd(), &mut buf)) {
                Ok(Ok(got)) => break got,
                Ok(Err(e)) => return Err(format!("the tool host is gone: {e}")),
                Err(_would_block) => continue,
            }
        };
        let text = String::from_utf8_lossy(&buf[..n]);
        if n == 0 {
            return Err("the tool host ended".into());
        }
        if let Some(why) = text.strip_prefix("err ") {
            return Err(why.to_string());
        }
        let pid: i32 = text
            .strip_prefix("ok ")
            .and_then(|p| p.trim().parse().ok())
            .ok_or_else(|| format!("the tool host answered `{text}`"))?;
        let mut received = received.into_iter();
        let pidfd = received.next().ok_or("the tool host sent no pidfd")?;
        Ok(Hosted {
            listener: received.next(),
            pid,
            pidfd: watch(pidfd, Interest::READABLE)
                .map_err(|e| format!("cannot watch the reaper: {e}"))?,
        })
    }
}

impl Hosted {
    /// Sends `signal` to the reaper (nothing once it has ended).
    pub(crate) fn signal(&self, signal: i32) {
        // SAFETY: pidfd_send_signal on a pidfd we hold.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.as_raw_fd(),
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            )
        };
    }

    /// Kills the reaper's process group, while it has not ended (its pid
    /// is not reused before).
    pub(crate) fn kill_group(&self) {
        if !self.ended() {
            // SAFETY: killpg of the group the reaper leads.
            unsafe { libc::killpg(self.pid, libc::SIGKILL) };
        }
    }

    fn ended(&self) -> bool {
        let mut poll = libc::pollfd {
            fd: self.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll of one descriptor we hold, without waiting.
        unsafe { libc::poll(&mut poll, 1, 0) > 0 }
    }

    /// Waits until the reaper has ended.
    pub(crate) async fn wait(&self) {
        let _ = self.pidfd.readable().await;
    }
}

/// `fd` registered with the runtime's reactor.
fn watch(fd: OwnedFd, interest: Interest) -> std::io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: an `OwnedFd` stays open and the same descriptor for as long
    // as the `AsyncFd` owns it.
    unsafe { AsyncFd::register_with_interest(fd, interest) }
        .map_err(|err| std::io::Error::other(err.to_string()))
}

/// A memfd holding `bytes`.
fn memfd(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    // SAFETY: memfd_create with a static name.
    let fd = unsafe { libc::memfd_create(c"scv-request".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just gave us.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(bytes)?;
    Ok(OwnedFd::from(file))
}
