//! Sandbox tests' set-up: a user's home with credentials, a directory
//! outside everything, and a rig whose home, workspace and `$SCV_HOME` live
//! beside them (not in a temp directory, which a sandboxed command may
//! write).

use super::*;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// True when the kernel enforces the sandbox; otherwise explains the skip
/// (or fails, when CI requires Landlock).
pub(crate) fn enforced() -> bool {
    match scv_sandbox::probe() {
        scv_sandbox::Support::Enforced { .. } => true,
        scv_sandbox::Support::Unavailable(why) => {
            assert!(
                std::env::var_os("SCV_REQUIRE_LANDLOCK").is_none(),
                "SCV_REQUIRE_LANDLOCK is set but the sandbox is unavailable: {why}"
            );
            eprintln!("skipped: the sandbox is unavailable here: {why}");
            false
        }
    }
}

/// Where a sandbox test keeps its directories: beside the build, unless
/// that is itself under a temp directory.
pub(crate) fn base_dir() -> PathBuf {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let in_temp = scv_sandbox::system_temp_dirs()
        .iter()
        .filter_map(|dir| dir.canonicalize().ok())
        .any(|dir| target.canonicalize().unwrap().starts_with(dir));
    let base = if in_temp {
        PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/scv-sandbox-tests")
    } else {
        target
    };
    std::fs::create_dir_all(&base).unwrap();
    base
}

/// A user's home with credentials, and a directory outside everything.
pub(crate) struct Place {
    _base: tempfile::TempDir,
    pub user_home: PathBuf,
    pub outside: PathBuf,
}

pub(crate) const PRIVATE_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- secret material";

impl Place {
    pub(crate) fn new() -> Place {
        let base = tempfile::tempdir_in(base_dir()).unwrap();
        let root = base.path().canonicalize().unwrap();
        let user_home = root.join("user");
        let outside = root.join("outside");
        std::fs::create_dir_all(user_home.join(".ssh")).unwrap();
        std::fs::write(user_home.join(".ssh/id_ed25519"), PRIVATE_KEY).unwrap();
        std::fs::write(user_home.join("notes.txt"), "plain notes").unwrap();
        symlink(user_home.join(".ssh"), user_home.join("keys")).unwrap();
        std::fs::create_dir(&outside).unwrap();
        Place {
            _base: base,
            user_home,
            outside,
        }
    }

    pub(crate) fn outside_is_empty(&self) -> bool {
        std::fs::read_dir(&self.outside).unwrap().next().is_none()
    }
}

/// `extra` with the network mode `SCV_TEST_SANDBOX_NETWORK` names, when
/// set: `.ci/run` runs the wall and the background processes' tests once
/// more with `allowlist`. A test whose `extra` names its own mode keeps it.
pub(crate) fn with_network(extra: &str) -> String {
    match std::env::var("SCV_TEST_SANDBOX_NETWORK") {
        Ok(_) if extra.contains("sandbox_network") => extra.to_string(),
        // First, so no table of `extra` takes it.
        Ok(mode) => format!("sandbox_network = \"{mode}\"\n{extra}"),
        Err(_) => extra.to_string(),
    }
}

/// A rig whose home, workspace and user home are in `place`.
pub(crate) async fn rig_in(place: &Place, extra: &str, env: &[(&str, &str)]) -> Rig {
    let mock = MockProvider::start().await;
    let home = TestHome::new_in(
        place.outside.parent().unwrap(),
        &mock.base_url(),
        &with_network(extra),
    );
    let user_home = place.user_home.display().to_string();
    let mut all_env = vec![("HOME", user_home.as_str())];
    all_env.extend_from_slice(env);
    let mut server = TestServer::spawn_with(BIN, home.path(), &all_env);
    server.initialize().await;
    Rig { mock, home, server }
}

/// Runs the commands as one batch of `bash` calls (auto-approved) and
/// returns `(id, success, output)` of each.
pub(crate) async fn run_all(
    rig: &mut Rig,
    session: &str,
    commands: &[(&str, String)],
) -> Vec<(String, bool, String)> {
    let calls: Vec<(&str, &str, Value)> = commands
        .iter()
        .map(|(id, command)| (*id, "bash", json!({ "command": command })))
        .collect();
    rig.mock.push(Reply::tool_calls(&calls));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(session, "run them").await;
    assert!(
        !types(&events).contains(&"approval.requested"),
        "sandboxed commands ran without asking"
    );
    let results = completed(&events);
    assert_eq!(results.len(), commands.len(), "{events:?}");
    results
}

pub(crate) fn result<'a>(
    results: &'a [(String, bool, String)],
    id: &str,
) -> &'a (String, bool, String) {
    results.iter().find(|(i, _, _)| i == id).unwrap()
}

pub(crate) const AUTO_SANDBOXED: &str = "auto_approve = [\"read\", \"sandboxed\"]";

/// The usual start: a place, a rig with `extra` config and a session;
/// `None` (the test skips) where the sandbox cannot be enforced.
pub(crate) async fn start(extra: &str) -> Option<(Place, Rig, String)> {
    if !enforced() {
        return None;
    }
    let place = Place::new();
    let mut rig = rig_in(&place, extra, &[]).await;
    let session = rig.session().await;
    Some((place, rig, session))
}
