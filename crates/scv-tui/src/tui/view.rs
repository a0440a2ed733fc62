//! Drawing the App: the screen's layout, the transcript, the slash-command
//! completion and the status line; the queue panel, the approval prompt
//! and the input box draw themselves. Drawing reads the App and writes
//! nothing back.

use super::app::App;
use super::panel::more_below;
use super::state::{short, LinkState};
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui::Frame;

pub fn draw(frame: &mut Frame<'_>, app: &App) {
    let layout = app.layout(frame.area());
    draw_transcript(frame, app, layout.transcript);
    if let Some(overlay) = &app.overlay {
        super::overlays::draw(frame, overlay, &app.overlay_data(), layout.transcript);
    }
    if layout.queue.height > 0 {
        app.queue.draw(frame, layout.queue);
    }
    if layout.approval.height > 0 {
        let typing = !app.input.is_empty();
        app.approval
            .draw(frame, layout.approval, app.now, typing, app.plan_mode());
    }
    let input_focused = !app.queue.focused();
    app.input.draw(
        frame,
        layout.input,
        input_focused,
        app.turn.is_some(),
        app.plan_mode(),
    );
    if let Some(text) = &app.hint {
        frame.render_widget(
            Paragraph::new(Line::styled(
                format!(" {}", scv_client::text::visible(text)),
                Style::default().fg(Color::Yellow),
            )),
            layout.hint,
        );
    }
    draw_status(frame, app, layout.status);
    draw_completion(frame, app, layout.input);
}

fn draw_transcript(frame: &mut Frame<'_>, app: &App, area: Rect) {
    if app.transcript.is_empty() {
        let welcome = vec![
            Line::styled(
                "SCV",
                Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD),
            ),
            Line::styled(
                "Ask for a change, a fix or an explanation. /help lists keys and commands.",
                Style::default().fg(Color::DarkGray),
            ),
            Line::styled(
                "Shift+Tab toggles plan mode: the agent looks and plans, and changes nothing.",
                Style::default().fg(Color::DarkGray),
            ),
        ];
        // Wrapped at words: a narrow terminal shows all of it.
        frame.render_widget(
            Paragraph::new(welcome).wrap(ratatui::widgets::Wrap { trim: false }),
            area,
        );
        return;
    }
    let view = app
        .transcript
        .view(area.width, area.height, app.viewport, app.expanded);
    frame.render_widget(Paragraph::new(view.lines), area);
    if view.below > 0 {
        more_below(frame, area, format!(" ↓ {} more (PgDn) ", view.below), 0);
    }
}

fn draw_completion(frame: &mut Frame<'_>, app: &App, input: Rect) {
    if !app.path_matches.is_empty() {
        draw_path_completion(frame, app, input);
        return;
    }
    let matches = app.slash_matches();
    if matches.is_empty() || input.y < matches.len() as u16 {
        return;
    }
    let height = matches.len() as u16;
    // From the screen's first column (nothing of the transcript shows
    // beside it), as wide as its longest line (the terminal's width at
    // most): descriptions are not cut on a wide screen.
    let widest = matches
        .iter()
        .map(|(command, what)| 1 + command.chars().count().max(8) + 1 + what.chars().count() + 1)
        .max()
        .unwrap_or(0);
    let area = popup_area(input, widest, height);
    // The first match is highlighted: Enter runs it.
    let lines: Vec<Line<'_>> = matches
        .iter()
        .enumerate()
        .map(|(i, (command, what))| {
            let line = Line::from(vec![
                Span::styled(
                    format!(" {command:<8}"),
                    Style::default()
                        .fg(Color::Cyan)
                        .add_modifier(Modifier::BOLD),
                ),
                Span::styled(format!(" {what}"), Style::default().fg(Color::Gray)),
            ]);
            if i == 0 {
                line.style(Style::default().bg(Color::DarkGray))
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).style(Style::default().bg(Color::Black)),
        area,
    );
}

/// A popup of `height` rows above the input box, from its first column
/// and `widest` columns wide (at least 40, at most the box's width).
fn popup_area(input: Rect, widest: usize, height: u16) -> Rect {
    let width = (widest as u16).max(40).min(input.width);
    Rect::new(input.x, input.y - height, width, height)
}

/// The paths offered for an `@path` (Tab completes).
fn draw_path_completion(frame: &mut Frame<'_>, app: &App, input: Rect) {
    let height = app.path_matches.len() as u16;
    if input.y < height {
        return;
    }
    let widest = app
        .path_matches
        .iter()
        .map(|path| path.chars().count() + 2)
        .max()
        .unwrap_or(0);
    let area = popup_area(input, widest, height);
    let lines: Vec<Line<'_>> = app
        .path_matches
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let style = if i == 0 {
                Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD)
            } else {
                Style::default().fg(Color::Gray)
            };
            Line::styled(format!(" @{}", super::wrap::clean(path)), style)
        })
        .collect();
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines).style(Style::default().bg(Color::Black)),
        area,
    );
}

