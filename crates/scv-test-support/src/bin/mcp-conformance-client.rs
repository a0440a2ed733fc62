#![allow(clippy::unwrap_used, clippy::expect_used)] // test-only: a broken set-up fails loudly
//! The client under test for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance client --command
//! mcp-conformance-client`): SCV, whole. The suite appends its test
//! server's URL and names the scenario in `MCP_CONFORMANCE_SCENARIO`
//! (context such as client credentials in `MCP_CONFORMANCE_CONTEXT`).
//!
//! This program makes a home whose `[mcp_servers.conf]` is that URL
//! (`auth = "oauth"` for the authorization scenarios, client credentials
//! where the context has them), logs in with the real `scv mcp login`
//! when the scenario needs a login (playing the browser: it follows the
//! authorization URL to SCV's loopback listener), then runs the real
//! `scv-server --stdio` against the scripted mock provider: a session,
//! turns until the server's tools are offered, and one turn whose model
//! calls each of them with arguments made from its schema. A question
//! the server asks is accepted as the form stands (no field typed).
//!
//! `SCV_BIN` and `SCV_SERVER_BIN` name the binaries; with
//! `SCV_CONFORMANCE_LOG` set, what it saw is appended there too (the
//! suite shows a client's output only when it fails).

use scv_test_support::{MockProvider, Reply, TestHome, TestServer};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

const SERVER: &str = "conf";
/// The client ID metadata document URL the suite's authorization servers
/// accept.
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

#[tokio::main]
async fn main() {
    let url = std::env::args().next_back().expect("the server URL");
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), &table(&url, &scenario, &context));
    let secret = context["client_secret"].as_str().unwrap_or_default();
    let env = [("CONF_CLIENT_SECRET", secret)];
    if scenario.starts_with("auth/") && context["client_id"].is_null() {
        login(home.path());
    }
    let server_bin = std::env::var("SCV_SERVER_BIN").expect("SCV_SERVER_BIN");
    let mut server = TestServer::spawn_with(&server_bin, home.path(), &env);
    server
        .send(
            json!({"type":"initialize","request_id":"i","protocol_version":2,
                     "capabilities":{"elicitation": true}}),
        )
        .await;
    server.expect("initialized").await;
    let session = server.start_session(&home.workspace()).await;
    // A server with no tools (the `initialize` scenario) leaves nothing
    // to call: the suite's checks of what it saw are the verdict.
    match offered_tools(&mut server, &mock, &session).await {
        Some(tools) => call_each(&mut server, &mock, &session, &tools).await,
        None => say("no tools were offered"),
    }
}

/// The home's MCP table for the scenario.
fn table(url: &str, scenario: &str, context: &Value) -> String {
    let mut table = format!("[mcp_servers.{SERVER}]\nurl = {url:?}\nauto_approve = true\n");
    if scenario.starts_with("auth/") {
        table.push_str("auth = \"oauth\"\n");
        match context["client_id"].as_str() {
            Some(id) => table.push_str(&format!(
                "client_id = {id:?}\nclient_secret_env = \"CONF_CLIENT_SECRET\"\n"
            )),
            // The document the suite's servers know (its client's own);
            // one without CIMD support gets a registration instead.
            None => table.push_str(&format!("client_metadata_url = {CIMD_URL:?}\n")),
        }
    }
    table
}

/// `scv mcp login`, with this program as the browser.
fn login(home: &std::path::Path) {
    let scv = std::env::var("SCV_BIN").expect("SCV_BIN");
    let mut child = Command::new(scv)
        .args(["mcp", "login", SERVER])
        .env("SCV_HOME", home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scv mcp login");
    let mut errors = child.stderr.take().expect("stderr");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let authorize = loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            let mut said = String::new();
            let _ = errors.read_to_string(&mut said);
            say(&format!(
                "scv mcp login printed no authorization URL: {said}"
            ));
            let _ = child.wait();
            return;
        }
        let line = line.trim();
        if line.starts_with("http://") || line.starts_with("https://") {
            break line.to_string();
        }
    };
    follow(&authorize);
    let status = child.wait().expect("scv mcp login ends");
    let mut said = String::new();
    let _ = errors.read_to_string(&mut said);
    say(&format!("scv mcp login: {status} {said}"));
}

/// GETs `url` and follows its redirects (the authorization server's
/// approval, then SCV's loopback), as a browser would.
fn follow(url: &str) {
    let mut url = url.to_string();
    for _ in 0..8 {
        let Some((status, location)) = get(&url) else {
            return;
        };
        match location {
            Some(next) if (300..400).contains(&status) => url = next,
            _ => return,
        }
    }
}

/// One plain-HTTP GET: the status and the `Location` header.
fn get(url: &str) -> Option<(u16, Option<String>)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut stream =
        std::net::TcpStream::connect(authority.replace("localhost", "127.0.0.1")).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .ok()?;
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let status = answer.split_whitespace().nth(1)?.parse().ok()?;
    let location = answer
        .lines()
        .take_while(|line| !line.is_empty())
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_string())
        });
    Some((status, location))
}

/// Turns until the server's tools are offered; their definitions.
async fn offered_tools(
    server: &mut TestServer,
    mock: &MockProvider,
    session: &str,
) -> Option<Vec<Value>> {
    for n in 0..60 {
        mock.push(Reply::text(["ready?"]));
        server
            .start_turn(session, &format!("w{n}"), "are the tools there")
            .await;
        server.until_terminal().await;
        let tools: Vec<Value> = mock.requests().last()?.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| {
                t["function"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("mcp__conf__"))
            })
            .cloned()
            .collect();
        if !tools.is_empty() {
            return Some(tools);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// One turn whose model calls every tool once; questions are accepted.
async fn call_each(server: &mut TestServer, mock: &MockProvider, session: &str, tools: &[Value]) {
    let calls: Vec<(String, String, Value)> = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let name = tool["function"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            (
                format!("c{i}"),
                name,
                arguments(&tool["function"]["parameters"]),
            )
        })
        .collect();
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
        .collect();
    mock.push(Reply::tool_calls(&calls));
    mock.push(Reply::text(["done"]));
    server.start_turn(session, "calls", "call the tools").await;
    loop {
        let event = server.next().await;
        match event["type"].as_str() {
            Some("elicitation.requested") => {
                server
                    .send(
                        json!({"type":"elicitation.resolve","request_id":"e","session_id":session,
                        "elicitation_id":event["elicitation_id"],"action":"accept"}),
                    )
                    .await;
            }
            Some("tool.completed") => say(&format!("{}: {}", event["call_id"], event["output"])),
            Some("turn.completed" | "turn.failed") => return,
            _ => {}
        }
    }
}

/// Arguments for a tool from its JSON schema: numbers count up from 2,
/// strings say "conformance", booleans are true.
fn arguments(schema: &Value) -> Value {
    let mut arguments = serde_json::Map::new();
    let mut number = 2;
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let value = match property["type"].as_str() {
            Some("integer" | "number") => {
                number += 1;
                json!(number - 1)
            }
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("conformance"),
        };
        arguments.insert(name.clone(), value);
    }
    Value::Object(arguments)
}

/// A line on stderr, and in `SCV_CONFORMANCE_LOG` when set.
fn say(line: &str) {
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("SCV_CONFORMANCE_LOG") {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "{line}");
        }
    }
}
