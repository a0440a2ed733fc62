//! One account's chat loop: every direct sender gets an SCV session
//! (opened through the daemon's connector), prompts become turns, final
//! answers go back in chunks, the owner approves tool calls in chat. Every
//! task it starts runs on the instance's tracker and ends with its token.

use super::subagents;

mod elicit;
mod intake;
mod live;
use super::{poll, AccountSpec, Status};
use crate::handles::Connector;
use crate::server::Shared;
use scv_client::session::{Answer, Outcome, Request, SessionClient, Stage, ToolChange, Update};
use scv_client::{Connection, Open};
use scv_ilink::types::WireMessage;
use scv_ilink::{AccountStore, ChatSession, Delivery, IlinkClient};
use scv_protocol::{ClientMessage, ComponentState, Event, RemoteTools, SessionClear};
use scv_protocol::{SessionResume, SessionStart};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Replies are cut into chunks under WeChat's ~2000-character limit.
pub(super) const CHUNK_CHARS: usize = 1900;
/// Senders with an open session, per account. Past it, the least recently
/// active idle stranger's session is closed to make room; when every one is
/// busy, the newcomer is asked to come back later.
pub(super) const MAX_CHATS: usize = 64;
/// Turns running (or about to) at once for strangers, per account: each is
/// a paid provider request nobody trusted.
pub(super) const MAX_STRANGER_TURNS: usize = 4;
/// Prompts a stranger may have waiting behind their running turn.
pub(super) const MAX_STRANGER_QUEUED: usize = 2;
/// The longest tool call that can be approved in chat: it must fit, whole,
/// in one message with the question.
pub(super) const MAX_APPROVAL_CHARS: usize = 1600;
/// What an image-only message is answered: the chat's image items cannot
/// be fetched (the iLink notes name the item type but not where its bytes
/// are nor how they are encrypted), so no image reaches the model.
const IMAGES_NOT_FETCHED: &str =
    "Images are not supported in this chat yet: SCV cannot fetch them from WeChat. Describe it in text, or send it from the terminal (`scv exec --image FILE`).";

/// What a message without text is answered.
fn unreadable(message: &WireMessage) -> &'static str {
    match message.has_images() {
        true => IMAGES_NOT_FETCHED,
        false => "Only text messages are understood here.",
    }
}

/// Said before a message's text goes on without its image.
const IMAGE_LEFT_OUT: &str =
    "(Your image was left out: SCV cannot fetch images from this chat yet. Your text was sent without it.)";

const TYPING_EVERY: Duration = Duration::from_secs(5);
const HELP: &str = "Send a message to ask SCV. Commands: /new starts a new conversation, /resume continues your earlier one (after SCV restarted, a new conversation starts unless you send it), /undo puts the files and the conversation back to before the last turn that changed files (the owner's), /cancel stops the running turn, /status shows model, workspace and queue, /help shows this. The owner can follow a live session with /attach ID (`scv agents` lists them). The owner can also run the workspace's custom commands and skills as /NAME.";

struct Chat {
    user_id: String,
    writer: WriteHalf<DuplexStream>,
    /// The session's prompts, their stages, cancels and approvals.
    client: SessionClient,
    answer: String,
    /// `/new` came while prompts were in flight: clear once they ended.
    clear_after_turn: bool,
    /// Approvals shown in the chat, oldest first, with their deadlines.
    approvals: VecDeque<(String, Instant)>,
    /// MCP servers' questions, the one asked first (`chat/elicit.rs`).
    questions: VecDeque<scv_protocol::ElicitationRequested>,
    typing: Option<CancellationToken>,
    /// When this sender last sent something (for making room).
    last_active: Instant,
    /// The session ran a turn (or was resumed), so it is stored and is
    /// the one `/resume` continues next time.
    stored: bool,
    /// The sender's stored session this chat did not continue: `/resume`
    /// brings it back.
    earlier: Option<ChatSession>,
    /// The session was started with tools.
    tools: bool,
    /// Prompts a resumed session had waiting (they did not run).
    unsent: usize,
    /// An `/undo` in flight: the request id it waits on, and `force`.
    undo: Option<(String, bool)>,
    /// A live session this chat follows (`/attach`): `/new` leaves it
    /// running rather than clearing it.
    attached: bool,
}

