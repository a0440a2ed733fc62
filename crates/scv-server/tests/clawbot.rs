#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! ClawBot inside the real daemon, against the fake iLink server and the
//! mock provider: control commands and their persistence, state changes,
//! chats with owner and strangers, approvals in chat, long replies, chat
//! commands, dedupe, restarts, and no token anywhere it should not be.

mod common;
use common::*;
use scv_ilink::{AccountStore, Credentials};
use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use scv_test_support::fake_ilink::{FakeIlink, Fault};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Child;

const TOKEN: &str = "tok-SECRET-9f8e7d";
const OWNER: &str = "owner@im.wechat";
const STRANGER: &str = "stranger@im.wechat";

struct Bot {
    ilink: FakeIlink,
    mock: MockProvider,
    home: TestHome,
    socket: PathBuf,
    daemon: Child,
    log: DaemonLog,
    client: TestServer,
}

async fn connect(socket: &Path) -> TestServer {
    wait_for_socket(socket).await;
    let mut client = TestServer::connect(socket).await;
    client.initialize().await;
    client
}

impl Bot {
    /// A logged-in `default` account (not yet enabled) and a daemon.
    async fn start(extra: &str) -> Bot {
        Bot::start_in(extra, &std::env::temp_dir()).await
    }

    /// [`Bot::start`] with `$SCV_HOME` (and the workspace) made in
    /// `parent`.
    async fn start_in(extra: &str, parent: &Path) -> Bot {
        let ilink = FakeIlink::start().await;
        ilink.allow_token(TOKEN);
        let mock = MockProvider::start().await;
        let home = TestHome::new_in(parent, &mock.base_url(), extra);
        AccountStore::new(home.path())
            .save_credentials(
                "default",
                &Credentials {
                    bot_token: TOKEN.into(),
                    bot_id: "bot@im.bot".into(),
                    user_id: Some(OWNER.into()),
                    base_url: ilink.base_url(),
                    saved_at: 1_750_000_000,
                },
            )
            .unwrap();
        let socket = home.path().join("server.sock");
        let log = DaemonLog::default();
        let daemon = spawn_daemon(BIN, home.path(), &socket, &log);
        let client = connect(&socket).await;
        Bot {
            ilink,
            mock,
            home,
            socket,
            daemon,
            log,
            client,
        }
    }

    async fn control(&mut self, command: Value) -> Value {
        self.client
            .send(json!({"type":"daemon.control","request_id":"c","command":command}))
            .await;
        self.client.next().await
    }

    async fn enable(&mut self, remote_tools: &str) -> Value {
        let workspace = self.home.workspace();
        self.control(json!({"action":"clawbot_set","account":"default","enabled":true,"workspace":workspace,"remote_tools":remote_tools}))
            .await
    }

    async fn component(&mut self) -> Value {
        let status = self.control(json!({"action":"status"})).await;
        status["status"]["components"][0].clone()
    }

