//! Budgets, as reservations: before every provider request the request
//! holds its worst case — the estimated prompt at the input price (or the
//! cache-write price when higher) and its output cap at the output price
//! — on the books it could cross, and when it ends it settles to what the
//! provider reported (or, without a report, releases what it held). The
//! books: one [`Ledger`] per turn family (a turn, its subagents and
//! theirs: `max_turn_tokens`, and with what the session spent before the
//! turn, `max_session_cost_usd`) and the process's [`DAILY_SPEND`]
//! (`max_daily_cost_usd`, over every session). What is spent plus what is
//! held never passes a budget, so requests running at once (subagents,
//! sessions) cannot overrun one together.
//!
//! The output cap is what makes the last request fit: a request is sent
//! with `max_output_tokens`, lowered to what every budget has left for it
//! (and that cap goes in the request, on every wire); only when even
//! [`MIN_OUTPUT_TOKENS`] do not fit is it refused — "budget reached: spent
//! $X of $Y", nothing sent, and the turn fails with `step_limit` (the
//! document's code for the agent's own bound on how far a turn may go;
//! `provider_error` reads as "try again"), or `budget_exceeded` for a
//! connection with capability `budgets`.
//! At 80 % of a budget, a connection with capability `usage` gets one
//! `budget.warning`.

use super::{Stop, Turn};
use crate::cost::{usd, Budgets, DailySpend, Price, DAILY_SPEND};
use crate::model::Usage;
use scv_protocol::{BudgetWarning, EventBody};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The share of a budget at which the client is told, in percent.
pub(crate) const WARN_PERCENT: f64 = 80.0;

/// The least output a request is sent with when a budget lowers its cap
/// (or `max_output_tokens`, when that is less): a budget that cannot pay
/// for this much refuses the request instead.
pub(crate) const MIN_OUTPUT_TOKENS: u64 = 1024;

/// Which session-wide warnings were already given (a turn's token budget
/// warns at most once per turn).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Warned {
    pub session: bool,
    pub daily: bool,
}

/// What a turn and its subagents spent and hold: one for the lot, so a
/// child never opens a budget of its own. Lock order: this, then the
/// day's books.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    books: Mutex<Books>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Books {
    /// USD and tokens (input and output) the family's requests reported.
    spent_usd: f64,
    spent_tokens: u64,
    /// The worst case of its requests in flight.
    held_usd: f64,
    held_tokens: u64,
}

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, Books> {
        crate::sync::lock(&self.books)
    }

    /// USD and tokens (input and output) spent.
    fn spent(&self) -> (f64, u64) {
        let books = self.lock();
        (books.spent_usd, books.spent_tokens)
    }
}

/// Tokens of one request, input and output.
fn tokens(usage: &Usage) -> u64 {
    usage.input_tokens().saturating_add(usage.output_tokens())
}

/// What one request holds on the books until it ends. Settled with what
/// it reported ([`Reservation::settle`]); dropped unsettled — the stream
/// failed, the turn was cancelled, the future was dropped — it releases
/// what it held. Either way exactly once.
#[must_use = "a reservation releases what it holds when dropped"]
pub(crate) struct Reservation {
    ledger: Arc<Ledger>,
    price: Option<Price>,
    /// The day's books, when it holds there too (the model has a price).
    daily: Option<&'static DailySpend>,
    tokens: u64,
    usd: f64,
    /// The output cap to send: `Some` whenever a budget is in force (on
    /// every wire, so the worst case holds); `None`: the wire's default.
    pub max_output_tokens: Option<u64>,
    open: bool,
}

impl Reservation {
    /// The request ended with `usage` (`None`: none was reported): what
    /// it held becomes what it spent.
    pub(crate) fn settle(mut self, usage: Option<&Usage>) {
        self.close(usage);
    }