impl Chat {
    /// A chat of `user`'s on `client`'s session, written to on `writer`.
    fn new(
        user: &str,
        writer: WriteHalf<DuplexStream>,
        client: SessionClient,
        tools: bool,
    ) -> Chat {
        Chat {
            user_id: user.to_string(),
            writer,
            client,
            answer: String::new(),
            clear_after_turn: false,
            approvals: VecDeque::new(),
            questions: VecDeque::new(),
            typing: None,
            last_active: Instant::now(),
            stored: false,
            earlier: None,
            tools,
            unsent: 0,
            undo: None,
            attached: false,
        }
    }

    async fn send(&mut self, request: &Request) {
        if let Ok(line) =
            scv_client::frame_line(request.request_id.clone(), request.message.clone())
        {
            let _ = self.writer.write_all(&line).await;
        }
    }

    async fn send_all(&mut self, requests: &[Request]) {
        for request in requests {
            self.send(request).await;
        }
    }

    /// A turn is running or about to start, or an approval waits.
    fn busy(&self) -> bool {
        self.client.busy() || !self.approvals.is_empty()
    }

    /// Prompts waiting behind the running one.
    fn waiting(&self) -> usize {
        self.client
            .prompts()
            .iter()
            .filter(|p| !matches!(p.stage, Stage::Running { .. }))
            .count()
            .saturating_sub(usize::from(self.client.running_turn().is_none()))
    }

    /// `/new` waited for the prompts in flight; now none is left, the
    /// conversation is cleared.
    async fn clear_if_due(&mut self) -> bool {
        if !self.clear_after_turn || self.client.busy() || !self.client.prompts().is_empty() {
            return false;
        }
        self.clear_after_turn = false;
        let session_id = self.client.session_id().unwrap_or_default().to_string();
        let clear = self
            .client
            .request(ClientMessage::SessionClear(SessionClear { session_id }));
        self.send(&clear).await;
        true
    }

    /// Whether `update` answers the request an `/undo` waits on.
    fn undo_answer(&self, update: &Update) -> bool {
        let request_id = match update {
            Update::Answered { request_id, .. } | Update::Failed { request_id, .. } => request_id,
            _ => return false,
        };
        self.undo
            .as_ref()
            .is_some_and(|(rid, _)| request_id.as_deref() == Some(rid.as_str()))
    }

    /// The next step of an `/undo` on the answer to its request: the
    /// newest checkpoint restored (files and conversation), then what
    /// changed said; a refusal said as it is.
    async fn undo_step(&mut self, update: Update) -> Option<String> {
        let (_, force) = self.undo.take()?;
        match update {
            Update::Answered {
                answer:
                    Answer::Checkpoints {
                        checkpoints,
                        missed,
                    },
                ..
            } => {
                if let Some(missed) = missed {
                    return Some(format!(
                        "Not undone: the last turn that changed files ran without an undo point ({}); its changes stay as they are.",
                        missed.message
                    ));
                }
                let Some(last) = checkpoints.last() else {
                    return Some("Nothing to undo: no turn of this conversation changed files.".into());
                };
                let session_id = self.client.session_id().unwrap_or_default().to_string();
                let restore = self.client.request(ClientMessage::CheckpointRestore(
                    scv_protocol::CheckpointRestore {
                        session_id,
                        checkpoint_id: last.checkpoint_id.clone(),
                        files: true,
                        conversation: true,
                        force,
                    },
                ));
                self.undo = Some((restore.request_id.clone(), force));
                self.send(&restore).await;
                None
            }
            Update::Answered {
                answer: Answer::Restored { files, .. },
                ..
            } => {
                let shown: Vec<&str> = files
                    .iter()
                    .take(10)
                    .map(|f| f.path.as_str())
                    .collect();
                let more = files.len().saturating_sub(shown.len());
                Some(format!(
                    "Undone: {} file(s) back as they were{}{}; the conversation is back to before that turn.",
                    files.len(),
                    if shown.is_empty() { String::new() } else { format!(": {}", shown.join(", ")) },
                    if more > 0 { format!(" and {more} more") } else { String::new() }
                ))
            }
            Update::Failed { error, .. } => Some(match &error.conflicts {
                Some(paths) => format!(
                    "Not undone: changed since by someone other than SCV: {}. Send /undo force to restore anyway.",
                    paths.join(", ")
                ),
                None => format!("Not undone: {}", error.message),
            }),
            _ => None,
        }
    }