    async fn wait_state(&mut self, state: &str) -> Value {
        for _ in 0..800 {
            let component = self.component().await;
            if component["state"] == state {
                return component;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("never reached {state}: {}", self.component().await);
    }

    async fn wait_sent(&self, user: &str, n: usize) -> Vec<String> {
        assert!(
            self.ilink.wait_until(|f| f.sent_to(user).len() >= n).await,
            "sent to {user}: {:?}",
            self.ilink.sent_to(user)
        );
        self.ilink.sent_to(user)
    }

    async fn stop(&mut self) {
        unsafe { libc::kill(self.daemon.id().unwrap() as i32, libc::SIGTERM) };
        assert!(self.daemon.wait().await.unwrap().success());
    }
}

#[tokio::test]
async fn set_and_logout_persist_and_answer_with_status() {
    let mut bot = Bot::start("").await;
    let status = bot.enable("owner").await;
    assert_eq!(status["type"], "daemon.status");
    assert_eq!(status["request_id"], "c");
    assert!(status.get("session_id").is_none() && status.get("seq").is_none());
    let component = &status["status"]["components"][0];
    let keys: Vec<&str> = component
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "id",
        "account",
        "bot_id",
        "user_id",
        "enabled",
        "state",
        "last_success_unix_seconds",
        "error",
        "restarts",
        "remote_tools",
    ] {
        assert!(keys.contains(&key), "{key} missing: {component}");
    }
    assert_eq!(component["id"], "clawbot:default");
    assert_eq!(component["bot_id"], "bot@im.bot");
    assert_eq!(component["user_id"], OWNER);
    assert_eq!(component["remote_tools"], "owner");
    let store = AccountStore::new(bot.home.path());
    let settings = store.settings("default");
    assert!(settings.enabled);
    assert_eq!(
        settings.workspace.as_deref(),
        Some(bot.home.workspace().to_str().unwrap())
    );

    let connected = bot.wait_state("connected").await;
    assert!(connected["last_success_unix_seconds"].as_u64().unwrap() > 0);
    assert_eq!(bot.ilink.calls("ilink/bot/msg/notifystart").len(), 1);

    // A relative workspace is refused; null leaves the saved one.
    let refused = bot.control(json!({"action":"clawbot_set","account":"default","enabled":true,"workspace":"relative/dir"})).await;
    assert_eq!(refused["code"], "invalid_request");
    let status = bot
        .control(
            json!({"action":"clawbot_set","account":"default","enabled":false,"workspace":null}),
        )
        .await;
    assert_eq!(status["status"]["components"][0]["state"], "disabled");
    assert_eq!(
        store.settings("default").workspace.as_deref(),
        Some(bot.home.workspace().to_str().unwrap())
    );
    assert_eq!(store.settings("default").remote_tools, "owner");
    assert!(
        bot.ilink
            .wait_until(|f| f.calls("ilink/bot/msg/notifystop").len() == 1)
            .await
    );

    let status = bot
        .control(json!({"action":"clawbot_logout","account":"default"}))
        .await;
    assert_eq!(status["status"]["components"], json!([]));
    assert!(
        !store.dir("default").exists(),
        "credentials, delivery state and settings are gone"
    );
    bot.stop().await;
}

#[tokio::test]
async fn failures_back_off_and_an_expired_session_fails_without_leaking_the_token() {
    let mut bot = Bot::start("").await;
    for _ in 0..3 {
        bot.ilink.fault("ilink/bot/getupdates", Fault::Status(502));
    }
    bot.enable("none").await;
    let backoff = bot.wait_state("backoff").await;
    assert!(
        backoff["error"]
            .as_str()
            .unwrap()
            .contains("could not be reached"),
        "{backoff}"
    );
    bot.stop().await;

    let mut bot = Bot::start("").await;
    bot.ilink.fault("ilink/bot/getupdates", Fault::Malformed);
    bot.enable("none").await;
    bot.wait_state("connected").await;
    bot.ilink.revoke_tokens();
    let failed = bot.wait_state("failed").await;
    assert!(
        failed["error"].as_str().unwrap().contains("log in again"),
        "{failed}"
    );
    let everything = format!("{failed} {}", bot.log.lines().join("\n"));
    assert!(!everything.contains(TOKEN), "the token leaked");
    bot.stop().await;
}

#[tokio::test]
async fn a_stranger_gets_answers_without_tools_and_typing_is_shown() {
    let mut bot = Bot::start("").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::text(["Hello, ", "stranger."]));
    bot.ilink.inject_text(STRANGER, "hi there");
    let sent = bot.wait_sent(STRANGER, 1).await;
    assert_eq!(sent, ["Hello, stranger."]);
    let request = &bot.mock.requests()[0].body;
    assert!(
        request.get("tools").is_none(),
        "a stranger's session has no tools"
    );
    let reply = &bot.ilink.calls("ilink/bot/sendmessage")[0].body["msg"];
    assert_eq!(reply["context_token"], format!("ctx-{STRANGER}-0"));
    assert!(
        bot.ilink
            .wait_until(|f| f
                .calls("ilink/bot/sendtyping")
                .iter()
                .any(|c| c.body["status"] == 2))
            .await
    );
    let typing = bot.ilink.calls("ilink/bot/sendtyping");
    assert_eq!(typing[0].body["status"], 1);
    // Unsupported items get one short line; an image says it cannot be
    // fetched (the iLink notes give no way to), honestly.
    bot.ilink.inject(json!({"from_user_id": STRANGER, "message_type": 1, "item_list": [{"type": 5}], "context_token": "c2"}));
    let sent = bot.wait_sent(STRANGER, 2).await;
    assert_eq!(sent[1], "Only text messages are understood here.");
    bot.ilink.inject(
        json!({"from_user_id": STRANGER, "message_type": 1, "item_list": [{"type": 2}],
        "context_token": "c2", "create_time_ms": 1_750_000_100_000u64}),
    );
    let sent = bot.wait_sent(STRANGER, 3).await;
    assert!(
        sent[2].starts_with("Images are not supported in this chat yet"),
        "{sent:?}"
    );
    let requests_before = bot.mock.requests().len();
    assert_eq!(requests_before, 1, "neither reached the model");
    // A failed turn is one short line that names no provider detail (its
    // message can carry the provider's host and port).
    bot.mock
        .push(Reply::error(401, "Incorrect API key provided"));
    bot.ilink.inject_text(STRANGER, "again");
    let sent = bot.wait_sent(STRANGER, 4).await;
    assert_eq!(
        sent[3],
        "The turn failed (provider_error); try again later."
    );
    // Nor does /status say where the daemon works.
    bot.ilink.inject_text(STRANGER, "/status");
    let sent = bot.wait_sent(STRANGER, 5).await;
    assert!(sent[4].contains("mock-model"), "{sent:?}");
    assert!(!sent[4].contains("workspace"), "{sent:?}");
    // Text with an image: the image's absence is said, the text goes on.
    bot.mock.push(Reply::text(["About the text."]));
    bot.ilink.inject(
        json!({"from_user_id": STRANGER, "message_type": 1, "context_token": "c3",
        "create_time_ms": 1_750_000_200_000u64,
        "item_list": [{"type": 1, "text_item": {"text": "what about this?"}}, {"type": 2}]}),
    );
    let sent = bot.wait_sent(STRANGER, 7).await;
    assert!(sent[5].starts_with("(Your image was left out"), "{sent:?}");
    assert_eq!(sent[6], "About the text.");
    let workspace = bot.home.workspace().display().to_string();
    let provider = bot.mock.base_url();
    let port = provider.rsplit(':').next().unwrap().trim_end_matches("/v1");
    for text in &sent {
        assert!(!text.contains(&workspace) && !text.contains(port), "{text}");
    }
    bot.stop().await;
}

#[tokio::test]
async fn the_owner_approves_a_tool_call_in_chat() {
    let mut bot = Bot::start("").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "echo from-wechat"}),
    )]));
    bot.mock.push(Reply::text(["It printed from-wechat."]));
    bot.ilink.inject_text(OWNER, "run it");
    let sent = bot.wait_sent(OWNER, 1).await;
    assert_eq!(
        sent[0],
        "Approve this tool call? Reply y or n.\n\nRun shell command: echo from-wechat"
    );
    assert!(
        bot.mock.requests()[0].body.get("tools").is_some(),
        "the owner's session has tools"
    );
    bot.ilink.inject_text(OWNER, "y");
    let sent = bot.wait_sent(OWNER, 2).await;
    assert_eq!(sent[1], "It printed from-wechat.");
    let tool_result = bot.mock.requests()[1].body.to_string();
    assert!(
        tool_result.contains("from-wechat\\n[exit code: 0]"),
        "{tool_result}"
    );
    bot.stop().await;
}

