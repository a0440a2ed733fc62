//! SIGTERM and Ctrl+C, for the daemon and for stdio alike.

use tokio_util::sync::CancellationToken;

/// Cancels `shutdown` on SIGTERM or Ctrl+C; returns early if `shutdown` is
/// cancelled some other way.
pub(crate) async fn shutdown_on_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(term) => term,
        Err(err) => {
            tracing::error!("cannot watch SIGTERM: {err}");
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted"),
        _ = shutdown.cancelled() => return,
    }
    shutdown.cancel();
}
