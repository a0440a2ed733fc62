//! Sessions that outlive their client, from the command line: `scv --bg
//! "PROMPT"` (a detached session running the prompt; its id printed),
//! `scv agents` (the daemon's live sessions), `scv logs ID [--follow]`
//! (the transcript, then live events until the session idles or
//! closes) and `scv stop ID` (`session.close`). Every event is read
//! through the session client.

use crate::session::{new_session, Choice, DaemonConnection};
use anyhow::{bail, Result};
use scv_client::session::{Outcome, SessionClient, ToolChange, Update};
use scv_client::text::visible;
use scv_client::Endpoint;
use scv_protocol::{
    Capabilities, LiveState, PeerInfo, StoredSession, TranscriptItem, TurnOutcome,
    MAX_SESSION_LIST_LIMIT,
};
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

const CAPABILITIES: Capabilities = Capabilities {
    sessions: true,
    usage: true,
    detach: true,
    ..Capabilities::NONE
};

/// A connection initialized with capability `detach` (`start`: the
/// daemon is started when absent).
async fn connect(endpoint: &Endpoint, start: bool, client: &str) -> Result<DaemonConnection> {
    let mut conn = endpoint.connect(start).await?;
    let initialized = conn
        .initialize(
            Some(PeerInfo {
                name: client.into(),
                version: env!("CARGO_PKG_VERSION").into(),
            }),
            Some(CAPABILITIES),
        )
        .await?;
    if let scv_protocol::EventBody::Initialized { capabilities, .. } = &initialized.body {
        if !capabilities.is_some_and(|c| c.detach) {
            bail!("this SCV daemon keeps no detached sessions (an older version?); restart it with `scv daemon restart`");
        }
    }
    Ok(conn)
}

/// `scv --bg "PROMPT"`: a new session in `cwd`, detached, running
/// `prompt`; prints its id and returns while it runs.
pub async fn background(
    endpoint: &Endpoint,
    cwd: &Path,
    choice: &Choice,
    prompt: &str,
) -> Result<ExitCode> {
    if prompt.trim().is_empty() {
        bail!("--bg needs a prompt: scv --bg \"PROMPT\"");
    }
    let mut conn = connect(endpoint, true, "scv-bg").await?;
    let opened = conn.open_more(new_session(cwd, choice)).await?;
    let session_id = opened.session_id;
    conn.detach_session(&session_id).await?;
    let mut client = SessionClient::new("bg-");
    client.set_session(session_id.clone());
    let submit = client.submit(prompt);
    conn.send_request(&submit).await?;
    // Its turn started (or it was refused): then the connection may go.
    loop {
        let Some(event) = conn.next_event().await? else {
            bail!("the SCV daemon closed the connection");
        };
        for update in client.apply(&event).updates {
            match update {
                Update::Started { .. } | Update::Queued { .. } => {
                    println!("{session_id}");
                    eprintln!(
                        "running in the background: `scv logs {} --follow` to watch, `scv attach {0}` to take it, `scv stop {0}` to stop it",
                        short(&session_id)
                    );
                    return Ok(ExitCode::SUCCESS);
                }
                Update::Refused { error, .. } => {
                    bail!("the prompt was refused: {}", visible(&error.message))
                }
                _ => {}
            }
        }
    }
}

/// `scv agents` in a terminal: the table numbered, then which one to
/// attach to (`None`: none).
pub async fn pick(endpoint: &Endpoint) -> Result<Option<String>> {
    let sessions = match live_sessions(endpoint).await {
        Ok(sessions) => sessions,
        Err(_) => {
            println!("no live sessions (the SCV daemon is not running)");
            return Ok(None);
        }
    };
    let table = table(&sessions, scv_client::time::unix_seconds());
    if sessions.is_empty() {
        print!("{}", visible(&table));
        return Ok(None);
    }
    for (n, line) in table.lines().enumerate() {
        let mark = if n == 0 {
            "   ".to_string()
        } else {
            format!("{n:>2} ")
        };
        println!("{mark}{}", visible(line));
    }
    print!("attach to (1-{}, Enter: none): ", sessions.len());
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    let chosen = answer
        .trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|n| sessions.get(n));
    Ok(chosen.map(|s| s.session_id.clone()))
}

/// The daemon's live sessions (it is not started for this).
async fn live_sessions(endpoint: &Endpoint) -> Result<Vec<StoredSession>> {
    let mut conn = connect(endpoint, false, "scv-agents").await?;
    Ok(conn
        .list_sessions(None, Some(MAX_SESSION_LIST_LIMIT))
        .await?
        .into_iter()
        .filter(|s| s.live.as_ref().is_some_and(|l| l.live))
        .collect())
}