#[tokio::test]
async fn long_replies_are_split_and_chat_commands_work() {
    let mut bot = Bot::start("").await;
    bot.enable("none").await;
    bot.wait_state("connected").await;
    let long: String = (0..300)
        .map(|i| format!("line {i:03} of a long answer\n"))
        .collect();
    bot.mock.push(Reply::text([long.as_str()]));
    bot.ilink.inject_text(STRANGER, "write a lot");
    assert!(
        bot.ilink
            .wait_until(|f| f.sent_to(STRANGER).concat().len() >= long.trim_end().len())
            .await
    );
    let parts = bot.ilink.sent_to(STRANGER);
    assert!(parts.len() >= 3, "{}", parts.len());
    assert!(parts.iter().all(|p| p.chars().count() < 2000));
    assert_eq!(parts.concat(), long);
    let ids: std::collections::HashSet<String> = bot
        .ilink
        .calls("ilink/bot/sendmessage")
        .iter()
        .map(|c| c.body["msg"]["client_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), parts.len(), "each chunk has its own client_id");

    // /cancel stops a running turn; /new clears the conversation.
    bot.mock
        .push(Reply::text(["slow", "never"]).then(2, Ending::Stall));
    let requests = bot.mock.request_count();
    bot.ilink.inject_text(STRANGER, "take your time");
    assert!(
        bot.ilink
            .wait_until(|_| bot.mock.request_count() > requests)
            .await
    );
    let before = bot.ilink.sent_to(STRANGER).len();
    bot.ilink.inject_text(STRANGER, "/cancel");
    let sent = bot.wait_sent(STRANGER, before + 1).await;
    assert_eq!(sent.last().unwrap(), "Cancelled.");
    bot.ilink.inject_text(STRANGER, "/status");
    let sent = bot.wait_sent(STRANGER, before + 2).await;
    assert!(
        sent.last().unwrap().contains("mock-model") && sent.last().unwrap().contains("idle"),
        "{sent:?}"
    );
    bot.ilink.inject_text(STRANGER, "/new");
    let sent = bot.wait_sent(STRANGER, before + 3).await;
    assert_eq!(sent.last().unwrap(), "Started a new conversation.");
    bot.mock.push(Reply::text(["fresh"]));
    bot.ilink.inject_text(STRANGER, "after new");
    bot.wait_sent(STRANGER, before + 4).await;
    let roles: Vec<String> = bot.mock.requests().last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(roles, ["system", "user"]);
    bot.stop().await;
}

#[tokio::test]
async fn duplicates_are_dropped_and_delivery_state_survives_a_restart() {
    let mut bot = Bot::start("").await;
    bot.enable("none").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::text(["one"]));
    let id = bot.ilink.inject_text(STRANGER, "first");
    assert!(id > 1 << 53);
    bot.wait_sent(STRANGER, 1).await;
    // The same id again, and the same content under a new id.
    let first = bot.ilink.calls("ilink/bot/getupdates");
    let _ = first;
    bot.ilink.inject(json!({"message_id": id, "from_user_id": STRANGER, "message_type": 1, "create_time_ms": 1_750_000_000_000u64,
        "item_list": [{"type": 1, "text_item": {"text": "first"}}], "context_token": "ctx-dup"}));
    bot.ilink.inject(
        json!({"from_user_id": STRANGER, "message_type": 1, "create_time_ms": 1_750_000_000_000u64,
        "item_list": [{"type": 1, "text_item": {"text": "first"}}], "context_token": "ctx-dup2"}),
    );
    // Bot echoes are ignored too.
    bot.ilink.inject(json!({"from_user_id": "bot@im.bot", "message_type": 2, "item_list": [{"type": 1, "text_item": {"text": "echo"}}]}));
    bot.mock.push(Reply::text(["two"]));
    bot.ilink.inject_text(STRANGER, "second");
    let sent = bot.wait_sent(STRANGER, 2).await;
    assert_eq!(sent, ["one", "two"]);
    assert_eq!(bot.mock.request_count(), 2, "duplicates started no turn");
    bot.stop().await;

    let delivery = AccountStore::new(bot.home.path()).delivery("default");
    assert_eq!(delivery.cursor, "c5");
    assert_eq!(
        delivery.context_tokens[STRANGER],
        format!("ctx-{STRANGER}-4")
    );
    assert!(delivery.recent_ids.contains(&id.to_string()));

    // Restart: nothing is handled twice; new messages flow.
    bot.daemon = spawn_daemon(BIN, bot.home.path(), &bot.socket, &bot.log);
    bot.client = connect(&bot.socket).await;
    bot.wait_state("connected").await;
    let last =
        bot.ilink.calls("ilink/bot/getupdates").last().unwrap().body["get_updates_buf"].clone();
    assert_eq!(last, "c5", "the saved cursor is used after a restart");
    bot.mock.push(Reply::text(["three"]));
    bot.ilink.inject_text(STRANGER, "third");
    let sent = bot.wait_sent(STRANGER, 4).await;
    assert_eq!(
        sent[2],
        "(This is a new conversation. Send /resume to continue the earlier one.)"
    );
    assert_eq!(sent[3], "three");
    assert_eq!(bot.mock.request_count(), 3);
    let headers = &bot.ilink.calls("ilink/bot/getupdates")[0].headers;
    assert_eq!(headers["authorizationtype"], "ilink_bot_token");
    assert_eq!(headers["ilink-app-id"], "bot");
    assert!(!headers["x-wechat-uin"].is_empty());
    bot.stop().await;
}

/// The history of the last provider request, as text.
fn last_messages(bot: &Bot) -> String {
    bot.mock.requests().last().unwrap().body["messages"].to_string()
}

#[tokio::test]
async fn a_chat_continues_after_a_restart_only_when_its_sender_sends_resume() {
    let mut bot = Bot::start("").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.ilink.inject_text(STRANGER, "/resume");
    let sent = bot.wait_sent(STRANGER, 1).await;
    assert_eq!(sent[0], "There is no earlier conversation to continue.");
    bot.mock.push(Reply::text(["noted: kiwi"]));
    bot.ilink.inject_text(STRANGER, "remember the word kiwi");
    bot.wait_sent(STRANGER, 2).await;
    bot.mock.push(Reply::text(["owner noted: fig"]));
    bot.ilink.inject_text(OWNER, "remember the word fig");
    bot.wait_sent(OWNER, 1).await;
    bot.stop().await;
    let remembered = AccountStore::new(bot.home.path()).delivery("default");
    assert_eq!(remembered.chat_sessions.len(), 2);
    assert!(remembered.session_of(OWNER).unwrap().tools);
    assert!(!remembered.session_of(STRANGER).unwrap().tools);

    bot.daemon = spawn_daemon(BIN, bot.home.path(), &bot.socket, &bot.log);
    bot.client = connect(&bot.socket).await;
    bot.wait_state("connected").await;
    // A plain message after the restart: a new conversation, and it says
    // how to get the old one back.
    bot.mock.push(Reply::text(["which word? I do not know"]));
    bot.ilink.inject_text(STRANGER, "which word?");
    let sent = bot.wait_sent(STRANGER, 4).await;
    assert_eq!(
        sent[2],
        "(This is a new conversation. Send /resume to continue the earlier one.)"
    );
    assert!(
        !last_messages(&bot).contains("kiwi"),
        "nothing restored by itself"
    );
    // /resume brings the earlier one, though this chat ran a turn since.
    let requests = bot.mock.request_count();
    bot.ilink.inject_text(STRANGER, "/resume");
    let sent = bot.wait_sent(STRANGER, 5).await;
    assert_eq!(sent[4], "Continuing your earlier conversation.");
    assert_eq!(bot.mock.request_count(), requests, "nothing ran again");
    bot.mock.push(Reply::text(["it was kiwi"]));
    bot.ilink.inject_text(STRANGER, "which word, then?");
    bot.wait_sent(STRANGER, 6).await;
    let history = last_messages(&bot);
    assert!(history.contains("remember the word kiwi"), "{history}");
    assert!(history.contains("noted: kiwi"), "{history}");
    assert!(!history.contains("fig"), "only the sender's own: {history}");
    assert!(
        bot.mock
            .requests()
            .last()
            .unwrap()
            .body
            .get("tools")
            .is_none(),
        "a stranger's resumed session has no tools"
    );

    // The owner's session had tools; with tools now off for the account
    // it is not continued with them.
    bot.enable("none").await;
    bot.wait_state("connected").await;
    bot.ilink.inject_text(OWNER, "/resume");
    let sent = bot.wait_sent(OWNER, 2).await;
    assert!(sent[1].contains("no longer allows"), "{sent:?}");
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.ilink.inject_text(OWNER, "/resume");
    let sent = bot.wait_sent(OWNER, 3).await;
    assert_eq!(sent[2], "Continuing your earlier conversation.");
    bot.mock.push(Reply::text(["it was fig"]));
    bot.ilink.inject_text(OWNER, "which word?");
    bot.wait_sent(OWNER, 4).await;
    assert!(last_messages(&bot).contains("remember the word fig"));
    assert!(bot
        .mock
        .requests()
        .last()
        .unwrap()
        .body
        .get("tools")
        .is_some());
    bot.stop().await;
}

#[tokio::test]
async fn the_owner_undoes_the_last_changing_turn_from_chat_and_strangers_cannot() {
    let mut bot = Bot::start("auto_approve = [\"read\", \"write\", \"process\"]").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    let file = bot.home.workspace().join("notes.txt");
    std::fs::write(&file, "the original\n").unwrap();
    bot.ilink.inject_text(OWNER, "/undo");
    let sent = bot.wait_sent(OWNER, 1).await;
    assert_eq!(
        sent[0],
        "Nothing to undo: no turn of this conversation changed files."
    );
    bot.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "echo rewritten > notes.txt && echo extra > new.txt"}),
    )]));
    bot.mock.push(Reply::text(["Rewrote it."]));
    bot.ilink.inject_text(OWNER, "rewrite the notes");
    let sent = bot.wait_sent(OWNER, 2).await;
    assert_eq!(sent[1], "Rewrote it.");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "rewritten\n");

    bot.ilink.inject_text(STRANGER, "/undo");
    let sent = bot.wait_sent(STRANGER, 1).await;
    assert_eq!(sent[0], "Only the account owner can undo.");

    bot.ilink.inject_text(OWNER, "/undo");
    let sent = bot.wait_sent(OWNER, 3).await;
    assert_eq!(
        sent[2],
        "Undone: 2 file(s) back as they were: new.txt, notes.txt; the conversation is back to before that turn."
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "the original\n");
    assert!(!bot.home.workspace().join("new.txt").exists());
    // The conversation forgot the undone turn.
    bot.mock.push(Reply::text(["ok"]));
    bot.ilink.inject_text(OWNER, "what did you do?");
    bot.wait_sent(OWNER, 4).await;
    let history = bot.mock.requests().last().unwrap().body["messages"].to_string();
    assert!(!history.contains("rewrite the notes"), "{history}");
    bot.stop().await;
}

