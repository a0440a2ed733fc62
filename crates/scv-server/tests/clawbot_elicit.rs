#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! MCP elicitation in ClawBot, end to end: the real daemon, the fake
//! iLink server, the mock provider and an MCP server written with the
//! official Python SDK (`tests/mcp/fake_server.py`) that asks during a
//! tool call of the owner's turn. The owner is asked in chat and answers
//! there (a wrong answer is said and the question stays open); another
//! user's messages never answer it. An MCP server that needs a login is
//! said to the owner as a chat opens, with the command to run.
//!
//! Without the Python SDK the tests skip with a message; with
//! `SCV_REQUIRE_MCP` set (CI) they fail instead.

mod common;
use common::*;
use scv_ilink::{AccountStore, Credentials};
use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use scv_test_support::fake_ilink::FakeIlink;
use std::path::Path;
use std::time::Duration;
use tokio::process::Child;

const TOKEN: &str = "tok-SECRET-elicit";
const OWNER: &str = "owner@im.wechat";
const STRANGER: &str = "stranger@im.wechat";

struct Bot {
    ilink: FakeIlink,
    mock: MockProvider,
    home: TestHome,
    daemon: Child,
    _log: DaemonLog,
    client: TestServer,
}

impl Bot {
    /// A logged-in `default` account, enabled with tools for the owner,
    /// whose daemon runs the fake MCP server as `fake`.
    async fn start() -> Option<Bot> {
        let python = scv_test_support::mcp_python::python()?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/fake_server.py");
        let table = format!(
            "[mcp_servers.fake]\ncommand = {}\nargs = [{}, \"stdio\"]\nauto_approve = true\n",
            serde_json::to_string(&python.display().to_string()).unwrap(),
            serde_json::to_string(&script.display().to_string()).unwrap(),
        );
        Some(Bot::start_with(&table).await)
    }

    /// [`Bot::start`] with `table` as the configuration's extra lines.
    async fn start_with(table: &str) -> Bot {
        let ilink = FakeIlink::start().await;
        ilink.allow_token(TOKEN);
        let mock = MockProvider::start().await;
        let home = TestHome::new_in(&std::env::temp_dir(), &mock.base_url(), table);
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
        wait_for_socket(&socket).await;
        let mut client = TestServer::connect(&socket).await;
        client.initialize().await;
        let mut bot = Bot {
            ilink,
            mock,
            home,
            daemon,
            _log: log,
            client,
        };
        let workspace = bot.home.workspace();
        bot.client
            .send(json!({"type":"daemon.control","request_id":"c","command":
                {"action":"clawbot_set","account":"default","enabled":true,
                 "workspace":workspace,"remote_tools":"owner"}}))
            .await;
        bot.client.next().await;
        bot
    }

    async fn wait_sent(&self, user: &str, n: usize) -> Vec<String> {
        assert!(
            self.ilink.wait_until(|f| f.sent_to(user).len() >= n).await,
            "sent to {user}: {:?}",
            self.ilink.sent_to(user)
        );
        self.ilink.sent_to(user)
    }

