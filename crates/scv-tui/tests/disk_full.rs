#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `scv exec` when the disk under `$SCV_HOME` fills, through the real
//! binaries (the daemon started in the background by `scv`): stderr says
//! the session is no longer being saved and that a changing call has no
//! undo point, then that it is saved again once space returns; `scv undo`
//! says why it cannot; the session keeps every turn.
//!
//! `$SCV_HOME` is a 600 KiB tmpfs (root only, as CI runs; skipped with a
//! message otherwise).

mod common;
use common::tmpfs::{fill, Tmpfs};
use common::*;

#[tokio::test(flavor = "multi_thread")]
async fn exec_says_on_stderr_that_the_session_is_not_saved_and_then_saved_again() {
    let Some(tmpfs) = Tmpfs::mount("600k") else {
        return;
    };
    let mock = MockProvider::start().await;
    let home = tmpfs.path().to_path_buf();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"mock-model\"\nbase_url = \"{}\"\n",
            mock.base_url()
        ),
    )
    .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let scv = |args: &[&str]| {
        std::process::Command::new(SCV)
            .env("SCV_HOME", &home)
            .env(
                "CLAUDE_CONFIG_DIR",
                scv_test_support::client::claude_dir(std::path::Path::new(&home)),
            )
            .env("SCV_SERVER_BIN", server_bin())
            .env_remove("OPENAI_API_KEY")
            .current_dir(workspace.path())
            .args(args)
            .output()
            .unwrap()
    };
    let big = "lorem ipsum ".repeat(850);

    mock.push(Reply::text([format!("first {big}")]));
    let first = scv(&["exec", "first"]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(!stderr(&first).contains("not saved"), "{}", stderr(&first));

    fill(&home);
    mock.push(Reply::tool_calls(&[(
        "w1",
        "write_file",
        json!({"path": "out.txt", "content": "x\n"}),
    )]));
    mock.push(Reply::text([format!("second {big}")]));
    let second = scv(&["exec", "--continue", "--approve", "write", "second"]);
    let err = stderr(&second);
    assert!(second.status.success(), "{err}");
    assert_eq!(
        err.matches("[session] not saved: the disk under SCV_HOME is full")
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("[checkpoint] no undo point: disk full"),
        "{err}"
    );
    let checkpoint = err.find("[checkpoint]").unwrap();
    let running = err.find("[tool] write_file").unwrap_or(usize::MAX);
    assert!(checkpoint < running, "said before the call runs: {err}");
    assert!(stdout(&second).contains("second lorem"), "the turn went on");

    mock.push(Reply::text(["third"]));
    let third = scv(&["exec", "--continue", "third"]);
    assert!(third.status.success(), "{}", stderr(&third));
    let id = |err: &str| err.lines().next().unwrap_or_default().to_string();
    assert_eq!(id(&stderr(&third)), id(&err), "the same session, continued");

    // `scv undo` says why it cannot undo that turn (its journal may still
    // wait for room: the daemon holds it, and the resume takes it).
    let undo = scv(&["undo"]);
    assert!(
        !undo.status.success(),
        "{}\n{}",
        stdout(&undo),
        stderr(&undo)
    );
    assert!(
        stderr(&undo).contains("ran without an undo point (no undo point: disk full"),
        "{}",
        stderr(&undo)
    );

    std::fs::remove_file(home.join("ballast")).unwrap();
    mock.push(Reply::text(["fourth"]));
    let fourth = scv(&["exec", "--continue", "fourth"]);
    let err = stderr(&fourth);
    assert!(fourth.status.success(), "{err}");
    assert!(err.contains("[session] saved again"), "{err}");

    let listed = scv(&["sessions", "list", "--json"]);
    let sessions: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let sessions = sessions.as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0]["turns"], 4, "{sessions:?}");
    let session_id = sessions[0]["session_id"].as_str().unwrap();
    let export = scv(&["sessions", "export", session_id, "--format", "json"]);
    let export: Value = serde_json::from_slice(&export.stdout).unwrap();
    let prompts: Vec<&str> = export["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "user")
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["first", "second", "third", "fourth"], "{export}");
    for entry in std::fs::read_dir(home.join("sessions")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "left behind: {name}");
        let bytes = std::fs::read(entry.path()).unwrap();
        assert!(!bytes.contains(&0), "{name} has a hole of zeros");
    }
}