#[tokio::test]
async fn settings_changes_replace_the_instance_and_the_daemon_workspace_is_the_default() {
    let mut bot = Bot::start("").await;
    bot.control(json!({"action":"clawbot_set","account":"default","enabled":true}))
        .await;
    let first = bot.wait_state("connected").await;
    assert_eq!(first["restarts"], 0);
    bot.mock.push(Reply::text(["ok"]));
    bot.ilink.inject_text(STRANGER, "where are you?");
    bot.wait_sent(STRANGER, 1).await;
    let system = bot.mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let daemon_dir = bot.home.path().canonicalize().unwrap();
    assert!(
        system.contains(&format!("Workspace: {}", daemon_dir.display())),
        "{system}"
    );

    let status = bot.control(json!({"action":"clawbot_set","account":"default","enabled":true,"remote_tools":"owner"})).await;
    assert_eq!(
        status["status"]["components"][0]["restarts"], 1,
        "replaced: stopped and joined, then started"
    );
    assert_eq!(status["status"]["components"][0]["remote_tools"], "owner");
    bot.wait_state("connected").await;
    assert!(
        bot.ilink
            .wait_until(|f| f.calls("ilink/bot/msg/notifystop").len() == 1)
            .await,
        "the old instance stopped"
    );
    bot.stop().await;
}

