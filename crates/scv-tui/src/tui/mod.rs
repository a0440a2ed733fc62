//! The full-screen terminal UI.
//!
//! Start-up connects, initializes and starts the session before the
//! terminal is touched, so every failure is a one-line error on a normal
//! screen. The terminal is restored on every exit path, panics included.

pub mod app;
pub mod approval;
pub mod diff;
pub mod edit_diff;
pub mod elicit;
pub mod files;
pub mod highlight;
pub mod input;
pub mod input_box;
pub mod markdown;
pub mod meter;
mod opening;
pub mod overlays;
mod panel;
pub mod processes;
pub mod queue_panel;
pub use scv_client::rules;
pub mod state;
pub mod subagents;
pub mod transcript;
pub mod view;
pub mod wrap;

/// The overlays' former path (`tui::overlay::OverlayKind`), kept for callers.
pub use self::overlays as overlay;

use crate::session::{self, DaemonConnection};
use anyhow::{bail, Result};
use app::{App, Outgoing};
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event as TermEvent, EventStream, KeyEventKind, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use futures_util::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use scv_client::endpoint::BoxWrite;
use scv_client::Endpoint;
use scv_protocol::Event;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// At most one frame per this interval while events stream in.
const FRAME_INTERVAL: Duration = Duration::from_millis(16);
const RECONNECT_EVERY: Duration = Duration::from_secs(1);
/// How long one reconnect may hold the screen (a daemon starts in tens of
/// milliseconds; a slower one is found by the next try).
const RECONNECT_WAIT: Duration = Duration::from_secs(3);
/// `scv` shows the model's thinking (`reasoning.delta`), what turns
/// cost (capability `usage`), and its subagents' work under their `task`
/// calls (capability `subagents`).
const REASONING: Option<scv_protocol::Capabilities> = Some(scv_protocol::Capabilities {
    reasoning: true,
    sessions: true,
    checkpoints: true,
    usage: true,
    commands: true,
    hooks: true,
    subagents: true,
    retries: true,
    step_usage: true,
    trust: true,
    budgets: true,
    daemon_status: true,
    // MCP servers' questions, as a form (`tui/elicit.rs`).
    elicitation: true,
    permissions: true,
    processes: true,
    // Its sessions outlive a dropped terminal or link.
    detach: true,
    // `@shot.png` in a prompt sends the image.
    images: true,
});

/// The live link to the daemon: a writer, and events from a reader task
/// (`None` once the connection is gone).
struct Link {
    writer: BoxWrite,
    events: mpsc::Receiver<Option<Event>>,
}

impl Link {
    fn new(conn: DaemonConnection) -> Link {
        let (mut reader, writer) = conn.into_parts();
        let (tx, events) = mpsc::channel(1024);
        tokio::spawn(async move {
            use scv_protocol::Frame;
            while let Some(Ok(Frame::Line(line))) = reader.next().await {
                let Ok(event) = serde_json::from_slice::<Event>(&line) else {
                    continue;
                };
                if tx.send(Some(event)).await.is_err() {
                    return;
                }
            }
            let _ = tx.send(None).await;
        });
        Link { writer, events }
    }

    async fn send(
        &mut self,
        request_id: String,
        message: scv_protocol::ClientMessage,
    ) -> std::io::Result<()> {
        let line = scv_client::frame_line(request_id, message).map_err(std::io::Error::other)?;
        self.writer.write_all(&line).await
    }
}