/// `scv agents`: the daemon's live sessions, every workspace's.
pub async fn agents(endpoint: &Endpoint, json: bool) -> Result<ExitCode> {
    let sessions = match live_sessions(endpoint).await {
        Ok(sessions) => sessions,
        Err(_) if !json => {
            println!("no live sessions (the SCV daemon is not running)");
            return Ok(ExitCode::SUCCESS);
        }
        Err(err) => return Err(err),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&sessions)?);
    } else {
        print!(
            "{}",
            visible(&table(&sessions, scv_client::time::unix_seconds()))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The live sessions as a table: id, state, age, cost, workspace, what
/// it waits for.
pub fn table(sessions: &[StoredSession], now: u64) -> String {
    if sessions.is_empty() {
        return "no live sessions\n".into();
    }
    let mut out = format!(
        "{:<8}  {:<17}  {:>6}  {:>8}  {:<8}  {}\n",
        "SESSION", "STATE", "AGE", "COST", "CLIENTS", "WORKSPACE · WAITING FOR / TITLE"
    );
    for s in sessions {
        let Some(live) = &s.live else { continue };
        let state = live.state.as_str();
        let cost = live
            .cost_usd
            .map_or_else(|| "-".to_string(), |c| format!("${c:.4}"));
        let clients = if live.detached {
            live.attached.to_string()
        } else {
            format!("{} (own)", live.attached)
        };
        let what = match (&live.waiting_for, live.state) {
            (Some(waits), LiveState::AwaitingApproval) => format!("waits for approval: {waits}"),
            _ => s.title.clone(),
        };
        out.push_str(&format!(
            "{:<8}  {:<17}  {:>6}  {:>8}  {:<8}  {} · {}\n",
            short(&s.session_id),
            state,
            age(now.saturating_sub(s.created_unix_seconds)),
            cost,
            clients,
            s.cwd,
            what
        ));
    }
    out
}

fn age(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// `scv stop ID`: the live session closed (its turn cancelled).
pub async fn stop(endpoint: &Endpoint, id: &str) -> Result<ExitCode> {
    let mut conn = connect(endpoint, false, "scv-stop").await?;
    conn.close_session(id).await?;
    println!("stopped {id}");
    Ok(ExitCode::SUCCESS)
}

/// `scv logs ID [--follow]`: the live session's transcript; with
/// `follow`, its events as they come until it is idle or closed.
pub async fn logs(endpoint: &Endpoint, id: &str, follow: bool) -> Result<ExitCode> {
    let mut conn = connect(endpoint, false, "scv-logs").await?;
    let events = conn.attach_session(id).await?;
    let mut client = SessionClient::new("logs-");
    let mut out = std::io::stdout().lock();
    let mut state = LiveState::Idle;
    for event in &events {
        for update in client.apply(event).updates {
            if let Update::Attached { attached, .. } = &update {
                state = attached.state;
            }
            print_update(&mut out, update)?;
        }
    }
    if state == LiveState::AwaitingApproval && !follow {
        // The approvals still waiting come next (as they were requested).
        let wait = std::time::Duration::from_secs(2);
        while let Ok(Ok(Some(event))) = tokio::time::timeout(wait, conn.next_event()).await {
            let approval = matches!(
                event.body,
                scv_protocol::EventBody::ApprovalRequested { .. }
            );
            for update in client.apply(&event).updates {
                print_update(&mut out, update)?;
            }
            if !approval || !client.approvals().is_empty() {
                break;
            }
        }
    }
    out.flush()?;
    if !follow || state == LiveState::Idle {
        return Ok(ExitCode::SUCCESS);
    }
    loop {
        let Some(event) = conn.next_event().await? else {
            writeln!(out, "[the connection dropped]")?;
            return Ok(ExitCode::FAILURE);
        };
        for update in client.apply(&event).updates {
            let ended = matches!(update, Update::Ended { .. });
            let closed = matches!(update, Update::Closed);
            print_update(&mut out, update)?;
            out.flush()?;
            if closed || (ended && client.queue().is_empty() && !client.busy()) {
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}

/// One update as plain text.
fn print_update(out: &mut impl std::io::Write, update: Update) -> std::io::Result<()> {
    match update {
        Update::Attached { attached, .. } => writeln!(
            out,
            "[session {} in {}]",
            attached.state.as_str(),
            visible(attached.cwd.as_deref().unwrap_or("?"))
        ),
        Update::Transcript { items, truncated } => {
            if truncated {
                writeln!(out, "[older items left out]")?;
            }
            for item in items {
                write_item(out, &item)?;
            }
            Ok(())
        }
        Update::TurnBegan { prompt, .. } => match prompt {
            Some(prompt) => writeln!(out, "> {}", visible(&prompt)),
            None => writeln!(out, "[a turn started]"),
        },
        Update::Text(text) => write!(out, "{}", visible(&text)),
        Update::TextDone(_) => writeln!(out),
        Update::Tool(ToolChange::Running { name, .. }) => writeln!(out, "[{name} running]"),
        Update::Tool(ToolChange::Done {
            name,
            success,
            output,
            ..
        }) => {
            let head: String = output.lines().take(5).collect::<Vec<_>>().join("\n");
            let mark = if success { "ok" } else { "failed" };
            writeln!(out, "[{name} {mark}]\n{}", visible(&head))
        }
        Update::ApprovalRequested(approval) => writeln!(
            out,
            "[waiting for approval: {}]",
            visible(&approval.summary)
        ),
        Update::Ended { outcome, .. } => match outcome {
            Outcome::Completed { .. } => writeln!(out, "[turn completed]"),
            Outcome::Cancelled => writeln!(out, "[turn cancelled]"),
            Outcome::Failed { code, message } => {
                writeln!(out, "[turn failed: {code:?}: {}]", visible(&message))
            }
        },
        Update::Closed => writeln!(out, "[session closed]"),
        _ => Ok(()),
    }
}

fn write_item(out: &mut impl std::io::Write, item: &TranscriptItem) -> std::io::Result<()> {
    match item {
        TranscriptItem::User { text, .. } => writeln!(out, "> {}", visible(text)),
        TranscriptItem::Assistant { text, .. } => writeln!(out, "{}", visible(text)),
        TranscriptItem::Tool { name, success, .. } => {
            writeln!(out, "[{name} {}]", if *success { "ok" } else { "failed" })
        }
        TranscriptItem::TurnEnded { outcome, .. } => {
            let word = match outcome {
                TurnOutcome::Completed => "completed",
                TurnOutcome::Cancelled => "cancelled",
                TurnOutcome::Failed => "failed",
                TurnOutcome::Interrupted => "interrupted",
            };
            writeln!(out, "[turn {word}]")
        }
    }
}
