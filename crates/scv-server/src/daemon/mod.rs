//! The daemon: the protocol on a Unix socket for any number of clients.
//!
//! Start-up takes the per-socket lock (a second daemon exits non-zero and
//! leaves the first alone), replaces a stale socket file, and binds with a
//! umask that makes the socket 0600 from its first moment. SIGTERM or
//! Ctrl+C trips one shutdown token: the accept loop stops, every connection
//! cancels its turns (killing tool process groups), connections and the
//! supervisor are joined within a bound, and the socket is removed.

mod lock;
pub mod log;
mod peer;
mod supervisor;

use crate::connection::{serve, Options};
use crate::handles::Connector;
use crate::server::Shared;
use crate::signals::shutdown_on_signal;
use lock::DaemonLock;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use supervisor::Supervisor;
use tokio::io::DuplexStream;
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Longest wait for connections to finish once shutdown began. Each one
/// bounds its own cleanup (3 s grace for turns, 3 s for its writer).
const SHUTDOWN_JOIN: Duration = Duration::from_secs(8);

/// Runs the daemon on `socket` until SIGTERM or Ctrl+C; `workspace` is
/// the daemon workspace (ClawBot sessions without their own);
/// `release_stderr`: stderr is a starting client's pipe, let go once the
/// socket listens ([`log::release_stderr`]).
pub async fn run(
    shared: Arc<Shared>,
    home: PathBuf,
    socket: PathBuf,
    workspace: PathBuf,
    release_stderr: bool,
) -> ExitCode {
    match serve_socket(shared, &home, &socket, workspace, release_stderr).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("scv-server: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_socket(
    shared: Arc<Shared>,
    home: &Path,
    socket: &Path,
    workspace: PathBuf,
    release_stderr: bool,
) -> anyhow::Result<()> {
    let lock = claim_socket(socket)?;
    let listener = bind_private(socket)?;
    if release_stderr {
        log::release_stderr();
    }
    let descriptors = raise_fd_limit();
    // A quarter of the descriptors for connections: the rest stay for what
    // running sessions open (provider connections, tool pipes).
    let max_connections = shared
        .config()
        .daemon
        .max_connections
        .min((descriptors / 4) as usize)
        .max(1);
    let init_deadline = Duration::from_millis(shared.config().daemon.initialize_timeout_ms.max(1));
    tracing::info!(
        "scv-server {} listening on {}",
        crate::server::SERVER_VERSION,
        socket.display()
    );

    let shutdown = CancellationToken::new();
    // Socket connections, and the in-process ones ClawBot opens, tracked
    // apart so shutdown waits for each.
    let connections = TaskTracker::new();
    let background = TaskTracker::new();
    let connector = Arc::new(InProcess {
        shared: shared.clone(),
    });
    let supervisor = Arc::new(Supervisor::new(home, workspace, shared.clone(), connector));
    {
        let supervisor = supervisor.clone();
        let shutdown = shutdown.clone();
        background.spawn(async move { supervisor.run(shutdown).await });
    }
    background.spawn(shutdown_on_signal(shutdown.clone()));
    background.spawn(crate::memory::keep_trimmed(shutdown.clone()));
    let options = Options {
        control: Some(supervisor),
        init_deadline: Some(init_deadline),
        tool_peer: false,
        detach: true,
    };

    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) if connections.len() >= max_connections => {
                    refuse(&stream, max_connections);
                }
                Ok((stream, _)) => {
                    let peer = stream.peer_cred().ok().and_then(|cred| cred.pid());
                    let (reader, writer) = stream.into_split();
                    let shared = shared.clone();
                    let mut options = options.clone();
                    let shutdown = shutdown.clone();
                    connections.spawn(async move {
                        // An unknown peer (no pid) is treated as a tool.
                        options.tool_peer = peer.is_none_or(peer::is_tool_process);
                        if options.tool_peer {
                            tracing::info!("connection from a tool process (pid {peer:?}): sessions without tools, no management");
                        }
                        let ending = serve(shared, options, reader, writer, shutdown).await;
                        tracing::info!("connection ended: {}", ending.describe());
                    });
                }
                Err(err) => {
                    // Out of descriptors and the like: pause, keep serving.
                    tracing::warn!("accept failed: {err}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    tracing::info!("shutting down");
    drop(listener);
    let _ = std::fs::remove_file(socket);
    drop(options);
    connections.close();
    if tokio::time::timeout(SHUTDOWN_JOIN, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("connections did not finish within {SHUTDOWN_JOIN:?}");
    }
    shared.stop_detached(SHUTDOWN_JOIN).await;
    crate::tasks::wait(crate::tasks::GRACE).await;
    background.close();
    if tokio::time::timeout(SHUTDOWN_JOIN, background.wait())
        .await
        .is_err()
    {
        tracing::warn!("components did not stop within {SHUTDOWN_JOIN:?}");
    }
    lock.release();
    Ok(())
}

/// Takes the daemon's lock for `socket` and clears the way for it: a
/// socket left by a daemon that died without cleaning up is replaced;
/// anything else there is not ours to delete.
fn claim_socket(socket: &Path) -> anyhow::Result<DaemonLock> {
    if let Some(dir) = socket.parent().filter(|d| !d.as_os_str().is_empty()) {
        prepare_dir(dir)?;
    }
    let lock = DaemonLock::acquire(socket)?;
    // We hold the lock, so a socket here is left over from a daemon that
    // died without cleaning up. Anything else is not ours to delete.
    match std::fs::symlink_metadata(socket) {
        Ok(meta) if meta.file_type().is_socket() => match std::fs::remove_file(socket) {
            Ok(()) => tracing::info!("replaced stale socket {}", socket.display()),
            Err(err) => {
                anyhow::bail!("cannot replace stale socket {}: {err}", socket.display())
            }
        },
        Ok(_) => anyhow::bail!(
            "{} exists and is not a socket; not replacing it",
            socket.display()
        ),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => anyhow::bail!("cannot use {}: {err}", socket.display()),
    }
    Ok(lock)
}

/// Serves protocol connections in-process for daemon components: the
/// same connection code socket clients get, over a duplex pipe.
struct InProcess {
    shared: Arc<Shared>,
}

/// Each in-process connection's pipe buffer.
const IN_PROCESS_BUFFER: usize = 1 << 20;

impl Connector for InProcess {
    fn connect(&self, tracker: &TaskTracker, shutdown: CancellationToken) -> DuplexStream {
        let (client, server) = tokio::io::duplex(IN_PROCESS_BUFFER);
        let (reader, writer) = tokio::io::split(server);
        let shared = self.shared.clone();
        tracker.spawn(async move {
            let options = Options {
                detach: true,
                ..Options::default()
            };
            serve(shared, options, reader, writer, shutdown).await;
        });
        client
    }
}

/// Creates the socket's directory 0700 (an existing one is left as it is).
fn prepare_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|err| anyhow::anyhow!("cannot create {}: {err}", dir.display()))
}

