//! A chat's subagents (capability `subagents`): one chat line per child,
//! when it ends (how, and in how many steps), nothing of what it streams
//! or answers (its answer reaches the chat as part of the parent's; a
//! chat message each at its start too doubled what a chat paid for). Only the owner's
//! sessions have tools, so only the owner's turns start children; a
//! failure's reason is the owner's to read. The children themselves are
//! the session client's views.

use scv_client::session::{Outcome, Subagent, Update};
use scv_client::text::{failure_words, visible};

/// The longest failure reason told.
const MAX_REASON_CHARS: usize = 200;

/// How a child is named: its description, printable (its session id when
/// the client no longer follows it).
pub(super) fn name(view: Option<&Subagent>, session_id: &str) -> String {
    visible(view.map_or(session_id, |v| v.description.as_str())).into_owned()
}

/// The chat line an update of child `session_id` makes, if any.
pub(super) fn line(
    view: Option<&Subagent>,
    session_id: &str,
    update: &Update,
    owner: bool,
) -> Option<String> {
    let Update::Ended { outcome, .. } = update else {
        return None;
    };
    let end = match outcome {
        Outcome::Completed { steps: 1, .. } => "done in 1 step".to_string(),
        Outcome::Completed { steps, .. } => format!("done in {steps} steps"),
        Outcome::Cancelled => "cancelled".to_string(),
        // Failure messages can name the provider's host and port.
        Outcome::Failed { message, .. } if owner => {
            let short: String = visible(message).chars().take(MAX_REASON_CHARS).collect();
            format!("failed: {short}")
        }
        Outcome::Failed { code, .. } => format!("failed: {}", failure_words(*code)),
    };
    Some(format!("⤷ subagent «{}» {end}", name(view, session_id)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use scv_client::session::SessionClient;
    use scv_protocol::{Event, EventBody, FailureCode, Parent, SubagentStarted};

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

    /// What the chat does with an event: the lines its children's updates
    /// make (through the session client, as `on_event` reads them).
    fn lines(client: &mut SessionClient, event: &Event, owner: bool) -> Vec<String> {
        let mut lines = Vec::new();
        for update in client.apply(event).updates {
            if let Update::Subagent { session_id, update } = update {
                lines.extend(line(
                    client.subagent(&session_id),
                    &session_id,
                    &update,
                    owner,
                ));
            }
        }
        lines
    }

    fn client() -> SessionClient {
        let mut client = SessionClient::new("clawbot-");
        client.set_session("P");
        client
    }

    #[test]
    fn one_line_per_child_when_it_ends() {
        let mut client = client();
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
            .flat_map(|e| lines(&mut client, e, true))
            .collect();
        assert_eq!(
            lines,
            [
                "⤷ subagent «find the auth code» done in 2 steps",
                "⤷ subagent «count the tests» failed: http://10.0.0.1:8080 refused",
            ]
        );
    }

    #[test]
    fn a_stranger_gets_no_reason_and_parent_events_make_no_line() {
        let mut client = client();
        assert!(lines(&mut client, &child("C1", started("x")), false).is_empty());
        assert_eq!(name(client.subagent("C1"), "C1"), "x");
        let failed = child(
            "C1",
            EventBody::TurnFailed {
                code: FailureCode::ProviderError,
                message: "secret host".into(),
            },
        );
        assert_eq!(
            lines(&mut client, &failed, false),
            ["⤷ subagent «x» failed: the model provider returned an error"]
        );
        let mut own = failed.clone();
        own.parent = None;
        own.session_id = Some("P".into());
        assert!(lines(&mut client, &own, true).is_empty());
        let cancelled = Update::Ended {
            request_id: None,
            turn_id: "CT".into(),
            outcome: Outcome::Cancelled,
            cancelled_by_us: false,
        };
        assert_eq!(
            line(None, "C9", &cancelled, true).as_deref(),
            Some("⤷ subagent «C9» cancelled")
        );
    }
}
