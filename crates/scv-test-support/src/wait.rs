//! Waiting for a condition in a test, bounded.

/// Polls `check` every 25 ms until it holds, for at most 20 s (a hang
/// guard, not a timing assertion). True when it held.
pub async fn eventually(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..800 {
        if check() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    false
}