    /// An approval asked in the chat (answered `y` or `n` before
    /// `timeout`), or denied at once when it is too long to show whole:
    /// what the chat is told.
    async fn ask(&mut self, approval: scv_client::session::Approval, timeout: Duration) -> String {
        let summary = scv_client::text::visible(&approval.summary).into_owned();
        let asker = approval
            .child_session
            .as_deref()
            .map(|child| match self.client.subagent(child) {
                Some(view) => format!(" of subagent «{}»", subagents::name(Some(view), child)),
                None => " of a subagent".to_string(),
            })
            .unwrap_or_default();
        let chars = summary.chars().count();
        if chars > MAX_APPROVAL_CHARS {
            // It cannot be shown whole here, so it cannot be approved
            // here: no `y` may stand for unseen text.
            if let Some(deny) = self.client.resolve(&approval.approval_id, false) {
                self.send(&deny).await;
            }
            let shown: String = summary.chars().take(300).collect();
            return format!(
                "SCV asked to run a tool call{asker} of {chars} characters; {} of them would be hidden here, so it is too long to approve here — approve it from a terminal. It was denied.\nIt begins:\n{shown}",
                chars - 300.min(chars)
            );
        }
        self.approvals
            .push_back((approval.approval_id, Instant::now() + timeout));
        format!("Approve this tool call{asker}? Reply y or n.\n\n{summary}")
    }

    /// The session's turn ended: its answer (or how it ended) for the
    /// chat, unless `/new` clears the conversation after it.
    fn ended(&mut self, outcome: Outcome, owner: bool) -> Option<String> {
        self.approvals.clear();
        self.questions.clear(); // the daemon cancelled them
        self.stop_typing();
        if self.clear_after_turn {
            return None;
        }
        Some(match outcome {
            Outcome::Completed { .. } if self.answer.trim().is_empty() => "(no answer)".into(),
            Outcome::Completed { .. } => std::mem::take(&mut self.answer),
            Outcome::Cancelled => "Cancelled.".into(),
            // Failure messages can name the provider's host and port.
            Outcome::Failed { code, message } if owner => {
                let short: String = message.chars().take(200).collect();
                format!("The turn failed ({code}): {short}")
            }
            Outcome::Failed { code, .. } => format!("The turn failed ({code}); try again later."),
        })
    }

    fn stop_typing(&mut self) {
        if let Some(token) = self.typing.take() {
            token.cancel();
        }
    }
}

struct Account {
    shared: Arc<Shared>,
    /// Where `delivery` is saved (the poller saves it too).
    store: AccountStore,
    connector: Arc<dyn Connector>,
    tasks: TaskTracker,
    spec: AccountSpec,
    client: IlinkClient,
    delivery: Arc<Mutex<Delivery>>,
    chats: HashMap<String, Chat>,
    events: mpsc::Sender<(String, Event)>,
    token: CancellationToken,
    /// `getconfig` typing tickets, per user.
    tickets: Tickets,
    /// The UTC day the owner was last told that other users' chats passed
    /// 80 % of the daily budget (once a day, however many chats do).
    daily_told: Option<u64>,
}

type Tickets = Arc<Mutex<HashMap<String, String>>>;