#[tokio::test]
async fn an_unanswered_approval_is_denied_after_the_timeout() {
    let mut bot = Bot::start("clawbot_approval_timeout_ms = 300").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    let marker = bot.home.workspace().join("should-not-exist");
    bot.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": format!("touch {}", marker.display())}),
    )]));
    bot.mock.push(Reply::text(["Understood, not done."]));
    bot.ilink.inject_text(OWNER, "touch it");
    let sent = bot.wait_sent(OWNER, 3).await;
    assert!(
        sent[0].starts_with("Approve this tool call? Reply y or n.\n\nRun shell command: touch"),
        "{sent:?}"
    );
    assert_eq!(sent[1], "No answer in time; the tool call was denied.");
    assert_eq!(sent[2], "Understood, not done.");
    assert!(!marker.exists());
    // A late "y" is an ordinary prompt now, not an approval.
    bot.mock.push(Reply::text(["y to what?"]));
    bot.ilink.inject_text(OWNER, "y");
    assert_eq!(bot.wait_sent(OWNER, 4).await[3], "y to what?");
    bot.stop().await;
}

#[tokio::test]
async fn the_typing_ticket_is_cached_per_user() {
    let mut bot = Bot::start("").await;
    bot.enable("none").await;
    bot.wait_state("connected").await;
    for (i, answer) in ["one", "two", "three"].iter().enumerate() {
        bot.mock.push(Reply::text([*answer]));
        bot.ilink.inject_text(STRANGER, &format!("question {i}"));
        bot.wait_sent(STRANGER, i + 1).await;
    }
    assert!(
        bot.ilink
            .wait_until(|f| f
                .calls("ilink/bot/sendtyping")
                .iter()
                .filter(|c| c.body["status"] == 2)
                .count()
                == 3)
            .await
    );
    assert_eq!(
        bot.ilink.calls("ilink/bot/getconfig").len(),
        1,
        "one getconfig for three turns"
    );
    bot.stop().await;
}

#[tokio::test]
async fn the_owner_sees_where_it_works_and_what_failed() {
    let mut bot = Bot::start("").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.ilink.inject_text(OWNER, "/status");
    let sent = bot.wait_sent(OWNER, 1).await;
    let workspace = bot.home.workspace().display().to_string();
    assert!(
        sent[0].contains(&format!("workspace {workspace}")),
        "{sent:?}"
    );
    bot.mock
        .push(Reply::error(401, "Incorrect API key provided"));
    bot.ilink.inject_text(OWNER, "again");
    let sent = bot.wait_sent(OWNER, 2).await;
    assert!(
        sent[1].starts_with("The turn failed (provider_error): provider returned HTTP 401"),
        "{sent:?}"
    );
    bot.stop().await;
}

/// A repository's hooks that do not run because the workspace is not
/// trusted are said to the owner in chat, as every client says them; a
/// stranger is not told about the owner's workspace.
#[tokio::test]
async fn the_owner_is_told_what_an_untrusted_workspace_skipped() {
    let mut bot = Bot::start("").await;
    let workspace = bot.home.workspace();
    std::fs::create_dir_all(workspace.join(".scv")).unwrap();
    std::fs::write(
        workspace.join(".scv/hooks.json"),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": "touch \"$CLAUDE_PROJECT_DIR/ran\""}]}]}})
        .to_string(),
    )
    .unwrap();
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::text(["hello owner"]));
    bot.ilink.inject_text(OWNER, "hi");
    let sent = bot.wait_sent(OWNER, 2).await;
    assert!(
        sent[0].contains("not a trusted workspace") && sent[0].contains("scv trust"),
        "{sent:?}"
    );
    assert_eq!(sent[1], "hello owner");
    assert!(!workspace.join("ran").exists());
    bot.mock.push(Reply::text(["hello stranger"]));
    bot.ilink.inject_text("stranger@im.wechat", "hi");
    let sent = bot.wait_sent("stranger@im.wechat", 1).await;
    assert_eq!(sent, ["hello stranger"]);
    bot.stop().await;
}

#[tokio::test]
async fn a_tool_call_too_long_for_a_chat_message_cannot_be_approved_in_chat() {
    let mut bot = Bot::start("").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    let marker = bot.home.workspace().join("PWNED");
    let command = format!(
        "echo running-the-unit-tests-{}; touch {}",
        "x".repeat(3000),
        marker.display()
    );
    bot.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": command}),
    )]));
    bot.mock.push(Reply::text(["Not run."]));
    bot.ilink.inject_text(OWNER, "run the tests");
    let sent = bot.wait_sent(OWNER, 2).await;
    let chars = format!("Run shell command: {command}").chars().count();
    assert!(
        sent[0].starts_with(&format!(
            "SCV asked to run a tool call of {chars} characters; {} of them would be hidden here, so it is too long to approve here — approve it from a terminal. It was denied.",
            chars - 300
        )),
        "{sent:?}"
    );
    assert_eq!(sent[1], "Not run.");
    let results = bot.mock.requests()[1].body.to_string();
    assert!(
        results.contains("The user denied this tool call"),
        "{results}"
    );
    // A "y" now approves nothing.
    bot.mock.push(Reply::text(["y to what?"]));
    bot.ilink.inject_text(OWNER, "y");
    assert_eq!(bot.wait_sent(OWNER, 3).await[2], "y to what?");
    assert!(!marker.exists());
    bot.stop().await;
}

#[tokio::test]
async fn control_characters_in_a_command_are_shown_visibly_in_chat() {
    let mut bot = Bot::start("").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "touch PWNED\r\u{1b}[2Kecho harmless"}),
    )]));
    bot.mock.push(Reply::text(["Denied."]));
    bot.ilink.inject_text(OWNER, "go");
    let sent = bot.wait_sent(OWNER, 1).await;
    assert_eq!(
        sent[0],
        "Approve this tool call? Reply y or n.\n\nRun shell command: touch PWNED␍␛[2Kecho harmless"
    );
    bot.ilink.inject_text(OWNER, "n");
    bot.wait_sent(OWNER, 2).await;
    bot.stop().await;
}

