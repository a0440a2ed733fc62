//! The component supervisor: owns the daemon's components (ClawBot accounts
//! once they exist) behind one lock, reconciles their saved settings every
//! two seconds and on `reload`, and reports their status.
//!
//! Management answers are built under the lock and written after it is
//! released, so a client that stops reading cannot hold management or
//! reconciliation.

use scv_protocol::{ComponentStatus, DaemonStatus};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

pub const RECONCILE_EVERY: Duration = Duration::from_secs(2);

/// A running component the supervisor manages.
pub trait Component: Send {
    fn status(&self) -> ComponentStatus;
}

#[derive(Default)]
pub struct Supervisor {
    components: Mutex<Vec<Box<dyn Component>>>,
}

impl Supervisor {
    /// Live status: version, pid and every component.
    pub async fn status(&self) -> DaemonStatus {
        let components = self.components.lock().await;
        DaemonStatus {
            version: crate::server::SERVER_VERSION.into(),
            pid: std::process::id(),
            components: components.iter().map(|c| c.status()).collect(),
        }
    }

    /// Compares saved settings with running instances and starts, stops or
    /// replaces them (stop and join first). No component kind is built into
    /// this daemon yet, so there is nothing saved to reconcile.
    pub async fn reconcile(&self) {
        let _components = self.components.lock().await;
    }

    /// Reconciles every [`RECONCILE_EVERY`] until `shutdown`.
    pub async fn run(&self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(RECONCILE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => self.reconcile().await,
            }
        }
        // Stop and join every component before the daemon exits.
        self.components.lock().await.clear();
    }
}
