//! Which revision of MCP a connection speaks: 2026-07-28 with a server
//! that speaks it (no `initialize`: `server/discover`, then the version
//! and SCV's capabilities in each request's `_meta`), 2025-11-25 with its
//! `initialize` handshake for the rest. rmcp's `Auto` lifecycle probes
//! with `server/discover` and falls back when the server answers it with
//! an ordinary JSON-RPC error (what a 2025 server says to a method it
//! does not know), or says nothing within ten seconds. A server that
//! answers `server/discover` with some other result is remembered as a
//! 2025 one (`Handler::initialize_only`): its next attempt (the
//! supervisor retries) starts with `initialize`.

use crate::handler::Handler;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::IntoTransport;
use rmcp::RoleClient;
use std::sync::atomic::Ordering;

/// The revisions SCV speaks without `initialize`, preferred first.
const MODERN: [ProtocolVersion; 1] = [ProtocolVersion::V_2026_07_28];
/// The revision of the `initialize` handshake, for servers without them.
const LEGACY: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// How long a server has to acknowledge `subscriptions/listen`.
const LISTEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Connects `handler` over `transport` in the newest revision both speak.
pub(crate) async fn serve<T, E, A>(
    handler: Handler,
    transport: T,
) -> Result<RunningService<RoleClient, Handler>, ClientInitializeError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let server = handler.server.clone();
    let initialize_only = handler.initialize_only.clone();
    let lifecycle = if initialize_only.load(Ordering::Relaxed) {
        ClientLifecycleMode::Initialize
    } else {
        ClientLifecycleMode::Auto {
            preferred_versions: MODERN.to_vec(),
            legacy_version: Some(LEGACY),
        }
    };
    let running = match handler.serve_with_lifecycle(transport, lifecycle).await {
        Ok(running) => running,
        Err(err @ ClientInitializeError::ExpectedInitResult(_)) => {
            if !initialize_only.swap(true, Ordering::Relaxed) {
                tracing::info!(target: "scv::mcp", %server,
                    "answered server/discover with something else: a 2025-11-25 server; initialize next");
            }
            return Err(err);
        }
        Err(err) => return Err(err),
    };
    if let Some(info) = running.peer().peer_info() {
        tracing::info!(target: "scv::mcp", %server, version = %info.protocol_version, "connected");
    }
    Ok(running)
}

/// For a 2026-07-28 connection, its `subscriptions/listen` stream of
/// tools-list changes (in that revision a server sends notifications
/// only there); `None` for a 2025 one, whose notices come on their own,
/// or when the server refuses it (logged: its tools are listed once).
pub(crate) async fn listen(
    peer: &rmcp::Peer<RoleClient>,
    server: &str,
) -> Option<rmcp::service::Subscription> {
    let modern = peer
        .peer_info()
        .is_some_and(|info| !info.protocol_version.has_initialize());
    if !modern {
        return None;
    }
    let filter = rmcp::model::SubscriptionFilter::builder()
        .tools_list_changed()
        .build();
    let acknowledged = tokio::time::timeout(LISTEN_TIMEOUT, peer.listen(filter)).await;
    match acknowledged {
        Ok(Ok(subscription)) => Some(subscription),
        Ok(Err(err)) => {
            tracing::info!(target: "scv::mcp", %server, "no subscriptions/listen: {err}");
            None
        }
        Err(_) => {
            tracing::info!(target: "scv::mcp", %server, "subscriptions/listen was not acknowledged within {LISTEN_TIMEOUT:?}");
            None
        }
    }
}

/// The next tools-list change on `subscription`; never, without one or
/// once it ended.
pub(crate) async fn tools_changed(subscription: &mut Option<rmcp::service::Subscription>) {
    loop {
        let Some(open) = subscription.as_mut() else {
            return std::future::pending().await;
        };
        match open.next().await {
            Ok(Some(rmcp::model::ServerNotification::ToolListChangedNotification(_))) => return,
            Ok(Some(_)) => continue,
            Ok(None) | Err(_) => *subscription = None,
        }
    }
}