#[tokio::test]
async fn strangers_are_bounded_in_turns_queue_and_open_sessions() {
    let mut bot = Bot::start("").await;
    bot.enable("none").await;
    bot.wait_state("connected").await;
    // Four strangers' turns run at once (the provider stalls them); a
    // fifth stranger is asked to wait instead of costing a request.
    for i in 0..4 {
        bot.mock.push_matching(
            &format!("busy {i}"),
            Reply::text(["…"]).then(1, Ending::Stall),
        );
        bot.ilink
            .inject_text(&format!("s{i}@im.wechat"), &format!("busy {i}"));
    }
    assert!(
        bot.ilink
            .wait_until(|_| bot.mock.request_count() == 4)
            .await
    );
    bot.ilink.inject_text("s4@im.wechat", "me too");
    let sent = bot.wait_sent("s4@im.wechat", 1).await;
    assert_eq!(
        sent,
        ["SCV is busy answering others; try again in a minute."]
    );
    // Behind a running turn, a stranger queues two prompts at most.
    bot.ilink.inject_text("s0@im.wechat", "second");
    bot.ilink.inject_text("s0@im.wechat", "third");
    bot.ilink.inject_text("s0@im.wechat", "fourth");
    let mut sent = bot.wait_sent("s0@im.wechat", 3).await;
    sent.sort();
    assert_eq!(
        sent,
        [
            "Queued; 1 waiting.",
            "Queued; 2 waiting.",
            "Your earlier messages are still waiting; send this again after the answer."
        ]
    );
    assert_eq!(bot.mock.request_count(), 4);
    bot.stop().await;
}

#[tokio::test]
async fn past_the_bound_the_least_recently_active_idle_session_makes_room() {
    let mut bot = Bot::start("").await;
    bot.enable("none").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::text(["noted"]));
    bot.ilink
        .inject_text("first@im.wechat", "remember the word teapot");
    bot.wait_sent("first@im.wechat", 1).await;
    // 64 more senders open sessions (/status needs one).
    for i in 0..64 {
        let user = format!("u{i}@im.wechat");
        bot.ilink.inject_text(&user, "/status");
        bot.wait_sent(&user, 1).await;
    }
    // The first sender's session was the one closed: it starts afresh.
    bot.mock.push(Reply::text(["what word?"]));
    bot.ilink.inject_text("first@im.wechat", "which word?");
    // The sender is told first that the conversation is new, then the
    // answer comes.
    let sent = bot.wait_sent("first@im.wechat", 3).await;
    assert_eq!(
        sent[1],
        "(This is a new conversation. Send /resume to continue the earlier one.)"
    );
    assert_eq!(sent[2], "what word?");
    let history = bot.mock.requests().last().unwrap().body.to_string();
    assert!(!history.contains("teapot"), "{history}");
    bot.stop().await;
}

/// Reloads and returns the task count the daemon logged for it.
async fn tasks_alive(bot: &mut Bot) -> usize {
    let before = bot.log.lines().len();
    bot.control(json!({"action":"reload"})).await;
    assert!(bot.log.wait_for("tasks alive in the daemon").await);
    for _ in 0..400 {
        let counts: Vec<usize> = bot.log.lines()[before..]
            .iter()
            .filter_map(|l| {
                let (_, rest) = l.split_once("reload: ")?;
                rest.split_whitespace().next()?.parse().ok()
            })
            .collect();
        if let Some(count) = counts.first() {
            return *count;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no task count logged: {:?}", bot.log.lines());
}

#[tokio::test]
async fn stopping_an_account_joins_every_task_and_sends_nothing_after() {
    for stop in ["disable", "logout"] {
        let mut bot = Bot::start("").await;
        let idle = tasks_alive(&mut bot).await;
        bot.enable("owner").await;
        bot.wait_state("connected").await;
        // A stranger's turn left running: a session, its reader and a
        // typing keep-alive are alive.
        bot.mock
            .push(Reply::text(["thinking…"]).then(1, Ending::Stall));
        bot.ilink.inject_text(STRANGER, "take your time");
        assert!(
            bot.ilink
                .wait_until(|f| !f.calls("ilink/bot/sendtyping").is_empty())
                .await
        );
        assert!(tasks_alive(&mut bot).await > idle);
        let answer = match stop {
            "disable" => {
                bot.control(json!({"action":"clawbot_set","account":"default","enabled":false}))
                    .await
            }
            _ => {
                bot.control(json!({"action":"clawbot_logout","account":"default"}))
                    .await
            }
        };
        assert_eq!(answer["type"], "daemon.status", "{answer}");
        let after = bot.ilink.call_count();
        // Longer than the typing keep-alive's period and a reconcile.
        tokio::time::sleep(Duration::from_millis(5500)).await;
        assert_eq!(
            bot.ilink.call_count(),
            after,
            "{stop}: a request after the account stopped"
        );
        assert_eq!(
            tasks_alive(&mut bot).await,
            idle,
            "{stop}: the task count came back"
        );
        bot.stop().await;
    }
}

#[tokio::test]
async fn the_owners_commands_run_in_the_same_sandbox_under_the_same_rules() {
    if !matches!(scv_sandbox::probe(), scv_sandbox::Support::Enforced { .. }) {
        assert!(std::env::var_os("SCV_REQUIRE_LANDLOCK").is_none());
        eprintln!("skipped: the sandbox is unavailable here");
        return;
    }
    // Outside: beside the build, not in a temp directory (writable).
    let outside = outside_dir();
    let target = outside.path().join("owner.txt");
    let mut bot = Bot::start("auto_approve = [\"read\", \"sandboxed\"]").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": format!("echo x > {}", target.display())}),
    )]));
    bot.mock.push(Reply::text(["It was refused."]));
    bot.ilink.inject_text(OWNER, "write outside");
    // No approval asked: the command is sandboxed and `sandboxed` is
    // auto-approved — and the path is not even there for it.
    let sent = bot.wait_sent(OWNER, 1).await;
    assert_eq!(sent[0], "It was refused.");
    // The tool message itself (the whole body also holds the bash tool's
    // description, which mentions "Permission denied").
    let body = bot.mock.requests()[1].body.clone();
    let tool_result = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c1")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool result in {body}"))
        .to_string();
    assert!(
        tool_result.contains("[exit code: 1]")
            && tool_result.contains("No such file or directory")
            && tool_result.contains("[sandbox: "),
        "{tool_result}"
    );
    assert!(!target.exists());
    bot.stop().await;
}