/// The status line: most useful first (a long workspace path is what
/// gets cut): the link, the session, what runs, what it used.
fn draw_status(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let dim = Style::default().fg(Color::DarkGray);
    let sep = || Span::styled(" │ ", dim);
    let mut spans = match app.link {
        LinkState::Connected => vec![Span::styled("● ", Style::default().fg(Color::Green))],
        LinkState::Disconnected => vec![Span::styled(
            "○ reconnecting ",
            Style::default().fg(Color::Red),
        )],
    };
    if let Some(host) = &app.remote_host {
        spans.push(Span::styled(
            format!("on {} ", scv_client::text::visible(host)),
            Style::default().fg(Color::Magenta),
        ));
        spans.push(sep());
    }
    if let Some(session) = &app.session {
        session_status(session, &mut spans);
    }
    activity_status(app, &mut spans);
    usage_status(app, &mut spans);
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The session's part of the status line: model, saving, sandbox, mode;
/// each followed by a separator.
fn session_status(session: &crate::tui::state::SessionView, spans: &mut Vec<Span<'static>>) {
    let dim = Style::default().fg(Color::DarkGray);
    let yellow = Style::default().fg(Color::Yellow);
    if let Some(provider) = &session.provider {
        spans.push(Span::styled(format!("{provider} "), dim));
    }
    let mut push = |span: Span<'static>| {
        spans.push(span);
        spans.push(Span::styled(" │ ", dim));
    };
    push(Span::styled(
        session.model.clone(),
        Style::default().fg(Color::Cyan),
    ));
    // Turns go on, but a crash now would lose them: said until the
    // journal caught up.
    if let Some(not_saved) = &session.not_saved {
        push(Span::styled(
            not_saved.clone(),
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
        ));
    }
    // The default (workspace-write) is said quietly; anything else is news.
    match session.sandbox.as_deref() {
        // Commands are still confined, but `sandboxed` does not
        // auto-approve: `/status` says what is missing.
        Some("workspace-write" | "read-only") if !session.sandbox_gaps.is_empty() => {
            push(Span::styled("sandbox partial (see /status)", yellow))
        }
        Some("workspace-write") => push(Span::styled("sandboxed", dim)),
        Some("unavailable") => push(Span::styled(
            "sandbox unavailable",
            Style::default().fg(Color::Red),
        )),
        Some(mode @ ("off" | "read-only")) => push(Span::styled(format!("sandbox {mode}"), yellow)),
        _ => {}
    }
    if session.sandbox_network == Some(false) {
        push(Span::styled("net off", yellow));
    }
    // The server's word: shown once `session.configured` says so.
    if session.mode == scv_protocol::Mode::Plan {
        push(Span::styled(
            "⏸ plan mode",
            Style::default()
                .fg(Color::Black)
                .bg(Color::Magenta)
                .add_modifier(Modifier::BOLD),
        ));
    }
}

/// What runs: the turn (or idle), subagents, background processes, the
/// queue.
fn activity_status(app: &App, spans: &mut Vec<Span<'static>>) {
    let dim = Style::default().fg(Color::DarkGray);
    match &app.turn {
        Some(turn) => spans.push(Span::styled(
            turn.status(app.now, !app.approval.is_empty()),
            Style::default().fg(Color::Yellow),
        )),
        None => spans.push(Span::styled("idle", dim)),
    }
    let running = app.subagents.running();
    if running > 0 {
        let plural = if running == 1 {
            "subagent"
        } else {
            "subagents"
        };
        spans.push(Span::styled(
            format!(" · {running} {plural} (ctrl+o)"),
            Style::default().fg(Color::Magenta),
        ));
    }
    background(app, Span::styled(" │ ", dim), spans);
    if !app.queue.is_empty() || app.queue.paused() {
        spans.push(Span::styled(" │ ", dim));
        let paused = if app.queue.paused() { " (paused)" } else { "" };
        spans.push(Span::raw(format!("queue {}{paused}", app.queue.len())));
    }
}

/// What the session used: context, tokens, cost, warnings, and the
/// workspace last.
fn usage_status(app: &App, spans: &mut Vec<Span<'static>>) {
    let dim = Style::default().fg(Color::DarkGray);
    let sep = || Span::styled(" │ ", dim);
    if let Some(session) = &app.session {
        spans.push(sep());
        spans.push(Span::raw(format!(
            "ctx {}/{}",
            short(app.meter.context_used),
            short(session.context_max_tokens)
        )));
    }
    spans.push(sep());
    // The running turn's tokens so far count too (`usage.updated`).
    let live = app.turn.as_ref().map(|t| t.usage).unwrap_or_default();
    spans.push(Span::raw(format!(
        "{}↑ {}↓",
        short(app.meter.usage.input_tokens + live.input_tokens),
        short(app.meter.usage.output_tokens + live.output_tokens)
    )));
    if let Some(cost) = app.meter.costs.compact() {
        spans.push(sep());
        spans.push(Span::raw(cost));
    }
    // Which budget: `/status` says.
    let warnings = [
        (app.config_changed, "config changed: /new to use it"),
        (app.meter.costs.warning_budget.is_some(), "budget 80%"),
    ];
    for (_, warning) in warnings.iter().filter(|(on, _)| *on) {
        spans.push(sep());
        spans.push(Span::styled(*warning, Style::default().fg(Color::Yellow)));
    }
    if let Some(session) = &app.session {
        spans.push(sep());
        spans.push(Span::styled(tilde(&session.cwd), dim));
    }
}

/// The running background processes, after `sep`, when there are
/// (`/ps` lists them).
fn background(app: &App, sep: Span<'static>, spans: &mut Vec<Span<'static>>) {
    let running = app.processes.running();
    if running > 0 {
        spans.push(sep);
        spans.push(Span::styled(
            format!("{running} bg (/ps)"),
            Style::default().fg(Color::Cyan),
        ));
    }
}

/// `/home/me/x` → `~/x`.
fn tilde(path: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && path.starts_with(&home) => {
            format!("~{}", &path[home.len()..])
        }
        _ => path.to_string(),
    }
}
