#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The official MCP conformance suite (`@modelcontextprotocol/conformance`
//! 0.1.13, installed by `.ci/run` into `tests/mcp-conformance`), every
//! client scenario (`--suite all`: the handshake, a tool call,
//! elicitation defaults, SSE retry, and the authorization scenarios:
//! metadata discovery, registration, scopes, token endpoint auth,
//! resource mismatch, client credentials, 2025-03-26 back-compat) against
//! SCV whole (run in four parts: the core scenarios one at a time, and
//! the `auth`, `backcompat` and `extensions` suites): the suite's client command is `mcp-conformance-client`
//! (scv-test-support), which logs in with the real `scv mcp login` and
//! calls the server's tools through the real `scv-server`. What SCV does
//! not pass is listed, with why, in `tests/mcp-conformance/baseline.yml`;
//! the suite fails the run on any other failure and on a listed scenario
//! that now passes. Skips when the suite is not installed, unless
//! `SCV_REQUIRE_INTEROP=1`.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The adapter beside `scv`, built first if this run did not build it.
fn adapter() -> PathBuf {
    let path = Path::new(SCV).with_file_name("mcp-conformance-client");
    if !path.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args([
                "build",
                "-p",
                "scv-test-support",
                "--bin",
                "mcp-conformance-client",
            ])
            .status()
            .expect("cargo build mcp-conformance-client");
        assert!(status.success());
    }
    path
}

/// The suite's command, or `None` (skip) when it is not installed.
fn suite() -> Option<PathBuf> {
    let suite = conformance_dir().join("node_modules/.bin/conformance");
    if suite.exists() {
        return Some(suite);
    }
    assert!(
        std::env::var("SCV_REQUIRE_INTEROP").as_deref() != Ok("1"),
        "SCV_REQUIRE_INTEROP=1 but the conformance suite is not installed (npm ci in {})",
        conformance_dir().display()
    );
    eprintln!("skipping: the MCP conformance suite is not installed");
    None
}

fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-conformance")
}

/// `conformance client ARGS` with SCV as the client: whether it passed,
/// and what it printed.
async fn run(suite: &Path, args: &[&str]) -> (bool, String) {
    let results = tempfile::tempdir().unwrap();
    let mut command = tokio::process::Command::new(suite);
    command
        .current_dir(results.path())
        .arg("client")
        .args(args)
        .args(["--timeout", "120000"])
        .arg("--command")
        .arg(adapter())
        .arg("--output-dir")
        .arg(results.path())
        .env("SCV_BIN", SCV)
        .env("SCV_SERVER_BIN", server_bin())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(600), command.output())
        .await
        .expect("the suite finishes")
        .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), printed)
}

/// The handshake, a tool call, elicitation defaults (SEP-1034) and SSE
/// resumption (SEP-1699), one at a time: none may fail. (SSE retry's
/// timing is a warning, not a failure: these machines are shared.)
#[tokio::test(flavor = "multi_thread")]
async fn the_core_client_scenarios_pass() {
    let Some(suite) = suite() else { return };
    for scenario in [
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
    ] {
        let (passed, printed) = run(&suite, &["--scenario", scenario]).await;
        assert!(passed, "{scenario}:\n{printed}");
        assert!(printed.contains(" 0 failed"), "{scenario}:\n{printed}");
    }
}

/// Every authorization scenario (the `auth`, `backcompat` and
/// `extensions` suites): each passes, or is listed with why in
/// baseline.yml; a listed one that passes fails the run too.
#[tokio::test(flavor = "multi_thread")]
async fn the_authorization_scenarios_pass_or_are_listed_with_why() {
    let Some(suite) = suite() else { return };
    let baseline = conformance_dir().join("baseline.yml");
    let baseline = baseline.to_str().unwrap();
    for name in ["auth", "backcompat", "extensions"] {
        let (passed, printed) =
            run(&suite, &["--suite", name, "--expected-failures", baseline]).await;
        let summary = printed
            .split("=== SUITE SUMMARY ===")
            .nth(1)
            .unwrap_or(&printed);
        assert!(passed, "{name}:\n{summary}");
        assert!(summary.contains("✓ auth/"), "{name}:\n{summary}");
    }
}
