#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `scv --remote HOST` through a real OpenSSH server on 127.0.0.1 (this
//! user, throwaway keys): `exec` and `exec --resume` answered by the remote
//! daemon that `scv bridge` started, ssh's own reason when it fails, the
//! TUI reconnecting through a new ssh, and `scv bridge` on its own. The
//! "remote" home is a test home on this machine; the local side gets an
//! empty home and no server binary, so nothing can quietly run here.
//! Without /usr/sbin/sshd the ssh tests are skipped, unless
//! `SCV_REQUIRE_SSH=1`.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// An sshd on a free port of 127.0.0.1 that lets this user in with
/// `client_key`; stopped when dropped.
struct Sshd {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Sshd {
    /// `None` (the test is skipped) when OpenSSH is not installed.
    fn start() -> Option<Sshd> {
        let installed = Path::new(SSHD).exists() && Command::new("ssh").arg("-V").output().is_ok();
        if !installed {
            assert!(
                std::env::var("SCV_REQUIRE_SSH").as_deref() != Ok("1"),
                "SCV_REQUIRE_SSH=1 but {SSHD} or ssh is missing"
            );
            eprintln!("skipped: {SSHD} or ssh is not installed (openssh-server, openssh-client)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        for key in ["host_key", "client_key", "stranger_key"] {
            let made = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.path().join(key))
                .status()
                .unwrap();
            assert!(made.success(), "ssh-keygen {key}");
        }
        std::fs::copy(
            dir.path().join("client_key.pub"),
            dir.path().join("authorized_keys"),
        )
        .unwrap();
        let config = dir.path().join("sshd_config");
        let at = |name: &str| dir.path().join(name).display().to_string();
        std::fs::write(
            &config,
            format!(
                "ListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\n\
                 StrictModes no\nUsePAM no\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\n",
                at("host_key"),
                at("authorized_keys"),
                at("sshd.pid"),
            ),
        )
        .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::fs::File::create(dir.path().join("sshd.log")).unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .args(["-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut sshd = Sshd { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            let log = || std::fs::read_to_string(sshd.dir.path().join("sshd.log")).unwrap();
            if let Some(status) = sshd.child.try_wait().unwrap() {
                panic!("sshd exited ({status}):\n{}", log());
            }
            assert!(Instant::now() < deadline, "sshd did not listen:\n{}", log());
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(sshd)
    }

    fn key(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `SCV_SSH` for this server, logging in with `key`; no user or
    /// system ssh configuration, no prompt.
    fn ssh_with(&self, key: &Path, port: u16) -> String {
        format!(
            "ssh -F /dev/null -p {port} -i {} -o StrictHostKeyChecking=no \
             -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR",
            shlex::try_quote(key.to_str().unwrap()).unwrap()
        )
    }

    /// `scv --remote 127.0.0.1 ARGS…` from `local`, reaching `remote`'s
    /// daemon through this server with the authorized key.
    fn scv(&self, local: &Path, remote: &Home) -> Command {
        self.scv_via(
            local,
            remote,
            &self.ssh_with(&self.key("client_key"), self.port),
        )
    }

    /// [`Sshd::scv`] with another `SCV_SSH`.
    fn scv_via(&self, local: &Path, remote: &Home, ssh: &str) -> Command {
        let mut command = Command::new(SCV);
        command
            .args(["--remote", "127.0.0.1"])
            .env("SCV_HOME", local)
            .env(
                "CLAUDE_CONFIG_DIR",
                scv_test_support::client::claude_dir(std::path::Path::new(&local)),
            )
            .env("SCV_SERVER_BIN", "/nonexistent/scv-server")
            .env("SCV_SSH", ssh)
            .env("SCV_REMOTE_COMMAND", remote_command(remote))
            .current_dir(remote.workspace());
        command
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The remote shell's command line: sshd passes no environment, so the
/// home and server binary go on it.
fn remote_command(remote: &Home) -> String {
    let quoted = |path: &Path| {
        shlex::try_quote(path.to_str().unwrap())
            .unwrap()
            .into_owned()
    };
    format!(
        "env SCV_HOME={} SCV_SERVER_BIN={} {} bridge",
        quoted(remote.path()),
        quoted(&server_bin()),
        quoted(Path::new(SCV))
    )
}

/// The session id `scv exec` printed on stderr (`[session] ID`).
fn session_of(output: &std::process::Output) -> String {
    stderr(output)
        .lines()
        .find_map(|l| l.strip_prefix("[session] "))
        .unwrap_or_else(|| panic!("no session id: {}", stderr(output)))
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_over_ssh_is_answered_by_the_remote_daemon() {
    let Some(sshd) = Sshd::start() else { return };
    let mock = MockProvider::start().await;
    let remote = Home::new(&mock, "");
    let local = tempfile::tempdir().unwrap();
    mock.push(Reply::text(["Hello ", "from afar."]));
    let output = sshd
        .scv(local.path(), &remote)
        .args(["exec", "hi"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Hello from afar.\n");
    assert!(remote.daemon_pid().is_some(), "the bridge started it");
    let system = mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains(&remote.workspace().display().to_string()),
        "the workspace is this directory's path over there: {system}"
    );
    assert!(
        !local.path().join("sessions").exists(),
        "nothing ran locally"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_started_over_ssh_resumes_over_ssh_and_is_stored_remotely() {
    let Some(sshd) = Sshd::start() else { return };
    let mock = MockProvider::start().await;
    let remote = Home::new(&mock, "");
    let local = tempfile::tempdir().unwrap();
    mock.push(Reply::text(["noted: kiwi"]));
    let first = sshd
        .scv(local.path(), &remote)
        .args(["exec", "remember the word kiwi"])
        .output()
        .unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let id = session_of(&first);

    mock.push(Reply::text(["it was kiwi"]));
    let resumed = sshd
        .scv(local.path(), &remote)
        .args(["exec", "--resume", &id, "which word?"])
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(session_of(&resumed), id);
    assert_eq!(stdout(&resumed), "it was kiwi\n");
    let history = mock.requests().last().unwrap().body["messages"].to_string();
    assert!(history.contains("noted: kiwi"), "{history}");

    // The store over there holds it (read on that machine).
    let listed = remote
        .scv()
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    let sessions: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert!(
        sessions
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session_id"] == id.as_str() && s["turns"] == 2),
        "{sessions}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_key_or_a_closed_port_is_ssh_s_reason_in_one_line_fast() {
    let Some(sshd) = Sshd::start() else { return };
    let mock = MockProvider::start().await;
    let remote = Home::new(&mock, "");
    let local = tempfile::tempdir().unwrap();
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cases = [
        (
            sshd.ssh_with(&sshd.key("stranger_key"), sshd.port),
            "Permission denied",
        ),
        (
            sshd.ssh_with(&sshd.key("client_key"), closed_port),
            "Connection refused",
        ),
    ];
    for (ssh, reason) in cases {
        let started = Instant::now();
        let output = sshd
            .scv_via(local.path(), &remote, &ssh)
            .args(["exec", "hi"])
            .output()
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(10), "fast");
        assert!(!output.status.success());
        let err = stderr(&output);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(reason), "{err}");
        assert!(err.contains("127.0.0.1"), "{err}");
    }
    assert!(mock.requests().is_empty());

    // No scv over there: the remote shell's words.
    let output = sshd
        .scv(local.path(), &remote)
        .env("SCV_REMOTE_COMMAND", "/nonexistent/scv bridge")
        .args(["exec", "hi"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/scv"), "{err}");
}

#[test]
fn what_only_acts_locally_refuses_remote_in_one_line() {
    let local = tempfile::tempdir().unwrap();
    for args in [
        &["sessions", "list"][..],
        &["daemon", "stop"],
        &["mcp", "list"],
        &["bridge"],
    ] {
        let output = Command::new(SCV)
            .args(["--remote", "somewhere"])
            .args(args)
            .env("SCV_HOME", local.path())
            .env(
                "CLAUDE_CONFIG_DIR",
                scv_test_support::client::claude_dir(std::path::Path::new(&local.path())),
            )
            .env("SCV_SSH", "/nonexistent/ssh")
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        let err = stderr(&output);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--remote"), "{err}");
        assert!(err.contains(&format!("scv {}", args[0])), "{err}");
    }
}

/// The visible screen of tmux session `e2e` on server `socket`.
fn screen(socket: &str) -> String {
    let output = Command::new("tmux")
        .args(["-L", socket, "capture-pane", "-p", "-t", "e2e"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Waits (bounded) until that screen shows `text`.
async fn wait_for(socket: &str, text: &str) -> String {
    for _ in 0..600 {
        let screen = screen(socket);
        if screen.contains(text) {
            return screen;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("screen never showed {text:?}:\n{}", screen(socket));
}

/// The children of `parent`: pid, state (`Z` for a zombie) and name.
fn children(parent: u32) -> Vec<(u32, char, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (name) state ppid …; the name may hold spaces.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let mut rest = stat[close + 1..].split_whitespace();
        let state = rest.next().and_then(|s| s.chars().next()).unwrap_or('?');
        if rest.next().and_then(|p| p.parse().ok()) == Some(parent) {
            let pid = stat[..open].trim().parse().unwrap();
            found.push((pid, state, stat[open + 1..close].to_string()));
        }
    }
    found
}

/// Stops a tmux server when dropped.
struct TmuxServer(String);

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .output();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ui_over_ssh_reconnects_through_a_new_ssh_when_the_daemon_goes() {
    let Some(sshd) = Sshd::start() else { return };
    assert!(
        Command::new("tmux").arg("-V").output().is_ok(),
        "tmux is required for this test (.ci/run installs it)"
    );
    let mock = MockProvider::start().await;
    let remote = Home::new(&mock, "");
    let local = tempfile::tempdir().unwrap();
    let tmux = TmuxServer(format!("scv-remote-{}", std::process::id()));
    let command = sshd.scv(local.path(), &remote);
    let mut line: Vec<String> = vec!["env".into()];
    for (name, value) in command.get_envs() {
        let (name, value) = (name.to_str().unwrap(), value.unwrap().to_str().unwrap());
        line.push(format!("{name}={}", shlex::try_quote(value).unwrap()));
    }
    line.push(SCV.into());
    line.extend(command.get_args().map(|a| a.to_str().unwrap().to_string()));
    let line = format!("{}; echo SCV-EXIT=$?; sleep 60", line.join(" "));
    let workspace = remote.workspace();
    let started = Command::new("tmux")
        .args(["-L", &tmux.0, "new-session", "-d", "-s", "e2e"])
        .args([
            "-x",
            "100",
            "-y",
            "30",
            "-c",
            workspace.to_str().unwrap(),
            &line,
        ])
        .status()
        .unwrap();
    assert!(started.success());
    wait_for(&tmux.0, "idle").await;
    let first = remote.daemon_pid().expect("the bridge started the daemon");

    // The daemon goes; the next ssh's bridge starts another.
    unsafe { libc::kill(first, libc::SIGTERM) };
    wait_for(&tmux.0, "a new session started").await;
    let second = remote.daemon_pid().expect("a daemon again");
    assert_ne!(first, second);
    mock.push(Reply::text(["back over ssh"]));
    let keys = |keys: &[&str]| {
        Command::new("tmux")
            .args(["-L", &tmux.0, "send-keys", "-t", "e2e"])
            .args(keys)
            .status()
            .unwrap()
    };
    keys(&["hello again", "Enter"]);
    wait_for(&tmux.0, "back over ssh").await;
    // The first ssh was reaped: scv's one child is the live ssh.
    let pane = Command::new("tmux")
        .args(["-L", &tmux.0, "display", "-p", "-t", "e2e", "#{pane_pid}"])
        .output()
        .unwrap();
    let shell = stdout(&pane).trim().parse().unwrap();
    let scv = children(shell)
        .into_iter()
        .find(|(_, _, name)| name == "scv")
        .expect("scv runs in the pane");
    let theirs = children(scv.0);
    assert!(
        matches!(&theirs[..], [(_, state, name)] if name == "ssh" && *state != 'Z'),
        "{theirs:?}"
    );
    keys(&["C-d"]);
    wait_for(&tmux.0, "SCV-EXIT=0").await;
}

/// `scv bridge` with stdin and stdout piped, for `home`.
fn bridge(home: &Home) -> Child {
    home.scv()
        .arg("bridge")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (bounded) for `child` to exit.
fn exit_of(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "still running");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bridge_joins_stdio_to_the_daemon_and_exits_0_when_either_closes() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let mut child = bridge(&home);
    let mut stdin = child.stdin.take().unwrap();
    let mut events = BufReader::new(child.stdout.take().unwrap());
    stdin
        .write_all(b"{\"type\":\"initialize\",\"request_id\":\"1\",\"protocol_version\":2}\n")
        .unwrap();
    let mut line = String::new();
    events.read_line(&mut line).unwrap();
    let initialized: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(initialized["type"], "initialized", "{line}");
    assert_eq!(initialized["request_id"], "1");
    assert_eq!(initialized["protocol_version"], 2);
    drop(stdin);
    assert!(exit_of(&mut child).success());
    line.clear();
    assert_eq!(events.read_line(&mut line).unwrap(), 0, "stdout closed");

    // The daemon goes: the bridge closes stdout and exits 0 too.
    let mut child = bridge(&home);
    let mut stdin = child.stdin.take().unwrap();
    let mut events = BufReader::new(child.stdout.take().unwrap());
    stdin
        .write_all(b"{\"type\":\"initialize\",\"request_id\":\"1\",\"protocol_version\":2}\n")
        .unwrap();
    events.read_line(&mut line).unwrap();
    assert!(line.contains("initialized"), "{line}");
    line.clear();
    let pid = home.daemon_pid().expect("the daemon runs");
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert!(exit_of(&mut child).success());
    assert_eq!(events.read_line(&mut line).unwrap(), 0, "stdout closed");
    drop(stdin);
}

#[test]
fn a_bridge_that_cannot_start_the_daemon_says_so_in_one_line_and_exits_1() {
    let home = TestHome::new("http://127.0.0.1:9/v1", "");
    let output = Command::new(SCV)
        .arg("bridge")
        .env("SCV_HOME", home.path())
        .env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
        )
        .env("SCV_SERVER_BIN", "/nonexistent/scv-server")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    // The reason in one line, then how to install the daemon.
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].contains("/nonexistent/scv-server"), "{err}");
    assert!(lines[1].starts_with("scv needs scv-server"), "{err}");
    assert!(output.stdout.is_empty());
}

/// A dropped link is not a cancel: the local ssh killed mid-turn, the
/// turn runs on in the remote daemon, the TUI says the connection dropped,
/// attaches again through a new ssh and shows the whole answer; nothing
/// was asked of the provider twice.
#[tokio::test(flavor = "multi_thread")]
async fn killing_the_ssh_mid_turn_leaves_the_turn_running_and_the_ui_attaches_again() {
    let Some(sshd) = Sshd::start() else { return };
    let mock = MockProvider::start().await;
    let remote = Home::new(&mock, "");
    let local = tempfile::tempdir().unwrap();
    let tmux = TmuxServer(format!("scv-remote-drop-{}", std::process::id()));
    let command = sshd.scv(local.path(), &remote);
    let mut line: Vec<String> = vec!["env".into()];
    for (name, value) in command.get_envs() {
        let (name, value) = (name.to_str().unwrap(), value.unwrap().to_str().unwrap());
        line.push(format!("{name}={}", shlex::try_quote(value).unwrap()));
    }
    line.push(SCV.into());
    line.extend(command.get_args().map(|a| a.to_str().unwrap().to_string()));
    let line = format!("{}; echo SCV-EXIT=$?; sleep 60", line.join(" "));
    let workspace = remote.workspace();
    let started = Command::new("tmux")
        .args(["-L", &tmux.0, "new-session", "-d", "-s", "e2e"])
        .args([
            "-x",
            "100",
            "-y",
            "30",
            "-c",
            workspace.to_str().unwrap(),
            &line,
        ])
        .status()
        .unwrap();
    assert!(started.success());
    wait_for(&tmux.0, "idle").await;
    let daemon = remote.daemon_pid().expect("the bridge started the daemon");
    let words: Vec<String> = (0..40).map(|n| format!("word{n} ")).collect();
    mock.push(Reply::text(words).drip(Duration::from_millis(60)));
    let keys = |keys: &[&str]| {
        Command::new("tmux")
            .args(["-L", &tmux.0, "send-keys", "-t", "e2e"])
            .args(keys)
            .status()
            .unwrap()
    };
    keys(&["count to forty", "Enter"]);
    wait_for(&tmux.0, "word2").await;

    // The link goes: scv's ssh is killed.
    let pane = Command::new("tmux")
        .args(["-L", &tmux.0, "display", "-p", "-t", "e2e", "#{pane_pid}"])
        .output()
        .unwrap();
    let shell = stdout(&pane).trim().parse().unwrap();
    let scv = children(shell)
        .into_iter()
        .find(|(_, _, name)| name == "scv")
        .expect("scv runs in the pane");
    let (ssh, _, _) = children(scv.0)
        .into_iter()
        .find(|(_, _, name)| name == "ssh")
        .expect("scv's ssh");
    unsafe { libc::kill(ssh as i32, libc::SIGKILL) };
    let screen = wait_for(&tmux.0, "the connection dropped").await;
    assert!(!screen.contains("went away"), "{screen}");
    wait_for(&tmux.0, "attached to the session again").await;
    // The turn ran to its end in the daemon, answered once.
    wait_for(&tmux.0, "word39").await;
    assert_eq!(mock.request_count(), 1, "the turn was not run again");
    assert_eq!(remote.daemon_pid(), Some(daemon), "the same daemon");
    keys(&["C-d"]);
    wait_for(&tmux.0, "SCV-EXIT=0").await;
}
