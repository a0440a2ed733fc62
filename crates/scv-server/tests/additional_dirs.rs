#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! A session's additional directories (`session.start.additional_directories`,
//! ACP's `additionalDirectories`) through the real binary: hostile ones
//! refused with `invalid_request` while the connection goes on; the file
//! tools read beneath them, write only where config.toml's
//! `additional_directories_writable` says; the sandbox shows them to
//! `bash` (read-only unless writable).

mod common;
use common::*;

const AUTO: &str = "auto_approve = [\"read\", \"write\", \"process\"]";

#[tokio::test]
async fn hostile_directories_are_refused_and_the_connection_goes_on() {
    let mut rig = Rig::new(AUTO).await;
    let outside = outside_dir();
    let base = outside.path().canonicalize().unwrap();
    std::os::unix::fs::symlink("/", base.join("to-root")).unwrap();
    std::fs::write(base.join("file.txt"), "x").unwrap();
    let home = rig.home.path().canonicalize().unwrap();
    let s = |p: std::path::PathBuf| p.display().to_string();
    let cases = [
        ("relative/dir".to_string(), "not an absolute path"),
        (s(base.join("missing")), "cannot be used"),
        (s(base.join("to-root")), "whole file system"),
        (s(home.clone()), "$SCV_HOME"),
        (s(home.parent().unwrap().to_path_buf()), "$SCV_HOME"),
        (s(base.join("file.txt")), "not a directory"),
    ];
    let workspace = rig.home.workspace();
    for (n, (dir, words)) in cases.iter().enumerate() {
        let rid = format!("s{n}");
        rig.server
            .send(
                json!({"type": "session.start", "request_id": rid, "cwd": workspace,
                "additional_directories": [dir]}),
            )
            .await;
        let error = rig.server.expect_error("invalid_request", &rid).await;
        assert!(
            error["message"].as_str().unwrap().contains(words),
            "{dir}: {error}"
        );
    }
    let nine: Vec<String> = (0..9).map(|_| s(base.clone())).collect();
    rig.server
        .send(
            json!({"type": "session.start", "request_id": "many", "cwd": workspace,
            "additional_directories": nine}),
        )
        .await;
    let error = rig.server.expect_error("invalid_request", "many").await;
    assert!(
        error["message"].as_str().unwrap().contains("at most 8"),
        "{error}"
    );
    // The connection goes on.
    let session = rig.session().await;
    rig.mock.push(Reply::text(["fine"]));
    let events = rig.turn(&session, "hi").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn tools_read_additional_directories_and_write_only_where_config_says() {
    let outside = outside_dir();
    let base = outside.path().canonicalize().unwrap();
    let (ro, rw) = (base.join("docs"), base.join("scratch"));
    std::fs::create_dir_all(&ro).unwrap();
    std::fs::create_dir_all(&rw).unwrap();
    std::fs::write(ro.join("spec.txt"), "SPEC-LINE-ONE\n").unwrap();
    let extra = format!(
        "{AUTO}\nadditional_directories_writable = [\"{}\"]",
        rw.display()
    );
    let mut rig = Rig::new(&extra).await;
    let (_, session) = rig
        .start(
            json!({"additional_directories": [ro.display().to_string(), rw.display().to_string()]}),
        )
        .await;
    let p = |dir: &std::path::Path, name: &str| dir.join(name).display().to_string();
    let mut calls = vec![
        ("c1", "read_file", json!({"path": p(&ro, "spec.txt")})),
        (
            "c2",
            "write_file",
            json!({"path": p(&ro, "new.txt"), "content": "no"}),
        ),
        (
            "c3",
            "write_file",
            json!({"path": p(&rw, "out.txt"), "content": "yes"}),
        ),
        ("c4", "list_dir", json!({"path": ro.display().to_string()})),
        (
            "c5",
            "read_file",
            json!({"path": p(&base, "elsewhere.txt")}),
        ),
    ];
    let sandboxed = common::sandbox::enforced();
    if sandboxed {
        calls.push((
            "c6",
            "bash",
            json!({"command": format!("cat {}", p(&ro, "spec.txt"))}),
        ));
        calls.push((
            "c7",
            "bash",
            json!({"command": format!("echo x > {}", p(&ro, "by-bash.txt"))}),
        ));
        calls.push((
            "c8",
            "bash",
            json!({"command": format!("echo y > {}", p(&rw, "by-bash.txt"))}),
        ));
    }
    rig.mock.push(Reply::tool_calls(&calls));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(&session, "use the extra directories").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    let done = completed(&events);
    let output = |id: &str| done.iter().find(|(c, _, _)| c == id).unwrap().clone();
    assert!(
        output("c1").1 && output("c1").2.contains("SPEC-LINE-ONE"),
        "{:?}",
        output("c1")
    );
    assert!(
        !output("c2").1 && output("c2").2.contains("only reads"),
        "{:?}",
        output("c2")
    );
    assert!(!ro.join("new.txt").exists());
    assert!(output("c3").1, "{:?}", output("c3"));
    assert_eq!(std::fs::read_to_string(rw.join("out.txt")).unwrap(), "yes");
    assert!(output("c4").2.contains("spec.txt"), "{:?}", output("c4"));
    assert!(!output("c5").1, "not beneath any root: {:?}", output("c5"));
    if sandboxed {
        assert!(
            output("c6").2.contains("SPEC-LINE-ONE"),
            "{:?}",
            output("c6")
        );
        assert!(!ro.join("by-bash.txt").exists(), "{:?}", output("c7"));
        assert_eq!(
            std::fs::read_to_string(rw.join("by-bash.txt")).unwrap(),
            "y\n",
            "{:?}",
            output("c8")
        );
    }
}
