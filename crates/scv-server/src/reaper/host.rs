//! A session's tool host: `scv-server --tool-process host FD POLICY…`, one
//! single-threaded process per session that starts the session's sandboxed
//! commands and hooks, so that none of them re-executes the server's
//! binary or builds its sandbox again.
//!
//! It is started once (at the session's first sandboxed process), with a
//! `SOCK_SEQPACKET` socket to the server and the session's policy files
//! (`@PATH` each: a command's and a user hook's, and their read-only
//! forms). For each it makes a `scv_sandbox::Resident` when first asked —
//! the made-up machine held by a holder process, the ruleset, the filters.
//! Each request (one datagram, with a memfd holding its argument vector,
//! working directory and environment, and the command's stdin, stdout,
//! stderr and report descriptors) is answered by forking a reaper — the
//! same supervision as `reaper::main`'s, in a process of its own group —
//! whose command's child joins the resident sandbox and `exec`s; the
//! reply carries the reaper's pid and a pidfd for it. The host never runs
//! anything itself, holds no lock and allocates nothing between `fork` and
//! `exec`. It ends when the server closes the socket or dies (its
//! parent-death signal); its holders die with it, and each reaper, whose
//! parent it is, kills what it started.

use super::{finish, supervise, Report, MAIN, SANDBOX_FAILED};
use std::ffi::{OsStr, OsString};
use std::io::{Read, Seek};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::{ExitCode, Stdio};
use std::sync::atomic::Ordering;

/// The argument that selects this mode, after `--tool-process`.
pub const HOST: &str = "host";

/// The descriptors a request carries, in order.
pub(crate) const REQUEST_FDS: usize = 5;

/// Runs the host; `args` are those after `--tool-process host`.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let Some(socket) = args
        .first()
        .and_then(|fd| fd.to_str())
        .and_then(|fd| fd.parse::<RawFd>().ok())
    else {
        eprintln!("scv-server --tool-process host: expected a socket descriptor");
        return ExitCode::from(2);
    };
    let policies: Vec<OsString> = args.into_iter().skip(1).collect();
    // SAFETY: the server passed this descriptor for us to own; plain
    // system calls on our own process.
    let socket = unsafe { OwnedFd::from_raw_fd(socket) };
    unsafe {
        libc::fcntl(socket.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    // Ended reapers are reaped here, once their pidfd is open (the kernel
    // reaping them itself, SIGCHLD ignored, would let one that ends at
    // once vanish before its pidfd is): SIGCHLD is read from a signalfd.
    let Some(children) = ChildSignals::new() else {
        eprintln!("scv-server --tool-process host: cannot make a signalfd");
        return ExitCode::from(2);
    };
    let mut residents: Vec<Option<Result<scv_sandbox::Resident, String>>> =
        (0..policies.len()).map(|_| None).collect();
    let mut buf = vec![0u8; 256];
    loop {
        match children.wait(socket.as_raw_fd()) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(_) => return ExitCode::SUCCESS,
        }
        let (n, fds) = match receive(socket.as_raw_fd(), &mut buf) {
            Ok(received) => received,
            Err(_) => return ExitCode::SUCCESS,
        };
        if n == 0 {
            // The server closed its end: the session is over.
            return ExitCode::SUCCESS;
        }
        let reply = serve(
            &buf[..n],
            fds,
            &policies,
            &mut residents,
            socket.as_raw_fd(),
        );
        // The reaper's pidfd, then the proxy's listener of a sandbox just
        // made with a network of its own (`scv_sandbox::egress`).
        let (text, fds) = match reply {
            Ok((pid, pidfd, listener)) => (format!("ok {pid}"), [Some(pidfd), listener]),
            Err(why) => (format!("err {why}"), [None, None]),
        };
        let raw: Vec<RawFd> = fds.iter().flatten().map(AsRawFd::as_raw_fd).collect();
        if send_fds(socket.as_raw_fd(), text.as_bytes(), &raw).is_err() {
            return ExitCode::SUCCESS;
        }
    }
}

