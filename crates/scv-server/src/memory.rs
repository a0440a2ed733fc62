//! Giving freed memory back to the system.
//!
//! glibc's allocator keeps pages a burst has freed inside its arenas (one
//! per thread that allocated), so after 1,000 simultaneous streams the
//! daemon stayed at ~115 MiB resident until it exited. Every
//! [`CHECK_EVERY`] the daemon asks the allocator how much free memory its
//! arenas hold and, past [`TRIM_ABOVE`], has it return what it can
//! (`malloc_trim`, which walks every arena and releases free pages, not
//! only the top of the heap). Measured against jemalloc and mimalloc in
//! docs/BENCHMARKS.md before choosing.

use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often the arenas are looked at: each look is one wake-up.
pub const CHECK_EVERY: Duration = Duration::from_secs(3);

/// Free bytes held in the arenas that are worth a trim.
pub const TRIM_ABOVE: usize = 4 * 1024 * 1024;

/// Trims whenever the arenas hold more than [`TRIM_ABOVE`] free bytes,
/// until `shutdown`.
pub async fn keep_trimmed(shutdown: CancellationToken) {
    let mut ticks = tokio::time::interval(CHECK_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let (live, free) = held();
        // What a burst left live and what it left free between live
        // chunks (`SCV_LOG=scv_server::memory=debug`; the load bench
        // prints these lines).
        tracing::debug!("allocator: {live} bytes live, {free} bytes free");
        if free > TRIM_ABOVE {
            // A trim of ~100 MiB takes a few milliseconds: off the runtime.
            let released = crate::blocking::run(trim).await.unwrap_or(false);
            tracing::debug!("returned freed memory to the system: {released}");
        }
    }
}

/// Arenas the daemon's allocator may create (glibc's default is eight
/// per core): each keeps its own free pages, so fewer arenas leave less
/// memory stranded after a burst.
pub const MAX_ARENAS: i32 = 2;

/// Threads for blocking file work (tokio's default is 512). A burst of
/// 1,000 turns each reading AGENTS.md grew the pool to 84 threads, each
/// keeping freed chunks in its own cache where a trim cannot reach them.
/// Not fewer: a `search` of a huge or hung mount holds its thread, and
/// session starts, turns and DNS lookups queue behind whatever holds them.
pub const MAX_BLOCKING_THREADS: usize = 64;

/// How long an idle blocking thread lives (tokio's default is 10 s): its
/// exit hands its cached chunks back, so the next trim can release them.
pub const BLOCKING_KEEP_ALIVE: Duration = Duration::from_secs(2);

/// Caps glibc's arenas at [`MAX_ARENAS`]; call before threads start.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn limit_arenas() {
    // SAFETY: mallopt only sets an allocator parameter.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, MAX_ARENAS);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn limit_arenas() {}

/// Bytes the allocator's arenas hold in use, and free (in chunks it
/// could give back).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn held() -> (usize, usize) {
    // SAFETY: mallinfo2 only reads the allocator's own statistics.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks, info.fordblks)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn held() -> (usize, usize) {
    (0, 0)
}

/// Returns free pages of every arena to the system; true when any were.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn trim() -> bool {
    // SAFETY: malloc_trim takes the allocator's own locks; no pointers.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim() -> bool {
    false
}
