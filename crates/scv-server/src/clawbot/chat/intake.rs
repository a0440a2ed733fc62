//! What a message from a sender needs before it is a prompt: a chat of
//! their own (within the account's bounds), the bounds on those who are
//! not the owner, and `/status`.

use super::{Account, MAX_CHATS, MAX_STRANGER_QUEUED, MAX_STRANGER_TURNS};

impl Account {
    /// A first message from `user`: a chat of their own, within
    /// [`MAX_CHATS`] (the owner always gets in, one over the bound at
    /// most). Whether it was opened.
    pub(super) async fn join(&mut self, user: &str, text: &str, owner: bool) -> bool {
        // The owner always gets in (one over the bound at most).
        if self.chats.len() >= MAX_CHATS && !owner && !self.make_room() {
            self.reply(
                user,
                "SCV is busy with other conversations; try again later.",
            )
            .await;
            return false;
        }
        match self.open_chat(user, None).await {
            Ok(mut chat) => {
                chat.earlier = crate::sync::lock(&self.delivery).session_of(user).cloned();
                if chat.earlier.is_some() && text != "/new" {
                    self.reply(
                        user,
                        "(This is a new conversation. Send /resume to continue the earlier one.)",
                    )
                    .await;
                }
                self.chats.insert(user.to_string(), chat);
            }
            Err(_) => {
                self.reply(user, "SCV could not start a session; try again later.")
                    .await;
                return false;
            }
        }
        true
    }

    /// A prompt from `user`, within the bounds for those who are not the
    /// owner ([`MAX_STRANGER_TURNS`], [`MAX_STRANGER_QUEUED`]); `commands`:
    /// the workspace's custom commands may run.
    pub(super) async fn prompt(
        &mut self,
        user: &str,
        text: String,
        owner: bool,
        stranger_turns: usize,
        commands: bool,
    ) {
        let Some(chat) = self.chats.get_mut(user) else {
            return;
        };
        let idle = !chat.client.busy();
        if !owner && idle && stranger_turns >= MAX_STRANGER_TURNS {
            self.reply(user, "SCV is busy answering others; try again in a minute.")
                .await;
            return;
        }
        if !owner && !idle && chat.waiting() >= MAX_STRANGER_QUEUED {
            self.reply(
                user,
                "Your earlier messages are still waiting; send this again after the answer.",
            )
            .await;
            return;
        }
        let start = if commands && text.starts_with('/') {
            chat.client.submit_command(text)
        } else {
            chat.client.submit(text)
        };
        chat.send(&start).await;
    }

    /// `/status`: the model, where it works (the owner's business
    /// alone), whether a turn runs, what waits.
    pub(super) async fn status(&mut self, user: &str, owner: bool) {
        let model = self
            .shared
            .config()
            .provider
            .defs
            .default_def()
            .model
            .clone();
        let workspace = self.spec.workspace.display().to_string();
        let Some(chat) = self.chats.get(user) else {
            return;
        };
        let running = if chat.client.running_turn().is_some() {
            "running"
        } else {
            "idle"
        };
        // Where the daemon works is the owner's business.
        let place = if owner {
            format!(" · workspace {workspace}")
        } else {
            String::new()
        };
        let status = format!(
            "model {model}{place} · {running} · {} queued",
            chat.waiting()
        );
        self.reply(user, &status).await;
    }
}
