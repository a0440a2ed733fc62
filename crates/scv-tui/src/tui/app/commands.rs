//! Slash commands: what each does. The list, matching and completion are
//! [`crate::tui::slash`]'s.

use super::{App, Outgoing};
use crate::tui::overlays::{OpenOverlay, OverlayKind};
use crate::tui::slash::{self, SLASH_COMMANDS};
use crate::tui::transcript::ItemKind;
use scv_protocol::{ClientMessage, SessionClear, SessionConfigure, SessionPause};

impl App {
    pub(super) fn slash(&mut self, text: &str) -> Vec<Outgoing> {
        let session_id = self.session_id();
        let (command, arg) = match text.split_once(char::is_whitespace) {
            Some((command, arg)) => (command, arg.trim()),
            None => (text, ""),
        };
        match (command, session_id) {
            ("/quit", _) => {
                self.should_quit = true;
                vec![Outgoing::Quit]
            }
            ("/help", _) => {
                self.overlay = Some(OpenOverlay::new(OverlayKind::Help));
                Vec::new()
            }
            ("/approvals", _) => {
                self.overlay = Some(OpenOverlay::new(OverlayKind::Approvals));
                Vec::new()
            }
            ("/status", _) => {
                self.overlay = Some(OpenOverlay::new(OverlayKind::Status));
                vec![self.ask_daemon_status()]
            }
            ("/model", Some(session_id)) => self.switch_model(session_id, arg),
            ("/diff", _) => {
                self.show_diff();
                Vec::new()
            }
            ("/copy", _) => {
                self.copy_last_answer();
                Vec::new()
            }
            ("/clear", Some(session_id)) => {
                vec![self.send(ClientMessage::SessionClear(SessionClear { session_id }))]
            }
            ("/pause", Some(session_id)) => {
                self.queue.set_paused(true);
                vec![self.send(ClientMessage::SessionPause(SessionPause {
                    session_id,
                    paused: true,
                }))]
            }
            ("/resume", Some(session_id)) => {
                self.queue.set_paused(false);
                vec![self.send(ClientMessage::SessionPause(SessionPause {
                    session_id,
                    paused: false,
                }))]
            }
            (other, _) if SLASH_COMMANDS.iter().any(|(c, _)| *c == other) => {
                self.hint = Some("not connected".into());
                Vec::new()
            }
            (other, _) => {
                self.hint = Some(format!("unknown command {other}; try /help"));
                Vec::new()
            }
        }
    }

    /// `/model M` keeps the provider; `/model PROVIDER/M` switches both
    /// (a model id with a slash, as OpenRouter's, is a model alone when
    /// the session's model already has one). Only while idle: the server
    /// refuses a switch during a turn.
    fn switch_model(&mut self, session_id: String, arg: &str) -> Vec<Outgoing> {
        let current = self
            .session
            .as_ref()
            .map(|s| s.model.clone())
            .unwrap_or_default();
        if arg.is_empty() {
            self.hint = Some(format!(
                "usage: /model MODEL or /model PROVIDER/MODEL (now {})",
                self.model_label()
            ));
            return Vec::new();
        }
        if self.turn.is_some() {
            self.hint = Some("the model switches only while idle (Esc cancels the turn)".into());
            return Vec::new();
        }
        let (provider, model) = match arg.split_once('/') {
            Some((provider, model)) if !current.contains('/') && !provider.is_empty() => (
                Some(provider.to_string()),
                (!model.is_empty()).then(|| model.to_string()),
            ),
            _ => (None, Some(arg.to_string())),
        };
        vec![self.send(ClientMessage::SessionConfigure(SessionConfigure {
            session_id,
            provider,
            model,
        }))]
    }

    /// `/diff`: the workspace's `git diff` in an overlay; a hint when it
    /// is not a repository or nothing changed.
    fn show_diff(&mut self) {
        let Some(cwd) = self.session.as_ref().map(|s| s.cwd.clone()) else {
            self.hint = Some("not connected".into());
            return;
        };
        match crate::tui::diff::git_diff(std::path::Path::new(&cwd)) {
            Ok(lines) if lines.is_empty() => {
                self.hint = Some("no changes (git diff is empty)".into())
            }
            Ok(lines) => self.overlay = Some(OpenOverlay::new(OverlayKind::Diff(lines))),
            Err(why) => self.hint = Some(format!("/diff: {why}")),
        }
    }

    /// `/copy`: the last answer goes to the clipboard (OSC 52, written by
    /// the event loop: see [`App::take_clipboard`]).
    fn copy_last_answer(&mut self) {
        let last = self
            .transcript
            .items()
            .iter()
            .rev()
            .find_map(|item| match &item.kind {
                ItemKind::Assistant { text, .. } if !text.is_empty() => {
                    Some(scv_client::text::for_clipboard(text).into_owned())
                }
                _ => None,
            });
        match last {
            Some(text) => {
                self.hint = Some(format!(
                    "copied the last answer ({} characters) through the terminal (OSC 52)",
                    text.chars().count()
                ));
                self.clipboard = Some(text);
            }
            None => self.hint = Some("no answer to copy yet".into()),
        }
    }

    /// Text `/copy` wants on the clipboard.
    pub fn take_clipboard(&mut self) -> Option<String> {
        self.clipboard.take()
    }

    /// Commands matching what is typed after `/` (the completion popup).
    pub fn slash_matches(&self) -> Vec<(&'static str, &'static str)> {
        slash::matches(self.input.text())
    }

    /// Tab on a partial command completes as far as it is unambiguous.
    pub(super) fn complete_slash(&mut self) {
        if let Some(completed) = slash::complete(self.input.text()) {
            self.input.set(&completed);
        }
    }
}