/// `launched`: when `main` started, for the first-frame figure that
/// `SCV_FIRST_FRAME_FILE` asks for (the render benchmark uses it).
/// `which` session opens; with `pick`, the session picker opens over it
/// (`scv resume` without an id); `prompt` (`scv "PROMPT"`) is sent as the
/// first message, as if typed.
pub async fn run(
    endpoint: Endpoint,
    launched: Instant,
    choice: session::Choice,
    which: session::Which,
    pick: bool,
    prompt: Option<String>,
) -> Result<()> {
    if !std::io::stdout().is_terminal() {
        bail!("stdout is not a terminal; use `scv exec \"PROMPT\"` in scripts");
    }
    highlight::warm_up();
    let cwd = std::env::current_dir()?.canonicalize()?;
    // The first-run probe of local servers runs while the session opens
    // (a remote daemon's configuration is not ours to read).
    let home = match &endpoint {
        Endpoint::Local { home, .. } => Some(home.clone()),
        Endpoint::Remote { .. } => None,
    };
    let missing_key = home
        .as_deref()
        .and_then(|home| crate::first_run::missing_key(home, choice.provider.as_deref()));
    let (opened, locals) = tokio::join!(
        session::open(&endpoint, true, "scv-tui", REASONING, &cwd, &choice, &which),
        async {
            match &missing_key {
                // A provider whose key is set is named instead.
                Some(_) if crate::first_run::keys_set().is_empty() => {
                    crate::first_run::probe_locals().await
                }
                Some(_) => Vec::new(),
                None => Vec::new(),
            }
        }
    );
    let mut opened = opened?;
    detach_own(&mut opened, &which).await;
    let mut app = App::new(Instant::now());
    app.first_run_key = missing_key.clone();
    if let Endpoint::Remote { host, .. } = &endpoint {
        app.remote_host = Some(host.clone());
    }
    if let Endpoint::Local { socket, home } = &endpoint {
        app.daemon_started = crate::first_run::daemon_started(socket);
        app.config_file = Some(home.join("config.toml"));
    }
    for event in opened.events {
        app.apply(event);
    }
    if let Some(note) = opened.note {
        app.notes(vec![note]);
    }
    if let (Some(key), Some(home)) = (&missing_key, &home) {
        let set = crate::first_run::keys_set();
        app.notes(crate::first_run::note(key, home, &set, &locals));
    }
    let mut link = Some(Link::new(opened.conn));
    if pick {
        let ask = app.pick_session("");
        send_all(ask, &mut link, &mut app).await;
    }
    if let Some(prompt) = prompt.filter(|p| !p.trim().is_empty()) {
        let typed = app.type_and_enter(&prompt);
        send_all(typed, &mut link, &mut app).await;
    }
    app.mouse = std::env::var_os("SCV_MOUSE").is_some_and(|v| v == "1");
    let mut terminal = enter_terminal(app.mouse)?;
    if let Ok(size) = terminal.size() {
        app.resize(size.width, size.height);
    }
    terminal.draw(|frame| view::draw(frame, &app))?;
    if let Some(path) = std::env::var_os("SCV_FIRST_FRAME_FILE") {
        let _ = std::fs::write(path, launched.elapsed().as_micros().to_string());
    }
    let result = event_loop(&mut terminal, &mut app, &mut link, &endpoint, &cwd, &choice).await;
    drop(terminal);
    restore_terminal();
    // The transcript left with the screen; what to come back to stays.
    if let Some(summary) = app.exit_summary() {
        println!("{}", scv_client::text::visible(&summary));
    }
    result
}

