//! The canonical history of a session (without the system prompt, which is
//! rebuilt for every request), its size in bytes, and the calibration of
//! token estimates against what the provider reported.

use crate::model::{Image, Message, Rendered, Wire};

/// Tokens per byte before any calibration (about four bytes per token).
const DEFAULT_TOKENS_PER_BYTE: f64 = 0.25;
/// Calibrations outside this range are not believed (real tokenizers give
/// 1–8 bytes per token; a provider reporting otherwise is not counting).
const PLAUSIBLE_TOKENS_PER_BYTE: std::ops::RangeInclusive<f64> = 0.1..=1.0;

#[derive(Debug, Clone)]
pub(crate) struct History {
    messages: Vec<Message>,
    /// The messages as the session's wire renders them, kept in step
    /// with `messages` by every change below.
    rendered: Rendered,
    bytes: usize,
    tokens_per_byte: f64,
    since: Since,
}

/// What became of the history since [`History::mark`] (the start of a
/// turn), so the journal writes the change, not the whole history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Since {
    /// Messages at the mark.
    pub marked: usize,
    /// Of those, dropped from the front (trimming).
    pub dropped: usize,
    /// Of those, still in place after the dropped ones; the messages after
    /// them are new.
    pub kept: usize,
    /// Changed in a way `dropped` / `kept` cannot say (compaction).
    pub rewritten: bool,
}

impl Default for History {
    fn default() -> Self {
        History {
            messages: Vec::new(),
            rendered: Rendered::default(),
            bytes: 0,
            tokens_per_byte: DEFAULT_TOKENS_PER_BYTE,
            since: Since::default(),
        }
    }
}

impl History {
    /// A history of `messages` (a resumed session's), with its calibration.
    pub(crate) fn restore(messages: Vec<Message>, tokens_per_byte: Option<f64>) -> History {
        let mut history = History::default();
        history.replace(messages);
        if let Some(ratio) = tokens_per_byte.filter(|r| PLAUSIBLE_TOKENS_PER_BYTE.contains(r)) {
            history.tokens_per_byte = ratio;
        }
        history.mark();
        history
    }

    /// Starts watching what changes (a turn begins).
    pub(crate) fn mark(&mut self) {
        self.since = Since {
            marked: self.messages.len(),
            dropped: 0,
            kept: self.messages.len(),
            rewritten: false,
        };
    }

    /// What changed since [`History::mark`].
    pub(crate) fn since(&self) -> Since {
        self.since
    }

    /// The token estimate's calibration (journaled with each turn).
    pub(crate) fn tokens_per_byte(&self) -> f64 {
        self.tokens_per_byte
    }

    pub(crate) fn push(&mut self, mut message: Message) {
        message.shrink_to_fit();
        self.bytes += message.weight();
        self.messages.push(message);
    }

    pub(crate) fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages' renderings kept for the next request.
    pub(crate) fn rendered(&self) -> &Rendered {
        &self.rendered
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.messages.len()
    }

    /// Drops messages and compaction metadata (the calibration included).
    pub(crate) fn clear(&mut self) {
        *self = History::emptied();
    }

    /// An empty history that replaced another (`session.clear`, a turn
    /// that lost the history it held): the journal writes it whole.
    pub(crate) fn emptied() -> History {
        let mut history = History::default();
        history.since.rewritten = true;
        history
    }

    /// Replaces the messages wholesale (compaction).
    pub(crate) fn replace(&mut self, messages: Vec<Message>) {
        self.bytes = messages.iter().map(Message::weight).sum();
        self.messages = messages;
        self.rendered.clear();
        self.since.rewritten = true;
    }

    /// Drops the oldest `count` messages (trimming).
    pub(crate) fn drop_front(&mut self, count: usize) {
        let count = count.min(self.messages.len());
        self.bytes -= self.messages[..count]
            .iter()
            .map(Message::weight)
            .sum::<usize>();
        self.messages.drain(..count);
        self.rendered.drop_front(count);
        if count <= self.since.kept {
            self.since.kept -= count;
            self.since.dropped += count;
        } else {
            self.since.rewritten = true;
        }
    }

