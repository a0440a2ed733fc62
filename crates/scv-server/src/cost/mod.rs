//! What tokens cost, and the budgets each request reserves against.
//!
//! Prices are USD per million tokens ([`prices`] holds the built-in,
//! dated table; `[pricing."MODEL"]` adds or overrides). Costs are `f64`
//! dollars: a turn's cost is a handful of products, far from where binary
//! rounding shows at the cent.

pub(crate) mod prices;

use crate::model::Usage;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// One model's price, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Price {
    /// Input tokens not read from nor written to a cache.
    pub input: f64,
    /// Input tokens read from a prompt cache.
    pub cached_input: f64,
    /// Input tokens written to a prompt cache.
    pub cache_write: f64,
    /// Output tokens (reasoning included).
    pub output: f64,
}

const MILLION: f64 = 1_000_000.0;

impl Price {
    /// What `usage` costs, USD.
    pub(crate) fn cost(&self, usage: &Usage) -> f64 {
        (usage.input as f64 * self.input
            + usage.cache_read as f64 * self.cached_input
            + usage.cache_write as f64 * self.cache_write
            + usage.output as f64 * self.output)
            / MILLION
    }

    /// The most a request can cost: `input_tokens` uncached at the input
    /// price (a cache write can cost more: at that price when higher) and
    /// `max_output_tokens` at the output price.
    pub(crate) fn worst_case(&self, input_tokens: u64, max_output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input.max(self.cache_write)
            + max_output_tokens as f64 * self.output)
            / MILLION
    }

    /// The most output tokens `usd` pays for after `input_tokens` at their
    /// worst case: 0 when it does not even pay for the input, `u64::MAX`
    /// when output is free. A millionth of a token of slack, so that
    /// $0.12 − $0.08 at $10 a million buys 4,000 tokens, not 3,999.
    pub(crate) fn affordable_output(&self, usd: f64, input_tokens: u64) -> u64 {
        let left = usd - self.worst_case(input_tokens, 0);
        if left.is_nan() || left < 0.0 {
            return 0;
        }
        if self.output <= 0.0 {
            return u64::MAX;
        }
        // `as` saturates: a huge budget is u64::MAX tokens.
        (left * MILLION / self.output + 1e-6).floor() as u64
    }
}

/// The price table in force: the built-in one with config's entries on top.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pricing {
    /// `[pricing."MODEL"]`, checked.
    configured: BTreeMap<String, Price>,
}

impl Pricing {
    pub(crate) fn new(configured: BTreeMap<String, Price>) -> Pricing {
        Pricing { configured }
    }

    /// `model`'s price: configured first, then built in; a dated snapshot
    /// name (`claude-sonnet-4-5-20250929`, `gpt-4.1-2025-04-14`) falls back
    /// to its alias. `None`: no price.
    pub(crate) fn price(&self, model: &str) -> Option<Price> {
        let exact = |name: &str| {
            self.configured.get(name).copied().or_else(|| {
                prices::BUILTIN
                    .iter()
                    .find(|(known, _)| *known == name)
                    .map(|(_, price)| *price)
            })
        };
        exact(model).or_else(|| exact(undated(model)?))
    }
}

/// `model` without a trailing `-YYYYMMDD` or `-YYYY-MM-DD`.
fn undated(model: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((head, tail)) = model.rsplit_once('-') {
        if tail.len() == 8 && digits(tail) {
            return Some(head);
        }
    }
    let mut parts = model.rsplitn(4, '-');
    let (day, month, year, head) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (day.len() == 2 && month.len() == 2 && year.len() == 4)
        .then_some(())
        .filter(|_| digits(day) && digits(month) && digits(year))
        .map(|_| head)
}

/// The budgets of `config.toml` (`None`: no limit).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Budgets {
    /// `max_session_cost_usd` (a session may raise its own with
    /// `session.configure`).
    pub max_session_cost_usd: Option<f64>,
    /// `max_daily_cost_usd`: what this server process spends per UTC day.
    pub max_daily_cost_usd: Option<f64>,
    /// `max_turn_tokens`: input plus output tokens of one turn's requests.
    pub max_turn_tokens: Option<u64>,
}

/// What this process spent today (UTC) and what its requests in flight
/// hold, over all its sessions and connections (a reload keeps it: it is
/// the process's).
pub(crate) static DAILY_SPEND: DailySpend = DailySpend::new();

/// What one process spent on one UTC day, and holds for requests in
/// flight.
#[derive(Debug, Default)]
pub(crate) struct DailySpend {
    day: Mutex<Day>,
}

/// The books of one UTC day.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Day {
    /// Days since the epoch.
    day: u64,
    /// USD requests reported that day.
    spent: f64,
    /// USD held by requests still in flight (their worst case): not tied
    /// to a day, as a request sent before midnight may end after it.
    held: f64,
}

impl DailySpend {
    pub(crate) const fn new() -> DailySpend {
        DailySpend {
            day: Mutex::new(Day {
                day: 0,
                spent: 0.0,
                held: 0.0,
            }),
        }
    }