/// One request: the policy's index, then its resident sandbox made if it
/// is not, then a reaper forked for it. Returns the reaper's pid and
/// pidfd, and the proxy's listener of a sandbox made for this request.
fn serve(
    header: &[u8],
    fds: Vec<OwnedFd>,
    policies: &[OsString],
    residents: &mut [Option<Result<scv_sandbox::Resident, String>>],
    socket: RawFd,
) -> Result<(i32, OwnedFd, Option<OwnedFd>), String> {
    if fds.len() != REQUEST_FDS {
        return Err(format!(
            "expected {REQUEST_FDS} descriptors, got {}",
            fds.len()
        ));
    }
    let index: usize = std::str::from_utf8(header)
        .ok()
        .and_then(|h| h.trim().parse().ok())
        .filter(|i| *i < policies.len())
        .ok_or("no such policy")?;
    let mut fds = fds.into_iter();
    let (Some(payload), Some(stdin), Some(stdout), Some(stderr), Some(report)) =
        (fds.next(), fds.next(), fds.next(), fds.next(), fds.next())
    else {
        return Err("missing descriptors".into());
    };
    let request = Request::read(payload)?;
    let policy = scv_sandbox::Policy::from_arg(&policies[index].to_string_lossy())
        .map_err(|err| err.to_string())?;
    // Built again when a credential file appeared since (or went).
    if matches!(&residents[index], Some(Ok(resident)) if resident.stale(&policy)) {
        residents[index] = None;
    }
    let resident = residents[index]
        .get_or_insert_with(|| scv_sandbox::Resident::new(&policy).map_err(|err| err.to_string()));
    let listener = resident
        .as_mut()
        .ok()
        .and_then(scv_sandbox::Resident::take_listener);
    // SAFETY: the host is single threaded; the child runs the reaper and
    // exits, never returning here.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("cannot fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: closes our copy of the server's socket (its end must see
        // the host go, not wait on this reaper); SIGCHLD as it was. (The
        // listener is closed at `exec`.)
        unsafe {
            libc::close(socket);
            ChildSignals::undo();
        }
        let code = match resident {
            Ok(resident) => reap(resident, request, stdin, stdout, stderr, report),
            Err(why) => {
                let _ = std::io::Write::write_all(
                    &mut std::fs::File::from(stderr),
                    format!("cannot set up the sandbox: {why}\n").as_bytes(),
                );
                finish(Some(report.as_raw_fd()), failed(SANDBOX_FAILED));
                0
            }
        };
        // SAFETY: ends the reaper without unwinding into the host's loop.
        unsafe { libc::_exit(code) };
    }
    // SAFETY: pidfd_open on the child we just forked (Linux 5.3).
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        let err = std::io::Error::last_os_error();
        // SAFETY: the reaper we forked, which nobody can see now.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        return Err(format!("cannot open a pidfd: {err}"));
    }
    // SAFETY: a descriptor the kernel just gave us.
    Ok((
        pid,
        unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) },
        listener,
    ))
}

/// SIGCHLD blocked and read from a signalfd, so the host reaps its ended
/// children between requests.
struct ChildSignals {
    fd: OwnedFd,
}

impl ChildSignals {
    fn new() -> Option<ChildSignals> {
        // SAFETY: signal-mask calls on this single-threaded process and a
        // signalfd we own.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGCHLD);
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            (fd >= 0).then(|| ChildSignals {
                fd: OwnedFd::from_raw_fd(fd),
            })
        }
    }

    /// In a forked child: SIGCHLD unblocked again.
    ///
    /// # Safety
    /// Signal-mask calls only.
    unsafe fn undo() {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }

    /// Waits until `socket` is readable (true), reaping ended children
    /// meanwhile (false after a reap, to wait again).
    fn wait(&self, socket: RawFd) -> std::io::Result<bool> {
        let mut fds = [
            libc::pollfd {
                fd: socket,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: poll on descriptors we hold.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::EINTR) => Ok(false),
                _ => Err(err),
            };
        }
        if fds[1].revents != 0 {
            let mut info = [0u8; 128];
            // SAFETY: drains the signalfd into a buffer we own, then reaps
            // every ended child without blocking.
            unsafe {
                while libc::read(self.fd.as_raw_fd(), info.as_mut_ptr().cast(), info.len()) > 0 {}
                while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
            }
        }
        Ok(fds[0].revents != 0)
    }
}

fn failed(code: i32) -> Report {
    Report {
        code: Some(code),
        signal: None,
        killed: 0,
    }
}

