//! `scv-server`: the daemon on `$SCV_HOME/server.sock` (or `--socket`);
//! `--stdio` serves one client on stdin/stdout. Always in the foreground.

use clap::Parser;
use scv_server::config::Config;
use scv_server::daemon::log::{RotatingLog, LOG_LIMIT_BYTES};
use scv_server::reaper;
use scv_server::server::Shared;
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
    /// Also write diagnostics to this file, size-bounded (clients that
    /// start the daemon in the background use $SCV_HOME/server.log).
    #[arg(long, value_name = "PATH", conflicts_with = "stdio")]
    log_file: Option<PathBuf>,
}

fn main() -> ExitCode {
    // A tool process's reaper is this binary too (see `reaper`).
    let mut raw = std::env::args_os().skip(1);
    if raw.next().as_deref() == Some(reaper::FLAG.as_ref()) {
        return reaper::main(raw.collect());
    }
    let args = Args::parse();
    if let Err(err) = init_tracing(args.stdio, args.log_file.clone()) {
        eprintln!("scv-server: {err}");
        return ExitCode::FAILURE;
    }
    let home = scv_client::scv_home();
    // Whoever can write here can plant config.toml (a provider URL that
    // collects prompts) or credentials: refuse such a home.
    if let Err(err) = scv_client::check_home(&home) {
        eprintln!("scv-server: {err}");
        return ExitCode::from(2);
    }
    let config = match Config::load(&home) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("scv-server: {err:#}");
            return ExitCode::from(2);
        }
    };
    // Credentials leave the environment block a tool could read through
    // /proc; the server keeps what it needs from this copy.
    // (A proxy URL's password stays: the HTTP client reads the proxy from
    // this environment; tools never see it.)
    let launch_env = scv_sandbox::env::seal_own_environment(|name, value| {
        config.is_secret(name)
            || (!scv_sandbox::env::is_proxy_name(name)
                && value
                    .to_str()
                    .is_some_and(scv_sandbox::env::is_secret_value))
    });
    // One stdio client gains nothing from worker threads but cross-thread
    // wake-ups; the daemon serves many clients on all cores.
    let mut builder = if args.stdio {
        tokio::runtime::Builder::new_current_thread()
    } else {
        scv_server::memory::limit_arenas();
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder
            .max_blocking_threads(scv_server::memory::MAX_BLOCKING_THREADS)
            .thread_keep_alive(scv_server::memory::BLOCKING_KEEP_ALIVE);
        builder
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("scv-server: cannot start the runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let code = if args.stdio {
        let shared = Arc::new(Shared::new(config, &home, &launch_env));
        runtime.block_on(scv_server::stdio::run(shared))
    } else {
        let socket = args.socket.unwrap_or_else(|| home.join("server.sock"));
        // The daemon workspace: config `workspace`, else where it started.
        let workspace = config
            .daemon
            .workspace
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let shared = Arc::new(Shared::new(config, &home, &launch_env));
        // A client starting us in the background reads a pipe on stderr
        // until we listen (to show a start-up error at once).
        let release_stderr = args.log_file.is_some() && scv_server::daemon::log::stderr_is_pipe();
        runtime.block_on(scv_server::daemon::run(
            shared,
            home,
            socket,
            workspace,
            release_stderr,
        ))
    };
    // stdin's blocking reader may still be parked; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    scv_server::sandbox::release();
    code
}

/// Diagnostics go to stderr (never stdout) and, with `--log-file`, to a
/// size-bounded file; `SCV_LOG` sets the filter.
fn init_tracing(stdio: bool, log_file: Option<PathBuf>) -> std::io::Result<()> {
    use tracing_subscriber::fmt::writer::MakeWriterExt;
    let default = if stdio { "warn" } else { "info" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SCV_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false);
    match log_file {
        Some(path) => {
            let file = RotatingLog::open(path, LOG_LIMIT_BYTES)?;
            builder.with_writer(std::io::stderr.and(file)).init();
        }
        None => builder.with_writer(std::io::stderr).init(),
    }
    Ok(())
}
