//! `/cost`: the session's turns, one row each: tokens by kind and cost.

use super::{heading, pair, Overlay, OverlayData};
use crate::tui::state::{short, usd};
use ratatui::text::Line;

pub(super) struct Cost;

impl Overlay for Cost {
    fn title(&self) -> &'static str {
        " Cost — Esc closes "
    }

    fn lines(&self, data: &OverlayData<'_>, _selected: usize) -> Vec<Line<'static>> {
        let costs = data.costs;
        let mut lines = Vec::new();
        if !costs.any() {
            lines.push(pair("cost", "no turn has completed in this session yet", 6));
            return lines;
        }
        lines.push(heading("Turns"));
        if costs.earlier {
            lines.push(pair(
                "earlier",
                "turns before this resume count in the session's figures below",
                6,
            ));
        }
        lines.push(pair(
            "turn",
            "   input  cached  written  output  (reasoning)  cost",
            6,
        ));
        for row in &costs.turns {
            let d = row.detail;
            let cost = row.usd.map_or_else(|| "no price".to_string(), usd);
            lines.push(pair(
                &format!("#{}", row.number),
                &format!(
                    "{:>8}  {:>6}  {:>7}  {:>6}  {:>11}  {cost}",
                    short(d.input),
                    short(d.cache_read),
                    short(d.cache_write),
                    short(d.output),
                    format!("({})", short(d.reasoning)),
                ),
                6,
            ));
        }
        lines.push(Line::default());
        lines.push(heading("Session"));
        let s = costs.session;
        lines.push(pair(
            "tokens",
            &format!(
                "{} in · {} cached · {} written · {} out, {} reasoning",
                short(s.input),
                short(s.cache_read),
                short(s.cache_write),
                short(s.output),
                short(s.reasoning)
            ),
            6,
        ));
        let total = match (
            costs.session_usd,
            costs.turns.iter().any(|t| t.usd.is_none()),
        ) {
            (None, _) => "no price (tokens only)".to_string(),
            (Some(total), false) => usd(total),
            (Some(total), true) => {
                format!("{} for the priced turns; others have no price", usd(total))
            }
        };
        lines.push(pair("cost", &total, 6));
        if let Some(warning) = &costs.warning {
            lines.push(pair("budget", warning, 6));
        }
        lines
    }
}