    fn close(&mut self, usage: Option<&Usage>) {
        if !std::mem::replace(&mut self.open, false) {
            return;
        }
        let cost = match (self.price, usage) {
            (Some(price), Some(usage)) => price.cost(usage),
            _ => 0.0,
        };
        let mut books = self.ledger.lock();
        books.held_tokens = books.held_tokens.saturating_sub(self.tokens);
        books.held_usd = crate::cost::release(books.held_usd, self.usd);
        if let Some(usage) = usage {
            books.spent_tokens = books.spent_tokens.saturating_add(tokens(usage));
            books.spent_usd += cost;
        }
        if let Some(daily) = self.daily {
            daily.lock().settle(self.usd, cost);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.close(None);
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
    warned_session: AtomicBool,
    warned_daily: AtomicBool,
    warned_turn: AtomicBool,
    /// Shared with the turn's subagents.
    ledger: Arc<Ledger>,
    /// The process's [`DAILY_SPEND`] (a unit test's own books).
    daily: &'static DailySpend,
}

impl Spending {
    pub(crate) fn new(
        model: String,
        price: Option<Price>,
        budgets: Budgets,
        session_spent: f64,
        warned: Warned,
    ) -> Spending {
        Spending {
            model,
            price,
            budgets,
            session_spent,
            warned_session: AtomicBool::new(warned.session),
            warned_daily: AtomicBool::new(warned.daily),
            warned_turn: AtomicBool::new(false),
            ledger: Arc::default(),
            daily: &DAILY_SPEND,
        }
    }

    /// A subagent's: its own model's price, the same budgets and the same
    /// ledger (what the parent and its other children spend and hold
    /// counts).
    pub(crate) fn child(&self, model: String, price: Option<Price>) -> Spending {
        Spending {
            model,
            price,
            budgets: self.budgets,
            session_spent: self.session_spent,
            warned_session: AtomicBool::new(self.warned_session.load(Ordering::Relaxed)),
            warned_daily: AtomicBool::new(self.warned_daily.load(Ordering::Relaxed)),
            warned_turn: AtomicBool::new(self.warned_turn.load(Ordering::Relaxed)),
            ledger: self.ledger.clone(),
            daily: self.daily,
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

    /// Reserves a request of about `input_tokens` in and at most
    /// `max_output` out against every budget, its output cap lowered to
    /// what they have left; `Err` (the refusal, in words) when even
    /// [`MIN_OUTPUT_TOKENS`] (or `max_output`, when less) do not fit.
    pub(crate) fn reserve(
        &self,
        input_tokens: u64,
        max_output: u64,
    ) -> Result<Reservation, String> {
        let budgets = &self.budgets;
        let cost_budget =
            budgets.max_session_cost_usd.is_some() || budgets.max_daily_cost_usd.is_some();
        if cost_budget && self.price.is_none() {
            let budget = if budgets.max_session_cost_usd.is_some() {
                "max_session_cost_usd"
            } else {
                "max_daily_cost_usd"
            };
            return Err(format!(
                "budget {budget} is set but model `{}` has no price, so what it spends cannot be held to it; add [pricing.\"{}\"] to config.toml (the request was not sent)",
                self.model, self.model
            ));
        }
        let least = MIN_OUTPUT_TOKENS.min(max_output);
        let mut cap = max_output;
        // Checked and held under the locks, so requests running at once
        // see each other's holds.
        let mut books = self.ledger.lock();
        let mut day = self.price.map(|_| self.daily.lock());
        if let Some(max) = budgets.max_turn_tokens {
            let (spent, held) = (books.spent_tokens, books.held_tokens);
            let left = max.saturating_sub(spent.saturating_add(held));
            let fits = left.saturating_sub(input_tokens);
            if left < input_tokens.saturating_add(least) {
                let worst = input_tokens.saturating_add(least);
                let held = if held > 0 {
                    format!(", {held} more held by requests in flight")
                } else {
                    String::new()
                };
                return Err(format!(
                    "budget reached: used {spent} of {max} tokens this turn (max_turn_tokens{held}; {left} left); the next request needs {worst} (about {input_tokens} in, at least {least} out) and was not sent; raise max_turn_tokens in config.toml"
                ));
            }
            cap = cap.min(fits);
        }
        if let Some(price) = self.price {
            let least_cost = price.worst_case(input_tokens, least);
            if let Some(max) = budgets.max_session_cost_usd {
                let spent = self.session_spent + books.spent_usd;
                let held = books.held_usd;
                let fits = price.affordable_output(max - spent - held, input_tokens);
                if fits < least {
                    return Err(format!(
                        "budget reached: spent {} of {} (max_session_cost_usd, this session{}); the next request needs at least {} ({least} output tokens) and was not sent; raise it for this session with /budget AMOUNT, or max_session_cost_usd in config.toml",
                        usd(spent),
                        usd(max),
                        held_by_others(held),
                        usd(least_cost),
                    ));
                }
                cap = cap.min(fits);
            }
            if let (Some(max), Some(day)) = (budgets.max_daily_cost_usd, &day) {
                let (spent, held) = (day.spent(), day.held());
                let fits = price.affordable_output(max - spent - held, input_tokens);
                if fits < least {
                    return Err(format!(
                        "budget reached: spent {} of {} today (max_daily_cost_usd, this server, UTC day{}); the next request needs at least {} ({least} output tokens) and was not sent; raise max_daily_cost_usd in config.toml",
                        usd(spent),
                        usd(max),
                        held_by_others(held),
                        usd(least_cost),
                    ));
                }
                cap = cap.min(fits);
            }
        }
        let usd = self
            .price
            .map_or(0.0, |price| price.worst_case(input_tokens, cap));
        let tokens = input_tokens.saturating_add(cap);
        books.held_tokens = books.held_tokens.saturating_add(tokens);
        books.held_usd += usd;
        if let Some(day) = &mut day {
            day.hold(usd);
        }
        let budgeted = cost_budget || budgets.max_turn_tokens.is_some();
        Ok(Reservation {
            ledger: self.ledger.clone(),
            price: self.price,
            daily: self.price.map(|_| self.daily),
            tokens,
            usd,
            max_output_tokens: budgeted.then_some(cap),
            open: true,
        })
    }
}

/// ", $0.0800 more held by requests in flight" (nothing when none is).
fn held_by_others(held: f64) -> String {
    if held > 0.0 {
        format!(", {} more held by requests in flight", usd(held))
    } else {
        String::new()
    }
}

impl Turn {
    /// Reserves the next request (about `input_tokens` in) against every
    /// budget; fails the turn, sending nothing, when it cannot fit.
    pub(super) fn reserve(&self, input_tokens: u64) -> Result<Reservation, Stop> {
        // No more than the context leaves after the prompt (the model
        // cannot write more, and a local server refuses a cap past its
        // context), nor less than the least on that account.
        let room = self
            .settings
            .context_max_tokens
            .saturating_sub(input_tokens)
            .max(MIN_OUTPUT_TOKENS);
        let max_output = self.settings.provider.max_output_tokens.min(room);
        self.spending
            .reserve(input_tokens, max_output)
            .map_err(Stop::Budget)
    }

    /// Settles a request's reservation to what it reported (`step`) and,
    /// when it reported usage, warns once at 80 % of a budget.
    pub(super) async fn spent(&self, held: Reservation, step: Option<Usage>) -> Result<(), Stop> {
        held.settle(step.as_ref());
        if step.is_none() {
            return Ok(());
        }
        let spending = &self.spending;
        let budgets = &spending.budgets;
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
                    spending.daily.spent(),
                    &spending.warned_daily,
                ));
            }
        }
        for (budget, limit, spent, warned) in warnings {
            if spent * 100.0 < limit * WARN_PERCENT || warned.swap(true, Ordering::Relaxed) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// $10 a million output tokens, free input: a request's worst case is
    /// its output cap.
    const TEN: Price = Price {
        input: 0.0,
        cached_input: 0.0,
        cache_write: 0.0,
        output: 10.0,
    };

    fn spending(budgets: Budgets, price: Option<Price>) -> Spending {
        let mut spending = Spending::new("m".into(), price, budgets, 0.0, Warned::default());
        // Its own day: unit tests run at once, the process's is shared.
        spending.daily = Box::leak(Box::new(DailySpend::new()));
        spending
    }

    fn output(tokens: u64) -> Usage {
        Usage {
            output: tokens,
            ..Usage::default()
        }
    }

    #[test]
    fn requests_in_flight_hold_the_turn_budget_until_they_end() {
        let turn = Budgets {
            max_turn_tokens: Some(10_000),
            ..Budgets::default()
        };
        let parent = spending(turn, None);
        let child = parent.child("m".into(), None);
        let first = parent.reserve(1_000, 4_000).unwrap();
        let second = child.reserve(1_000, 4_000).unwrap();
        assert_eq!(first.max_output_tokens, Some(4_000));
        assert_eq!(second.max_output_tokens, Some(4_000));
        // 10,000 held: a third, parent's or child's, does not fit.
        let refused = child.reserve(1_000, 4_000).err().unwrap();
        assert!(
            refused.starts_with("budget reached: used 0 of 10000 tokens this turn (max_turn_tokens, 10000 more held by requests in flight; 0 left); the next request needs 2024 (about 1000 in, at least 1024 out) and was not sent"),
            "{refused}"
        );
        // A cancelled request releases what it held.
        drop(second);
        let third = child.reserve(1_000, 4_000).unwrap();
        assert_eq!(third.max_output_tokens, Some(4_000));
        // One that ends settles to what it reported: 1,200 of 5,000.
        first.settle(Some(&Usage {
            input: 1_000,
            output: 200,
            ..Usage::default()
        }));
        assert_eq!(parent.ledger.spent().1, 1_200);
        // 1,200 spent + 5,000 held: 3,800 left, 2,800 out after 1,000 in.
        let lowered = parent.reserve(1_000, 4_000).unwrap();
        assert_eq!(lowered.max_output_tokens, Some(2_800));
        drop((third, lowered));
        let books = *parent.ledger.lock();
        assert_eq!((books.held_tokens, books.spent_tokens), (0, 1_200));
    }

    #[test]
    fn the_last_request_goes_with_a_lower_cap_and_stops_at_the_budget() {
        // The working day's case: $0.12, requests of $0.04, a cap worth
        // $0.064. The third goes with 4,000 tokens, not refused at $0.08.
        let session = Budgets {
            max_session_cost_usd: Some(0.12),
            ..Budgets::default()
        };
        let spending = spending(session, Some(TEN));
        for cap in [6_400, 6_400, 4_000] {
            let held = spending.reserve(0, 6_400).unwrap();
            assert_eq!(held.max_output_tokens, Some(cap));
            held.settle(Some(&output(4_000)));
        }
        let refused = spending.reserve(0, 6_400).err().unwrap();
        assert!(
            refused.starts_with("budget reached: spent $0.1200 of $0.1200 (max_session_cost_usd, this session); the next request needs at least $0.0102 (1024 output tokens) and was not sent; raise it for this session with /budget AMOUNT"),
            "{refused}"
        );
    }

    #[test]
    fn sessions_at_once_share_the_days_books() {
        let daily = Budgets {
            max_daily_cost_usd: Some(0.1),
            ..Budgets::default()
        };
        let one = spending(daily, Some(TEN));
        let mut other = spending(daily, Some(TEN));
        other.daily = one.daily;
        let first = one.reserve(0, 6_400).unwrap();
        // $0.064 held: $0.036 left buys 3,600 tokens.
        let second = other.reserve(0, 6_400).unwrap();
        assert_eq!(second.max_output_tokens, Some(3_600));
        let refused = other.reserve(0, 6_400).err().unwrap();
        assert!(
            refused.contains(
                "spent $0.00 of $0.1000 today (max_daily_cost_usd, this server, UTC day, $0.1000 more held by requests in flight);"
            ),
            "{refused}"
        );
        first.settle(Some(&output(1_000)));
        second.settle(None);
        assert!((one.daily.spent() - 0.01).abs() < 1e-12);
        assert_eq!(one.daily.lock().held(), 0.0);
        let third = other.reserve(0, 10_000).unwrap();
        assert_eq!(third.max_output_tokens, Some(9_000));
    }

    #[test]
    fn without_a_budget_nothing_is_capped_and_a_cost_budget_needs_a_price() {
        let open = spending(Budgets::default(), Some(TEN));
        let held = open.reserve(1_000, 4_000).unwrap();
        assert_eq!(held.max_output_tokens, None);
        held.settle(Some(&output(10)));
        let unpriced = spending(
            Budgets {
                max_daily_cost_usd: Some(1.0),
                ..Budgets::default()
            },
            None,
        );
        let refused = unpriced.reserve(1, 1).err().unwrap();
        assert!(
            refused.starts_with("budget max_daily_cost_usd is set but model `m` has no price"),
            "{refused}"
        );
        // A `max_output_tokens` below the least is the least.
        let small = spending(
            Budgets {
                max_turn_tokens: Some(150),
                ..Budgets::default()
            },
            None,
        );
        assert_eq!(small.reserve(50, 100).unwrap().max_output_tokens, Some(100));
    }

    /// Threads reserving at once never hold more than the budget between
    /// them, however they interleave.
    #[test]
    fn racing_reservations_never_pass_the_budget() {
        let turn = Budgets {
            max_turn_tokens: Some(150_000),
            ..Budgets::default()
        };
        let parent = spending(turn, None);
        let granted: Vec<u64> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..16)
                .map(|_| {
                    let child = parent.child("m".into(), None);
                    scope.spawn(move || {
                        let held = child.reserve(2_000, 40_000).ok()?;
                        let out = held.max_output_tokens?;
                        // Each spends all it may.
                        held.settle(Some(&Usage {
                            input: 2_000,
                            output: out,
                            ..Usage::default()
                        }));
                        Some(2_000 + out)
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().ok().flatten())
                .collect()
        });
        let total: u64 = granted.iter().sum();
        assert!(total <= 150_000, "{granted:?}");
        assert!(granted.len() < 16, "some were refused: {granted:?}");
        assert_eq!(parent.ledger.spent().1, total);
    }
}
