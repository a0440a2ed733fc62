//! What a session's turns may spend: each turn's budgets (config.toml's
//! as they are when it starts, the session's own `max_session_cost_usd`
//! over them) and what the session spent before it (a resumed one's from
//! its journal).

use super::Session;
use crate::agent::{add_usage, Spending};

impl Session {
    /// A turn's price, budgets and what the session spent before it:
    /// `budgets` as config.toml holds them now, this session's own
    /// `max_session_cost_usd` over config's. A budget raised above 80 %
    /// of what is spent warns again when the new one reaches 80 %.
    pub(super) fn spending(&mut self, budgets: crate::cost::Budgets) -> Spending {
        let model = self.settings.provider.model.clone();
        let budgets = crate::cost::Budgets {
            max_session_cost_usd: self.max_session_cost_usd.or(budgets.max_session_cost_usd),
            ..budgets
        };
        let spent = self.cost_usd.unwrap_or(0.0);
        if budgets
            .max_session_cost_usd
            .is_none_or(|max| spent * 100.0 < max * crate::agent::WARN_PERCENT)
        {
            self.warned.session = false;
        }
        let price = self.settings.config.cost.pricing.price(&model);
        Spending::new(model, price, budgets, spent, self.warned)
    }

    /// A resumed session's spending since its last clear, from its journal.
    pub(super) fn restore_spending(&mut self, replay: &scv_store::Replay) {
        let (detail, cost) = spent_in(replay);
        self.detail.add(detail);
        add_usage(&mut self.usage, detail.into());
        if let Some(cost) = cost {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + cost);
        }
    }
}

/// What a stored session's ended turns spent since its last clear: tokens
/// by kind, and USD over the priced ones (`None`: none was).
pub(super) fn spent_in(replay: &scv_store::Replay) -> (crate::model::Usage, Option<f64>) {
    let mut detail = crate::model::Usage::default();
    let mut cost_usd: Option<f64> = None;
    for spent in replay
        .turns
        .iter()
        .filter_map(|t| t.ended.as_ref()?.spent.as_ref())
    {
        let d = spent.usage_detail;
        detail.add(crate::model::Usage {
            input: d.input,
            cache_read: d.cache_read,
            cache_write: d.cache_write,
            output: d.output,
            reasoning: d.reasoning,
        });
        if let Some(cost) = spent.cost_usd {
            cost_usd = Some(cost_usd.unwrap_or(0.0) + cost);
        }
    }
    (detail, cost_usd)
}