pub(super) async fn run(
    shared: Arc<Shared>,
    connector: Arc<dyn Connector>,
    store: AccountStore,
    spec: AccountSpec,
    status: Status,
    token: CancellationToken,
    tasks: TaskTracker,
) {
    // The account's own client, keeping no idle connections: nothing of
    // the account (not even a pooled connection's task) outlives it.
    let client = IlinkClient::new(
        crate::server::http_client(0),
        &spec.credentials.base_url,
        Some(spec.credentials.bot_token.clone()),
        crate::server::SERVER_VERSION,
    );
    let delivery = {
        let (store, account) = (store.clone(), spec.account.clone());
        crate::blocking::run(move || store.delivery(&account))
            .await
            .unwrap_or_default()
    };
    let delivery = Arc::new(Mutex::new(delivery));
    let (batch_tx, mut batches) = mpsc::channel(16);
    let (events_tx, mut events) = mpsc::channel(1024);
    let _ = tokio::time::timeout(Duration::from_secs(5), client.notify(true)).await;
    let poller = poll::Poller {
        client: client.clone(),
        store: store.clone(),
        account: spec.account.clone(),
        bot_id: spec.credentials.bot_id.clone(),
        delivery: delivery.clone(),
        status: status.clone(),
        batches: batch_tx,
    };
    let mut poller = tasks.spawn(poller.run(token.clone()));
    let mut account = Account {
        shared,
        store,
        connector,
        tasks,
        spec,
        client,
        delivery,
        chats: HashMap::new(),
        events: events_tx,
        token: token.clone(),
        tickets: Tickets::default(),
        daily_told: None,
    };
    loop {
        let next_deadline = account
            .chats
            .values()
            .flat_map(|c| c.approvals.front().map(|a| a.1))
            .min();
        tokio::select! {
            _ = token.cancelled() => break,
            _ = &mut poller => break,
            Some(batch) = batches.recv() => {
                for message in batch {
                    account.on_message(message).await;
                }
            }
            Some((user, event)) = events.recv() => account.on_event(&user, event).await,
            _ = tokio::time::sleep_until(next_deadline.unwrap_or_else(Instant::now)), if next_deadline.is_some() => {
                account.expire_approvals().await;
            }
        }
    }
    // Everything else ends with the token; the poller too (a poll in
    // flight is dropped).
    token.cancel();
    for chat in account.chats.values_mut() {
        chat.stop_typing();
    }
    // Dropping the chats closes their pipes; their sessions end with them.
    account.chats.clear();
    let failed = status.lock().state == ComponentState::Failed;
    if !failed {
        let _ = tokio::time::timeout(Duration::from_secs(2), account.client.notify(false)).await;
    }
}

impl Account {
    fn is_owner(&self, user: &str) -> bool {
        self.spec.credentials.user_id.as_deref() == Some(user)
    }

    fn context_token(&self, user: &str) -> String {
        crate::sync::lock(&self.delivery)
            .context_tokens
            .get(user)
            .cloned()
            .unwrap_or_default()
    }

    /// Sends `text` to `user`, in chunks; failures are logged, not fatal.
    async fn reply(&self, user: &str, text: &str) {
        let context = self.context_token(user);
        for chunk in chunks(text, CHUNK_CHARS) {
            if let Err(err) = self.client.send_text(user, &context, &chunk).await {
                tracing::info!("clawbot:{}: reply not sent: {err}", self.spec.account);
            }
        }
    }

    async fn on_message(&mut self, message: WireMessage) {
        let user = message.from_user_id.clone();
        if !message.group_id.is_empty() {
            return; // direct chats only
        }
        let Some(text) = message.text() else {
            self.reply(&user, unreadable(&message)).await;
            return;
        };
        if message.has_images() {
            self.reply(&user, IMAGE_LEFT_OUT).await; // said, not dropped
        }
        let text = text.trim().to_string();
        if text == "/help" {
            self.reply(&user, HELP).await;
            return;
        }
        let owner = self.is_owner(&user);
        if text == "/resume" {
            self.resume(&user).await;
            return;
        }
        if self.live_command(&user, &text).await {
            return;
        }
        if !self.chats.contains_key(&user) && !self.join(&user, &text, owner).await {
            return;
        }
        let stranger_turns = self
            .chats
            .iter()
            .filter(|(id, chat)| !self.is_owner(id) && chat.client.busy())
            .count();
        // The workspace's custom commands and skills: the owner's, with tools.
        let commands = self.tools_for(&user);
        let Some(chat) = self.chats.get_mut(&user) else {
            return;
        };
        chat.last_active = Instant::now();
        let answer = text.to_ascii_lowercase();
        if owner
            && !chat.approvals.is_empty()
            && matches!(answer.as_str(), "y" | "yes" | "n" | "no")
        {
            let Some((approval_id, _)) = chat.approvals.pop_front() else {
                return;
            };
            if let Some(resolve) = chat.client.resolve(&approval_id, answer.starts_with('y')) {
                chat.send(&resolve).await;
            }
            return;
        }
        if owner && !text.starts_with('/') {
            if let Some(said) = chat.answer_question(&text).await {
                return self.reply(&user, &said).await;
            }
        }
        match text.as_str() {
            "/new" => {
                if chat.client.busy() || !chat.client.prompts().is_empty() {
                    // Everything in flight is cancelled (queued ones taken
                    // off the queue first, so none starts), then cleared.
                    chat.clear_after_turn = true;
                    let cancels = chat.client.cancel_all();
                    chat.send_all(&cancels).await;
                } else {
                    let session_id = chat.client.session_id().unwrap_or_default().to_string();
                    let clear = chat
                        .client
                        .request(ClientMessage::SessionClear(SessionClear { session_id }));
                    chat.send(&clear).await;
                }
            }
            "/undo" | "/undo force" => {
                if !owner {
                    self.reply(&user, "Only the account owner can undo.").await;
                } else if chat.busy() || chat.undo.is_some() {
                    self.reply(&user, "Wait for the answer (or /cancel it), then /undo.")
                        .await;
                } else {
                    let session_id = chat.client.session_id().unwrap_or_default().to_string();
                    let list = chat.client.request(ClientMessage::CheckpointList(
                        scv_protocol::CheckpointList { session_id },
                    ));
                    chat.undo = Some((list.request_id.clone(), text.ends_with("force")));
                    chat.send(&list).await;
                }
            }
            "/cancel" => {
                if chat.client.busy() {
                    // Before its turn started too: the session client
                    // cancels it as soon as the server says where it is.
                    let cancels = chat.client.cancel_current();
                    chat.send_all(&cancels).await;
                } else {
                    self.reply(&user, "Nothing is running.").await;
                }
            }
            "/status" => self.status(&user, owner).await,
            _ => {
                self.prompt(&user, text, owner, stranger_turns, commands)
                    .await
            }
        }
    }