/// At 80 % of a budget the owner is told in chat, once.
#[tokio::test]
async fn the_owner_is_told_in_chat_at_80_percent_of_a_budget() {
    let mut bot = Bot::start(
        "max_output_tokens = 100\nmax_session_cost_usd = 0.5\n[pricing.\"mock-model\"]\ninput = 0\noutput = 1000\n",
    )
    .await;
    bot.enable("none").await;
    bot.wait_state("connected").await;
    // 450 output tokens at $0.001: $0.45 of $0.50.
    bot.mock.push(Reply::raw(
        vec![
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"spent"},"finish_reason":"stop"}]}).to_string(),
            json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":450}}).to_string(),
        ],
        Ending::Done,
    ));
    bot.ilink.inject_text(OWNER, "spend");
    let sent = bot.wait_sent(OWNER, 2).await;
    assert!(
        sent.iter()
            .any(|m| m == "SCV: 90% of budget max_session_cost_usd ($0.5000) spent: $0.4500"),
        "{sent:?}"
    );
    assert!(sent.iter().any(|m| m == "spent"), "{sent:?}");
    // The next request could cross it: not sent, and said.
    bot.ilink.inject_text(OWNER, "more");
    let sent = bot.wait_sent(OWNER, 3).await;
    assert!(
        sent[2].starts_with("The turn failed (step_limit): budget reached: spent $0.4500 of $0.5000 (max_session_cost_usd"),
        "{sent:?}"
    );
    assert_eq!(bot.mock.request_count(), 1);
    bot.stop().await;
}

/// Other users' chats spend the owner's money: at 80 % of the daily
/// budget the owner is told (once a day), the other user is not.
#[tokio::test]
async fn the_owner_is_told_when_other_users_pass_80_percent_of_the_daily_budget() {
    let mut bot = Bot::start(
        "max_output_tokens = 10\nmax_daily_cost_usd = 0.5\n[pricing.\"mock-model\"]\ninput = 0\noutput = 1000\n",
    )
    .await;
    bot.enable("none").await;
    bot.wait_state("connected").await;
    let spend = |tokens: u64| {
        Reply::raw(
            vec![
                json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"spent"},"finish_reason":"stop"}]}).to_string(),
                json!({"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":tokens}}).to_string(),
            ],
            Ending::Done,
        )
    };
    // $0.42 of $0.50 by one stranger, then $0.005 more by another.
    bot.mock.push(spend(420));
    bot.ilink.inject_text(STRANGER, "spend");
    assert_eq!(bot.wait_sent(STRANGER, 1).await, ["spent"]);
    let told = bot.wait_sent(OWNER, 1).await;
    assert_eq!(
        told,
        ["SCV: 84% of budget max_daily_cost_usd ($0.5000) spent: $0.4200 (while answering another WeChat user)"]
    );
    bot.mock.push(spend(5));
    bot.ilink.inject_text("second@im.wechat", "spend");
    assert_eq!(bot.wait_sent("second@im.wechat", 1).await, ["spent"]);
    assert_eq!(bot.mock.request_count(), 2);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(bot.ilink.sent_to(OWNER).len(), 1, "once a day");
    assert_eq!(
        bot.ilink.sent_to(STRANGER).len(),
        1,
        "the stranger is not told"
    );
    bot.stop().await;
}

/// The owner runs the workspace's custom commands as `/NAME args`; a
/// stranger's `/NAME` is plain text; a hook holds in chat as everywhere.
#[tokio::test]
async fn the_owner_runs_custom_commands_and_hooks_hold_in_chat() {
    let mut bot = Bot::start("auto_approve = [\"process\"]").await;
    let workspace = bot.home.workspace();
    std::fs::create_dir_all(workspace.join(".scv/commands")).unwrap();
    std::fs::write(
        workspace.join(".scv/commands/standup.md"),
        "Write standup notes for $ARGUMENTS.",
    )
    .unwrap();
    std::fs::write(
        workspace.join(".scv/hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "echo 'not from chat' >&2; exit 2"}]}]}})
        .to_string(),
    )
    .unwrap();
    bot.home.trust_workspace();
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::text(["Notes written."]));
    bot.ilink.inject_text(OWNER, "/standup the team");
    let sent = bot.wait_sent(OWNER, 1).await;
    assert_eq!(sent[0], "Notes written.");
    let prompt = bot.mock.requests()[0].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .clone();
    assert_eq!(prompt, "Write standup notes for the team.");

    bot.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "echo ran"}),
    )]));
    bot.mock.push(Reply::text(["Blocked, as the hook said."]));
    bot.ilink.inject_text(OWNER, "run it");
    bot.wait_sent(OWNER, 2).await;
    let result = bot.mock.requests()[2].body.to_string();
    assert!(result.contains("not from chat"), "{result}");
    assert!(!result.contains("ran\\n[exit code"), "{result}");

    bot.mock.push(Reply::text(["plain"]));
    bot.ilink.inject_text("stranger@im.wechat", "/standup me");
    bot.wait_sent("stranger@im.wechat", 1).await;
    let prompt = bot.mock.requests()[3].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .clone();
    assert_eq!(
        prompt, "/standup me",
        "a stranger's text is sent as written"
    );
    bot.stop().await;
}

#[tokio::test]
async fn the_owner_sees_one_line_per_subagent_when_it_ends() {
    let mut bot = Bot::start("").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::tool_calls(&[
        (
            "t1",
            "task",
            json!({"description": "find the answer", "prompt": "CHILD-ONE: what is it?"}),
        ),
        (
            "t2",
            "task",
            json!({"description": "check the answer", "prompt": "CHILD-TWO: is it right?"}),
        ),
    ]));
    // The children run at once: each gets the reply naming its prompt.
    bot.mock
        .push_matching("CHILD-ONE", Reply::text(["CHILD-TEXT one: 42"]));
    bot.mock
        .push_matching("CHILD-TWO", Reply::text(["CHILD-TEXT two: right"]));
    bot.mock.push(Reply::text(["It is 42, checked."]));
    bot.ilink.inject_text(OWNER, "ask two subagents");
    let sent = bot.wait_sent(OWNER, 3).await;
    let mut lines = sent[..2].to_vec();
    lines.sort();
    assert_eq!(
        lines,
        [
            "⤷ subagent «check the answer» done in 1 step",
            "⤷ subagent «find the answer» done in 1 step",
        ],
        "{sent:?}"
    );
    assert_eq!(sent[2], "It is 42, checked.");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = bot.ilink.sent_to(OWNER);
    assert_eq!(sent.len(), 3, "nothing of the children's text: {sent:?}");
    assert!(!sent.iter().any(|s| s.contains("CHILD-TEXT")));
    bot.stop().await;
}

