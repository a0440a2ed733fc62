//! Overlays over the transcript: `/help`, `/status`, `/approvals` and
//! `/diff`. Each is a scrollable box closed with Esc; what it shows is
//! built from the App when drawn, so it is always current.

use super::app::App;
use super::state::{short, McpView};
use super::wrap;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph};
use ratatui::Frame;
use scv_protocol::ComponentState;

#[derive(Debug, Clone)]
pub enum OverlayKind {
    Help,
    Status,
    Approvals,
    /// `git diff` of the workspace, as lines.
    Diff(Vec<Line<'static>>),
}

#[derive(Debug, Clone)]
pub struct Overlay {
    pub kind: OverlayKind,
    /// Rows scrolled past.
    pub scroll: usize,
    /// The selected rule (`/approvals`).
    pub selected: usize,
}

impl Overlay {
    pub fn new(kind: OverlayKind) -> Overlay {
        Overlay {
            kind,
            scroll: 0,
            selected: 0,
        }
    }

    fn title(&self) -> &'static str {
        match self.kind {
            OverlayKind::Help => " Help — Esc closes ",
            OverlayKind::Status => " Status — Esc closes ",
            OverlayKind::Approvals => " Approval rules — ↑/↓ select · x remove · Esc closes ",
            OverlayKind::Diff(_) => " git diff — ↑/↓ PgUp/PgDn scroll · Esc closes ",
        }
    }
}

const KEYS: &[(&str, &str)] = &[
    ("Enter", "send the message (queued while a turn runs)"),
    ("Shift+Enter, Ctrl+J", "new line"),
    ("↑ / ↓", "prompt history"),
    ("Esc", "cancel the turn (closes an overlay first)"),
    ("Ctrl+C", "cancel the turn; twice quits"),
    ("Ctrl+D", "quit (empty input)"),
    ("Ctrl+O", "expand tool output and thinking"),
    (
        "PgUp / PgDn, wheel",
        "scroll the transcript; End follows it again",
    ),
    ("Tab", "complete a command or an @path; focus the queue"),
    (
        "queue",
        "↑/↓ select · e edit · u/d move · x remove · p pause",
    ),
    (
        "approval",
        "y approve once · n deny · a approve + add a rule",
    ),
    ("@path", "mention a file; Tab completes (.gitignore kept)"),
];

fn heading(text: &str) -> Line<'static> {
    Line::styled(
        text.to_string(),
        Style::default()
            .fg(Color::Cyan)
            .add_modifier(Modifier::BOLD),
    )
}

fn pair(key: &str, what: &str, width: usize) -> Line<'static> {
    Line::from(vec![
        Span::styled(
            format!("  {key:<width$} "),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::styled(what.to_string(), Style::default().fg(Color::Gray)),
    ])
}

/// The overlay's lines (unwrapped).
pub fn lines(app: &App, overlay: &Overlay) -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    match &overlay.kind {
        OverlayKind::Help => {
            let mut lines = vec![heading("Keys")];
            lines.extend(KEYS.iter().map(|(k, w)| pair(k, w, 20)));
            lines.push(Line::default());
            lines.push(heading("Commands"));
            lines.extend(
                super::slash::SLASH_COMMANDS
                    .iter()
                    .map(|(c, w)| pair(c, w, 20)),
            );
            lines
        }
        OverlayKind::Status => status_lines(app),
        OverlayKind::Approvals => {
            let rules = app.rules.list();
            if rules.is_empty() {
                return vec![
                    Line::raw("No approval rules in this session."),
                    Line::styled(
                        "Press a in an approval prompt to approve a call and allow its kind while scv runs.",
                        dim,
                    ),
                ];
            }
            let mut lines: Vec<Line<'static>> = rules
                .iter()
                .enumerate()
                .map(|(i, rule)| {
                    let selected = i == overlay.selected;
                    let style = if selected {
                        Style::default().fg(Color::Black).bg(Color::Cyan)
                    } else {
                        Style::default()
                    };
                    Line::from(vec![
                        Span::styled(if selected { " › " } else { "   " }, style),
                        Span::styled(rule.scope(), style),
                    ])
                })
                .collect();
            lines.push(Line::default());
            lines.push(Line::styled(
                "Rules last until scv exits; they are never saved and never sent to the server.",
                dim,
            ));
            lines
        }
        OverlayKind::Diff(lines) => lines.clone(),
    }
}