    /// Tools only for the owner, and only when the account grants
    /// `remote_tools = "owner"`.
    fn tools_for(&self, user: &str) -> bool {
        self.is_owner(user) && self.spec.remote_tools_effective() == RemoteTools::Owner
    }

    /// `user`'s session's events go to the account's loop from a task of
    /// their own (until the account stops); the writing half is the chat's.
    fn forward(
        &mut self,
        user: &str,
        conn: Connection<ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>,
    ) -> WriteHalf<DuplexStream> {
        let (mut reader, writer) = conn.into_parts();
        let events = self.events.clone();
        let user_id = user.to_string();
        let token = self.token.clone();
        self.tasks.spawn(async move {
            use futures_util::StreamExt;
            let forward = async {
                while let Some(Ok(scv_protocol::Frame::Line(line))) = reader.next().await {
                    let Ok(event) = serde_json::from_slice::<Event>(&line) else {
                        continue;
                    };
                    if events.send((user_id.clone(), event)).await.is_err() {
                        return;
                    }
                }
            };
            tokio::select! {
                _ = token.cancelled() => {}
                _ = forward => {}
            }
        });
        writer
    }

    /// A session for `user`: a new one, or `resume` (a stored one of the
    /// same sender). The error is the server's refusal, for the sender.
    async fn open_chat(
        &mut self,
        user: &str,
        resume: Option<&ChatSession>,
    ) -> Result<Chat, String> {
        let client_side = self
            .connector
            .connect(&self.tasks, self.token.child_token());
        let (read, write) = tokio::io::split(client_side);
        let mut conn = Connection::new(read, write);
        let tools = self.tools_for(user);
        let open = match resume {
            Some(stored) => Open::Resume(SessionResume {
                session_id: stored.session_id.clone(),
                provider: None,
                model: None,
                additional_directories: Vec::new(),
            }),
            None => Open::Start(SessionStart {
                cwd: self.spec.workspace.display().to_string(),
                no_tools: !tools,
                ..Default::default()
            }),
        };
        // Checkpoints: the owner's `/undo`; usage: the owner is told at
        // 80 % of a budget (`budget.warning`) — of the daily one also when
        // another user's chat passes it, since it is the owner's money;
        // subagents: a line when each child starts and ends (only
        // sessions with tools have children).
        let capabilities = scv_protocol::Capabilities {
            checkpoints: true,
            usage: true,
            subagents: true,
            // A session no longer being saved (a full disk) is said to
            // the owner (`session.warning`).
            sessions: true,
            // MCP servers' questions, asked of the owner (`chat/elicit.rs`).
            elicitation: tools,
            ..Default::default()
        };
        let opened = tokio::time::timeout(
            Duration::from_secs(10),
            conn.open(None, Some(capabilities), open),
        )
        .await;
        let (session_id, unsent, warnings) = match opened {
            Ok(Ok(opened)) => {
                let unsent = opened
                    .started()
                    .and_then(|s| s.unsent_prompts.as_ref())
                    .map_or(0, Vec::len);
                let warnings = opened
                    .started()
                    .map(|s| s.config_warnings.clone())
                    .unwrap_or_default();
                (opened.session_id, unsent, warnings)
            }
            Ok(Err(err)) => {
                tracing::warn!("clawbot:{}: session refused: {err:#}", self.spec.account);
                return Err(format!("{err:#}"));
            }
            Err(_) => return Err("SCV did not answer in time".into()),
        };
        let writer = self.forward(user, conn);
        // What the configuration or the workspace's trust skipped is the
        // owner's to know (the workspace is theirs), as every client says.
        if self.is_owner(user) && !warnings.is_empty() {
            let text: String = warnings
                .iter()
                .map(|w| format!("⚠ {}\n", scv_client::text::visible(w)))
                .collect();
            self.reply(user, text.trim_end()).await;
        }
        let mut client = SessionClient::new("clawbot-");
        client.set_session(session_id);
        let mut chat = Chat::new(user, writer, client, resume.map_or(tools, |s| s.tools));
        chat.stored = resume.is_some();
        chat.unsent = unsent;
        Ok(chat)
    }

