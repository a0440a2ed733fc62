//! The settings a turn runs with, built in one place
//! ([`TurnSettings::build`]) from its session's and this turn's own:
//!
//! - the session's settings as `session.configure` last left them: its
//!   provider and model, its reasoning effort (`effort.rs`), its mode (a
//!   cell the turn reads at each step, so plan mode set mid-turn applies
//!   from the next step or call), its limits, hooks, commands and sandbox;
//! - this turn's overrides: the `model:` of the command its prompt
//!   expanded from (`inline::grant`), for that turn alone;
//! - what it may spend: config.toml's budgets as they are when it starts,
//!   the session's own `max_session_cost_usd` over them, and what the
//!   session spent before it (priced by the session's model);
//! - its checkpoints, its MCP hub (the session's own, else the
//!   server's), and whether it may start subagents (not without tools).
//!
//! What it may send its client is not here: the sink decides
//! (`crate::gate`).

use super::Session;
use crate::agent::subagent::{ChildIndex, Server, Subagents};
use crate::agent::{Limits, SessionSettings, Spending};
use crate::checkpoint::Checkpoints;
use crate::server::Shared;
use std::sync::Arc;

/// What one turn of a session runs with.
pub(super) struct TurnSettings {
    /// The session's, with this turn's overrides.
    pub settings: Arc<SessionSettings>,
    pub limits: Arc<Limits>,
    pub spending: Spending,
    pub checkpoints: Option<Arc<Checkpoints>>,
    pub mcp: Arc<scv_mcp::Hub>,
    /// `None`: no `task` tool.
    pub subagents: Option<Arc<Subagents>>,
}

/// What a turn's own request changes of its session's settings.
struct Overrides {
    /// The `model:` of the command the prompt expanded from.
    model: Option<String>,
}

impl Overrides {
    fn of(settings: &SessionSettings, prompt: &str) -> Overrides {
        Overrides {
            model: settings.custom.grant_of(prompt).and_then(|g| g.model),
        }
    }

    /// `settings` with these overrides (the same `Arc` when there are
    /// none).
    fn apply(self, settings: &Arc<SessionSettings>) -> Arc<SessionSettings> {
        match self.model {
            Some(model) => {
                let mut next = (**settings).clone();
                crate::customize::use_model(&mut next.provider, &model);
                Arc::new(next)
            }
            None => settings.clone(),
        }
    }
}

impl TurnSettings {
    /// The settings of `session`'s turn of `prompt`; `budgets` are
    /// config.toml's now.
    pub(super) fn build(
        session: &mut Session,
        shared: &Shared,
        children: &Arc<ChildIndex>,
        prompt: &str,
        budgets: crate::cost::Budgets,
    ) -> TurnSettings {
        let own = &session.settings;
        let settings = Overrides::of(own, prompt).apply(own);
        let subagents = (!own.no_tools)
            .then(|| {
                let server = Server {
                    limits: own.limits.clone(),
                    config: own.config.clone(),
                    store: shared.store.clone(),
                };
                Subagents::for_turn(
                    &server,
                    0,
                    session.sink.session_id().clone(),
                    children.clone(),
                    own.custom.agents.clone(),
                )
            })
            .flatten();
        let limits = own.limits.clone();
        let mcp = session.mcp.clone().unwrap_or_else(|| shared.mcp.clone());
        TurnSettings {
            settings,
            limits,
            spending: session.spending(budgets),
            checkpoints: session.checkpoints.clone(),
            mcp,
            subagents,
        }
    }
}
