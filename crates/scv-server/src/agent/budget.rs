//! Budgets, checked before every provider request: what is spent plus the
//! request's worst case (the estimated prompt at the input price — or the
//! cache-write price when higher — and all of `max_output_tokens` at the
//! output price) must stay within each budget, or the turn fails with
//! `step_limit` and nothing is sent. `step_limit` because, like
//! `max_steps`, it is the agent's own bound on how far a turn may go, not
//! something the provider did (`provider_error` reads as "try again").
//! At 80 % of a budget, a connection with capability `usage` gets one
//! `budget.warning`.

use super::{Stop, Turn};
use crate::cost::{usd, Budgets, Price, DAILY_SPEND};
use crate::model::Usage;
use scv_protocol::{BudgetWarning, EventBody, FailureCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The share of a budget at which the client is told, in percent.
const WARN_PERCENT: f64 = 80.0;

/// Which session-wide warnings were already given (a turn's token budget
/// warns at most once per turn).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Warned {
    pub session: bool,
    pub daily: bool,
}

/// What a turn and its subagents spent so far: one for the lot, so a
/// child never opens a budget of its own.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    spent: Mutex<(f64, u64)>,
}

impl Ledger {
    fn add(&self, usd: f64, tokens: u64) {
        let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        spent.0 += usd;
        spent.1 = spent.1.saturating_add(tokens);
    }