    /// `/resume`: the sender's earlier conversation takes this chat's
    /// place — only theirs, never with more tools than the chat allows
    /// now, and nothing of it runs again by itself.
    async fn resume(&mut self, user: &str) {
        let earlier = match self.chats.get(user) {
            Some(chat) if chat.busy() => {
                self.reply(user, "Wait for the answer (or /cancel it), then /resume.")
                    .await;
                return;
            }
            Some(chat) => chat.earlier.clone(),
            None => crate::sync::lock(&self.delivery).session_of(user).cloned(),
        };
        let Some(earlier) = earlier else {
            self.reply(user, "There is no earlier conversation to continue.")
                .await;
            return;
        };
        if earlier.tools && !self.tools_for(user) {
            self.reply(
                user,
                "That conversation could use tools, which this chat no longer allows; it cannot be continued here. Send a message to start a new one.",
            )
            .await;
            return;
        }
        // This chat's own session goes (stored if it ran a turn).
        if let Some(mut chat) = self.chats.remove(user) {
            chat.stop_typing();
        }
        match self.open_chat(user, Some(&earlier)).await {
            Ok(chat) => {
                let note = match chat.unsent {
                    0 => "Continuing your earlier conversation.".to_string(),
                    n => format!(
                        "Continuing your earlier conversation. {n} message(s) were still waiting when SCV stopped; they did not run — send them again if you still want them."
                    ),
                };
                self.chats.insert(user.to_string(), chat);
                self.remember(user, &earlier).await;
                self.reply(user, &note).await;
            }
            Err(err) => {
                let why = if self.is_owner(user) {
                    format!(": {}", err.chars().take(200).collect::<String>())
                } else {
                    String::new()
                };
                self.reply(
                    user,
                    &format!("The earlier conversation cannot be continued{why}. Send a message to start a new one."),
                )
                .await;
            }
        }
    }

    /// Saves `session` as `user`'s last one, for `/resume` after a restart.
    async fn remember(&self, user: &str, session: &ChatSession) {
        let snapshot = {
            let mut delivery = crate::sync::lock(&self.delivery);
            if delivery.session_of(user) == Some(session) {
                return;
            }
            delivery.remember_session(session.clone());
            delivery.clone()
        };
        let (store, account) = (self.store.clone(), self.spec.account.clone());
        let saved = crate::blocking::run(move || store.save_delivery(&account, &snapshot)).await;
        if let Ok(Err(err)) = saved {
            tracing::info!(
                "clawbot:{}: chat session not saved: {err}",
                self.spec.account
            );
        }
    }

    /// Closes the least recently active idle stranger's session to make
    /// room for a new sender; false when every one is busy. The owner's is
    /// never closed.
    fn make_room(&mut self) -> bool {
        let idle = self
            .chats
            .iter()
            .filter(|(user, chat)| !self.is_owner(user) && !chat.busy())
            .min_by_key(|(_, chat)| chat.last_active)
            .map(|(user, _)| user.clone());
        match idle {
            Some(user) => {
                if let Some(mut chat) = self.chats.remove(&user) {
                    chat.stop_typing();
                }
                true
            }
            None => false,
        }
    }

