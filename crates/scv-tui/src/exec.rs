//! `scv exec "PROMPT"`: one turn, headless, in the current directory (or
//! `--cwd DIR`). The prompt is read from stdin when it is `-`, or absent
//! while stdin is not a terminal. The answer streams to stdout (or every
//! protocol event as a JSON line with `--json`), the text of successive
//! steps a blank line apart; tool activity goes to stderr: each call with
//! what it does (a shell command, a file's path, else its arguments cut
//! short) and, when it ends, done / failed / denied with the last lines of
//! its output. Errors and turn failures are said in words there (the
//! protocol's codes are in the `--json` lines). `--reasoning` asks for the model's thinking: `reasoning.delta`
//! events with `--json`, the thinking on stderr otherwise. Approvals are denied unless
//! `--approve` names the risk class; either way the whole call is printed,
//! every line. Text bound for a terminal has its control characters shown
//! visibly, so model or tool output cannot drive the terminal. Exit 0 when
//! the turn completed, 1 when it failed, 130 when it was cancelled.
//! With `--remote`, `--cwd` is a path on that machine.
//! `--resume ID` / `--continue` run the turn in a stored session; the
//! session's id is on stderr (`[session] ID`) or, with `--json`, in its
//! `session.started`. A prompt `/NAME args` runs the custom command or
//! skill NAME (an unknown one is an error, and nothing is sent to the
//! model); `--plan` runs the turn in plan mode.
//! Subagents (capability `subagents`): their events are JSON lines with
//! `parent` under `--json`; otherwise a child is one stderr line when it
//! starts and one when it ends, its tool calls indented under it, and its
//! approvals follow `--approve` like the parent's (see [`show`]).

mod elicit;
mod output;
mod show;

use crate::session;
use anyhow::Result;
use scv_client::session::SessionClient;
use scv_protocol::{EventBody, Risk};
use show::{Exit, Printer};
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Default)]
pub struct Options {
    pub json: bool,
    pub reasoning: bool,
    pub cwd: Option<PathBuf>,
    pub approve: Vec<Risk>,
    /// Answer MCP servers' questions on the terminal (else declined).
    pub elicit: bool,
    /// A new session, or which stored one.
    pub which: session::Which,
    /// Image files sent with the prompt (`--image`).
    pub images: Vec<PathBuf>,
}

/// The prompt as given, or read from stdin (`-`, or none and stdin is not
/// a terminal); and whether it came from stdin.
fn read_prompt(prompt: Option<String>) -> Result<(String, bool)> {
    let from_stdin = match prompt.as_deref() {
        Some("-") => true,
        Some(_) => false,
        None if std::io::stdin().is_terminal() => anyhow::bail!(
            "no prompt: give one (`scv exec \"PROMPT\"`) or pipe it in (`… | scv exec -`)"
        ),
        None => true,
    };
    let prompt = if from_stdin {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|err| anyhow::anyhow!("cannot read the prompt from standard input: {err}"))?;
        text
    } else {
        prompt.unwrap_or_default()
    };
    if prompt.trim().is_empty() {
        anyhow::bail!("the prompt is empty");
    }
    Ok((prompt, from_stdin))
}

/// `--cwd DIR` or the current directory. A remote daemon's workspace is a
/// path on its machine, checked there: by default the same path as here.
fn workspace(endpoint: &scv_client::Endpoint, cwd: Option<&Path>) -> Result<PathBuf> {
    if let scv_client::Endpoint::Remote { .. } = endpoint {
        return match cwd {
            Some(dir) => Ok(dir.to_path_buf()),
            None => Ok(std::env::current_dir()?),
        };
    }
    match cwd {
        Some(dir) => {
            let dir = dir
                .canonicalize()
                .map_err(|err| anyhow::anyhow!("--cwd {}: {err}", dir.display()))?;
            if !dir.is_dir() {
                anyhow::bail!("--cwd {}: not a directory", dir.display());
            }
            Ok(dir)
        }
        None => Ok(std::env::current_dir()?.canonicalize()?),
    }
}

