//! `sandbox_network = "allowlist"`: the daemon's side of the egress wall.
//!
//! Each session's sandboxed commands run in a network namespace of their
//! own that holds only loopback (`scv_sandbox::egress`); the listener on
//! its `127.0.0.1:3128` is handed to the daemon, and a session's [`Proxy`]
//! accepts on it. What a command asks for is checked against
//! `sandbox_allowed_domains` ([`allowlist`], [`check`]): by host name, by
//! the addresses the daemon resolves it to, and for a tunnel by the TLS
//! server name its ClientHello carries ([`sni`]). The proxy dies with
//! the session (its [`Proxy`] is dropped with the session's sandbox: every
//! listener and connection of it ends).
//!
//! Bounds: [`MAX_CONNECTIONS`] connections at once per session (more
//! wait to be accepted), [`MAX_REFUSALS`] refusals kept between tool
//! results, a request head of 16 KiB, a ClientHello of 64 KiB.

pub mod allowlist;
pub mod check;
pub(crate) mod fetch;
mod proxy;
pub mod sni;

use check::Refusal;
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// A session's proxy connections at once.
pub const MAX_CONNECTIONS: usize = 256;
/// Refusals kept until the next tool result takes them.
pub const MAX_REFUSALS: usize = 16;

/// A session's proxy.
pub(crate) struct Proxy {
    shared: Arc<Shared>,
    /// Cancelled when the session's sandbox goes: every accept loop and
    /// connection ends.
    stop: CancellationToken,
    /// Its accept loops and connections (each also tracked by the
    /// server's shutdown, `crate::tasks`).
    tasks: TaskTracker,
}

pub(crate) struct Shared {
    pub(crate) allowlist: Arc<allowlist::Allowlist>,
    refused: Mutex<VecDeque<Refusal>>,
    slots: Arc<tokio::sync::Semaphore>,
}

impl Shared {
    /// Keeps `refusal` for the next tool result (once per host).
    pub(crate) fn record(&self, refusal: Refusal) {
        tracing::info!(host = %refusal.host, why = %refusal.why, "egress refused");
        let mut refused = crate::sync::lock(&self.refused);
        if refused.iter().any(|r| r.host == refusal.host) {
            return;
        }
        if refused.len() == MAX_REFUSALS {
            refused.pop_front();
        }
        refused.push_back(refusal);
    }
}

impl Proxy {
    pub(crate) fn new(allowlist: Arc<allowlist::Allowlist>) -> Proxy {
        Proxy {
            shared: Arc::new(Shared {
                allowlist,
                refused: Mutex::new(VecDeque::new()),
                slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS)),
            }),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
        }
    }

    /// A new proxy with the same allowlist (another sandbox of the same
    /// session: its own listeners, its own refusals).
    pub(crate) fn same_list(&self) -> Proxy {
        Proxy::new(self.shared.allowlist.clone())
    }

    /// Accepts the commands' connections on `listener` (made in their
    /// namespace) until the session ends.
    pub(crate) fn serve(&self, listener: OwnedFd) {
        let std_listener = std::net::TcpListener::from(listener);
        let listener = match std_listener
            .set_nonblocking(true)
            .and_then(|()| tokio::net::TcpListener::from_std(std_listener))
        {
            Ok(listener) => listener,
            Err(err) => {
                tracing::warn!("the session's proxy cannot listen: {err}");
                return;
            }
        };
        let shared = self.shared.clone();
        let stop = self.stop.clone();
        let tasks = self.tasks.clone();
        crate::tasks::spawn(self.tasks.track_future(async move {
            loop {
                let Ok(permit) = shared.slots.clone().acquire_owned().await else {
                    return;
                };
                let accepted = tokio::select! {
                    _ = stop.cancelled() => return,
                    accepted = listener.accept() => accepted,
                };
                let Ok((client, _)) = accepted else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let shared = shared.clone();
                let stop = stop.clone();
                crate::tasks::spawn(tasks.track_future(async move {
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = proxy::serve(&shared, client) => {}
                    }
                    drop(permit);
                }));
            }
        }));
    }

    /// The hosts refused since the last call, explained, oldest first.
    pub(crate) fn take_refused(&self) -> Vec<String> {
        crate::sync::lock(&self.shared.refused)
            .drain(..)
            .map(|refusal| refusal.explain())
            .collect()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
        self.tasks.close();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The proxy ends with its session: dropping it closes an open
    /// forwarded connection and stops accepting new ones.
    #[tokio::test]
    async fn dropping_the_proxy_ends_its_connections_and_its_listener() {
        let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up_port = upstream.local_addr().unwrap().port();
        // The host answers nothing and keeps the connection open.
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = upstream.accept().await {
                held.push(stream);
            }
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let list = allowlist::Allowlist::parse(&["127.0.0.1"]).unwrap();
        let proxy = Proxy::new(Arc::new(list));
        proxy.serve(OwnedFd::from(listener));
        let mut client = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        client
            .write_all(format!("GET http://127.0.0.1:{up_port}/ HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        // Forwarded and open: nothing comes back yet.
        let mut byte = [0u8; 1];
        let waited = tokio::time::timeout(
            std::time::Duration::from_millis(300),
            client.read(&mut byte),
        )
        .await;
        assert!(waited.is_err(), "the connection ended early: {waited:?}");
        let tasks = proxy.tasks.clone();
        assert_eq!(tasks.len(), 2, "the accept loop and one connection");
        drop(proxy);
        tokio::time::timeout(std::time::Duration::from_secs(10), tasks.wait())
            .await
            .expect("the proxy's tasks outlived it");
        let read = tokio::time::timeout(std::time::Duration::from_secs(10), client.read(&mut byte))
            .await
            .expect("the connection outlived the proxy");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        // The listener is closed: a new connection is refused, or
        // accepted by nobody and closed.
        if let Ok(mut late) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
            let _ = late
                .write_all(b"GET http://127.0.0.1/ HTTP/1.1\r\n\r\n")
                .await;
            let read =
                tokio::time::timeout(std::time::Duration::from_secs(10), late.read(&mut byte))
                    .await
                    .expect("a connection after the proxy ended was served");
            assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
        }
    }
}
