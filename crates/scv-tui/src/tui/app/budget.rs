//! `/budget [AMOUNT]`: the session's cost budget. With an amount it sends
//! `session.configure` {`max_session_cost_usd`} (raising or lowering it
//! for the rest of the session; what was spent stays spent); without one
//! it says what is known: the budget this screen set, what the session
//! spent, and that config.toml's `max_session_cost_usd` applies otherwise.

use super::{App, Outgoing};
use crate::tui::state::SessionView;
use scv_protocol::{ClientMessage, SessionConfigure};

/// `/budget` requests in flight, with the amount each asked for.
#[derive(Debug, Default)]
pub(super) struct BudgetBook {
    asked: Vec<(String, f64)>,
    /// The amount of the request being answered now.
    answering: Option<f64>,
}

impl BudgetBook {
    /// The amount `request_id` asked for, if it is a budget request of
    /// ours (it is answered now).
    fn answered(&mut self, request_id: Option<&str>) -> Option<f64> {
        let request_id = request_id?;
        let at = self.asked.iter().position(|(id, _)| id == request_id)?;
        Some(self.asked.remove(at).1)
    }
}

/// `2`, `$2`, `0.50` → USD; `None` unless a positive finite number.
fn amount(arg: &str) -> Option<f64> {
    let amount: f64 = arg.trim().trim_start_matches('$').parse().ok()?;
    (amount.is_finite() && amount > 0.0).then_some(amount)
}

impl App {
    /// `/budget`: shows the budget; `/budget AMOUNT` sets it for this
    /// session (allowed while a turn runs: it holds from the next turn).
    pub(super) fn budget_command(&mut self, session: SessionView, arg: &str) -> Vec<Outgoing> {
        self.budgets.answering = None;
        if arg.is_empty() {
            self.hint = Some(self.meter.budget_line());
            return Vec::new();
        }
        let Some(amount) = amount(arg) else {
            self.hint = Some(format!(
                "/budget takes an amount in USD greater than 0, such as /budget 2.50 (got {arg:?})"
            ));
            return Vec::new();
        };
        let out = self.send(ClientMessage::SessionConfigure(SessionConfigure {
            session_id: session.session_id,
            max_session_cost_usd: Some(amount),
            ..SessionConfigure::default()
        }));
        if let Outgoing::Send { request_id, .. } = &out {
            self.budgets.asked.push((request_id.clone(), amount));
        }
        vec![out]
    }

    /// A budget request of ours was answered (`session.configured`, or
    /// an error the error path shows itself): whether it was one. Taken
    /// as set only when the answer goes on to say the mode
    /// ([`App::budget_confirmed`]), which `session.configured` always does
    /// and an error never.
    pub(super) fn budget_answered(&mut self, request_id: Option<&str>) -> bool {
        let amount = self.budgets.answered(request_id);
        self.budgets.answering = amount;
        amount.is_some()
    }

    /// The `session.configured` answering `/budget AMOUNT` is complete: the
    /// budget holds.
    pub(super) fn budget_confirmed(&mut self) {
        let Some(amount) = self.budgets.answering.take() else {
            return;
        };
        let note = self.meter.budget_set(amount);
        self.notice(note);
    }
}
