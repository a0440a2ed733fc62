//! Trimming and compaction on random histories (proptest): a tool call
//! always keeps its result, the latest prompt always survives, and the
//! bound always holds; and the renderings a history keeps are always its
//! messages' own, whatever changed it.

use super::compaction::{apply, plan};
use super::trim::{trim, Trimmed};
use super::History;
use crate::model::{
    share, AssistantMessage, Message, Parts, ProviderData, RenderKey, ToolCall, Wire,
};
use proptest::prelude::*;

/// One exchange as sessions record it: a prompt, or an assistant message
/// with its tool results right after it.
#[derive(Debug, Clone)]
enum Group {
    User(usize),
    Assistant { text: usize, results: Vec<usize> },
}

fn group() -> impl Strategy<Value = Group> {
    prop_oneof![
        1 => (0usize..400).prop_map(Group::User),
        2 => (0usize..300, prop::collection::vec(0usize..600, 0..4))
            .prop_map(|(text, results)| Group::Assistant { text, results }),
    ]
}

fn messages(groups: &[Group]) -> Vec<Message> {
    let mut out = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        match group {
            Group::User(n) => out.push(Message::user(format!("{g}:{}", "u".repeat(*n)))),
            Group::Assistant { text, results } => {
                let id = |k: usize| format!("call-{g}-{k}");
                out.push(Message::Assistant(AssistantMessage {
                    text: (*text > 0).then(|| "a".repeat(*text).into()),
                    tool_calls: (0..results.len())
                        .map(|k| ToolCall {
                            id: id(k),
                            name: "bash".into(),
                            arguments: "{}".into(),
                            provider_data: None,
                        })
                        .collect(),
                    ..Default::default()
                }));
                for (k, n) in results.iter().enumerate() {
                    out.push(Message::Tool {
                        call_id: id(k),
                        content: "r".repeat(*n).into(),
                        success: true,
                    });
                }
            }
        }
    }
    out
}

/// Every tool result follows its own call (in the assistant message before
/// the results), and every call is followed by its result.
fn calls_keep_results(messages: &[Message]) -> Result<(), String> {
    let mut open: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        match message {
            Message::Tool { call_id, .. } => match open.iter().position(|id| id == call_id) {
                Some(at) => {
                    open.remove(at);
                }
                None => return Err(format!("result {call_id} at {index} without its call")),
            },
            other => {
                if let Some(id) = open.first() {
                    return Err(format!("call {id} lost its result before {index}"));
                }
                if let Message::Assistant(assistant) = other {
                    open = assistant.tool_calls.iter().map(|c| c.id.clone()).collect();
                }
            }
        }
    }
    match open.first() {
        Some(id) => Err(format!("call {id} lost its result at the end")),
        None => Ok(()),
    }
}

fn weight(messages: &[Message]) -> usize {
    messages.iter().map(Message::weight).sum()
}

fn latest_user(messages: &[Message]) -> Option<Message> {
    messages.iter().rev().find(|m| m.is_user()).cloned()
}

/// What may happen to a session's history between two requests.
#[derive(Debug, Clone)]
enum Change {
    Push(Vec<Group>),
    DropFront(usize),
    SplitOff(usize),
    /// Compaction: the messages from this one on, after a summary.
    Replace(usize),
    /// A switch of provider (its data kept only for `Wire`).
    Switch(u8),
    Clear,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        4 => prop::collection::vec(group(), 1..4).prop_map(Change::Push),
        1 => (0usize..6).prop_map(Change::DropFront),
        1 => (0usize..20).prop_map(Change::SplitOff),
        1 => (0usize..20).prop_map(Change::Replace),
        1 => (0u8..3).prop_map(Change::Switch),
        1 => Just(Change::Clear),
    ]
}

fn wire(n: u8) -> Wire {
    [Wire::Chat, Wire::Responses, Wire::Anthropic][usize::from(n % 3)]
}

/// A rendering that shows which message and wire it is of, sharing the
/// message's texts as the provider layer's renderings do.
fn render(key: RenderKey) -> impl Fn(&Message) -> Parts {
    move |m| {
        let rendering = format!("{:?}:{}", key.wire, serde_json::to_string(m).unwrap());
        share(rendering.into_bytes(), m.texts())
    }
}

