//! `scv-server --stdio`: one connection on stdin/stdout. It ends when stdin
//! closes (exit 0, after cancelling the active turn and writing its
//! terminal event), on SIGTERM or Ctrl+C (the same, so no tool process is
//! left behind), or on a fatal protocol error (exit 1). MCP servers are
//! stopped in every case.

use crate::connection::{serve, Ending, Options};
use crate::server::Shared;
use crate::signals::shutdown_on_signal;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The pipe capacity asked for on stdout (Linux's default is 64 KiB; an
/// unprivileged process may raise it to `/proc/sys/fs/pipe-max-size`,
/// 1 MiB by default).
const PIPE_BYTES: usize = 1024 * 1024;

/// Where events go. A pipe (how a client that spawned the server reads
/// it) is written in non-blocking mode, registered with the runtime: no
/// hand-off to a blocking thread and back for every write, which cost
/// two context switches per 64 KiB of a stream. Its capacity is raised to
/// [`PIPE_BYTES`], so a stream waits on a client that reads a little
/// slower than it is written 16 times less often (each wait is a wake-up
/// of both). Anything else (a terminal, a file, a socket) goes through
/// tokio's stdout.
fn stdout() -> Box<dyn tokio::io::AsyncWrite + Unpin + Send> {
    use std::os::fd::AsFd;
    let pipe = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| {
            // Not a pipe, or over the limit: the default size it is.
            let _ = rustix::pipe::fcntl_setpipe_size(&fd, PIPE_BYTES);
            tokio::net::unix::pipe::Sender::from_owned_fd(fd)
        });
    match pipe {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    }
}

pub async fn run(shared: Arc<Shared>) -> ExitCode {
    let shutdown = CancellationToken::new();
    let tasks = TaskTracker::new();
    tasks.spawn(shutdown_on_signal(shutdown.clone()));
    // A long session frees what each turn's request and stream used: given
    // back as in the daemon.
    tasks.spawn(crate::memory::keep_trimmed(shutdown.clone()));
    // A person may type into stdio: no initialize deadline, and no daemon
    // management.
    let options = Options::default();
    let ending = serve(
        shared.clone(),
        options,
        tokio::io::stdin(),
        stdout(),
        shutdown.clone(),
    )
    .await;
    shutdown.cancel();
    // Every MCP server's process group is gone before we exit.
    shared.mcp.shutdown().await;
    crate::tasks::wait(crate::tasks::GRACE).await;
    tasks.close();
    tasks.wait().await;
    match ending {
        Ending::Eof | Ending::Shutdown => ExitCode::SUCCESS,
        Ending::Fatal | Ending::WriterFailed | Ending::NotInitialized => ExitCode::FAILURE,
    }
}