pub async fn run(
    endpoint: &scv_client::Endpoint,
    prompt: Option<String>,
    options: &Options,
    choice: &session::Choice,
) -> Result<ExitCode> {
    let json = options.json;
    let approve = &options.approve[..];
    let (prompt, from_stdin) = read_prompt(prompt)?;
    let mut terminal = elicit::Terminal::for_prompt(from_stdin);
    let images = scv_client::images::read_files(&options.images)
        .map_err(|err| anyhow::anyhow!("--image: {err}"))?;
    let cwd = workspace(endpoint, options.cwd.as_deref())?;
    let capabilities = Some(capabilities(options, !images.is_empty()));
    let session::Opened {
        conn,
        events,
        session_id,
        note,
    } = session::open(
        endpoint,
        true,
        "scv-exec",
        capabilities,
        &cwd,
        choice,
        &options.which,
    )
    .await?;
    let mut stdout = std::io::stdout().lock();
    let out_tty = stdout.is_terminal();
    let err_tty = std::io::stderr().is_terminal();
    if json {
        for event in &events {
            writeln!(stdout, "{}", serde_json::to_string(event)?)?;
        }
    }
    // Both streams held until each batch of events is printed: a write
    // or two per batch, not one per delta.
    let output = output::Output::new(stdout, std::io::stderr());
    let (out, err) = output.halves();
    let mut printer = Printer::new(out, err, out_tty, err_tty, json);
    printer.elicit = options.elicit;
    if let Some(note) = &note {
        eprintln!("scv: {note}");
    }
    if !json {
        eprintln!("[session] {session_id}");
    }
    session_notes(&events);
    let mut client = SessionClient::new("exec-");
    client.set_session(session_id.clone());
    // The reader on a task of its own, events in batches: a burst of
    // deltas is printed and its approvals answered in one write.
    let mut driver = scv_client::Driver::start(conn);
    submit(
        &mut driver,
        &mut client,
        session_id,
        (prompt, images),
        options,
        choice,
    )
    .await?;
    let mut cancel_sent = false;
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    loop {
        let batch = tokio::select! {
            batch = driver.next() => batch,
            _ = &mut interrupt, if !cancel_sent => {
                // Cancelled wherever the prompt is, even before its turn
                // started (the session client sends it when it does).
                cancel_sent = true;
                driver.send(&client.cancel_current()).await?;
                continue;
            }
        };
        let Some(batch) = batch else {
            anyhow::bail!("the SCV daemon closed the connection before the turn ended");
        };
        let mut requests = Vec::new();
        let mut questions = Vec::new();
        for event in &batch.events {
            let step = printer.event(&mut client, event, approve)?;
            requests.extend(step.requests);
            questions.extend(step.questions);
            if let Some(exit) = step.exit {
                output.flush()?;
                driver.send(&requests).await?;
                return Ok(match exit {
                    Exit::Completed => ExitCode::SUCCESS,
                    Exit::Failed => ExitCode::FAILURE,
                    Exit::Cancelled => ExitCode::from(130),
                });
            }
        }
        // The batch is printed: out it goes (before answering its
        // approvals, so what was asked is on screen first).
        output.flush()?;
        driver.send(&requests).await?;
        let mut run = Running {
            client: &mut client,
            driver: &mut driver,
            cancel_sent: &mut cancel_sent,
        };
        run.ask(&mut terminal, &questions, &mut interrupt).await?;
        match batch.closed.as_deref() {
            None => {}
            Some(scv_client::driver::CLOSED) => {
                anyhow::bail!("the SCV daemon closed the connection before the turn ended")
            }
            Some(why) => anyhow::bail!("{why}"),
        }
    }
}

/// The run's session and link, for what is asked on the terminal.
struct Running<'a, W> {
    client: &'a mut SessionClient,
    driver: &'a mut scv_client::Driver<W>,
    cancel_sent: &'a mut bool,
}

impl<W: tokio::io::AsyncWrite + Unpin> Running<'_, W> {
    /// `--elicit`: asks each question on the terminal and sends its
    /// answer; Ctrl+C meanwhile cancels the question and the turn.
    async fn ask<F>(
        &mut self,
        terminal: &mut elicit::Terminal,
        questions: &[scv_protocol::ElicitationRequested],
        interrupt: &mut std::pin::Pin<&mut F>,
    ) -> Result<()>
    where
        F: std::future::Future<Output = std::io::Result<()>>,
    {
        for asked in questions {
            let (action, content) = tokio::select! {
                answer = terminal.ask(asked) => answer,
                _ = interrupt.as_mut(), if !*self.cancel_sent => {
                    *self.cancel_sent = true;
                    self.driver.send(&self.client.cancel_current()).await?;
                    (scv_protocol::ElicitationAction::Cancel, None)
                }
            };
            let resolve = show::elicited(self.client, &asked.elicitation_id, action, content);
            self.driver.send(&[resolve]).await?;
        }
        Ok(())
    }
}

/// What `scv exec` asks of the server.
fn capabilities(options: &Options, images: bool) -> scv_protocol::Capabilities {
    // Usage by kind and cost on `turn.completed` (`--json` prints it).
    // Checkpoints: a changing call that runs without one says so.
    scv_protocol::Capabilities {
        reasoning: options.reasoning,
        checkpoints: true,
        usage: true,
        hooks: true,
        subagents: true,
        retries: true,
        budgets: true,
        // Command, skill and agent files it could not use whole.
        commands: true,
        elicitation: true, // asked with `--elicit`, else declined and said
        images,
        ..scv_protocol::Capabilities::default()
    }
}

/// Sends the prompt (`/NAME args`: the workspace's custom command or
/// skill NAME), after `--plan`'s switch of a stored session's mode.
async fn submit<W: tokio::io::AsyncWrite + Unpin>(
    driver: &mut scv_client::Driver<W>,
    client: &mut SessionClient,
    session_id: String,
    (prompt, images): (String, Vec<scv_protocol::PromptImage>),
    options: &Options,
    choice: &session::Choice,
) -> Result<()> {
    if choice.mode.is_some() && options.which != session::Which::New {
        // A stored session keeps its own mode; `--plan` switches it.
        let configure = client.request(scv_protocol::ClientMessage::SessionConfigure(
            scv_protocol::SessionConfigure {
                session_id,
                mode: choice.mode,
                ..Default::default()
            },
        ));
        driver.send(&[configure]).await?;
    }
    let submitted = if !images.is_empty() {
        client.submit_with_images(prompt, images)
    } else if prompt.starts_with('/') {
        client.submit_command(prompt)
    } else {
        client.submit(prompt)
    };
    driver.send(&[submitted]).await?;
    Ok(())
}

/// What the session says as it opens, on stderr whatever the output
/// format: config.toml's error (the server runs on the last good one) and
/// unknown keys, and the command, skill and agent files it could not use
/// whole (an agent's tools SCV lacks, a command a skill hides).
fn session_notes(events: &[scv_protocol::Event]) {
    for event in events {
        if let EventBody::SessionStarted(started) = &event.body {
            for warning in &started.config_warnings {
                eprintln!("[config] {}", scv_client::text::visible(warning));
            }
            for skipped in &started.command_diagnostics {
                eprintln!("[commands] {}", scv_client::text::visible(skipped));
            }
        }
    }
}