    /// Chats with the owner until the model is offered the fake server's
    /// tools; how many messages the owner got meanwhile.
    async fn until_tools(&self) -> usize {
        for n in 1..=80 {
            self.mock.push(Reply::text(["hello"]));
            self.ilink.inject_text(OWNER, "are the tools there");
            self.wait_sent(OWNER, n).await;
            let requests = self.mock.requests();
            let offered = requests.last().unwrap().body["tools"].to_string();
            if offered.contains("mcp__fake__ask_form") {
                return n;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the fake server's tools were never offered");
    }

    async fn stop(&mut self) {
        unsafe { libc::kill(self.daemon.id().unwrap() as i32, libc::SIGTERM) };
        assert!(self.daemon.wait().await.unwrap().success());
    }
}

/// The tool result the model got in its last request.
fn tool_result(mock: &MockProvider) -> String {
    let requests = mock.requests();
    let body = &requests.last().unwrap().body;
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("no tool result in {body}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_owner_is_asked_in_chat_and_only_the_owner_answers() {
    let Some(mut bot) = Bot::start().await else {
        return;
    };
    let mut n = bot.until_tools().await;
    bot.mock.push(Reply::tool_calls(&[(
        "q",
        "mcp__fake__ask_form",
        json!({"question": "Who are you?"}),
    )]));
    bot.mock.push(Reply::text(["done"]));
    bot.ilink.inject_text(OWNER, "ask me");
    n += 1;
    let sent = bot.wait_sent(OWNER, n).await;
    let question = &sent[n - 1];
    assert!(
        question.starts_with("MCP server `fake` asks: Who are you?"),
        "{question}"
    );
    // The fields by key: age, then name.
    assert!(
        question.contains("1. Age — a whole number, required\n2. Name — text, required"),
        "{question}"
    );

    // Another user's message is their own prompt, never the answer.
    bot.mock
        .push_matching("I am Ada too", Reply::text(["hi stranger"]));
    bot.ilink.inject_text(STRANGER, "I am Ada too\n36");
    let stranger = bot.wait_sent(STRANGER, 1).await;
    assert_eq!(stranger.last().unwrap(), "hi stranger");

    // A wrong answer: said, the question stays open.
    bot.ilink.inject_text(OWNER, "36\nA");
    n += 1;
    let sent = bot.wait_sent(OWNER, n).await;
    assert_eq!(
        sent[n - 1],
        "Not sent: `name` must be at least 2 characters. Reply again, or decline / cancel."
    );
    bot.ilink.inject_text(OWNER, "36\nAda");
    n += 2;
    let sent = bot.wait_sent(OWNER, n).await;
    assert_eq!(sent[n - 2..], ["Sent.", "done"]);
    assert_eq!(
        tool_result(&bot.mock),
        r#"form: accept {"age": 36, "name": "Ada"}"#
    );

    // A link: shown, and `decline` declines it.
    bot.mock
        .push(Reply::tool_calls(&[("u", "mcp__fake__ask_url", json!({}))]));
    bot.mock.push(Reply::text(["linked"]));
    bot.ilink.inject_text(OWNER, "connect");
    n += 1;
    let sent = bot.wait_sent(OWNER, n).await;
    assert!(
        sent[n - 1].contains("https://example.com/connect?id=7"),
        "{}",
        sent[n - 1]
    );
    bot.ilink.inject_text(OWNER, "decline");
    n += 2;
    let sent = bot.wait_sent(OWNER, n).await;
    assert_eq!(sent[n - 2..], ["Declined.", "linked"]);
    assert_eq!(tool_result(&bot.mock), "url: decline");
    bot.stop().await;
}

/// An OAuth server with no login fails at once ("needs a login"); a chat
/// the owner opens then is told, in words, what to run.
#[tokio::test(flavor = "multi_thread")]
async fn the_owner_is_told_which_mcp_server_needs_a_login() {
    let mut bot =
        Bot::start_with("[mcp_servers.web]\nurl = \"http://127.0.0.1:9/mcp\"\nauth = \"oauth\"\n")
            .await;
    const WORDS: &str = "MCP server `web` needs a login: run `scv mcp login web`";
    // Sessions opened here say it once the server has failed.
    let workspace = bot.home.workspace();
    let mut said = false;
    for _ in 0..100 {
        bot.client
            .send(json!({"type":"session.start","request_id":"s","cwd":workspace}))
            .await;
        let started = bot.client.expect("session.started").await;
        bot.client.expect("queue.snapshot").await;
        if started["config_warnings"].to_string().contains(WORDS) {
            said = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(said, "no session was told the server needs a login");
    bot.mock.push(Reply::text(["hello owner"]));
    bot.ilink.inject_text(OWNER, "hi");
    let sent = bot.wait_sent(OWNER, 2).await;
    assert_eq!(sent[0], format!("⚠ {WORDS}"));
    assert_eq!(sent[1], "hello owner");
    bot.stop().await;
}