    /// USD and tokens (input and output) spent.
    fn spent(&self) -> (f64, u64) {
        *self.spent.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A turn's price, budgets and what was spent before it.
pub(crate) struct Spending {
    pub model: String,
    /// `None`: the model has no price.
    pub price: Option<Price>,
    /// The session's budgets (its `max_session_cost_usd` may have been
    /// raised by `session.configure`).
    pub budgets: Budgets,
    /// USD the session spent before this turn.
    pub session_spent: f64,
    /// Send `budget.warning` (capability `usage`).
    pub report: bool,
    warned_session: AtomicBool,
    warned_daily: AtomicBool,
    warned_turn: AtomicBool,
    /// Shared with the turn's subagents.
    ledger: Arc<Ledger>,
}

impl Spending {
    pub(crate) fn new(
        model: String,
        price: Option<Price>,
        budgets: Budgets,
        session_spent: f64,
        warned: Warned,
        report: bool,
    ) -> Spending {
        Spending {
            model,
            price,
            budgets,
            session_spent,
            report,
            warned_session: AtomicBool::new(warned.session),
            warned_daily: AtomicBool::new(warned.daily),
            warned_turn: AtomicBool::new(false),
            ledger: Arc::default(),
        }
    }

    /// A subagent's: its own model's price, the same budgets and the same
    /// ledger (what the parent and its other children spend counts).
    pub(crate) fn child(&self, model: String, price: Option<Price>) -> Spending {
        Spending {
            model,
            price,
            budgets: self.budgets,
            session_spent: self.session_spent,
            report: self.report,
            warned_session: AtomicBool::new(self.warned_session.load(Ordering::Relaxed)),
            warned_daily: AtomicBool::new(self.warned_daily.load(Ordering::Relaxed)),
            warned_turn: AtomicBool::new(self.warned_turn.load(Ordering::Relaxed)),
            ledger: self.ledger.clone(),
        }
    }

    /// What `usage` cost; `None` without a price or without usage.
    pub(crate) fn cost(&self, usage: Option<&Usage>) -> Option<f64> {
        Some(self.price?.cost(usage?))
    }

    pub(crate) fn warned(&self) -> Warned {
        Warned {
            session: self.warned_session.load(Ordering::Relaxed),
            daily: self.warned_daily.load(Ordering::Relaxed),
        }
    }
}

fn over(message: String) -> Result<(), Stop> {
    Err(Stop::Failed(FailureCode::StepLimit, message))
}

/// Tokens of one request, input and output.
fn tokens(usage: &Usage) -> u64 {
    usage.input_tokens().saturating_add(usage.output_tokens())
}

impl Turn {
    /// Fails the turn, sending nothing, when the next request (about
    /// `input_tokens` in) could cross a budget.
    pub(super) async fn within_budget(&self, input_tokens: u64) -> Result<(), Stop> {
        let spending = &self.spending;
        let budgets = &spending.budgets;
        let max_output = self.settings.provider.max_output_tokens;
        // The turn's and its subagents' together.
        let (turn, turn_tokens) = spending.ledger.spent();
        if let Some(max) = budgets.max_turn_tokens {
            let spent = turn_tokens;
            let worst = input_tokens.saturating_add(max_output);
            if spent.saturating_add(worst) > max {
                return over(format!(
                    "budget max_turn_tokens ({max}) reached: this turn used {spent} tokens and the next request could use {worst} more (about {input_tokens} in, up to {max_output} out); it was not sent"
                ));
            }
        }
        if budgets.max_session_cost_usd.is_none() && budgets.max_daily_cost_usd.is_none() {
            return Ok(());
        }
        let Some(price) = spending.price else {
            let budget = if budgets.max_session_cost_usd.is_some() {
                "max_session_cost_usd"
            } else {
                "max_daily_cost_usd"
            };
            return over(format!(
                "budget {budget} is set but model `{}` has no price, so what it spends cannot be held to it; add [pricing.\"{}\"] to config.toml (the request was not sent)",
                spending.model, spending.model
            ));
        };
        let worst = price.worst_case(input_tokens, max_output);
        if let Some(max) = budgets.max_session_cost_usd {
            let spent = spending.session_spent + turn;
            if spent + worst > max {
                return over(format!(
                    "budget max_session_cost_usd ({}) reached: this session spent {} and the next request could cost up to {}; it was not sent (raise it in config.toml, or for this session with session.configure)",
                    usd(max),
                    usd(spent),
                    usd(worst)
                ));
            }
        }
        if let Some(max) = budgets.max_daily_cost_usd {
            let spent = DAILY_SPEND.spent();
            if spent + worst > max {
                return over(format!(
                    "budget max_daily_cost_usd ({}) reached: this server spent {} today (UTC) and the next request could cost up to {}; it was not sent",
                    usd(max),
                    usd(spent),
                    usd(worst)
                ));
            }
        }
        Ok(())
    }

    /// Counts a request's `step` usage and warns once at 80 % of a
    /// budget.
    pub(super) async fn spent(&self, step: Usage) -> Result<(), Stop> {
        let spending = &self.spending;
        let budgets = &spending.budgets;
        let cost = spending.price.map_or(0.0, |price| price.cost(&step));
        if spending.price.is_some() {
            DAILY_SPEND.add(cost);
        }
        spending.ledger.add(cost, tokens(&step));
        let (turn, turn_tokens) = spending.ledger.spent();
        let mut warnings = Vec::new();
        if let Some(max) = budgets.max_turn_tokens {
            let spent = turn_tokens as f64;
            warnings.push(("max_turn_tokens", max as f64, spent, &spending.warned_turn));
        }
        if spending.price.is_some() {
            if let Some(max) = budgets.max_session_cost_usd {
                let spent = spending.session_spent + turn;
                warnings.push(("max_session_cost_usd", max, spent, &spending.warned_session));
            }
            if let Some(max) = budgets.max_daily_cost_usd {
                warnings.push((
                    "max_daily_cost_usd",
                    max,
                    DAILY_SPEND.spent(),
                    &spending.warned_daily,
                ));
            }
        }
        for (budget, limit, spent, warned) in warnings {
            if spent * 100.0 < limit * WARN_PERCENT || warned.swap(true, Ordering::Relaxed) {
                continue;
            }
            if !spending.report {
                continue;
            }
            let percent = (spent * 100.0 / limit).floor();
            let message = if budget == "max_turn_tokens" {
                format!(
                    "{percent}% of budget {budget} ({limit} tokens) used: {spent} tokens this turn"
                )
            } else {
                format!(
                    "{percent}% of budget {budget} ({}) spent: {}",
                    usd(limit),
                    usd(spent)
                )
            };
            self.emit(EventBody::BudgetWarning(BudgetWarning {
                budget: budget.into(),
                limit,
                spent,
                message,
            }))
            .await?;
        }
        Ok(())
    }
}
