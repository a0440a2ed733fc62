//! Each history message as the session's wire renders it, kept with the
//! history so a long session encodes each message once, not at every
//! request: a 16 MiB history took ~13 ms to encode before each request of
//! its thousandth turn. The provider layer fills it; the history keeps it
//! in step with its messages (trimmed with them, dropped when they are
//! rewritten); a request's body is then the kept renderings, sent from
//! where they lie.

use super::{Message, Parts, Wire};
use std::collections::VecDeque;
use std::sync::Mutex;

/// What a message's rendering depends on besides the message: a session
/// that switches wire or option renders its messages anew.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RenderKey {
    pub wire: Wire,
    /// Chat: `reasoning_content` goes back on tool-calling messages.
    pub reasoning_replay: bool,
}

/// The renderings of a history's first messages, in order: entry `i` is
/// message `i`'s, for every `i` below their count.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    state: Mutex<State>,
}

#[derive(Debug, Default, Clone)]
struct State {
    key: Option<RenderKey>,
    parts: VecDeque<Parts>,
}

impl State {
    fn fill(
        &mut self,
        key: RenderKey,
        messages: &[Message],
        mut render: impl FnMut(&Message) -> Parts,
    ) {
        if self.key != Some(key) {
            self.parts.clear();
            self.key = Some(key);
        }
        self.parts.truncate(messages.len());
        let kept = self.parts.len();
        for message in &messages[kept..] {
            self.parts.push_back(render(message));
        }
    }
}

impl Clone for Rendered {
    fn clone(&self) -> Self {
        Rendered {
            state: Mutex::new(self.lock().clone()),
        }
    }
}

impl Rendered {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// The renderings of `messages` (the whole history, from its first)
    /// under `key`: those kept, and the rest rendered by `render` and
    /// kept for the next request.
    pub(crate) fn of(
        &self,
        key: RenderKey,
        messages: &[Message],
        render: impl FnMut(&Message) -> Parts,
    ) -> Vec<Parts> {
        let mut state = self.lock();
        state.fill(key, messages, render);
        state.parts.iter().cloned().collect()
    }

    /// Renders and keeps what of `messages` is not kept under `key` yet
    /// (ahead of a request: [`Rendered::of`] then finds it all).
    pub(crate) fn fill(
        &self,
        key: RenderKey,
        messages: &[Message],
        render: impl FnMut(&Message) -> Parts,
    ) {
        self.lock().fill(key, messages, render);
    }

    /// The first `count` messages were dropped.
    pub(crate) fn drop_front(&mut self, count: usize) {
        let parts = &mut crate::sync::get_mut(&mut self.state).parts;
        parts.drain(..count.min(parts.len()));
    }

    /// The messages from `index` on were removed.
    pub(crate) fn truncate(&mut self, index: usize) {
        crate::sync::get_mut(&mut self.state).parts.truncate(index);
    }

    /// The messages were rewritten: nothing kept is theirs.
    pub(crate) fn clear(&mut self) {
        *crate::sync::get_mut(&mut self.state) = State::default();
    }

    /// Bytes kept.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.lock().parts.iter().map(Parts::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT: RenderKey = RenderKey {
        wire: Wire::Chat,
        reasoning_replay: false,
    };

    fn render_counting(count: &mut usize) -> impl FnMut(&Message) -> Parts + '_ {
        move |m| {
            *count += 1;
            match m {
                Message::User { content, .. } => Parts::from(content.as_str().as_bytes().to_vec()),
                _ => Parts::default(),
            }
        }
    }

    fn texts(parts: Vec<Parts>) -> Vec<String> {
        parts
            .iter()
            .map(|p| {
                String::from_utf8(p.as_slice().iter().flat_map(|b| b.to_vec()).collect()).unwrap()
            })
            .collect()
    }

    #[test]
    fn each_message_is_rendered_once_and_kept_in_step() {
        let mut rendered = Rendered::default();
        let mut history: Vec<Message> = (0..4).map(|i| Message::user(format!("m{i}"))).collect();
        let mut count = 0;
        let parts = rendered.of(CHAT, &history, render_counting(&mut count));
        assert_eq!(texts(parts), ["m0", "m1", "m2", "m3"]);
        history.push(Message::user("m4"));
        rendered.of(CHAT, &history, render_counting(&mut count));
        assert_eq!(count, 5, "only the new message was rendered");
        history.drain(..2);
        rendered.drop_front(2);
        history.truncate(2);
        rendered.truncate(2);
        let parts = rendered.of(CHAT, &history, render_counting(&mut count));
        assert_eq!(texts(parts), ["m2", "m3"]);
        assert_eq!(count, 5);
        // Another wire renders anew.
        let responses = RenderKey {
            wire: Wire::Responses,
            ..CHAT
        };
        rendered.of(responses, &history, render_counting(&mut count));
        assert_eq!(count, 7);
        rendered.clear();
        rendered.fill(responses, &history, render_counting(&mut count));
        assert_eq!(count, 9);
        rendered.of(responses, &history, render_counting(&mut count));
        assert_eq!(count, 9, "filled ahead: nothing rendered again");
        assert_eq!(rendered.bytes(), 4);
    }
}
