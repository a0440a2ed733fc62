//! A chat's subagents (capability `subagents`): one chat line per child,
//! when it ends (how, and in how many steps), nothing of what it streams
//! or answers (its answer reaches the chat as part of the parent's; a
//! chat message each at its start too doubled what a chat paid for). Only the owner's
//! sessions have tools, so only the owner's turns start children; a
//! failure's reason is the owner's to read.

use scv_client::text::{failure_words, visible};
use scv_protocol::{Event, EventBody};
use std::collections::HashMap;

/// Children followed per chat; past it the oldest is forgotten (its end
/// line then names its session id).
const MAX_CHILDREN: usize = 64;
/// The longest failure reason told.
const MAX_REASON_CHARS: usize = 200;

#[derive(Debug, Default)]
pub(super) struct Subagents {
    /// Description and order, by child session id.
    live: HashMap<String, (String, u64)>,
    next: u64,
}

impl Subagents {
    /// The description of a child being followed.
    pub(super) fn description(&self, session: &str) -> Option<&str> {
        self.live.get(session).map(|(d, _)| d.as_str())
    }

    /// The chat line a child's event makes, if any.
    pub(super) fn line(&mut self, event: &Event, owner: bool) -> Option<String> {
        event.parent.as_ref()?;
        let session = event.session_id.clone().unwrap_or_default();
        if let EventBody::SubagentStarted(started) = &event.body {
            if self.live.len() >= MAX_CHILDREN && !self.live.contains_key(&session) {
                let oldest = self
                    .live
                    .iter()
                    .min_by_key(|(_, (_, order))| *order)
                    .map(|(id, _)| id.clone());
                if let Some(oldest) = oldest {
                    self.live.remove(&oldest);
                }
            }
            self.next += 1;
            let description = visible(&started.description).into_owned();
            self.live.insert(session, (description, self.next));
            return None;
        }
        let end = match &event.body {
            EventBody::TurnCompleted { steps: 1, .. } => "done in 1 step".to_string(),
            EventBody::TurnCompleted { steps, .. } => format!("done in {steps} steps"),
            EventBody::TurnCancelled {} => "cancelled".to_string(),
            // Failure messages can name the provider's host and port.
            EventBody::TurnFailed { message, .. } if owner => {
                let short: String = visible(message).chars().take(MAX_REASON_CHARS).collect();
                format!("failed: {short}")
            }
            EventBody::TurnFailed { code, .. } => format!("failed: {}", failure_words(*code)),
            _ => return None,
        };
        let description = self
            .live
            .remove(&session)
            .map_or_else(|| visible(&session).into_owned(), |(d, _)| d);
        Some(format!("⤷ subagent «{description}» {end}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scv_protocol::{FailureCode, Parent, SubagentStarted};

    fn child(session: &str, body: EventBody) -> Event {
        Event {
            body,
            request_id: Some("clawbot-1".into()),
            session_id: Some(session.into()),
            turn_id: Some("CT".into()),
            seq: None,
            parent: Some(Parent {
                session_id: "P".into(),
                turn_id: "T".into(),
                call_id: format!("task-{session}"),
            }),
        }
    }

    fn started(description: &str) -> EventBody {
        EventBody::SubagentStarted(SubagentStarted {
            agent: None,
            description: description.into(),
            provider: "openai".into(),
            model: "m".into(),
            tools: Vec::new(),
            depth: 1,
        })
    }

    #[test]
    fn one_line_per_child_when_it_ends() {
        let mut subagents = Subagents::default();
        let events = [
            child("C1", started("find the auth code")),
            child("C2", started("count the tests")),
            child("C1", EventBody::TurnStarted {}),
            child(
                "C1",
                EventBody::AssistantDelta {
                    content: "streamed".into(),
                },
            ),
            child(
                "C1",
                EventBody::AssistantCompleted {
                    content: "the child's answer".into(),
                },
            ),
            child(
                "C1",
                EventBody::TurnCompleted {
                    steps: 2,
                    usage: None,
                    cost: None,
                },
            ),
            child(
                "C2",
                EventBody::TurnFailed {
                    code: FailureCode::ProviderError,
                    message: "http://10.0.0.1:8080 refused".into(),
                },
            ),
        ];
        let lines: Vec<String> = events
            .iter()
            .filter_map(|e| subagents.line(e, true))
            .collect();
        assert_eq!(
            lines,
            [
                "⤷ subagent «find the auth code» done in 2 steps",
                "⤷ subagent «count the tests» failed: http://10.0.0.1:8080 refused",
            ]
        );
        assert!(
            subagents.description("C1").is_none(),
            "forgotten at its end"
        );
    }

    #[test]
    fn a_stranger_gets_no_reason_and_parent_events_make_no_line() {
        let mut subagents = Subagents::default();
        subagents.line(&child("C1", started("x")), false);
        assert_eq!(subagents.description("C1"), Some("x"));
        let failed = child(
            "C1",
            EventBody::TurnFailed {
                code: FailureCode::ProviderError,
                message: "secret host".into(),
            },
        );
        assert_eq!(
            subagents.line(&failed, false).as_deref(),
            Some("⤷ subagent «x» failed: the model provider returned an error")
        );
        let mut own = failed.clone();
        own.parent = None;
        assert!(subagents.line(&own, true).is_none());
        let cancelled = child("C9", EventBody::TurnCancelled {});
        assert_eq!(
            subagents.line(&cancelled, true).as_deref(),
            Some("⤷ subagent «C9» cancelled")
        );
    }
}
