//! What the session has used and spent: the status line's counters,
//! `/cost`, `/status`, `/budget` and the exit summary read it. A component
//! that owns its figures; the App hands it the session client's usage,
//! cost, compaction and budget updates and shows the lines it returns.

use super::state::{short, usd, Costs, TurnCostRow};
use scv_protocol::{BudgetWarning, SessionSpent, TurnCost, Usage};

/// The session's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meter {
    /// Tokens the session used (the server's sum once it says one).
    pub usage: Usage,
    /// What the turns cost, by turn (capability `usage`).
    pub costs: Costs,
    /// Latest estimate of the prompt size in tokens.
    pub context_used: u64,
}

impl Meter {
    /// A step's usage while the turn runs: the prompt's size now.
    pub fn step(&mut self, step: &Usage) {
        self.context_used = step.input_tokens;
    }

    /// A completed turn's usage over `steps` steps.
    pub fn count_usage(&mut self, usage: Usage, steps: u32) {
        self.usage.input_tokens += usage.input_tokens;
        self.usage.output_tokens += usage.output_tokens;
        self.context_used = usage.input_tokens / u64::from(steps.max(1));
    }

    /// A turn that ended without `turn.completed` spent what its
    /// `usage.updated` said; the session's next sum carries it too.
    pub fn count_unfinished(&mut self, turn: Option<&Usage>) {
        if let Some(turn) = turn {
            self.usage.input_tokens += turn.input_tokens;
            self.usage.output_tokens += turn.output_tokens;
        }
    }

    /// A completed turn's cost (capability `usage`).
    pub fn count_cost(&mut self, cost: TurnCost, steps: u32) {
        let number = self.costs.turns.len() + 1;
        self.costs.turns.push(TurnCostRow {
            number,
            steps,
            detail: cost.usage_detail,
            usd: cost.cost_usd,
        });
        self.costs.session = cost.session_usage_detail;
        self.costs.session_usd = cost.session_cost_usd;
        self.costs.unpriced = cost.cost_usd.is_none();
        // The server's sum: cancelled and failed turns (and a resumed
        // session's earlier ones) included, as `scv usage` counts them.
        self.usage = self.costs.session_usage();
    }

    /// A resumed session's spending so far: the counters and `/cost` go
    /// on from it.
    pub fn resumed(&mut self, spent: SessionSpent) {
        self.costs.session = spent.session_usage_detail;
        self.costs.session_usd = spent.session_cost_usd;
        self.costs.earlier = true;
        self.usage = self.costs.session_usage();
    }

    /// `context.compacted`: the note to show.
    pub fn compacted(&mut self, before: u64, after: u64, removed: u64) -> String {
        self.context_used = after;
        format!(
            "context compacted: {} → {} tokens ({removed} messages summarized)",
            short(before),
            short(after)
        )
    }

    /// `budget.warning`: the note to show (the status line says it too).
    pub fn budget_warning(&mut self, warning: BudgetWarning) -> String {
        let note = format!("budget: {}", warning.message);
        self.costs.warning = Some(warning.message);
        self.costs.warning_budget = Some(warning.budget);
        note
    }

    /// `/budget AMOUNT` holds: the note to show.
    pub fn budget_set(&mut self, amount: f64) -> String {
        self.costs.budget = Some(amount);
        // A warning about the old budget no longer holds.
        self.costs.warning = None;
        self.costs.warning_budget = None;
        format!(
            "budget: {} for this session (spent {})",
            usd(amount),
            usd(self.costs.session_usd.unwrap_or(0.0))
        )
    }

    /// `/budget` alone: what is known of the budget.
    pub fn budget_line(&self) -> String {
        let spent = self
            .costs
            .session_usd
            .map_or_else(|| "nothing priced".into(), usd);
        match self.costs.budget {
            Some(budget) => format!(
                "budget: {} for this session, spent {spent} (/budget AMOUNT changes it)",
                usd(budget)
            ),
            None => format!(
                "budget: max_session_cost_usd in config.toml (none unless set there); spent {spent}; /budget AMOUNT sets one for this session"
            ),
        }
    }

    /// The exit summary's usage line, when anything was used.
    pub fn used_line(&self) -> Option<String> {
        if self.usage.input_tokens + self.usage.output_tokens == 0 {
            return None;
        }
        let mut out = format!(
            "used {} input and {} output tokens",
            self.usage.input_tokens, self.usage.output_tokens
        );
        if let Some(cost) = self.costs.compact() {
            out.push_str(&format!(" · {cost}"));
        }
        Some(out)
    }
}

/// The exit summary's first line: the session and how to come back.
pub fn resume_line(session_id: &str, cwd: &str) -> String {
    format!(
        "scv: session {session_id} · resume it with `scv resume {session_id}` (or `scv --continue` in {cwd})"
    )
}
