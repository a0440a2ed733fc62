#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly
//! What SCV adds to an MCP tool call (`cargo bench -p scv-server --bench
//! mcp`): the same `echo` tool of the same Python SDK server (the test
//! server in tests/mcp), called through the release `scv-server --stdio`
//! (timed from `tool.started` to `tool.completed` as its client sees them)
//! and directly with the official Rust SDK (`rmcp`, `call_tool` on a peer
//! over the child's pipes), calls interleaved, in the same run. Needs the
//! venv `.ci/run` makes (`target/mcp-venv`); without it, says so.

use rmcp::model::CallToolRequestParams;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::ServiceExt;
use scv_test_support::client::{TestHome, TestServer};
use scv_test_support::mock_provider::{MockProvider, Reply};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const CALLS: usize = 60;

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python: PathBuf = root.join("../../target/mcp-venv/bin/python3");
    if !python.exists() {
        println!("no {} (run .ci/run); nothing to measure", python.display());
        return;
    }
    let script = root.join("tests/mcp/fake_server.py");

    // Through SCV.
    let mock = MockProvider::start().await;
    let table = format!(
        "[mcp_servers.fake]\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\nauto_approve = true\n",
        python.display().to_string(),
        script.display().to_string()
    );
    let home = TestHome::new(&mock.base_url(), &table);
    let mut scv = TestServer::spawn(BIN, home.path());
    scv.initialize().await;
    let session = scv.start_session(&home.workspace()).await;

    // Directly.
    let mut child = tokio::process::Command::new(&python)
        .arg(&script)
        .arg("stdio")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport =
        AsyncRwTransport::new_client(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let direct = ().serve(transport).await.unwrap();

    let mut through = Vec::new();
    let mut plain = Vec::new();
    let mut warm = false;
    let mut n = 0;
    while through.len() < CALLS {
        n += 1;
        mock.push(Reply::tool_calls(&[(
            "c",
            "mcp__fake__echo",
            json!({"text": "ping"}),
        )]));
        mock.push(Reply::text(["ok"]));
        scv.start_turn(&session, &format!("t{n}"), "echo").await;
        let mut started = None;
        let mut took = None;
        loop {
            let event = scv.next().await;
            match event["type"].as_str().unwrap() {
                "tool.started" => started = Some(Instant::now()),
                // Until the server is up the call is unknown; skip those.
                "tool.completed" if event["success"] == true => {
                    took = started.map(|s| s.elapsed());
                }
                "turn.completed" | "turn.failed" => break,
                _ => {}
            }
        }
        let Some(took) = took else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let start = Instant::now();
        let params = CallToolRequestParams::new("echo")
            .with_arguments(json!({"text": "ping"}).as_object().unwrap().clone());
        direct.peer().call_tool(params).await.unwrap();
        let direct_took = start.elapsed();
        if !warm {
            warm = true;
            continue;
        }
        through.push(took);
        plain.push(direct_took);
    }
    let (through, plain) = (median(through), median(plain));
    println!(
        "MCP echo through scv-server: {:.2} ms median over {CALLS} calls",
        through.as_secs_f64() * 1e3
    );
    println!(
        "MCP echo with rmcp directly: {:.2} ms median ({:+.2} ms added by SCV, same run)",
        plain.as_secs_f64() * 1e3,
        (through.as_secs_f64() - plain.as_secs_f64()) * 1e3
    );
}