#[tokio::test]
async fn the_owner_approves_a_subagents_tool_call_in_chat() {
    let mut bot = Bot::start("").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::tool_calls(&[(
        "t1",
        "task",
        json!({"description": "say hello", "prompt": "CHILD-ONE: run echo"}),
    )]));
    bot.mock.push(Reply::tool_calls(&[(
        "k1",
        "bash",
        json!({"command": "echo from-the-child"}),
    )]));
    bot.mock.push(Reply::text(["The child ran it."]));
    bot.mock.push(Reply::text(["Done: from-the-child."]));
    bot.ilink.inject_text(OWNER, "delegate it");
    let sent = bot.wait_sent(OWNER, 1).await;
    assert_eq!(
        sent[0],
        "Approve this tool call of subagent «say hello»? Reply y or n.\n\nRun shell command: echo from-the-child"
    );
    bot.ilink.inject_text(OWNER, "y");
    let sent = bot.wait_sent(OWNER, 3).await;
    assert_eq!(sent[1], "⤷ subagent «say hello» done in 2 steps");
    assert_eq!(sent[2], "Done: from-the-child.");
    let child_result = bot.mock.requests()[2].body.to_string();
    assert!(
        child_result.contains("from-the-child\\n[exit code: 0]"),
        "the child's call ran once approved: {child_result}"
    );
    bot.stop().await;
}

/// When the disk under `$SCV_HOME` fills the owner is told the
/// conversation is no longer saved (once), and that it is saved again once
/// there is room; the chat goes on meanwhile.
#[tokio::test]
async fn the_owner_is_told_when_the_disk_fills_and_when_the_chat_is_saved_again() {
    let Some(tmpfs) = common::tmpfs::Tmpfs::mount("2m") else {
        return;
    };
    let mut bot = Bot::start_in("", tmpfs.path()).await;
    bot.enable("none").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::text(["first answer"]));
    bot.ilink.inject_text(OWNER, "first");
    bot.wait_sent(OWNER, 1).await;

    common::tmpfs::fill(tmpfs.path());
    let long = format!("second answer {}", "lorem ipsum ".repeat(400));
    bot.mock.push(Reply::text([long.as_str()]));
    bot.ilink.inject_text(OWNER, "second");
    let sent = bot.wait_sent(OWNER, 3).await;
    let warned: Vec<&String> = sent
        .iter()
        .filter(|m| m.starts_with("SCV: not saved: the disk under SCV_HOME is full"))
        .collect();
    assert_eq!(warned.len(), 1, "{sent:?}");
    assert!(
        sent.iter().any(|m| m.starts_with("second answer")),
        "{sent:?}"
    );

    common::tmpfs::unfill(tmpfs.path());
    bot.mock.push(Reply::text(["third answer"]));
    bot.ilink.inject_text(OWNER, "third");
    assert!(
        bot.ilink
            .wait_until(|f| f
                .sent_to(OWNER)
                .iter()
                .any(|m| m.starts_with("SCV: saved again")))
            .await,
        "{:?}",
        bot.ilink.sent_to(OWNER)
    );
    bot.stop().await;
}

/// `/attach ID`: the owner follows a live detached session from the chat,
/// answers the approval it waits for, and gets its answer; the client
/// that detached it sees the same turn end. A stranger cannot attach.
#[tokio::test]
async fn the_owner_attaches_to_a_live_session_and_answers_its_approval() {
    let mut bot = Bot::start("").await;
    bot.enable("owner").await;
    bot.wait_state("connected").await;
    bot.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "echo from-the-background"}),
    )]));
    bot.mock.push(Reply::text(["Background work done."]));
    let mut cli = TestServer::connect(&bot.socket).await;
    cli.send(
        json!({"type":"initialize","request_id":"i","protocol_version":2,
        "capabilities":{"detach":true}}),
    )
    .await;
    cli.expect("initialized").await;
    let session = cli.start_session(&bot.home.workspace()).await;
    cli.send(json!({"type":"session.detach","request_id":"d","session_id":session}))
        .await;
    cli.expect("session.detached").await;
    cli.start_turn(&session, "t", "work in the background")
        .await;
    cli.until("approval.requested").await;

    bot.ilink
        .inject_text("stranger@im.wechat", &format!("/attach {}", &session[..8]));
    let refused = bot.wait_sent("stranger@im.wechat", 1).await;
    assert!(refused[0].contains("Only the owner"), "{refused:?}");

    bot.ilink
        .inject_text(OWNER, &format!("/attach {}", &session[..8]));
    let sent = bot.wait_sent(OWNER, 2).await;
    assert!(
        sent[0].starts_with(&format!("Following live session {}", &session[..8])),
        "{sent:?}"
    );
    assert!(sent[0].contains("waits for an approval"), "{sent:?}");
    assert_eq!(
        sent[1],
        "Approve this tool call? Reply y or n.\n\nRun shell command: echo from-the-background"
    );
    bot.ilink.inject_text(OWNER, "y");
    let sent = bot.wait_sent(OWNER, 3).await;
    assert_eq!(sent[2], "Background work done.");
    let events = cli.until_terminal().await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(events.iter().any(|e| e["type"] == "tool.completed"
        && e["output"]
            .as_str()
            .unwrap()
            .contains("from-the-background")));
    // Leaving with /new: the session goes on (still listed live).
    bot.ilink.inject_text(OWNER, "/new");
    let sent = bot.wait_sent(OWNER, 4).await;
    assert!(sent[3].starts_with("Left the live session"), "{sent:?}");
    cli.send(json!({"type":"session.close","request_id":"c","session_id":session}))
        .await;
    cli.until("session.closed").await;
    bot.stop().await;
}
