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
        tokio::spawn(async move {
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
                tokio::spawn(async move {
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = proxy::serve(&shared, client) => {}
                    }
                    drop(permit);
                });
            }
        });
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
    }
}
