//! `scv`: the SCV terminal UI and command line.

use clap::{Parser, Subcommand, ValueEnum};
use scv_protocol::{DaemonCommand, Risk};
use scv_tui::{daemon_cmd, exec, tui};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "scv",
    version,
    about = "SCV, a local coding agent",
    long_about = "SCV, a local coding agent.\n\nWithout a subcommand, opens the terminal UI in the current directory, starting the SCV daemon when it is not running."
)]
struct Cli {
    /// The daemon socket (default $SCV_HOME/server.sock, $SCV_HOME defaulting to ~/.scv).
    #[arg(long, global = true, value_name = "PATH")]
    socket: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run one turn headless in the current directory and print the answer.
    Exec {
        /// The prompt.
        prompt: String,
        /// Print every protocol event as a JSON line instead of the answer.
        #[arg(long)]
        json: bool,
        /// Risk classes to approve (comma-separated); other approvals are denied.
        #[arg(long, value_delimiter = ',', value_name = "CLASSES")]
        approve: Vec<RiskArg>,
    },
    /// Manage the SCV daemon.
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
}

#[derive(Subcommand)]
enum DaemonAction {
    /// Show the daemon's version, pid and components.
    Status {
        /// Print the raw daemon.status event.
        #[arg(long)]
        json: bool,
    },
    /// Reconcile saved component settings now.
    Reload {
        /// Print the raw daemon.status event.
        #[arg(long)]
        json: bool,
    },
    /// Stop the daemon (SIGTERM) and wait for it to exit.
    Stop,
}

#[derive(Clone, Copy, ValueEnum)]
enum RiskArg {
    Read,
    Write,
    Process,
}

impl From<RiskArg> for Risk {
    fn from(risk: RiskArg) -> Risk {
        match risk {
            RiskArg::Read => Risk::Read,
            RiskArg::Write => Risk::Write,
            RiskArg::Process => Risk::Process,
        }
    }
}

fn main() -> ExitCode {
    let launched = std::time::Instant::now();
    let cli = Cli::parse();
    let home = scv_client::scv_home();
    let socket = cli.socket.unwrap_or_else(|| home.join("server.sock"));
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("scv: cannot start: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            None => tui::run(home, socket, launched)
                .await
                .map(|()| ExitCode::SUCCESS),
            Some(Command::Exec {
                prompt,
                json,
                approve,
            }) => {
                let approve: Vec<Risk> = approve.into_iter().map(Risk::from).collect();
                exec::run(&home, &socket, prompt, json, &approve).await
            }
            Some(Command::Daemon { action }) => match action {
                DaemonAction::Status { json } => {
                    daemon_cmd::status(&socket, json, DaemonCommand::Status).await
                }
                DaemonAction::Reload { json } => {
                    daemon_cmd::status(&socket, json, DaemonCommand::Reload).await
                }
                DaemonAction::Stop => daemon_cmd::stop(&socket).await,
            },
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("scv: {err:#}");
            ExitCode::FAILURE
        }
    }
}
