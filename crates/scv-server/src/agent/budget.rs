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

/// The share of a budget at which the client is told, in percent.
const WARN_PERCENT: f64 = 80.0;

/// Which session-wide warnings were already given (a turn's token budget
/// warns at most once per turn).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Warned {
    pub session: bool,
    pub daily: bool,
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

/// Tokens a turn used so far, input and output.
fn turn_tokens(usage: &Option<Usage>) -> u64 {
    usage.map_or(0, |u| u.input_tokens().saturating_add(u.output_tokens()))
}

impl Turn {
    /// Fails the turn, sending nothing, when the next request (about
    /// `input_tokens` in) could cross a budget.
    pub(super) async fn within_budget(
        &self,
        usage: &Option<Usage>,
        input_tokens: u64,
    ) -> Result<(), Stop> {
        let spending = &self.spending;
        let budgets = &spending.budgets;
        let max_output = self.settings.provider.max_output_tokens;
        if let Some(max) = budgets.max_turn_tokens {
            let spent = turn_tokens(usage);
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
        let turn = usage.as_ref().map_or(0.0, |u| price.cost(u));
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

    /// Counts a request's `step` usage (the turn's is `total` now) and
    /// warns once at 80 % of a budget.
    pub(super) async fn spent(&self, step: Usage, total: &Option<Usage>) -> Result<(), Stop> {
        let spending = &self.spending;
        let budgets = &spending.budgets;
        if let Some(price) = spending.price {
            DAILY_SPEND.add(price.cost(&step));
        }
        let mut warnings = Vec::new();
        if let Some(max) = budgets.max_turn_tokens {
            let spent = turn_tokens(total) as f64;
            warnings.push(("max_turn_tokens", max as f64, spent, &spending.warned_turn));
        }
        if let Some(price) = spending.price {
            if let Some(max) = budgets.max_session_cost_usd {
                let spent = spending.session_spent + total.as_ref().map_or(0.0, |u| price.cost(u));
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