/// Each rendering's bytes, whatever parts it is held in.
fn bytes_of(renderings: &[Parts]) -> Vec<Vec<u8>> {
    renderings
        .iter()
        .map(|parts| {
            parts
                .as_slice()
                .iter()
                .flat_map(|p| p.iter().copied())
                .collect()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn kept_renderings_are_always_the_messages_own(
        changes in prop::collection::vec(change(), 1..40),
    ) {
        let mut history = History::default();
        let mut key = RenderKey { wire: Wire::Chat, reasoning_replay: false };
        let mut n = 0;
        for change in changes {
            match change {
                Change::Push(groups) => {
                    for mut message in messages(&groups) {
                        // Some carry a wire's data, which a switch drops.
                        if let Message::Assistant(a) = &mut message {
                            n += 1;
                            a.provider_data = Some(ProviderData {
                                wire: wire(n),
                                value: serde_json::json!([n]),
                            });
                        }
                        history.push(message);
                    }
                }
                Change::DropFront(count) => history.drop_front(count),
                Change::SplitOff(index) => {
                    history.split_off(index.min(history.messages().len()));
                }
                Change::Replace(from) => {
                    let from = from.min(history.messages().len());
                    let mut kept = vec![Message::user("summary")];
                    kept.extend_from_slice(&history.messages()[from..]);
                    history.replace(kept);
                }
                Change::Switch(w) => {
                    key.wire = wire(w);
                    history.keep_provider_data_of(key.wire);
                }
                Change::Clear => history.clear(),
            }
            let kept = history.rendered().of(key, history.messages(), render(key));
            let fresh: Vec<Parts> = history.messages().iter().map(render(key)).collect();
            prop_assert_eq!(bytes_of(&kept), bytes_of(&fresh));
        }
    }

    #[test]
    fn trimming_keeps_calls_the_prompt_and_the_bound(
        groups in prop::collection::vec(group(), 1..30),
        max_bytes in 0usize..8000,
    ) {
        let original = messages(&groups);
        prop_assume!(latest_user(&original).is_some());
        // The current turn starts at the latest prompt.
        let protect_from = original.iter().rposition(Message::is_user).unwrap();
        let mut history = History::default();
        for message in original.clone() {
            history.push(message);
        }
        let before = history.bytes();
        match trim(&mut history, max_bytes, protect_from) {
            Trimmed::Fits => {
                prop_assert!(before <= max_bytes);
                prop_assert_eq!(history.messages(), &original[..]);
            }
            Trimmed::Removed(n) => {
                prop_assert!(history.bytes() <= max_bytes, "over the bound: {} > {max_bytes}", history.bytes());
                prop_assert_eq!(history.bytes(), weight(history.messages()));
                prop_assert_eq!(history.messages(), &original[n..]);
                prop_assert!(n <= protect_from);
            }
            Trimmed::TooLarge => {
                prop_assert!(weight(&original[protect_from..]) > max_bytes);
                prop_assert_eq!(history.messages(), &original[..]);
            }
        }
        prop_assert_eq!(calls_keep_results(history.messages()), Ok(()));
        prop_assert_eq!(latest_user(history.messages()), latest_user(&original));
    }

    #[test]
    fn compaction_keeps_calls_the_prompt_and_the_bound(
        groups in prop::collection::vec(group(), 1..30),
        keep_bytes in 0usize..6000,
    ) {
        let original = messages(&groups);
        let Some(cut) = plan(&original, keep_bytes) else {
            return Ok(());
        };
        prop_assert!(cut > 0 && cut < original.len());
        // The kept part fits, or no later cut was possible.
        let later_cut = original[cut + 1..]
            .iter()
            .any(|m| !matches!(m, Message::Tool { .. }));
        prop_assert!(
            weight(&original[cut..]) <= keep_bytes || !later_cut,
            "kept {} bytes > {keep_bytes} though a later cut existed",
            weight(&original[cut..])
        );
        let (kept, removed) = apply(original.clone(), cut, "summary".into());
        prop_assert_eq!(calls_keep_results(&kept), Ok(()));
        prop_assert_eq!(kept.len(), original.len() - removed + 1);
        prop_assert!(kept[0].is_user(), "the summary comes first");
        if let Some(user) = latest_user(&original) {
            prop_assert!(kept.contains(&user), "the latest prompt was summarized away");
        }
    }
}