fn status_lines(app: &App) -> Vec<Line<'static>> {
    let w = 10;
    let mut lines = Vec::new();
    match &app.session {
        Some(session) => {
            lines.push(pair(
                "provider",
                session.provider.as_deref().unwrap_or("(not reported)"),
                w,
            ));
            lines.push(pair("model", &session.model, w));
            let percent = (app.context_used * 100)
                .checked_div(session.context_max_tokens)
                .unwrap_or(0);
            lines.push(pair(
                "context",
                &format!(
                    "{} of {} tokens ({percent}%)",
                    short(app.context_used),
                    short(session.context_max_tokens)
                ),
                w,
            ));
            lines.push(pair(
                "sandbox",
                session.sandbox.as_deref().unwrap_or("(not reported)"),
                w,
            ));
            for gap in &session.sandbox_gaps {
                lines.push(pair("missing", gap, w));
            }
            lines.push(pair("workspace", &session.cwd, w));
        }
        None => lines.push(pair("session", "not connected", w)),
    }
    lines.push(pair(
        "usage",
        &format!(
            "{} input · {} output tokens this session",
            short(app.usage.input_tokens),
            short(app.usage.output_tokens)
        ),
        w,
    ));
    let paused = if app.queue.paused() { " (paused)" } else { "" };
    lines.push(pair(
        "queue",
        &format!("{} waiting{paused}", app.queue.len()),
        w,
    ));
    if app.rules.is_empty() {
        lines.push(pair("rules", "none (a in an approval prompt adds one)", w));
    } else {
        for (i, rule) in app.rules.list().iter().enumerate() {
            lines.push(pair(if i == 0 { "rules" } else { "" }, &rule.scope(), w));
        }
    }
    match &app.mcp {
        McpView::Unknown | McpView::Asking => lines.push(pair("MCP", "asking the daemon…", w)),
        McpView::Unavailable(why) => lines.push(pair("MCP", why, w)),
        McpView::Known(servers) if servers.is_empty() => {
            lines.push(pair("MCP", "no servers configured", w))
        }
        McpView::Known(servers) => {
            for (i, server) in servers.iter().enumerate() {
                let name = server.id.strip_prefix("mcp:").unwrap_or(&server.id);
                let mut text = format!("{name}: {}", state_name(server.state));
                if let Some(tools) = server.tools {
                    text.push_str(&format!(" · {tools} tools"));
                }
                if let Some(error) = &server.error {
                    text.push_str(&format!(" · {error}"));
                }
                lines.push(pair(if i == 0 { "MCP" } else { "" }, &text, w));
            }
        }
    }
    lines
}

fn state_name(state: ComponentState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{state:?}"))
}

/// The overlay's rows at `width` (what scrolling counts).
pub fn rows(app: &App, overlay: &Overlay, width: u16) -> usize {
    wrap::wrap_lines(&lines(app, overlay), width.saturating_sub(2).max(1)).len()
}

pub fn draw(frame: &mut Frame<'_>, app: &App, overlay: &Overlay, area: Rect) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(Style::default().fg(Color::Cyan))
        .title(Span::styled(
            overlay.title(),
            Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let wrapped = wrap::wrap_lines(&lines(app, overlay), inner.width.max(1));
    let max_scroll = wrapped.len().saturating_sub(usize::from(inner.height));
    let scroll = overlay.scroll.min(max_scroll);
    let below = max_scroll - scroll;
    let shown: Vec<Line<'static>> = wrapped
        .into_iter()
        .skip(scroll)
        .take(usize::from(inner.height))
        .collect();
    frame.render_widget(Paragraph::new(shown), inner);
    if below > 0 {
        super::panel::more_below(frame, area, format!(" ↓ {below} more "), 1);
    }
}
