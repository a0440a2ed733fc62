#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! ACP v1 with the official Python SDK as the editor
//! (`agent-client-protocol` on PyPI, in `target/acp-venv`, which `.ci/run`
//! installs; tests/acp-interop/python_v1.py): initialize, session/new
//! with additionalDirectories, session/prompt with an image block (its
//! bytes checked at the mock provider), session/list, session/set_mode,
//! session/close, session/resume. Skips when the venv is missing, unless
//! `SCV_REQUIRE_ACP_PYTHON=1`.

mod common;
use common::*;
use std::time::Duration;

fn python() -> Option<std::path::PathBuf> {
    let venv =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/acp-venv/bin/python3");
    if venv.exists() {
        return Some(venv);
    }
    assert!(
        std::env::var("SCV_REQUIRE_ACP_PYTHON").as_deref() != Ok("1"),
        "SCV_REQUIRE_ACP_PYTHON=1 but target/acp-venv is missing"
    );
    eprintln!("skipping: target/acp-venv (the Python ACP SDK) is missing");
    None
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
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp-interop/python_v1.py");
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
