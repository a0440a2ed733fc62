#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `scv plugin add|list|remove` through the real `scv` binary: a plugin
//! folder is added where it is, a git URL is cloned into
//! `$SCV_HOME/plugins/`, config.toml keeps what else it had, and what is
//! not a plugin is refused in one line.

mod common;
use common::*;
use std::path::Path;

fn scv(home: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(SCV)
        .args(args)
        .env("SCV_HOME", home)
        .env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(std::path::Path::new(&home)),
        )
        .output()
        .unwrap()
}

fn make_plugin(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(dir.join("commands")).unwrap();
    std::fs::write(
        dir.join(".claude-plugin/plugin.json"),
        format!(r#"{{"name": "{name}", "version": "0.1.0"}}"#),
    )
    .unwrap();
    std::fs::write(dir.join("commands/hello.md"), "Say hello to $ARGUMENTS.\n").unwrap();
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn plugins_are_added_from_a_folder_or_a_git_url_listed_and_removed() {
    let home = TestHome::new("http://127.0.0.1:9/v1", "auto_approve = [\"read\"]");
    let local = tempfile::tempdir().unwrap();
    make_plugin(local.path(), "greeter");
    let local_path = local.path().canonicalize().unwrap();

    let out = scv(
        home.path(),
        &["plugin", "add", local.path().to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("added plugin greeter"),
        "{}",
        stdout(&out)
    );
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(config.contains("auto_approve = [\"read\"]"), "{config}");
    assert!(
        config.contains(&format!("plugins = [\"{}\"]", local_path.display())),
        "{config}"
    );
    // Adding it again changes nothing.
    let out = scv(
        home.path(),
        &["plugin", "add", local.path().to_str().unwrap()],
    );
    assert!(stdout(&out).contains("already added"), "{}", stdout(&out));

    // A git repository, cloned by URL.
    let repo = tempfile::tempdir().unwrap();
    let source = repo.path().join("ralphish");
    make_plugin(&source, "ralphish");
    git(&source, &["init", "--quiet"]);
    git(&source, &["add", "."]);
    git(&source, &["commit", "--quiet", "-m", "plugin"]);
    let url = format!("file://{}", source.display());
    let out = scv(home.path(), &["plugin", "add", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    let cloned = home.path().join("plugins/ralphish").canonicalize().unwrap();
    assert!(cloned.join(".claude-plugin/plugin.json").is_file());
    let listed = stdout(&scv(home.path(), &["plugin", "list"]));
    assert!(
        listed.contains(&format!("greeter  {}", local_path.display())),
        "{listed}"
    );
    assert!(
        listed.contains(&format!("ralphish  {}", cloned.display())),
        "{listed}"
    );

    // Not a plugin: refused, nothing written.
    let not = tempfile::tempdir().unwrap();
    let out = scv(
        home.path(),
        &["plugin", "add", not.path().to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not a Claude Code plugin"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).trim().lines().count(), 1, "{}", stderr(&out));

    // Removed by name; its files stay.
    let out = scv(home.path(), &["plugin", "remove", "greeter"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(
        !config.contains(&local_path.display().to_string()),
        "{config}"
    );
    assert!(config.contains(&cloned.display().to_string()), "{config}");
    assert!(local_path.join(".claude-plugin/plugin.json").is_file());
}
