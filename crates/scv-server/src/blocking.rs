//! Work off the async threads that never panics its caller.
//!
//! `tokio::task::spawn_blocking` panics when the blocking pool has no
//! thread and the OS refuses a new one — which a fork loop in a tool, or
//! any process that exhausts the user's tasks, makes happen. A panic there
//! took down the daemon's component supervisor; with this the work fails
//! (the caller reports it) and the daemon carries on.

use std::panic::AssertUnwindSafe;

/// Why blocking work did not produce its value.
#[derive(Debug)]
pub(crate) struct Failed(pub String);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Runs `work` on the blocking pool and waits for it.
pub(crate) async fn run<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Failed> {
    let spawned = std::panic::catch_unwind(AssertUnwindSafe(|| tokio::task::spawn_blocking(work)));
    match spawned {
        Ok(handle) => handle.await.map_err(|err| Failed(err.to_string())),
        Err(_) => Err(Failed(
            "the system refused a thread for blocking work (out of processes?)".into(),
        )),
    }
}
