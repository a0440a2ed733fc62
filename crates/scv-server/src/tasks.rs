//! Tasks a session starts that outlive the call that started them: the
//! egress proxy's accept loop and its connections, a background
//! process's output reader. Each ends by its session's cancellation (the
//! proxy dropped, the process killed); they are tracked here as well so
//! the server's shutdown waits for them before it exits, rather than
//! leaving them to be dropped mid-step with the runtime.

use std::future::Future;
use std::sync::LazyLock;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

/// How long a shutdown waits for them.
pub(crate) const GRACE: Duration = Duration::from_secs(8);

static DETACHED: LazyLock<TaskTracker> = LazyLock::new(TaskTracker::new);

/// Spawns `task` on the current runtime, tracked until it ends.
pub(crate) fn spawn<F>(task: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    DETACHED.spawn(task)
}

/// Waits up to `grace` for every tracked task to end (their sessions are
/// gone by now, so each is ending); says whether all did.
pub(crate) async fn wait(grace: Duration) -> bool {
    DETACHED.close();
    let ended = tokio::time::timeout(grace, DETACHED.wait()).await.is_ok();
    if !ended {
        tracing::warn!(
            left = DETACHED.len(),
            "session tasks did not end within {grace:?}"
        );
    }
    ended
}
