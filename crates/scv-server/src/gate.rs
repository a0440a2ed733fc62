//! What a connection opted into (`initialize.capabilities`) decides what
//! leaves the server, in one place.
//!
//! The connection negotiates one [`Capabilities`] value; the session host
//! and every session's sink hold it, and the places events leave the
//! server ([`crate::agent::SessionSink`], the host's replies, the
//! connection's own) pass each event through [`shape`]. Emitters build
//! every event whole and never ask what the client wants. Adding a
//! capability is a field of [`Capabilities`], a line of `capabilities!`
//! here, and a row in [`EVENT_GATES`] (a whole event), [`strip`] (an
//! extension field), [`needs`] (a request) or [`code`] (an extension
//! `turn.failed` code).
//!
//! Answers to a request are not gated here: the request was ([`needs`]).

use scv_protocol::{Capabilities, ClientMessage, EventBody};
use std::borrow::Cow;

/// The `turn.failed` code of a request a budget refused, for a connection
/// with capability `budgets` (every other gets `step_limit`).
pub(crate) const BUDGET_EXCEEDED: &str = "budget_exceeded";

/// [`Capability`]: one variant per field of [`Capabilities`], its name the
/// field's (so a capability is one line here).
macro_rules! capabilities {
    ($($variant:ident => $field:ident,)*) => {
        /// One optional part of the protocol (a field of [`Capabilities`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Capability {
            $($variant,)*
        }

        impl Capability {
            /// Every one, in the order of [`Capabilities`]' fields.
            #[cfg(test)]
            const ALL: &[Capability] = &[$(Capability::$variant,)*];

            /// Whether `caps` grants it.
            pub(crate) fn granted(self, caps: &Capabilities) -> bool {
                match self {
                    $(Capability::$variant => caps.$field,)*
                }
            }

            /// Its name in `initialize.capabilities`.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Capability::$variant => stringify!($field),)*
                }
            }
        }
    };
}

capabilities! {
    Reasoning => reasoning,
    Sessions => sessions,
    Checkpoints => checkpoints,
    Usage => usage,
    Commands => commands,
    Hooks => hooks,
    Subagents => subagents,
    Retries => retries,
    StepUsage => step_usage,
    Trust => trust,
    Budgets => budgets,
    DaemonStatus => daemon_status,
    Elicitation => elicitation,
    Permissions => permissions,
    Processes => processes,
    Detach => detach,
    Images => images,
}

impl Capability {
    /// The refusal of `what` (a request or a field) to a connection that
    /// did not ask for it.
    pub(crate) fn refusal(self, what: &str) -> String {
        format!(
            "{what} needs capability `{}` (ask for it in initialize)",
            self.name()
        )
    }
}

/// The events a connection gets only when it asked, by type, and the
/// capability each needs.
const EVENT_GATES: &[(&str, Capability)] = &[
    ("reasoning.delta", Capability::Reasoning),
    ("checkpoint.created", Capability::Checkpoints),
    ("checkpoint.failed", Capability::Checkpoints),
    ("budget.warning", Capability::Usage),
    ("hook.message", Capability::Hooks),
    ("subagent.started", Capability::Subagents),
    ("provider.retrying", Capability::Retries),
    ("usage.updated", Capability::StepUsage),
    ("session.warning", Capability::Sessions),
    ("elicitation.requested", Capability::Elicitation),
];

/// The capability an event of type `type_name` needs to be sent at all
/// (`None`: protocol version 2's own, or an answer to a gated request).
pub(crate) fn required(type_name: &str) -> Option<Capability> {
    EVENT_GATES
        .iter()
        .find(|(name, _)| *name == type_name)
        .map(|(_, cap)| *cap)
}

/// Whether `caps` lets an event of `type_name` out.
pub(crate) fn allows(caps: &Capabilities, type_name: &str) -> bool {
    required(type_name).is_none_or(|cap| cap.granted(caps))
}

/// `body` as a connection with `caps` gets it: `None` when it is not sent
/// at all, else without the extension fields `caps` lacks (a copy only
/// when there are any to take out).
pub(crate) fn shape<'a>(caps: &Capabilities, body: &'a EventBody) -> Option<Cow<'a, EventBody>> {
    if !allows(caps, body.type_name()) {
        return None;
    }
    Some(match strip(caps, body) {
        Some(stripped) => Cow::Owned(stripped),
        None => Cow::Borrowed(body),
    })
}

/// [`shape`] of an event the caller owns (no copy).
pub(crate) fn shape_owned(caps: &Capabilities, body: EventBody) -> Option<EventBody> {
    if !allows(caps, body.type_name()) {
        return None;
    }
    Some(strip(caps, &body).unwrap_or(body))
}

/// `body` without the extension fields `caps` lacks; `None` when it has
/// none of them.
fn strip(caps: &Capabilities, body: &EventBody) -> Option<EventBody> {
    let lacks = |cap: Capability| !cap.granted(caps);
    let mut body = match body {
        EventBody::TurnCompleted { cost: Some(_), .. } if lacks(Capability::Usage) => body.clone(),
        EventBody::SessionStarted(_)
            if lacks(Capability::Commands)
                || lacks(Capability::Trust)
                || lacks(Capability::Usage) =>
        {
            body.clone()
        }
        EventBody::DaemonStatus { .. } if lacks(Capability::DaemonStatus) => body.clone(),
        EventBody::SessionListed { .. } if lacks(Capability::Detach) => body.clone(),
        _ => return None,
    };
    match &mut body {
        // Usage by kind and cost.
        EventBody::TurnCompleted { cost, .. } => *cost = None,
        EventBody::SessionStarted(started) => {
            if lacks(Capability::Commands) {
                started.drop_commands_fields();
            }
            if lacks(Capability::Trust) {
                started.trust = None;
            }
            if lacks(Capability::Usage) {
                started.max_session_cost_usd = None;
                started.spent = None;
            }
        }
        // Exactly the protocol document's fields (`remote_tools` aside,
        // which the document names).
        EventBody::DaemonStatus { status } => {
            status.config = None;
            for component in &mut status.components {
                component.tools = None;
                component.tool_names = None;
            }
        }
        // The live fields.
        EventBody::SessionListed { sessions } => {
            for session in sessions {
                session.live = None;
            }
        }
        _ => {}
    }
    Some(body)
}