    /// Removes and returns the messages from `index` on.
    pub(crate) fn split_off(&mut self, index: usize) -> Vec<Message> {
        let tail = self.messages.split_off(index);
        self.rendered.truncate(index);
        self.bytes -= tail.iter().map(Message::weight).sum::<usize>();
        self.since.kept = self.since.kept.min(index);
        tail
    }

    /// Estimated tokens for a request of `bytes` bytes.
    pub(crate) fn estimate_tokens(&self, bytes: usize) -> u64 {
        (bytes as f64 * self.tokens_per_byte).ceil() as u64
    }

    /// Bytes that make about `tokens` tokens.
    pub(crate) fn bytes_for_tokens(&self, tokens: u64) -> usize {
        (tokens as f64 / self.tokens_per_byte) as usize
    }

    /// Learns from the provider: a request of `bytes` took `tokens`.
    pub(crate) fn calibrate(&mut self, bytes: usize, tokens: u64) {
        if bytes == 0 || tokens == 0 {
            return;
        }
        let ratio = tokens as f64 / bytes as f64;
        if PLAUSIBLE_TOKENS_PER_BYTE.contains(&ratio) {
            self.tokens_per_byte = ratio;
        }
    }

    /// Makes room for `coming` images: the history keeps the bytes of at
    /// most `MAX_SESSION_IMAGES` images and `MAX_SESSION_IMAGE_BYTES`;
    /// older ones become a line of text saying what was there (the
    /// journal writes the history anew).
    pub(crate) fn bound_images(&mut self, coming: &[Image]) {
        use scv_protocol::images::{MAX_SESSION_IMAGES, MAX_SESSION_IMAGE_BYTES};
        let held = self.messages.iter().flat_map(|m| match m {
            Message::User { images, .. } => images.as_slice(),
            _ => &[],
        });
        let (mut count, mut bytes) = held
            .chain(coming)
            .fold((0, 0), |(n, b), i| (n + 1, b + i.decoded_len()));
        if count <= MAX_SESSION_IMAGES && bytes <= MAX_SESSION_IMAGE_BYTES {
            return;
        }
        for message in &mut self.messages {
            let Message::User { content, images } = message else {
                continue;
            };
            let mut text = content.as_str().into_owned();
            let mut dropped = 0;
            for image in images.iter() {
                if count <= MAX_SESSION_IMAGES && bytes <= MAX_SESSION_IMAGE_BYTES {
                    break;
                }
                (count, bytes) = (count - 1, bytes - image.decoded_len());
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&image.dropped_note());
                dropped += 1;
            }
            if dropped > 0 {
                images.drain(..dropped);
                *content = text.into();
            }
        }
        self.bytes = self.messages.iter().map(Message::weight).sum();
        self.since.rewritten = true;
        self.rendered.clear();
    }

    /// Drops provider data that came from any wire but `wire` (after the
    /// session changed provider): it must never reach another API. True
    /// when something was dropped.
    pub(crate) fn keep_provider_data_of(&mut self, wire: Wire) -> bool {
        let mut dropped = false;
        for message in &mut self.messages {
            if let Message::Assistant(assistant) = message {
                if assistant
                    .provider_data
                    .as_ref()
                    .is_some_and(|d| d.wire != wire)
                {
                    assistant.provider_data = None;
                    dropped = true;
                }
                for call in &mut assistant.tool_calls {
                    if call.provider_data.as_ref().is_some_and(|d| d.wire != wire) {
                        call.provider_data = None;
                        dropped = true;
                    }
                }
            }
        }
        if dropped {
            self.since.rewritten = true;
            self.rendered.clear();
        }
        dropped
    }

    /// Gives every tool call of the last assistant message a result, so the
    /// next request is well-formed after a turn stopped between a call and
    /// its result (providers reject a call without its result).
    pub(crate) fn close_open_tool_calls(&mut self, note: &str) {
        let Some(last_assistant) = self
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant(_)))
        else {
            return;
        };
        let Message::Assistant(assistant) = &self.messages[last_assistant] else {
            return;
        };
        let answered: Vec<&str> = self.messages[last_assistant + 1..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect();
        let missing: Vec<String> = assistant
            .tool_calls
            .iter()
            .filter(|c| !answered.contains(&c.id.as_str()))
            .map(|c| c.id.clone())
            .collect();
        for id in missing {
            self.push(Message::Tool {
                call_id: id,
                content: note.into(),
                success: false,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{AssistantMessage, ToolCall};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: "{}".into(),
            provider_data: None,
        }
    }

    #[test]
    fn open_tool_calls_get_a_result() {
        let mut history = History::default();
        history.push(Message::user("hi"));
        history.push(Message::Assistant(AssistantMessage {
            tool_calls: vec![call("a"), call("b")],
            ..Default::default()
        }));
        history.push(Message::Tool {
            call_id: "a".into(),
            content: "ok".into(),
            success: true,
        });
        history.close_open_tool_calls("cancelled");
        assert_eq!(history.len(), 4);
        assert_eq!(
            history.messages()[3],
            Message::Tool {
                call_id: "b".into(),
                content: "cancelled".into(),
                success: false,
            }
        );
        let bytes = history.bytes();
        history.close_open_tool_calls("cancelled");
        assert_eq!((history.len(), history.bytes()), (4, bytes));
    }

    #[test]
    fn calibration_ignores_implausible_reports() {
        let mut history = History::default();
        assert_eq!(history.estimate_tokens(4000), 1000);
        history.calibrate(4000, 1);
        assert_eq!(history.estimate_tokens(4000), 1000);
        history.calibrate(4000, 2000);
        assert_eq!(history.estimate_tokens(4000), 2000);
        history.clear();
        assert_eq!(history.estimate_tokens(4000), 1000);
    }

    /// What the journal writes at a turn's end follows from `since`:
    /// pushes are new messages, trimming drops from the front, a cut of
    /// the turn's tail shortens what is kept, compaction rewrites.
    #[test]
    fn since_says_what_changed_after_the_mark() {
        let mut history = History::default();
        for n in 0..4 {
            history.push(Message::user(format!("m{n}")));
        }
        history.mark();
        history.push(Message::user("new"));
        assert_eq!(
            history.since(),
            Since {
                marked: 4,
                dropped: 0,
                kept: 4,
                rewritten: false
            }
        );
        history.drop_front(2);
        assert_eq!(
            history.since(),
            Since {
                marked: 4,
                dropped: 2,
                kept: 2,
                rewritten: false
            }
        );
        assert_eq!(history.len(), 3);
        history.split_off(1);
        assert_eq!(history.since().kept, 1);
        history.replace(vec![Message::user("summary")]);
        assert!(history.since().rewritten);
        history.mark();
        assert!(!history.since().rewritten);
        assert!(History::emptied().since().rewritten);
    }

    #[test]
    fn images_past_the_session_bounds_give_way_oldest_first() {
        use crate::model::Image;
        let image = |mib: usize| Image {
            mime_type: "image/png".into(),
            data: crate::model::Text::new(&"A".repeat(mib * 1024 * 1024 / 3 * 4)),
        };
        let mut history = History::default();
        history.push(Message::user_with_images("first", vec![image(17)]));
        history.mark();
        let coming = vec![image(16)];
        history.bound_images(&coming);
        history.push(Message::user_with_images("second", coming));
        let Message::User { content, images } = &history.messages()[0] else {
            panic!()
        };
        assert!(images.is_empty(), "33 MiB is over the 32 MiB bound");
        assert!(
            content
                .as_str()
                .starts_with("first\n[an image (image/png, 17408 KiB) was here"),
            "{content}"
        );
        assert!(history.since().rewritten, "the journal writes it anew");
        let Message::User { images, .. } = &history.messages()[1] else {
            panic!()
        };
        assert_eq!(images.len(), 1);
    }
}