    async fn on_event(&mut self, user: &str, event: Event) {
        let owner = self.is_owner(user);
        let context = self.context_token(user);
        let client = self.client.clone();
        let tickets = self.tickets.clone();
        let Some(chat) = self.chats.get_mut(user) else {
            return;
        };
        let mut applied = chat.client.apply(&event);
        chat.send_all(&applied.requests).await;
        if let Some(index) = applied.updates.iter().position(|u| chat.undo_answer(u)) {
            let answer = applied.updates.swap_remove(index);
            if let Some(text) = chat.undo_step(answer).await {
                self.reply(user, &text).await;
            }
            return;
        }
        let mut say: Vec<String> = Vec::new();
        let mut tell_owner = None;
        let mut remember = None;
        for update in applied.updates {
            match update {
                // A subagent's: never the answer, one line at its end.
                Update::Subagent { session_id, update } => {
                    let view = chat.client.subagent(&session_id);
                    say.extend(subagents::line(view, &session_id, &update, owner));
                }
                Update::TextDone(content) if !content.trim().is_empty() => chat.answer = content,
                Update::Cleared => say.push("Started a new conversation.".into()),
                Update::Budget(warning) if owner => say.push(format!("SCV: {}", warning.message)),
                // Another user's spending counts toward the daily budget:
                // the owner hears of it, the other user does not.
                Update::Budget(warning) if warning.budget == "max_daily_cost_usd" => {
                    tell_owner = Some(format!(
                        "SCV: {} (while answering another WeChat user)",
                        warning.message
                    ));
                }
                // The disk under SCV_HOME filled, or the journal caught up
                // again: the owner's to know, whoever's chat it is.
                Update::Warning(warning) if owner => say.push(format!("SCV: {}", warning.message)),
                Update::Warning(warning) => {
                    tell_owner = Some(format!(
                        "SCV: {} (a conversation with another WeChat user)",
                        warning.message
                    ));
                }
                // A changing call runs without an undo point.
                Update::CheckpointFailed { message } if owner => {
                    say.push(format!("SCV: {message}"))
                }
                Update::Failed { error, .. } => say.push(refusal(&error, owner)),
                Update::Started { .. } => {
                    if !chat.stored {
                        chat.stored = true;
                        remember = Some(ChatSession {
                            user_id: user.to_string(),
                            session_id: chat.client.session_id().unwrap_or_default().to_string(),
                            tools: chat.tools,
                        });
                    }
                    chat.answer.clear();
                    chat.stop_typing();
                    let token = self.token.child_token();
                    chat.typing = Some(token.clone());
                    self.tasks.spawn(keep_typing(
                        Typing {
                            tickets: tickets.clone(),
                            client: client.clone(),
                            user: chat.user_id.clone(),
                            context: context.clone(),
                        },
                        token,
                        self.token.clone(),
                    ));
                }
                Update::Elicitation(asked) => say.extend(chat.question(*asked, owner).await),
                // An MCP server whose login is gone (its refresh refused):
                // the owner is told what to run.
                Update::Tool(ToolChange::Done {
                    success: false,
                    output,
                    ..
                }) if owner => say.extend(
                    scv_client::text::mcp_login_needed(&output)
                        .map(|line| format!("SCV: {line} (where SCV runs).")),
                ),
                Update::Queued { position, .. } => {
                    say.push(format!("Queued; {} waiting.", position + 1));
                }
                Update::ApprovalRequested(approval) => {
                    let timeout = Duration::from_millis(
                        self.shared.config().daemon.clawbot_approval_timeout_ms,
                    );
                    say.push(chat.ask(approval, timeout).await);
                }
                Update::Ended { outcome, .. } => {
                    say.extend(chat.ended(outcome, owner));
                    chat.clear_if_due().await;
                }
                Update::Refused { error, .. } => {
                    say.push(refusal(&error, owner));
                    chat.clear_if_due().await;
                }
                Update::Withdrawn { .. } => {
                    chat.clear_if_due().await;
                }
                _ => {}
            }
        }
        if let Some(session) = remember {
            self.remember(user, &session).await;
        }
        for text in say {
            self.reply(user, &text).await;
        }
        if let Some(text) = tell_owner {
            self.tell_owner_daily(&text).await;
        }
    }

    /// Tells the owner `text` about the daily budget, once per UTC day.
    async fn tell_owner_daily(&mut self, text: &str) {
        let today = scv_store::now_unix() / 86_400;
        if self.daily_told == Some(today) {
            return;
        }
        let Some(owner) = self.spec.credentials.user_id.clone() else {
            tracing::info!("clawbot:{}: {text} (no owner to tell)", self.spec.account);
            return;
        };
        self.daily_told = Some(today);
        self.reply(&owner, text).await;
    }

