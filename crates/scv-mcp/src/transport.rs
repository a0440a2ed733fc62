//! Reaching a server: a child process over its pipes, or streamable HTTP.
//!
//! A stdio server runs in its own process group, started through the
//! command the embedding server builds (SCV wraps it in its tool-process
//! reaper, so nothing it starts outlives it). Its stdout is read through
//! [`LineCap`], which ends the connection, with a reason, on a message
//! over [`MAX_MESSAGE_BYTES`] instead of dropping it silently (which would
//! leave the call waiting for its timeout); its stderr goes to the log,
//! line by line, each line bounded.

use crate::auth;
use crate::errors;
use crate::errors::io_text;
use crate::handler::Handler;
use crate::limits::{MAX_MESSAGE_BYTES, MAX_STDERR_LINE_BYTES};
use crate::spec::{ServerSpec, Transport};
use crate::state::HubEnv;
use rmcp::service::RunningService;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::RoleClient;
use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio_util::task::TaskTracker;

/// A live connection to one server.
pub(crate) struct Connection {
    pub service: RunningService<RoleClient, Handler>,
    /// A stdio server's process (the reaper around it, in SCV).
    pub process: Option<Process>,
    /// Set when the server sent a message over the cap.
    pub oversized: Arc<AtomicBool>,
    /// Set when the server refused the OAuth login.
    pub auth_refused: Arc<AtomicBool>,
}

/// What answers `initialize`, once awaited.
pub(crate) type Handshake =
    Pin<Box<dyn Future<Output = Result<RunningService<RoleClient, Handler>, String>> + Send>>;

/// A server reached but not yet initialized: the process is owned here,
/// apart from the handshake, so a stop or a failure during start-up ends
/// it (and whatever it started) instead of dropping it.
pub(crate) struct Opened {
    pub process: Option<Process>,
    pub handshake: Handshake,
    pub oversized: Arc<AtomicBool>,
    pub auth_refused: Arc<AtomicBool>,
}

/// Starts a stdio server's process, or prepares the HTTP client; the
/// returned handshake does the rest (the caller bounds its time).
pub(crate) fn open(
    spec: &ServerSpec,
    env: &HubEnv,
    handler: Handler,
    tracker: &TaskTracker,
) -> Result<Opened, String> {
    match &spec.transport {
        Transport::Stdio {
            command,
            args,
            env: extra,
            cwd,
        } => {
            let dir = cwd.as_ref().or(handler.roots.first()).cloned();
            let path = extra.get("PATH").map(OsString::from).or_else(|| {
                env.env
                    .iter()
                    .find(|(name, _)| name == "PATH")
                    .map(|(_, value)| value.clone())
            });
            check_command(command, path.as_deref(), dir.as_deref())
                .map_err(|why| format!("cannot start `{command}`: {why}"))?;
            let mut child = (env.command)(command.as_ref(), args);
            child
                .env_clear()
                .envs(env.env.iter().map(|(k, v)| (k, v)))
                .envs(extra)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0);
            if let Some(dir) = &dir {
                child.current_dir(dir);
            }
            let mut child = child
                .spawn()
                .map_err(|err| format!("cannot start `{command}`: {}", io_text(&err)))?;
            let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
            // Owned from here on: dropped, it still ends the group.
            let process = Process::new(child);
            let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
                return Err("the server's pipes were not set up".into());
            };
            let server = spec.name.clone();
            tracker.spawn(log_stderr(server, stderr));
            let oversized = Arc::new(AtomicBool::new(false));
            let reader = LineCap::new(stdout, oversized.clone());
            // rmcp's own cap sits above ours so ours is the one that acts.
            let transport = AsyncRwTransport::new_client(reader, stdin)
                .with_max_line_length(MAX_MESSAGE_BYTES + 1024);
            let flag = oversized.clone();
            let handshake: Handshake = Box::pin(async move {
                crate::revision::serve(handler, transport)
                    .await
                    .map_err(|err| {
                        if flag.load(Ordering::SeqCst) {
                            format!("initialize failed: {}", over_the_cap("the server's answer"))
                        } else {
                            format!("initialize failed: {}", errors::initialize(&err))
                        }
                    })
            });
            Ok(Opened {
                process: Some(process),
                handshake,
                oversized,
                auth_refused: Arc::new(AtomicBool::new(false)),
            })
        }
        Transport::Http {
            url,
            headers,
            bearer_token_env,
            oauth,
            client_credentials,
        } => {
            // A client that gets its own tokens needs no login.
            let credentials = match client_credentials {
                Some((id, var)) => match env.secrets.get(var) {
                    Some(secret) => Some((id.clone(), secret.clone())),
                    None => return Err(format!("`{var}` (client_secret_env) is not set")),
                },
                None => None,
            };
            let how = Http {
                bearer_token_env: bearer_token_env.as_deref(),
                oauth: *oauth,
                credentials,
            };
            open_http(spec, env, handler, url, headers, how)
        }
    }
}

