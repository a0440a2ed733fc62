//! A session's provider, model, budget and mode: `session.configure`
//! (extension; its `reasoning_effort` is `effort.rs`'s) and `models.list`.

use super::SessionHost;
use crate::session::factory::SessionFactory;
use crate::session::reject::{invalid, Handled, Reject};
use scv_protocol::{ErrorCode, EventBody, SessionConfigure};
use std::sync::Arc;

impl SessionHost {
    /// `models.list`: the session's provider's models, or a
    /// `provider_error`-worded `invalid_request` saying why not. Bounded
    /// (5 s) so the connection is held no longer.
    pub(super) async fn models(&mut self, rid: &str, session_id: &str) -> Result<(), Reject> {
        let provider = self.session(session_id)?.settings.provider.clone();
        let models = provider
            .list_models()
            .await
            .map_err(|why| invalid(format!("cannot list the models: {why}")))?;
        let listed = EventBody::ModelsListed {
            provider: provider.name.clone(),
            models,
        };
        self.reply(rid, Some(session_id.to_string()), listed).await;
        Ok(())
    }

    /// `session.configure` (extension): another provider and/or model for
    /// the next turns of an idle session; the history is kept, reasoning
    /// data of another wire dropped. A `reasoning_effort` is set first
    /// (`effort.rs`).
    pub(super) async fn configure(&mut self, rid: &str, configure: SessionConfigure) -> Handled {
        let SessionConfigure {
            session_id,
            provider,
            model,
            max_session_cost_usd,
            mode,
            reasoning_effort,
        } = configure;
        let session_id = session_id.as_str();
        if let Some(effort) = reasoning_effort {
            let switching = provider.is_some() || model.is_some();
            self.set_effort(session_id, &effort, switching)?;
        }
        if let Some(max) = max_session_cost_usd {
            let usage = crate::gate::Capability::Usage;
            if !usage.granted(&self.caps) {
                return Err(invalid(usage.refusal("max_session_cost_usd")));
            }
            if !max.is_finite() || max <= 0.0 {
                return Err(invalid(format!(
                    "max_session_cost_usd must be a positive number of USD (got {max})"
                )));
            }
        }
        if provider.is_none() && model.is_none() {
            // Only the budget or the mode changes, which a running turn
            // may see (the mode applies from its next step or call); the
            // provider and model stay.
            let configured_budget = self.shared.live.current().config.cost.budgets;
            let session = self.session(session_id)?;
            if max_session_cost_usd.is_some() {
                session.max_session_cost_usd = max_session_cost_usd;
            }
            if let Some(mode) = mode {
                session.settings.mode.set(mode);
            }
            let configured = EventBody::SessionConfigured {
                provider: session.settings.provider.name.clone(),
                model: session.settings.provider.model.clone(),
                context_max_tokens: session.settings.context_max_tokens,
                max_session_cost_usd: max_session_cost_usd
                    .or(session.max_session_cost_usd)
                    .or(configured_budget.max_session_cost_usd),
                mode: Some(session.settings.mode.get()),
            };
            if let Some(seq) = session.emit(rid, &configured).await {
                if let Some(journal) = &mut session.journal {
                    // Its `seq` is journaled like every session event's.
                    let settings = &session.settings.provider;
                    journal.configured(
                        &settings.name,
                        &settings.model,
                        seq,
                        None,
                        max_session_cost_usd,
                    );
                }
                session.tell_journal(Some(rid)).await;
            }
            return Ok(());
        }
        let current = {
            let session = self.session(session_id)?;
            if session.active.is_some() {
                return Err(Reject::new(
                    ErrorCode::TurnActive,
                    "a turn is running; configure the session when it is idle",
                ));
            }
            session.settings.clone()
        };
        // A switch takes what config.toml says now.
        self.shared.live.refresh().await;
        let (settings, mut configured) =
            SessionFactory::new(&self.shared).configure(&current, provider, model)?;
        let session = self.session(session_id)?;
        if let Some(mode) = mode {
            settings.mode.set(mode);
            if let EventBody::SessionConfigured { mode: answer, .. } = &mut configured {
                *answer = Some(mode);
            }
        }
        if max_session_cost_usd.is_some() {
            session.max_session_cost_usd = max_session_cost_usd;
            if let EventBody::SessionConfigured {
                max_session_cost_usd: answer,
                ..
            } = &mut configured
            {
                *answer = max_session_cost_usd;
            }
        }
        let changed = session
            .history
            .as_mut()
            .is_some_and(|history| history.keep_provider_data_of(settings.provider.wire));
        let (provider, model) = (
            settings.provider.name.clone(),
            settings.provider.model.clone(),
        );
        session.settings = Arc::new(settings);
        if let Some(seq) = session.emit(rid, &configured).await {
            if let Some(journal) = &mut session.journal {
                let history = session.history.as_ref().filter(|_| changed);
                journal.configured(&provider, &model, seq, history, max_session_cost_usd);
            }
            session.tell_journal(Some(rid)).await;
        }
        Ok(())
    }
}
