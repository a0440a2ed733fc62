//! `scv-server`: `--stdio` serves one client on stdin/stdout.

use clap::Parser;
use scv_server::config::Config;
use scv_server::server::ServerContext;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "scv-server",
    version,
    about = "The SCV agent server (protocol version 2)"
)]
struct Args {
    /// Serve one client on stdin/stdout; exit when stdin closes.
    #[arg(long, conflicts_with = "socket")]
    stdio: bool,
    /// Unix socket to serve on (default $SCV_HOME/server.sock).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    init_tracing(args.stdio);
    let home = scv_client::scv_home();
    let config = match Config::load(&home) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("scv-server: {err:#}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("scv-server: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let code = if args.stdio {
        let ctx = Arc::new(ServerContext::new(config, true));
        runtime.block_on(scv_server::stdio::run(ctx))
    } else {
        eprintln!("scv-server: the daemon (Unix socket) mode is not built yet; use --stdio");
        ExitCode::from(2)
    };
    // stdin's blocking reader may still be parked; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

/// Diagnostics go to stderr only; `SCV_LOG` sets the filter.
fn init_tracing(stdio: bool) {
    let default = if stdio { "warn" } else { "info" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SCV_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}