/// An HTTP server: its client (with the OAuth login when there is one),
/// and the handshake.
fn open_http(
    spec: &ServerSpec,
    env: &HubEnv,
    handler: Handler,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    how: Http<'_>,
) -> Result<Opened, String> {
    let Http {
        bearer_token_env,
        oauth,
        credentials,
    } = how;
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a header name"))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header `{name}` is not valid"))?;
        custom.insert(name, value);
    }
    let mut config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(custom)
        .max_json_response_size(MAX_MESSAGE_BYTES)
        .max_sse_event_size(MAX_MESSAGE_BYTES)
        // A dropped session is a restart SCV sees and counts.
        .reinit_on_expired_session(false);
    let mut retry = rmcp::transport::common::client_side_sse::ExponentialBackoff::default();
    retry.max_times = Some(3);
    retry.max_delay = Some(Duration::from_secs(10));
    config.retry_config = Arc::new(retry);
    if let Some(var) = bearer_token_env {
        match env.secrets.get(var) {
            Some(token) => config = config.auth_header(token.clone()),
            None => return Err(format!("`{var}` (bearer_token_env) is not set")),
        }
    }
    let store = login_store(spec, env);
    let login = match &credentials {
        Some(_) => store.map(|store| (store, credentials)),
        None => store
            .filter(|store| store.login_id().is_some())
            .map(|store| (store, None)),
    };
    if oauth && login.is_none() {
        return Err(auth::needs_login(&spec.name));
    }
    let name = spec.name.clone();
    let url = url.to_string();
    let auth_refused = Arc::new(AtomicBool::new(false));
    let refused = auth_refused.clone();
    let handshake: Handshake = Box::pin(async move {
        let served = match login {
            Some((store, credentials)) => {
                let client = auth::client::authorized_client(store, &url, credentials).await?;
                let client = auth::watched::Watched {
                    inner: client,
                    refused,
                };
                let transport = StreamableHttpClientTransport::with_client(client, config);
                crate::revision::serve(handler, transport).await
            }
            None => {
                crate::revision::serve(handler, StreamableHttpClientTransport::from_config(config))
                    .await
            }
        };
        served.map_err(|err| {
            let why = errors::initialize(&err);
            if auth::is_auth_required(&why) {
                auth::needs_login(&name)
            } else {
                format!("initialize failed: {why}")
            }
        })
    });
    Ok(Opened {
        process: None,
        handshake,
        oversized: Arc::new(AtomicBool::new(false)),
        auth_refused,
    })
}

/// How an HTTP server is authorized.
struct Http<'a> {
    bearer_token_env: Option<&'a str>,
    oauth: bool,
    /// The client credentials grant's client id and secret.
    credentials: Option<(String, String)>,
}

/// Where an HTTP server's OAuth login would be (none for a stdio server,
/// one with a bearer token, or a hub without a home).
pub(crate) fn login_store(spec: &ServerSpec, env: &HubEnv) -> Option<auth::store::FileStore> {
    match &spec.transport {
        Transport::Http {
            url,
            bearer_token_env: None,
            ..
        } => env
            .home
            .as_deref()
            .map(|home| auth::store::FileStore::new(home, &spec.name, url)),
        _ => None,
    }
}

/// `WHAT exceeded the 16 MiB limit on one message`.
pub(crate) fn over_the_cap(what: &str) -> String {
    format!(
        "{what} exceeded the {} MiB limit on one message",
        MAX_MESSAGE_BYTES / (1024 * 1024)
    )
}

/// Whether `command` can be started the way the reaper will start it
/// (`execvp`: a name without `/` is looked up in `PATH`, a path is taken
/// relative to `dir`), so a missing one is said as such instead of as a
/// connection that closed. The reaper remains the judge: this only
/// catches what is certain to fail.
fn check_command(command: &str, path: Option<&OsStr>, dir: Option<&Path>) -> Result<(), String> {
    if let Some(dir) = dir {
        if !dir.is_dir() {
            return Err(format!("its directory `{}` does not exist", dir.display()));
        }
    }
    if command.contains('/') {
        let file = match dir {
            Some(dir) => dir.join(command),
            None => PathBuf::from(command),
        };
        return executable(&file).map_err(|err| io_text(&err));
    }
    // Without PATH, execvp falls back to a default list: no verdict here.
    let Some(path) = path else { return Ok(()) };
    let found = std::env::split_paths(path)
        .filter(|entry| !entry.as_os_str().is_empty())
        .any(|entry| executable(&entry.join(command)).is_ok());
    if found {
        Ok(())
    } else {
        Err("not found in the server's PATH".into())
    }
}

/// An existing regular file someone may execute.
fn executable(file: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file)?;
    if meta.is_dir() {
        return Err(std::io::Error::from(std::io::ErrorKind::IsADirectory));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
    }
    Ok(())
}