    /// Denies approvals nobody answered in time.
    async fn expire_approvals(&mut self) {
        let now = Instant::now();
        let mut expired = Vec::new();
        for chat in self.chats.values_mut() {
            while chat.approvals.front().is_some_and(|a| a.1 <= now) {
                let Some((approval_id, _)) = chat.approvals.pop_front() else {
                    break;
                };
                if let Some(deny) = chat.client.resolve(&approval_id, false) {
                    chat.send(&deny).await;
                }
                expired.push(chat.user_id.clone());
            }
        }
        for user in expired {
            self.reply(&user, "No answer in time; the tool call was denied.")
                .await;
        }
    }
}

/// An error the server sent the chat's session, as the chat says it
/// (the owner reads the message; another user its code).
fn refusal(error: &scv_protocol::ErrorBody, owner: bool) -> String {
    if owner {
        format!("SCV: {}", error.message)
    } else {
        format!("SCV could not take that message ({}).", error.code)
    }
}

/// What the typing keep-alive needs.
struct Typing {
    tickets: Tickets,
    client: IlinkClient,
    user: String,
    context: String,
}

/// Keeps the typing indicator alive until `turn` is cancelled, then stops
/// it. The ticket from `getconfig` is cached per user. When the whole
/// account stops (`account`), requests in flight are dropped at once.
async fn keep_typing(typing: Typing, turn: CancellationToken, account: CancellationToken) {
    let Typing {
        tickets,
        client,
        user,
        context,
    } = typing;
    let cached = crate::sync::lock(&tickets).get(&user).cloned();
    let ticket = match cached {
        Some(ticket) => ticket,
        None => {
            let context = (!context.is_empty()).then_some(context);
            let fetched = tokio::select! {
                _ = account.cancelled() => return,
                fetched = client.typing_ticket(&user, context.as_deref()) => fetched,
            };
            let Ok(ticket) = fetched else {
                return; // no typing for this user
            };
            crate::sync::lock(&tickets).insert(user.clone(), ticket.clone());
            ticket
        }
    };
    loop {
        let sent = tokio::select! {
            _ = account.cancelled() => return,
            sent = client.send_typing(&user, &ticket, true) => sent,
        };
        if sent.is_err() {
            // A stale ticket: fetch a new one next turn.
            crate::sync::lock(&tickets).remove(&user);
        }
        tokio::select! {
            _ = account.cancelled() => return,
            _ = turn.cancelled() => break,
            _ = tokio::time::sleep(TYPING_EVERY) => {}
        }
    }
    tokio::select! {
        _ = account.cancelled() => {}
        _ = client.send_typing(&user, &ticket, false) => {}
    }
}

/// Splits text into chunks of at most `max` characters, preferring line
/// breaks.
pub(super) fn chunks(text: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut count = 0;
    for line in text.split_inclusive('\n') {
        let len = line.chars().count();
        if count + len > max && !current.is_empty() {
            out.push(std::mem::take(&mut current));
            count = 0;
        }
        if len > max {
            let chars: Vec<char> = line.chars().collect();
            for piece in chars.chunks(max) {
                out.push(piece.iter().collect());
            }
            continue;
        }
        current.push_str(line);
        count += len;
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_stay_under_the_limit_and_keep_everything() {
        let text: String = (0..500).map(|i| format!("line {i}\n")).collect();
        let parts = chunks(&text, 100);
        assert!(parts.iter().all(|p| p.chars().count() <= 100));
        assert_eq!(parts.concat(), text);
        let long = "x".repeat(250);
        assert_eq!(chunks(&long, 100).len(), 3);
    }

    #[test]
    fn a_subagents_answer_is_never_the_chats() {
        use scv_protocol::EventBody;
        let mut client = SessionClient::new("clawbot-");
        client.set_session("P");
        let mut event = Event::reply(
            Some("clawbot-1".into()),
            EventBody::AssistantCompleted {
                content: "the parent's answer".into(),
            },
        );
        event.session_id = Some("P".into());
        assert_eq!(
            client.apply(&event).updates,
            [Update::TextDone("the parent's answer".into())]
        );
        event.parent = Some(scv_protocol::Parent {
            session_id: "P".into(),
            turn_id: "T".into(),
            call_id: "task-1".into(),
        });
        event.session_id = Some("C".into());
        assert!(client
            .apply(&event)
            .updates
            .iter()
            .all(|u| !matches!(u, Update::TextDone(_))));
    }
}
