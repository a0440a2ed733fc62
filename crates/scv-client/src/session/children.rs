//! The session's subagents (capability `subagents`): one view per child
//! session, kept here once for every front end. A child is ours when its
//! parent is the session or another child of ours.

use super::update::Outcome;
use scv_protocol::{Parent, SubagentStarted};
use std::collections::VecDeque;

/// Children followed (the server runs `max_subagents` at once per turn);
/// past it the oldest that has ended is forgotten (the oldest of all when
/// none has).
pub const MAX_CHILDREN: usize = 256;
/// Characters kept of a description, an agent's or a model's name (as
/// sent: each front end makes them printable and cuts them to its own
/// width).
pub const MAX_LABEL_CHARS: usize = 4096;

/// Where a child is.
#[derive(Debug, Clone, PartialEq)]
pub enum SubagentState {
    /// Started, its turn not yet begun or running.
    Running,
    Ended(Outcome),
}

/// One child session as every front end sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Subagent {
    pub session_id: String,
    /// Its `task` call: the session (ours, or another child's) and call.
    pub parent: Parent,
    /// 1 for a child of the session, 2 for its child…
    pub depth: u32,
    /// The `task` call's description (bounded, as sent).
    pub description: String,
    /// The definition it runs; `None`: the general-purpose subagent.
    pub agent: Option<String>,
    pub provider: String,
    pub model: String,
    pub tools: Vec<String>,
    /// The task its `task` call gave it (that call's `prompt`), when the
    /// client saw the call proposed.
    pub prompt: Option<String>,
    /// Its running turn (what a cancel of it names).
    pub turn_id: Option<String>,
    pub state: SubagentState,
}

impl Subagent {
    pub fn running(&self) -> bool {
        self.state == SubagentState::Running
    }
}

/// The children followed, oldest first.
#[derive(Debug, Default)]
pub(super) struct Children {
    live: VecDeque<Subagent>,
}

fn cut(text: &str) -> String {
    text.chars().take(MAX_LABEL_CHARS).collect()
}

impl Children {
    pub(super) fn contains(&self, session_id: &str) -> bool {
        self.get(session_id).is_some()
    }

    pub(super) fn get(&self, session_id: &str) -> Option<&Subagent> {
        self.live.iter().find(|c| c.session_id == session_id)
    }

    pub(super) fn get_mut(&mut self, session_id: &str) -> Option<&mut Subagent> {
        self.live.iter_mut().find(|c| c.session_id == session_id)
    }

    pub(super) fn all(&self) -> impl Iterator<Item = &Subagent> {
        self.live.iter()
    }

    /// A child began.
    pub(super) fn started(
        &mut self,
        session_id: &str,
        parent: &Parent,
        started: &SubagentStarted,
        prompt: Option<String>,
    ) {
        if self.contains(session_id) {
            return;
        }
        if self.live.len() >= MAX_CHILDREN {
            let oldest = self
                .live
                .iter()
                .position(|c| !c.running())
                .unwrap_or_default();
            self.live.remove(oldest);
        }
        self.live.push_back(Subagent {
            session_id: session_id.to_string(),
            parent: parent.clone(),
            depth: started.depth,
            description: cut(&started.description),
            agent: started.agent.as_deref().map(cut),
            provider: cut(&started.provider),
            model: cut(&started.model),
            tools: started.tools.clone(),
            prompt,
            turn_id: None,
            state: SubagentState::Running,
        });
    }

    pub(super) fn clear(&mut self) {
        self.live.clear();
    }
}
