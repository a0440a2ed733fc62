//! `/status`: the session (id, provider, model, context, sandbox,
//! instruction files, commands), usage, budget, queue, rules, and the
//! daemon's hooks file and MCP servers (asked for when the overlay opens).

use super::{pair, Overlay, OverlayData};
use crate::tui::state::{short, usd, McpView};
use ratatui::text::Line;
use scv_protocol::ComponentState;

pub(super) struct Status;

impl Overlay for Status {
    fn title(&self) -> &'static str {
        " Status — Esc closes "
    }

    fn lines(&self, data: &OverlayData<'_>, _selected: usize) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        match data.session {
            Some(session) => session_lines(session, data.context_used, &mut lines),
            None => lines.push(pair("session", "not connected", W)),
        }
        usage_lines(data, &mut lines);
        let paused = if data.queue_paused { " (paused)" } else { "" };
        lines.push(pair(
            "queue",
            &format!("{} waiting{paused}", data.queue_len),
            W,
        ));
        if data.rules.is_empty() {
            lines.push(pair(
                "rules",
                "none (2 in an approval adds one; /permissions: the kept ones)",
                W,
            ));
        } else {
            for (i, rule) in data.rules.iter().enumerate() {
                lines.push(pair(if i == 0 { "rules" } else { "" }, &rule.scope(), W));
            }
        }
        mcp_lines(data.mcp, &mut lines);
        lines
    }
}

/// The width of the labels.
const W: usize = 10;

/// The session's lines: id, provider, model, context, sandbox, workspace,
/// instruction files, commands.
fn session_lines(
    session: &crate::tui::state::SessionView,
    context_used: u64,
    lines: &mut Vec<Line<'static>>,
) {
    let w = W;
    lines.push(pair("session", &session.session_id, w));
    lines.push(pair(
        "provider",
        session.provider.as_deref().unwrap_or("(not reported)"),
        w,
    ));
    lines.push(pair("model", &session.model, w));
    let percent = (context_used * 100)
        .checked_div(session.context_max_tokens)
        .unwrap_or(0);
    lines.push(pair(
        "context",
        &format!(
            "{} of {} tokens ({percent}%)",
            short(context_used),
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
    if let Some(network) = session.sandbox_network {
        let network = if network {
            "on (sandboxed commands may connect out)"
        } else {
            "off (sandbox_network = false: sandboxed commands cannot open IP sockets)"
        };
        lines.push(pair("network", network, w));
    }
    lines.push(pair("workspace", &session.cwd, w));
    if !session.instructions.is_empty() {
        lines.push(pair("instructions", &session.instructions.join(", "), w));
    }
    if !session.commands.is_empty() {
        let names: Vec<String> = session
            .commands
            .iter()
            .map(|c| format!("/{}", c.name))
            .collect();
        let names = scv_client::text::visible(&names.join(" ")).into_owned();
        lines.push(pair("commands", &names, w));
    }
}

/// Usage, tokens by kind, cost and budget.
fn usage_lines(data: &OverlayData<'_>, lines: &mut Vec<Line<'static>>) {
    let w = W;
    lines.push(pair(
        "usage",
        &format!(
            "{} input · {} output tokens this session",
            short(data.usage.input_tokens),
            short(data.usage.output_tokens)
        ),
        w,
    ));
    let costs = data.costs;
    if costs.any() {
        let s = costs.session;
        lines.push(pair(
            "by kind",
            &format!(
                "{} in · {} cached · {} written · {} out, {} reasoning",
                short(s.input),
                short(s.cache_read),
                short(s.cache_write),
                short(s.output),
                short(s.reasoning)
            ),
            w,
        ));
        let turns = costs.turns.len();
        let cost = match costs.session_usd {
            Some(total) if costs.unpriced => {
                format!(
                    "{} over {turns} turns; the current model has no price",
                    usd(total)
                )
            }
            Some(total) => format!("{} over {turns} turns (/cost by turn)", usd(total)),
            None => "no price for this model (tokens only)".to_string(),
        };
        lines.push(pair("cost", &cost, w));
    }
    if let Some(budget) = budget_line(costs) {
        lines.push(pair("budget", &budget, w));
    }
}

/// The hooks file and the MCP servers, as the daemon said.
fn mcp_lines(mcp: &McpView, lines: &mut Vec<Line<'static>>) {
    let w = W;
    match mcp {
        McpView::Unknown | McpView::Asking => lines.push(pair("MCP", "asking the daemon…", w)),
        McpView::Unavailable(why) => lines.push(pair("MCP", why, w)),
        McpView::Known(components) => {
            let (hooks, servers): (Vec<_>, Vec<_>) = components
                .iter()
                .partition(|c| c.kind() == scv_protocol::ComponentKind::Hooks);
            for hook in hooks {
                let mut text = state_name(hook.state);
                if let Some(error) = &hook.error {
                    text.push_str(&format!(" · {error}"));
                }
                lines.push(pair("hooks", &format!("your hooks file: {text}"), w));
            }
            if servers.is_empty() {
                lines.push(pair("MCP", "no servers configured", w));
            }
            for (i, server) in servers.iter().enumerate() {
                let name = server.name();
                let mut text = format!("{name}: {}", state_name(server.state));
                if let Some(tools) = server.tools {
                    text.push_str(&format!(" · {tools} tools"));
                }
                if let Some(error) = &server.error {
                    text.push_str(&format!(" · {error}"));
                }
                lines.push(pair(if i == 0 { "MCP" } else { "" }, &text, w));
                // Each server's tools, by the names it gives them.
                if let Some(names) = server.tool_names.as_ref().filter(|n| !n.is_empty()) {
                    let names = scv_client::text::visible(&names.join(", ")).into_owned();
                    lines.push(pair("", &format!("  {names}"), w));
                }
            }
        }
    }
}

fn state_name(state: ComponentState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{state:?}"))
}

/// `/status`'s budget line: the one `/budget` set for this session, and
/// the latest 80 % warning; `None` when neither is known.
fn budget_line(costs: &crate::tui::state::Costs) -> Option<String> {
    let set = costs
        .budget
        .map(|b| format!("{} for this session (/budget changes it)", usd(b)));
    match (set, &costs.warning) {
        (Some(set), Some(warning)) => Some(format!("{set}; {warning}")),
        (Some(set), None) => Some(set),
        (None, warning) => warning.clone(),
    }
}