async fn event_loop(
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    app: &mut App,
    link: &mut Option<Link>,
    endpoint: &Endpoint,
    cwd: &Path,
    choice: &session::Choice,
) -> Result<()> {
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty = true;
    let mut last_frame = Instant::now() - FRAME_INTERVAL;
    let mut next_reconnect = Instant::now();
    loop {
        if dirty && last_frame.elapsed() >= FRAME_INTERVAL {
            app.now = Instant::now();
            terminal.draw(|frame| view::draw(frame, app))?;
            last_frame = Instant::now();
            dirty = false;
        }
        let frame_due = tokio::time::sleep_until((last_frame + FRAME_INTERVAL).into());
        tokio::select! {
            _ = frame_due, if dirty => {}
            key = keys.next() => {
                let Some(Ok(key)) = key else { return Ok(()) };
                let outgoing = terminal_event(app, key);
                match send_all(outgoing, link, app).await {
                    Next::Quit => return Ok(()),
                    Next::Open(which) => {
                        switch(app, link, endpoint, cwd, choice, &which).await;
                    }
                    Next::Stay => {}
                }
                terminal_asks(terminal, app)?;
                if app.should_quit {
                    return Ok(());
                }
                dirty = true;
            }
            event = async {
                match link.as_mut() {
                    Some(live) => live.events.recv().await,
                    None => std::future::pending().await,
                }
            }, if link.is_some() => {
                match event {
                    Some(Some(event)) => {
                        // Events are stamped with the time they arrive (an
                        // approval prompt's arming delay counts from it).
                        app.now = Instant::now();
                        app.apply(event);
                        burst(app, link);
                    }
                    _ => {
                        *link = None;
                        app.disconnected();
                        next_reconnect = Instant::now() + RECONNECT_EVERY;
                    }
                }
                // Approvals a session rule answered.
                let outgoing = app.take_outgoing();
                if let Next::Open(which) = send_all(outgoing, link, app).await {
                    switch(app, link, endpoint, cwd, choice, &which).await;
                }
                dirty = true;
            }
            _ = tick.tick() => {
                if app.turn.is_some() {
                    dirty = true;
                }
                if app.expire_hint(Instant::now()) | app.check_config(Instant::now()) {
                    dirty = true;
                }
                if link.is_none() && Instant::now() >= next_reconnect {
                    next_reconnect = Instant::now() + RECONNECT_EVERY;
                    // The daemon is started again when it is not running,
                    // with the binary lookup `scv` started it with.
                    match reconnect(app, endpoint, cwd, choice).await {
                        Ok(Ok(opened)) => {
                            for event in opened.events {
                                app.apply(event);
                            }
                            *link = Some(Link::new(opened.conn));
                        }
                        Ok(Err(err)) => app.reconnect_failed(format!("{err:#}")),
                        Err(_) => {}
                    }
                    dirty = true;
                }
            }
        }
    }
}

