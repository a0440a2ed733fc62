//! `/attach ID` in a chat: the owner (with `remote_tools = "owner"`)
//! follows a live detached session (one `scv --bg` started, or one a
//! closed terminal left running) — its waiting approvals are asked in the
//! chat, its answers come here, and messages become its prompts. The
//! session goes on in the daemon after the chat leaves it.

use super::{Account, Chat};
use scv_client::session::SessionClient;
use scv_client::Connection;
use scv_protocol::{Capabilities, EventBody, LiveState};
use std::time::Duration;

impl Account {
    /// `/attach ID`, and `/new` in a chat that follows a live session
    /// (it leaves the session running); whether `text` was one of them.
    pub(super) async fn live_command(&mut self, user: &str, text: &str) -> bool {
        if let Some(id) = text.strip_prefix("/attach ") {
            self.attach(user, id.trim()).await;
            return true;
        }
        if text != "/new" || !self.chats.get(user).is_some_and(|c| c.attached) {
            return false;
        }
        if let Some(mut chat) = self.chats.remove(user) {
            chat.stop_typing();
        }
        self.reply(
            user,
            "Left the live session; it goes on in SCV. Send a message to start a new conversation.",
        )
        .await;
        true
    }

    async fn attach(&mut self, user: &str, id: &str) {
        if !self.tools_for(user) {
            self.reply(
                user,
                "Only the owner, with tools allowed for this account, can follow a live session.",
            )
            .await;
            return;
        }
        if self.chats.get(user).is_some_and(|chat| chat.busy()) {
            self.reply(user, "Wait for the answer (or /cancel it), then /attach.")
                .await;
            return;
        }
        let client_side = self
            .connector
            .connect(&self.tasks, self.token.child_token());
        let (read, write) = tokio::io::split(client_side);
        let mut conn = Connection::new(read, write);
        let capabilities = Capabilities {
            detach: true,
            sessions: true,
            usage: true,
            checkpoints: true,
            subagents: true,
            elicitation: true,
            ..Default::default()
        };
        let attached = tokio::time::timeout(Duration::from_secs(10), async {
            conn.initialize(None, Some(capabilities)).await?;
            conn.attach_session(id).await
        })
        .await;
        let events = match attached {
            Ok(Ok(events)) => events,
            Ok(Err(err)) => {
                let why = scv_client::text::visible(&format!("{err:#}")).into_owned();
                self.reply(user, &format!("Cannot attach: {why}")).await;
                return;
            }
            Err(_) => {
                self.reply(user, "Cannot attach: SCV did not answer in time.")
                    .await;
                return;
            }
        };
        let Some((session_id, state)) = events.first().and_then(|e| match &e.body {
            EventBody::SessionAttached(a) => Some((e.session_id.clone()?, a.state)),
            _ => None,
        }) else {
            return;
        };
        // This chat's own session goes (stored if it ran a turn).
        if let Some(mut chat) = self.chats.remove(user) {
            chat.stop_typing();
        }
        let writer = self.forward(user, conn);
        let mut client = SessionClient::new("clawbot-");
        client.set_session(session_id.clone());
        for event in &events {
            // The attach's answer: the session, its queue, its past.
            client.apply(event);
        }
        let mut chat = Chat::new(user, writer, client, true);
        chat.attached = true;
        self.chats.insert(user.to_string(), chat);
        let doing = match state {
            LiveState::Idle => "it is idle; your messages go to it",
            LiveState::Running => "a turn is running; its answer comes here",
            LiveState::AwaitingApproval => "it waits for an approval, asked next",
        };
        let short = session_id.get(..8).unwrap_or(&session_id);
        self.reply(
            user,
            &format!("Following live session {short}: {doing}. /new leaves it running."),
        )
        .await;
    }
}
