#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! OAuth for HTTP MCP servers, end to end: a real OAuth-protected MCP
//! server written with the official Python SDK (`mcp` 1.30: FastMCP as
//! resource server and, through the SDK's auth routes and provider
//! interface, its own authorization server with dynamic registration;
//! `mcp_oauth/oauth_server.py`), the real daemon, and `scv mcp login` /
//! `logout` / `list`. The browser's part of the login is played by a
//! small HTTP client: it opens the authorization URL `scv mcp login`
//! prints and follows the redirect to SCV's loopback listener.
//!
//! Without the Python SDK the tests skip with a message; with
//! `SCV_REQUIRE_MCP` set (CI) they fail instead.

mod common;
use common::*;
use scv_test_support::client::TestServer;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_oauth/oauth_server.py")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The OAuth-protected server on `port`, until dropped.
struct Protected {
    child: std::process::Child,
    log: PathBuf,
}

impl Protected {
    async fn start(python: &Path, port: u16, log: &Path, ttl: u64, refresh_delay: f64) -> Self {
        Protected::start_with(python, port, log, ttl, refresh_delay, None).await
    }

    /// [`Protected::start`]; with `document`, its authorization server
    /// supports client ID metadata documents and knows that one.
    async fn start_with(
        python: &Path,
        port: u16,
        log: &Path,
        ttl: u64,
        refresh_delay: f64,
        document: Option<&str>,
    ) -> Self {
        let mut command = std::process::Command::new(python);
        command
            .arg(script())
            .arg(port.to_string())
            .env("SCV_MCP_LOG", log)
            .env("SCV_TOKEN_TTL", ttl.to_string())
            .env("SCV_REFRESH_DELAY", refresh_delay.to_string())
            .stderr(Stdio::null());
        if let Some(document) = document {
            command.env("SCV_CIMD_URL", document);
        }
        let child = command.spawn().unwrap();
        let server = Protected {
            child,
            log: log.to_path_buf(),
        };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the OAuth MCP server did not listen on {port}");
    }

    /// The events it recorded named `event`.
    fn events(&self, event: &str) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["event"] == event)
            .collect()
    }
}

impl Drop for Protected {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A GET as a browser sends it, without following redirects: the status
/// and the `Location` header.
fn get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let status = reply
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let location = reply
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("location:"))
        .map(|l| l["location:".len()..].trim().to_string());
    (status, location)
}

/// `scv mcp login NAME`, with the browser's part played here; its
/// output.
fn login(home: &Home, name: &str) -> String {
    let mut child = home
        .scv()
        .args(["mcp", "login", name])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut printed = String::new();
    let auth_url = loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "no URL printed: {printed}"
        );
        printed.push_str(&line);
        if let Some(url) = line.trim().strip_prefix("http://") {
            break format!("http://{url}");
        }
    };
    assert!(
        auth_url.contains("code_challenge_method=S256"),
        "{auth_url}"
    );
    assert!(auth_url.contains("state="), "{auth_url}");
    assert!(auth_url.contains("resource="), "{auth_url}");
    // The authorization server approves and redirects to the loopback.
    let (status, location) = get(&auth_url);
    assert_eq!(status, 302, "{auth_url}");
    let callback = location.unwrap();
    assert!(
        callback.starts_with("http://127.0.0.1:") && callback.contains("/callback?"),
        "{callback}"
    );
    let (status, _) = get(&callback);
    assert_eq!(status, 200);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    printed.push_str(&rest);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{printed}{err}");
    printed
}

