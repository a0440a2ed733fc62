//! What an editor is told of a session beside its conversation:
//! - `usage_update` after each provider step: `used` is the step's input
//!   plus output tokens (what the context holds once its answer is in),
//!   `size` the model's context window (`session.started`'s
//!   `context_max_tokens`), `cost` the session's cumulative cost in USD
//!   as SCV prices it (known at each turn's end, and for a resumed session
//!   from the start; absent while no turn was priced) — and once more at
//!   each turn's end with the cost it brought;
//! - `session_info_update` with a title at a new session's first prompt:
//!   its first non-blank line, at most 100 characters (`…` past
//!   them): the session store's title (`scv_store::title_of`), which
//!   `session/list` shows for it later;
//! - message ids: every chunk of one agent message (one provider step's
//!   text) shares `TURN:N`, its thoughts `TURN:N` of their own, `TURN` the
//!   SCV turn id and `N` counting the turn's messages.

use agent_client_protocol::v1::schema::{Cost, UsageUpdate};
use scv_protocol::{SessionStarted, TurnCost, Usage};

/// One session's meter: usage, title, message ids.
#[derive(Debug, Default)]
pub struct Meter {
    context_max: u64,
    used: u64,
    cost_usd: Option<f64>,
    titled: bool,
    turn: String,
    messages: u64,
    message: Option<String>,
    thought: Option<String>,
}

impl Meter {
    pub fn of(started: &SessionStarted) -> Meter {
        Meter {
            context_max: started.context_max_tokens,
            cost_usd: started.spent.as_ref().and_then(|s| s.session_cost_usd),
            // A resumed session has its title (its first prompt's).
            titled: started.resumed,
            ..Meter::default()
        }
    }

    /// A live session attached (`session/load` of one): its context
    /// window; its title was given when it started.
    pub fn attached(attached: &scv_protocol::SessionAttached) -> Meter {
        Meter {
            context_max: attached.context_max_tokens.unwrap_or_default(),
            titled: true,
            ..Meter::default()
        }
    }

    /// A turn began: its messages count from 1.
    pub fn begin_turn(&mut self, turn_id: &str) {
        self.turn = turn_id.to_string();
        self.messages = 0;
        self.message = None;
        self.thought = None;
    }

    fn next_id(&mut self) -> String {
        self.messages += 1;
        format!("{}:{}", self.turn, self.messages)
    }

    /// The id of the agent message being written (a new one after a
    /// thought or a finished message).
    pub fn message_id(&mut self) -> String {
        self.thought = None;
        match &self.message {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id();
                self.message = Some(id.clone());
                id
            }
        }
    }

    /// The agent message is whole: its id, and the next text is another.
    pub fn message_done(&mut self) -> String {
        let id = self.message_id();
        self.message = None;
        id
    }

    /// The id of the thought being written.
    pub fn thought_id(&mut self) -> String {
        match &self.thought {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id();
                self.thought = Some(id.clone());
                id
            }
        }
    }

    /// A provider step's usage (the step is over: the next step's
    /// thoughts are another message).
    pub fn step(&mut self, step: &Usage) -> UsageUpdate {
        self.thought = None;
        self.used = step.input_tokens.saturating_add(step.output_tokens);
        self.usage()
    }

    /// A turn completed with its cost (capability `usage`); `None` when
    /// the provider reported nothing to tell.
    pub fn turn_cost(&mut self, cost: Option<&TurnCost>) -> Option<UsageUpdate> {
        let cost = cost?;
        self.cost_usd = cost.session_cost_usd.or(self.cost_usd);
        Some(self.usage())
    }

    fn usage(&self) -> UsageUpdate {
        UsageUpdate::new(self.used, self.context_max)
            .cost(self.cost_usd.map(|usd| Cost::new(usd, "USD")))
    }

    /// The session's title at its first prompt; `None` after.
    pub fn title(&mut self, prompt: &str) -> Option<String> {
        if std::mem::replace(&mut self.titled, true) {
            return None;
        }
        let title = scv_store::title_of(prompt);
        (!title.is_empty()).then_some(title)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_title_once() {
        let mut meter = Meter::default();
        assert_eq!(meter.title("  \nfirst\nsecond").as_deref(), Some("first"));
        assert_eq!(meter.title("again"), None);
        let mut meter = Meter::default();
        assert_eq!(meter.title(&"é".repeat(150)).unwrap().chars().count(), 101);
    }

    #[test]
    fn message_ids_per_message_and_thought() {
        let mut meter = Meter::default();
        meter.begin_turn("t1");
        let thought = meter.thought_id();
        assert_eq!(thought, meter.thought_id());
        let a = meter.message_id();
        assert_ne!(a, thought);
        assert_eq!(a, meter.message_id());
        assert_eq!(a, meter.message_done());
        let b = meter.message_id();
        assert_ne!(a, b);
        let thought = meter.thought_id();
        meter.step(&Usage::default());
        assert_ne!(meter.thought_id(), thought);
        meter.begin_turn("t2");
        assert_eq!(meter.message_id(), "t2:1");
    }

    #[test]
    fn usage_and_cost() {
        let mut meter = Meter {
            context_max: 1000,
            ..Meter::default()
        };
        let u = meter.step(&Usage {
            input_tokens: 300,
            output_tokens: 20,
        });
        assert_eq!((u.used, u.size, u.cost), (320, 1000, None));
        assert!(meter.turn_cost(None).is_none());
        let cost = TurnCost {
            session_cost_usd: Some(0.25),
            ..TurnCost::default()
        };
        let u = meter.turn_cost(Some(&cost)).unwrap();
        assert_eq!(u.cost.unwrap().amount, 0.25);
        assert_eq!(u.used, 320);
    }
}
