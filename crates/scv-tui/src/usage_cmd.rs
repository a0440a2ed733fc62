//! `scv usage [--since 7d] [--by day|session|model|workspace]`: what the
//! stored sessions' turns spent, read from the session store directly
//! (`$SCV_HOME/sessions`; the daemon need not run), as a table. Each
//! turn's tokens by kind and cost are journaled when it ends, whatever
//! its outcome; a turn whose model had no price adds tokens and says
//! "no price", never $0.

use anyhow::{anyhow, Result};
use scv_client::text::visible;
use scv_store::{SessionStore, SpentTurn};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// What the rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Day,
    Session,
    Model,
    Workspace,
}

/// `7d`, `24h`, `30m`, `90s` or a bare number of days → seconds.
pub fn parse_since(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&text[..i], c),
        _ => (text, 'd'),
    };
    let count: u64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 7d, 24h or 30m"))?;
    let unit = match unit {
        'd' => 86_400,
        'h' => 3_600,
        'm' => 60,
        's' => 1,
        'w' => 7 * 86_400,
        _ => return Err(format!("`{text}`: the unit is d, h, m, s or w")),
    };
    count
        .checked_mul(unit)
        .ok_or_else(|| format!("`{text}` is too long"))
}

/// One row's sums.
#[derive(Debug, Default, Clone, PartialEq)]
struct Row {
    turns: u64,
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
    reasoning: u64,
    /// USD over the priced turns.
    usd: f64,
    priced: u64,
}

impl Row {
    fn add(&mut self, turn: &SpentTurn) {
        let d = turn.spent.usage_detail;
        self.turns += 1;
        self.input = self.input.saturating_add(d.input);
        self.cache_read = self.cache_read.saturating_add(d.cache_read);
        self.cache_write = self.cache_write.saturating_add(d.cache_write);
        self.output = self.output.saturating_add(d.output);
        self.reasoning = self.reasoning.saturating_add(d.reasoning);
        if let Some(usd) = turn.spent.cost_usd {
            self.usd += usd;
            self.priced += 1;
        }
    }

    fn cost(&self) -> String {
        match (self.priced, self.turns - self.priced) {
            (0, _) => "no price".into(),
            (_, 0) => format!("${:.4}", self.usd),
            (_, unpriced) => format!("${:.4} + {unpriced} turns no price", self.usd),
        }
    }
}

/// `scv usage`.
pub fn usage(home: &Path, since: Option<u64>, by: By, now: u64) -> Result<ExitCode> {
    let store = SessionStore::open(home).map_err(|err| anyhow!("{err}"))?;
    let (sessions, _) = store.list();
    let from = since.map_or(0, |s| now.saturating_sub(s));
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    // By session: each one's directory and title, after its figures.
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let mut total = Row::default();
    for session in &sessions {
        if session.updated < from {
            continue;
        }
        let Ok(turns) = store.spending(&session.session_id) else {
            continue;
        };
        for turn in turns.iter().filter(|t| t.at >= from) {
            let key = match by {
                By::Day => scv_client::time::utc(turn.at)
                    .get(..10)
                    .unwrap_or_default()
                    .to_string(),
                By::Session => {
                    let id = crate::sessions_cmd::short_id(&session.session_id).to_string();
                    labels.insert(id.clone(), format!("{} · {}", session.cwd, session.title));
                    id
                }
                By::Model => turn.spent.model.clone(),
                By::Workspace => session.cwd.clone(),
            };
            rows.entry(key).or_default().add(turn);
            total.add(turn);
        }
    }
    print!("{}", visible(&table(&rows, &total, by, &labels)));
    Ok(ExitCode::SUCCESS)
}

fn table(
    rows: &BTreeMap<String, Row>,
    total: &Row,
    by: By,
    labels: &BTreeMap<String, String>,
) -> String {
    if rows.is_empty() {
        return "no usage recorded in that period\n".into();
    }
    let heading = match by {
        By::Day => "DAY",
        By::Session => "SESSION",
        By::Model => "MODEL",
        By::Workspace => "WORKSPACE",
    };
    let width = rows
        .keys()
        .map(|k| k.chars().count())
        .chain([heading.len(), 5])
        .max()
        .unwrap_or(5);
    let mut out = String::new();
    // The cost column is padded only when a label follows it.
    let pad = match labels.is_empty() {
        true => 0,
        false => (rows.values().chain([total]))
            .map(|r| r.cost().len())
            .max()
            .unwrap_or(4),
    };
    let _ = write!(
        out,
        "{heading:<width$}  {:>5}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}  {:<pad$}",
        "TURNS", "INPUT", "CACHE_READ", "CACHE_WRITE", "OUTPUT", "REASONING", "COST"
    );
    let _ = writeln!(
        out,
        "{}",
        if labels.is_empty() {
            ""
        } else {
            "  DIRECTORY · TITLE"
        }
    );
    let line = |out: &mut String, key: &str, row: &Row| {
        let _ = write!(
            out,
            "{key:<width$}  {:>5}  {:>11}  {:>11}  {:>11}  {:>11}  {:>11}  {:<pad$}",
            row.turns,
            row.input,
            row.cache_read,
            row.cache_write,
            row.output,
            row.reasoning,
            row.cost()
        );
        let label = labels
            .get(key)
            .map(|l| format!("  {l}"))
            .unwrap_or_default();
        let _ = writeln!(out, "{}", label);
    };
    for (key, row) in rows {
        line(&mut out, key, row);
    }
    line(&mut out, "TOTAL", total);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_since("7d"), Ok(7 * 86_400));
        assert_eq!(parse_since("24h"), Ok(86_400));
        assert_eq!(parse_since("30"), Ok(30 * 86_400));
        assert_eq!(parse_since("2w"), Ok(14 * 86_400));
        assert!(parse_since("x").is_err());
        assert!(parse_since("5y").is_err());
    }
}
