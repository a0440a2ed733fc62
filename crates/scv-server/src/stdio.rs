//! `scv-server --stdio`: one connection on stdin/stdout. It ends when stdin
//! closes (exit 0, after cancelling the active turn and writing its
//! terminal event), on SIGTERM or Ctrl+C (the same, so no tool process is
//! left behind), or on a fatal protocol error (exit 1).

use crate::connection::{serve, Ending};
use crate::server::ServerContext;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub async fn run(ctx: Arc<ServerContext>) -> ExitCode {
    let shutdown = CancellationToken::new();
    tokio::spawn(crate::daemon::signal_shutdown(shutdown.clone()));
    // A person may type into stdio: no initialize deadline here.
    let ending = serve(ctx, tokio::io::stdin(), tokio::io::stdout(), shutdown, None).await;
    match ending {
        Ending::Eof | Ending::Shutdown => ExitCode::SUCCESS,
        Ending::Fatal | Ending::WriterFailed | Ending::NotInitialized => ExitCode::FAILURE,
    }
}
