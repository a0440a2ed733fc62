//! `scv`: the SCV terminal UI and command line.

use clap::{Parser, Subcommand, ValueEnum};
use scv_protocol::{DaemonCommand, RemoteTools, Risk};
use scv_tui::session::Which;
use scv_tui::{bridge_cmd, clawbot_cmd, daemon_cmd, exec, mcp_cmd, sessions_cmd, tui, undo_cmd};
use std::path::{Path, PathBuf};
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
    /// Use the daemon on another machine: runs `ssh HOST scv bridge`
    /// ($SCV_SSH replaces `ssh`, $SCV_REMOTE_COMMAND `scv bridge`). The
    /// daemon, tools and sandbox run there, in the same directory path as
    /// here unless `exec --cwd` names another.
    #[arg(
        long,
        global = true,
        value_name = "[USER@]HOST",
        conflicts_with = "socket"
    )]
    remote: Option<String>,
    /// The provider definition for the session (a preset such as
    /// `anthropic`, or a `[providers.NAME]` table); default: the config's.
    #[arg(long, global = true, value_name = "NAME")]
    provider: Option<String>,
    /// The model for the session; default: the provider's.
    #[arg(long, global = true, value_name = "MODEL")]
    model: Option<String>,
    /// Continue the last session of this directory (the terminal UI).
    #[arg(long = "continue", short = 'c')]
    continue_last: bool,
    /// Run PROMPT in a new session that outlives this command: prints the
    /// session's id and returns (`scv agents`, `scv logs ID`, `scv attach
    /// ID`, `scv stop ID`).
    #[arg(long, requires = "prompt", conflicts_with = "continue_last")]
    bg: bool,
    /// Open the terminal UI and send this as the first message (a word
    /// that names a subcommand is that subcommand).
    #[arg(value_name = "PROMPT")]
    prompt: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run one turn headless in the current directory and print the answer.
    Exec {
        /// The prompt; `-` (or none, when standard input is not a
        /// terminal) reads it from standard input.
        prompt: Option<String>,
        /// Print every protocol event as a JSON line instead of the answer.
        #[arg(long)]
        json: bool,
        /// Ask for the model's reasoning: `reasoning.delta` events with
        /// `--json`, otherwise the thinking on standard error.
        #[arg(long)]
        reasoning: bool,
        /// The workspace (default: the current directory); with
        /// `--remote`, a path on that machine (default: the same path).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Risk classes to approve (comma-separated); other approvals are denied.
        #[arg(long, value_delimiter = ',', value_name = "CLASSES")]
        approve: Vec<RiskArg>,
        /// Run the turn in this stored session (its id: `scv sessions list`).
        #[arg(long, value_name = "ID", conflicts_with = "continue_last")]
        resume: Option<String>,
        /// Run the turn in the last session of this directory.
        #[arg(long = "continue", short = 'c')]
        continue_last: bool,
        /// Plan mode: the agent may read and run read-only commands but
        /// change nothing, and answers with a plan.
        #[arg(long)]
        plan: bool,
        /// Answer MCP servers' questions (elicitation) on the terminal;
        /// without it they are declined at once.
        #[arg(long)]
        elicit: bool,
        /// Send an image file with the prompt (PNG, JPEG, GIF or WebP; at
        /// most 5 MiB each, 8 per prompt); repeatable.
        #[arg(long = "image", value_name = "FILE")]
        images: Vec<PathBuf>,
    },
    /// Resume a stored session in the terminal UI: a picker without ID.
    Resume {
        /// The session (`scv sessions list` shows them).
        id: Option<String>,
        /// The most recently updated session, in any directory.
        #[arg(long, conflicts_with = "id")]
        last: bool,
    },
    /// The daemon's live sessions, every workspace's: state, age, cost,
    /// what each waits for.
    Agents {
        /// As JSON (the entries of `session.listed`).
        #[arg(long)]
        json: bool,
    },
    /// The terminal UI on a live session (one `--bg` started, or one a
    /// closed terminal left running).
    Attach {
        /// The session (`scv agents` shows them; the first 8 characters do).
        id: String,
    },
    /// Print a live session's conversation; with --follow, its events as
    /// they come until it is idle or closed.
    Logs {
        id: String,
        #[arg(long, short = 'f')]
        follow: bool,
    },
    /// Stop a live session: its turn is cancelled, its life in the daemon
    /// ends (its journal stays: `scv resume ID`).
    Stop { id: String },
    /// Undo the last turn of this directory's last session that changed
    /// files: its files and its conversation, back to before it.
    Undo {
        /// Restore over paths changed since by someone other than the agent.
        #[arg(long)]
        force: bool,
    },
    /// The stored sessions: list, delete, export.
    Sessions {
        #[command(subcommand)]
        action: SessionsAction,
    },
    /// What the stored sessions spent: tokens by kind and cost, as a table.
    Usage {
        /// Only turns that ended this recently: 7d, 24h, 30m (default: all).
        #[arg(long, value_name = "DURATION", value_parser = scv_tui::usage_cmd::parse_since)]
        since: Option<u64>,
        /// One row per day (UTC), session, model or workspace.
        #[arg(long, value_enum, default_value = "day")]
        by: ByArg,
    },
    /// Manage the SCV daemon.
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
    /// Serve the Agent Client Protocol on stdin/stdout (for editors such as Zed).
    Acp,
    /// Join stdin/stdout to the daemon's socket, starting the daemon when
    /// absent (what `scv --remote` runs over ssh).
    Bridge,
    /// Drive SCV from WeChat: log in a ClawBot account and manage it.
    Clawbot {
        #[command(subcommand)]
        action: ClawbotAction,
    },
    /// MCP servers the daemon runs (configured as [mcp_servers.NAME]).
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// Claude Code plugins every session gets (`plugins` in config.toml).
    Plugin {
        #[command(subcommand)]
        action: PluginAction,
    },
    /// Trust a workspace: its repository configuration (hooks in
    /// .scv/hooks.json and .claude/settings.json, MCP servers in .mcp.json,
    /// permission rules) runs and applies, as it is now.
    Trust {
        /// The directory (default: the current one); it covers everything
        /// beneath it.
        #[arg(conflicts_with_all = ["list", "revoke"])]
        dir: Option<PathBuf>,
        /// The trusted directories, and whether their files changed since.
        #[arg(long)]
        list: bool,
        /// No longer trust this directory.
        #[arg(long, value_name = "DIR")]
        revoke: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum SessionsAction {
    /// Every stored session, most recently updated first.
    List {
        /// As JSON (the fields of `session.listed`).
        #[arg(long)]
        json: bool,
    },
    /// Delete a session that is not open.
    Delete { id: String },
    /// Write a session's conversation to standard output.
    Export {
        id: String,
        #[arg(long, value_enum, default_value = "md")]
        format: FormatArg,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ByArg {
    Day,
    Session,
    Model,
    Workspace,
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    Md,
    Json,
}

#[derive(Subcommand)]
enum PluginAction {
    /// Add a plugin folder, or clone a git URL into $SCV_HOME/plugins/.
    Add {
        /// A folder with .claude-plugin/plugin.json, or a git URL.
        source: String,
    },
    /// The plugins added.
    List,
    /// Remove a plugin (by folder or name); its files stay.
    Remove { which: String },
}

#[derive(Subcommand)]
enum McpAction {
    /// List the configured MCP servers: state, tools, restarts, errors.
    List {
        /// Print the daemon.status event as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Log in to an HTTP server with OAuth: prints the authorization URL
    /// to open and takes the redirect on 127.0.0.1. The daemon uses the
    /// login within a second.
    Login {
        /// The server, as named in [mcp_servers.NAME].
        name: String,
    },
    /// Forget a server's OAuth login; the daemon stops using it at once.
    Logout {
        /// The server, as named in [mcp_servers.NAME].
        name: String,
    },
}

#[derive(Subcommand)]
enum ClawbotAction {
    /// Log in by scanning a QR code with WeChat; the scanner becomes the owner.
    Login {
        #[arg(long, default_value = "default")]
        account: String,
        /// The iLink login server (default: config `ilink_base_url`, else the public one).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
    },
    /// Show the ClawBot components.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Enable an account (optionally setting its workspace and who may use tools).
    Enable(SetArgs),
    /// Disable an account (it stops at once; the login is kept).
    Disable(SetArgs),
    /// Disable an account and forget its login, delivery state and settings.
    Logout {
        #[arg(long, default_value = "default")]
        account: String,
    },
}

#[derive(clap::Args)]
struct SetArgs {
    #[arg(long, default_value = "default")]
    account: String,
    /// Workspace for the account's sessions (default: the daemon's).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// `owner` lets the account owner use tools (approved in chat).
    #[arg(long, value_enum)]
    remote_tools: Option<RemoteToolsArg>,
}

/// `scv clawbot enable|disable` as one `clawbot_set`.
async fn set_account(
    home: &std::path::Path,
    socket: &std::path::Path,
    args: SetArgs,
    enabled: bool,
) -> anyhow::Result<ExitCode> {
    let command = clawbot_cmd::set(
        args.account,
        enabled,
        args.workspace.as_deref(),
        args.remote_tools.map(Into::into),
    )?;
    clawbot_cmd::manage(home, socket, command, false).await
}

#[derive(Clone, Copy, ValueEnum)]
enum RemoteToolsArg {
    None,
    Owner,
}

impl From<RemoteToolsArg> for RemoteTools {
    fn from(value: RemoteToolsArg) -> RemoteTools {
        match value {
            RemoteToolsArg::None => RemoteTools::None,
            RemoteToolsArg::Owner => RemoteTools::Owner,
        }
    }
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
    /// Start the daemon unless it is running (`scv` starts it by itself too).
    Start,
    /// Stop the daemon (SIGTERM) and wait for it to exit.
    Stop,
    /// Stop the daemon and start it again from this shell (with this
    /// shell's environment: its provider keys).
    Restart,
}

#[derive(Clone, Copy, ValueEnum)]
enum RiskArg {
    Read,
    Write,
    Process,
    /// Commands that run inside the server's sandbox.
    Sandboxed,
}

impl From<RiskArg> for Risk {
    fn from(risk: RiskArg) -> Risk {
        match risk {
            RiskArg::Read => Risk::Read,
            RiskArg::Write => Risk::Write,
            RiskArg::Process => Risk::Process,
            RiskArg::Sandboxed => Risk::Sandboxed,
        }
    }
}

/// `scv plugin ACTION`.
fn plugin(home: &std::path::Path, action: PluginAction) -> anyhow::Result<ExitCode> {
    match action {
        PluginAction::Add { source } => scv_tui::plugin_cmd::add(home, &source),
        PluginAction::List => scv_tui::plugin_cmd::list(home),
        PluginAction::Remove { which } => scv_tui::plugin_cmd::remove(home, &which),
    }
}

/// What only acts on this machine (its store, its daemon's process, its
/// socket), by name: `--remote` is refused for it.
fn local_only(command: &Command) -> Option<&'static str> {
    match command {
        Command::Sessions { .. } => Some("sessions"),
        Command::Usage { .. } => Some("usage"),
        Command::Daemon { .. } => Some("daemon"),
        Command::Clawbot { .. } => Some("clawbot"),
        Command::Mcp { .. } => Some("mcp"),
        Command::Trust { .. } => Some("trust"),
        Command::Plugin { .. } => Some("plugin"),
        Command::Bridge => Some("bridge"),
        Command::Exec { .. }
        | Command::Resume { .. }
        | Command::Acp
        | Command::Undo { .. }
        | Command::Agents { .. }
        | Command::Attach { .. }
        | Command::Logs { .. }
        | Command::Stop { .. } => None,
    }
}

/// The daemon on `host` through ssh: `$SCV_SSH` (default `ssh`) split
/// into words as a shell would, running `$SCV_REMOTE_COMMAND` (default
/// `scv bridge`, for a remote `scv` on the login shell's PATH) there.
fn remote_endpoint(host: &str) -> Result<scv_client::Endpoint, String> {
    let setting = |name: &str, default: &str| {
        std::env::var(name)
            .ok()
            .filter(|value| !value.trim().is_empty())
            .unwrap_or_else(|| default.into())
    };
    let ssh = setting("SCV_SSH", "ssh");
    let ssh = shlex::split(&ssh).ok_or_else(|| format!("SCV_SSH `{ssh}`: unbalanced quotes"))?;
    Ok(scv_client::Endpoint::Remote {
        host: host.into(),
        ssh,
        command: setting("SCV_REMOTE_COMMAND", "scv bridge"),
    })
}

fn main() -> ExitCode {
    let launched = std::time::Instant::now();
    let cli = Cli::parse();
    let (home, home_source) = scv_client::scv_home_from();
    let socket = cli
        .socket
        .clone()
        .unwrap_or_else(|| home.join("server.sock"));
    let endpoint = match endpoint(&cli, &home, &socket) {
        Ok(endpoint) => endpoint,
        Err(err) => {
            eprintln!("scv: {}", scv_client::text::visible(&err));
            return ExitCode::FAILURE;
        }
    };
    let choice = scv_tui::session::Choice {
        provider: cli.provider.clone(),
        model: cli.model.clone(),
        mode: None,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!(
                "scv: cannot start: {}",
                scv_client::text::visible(&err.to_string())
            );
            return ExitCode::FAILURE;
        }
    };
    let ctx = Ctx {
        endpoint,
        home,
        socket,
        launched,
        choice,
        home_source,
    };
    let result = runtime.block_on(dispatch(cli, ctx));
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(code) => code,
        Err(err) => failed(&err),
    }
}

/// Where the daemon is: this machine's, or `--remote HOST`'s (a command
/// that acts on this machine only is refused there).
fn endpoint(cli: &Cli, home: &Path, socket: &Path) -> Result<scv_client::Endpoint, String> {
    match &cli.remote {
        None => Ok(scv_client::Endpoint::Local {
            home: home.to_path_buf(),
            socket: socket.to_path_buf(),
        }),
        Some(host) => {
            if let Some(name) = cli.command.as_ref().and_then(local_only) {
                return Err(format!("`scv {name}` acts on this machine only and takes no --remote; run it on {host} (`ssh {host} scv {name} …`)"));
            }
            remote_endpoint(host)
        }
    }
}

/// What every command runs with.
struct Ctx {
    endpoint: scv_client::Endpoint,
    home: PathBuf,
    socket: PathBuf,
    launched: std::time::Instant,
    choice: scv_tui::session::Choice,
    /// Where `home` came from (`scv acp` says it: an editor may start it
    /// with a trimmed environment).
    home_source: scv_client::HomeSource,
}

/// Runs the command line: the TUI and the commands that open sessions
/// here; the rest in [`manage`].
async fn dispatch(cli: Cli, ctx: Ctx) -> anyhow::Result<ExitCode> {
    let Ctx {
        endpoint,
        launched,
        choice,
        ..
    } = &ctx;
    let (endpoint, launched, choice) = (endpoint.clone(), *launched, choice.clone());
    match cli.command {
        None if cli.bg => background(&endpoint, &choice, cli.prompt).await,
        Some(
            command @ (Command::Agents { .. }
            | Command::Logs { .. }
            | Command::Stop { .. }
            | Command::Attach { .. }),
        ) => live(command, endpoint, launched, choice).await,
        None => {
            let which = if cli.continue_last {
                Which::Last
            } else {
                Which::New
            };
            tui::run(endpoint, launched, choice, which, false, cli.prompt)
                .await
                .map(|()| ExitCode::SUCCESS)
        }
        Some(Command::Resume { id, last }) => {
            let (which, pick) = match (id, last) {
                (Some(id), _) => (Which::Resume(id), false),
                (None, true) => (Which::Latest, false),
                (None, false) => (Which::New, true),
            };
            tui::run(endpoint, launched, choice, which, pick, None)
                .await
                .map(|()| ExitCode::SUCCESS)
        }
        Some(Command::Undo { force }) => match std::env::current_dir() {
            Ok(cwd) => undo_cmd::run(&endpoint, &cwd, force).await,
            Err(err) => Err(anyhow::anyhow!("the current directory: {err}")),
        },
        Some(Command::Exec {
            prompt,
            json,
            reasoning,
            cwd,
            approve,
            resume,
            continue_last,
            plan,
            elicit,
            images,
        }) => {
            let approve: Vec<Risk> = approve.into_iter().map(Risk::from).collect();
            let choice = scv_tui::session::Choice {
                mode: plan.then_some(scv_protocol::Mode::Plan),
                ..choice
            };
            let options = exec::Options {
                json,
                reasoning,
                cwd,
                approve,
                elicit,
                images,
                which: match (resume, continue_last) {
                    (Some(id), _) => Which::Resume(id),
                    (None, true) => Which::Last,
                    (None, false) => Which::New,
                },
            };
            exec::run(&endpoint, prompt, &options, &choice).await
        }
        Some(Command::Acp) => {
            if let scv_client::Endpoint::Local { home, .. } = &endpoint {
                // On stderr, which editors keep as the agent's log.
                eprintln!(
                    "scv acp: SCV home {} ({})",
                    scv_client::text::visible(&home.display().to_string()),
                    ctx.home_source.describe()
                );
            }
            acp(endpoint, choice).await
        }
        Some(command) => manage(command, &ctx).await,
    }
}

/// `scv acp`: the editor's agent on stdin and stdout.
async fn acp(
    endpoint: scv_client::Endpoint,
    choice: scv_tui::session::Choice,
) -> anyhow::Result<ExitCode> {
    scv_acp::run(scv_acp::Options {
        endpoint,
        provider: choice.provider,
        model: choice.model,
    })
    .await
    .map(|()| ExitCode::SUCCESS)
}

/// The commands that manage SCV on this machine: usage, trust, stored
/// sessions, the daemon, MCP, plugins, the bridge, ClawBot.
async fn manage(command: Command, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let (home, socket) = (&ctx.home, &ctx.socket);
    match command {
        Command::Usage { since, by } => {
            use scv_tui::usage_cmd::{usage, By};
            let by = match by {
                ByArg::Day => By::Day,
                ByArg::Session => By::Session,
                ByArg::Model => By::Model,
                ByArg::Workspace => By::Workspace,
            };
            usage(home, since, by, scv_store::now_unix())
        }
        Command::Trust { dir, list, revoke } => match (list, revoke) {
            (true, _) => scv_tui::trust_cmd::list(home),
            (false, Some(dir)) => scv_tui::trust_cmd::revoke(home, &dir),
            (false, None) => match dir.map(Ok).unwrap_or_else(std::env::current_dir) {
                Ok(dir) => scv_tui::trust_cmd::trust(home, &dir),
                Err(err) => Err(anyhow::anyhow!("the current directory: {err}")),
            },
        },
        Command::Sessions { action } => match action {
            SessionsAction::List { json } => sessions_cmd::list(home, json),
            SessionsAction::Delete { id } => sessions_cmd::delete(home, &id),
            SessionsAction::Export { id, format } => sessions_cmd::export(
                home,
                &id,
                match format {
                    FormatArg::Md => sessions_cmd::Format::Markdown,
                    FormatArg::Json => sessions_cmd::Format::Json,
                },
            ),
        },
        Command::Daemon { action } => match action {
            DaemonAction::Status { json } => {
                daemon_cmd::status(socket, json, DaemonCommand::Status).await
            }
            DaemonAction::Reload { json } => {
                daemon_cmd::status(socket, json, DaemonCommand::Reload).await
            }
            DaemonAction::Start => daemon_cmd::start(home, socket).await,
            DaemonAction::Stop => daemon_cmd::stop(socket).await,
            DaemonAction::Restart => daemon_cmd::restart(home, socket).await,
        },
        Command::Mcp {
            action: McpAction::List { json },
        } => mcp_cmd::list(home, socket, json).await,
        Command::Mcp {
            action: McpAction::Login { name },
        } => mcp_cmd::login(home, &name).await,
        Command::Mcp {
            action: McpAction::Logout { name },
        } => mcp_cmd::logout(home, &name),
        Command::Plugin { action } => plugin(home, action),
        Command::Bridge => bridge_cmd::run(home, socket).await,
        Command::Clawbot { action } => clawbot(action, home, socket).await,
        // Run by `dispatch`.
        Command::Agents { .. }
        | Command::Logs { .. }
        | Command::Stop { .. }
        | Command::Attach { .. }
        | Command::Resume { .. }
        | Command::Undo { .. }
        | Command::Exec { .. }
        | Command::Acp => unreachable!("dispatch runs it"),
    }
}

/// `scv clawbot …`.
async fn clawbot(action: ClawbotAction, home: &Path, socket: &Path) -> anyhow::Result<ExitCode> {
    match action {
        ClawbotAction::Login { account, base_url } => {
            clawbot_cmd::login(home, socket, &account, base_url).await
        }
        ClawbotAction::Status { json } => {
            clawbot_cmd::manage(home, socket, DaemonCommand::Status, json).await
        }
        ClawbotAction::Enable(args) => set_account(home, socket, args, true).await,
        ClawbotAction::Disable(args) => set_account(home, socket, args, false).await,
        ClawbotAction::Logout { account } => {
            clawbot_cmd::manage(
                home,
                socket,
                DaemonCommand::ClawbotLogout { account },
                false,
            )
            .await
        }
    }
}

/// Both ends are a terminal (a picker may ask).
fn terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// `scv --bg PROMPT`: run in the current directory.
async fn background(
    endpoint: &scv_client::Endpoint,
    choice: &scv_tui::session::Choice,
    prompt: Option<String>,
) -> anyhow::Result<ExitCode> {
    let cwd =
        std::env::current_dir().map_err(|err| anyhow::anyhow!("the current directory: {err}"))?;
    let prompt = prompt.unwrap_or_default();
    scv_tui::agents_cmd::background(endpoint, &cwd, choice, &prompt).await
}

/// `scv agents | attach | logs | stop`: the daemon's live sessions.
async fn live(
    command: Command,
    endpoint: scv_client::Endpoint,
    launched: std::time::Instant,
    choice: scv_tui::session::Choice,
) -> anyhow::Result<ExitCode> {
    use scv_tui::agents_cmd;
    match command {
        Command::Agents { json } if !json && terminal() => {
            match agents_cmd::pick(&endpoint).await? {
                Some(id) => tui::run(endpoint, launched, choice, Which::Attach(id), false, None)
                    .await
                    .map(|()| ExitCode::SUCCESS),
                None => Ok(ExitCode::SUCCESS),
            }
        }
        Command::Agents { json } => agents_cmd::agents(&endpoint, json).await,
        Command::Logs { id, follow } => agents_cmd::logs(&endpoint, &id, follow).await,
        Command::Stop { id } => agents_cmd::stop(&endpoint, &id).await,
        Command::Attach { id } => {
            tui::run(endpoint, launched, choice, Which::Attach(id), false, None)
                .await
                .map(|()| ExitCode::SUCCESS)
        }
        _ => Ok(ExitCode::FAILURE),
    }
}

/// The error in one line, then (a daemon that is not installed) how to
/// install it.
fn failed(err: &anyhow::Error) -> ExitCode {
    eprintln!("scv: {}", scv_client::text::visible(&format!("{err:#}")));
    if let Some(hint) = scv_tui::first_run::missing_server(err) {
        eprintln!("{hint}");
    }
    ExitCode::FAILURE
}