/// The reaper, in the host's fork: a process group of its own, a child
/// subreaper that kills everything below it when its command ends, it is
/// told to stop, or the host dies; the command's child joins the resident
/// sandbox. Returns the exit code.
fn reap(
    resident: &scv_sandbox::Resident,
    request: Request,
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
    report: OwnedFd,
) -> i32 {
    // SAFETY: plain system calls on this process; the handler only
    // stores to atomics and sends a signal.
    unsafe {
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        super::become_reaper();
    }
    let Some((program, rest)) = request.argv.split_first() else {
        finish(Some(report.as_raw_fd()), failed(127));
        return 0;
    };
    let mut command = std::process::Command::new(program);
    command
        .args(rest)
        .current_dir(&request.cwd)
        .env_clear()
        .envs(request.env.iter().map(|(k, v)| (k, v)))
        .env("TMPDIR", resident.tmpdir())
        .envs(resident.proxy_env().iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr));
    let joining = resident.joining(std::path::Path::new(&request.cwd));
    // SAFETY: `detach` and `apply` only make system calls.
    unsafe {
        command.pre_exec(move || {
            scv_sandbox::detach()?;
            joining.apply()
        });
    }
    let report_fd = report.as_raw_fd();
    let outcome = match command.spawn() {
        Ok(child) => {
            let main = child.id() as i32;
            MAIN.store(main, Ordering::SeqCst);
            supervise(main)
        }
        Err(err) => {
            eprintln!(
                "cannot start {} in the sandbox: {err}",
                program.to_string_lossy()
            );
            failed(SANDBOX_FAILED)
        }
    };
    finish(Some(report_fd), outcome);
    // `finish` took the descriptor over.
    std::mem::forget(report);
    0
}

/// What one request asks to run, as the server wrote it into a memfd:
/// NUL-separated fields — the working directory, the number of arguments,
/// the arguments, then `NAME=VALUE` environment entries.
pub(crate) struct Request {
    pub argv: Vec<OsString>,
    pub cwd: OsString,
    pub env: Vec<(OsString, OsString)>,
}

impl Request {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut field = |bytes: &[u8]| {
            out.extend_from_slice(bytes);
            out.push(0);
        };
        field(self.cwd.as_bytes());
        field(self.argv.len().to_string().as_bytes());
        for arg in &self.argv {
            field(arg.as_bytes());
        }
        for (name, value) in &self.env {
            let mut entry = name.as_bytes().to_vec();
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            field(&entry);
        }
        out
    }

    fn read(payload: OwnedFd) -> Result<Request, String> {
        let mut file = std::fs::File::from(payload);
        let mut bytes = Vec::new();
        file.rewind()
            .and_then(|()| file.read_to_end(&mut bytes))
            .map_err(|e| format!("cannot read the request: {e}"))?;
        let mut fields = bytes.split(|b| *b == 0);
        let os = |b: &[u8]| OsStr::from_bytes(b).to_os_string();
        let cwd = fields.next().map(os).ok_or("no working directory")?;
        let argc: usize = fields
            .next()
            .and_then(|b| std::str::from_utf8(b).ok())
            .and_then(|s| s.parse().ok())
            .ok_or("no argument count")?;
        let argv: Vec<OsString> = fields.by_ref().take(argc).map(os).collect();
        if argv.len() != argc {
            return Err("arguments missing".into());
        }
        let env = fields
            .filter(|f| !f.is_empty())
            .filter_map(|entry| {
                let at = entry.iter().position(|b| *b == b'=')?;
                Some((os(&entry[..at]), os(&entry[at + 1..])))
            })
            .collect();
        Ok(Request { argv, cwd, env })
    }
}

/// `recvmsg` of one datagram into `buf`, with the descriptors it carries.
pub(crate) fn receive(socket: RawFd, buf: &mut [u8]) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    const SPACE: usize = 128;
    let mut control = [0u8; SPACE];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: a zeroed msghdr pointing at buffers we own.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = SPACE;
    // SAFETY: recvmsg into those buffers.
    let n = unsafe { libc::recvmsg(socket, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: walking the control messages the kernel wrote.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                let count = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                    / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, fds))
}

/// `sendmsg` of one datagram with `fds`.
pub(crate) fn send_fds(socket: RawFd, data: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: CMSG_SPACE of a small count.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of_val(fds) as u32) } as usize;
    let mut control = vec![0u8; space.max(1)];
    // SAFETY: a zeroed msghdr pointing at buffers we own.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space;
        // SAFETY: one control message of SCM_RIGHTS in the buffer sized
        // for it.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(fds) as u32) as usize;
            let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
            for (i, fd) in fds.iter().enumerate() {
                data.add(i).write_unaligned(*fd);
            }
        }
    }
    // SAFETY: sendmsg of those buffers.
    if unsafe { libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
