//! `scv bridge`: stdin and stdout joined to the daemon's socket, the daemon
//! started when absent as `scv` does. What `scv --remote HOST` runs over
//! ssh. The bytes pass unchanged both ways; when either side closes, the
//! other is shut down and the bridge exits 0.

use anyhow::Result;
use std::path::Path;
use std::process::ExitCode;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub async fn run(home: &Path, socket: &Path) -> Result<ExitCode> {
    let stream = scv_client::ensure_daemon(home, socket).await?;
    let (from_daemon, to_daemon) = stream.into_split();
    let requests = pump(tokio::io::stdin(), to_daemon);
    let events = pump(from_daemon, tokio::io::stdout());
    tokio::pin!(events);
    tokio::select! {
        // The daemon saw the end of the requests: it ends the connection
        // once the last events (a cancelled turn's end) are written.
        () = requests => events.await,
        () = &mut events => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Copies `from` to `to` until either closes or fails, each chunk flushed
/// at once (a line is a whole request or event), then shuts `to` down.
async fn pump(mut from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin) {
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&chunk[..n]).await.is_err() || to.flush().await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
