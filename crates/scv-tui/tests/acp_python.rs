#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! ACP v1 with the official Python SDK as the editor (PyPI
//! `agent-client-protocol` 0.12.1, installed by `.ci/run` into
//! `target/acp-py-venv`; tests/acp-interop-py/client.py, one scenario per
//! test): the real `scv acp` under the SDK's trimmed environment, the real
//! daemon it starts, the scripted mock provider behind it. A third test
//! runs tests/acp-interop-py/python_v1.py: additionalDirectories, an image
//! prompt (its bytes checked at the mock provider), list, set_mode,
//! close and resume. Skips when the venv is missing, unless
//! `SCV_REQUIRE_INTEROP=1`.

mod common;
use common::*;
use std::path::PathBuf;
use std::time::Duration;

/// The venv's python, when the SDK is installed; `None` (skip) otherwise,
/// unless `SCV_REQUIRE_INTEROP=1`.
fn python() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join("target/acp-py-venv/bin/python3");
    let sdk = python.exists()
        && std::process::Command::new(&python)
            .args(["-c", "import acp"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !sdk {
        assert!(
            std::env::var("SCV_REQUIRE_INTEROP").as_deref() != Ok("1"),
            "SCV_REQUIRE_INTEROP=1 but the Python ACP SDK is missing (target/acp-py-venv)"
        );
        eprintln!("skipping: the Python ACP SDK is missing (target/acp-py-venv)");
        return None;
    }
    Some(python)
}

/// Runs `scenario` of client.py against a fresh home whose mock provider
/// answers `replies` in order; returns the mock and the checks printed.
async fn scenario(name: &str, replies: Vec<Reply>) -> Option<(MockProvider, String)> {
    let python = python()?;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/acp-interop-py/client.py");
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    for reply in replies {
        mock.push(reply);
    }
    let mut command = tokio::process::Command::new(python);
    command
        .arg(script)
        .arg(SCV)
        .arg(home.workspace())
        .arg(name)
        .env("SCV_HOME", home.path())
        .env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(home.path()),
        )
        .env("SCV_SERVER_BIN", server_bin())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the Python client finishes")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("FAIL"), "{stderr}");
    drop(home);
    Some((mock, stderr))
}

fn has(stderr: &str, checks: &[&str]) {
    for check in checks {
        assert!(stderr.contains(check), "{check}:\n{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_turn_with_tools_allowed_and_refused_through_the_python_sdk() {
    let replies = vec![
        Reply::text(["Hello ", "from the mock."]),
        Reply::tool_calls(&[("c1", "bash", json!({"command": "echo ran-in-py"}))]),
        Reply::text(["Ran it."]),
        Reply::tool_calls(&[("c2", "bash", json!({"command": "echo never-ran"}))]),
        Reply::text(["Not run."]),
    ];
    let Some((mock, stderr)) = scenario("turn", replies).await else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: protocol version 1",
            "ok: sessionCapabilities close and resume",
            "ok: streamed text 'Hello from the mock.'",
            "ok: one message id for the answer",
            "ok: one permission asked: 1",
            "ok: the tool call completed",
            "ok: the tool's output is shown",
            "ok: the refused call failed: 1",
            "ok: scv acp exited 0",
        ],
    );
    // The allowed command's output went back to the model; the refused
    // one never ran.
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests[2].body.to_string().contains("ran-in-py\\n"));
    assert!(!requests[4].body.to_string().contains("never-ran\\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn list_config_cancel_close_and_load_through_the_python_sdk() {
    let words: Vec<String> = (0..400).map(|n| format!("w{n} ")).collect();
    let replies = vec![
        Reply::text(["First."]),
        Reply::text(words).drip(Duration::from_millis(50)),
        Reply::text(["Again."]),
    ];
    let Some((mock, stderr)) = scenario("lifecycle", replies).await else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: session/list names it",
            "ok: mode set",
            "ok: an unknown option: -32602",
            "ok: cancelled prompt cancelled",
            "ok: a prompt to the closed session: -32002",
            "ok: an unknown session: -32002",
            "ok: a relative cwd: -32602",
            "ok: an unknown method: -32601",
            "ok: session/load replays the prompt",
            "ok: the next prompt 'Again.'",
            "ok: scv acp exited 0",
        ],
    );
    // The loaded session's prompt carried its history.
    let last = mock.requests().pop().unwrap().body.to_string();
    assert!(last.contains("PY-FIRST") && last.contains("PY-AFTER-LOAD"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_drives_images_directories_close_and_resume() {
    use base64::Engine as _;
    let Some(python) = python() else {
        return;
    };
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let outside = tempfile::tempdir().unwrap();
    let extra = outside.path().canonicalize().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0..3000u32).map(|i| (i * 13 % 256) as u8));
    let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
    mock.push(Reply::text(["A picture."]));
    mock.push(Reply::text(["After."]));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp-interop-py/python_v1.py");
    let mut command = tokio::process::Command::new(python);
    command
        .arg(script)
        .arg(SCV)
        .arg(home.workspace())
        .env("SCV_HOME", home.path())
        .env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
        )
        .env("SCV_SERVER_BIN", server_bin())
        .env("IMAGE_B64", &b64)
        .env("EXTRA_DIR", &extra)
        .env_remove("OPENAI_API_KEY")
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(90), command.output())
        .await
        .expect("the Python client finishes")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("FAIL"), "{stderr}");
    for check in [
        "ok: promptCapabilities.image",
        "ok: sessionCapabilities.additionalDirectories",
        "ok: session/new with a relative directory: -32602",
        "ok: image prompt: end_turn",
        "ok: an image that is none: -32602",
        "ok: session/list holds it",
        "ok: a prompt to the closed session: -32002",
        "ok: resumed prompt: end_turn",
    ] {
        assert!(stderr.contains(check), "{check}:\n{stderr}");
    }
    drop(home);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let images = requests[0].images().unwrap();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].bytes, png);
    // The resumed session's request carries the image again.
    assert_eq!(requests[1].images().unwrap()[0].bytes, png);
    assert!(requests[1].body.to_string().contains("PY-AFTER"));
}