/// How long the reaper gets to end everything below it after SIGTERM
/// before its whole process group is killed (it takes milliseconds; the
/// SIGKILL is a last resort, since it would leave whatever moved to a
/// group of its own without its reaper).
const REAPER_GRACE: Duration = Duration::from_secs(3);

/// A stdio server's process: in SCV, the tool-process reaper (leader of
/// its own process group) with the server below it. Told to end with
/// SIGTERM to the group, on which the reaper kills and reaps everything
/// below it, however it was started, and exits.
pub(crate) struct Process {
    child: tokio::process::Child,
    group: i32,
    ended: bool,
}

impl Process {
    fn new(child: tokio::process::Child) -> Process {
        let group = child.id().map_or(0, |pid| pid as i32);
        Process {
            child,
            group,
            ended: false,
        }
    }

    /// SIGTERM to the group, [`REAPER_GRACE`] for the reaper to finish,
    /// then, if it has not, SIGKILL to the group; reaped. A reaper that
    /// exited has already ended everything below it. Signals go only to a
    /// group whose leader is not yet reaped (alive or a zombie), so its id
    /// cannot belong to another process by then.
    pub(crate) async fn end(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        if self.group <= 0 || self.child.id().is_none() {
            return;
        }
        // SAFETY: killpg only sends a signal; the group is the child's own.
        unsafe { libc::killpg(self.group, libc::SIGTERM) };
        if tokio::time::timeout(REAPER_GRACE, self.child.wait())
            .await
            .is_err()
        {
            // SAFETY: as above; the leader is still unreaped.
            unsafe { libc::killpg(self.group, libc::SIGKILL) };
            let _ = tokio::time::timeout(Duration::from_secs(1), self.child.wait()).await;
        }
    }

    /// Whether the process has exited, waiting at most `within`.
    pub(crate) async fn exited(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(within, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// Its exit status, if it has exited.
    pub(crate) fn try_exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Process {
    /// Not ended (a task dropped mid-start, a runtime shutting down):
    /// the reaper is still told, so nothing below it outlives this. The
    /// runtime reaps it later.
    fn drop(&mut self) {
        if !self.ended && self.group > 0 && self.child.id().is_some() {
            // SAFETY: as in `end`.
            unsafe { libc::killpg(self.group, libc::SIGTERM) };
        }
    }
}

impl Connection {
    /// Ends the connection; a stdio server's process is ended
    /// ([`Process::end`]).
    pub(crate) async fn close(self) {
        let Connection {
            service,
            mut process,
            ..
        } = self;
        service.cancellation_token().cancel();
        let _ = tokio::time::timeout(Duration::from_secs(1), service.waiting()).await;
        if let Some(process) = process.as_mut() {
            process.end().await;
        }
    }
}

/// Logs a server's stderr, a line at a time, each line bounded.
async fn log_stderr(server: String, mut stderr: tokio::process::ChildStderr) {
    let mut line: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &byte in &buf[..n] {
            if byte == b'\n' {
                emit(&server, &line);
                line.clear();
            } else if line.len() < MAX_STDERR_LINE_BYTES {
                line.push(byte);
            }
        }
    }
    if !line.is_empty() {
        emit(&server, &line);
    }
}

fn emit(server: &str, line: &[u8]) {
    tracing::info!(target: "scv::mcp", server, "stderr: {}", String::from_utf8_lossy(line));
}

/// Reads a server's stdout, failing (and saying so) on a line over the cap.
pub(crate) struct LineCap<R> {
    inner: R,
    line: usize,
    oversized: Arc<AtomicBool>,
}

impl<R> LineCap<R> {
    pub(crate) fn new(inner: R, oversized: Arc<AtomicBool>) -> Self {
        LineCap {
            inner,
            line: 0,
            oversized,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let new = &buf.filled()[before..];
                match memchr_last(new) {
                    Some(last) => this.line = new.len() - last - 1,
                    None => this.line += new.len(),
                }
                if this.line > MAX_MESSAGE_BYTES {
                    this.oversized.store(true, Ordering::SeqCst);
                    buf.set_filled(before);
                    return Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "the server sent a message over the {} MiB limit",
                            MAX_MESSAGE_BYTES / (1024 * 1024)
                        ),
                    )));
                }
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

fn memchr_last(bytes: &[u8]) -> Option<usize> {
    bytes.iter().rposition(|b| *b == b'\n')
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn a_line_over_the_cap_fails_the_read_and_says_so() {
        let flag = Arc::new(AtomicBool::new(false));
        let mut ok = LineCap::new(&b"{\"a\":1}\n{\"b\":2}\n"[..], flag.clone());
        let mut out = Vec::new();
        ok.read_to_end(&mut out).await.unwrap();
        assert_eq!(out.len(), 16);
        let big = vec![b'x'; MAX_MESSAGE_BYTES + 10];
        let mut capped = LineCap::new(&big[..], flag.clone());
        let err = capped.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert!(err.to_string().contains("over"));
        assert!(flag.load(Ordering::SeqCst));
    }
}