/// The wire's `code` of a `turn.failed` whose extension code is `code`
/// (`None`: the document's code the body holds).
pub(crate) fn code<'a>(caps: &Capabilities, code: Option<&'a str>) -> Option<&'a str> {
    code.filter(|code| match *code {
        BUDGET_EXCEEDED => Capability::Budgets.granted(caps),
        _ => false,
    })
}

/// The capability a request needs (`None`: protocol version 2's own).
/// `session.close` is capability `detach`'s where it was granted
/// (`SessionHost::forward`), else `sessions`'.
pub(crate) fn needs(message: &ClientMessage) -> Option<Capability> {
    Some(match message {
        ClientMessage::SessionList(_)
        | ClientMessage::SessionResume(_)
        | ClientMessage::SessionFork(_)
        | ClientMessage::SessionDelete(_)
        | ClientMessage::SessionClose(_) => Capability::Sessions,
        ClientMessage::SessionDetach(_) | ClientMessage::SessionAttach(_) => Capability::Detach,
        ClientMessage::CheckpointList(_)
        | ClientMessage::CheckpointDiff(_)
        | ClientMessage::CheckpointRestore(_) => Capability::Checkpoints,
        ClientMessage::WorkspaceTrust(_) => Capability::Trust,
        ClientMessage::PermissionsList(_)
        | ClientMessage::PermissionsKeep(_)
        | ClientMessage::PermissionsRemove(_) => Capability::Permissions,
        ClientMessage::ElicitationResolve(_) => Capability::Elicitation,
        ClientMessage::ProcessKill(_)
        | ClientMessage::ProcessPeek(_)
        | ClientMessage::ProcessList(_) => Capability::Processes,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event type the table names is one `EventBody` knows (a
    /// renamed event would otherwise go ungated): parsing just its type
    /// fails on a missing field, never on an unknown variant.
    #[test]
    fn gated_names_are_event_types() {
        for (name, _) in EVENT_GATES {
            let parsed = serde_json::from_value::<EventBody>(serde_json::json!({ "type": name }));
            if let Err(err) = parsed {
                assert!(
                    !err.to_string().contains("unknown variant"),
                    "{name}: {err}"
                );
            }
        }
    }

    /// A gated event leaves only with its capability, and an event of the
    /// document's own always leaves, uncopied.
    #[test]
    fn events_leave_with_their_capability() {
        let reasoning = EventBody::ReasoningDelta {
            content: String::new(),
        };
        let created = EventBody::CheckpointCreated {
            checkpoint_id: String::new(),
        };
        let started = EventBody::TurnStarted {};
        let none = Capabilities::NONE;
        assert!(shape(&none, &reasoning).is_none());
        assert!(shape(&none, &created).is_none());
        assert!(matches!(shape(&none, &started), Some(Cow::Borrowed(_))));
        let some = Capabilities {
            reasoning: true,
            ..Capabilities::NONE
        };
        assert!(matches!(shape(&some, &reasoning), Some(Cow::Borrowed(_))));
        assert!(shape(&some, &created).is_none());
        for (name, cap) in EVENT_GATES {
            assert_eq!(required(name), Some(*cap));
            assert!(!allows(&none, name), "{name}");
        }
    }

    /// `turn.completed`'s cost leaves only with capability `usage`.
    #[test]
    fn extension_fields_need_their_capability() {
        let completed = EventBody::TurnCompleted {
            steps: 1,
            usage: None,
            cost: Some(scv_protocol::TurnCost::default()),
        };
        let Some(Cow::Owned(EventBody::TurnCompleted { cost, .. })) =
            shape(&Capabilities::NONE, &completed)
        else {
            panic!("turn.completed is not stripped");
        };
        assert!(cost.is_none());
        let usage = Capabilities {
            usage: true,
            ..Capabilities::NONE
        };
        assert!(matches!(shape(&usage, &completed), Some(Cow::Borrowed(_))));
    }

    /// Each capability is the field of its name: asking for it alone
    /// grants it and no other.
    #[test]
    fn capabilities_are_their_fields() {
        for cap in Capability::ALL {
            let asked: Capabilities =
                serde_json::from_value(serde_json::json!({ cap.name(): true })).unwrap();
            for other in Capability::ALL {
                assert_eq!(other.granted(&asked), other == cap, "{}", other.name());
            }
        }
    }

    #[test]
    fn extension_codes_need_their_capability() {
        let budgets = Capabilities {
            budgets: true,
            ..Capabilities::NONE
        };
        assert_eq!(code(&Capabilities::NONE, Some(BUDGET_EXCEEDED)), None);
        assert_eq!(code(&budgets, Some(BUDGET_EXCEEDED)), Some(BUDGET_EXCEEDED));
        assert_eq!(code(&budgets, None), None);
    }
}