    fn today() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() / 86_400)
    }

    /// Today's books, locked (a new day starts from nothing spent). Lock
    /// order: a turn's ledger first, then this.
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Day> {
        let today = Self::today();
        let mut day = crate::sync::lock(&self.day);
        if day.day != today {
            day.day = today;
            day.spent = 0.0;
        }
        day
    }

    /// Spent today so far, USD.
    pub(crate) fn spent(&self) -> f64 {
        self.lock().spent
    }
}

impl Day {
    /// Spent today, USD.
    pub(crate) fn spent(&self) -> f64 {
        self.spent
    }

    /// Held by requests in flight, USD.
    pub(crate) fn held(&self) -> f64 {
        self.held
    }

    /// Holds `usd` for a request about to be sent.
    pub(crate) fn hold(&mut self, usd: f64) {
        self.held += usd;
    }

    /// A request that held `held` ended having cost `cost`.
    pub(crate) fn settle(&mut self, held: f64, cost: f64) {
        self.held = release(self.held, held);
        self.spent += cost;
    }
}

/// `held` less `usd`, what sums of floats leave behind (never below
/// nothing, no trillionth of a cent) cleared.
pub(crate) fn release(held: f64, usd: f64) -> f64 {
    let left = held - usd;
    if left < 1e-12 {
        0.0
    } else {
        left
    }
}
/// `$1.23`, `$0.0042`: cents for a dollar or more, else four significant
/// places, so a cheap turn never reads `$0.00`.
pub(crate) fn usd(amount: f64) -> String {
    if amount >= 1.0 || amount == 0.0 {
        format!("${amount:.2}")
    } else {
        format!("${amount:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_by_kind_and_worst_case() {
        let sonnet = Pricing::default().price("claude-sonnet-4-5").unwrap();
        let usage = Usage {
            input: 1_000_000,
            cache_read: 1_000_000,
            cache_write: 1_000_000,
            output: 1_000_000,
            reasoning: 500_000,
        };
        // 3 + 0.30 + 3.75 + 15; reasoning is part of output, not extra.
        assert!((sonnet.cost(&usage) - 22.05).abs() < 1e-9);
        assert!((sonnet.worst_case(1_000_000, 1_000_000) - 18.75).abs() < 1e-9);
    }

    #[test]
    fn configured_overrides_and_dated_names_fall_back() {
        let mut configured = BTreeMap::new();
        let free = Price {
            input: 0.0,
            cached_input: 0.0,
            cache_write: 0.0,
            output: 0.0,
        };
        configured.insert("gpt-4.1-mini".to_string(), free);
        configured.insert("qwen3".to_string(), free);
        let pricing = Pricing::new(configured);
        assert_eq!(pricing.price("gpt-4.1-mini"), Some(free));
        assert_eq!(pricing.price("qwen3"), Some(free));
        assert_eq!(
            pricing.price("claude-sonnet-4-5-20250929"),
            pricing.price("claude-sonnet-4-5")
        );
        assert_eq!(
            pricing.price("gpt-4.1-2025-04-14"),
            pricing.price("gpt-4.1")
        );
        assert!(pricing.price("gpt-4.1").is_some());
        assert_eq!(pricing.price("local-model"), None);
        assert_eq!(pricing.price("gemini-2.5-flash"), None);
        assert_eq!(pricing.price("-20250929"), None);
    }

    #[test]
    fn every_builtin_price_is_sane() {
        for (model, price) in prices::BUILTIN {
            for value in [
                price.input,
                price.cached_input,
                price.cache_write,
                price.output,
            ] {
                assert!(value.is_finite() && value > 0.0, "{model}");
            }
            assert!(price.cached_input <= price.input, "{model}");
        }
    }

    #[test]
    fn daily_spend_adds_up_and_releases_what_it_held() {
        let spend = DailySpend::default();
        spend.lock().hold(0.4);
        spend.lock().settle(0.4, 0.25);
        spend.lock().hold(0.1);
        assert!((spend.lock().held() - 0.1).abs() < 1e-12);
        spend.lock().settle(0.1, 0.5);
        assert!((spend.spent() - 0.75).abs() < 1e-12);
        assert_eq!(spend.lock().held(), 0.0);
        assert_eq!(usd(0.000_42), "$0.0004");
        assert_eq!(usd(1.234), "$1.23");
    }

    #[test]
    fn affordable_output_is_what_is_left_at_the_output_price() {
        let price = Price {
            input: 1.0,
            cached_input: 0.1,
            cache_write: 2.0,
            output: 10.0,
        };
        // $0.12 − $0.08 at $10 a million: 4,000 tokens, float error aside.
        let free_input = Price {
            input: 0.0,
            cache_write: 0.0,
            ..price
        };
        assert_eq!(free_input.affordable_output(0.12 - 0.08, 0), 4_000);
        // 1,000 tokens in at the cache-write price ($0.002) come first.
        assert_eq!(price.affordable_output(0.012, 1_000), 1_000);
        assert_eq!(price.affordable_output(0.001, 1_000), 0);
        assert_eq!(price.affordable_output(-1.0, 0), 0);
        let free = Price {
            output: 0.0,
            ..price
        };
        assert_eq!(free.affordable_output(1.0, 0), u64::MAX);
        assert_eq!(free_input.affordable_output(1e300, 0), u64::MAX);
    }
}
