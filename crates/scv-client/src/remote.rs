//! Another machine's daemon: `ssh HOST scv bridge` carries the protocol on
//! the child's stdin and stdout.
//!
//! A supervisor task owns the ssh child: it always reaps it, and kills it
//! once both halves of the connection are dropped. When ssh fails (an
//! unknown host, a refused key, no `scv` over there) reading or writing
//! fails with the last lines ssh wrote on stderr, not a bare end of stream.

use anyhow::{bail, Context, Result};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context as TaskContext, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};

/// What is kept of ssh's stderr: its last this many bytes.
const STDERR_TAIL: usize = 4096;
/// Lines of that tail the error shows.
const REASON_LINES: usize = 3;
/// How long a closed stream waits for ssh's exit status.
const EXIT_WAIT: Duration = Duration::from_secs(2);
/// How long stderr may stay open once ssh has exited (a process ssh
/// started, such as a `ControlPersist` master, can hold it for good).
const STDERR_GRACE: Duration = Duration::from_millis(200);

/// How ssh ended: `None` while it runs, then a clean exit or why it failed.
type Ended = Option<Result<(), String>>;

/// Runs `ssh HOST COMMAND` (`ssh` being the program and its options): the
/// daemon's events come out of the reader, requests go into the writer.
pub(crate) fn connect(host: &str, ssh: &[String], command: &str) -> Result<(SshOut, SshIn)> {
    let Some((program, options)) = ssh.split_first() else {
        bail!("the ssh command is empty (SCV_SSH)");
    };
    // ssh would take a host that looks like an option as one.
    if host.is_empty() || host.starts_with('-') {
        bail!("--remote `{host}` is not a host");
    }
    let mut child = Command::new(program)
        .args(options)
        .arg(host)
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot run {program}"))?;
    let stdin = child.stdin.take().context("ssh's stdin")?;
    let stdout = child.stdout.take().context("ssh's stdout")?;
    let stderr = child.stderr.take().context("ssh's stderr")?;

    let tail = Arc::new(Mutex::new(Vec::new()));
    let mut reading = tokio::spawn(keep_tail(stderr, tail.clone()));
    let (ended_tx, ended) = watch::channel(None);
    let dropped = CancellationToken::new();
    let alive = Arc::new(dropped.clone().drop_guard());
    let host = host.to_string();
    // Not in a tracker (a client library has none to offer): both tasks
    // are bound to the ssh child, which this one reaps, and to the
    // connection, whose last half dropped ends it.
    tokio::spawn(async move {
        let status = tokio::select! {
            status = child.wait() => status,
            () = dropped.cancelled() => {
                // Nobody reads or writes any more: ssh goes (and is
                // reaped), and the stderr reader with it.
                let _ = child.kill().await;
                reading.abort();
                return;
            }
        };
        let _ = tokio::time::timeout(STDERR_GRACE, &mut reading).await;
        reading.abort();
        let outcome = match status {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(reason(&host, &lock(&tail), status)),
            Err(err) => Err(format!("cannot reach {host} over ssh: {err}")),
        };
        ended_tx.send_replace(Some(outcome));
    });

    let reader = SshOut {
        stdout,
        failure: Failure::new(ended.clone()),
        _alive: alive.clone(),
    };
    let writer = SshIn {
        stdin,
        failure: Failure::new(ended),
        _alive: alive,
    };
    Ok((reader, writer))
}

fn lock(tail: &Mutex<Vec<u8>>) -> std::sync::MutexGuard<'_, Vec<u8>> {
    tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Reads stderr to its end, keeping the last [`STDERR_TAIL`] bytes.
async fn keep_tail(mut stderr: ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
    let mut chunk = [0u8; 1024];
    while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
        let mut tail = lock(&tail);
        tail.extend_from_slice(&chunk[..n]);
        let excess = tail.len().saturating_sub(STDERR_TAIL);
        tail.drain(..excess);
    }
}

/// Why ssh failed, in one line: the last lines of its stderr (where ssh
/// and the remote command both write), else its exit status.
fn reason(host: &str, stderr: &[u8], status: ExitStatus) -> String {
    let text = String::from_utf8_lossy(stderr);
    let mut lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .rev()
        .take(REASON_LINES)
        .collect();
    lines.reverse();
    if lines.is_empty() {
        format!("cannot reach {host} over ssh: ssh {status}")
    } else {
        format!("cannot reach {host} over ssh: {}", lines.join("; "))
    }
}

/// ssh's failure, once it has exited (waited for at most [`EXIT_WAIT`]).
struct Failure {
    wait: Pin<Box<dyn Future<Output = Option<String>> + Send>>,
    known: Option<Option<String>>,
}

impl Failure {
    fn new(mut ended: watch::Receiver<Ended>) -> Failure {
        let wait = async move {
            let ended = tokio::time::timeout(EXIT_WAIT, ended.wait_for(Option::is_some)).await;
            match ended {
                Ok(Ok(ended)) => ended.clone().and_then(Result::err),
                _ => None,
            }
        };
        Failure {
            wait: Box::pin(wait),
            known: None,
        }
    }

    /// Why ssh failed; `None` when it exited cleanly or never said.
    fn poll(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<String>> {
        if self.known.is_none() {
            self.known = Some(ready!(self.wait.as_mut().poll(cx)));
        }
        Poll::Ready(self.known.clone().flatten())
    }
}

/// ssh's stdout: the daemon's events. Its end is ssh's failure if ssh
/// failed.
pub(crate) struct SshOut {
    stdout: ChildStdout,
    failure: Failure,
    _alive: Arc<DropGuard>,
}

impl AsyncRead for SshOut {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.stdout).poll_read(cx, buf))?;
        if buf.filled().len() > before || buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        match ready!(this.failure.poll(cx)) {
            Some(reason) => Poll::Ready(Err(io::Error::other(reason))),
            None => Poll::Ready(Ok(())),
        }
    }
}

/// ssh's stdin: the client's requests. A broken pipe is ssh's failure if
/// ssh failed.
pub(crate) struct SshIn {
    stdin: ChildStdin,
    failure: Failure,
    _alive: Arc<DropGuard>,
}

impl SshIn {
    fn explain<T>(
        &mut self,
        cx: &mut TaskContext<'_>,
        result: io::Result<T>,
    ) -> Poll<io::Result<T>> {
        match result {
            Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {
                Poll::Ready(Err(match ready!(self.failure.poll(cx)) {
                    Some(reason) => io::Error::other(reason),
                    None => err,
                }))
            }
            other => Poll::Ready(other),
        }
    }
}

impl AsyncWrite for SshIn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = ready!(Pin::new(&mut this.stdin).poll_write(cx, buf));
        this.explain(cx, result)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = ready!(Pin::new(&mut this.stdin).poll_flush(cx));
        this.explain(cx, result)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = ready!(Pin::new(&mut this.stdin).poll_shutdown(cx));
        this.explain(cx, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn the_reason_is_the_last_lines_of_stderr_in_one_line() {
        let status = ExitStatus::from_raw(255 << 8);
        let stderr = b"Warning: one\n\nfirst\nsecond\r\nroot@h: Permission denied (publickey).\n";
        assert_eq!(
            reason("h", stderr, status),
            "cannot reach h over ssh: first; second; root@h: Permission denied (publickey)."
        );
        assert_eq!(
            reason("h", b"\n", status),
            "cannot reach h over ssh: ssh exit status: 255"
        );
    }
}