/// Binds with umask 0177 so the socket is 0600 from the start.
fn bind_private(socket: &Path) -> anyhow::Result<UnixListener> {
    // SAFETY: umask only swaps the process file-mode mask; nothing else
    // creates files while the daemon is starting.
    let old = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(socket);
    unsafe { libc::umask(old) };
    let listener =
        bound.map_err(|err| anyhow::anyhow!("cannot listen on {}: {err}", socket.display()))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// Tells an over-limit client why, in one fatal error, and closes it. The
/// frame is tiny, so one non-blocking write into the fresh socket suffices.
/// It is written to the descriptor directly: tokio's `try_write` answers
/// `WouldBlock` without trying until its reactor has seen the new socket
/// writable, which under load lost the frame.
fn refuse(stream: &tokio::net::UnixStream, max: usize) {
    tracing::warn!("refused a connection: {max} connections are open");
    let event = scv_protocol::Event::error(
        None,
        scv_protocol::ErrorCode::InternalError,
        format!("the daemon is serving {max} connections, its limit; close one and try again"),
        true,
    );
    let mut frame = crate::transport::encode(event.as_ref()).to_vec();
    frame.push(b'\n');
    let _ = rustix::io::write(stream, &frame);
}

/// Each connection holds a socket and maybe a provider connection; lift the
/// soft descriptor limit to the hard one so a thousand clients fit. Returns
/// the limit now in force.
fn raise_fd_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            }
        }
    }
    limit.rlim_cur
}