/// A key, the mouse, a paste or a resize, given to the App.
fn terminal_event(app: &mut App, event: TermEvent) -> Vec<Outgoing> {
    match event {
        TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
            app.now = Instant::now();
            app.on_key(key)
        }
        TermEvent::Mouse(mouse) => {
            app.on_mouse(mouse);
            Vec::new()
        }
        TermEvent::Paste(text) => {
            app.on_paste(&text);
            Vec::new()
        }
        TermEvent::Resize(width, height) => {
            app.resize(width, height);
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// What a key asked of the terminal: the clipboard (`/copy`), a whole
/// repaint (Ctrl+L), mouse capture (Ctrl+T).
fn terminal_asks(
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    app: &mut App,
) -> Result<()> {
    if let Some(text) = app.take_clipboard() {
        copy_to_clipboard(terminal, &text);
    }
    if std::mem::take(&mut app.redraw) {
        terminal.clear()?;
    }
    if std::mem::take(&mut app.mouse_changed) {
        let mut stdout = std::io::stdout();
        let _ = if app.mouse {
            crossterm::execute!(stdout, EnableMouseCapture)
        } else {
            crossterm::execute!(stdout, DisableMouseCapture)
        };
    }
    Ok(())
}

/// Takes the rest of a burst of events (at most 4,096) before drawing
/// once; the link's end is a disconnect.
fn burst(app: &mut App, link: &mut Option<Link>) {
    let Some(live) = link.as_mut() else { return };
    for _ in 0..4096 {
        match live.events.try_recv() {
            Ok(Some(event)) => app.apply(event),
            Ok(None) => {
                *link = None;
                app.disconnected();
                break;
            }
            Err(_) => break,
        }
    }
}

/// What the event loop does after sending.
enum Next {
    Stay,
    Quit,
    /// Leave for that session.
    Open(session::Which),
}

/// Sends what the App asked for, up to a quit or a session switch.
async fn send_all(outgoing: Vec<Outgoing>, link: &mut Option<Link>, app: &mut App) -> Next {
    for out in outgoing {
        match out {
            Outgoing::Quit => return Next::Quit,
            Outgoing::Open(which) => return Next::Open(which),
            Outgoing::Send {
                request_id,
                message,
            } => {
                if let Some(live) = link.as_mut() {
                    if live.send(request_id, message).await.is_err() {
                        *link = None;
                        app.disconnected();
                    }
                }
            }
        }
    }
    Next::Stay
}

/// Opens `which` on a connection of its own; once it is open, the old
/// connection (and the session on it) goes and the App shows the new one.
/// A refusal leaves everything as it was, said in the transcript.
async fn switch(
    app: &mut App,
    link: &mut Option<Link>,
    endpoint: &Endpoint,
    cwd: &Path,
    choice: &session::Choice,
    which: &session::Which,
) {
    let opened = tokio::time::timeout(
        Duration::from_secs(10),
        session::open(endpoint, true, "scv-tui", REASONING, cwd, choice, which),
    )
    .await;
    match opened {
        Ok(Ok(mut opened)) => {
            detach_own(&mut opened, which).await;
            // The session left: closed when idle and ours, else it runs on.
            let leaving = app.leaving();
            send_all(leaving, link, app).await;
            let left = app.live.left_running.take();
            app.switched(which);
            app.live = Default::default();
            app.live.left_running = left;
            app.say_left_running();
            for event in opened.events {
                app.apply(event);
            }
            *link = Some(Link::new(opened.conn));
        }
        Ok(Err(err)) => app.failed_switch(&format!("{err:#}")),
        Err(_) => app.failed_switch("the daemon did not answer within 10 s"),
    }
}

/// A session the TUI opened is detached at once (capability `detach`):
/// a dropped terminal or link never cancels its turn. A daemon that does
/// not keep detached sessions leaves it as protocol version 2 says.
async fn detach_own(opened: &mut session::Opened, which: &session::Which) {
    if matches!(which, session::Which::Attach(_)) {
        return;
    }
    let detach = scv_protocol::ClientMessage::SessionDetach(scv_protocol::SessionDetach {
        session_id: opened.session_id.clone(),
    });
    // Its answer (`session.detached`, or a refusal) reaches the App with
    // the session's events.
    let _ = opened.conn.send(detach).await;
}

/// The link is back: the detached session attached again (a daemon that
/// restarted lost it: a new session then, the old one offered back), or a
/// new session.
async fn reconnect(
    app: &mut App,
    endpoint: &Endpoint,
    cwd: &Path,
    choice: &session::Choice,
) -> Result<Result<session::Opened>, tokio::time::error::Elapsed> {
    let open = |which: session::Which| async move {
        tokio::time::timeout(
            RECONNECT_WAIT,
            session::open(endpoint, true, "scv-tui", REASONING, cwd, choice, &which),
        )
        .await
    };
    if let Some(id) = app.reattach_target() {
        if let Ok(Ok(opened)) = open(session::Which::Attach(id)).await {
            app.reattached();
            return Ok(Ok(opened));
        }
    }
    let which = session::Which::New;
    let mut opened = open(which.clone()).await?;
    if let Ok(opened) = &mut opened {
        detach_own(opened, &which).await;
        app.reconnected();
    }
    Ok(opened)
}

/// `/copy`: OSC 52 asks the terminal to set the clipboard (tmux passes it
/// on with `set-clipboard on`). The text is base64, so nothing in it can
/// act as a control sequence.
fn copy_to_clipboard(terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>, text: &str) {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let backend = terminal.backend_mut();
    let _ = write!(backend, "\x1b]52;c;{encoded}\x07");
    let _ = std::io::Write::flush(backend);
}

/// Raw mode, the alternate screen, bracketed paste, and the mouse when
/// `mouse` (off by default: the terminal's own selection works).
fn enter_terminal(mouse: bool) -> Result<Terminal<CrosstermBackend<std::io::Stdout>>> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        previous(info);
    }));
    enable_raw_mode()?;
    let mut stdout = std::io::stdout();
    crossterm::execute!(stdout, EnterAlternateScreen, EnableBracketedPaste)?;
    if mouse {
        crossterm::execute!(stdout, EnableMouseCapture)?;
    }
    if crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false) {
        // Lets Shift+Enter arrive as itself in terminals that support it.
        let _ = crossterm::execute!(
            stdout,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        );
    }
    let mut terminal = Terminal::new(CrosstermBackend::new(stdout))?;
    terminal.clear()?;
    Ok(terminal)
}

/// Puts the terminal back; safe to call more than once.
fn restore_terminal() {
    let mut stdout = std::io::stdout();
    let _ = crossterm::execute!(
        stdout,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = stdout.flush();
}