/// `scv mcp list`'s line for `name`, once `until` holds of it (bounded).
async fn listed(home: &Home, name: &str, until: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..150 {
        let output = home.scv().args(["mcp", "list"]).output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        last = stdout(&output);
        if let Some(line) = last.lines().find(|l| l.starts_with(&format!("{name} "))) {
            if until(line) {
                return line.to_string();
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("`scv mcp list` never showed what was awaited for {name}: {last}");
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn login_list_call_refresh_once_for_three_sessions_and_logout() {
    let Some(python) = scv_test_support::mcp_python::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // Tokens live 6 s (SCV refreshes in their second half); a refresh
    // takes the server 1 s, so concurrent callers meet while it runs.
    let server = Protected::start(&python, port, &dir.path().join("events.jsonl"), 6, 1.0).await;
    let mock = MockProvider::start().await;
    let home = Home::new(
        &mock,
        &format!(
            "[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nauth = \"oauth\"\nauto_approve = true\n"
        ),
    );

    // Not logged in: the list says so and names the command.
    let line = listed(&home, "web", |l| l.contains("failed")).await;
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[..3], ["web", "failed", "no"], "{line}");
    assert!(
        line.contains("needs a login: run `scv mcp login web`"),
        "{line}"
    );

    // Log in: discovery, dynamic registration, PKCE, the loopback redirect.
    let printed = login(&home, "web");
    assert!(printed.contains("Logged in to `web`"), "{printed}");
    let registered = server.events("register");
    assert_eq!(registered.len(), 1, "{registered:?}");
    assert_eq!(registered[0]["auth_method"], "none");
    let authorized = server.events("authorize");
    assert_eq!(
        authorized[0]["resource"],
        format!("http://127.0.0.1:{port}/mcp"),
        "the resource indicator is sent"
    );
    assert_eq!(authorized[0]["state_sent"], true);
    let tokens = server.events("token");
    assert_eq!(tokens.len(), 1);
    assert_eq!(
        tokens[0]["resource"],
        format!("http://127.0.0.1:{port}/mcp")
    );

    // One file, private, in a private directory; the token is nowhere else.
    let auth_dir = home.path().join("mcp-auth");
    assert_eq!(
        std::fs::metadata(&auth_dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let stored: Vec<PathBuf> = files(&auth_dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(
        std::fs::metadata(&stored[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let record: Value = serde_json::from_slice(&std::fs::read(&stored[0]).unwrap()).unwrap();
    let token = record["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(token.starts_with("at-"));
    assert_eq!(
        record["credentials"]["issuer"],
        format!("http://127.0.0.1:{port}/")
    );

    // The running daemon takes the login up without a restart.
    let line = listed(&home, "web", |l| l.contains("connected")).await;
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[..4], ["web", "connected", "yes", "2"], "{line}");

    // Three sessions call at the same moment once the token is due for
    // a refresh: one refresh serves all three.
    let mut clients = Vec::new();
    for _ in 0..3 {
        let mut client = TestServer::connect(&home.socket()).await;
        client.initialize().await;
        let session = client.start_session(&home.workspace()).await;
        clients.push((client, session));
    }
    let refreshes_before = server.events("refresh").len();
    // Wait into the token's second half (SCV refreshes there); the
    // daemon's own requests may have refreshed already, so wait for the
    // half of whichever token is current.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    for _ in 0..3 {
        mock.push(Reply::tool_calls(&[("w", "mcp__web__whoami", json!({}))]));
    }
    for _ in 0..3 {
        mock.push(Reply::text(["done"]));
    }
    for (n, (client, session)) in clients.iter_mut().enumerate() {
        client
            .start_turn(session, &format!("t{n}"), "who am i")
            .await;
    }
    let mut outputs = Vec::new();
    for (client, _) in clients.iter_mut() {
        let events = client.until_terminal().await;
        assert_eq!(
            events.last().unwrap()["type"],
            "turn.completed",
            "{events:?}"
        );
        let done: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "tool.completed")
            .collect();
        assert_eq!(done.len(), 1, "{events:?}");
        outputs.push((done[0]["success"].clone(), done[0]["output"].clone()));
    }
    let client_id = registered[0]["client_id"].as_str().unwrap();
    for (success, output) in &outputs {
        assert_eq!(success, &json!(true), "{outputs:?}");
        assert_eq!(output, &json!(format!("client {client_id}")), "{outputs:?}");
    }
    let refreshes = server.events("refresh").len() - refreshes_before;
    assert_eq!(refreshes, 1, "three callers, one refresh");
    assert!(server.events("refresh_refused").is_empty());
    // The rotated refresh token was saved: the stored one is the new one.
    let record: Value = serde_json::from_slice(&std::fs::read(&stored[0]).unwrap()).unwrap();
    let now = record["credentials"]["token_response"]["access_token"]
        .as_str()
        .unwrap();
    assert_ne!(now, token, "the refreshed token was stored");
    assert_eq!(
        std::fs::metadata(&stored[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Neither token reached the daemon's log or the config.
    for file in files(home.path()) {
        if file.starts_with(&auth_dir) {
            continue;
        }
        let Ok(text) = std::fs::read(&file) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        assert!(
            !text.contains(&token) && !text.contains(now),
            "a token leaked into {}",
            file.display()
        );
    }

    // Log out: the daemon stops sending the token at once.
    let output = home.scv().args(["mcp", "logout", "web"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("Logged out of `web`"));
    assert!(files(&auth_dir)
        .iter()
        .all(|p| p.extension().is_none_or(|e| e != "json")));
    let line = listed(&home, "web", |l| l.contains("failed")).await;
    assert!(line.contains("scv mcp login web"), "{line}");
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[..3], ["web", "failed", "no"], "{line}");
    let output = home.scv().args(["mcp", "logout", "web"]).output().unwrap();
    assert!(stdout(&output).contains("was not logged in"));
}

#[tokio::test(flavor = "multi_thread")]
async fn login_names_unknown_and_stdio_servers() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "[mcp_servers.local]\ncommand = \"true\"\n");
    let output = home.scv().args(["mcp", "login", "nope"]).output().unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("no MCP server `nope`"),
        "{}",
        stderr(&output)
    );
    let output = home.scv().args(["mcp", "login", "local"]).output().unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("only `url` servers log in"),
        "{}",
        stderr(&output)
    );
}

/// A server found to need OAuth by its 401 (no `auth` key), and an
/// authorization server that forgets the login (here: restarted, its
/// clients and tokens gone): the refresh is refused, and the tool call,
/// the list and the status say to log in again, in words.
#[tokio::test(flavor = "multi_thread")]
async fn a_401_asks_for_a_login_and_a_refused_refresh_says_to_log_in_again() {
    let Some(python) = scv_test_support::mcp_python::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = dir.path().join("events.jsonl");
    let server = Protected::start(&python, port, &log, 3600, 0.0).await;
    let mock = MockProvider::start().await;
    let home = Home::new(
        &mock,
        &format!("[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nauto_approve = true\n"),
    );
    let line = listed(&home, "web", |l| l.contains("failed")).await;
    assert!(
        line.contains("needs a login: run `scv mcp login web`"),
        "{line}"
    );
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[..3], ["web", "failed", "no"], "{line}");

    login(&home, "web");
    listed(&home, "web", |l| {
        l.contains("connected") && l.contains(" yes ")
    })
    .await;

    // The authorization server forgets everything.
    drop(server);
    let _server = Protected::start(&python, port, &log, 3600, 0.0).await;
    let mut client = TestServer::connect(&home.socket()).await;
    client.initialize().await;
    let session = client.start_session(&home.workspace()).await;
    mock.push(Reply::tool_calls(&[("w", "mcp__web__whoami", json!({}))]));
    mock.push(Reply::text(["done"]));
    client.start_turn(&session, "t", "who am i").await;
    let events = client.until_terminal().await;
    let done: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .collect();
    assert_eq!(done.len(), 1, "{events:?}");
    assert_eq!(done[0]["success"], false);
    let output = done[0]["output"].as_str().unwrap();
    let daemon_log = files(home.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect::<String>();
    assert!(
        output.contains("scv mcp login web"),
        "{output}\n{daemon_log}"
    );
    let line = listed(&home, "web", |l| l.contains("failed")).await;
    assert!(
        line.contains("needs a login: run `scv mcp login web`"),
        "{line}"
    );
    // A session opened now is told, in words, what to run (`scv exec`
    // says it on stderr; the TUI, ACP and ClawBot's owner as they say
    // what the configuration skipped).
    mock.push(Reply::text(["hello"]));
    let output = home.scv().args(["exec", "hi"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .contains("[config] MCP server `web` needs a login: run `scv mcp login web`"),
        "{}",
        stderr(&output)
    );
}

/// Headless and CI use: a server whose table names a client of the
/// authorization server (`client_id`, `client_secret_env`) gets its tokens
/// itself (client credentials grant, `resource` sent), with no login; a
/// wrong secret says so.
#[tokio::test(flavor = "multi_thread")]
async fn client_credentials_need_no_login_and_a_wrong_secret_is_said() {
    let Some(python) = scv_test_support::mcp_python::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (as_port, rs_port) = (free_port(), free_port());
    let log = dir.path().join("events.jsonl");
    let child = std::process::Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_oauth/cc_server.py"))
        .args([as_port.to_string(), rs_port.to_string()])
        .env("SCV_MCP_LOG", &log)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Protected {
        child,
        log: log.clone(),
    };
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", rs_port)).is_ok()
            && std::net::TcpStream::connect(("127.0.0.1", as_port)).is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mock = MockProvider::start().await;
    let table = |name: &str| {
        format!(
            "[mcp_servers.{name}]\nurl = \"http://127.0.0.1:{rs_port}/mcp\"\nauth = \"oauth\"\nclient_id = \"ci-bot\"\nclient_secret_env = \"{}_SECRET\"\nauto_approve = true\n",
            name.to_uppercase()
        )
    };
    let home = Home::new(&mock, &format!("{}{}", table("ci"), table("bad")));
    let scv = |args: &[&str]| {
        home.scv()
            .args(args)
            .env("CI_SECRET", "s3cret")
            .env("BAD_SECRET", "wrong")
            .output()
            .unwrap()
    };
    let mut listed = String::new();
    for _ in 0..150 {
        listed = stdout(&scv(&["mcp", "list"]));
        if listed.contains("ci ") && listed.contains("connected") && listed.contains("refused") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let line = |name: &str| {
        listed
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("ci").contains("connected"), "{listed}");
    assert!(
        line("bad").contains("failed")
            && line("bad").contains("the client credentials were refused"),
        "{listed}"
    );
    assert!(
        !listed.contains("s3cret") && !listed.contains("wrong"),
        "{listed}"
    );
    let tokens = server.events("token");
    assert!(!tokens.is_empty());
    assert_eq!(
        tokens[0]["resource"],
        format!("http://127.0.0.1:{rs_port}/mcp")
    );

    let mut client = TestServer::connect(&home.socket()).await;
    client.initialize().await;
    let session = client.start_session(&home.workspace()).await;
    mock.push(Reply::tool_calls(&[("w", "mcp__ci__whoami", json!({}))]));
    mock.push(Reply::text(["done"]));
    client.start_turn(&session, "t", "who am i").await;
    let events = client.until_terminal().await;
    let done: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .collect();
    assert_eq!(done[0]["output"], "client ci-bot", "{events:?}");
}

/// Client ID metadata documents (MCP authorization 2025-11-25): with
/// `client_metadata_url`, `scv mcp login` uses that URL as its client id
/// at an authorization server that says it supports such documents (no
/// registration), and registers dynamically at one that does not.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_id_metadata_document_comes_first_and_registration_is_the_fallback() {
    const DOCUMENT: &str = "https://scv.example/oauth/client-metadata.json";
    let Some(python) = scv_test_support::mcp_python::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (docs_port, plain_port) = (free_port(), free_port());
    let docs = Protected::start_with(
        &python,
        docs_port,
        &dir.path().join("docs.jsonl"),
        3600,
        0.0,
        Some(DOCUMENT),
    )
    .await;
    let plain = Protected::start(
        &python,
        plain_port,
        &dir.path().join("plain.jsonl"),
        3600,
        0.0,
    )
    .await;
    let mock = MockProvider::start().await;
    let table = |name: &str, port: u16| {
        format!(
            "[mcp_servers.{name}]\nurl = \"http://127.0.0.1:{port}/mcp\"\nauth = \"oauth\"\nclient_metadata_url = \"{DOCUMENT}\"\n"
        )
    };
    let home = Home::new(
        &mock,
        &format!("{}{}", table("docs", docs_port), table("plain", plain_port)),
    );

    let printed = login(&home, "docs");
    assert!(printed.contains("Logged in to `docs`"), "{printed}");
    assert!(docs.events("register").is_empty(), "no registration");
    let authorized = docs.events("authorize");
    assert_eq!(authorized.len(), 1, "{authorized:?}");
    assert_eq!(authorized[0]["client_id"], DOCUMENT);
    assert!(!docs.events("cimd").is_empty());
    assert_eq!(docs.events("token").len(), 1);
    let line = listed(&home, "docs", |l| l.contains("connected")).await;
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[..3], ["docs", "connected", "yes"], "{line}");

    let printed = login(&home, "plain");
    assert!(printed.contains("Logged in to `plain`"), "{printed}");
    let registered = plain.events("register");
    assert_eq!(registered.len(), 1, "dynamic registration: {registered:?}");
    assert_ne!(plain.events("authorize")[0]["client_id"], DOCUMENT);
    listed(&home, "plain", |l| l.contains("connected")).await;
}
