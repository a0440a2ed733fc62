//! `scv`: the SCV terminal UI and command line. The full-screen UI and the
//! subcommands talk to the daemon, which is not built yet; until then this
//! binary says so instead of pretending.

use clap::Parser;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "scv", version, about = "SCV, a local coding agent")]
struct Args {}

fn main() -> ExitCode {
    let _args = Args::parse();
    eprintln!(
        "scv: the terminal UI needs the SCV daemon, which is not built yet; \
         run `scv-server --stdio` and speak protocol version {} to it",
        scv_protocol::PROTOCOL_VERSION
    );
    ExitCode::from(2)
}
