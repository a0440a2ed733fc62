#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The sandbox under tool processes, as the kernel enforces it: real
//! `scv-server --stdio`, real bash commands, and what they could and could
//! not do to real files, sockets and environments.
//!
//! The user's home, `$SCV_HOME`, the workspace and the "outside" directory
//! all live in one directory that is not a temp directory (a sandboxed
//! command may write the temp directories). Tests that need Landlock skip
//! with a message where the kernel lacks it, and fail instead when
//! `SCV_REQUIRE_LANDLOCK` is set (CI sets it).

mod common;
use common::sandbox::*;
use common::*;
use std::os::unix::fs::symlink;
use std::path::Path;

#[tokio::test]
async fn writing_outside_the_workspace_fails_and_creates_nothing_however_it_is_tried() {
    let Some((place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let ws = rig.home.workspace();
    let out = place.outside.display();
    let up = format!(
        "{}{}",
        "../".repeat(ws.components().count() - 1),
        place.outside.strip_prefix("/").unwrap().display()
    );
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("absolute", format!("echo x > {out}/absolute.txt")),
            ("dotdot", format!("echo x > {up}/dotdot.txt")),
            ("cd", format!("cd / && echo x > {out}/cd.txt")),
            (
                "link",
                format!("ln -s {out} escape && echo x > escape/link.txt"),
            ),
            (
                "grandchild",
                format!("bash -c 'sh -c \"echo x > {out}/grandchild.txt\"'"),
            ),
            (
                "background",
                format!("(sleep 0.1; echo x > {out}/background.txt) & disown; sleep 0.5"),
            ),
            (
                "python",
                format!("python3 -c \"open('{out}/python.txt', 'w').write('x')\""),
            ),
            ("mkdir", format!("mkdir {out}/dir")),
            (
                "move",
                format!("echo x > moved.txt && mv moved.txt {out}/moved.txt"),
            ),
            ("inside", "echo kept > inside.txt && cat inside.txt".into()),
            (
                "temp",
                "f=$(mktemp) && echo temp > \"$f\" && cat \"$f\" && rm \"$f\"".into(),
            ),
        ],
    )
    .await;
    for id in [
        "absolute",
        "dotdot",
        "cd",
        "link",
        "grandchild",
        "python",
        "mkdir",
        "move",
    ] {
        let (_, success, output) = result(&results, id);
        assert!(!success, "{id} succeeded: {output}");
        // The outside directory is not part of the made-up machine, so
        // a path into it does not exist (ENOENT); where a path does exist
        // read-only, Landlock answers EACCES and the read-only mounts
        // EROFS.
        let hidden = output.contains("No such file or directory")
            || output.contains("Directory nonexistent")
            || output.contains("FileNotFoundError");
        assert!(
            hidden
                || output.contains("ermission denied")
                || output.contains("PermissionError")
                || output.contains("Read-only file system"),
            "{id}: {output}"
        );
        // The model (and the card) are told it was the sandbox, and how
        // to allow it.
        let told = if hidden {
            "[sandbox: this command ran in the sandbox, which shows commands a made-up machine"
        } else {
            "[sandbox: this command ran in the sandbox, which refuses writes outside the workspace"
        };
        assert!(
            output.contains(told) && output.contains("run it again with unsandboxed: true"),
            "{id}: {output}"
        );
    }
    assert!(place.outside_is_empty(), "something was written outside");
    let (_, success, output) = result(&results, "inside");
    assert!(*success && output.starts_with("kept\n"), "{output}");
    let (_, success, output) = result(&results, "temp");
    assert!(*success && output.starts_with("temp\n"), "{output}");
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).unwrap(),
        "kept\n"
    );
}

#[tokio::test]
async fn credentials_scv_home_and_the_rest_of_the_home_cannot_be_read() {
    let Some((place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let scv_home = rig.home.path().canonicalize().unwrap();
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("config", format!("cat {}/config.toml", scv_home.display())),
            ("key", "cat ~/.ssh/id_ed25519".into()),
            ("through-link", "cat ~/keys/id_ed25519".into()),
            ("copy", "cp ~/.ssh/id_ed25519 ./stolen".into()),
            (
                "plant",
                "echo ssh-ed25519 AAAA attacker >> ~/.ssh/authorized_keys".into(),
            ),
            ("list", "ls ~/.ssh".into()),
            ("notes", "cat ~/notes.txt".into()),
            ("system", "head -c 4 /etc/passwd".into()),
        ],
    )
    .await;
    for id in ["config", "key", "through-link", "copy", "plant"] {
        let (_, success, output) = result(&results, id);
        assert!(!success, "{id} succeeded: {output}");
        assert!(!output.contains("secret material"), "{id}: {output}");
        assert!(!output.contains("mock-model"), "{id}: {output}");
    }
    assert!(!place.user_home.join(".ssh/authorized_keys").exists());
    // The home a command sees holds its toolchains and caches only: the
    // rest does not exist there, not even its names.
    let (_, success, output) = result(&results, "list");
    assert!(!success && !output.contains("id_ed25519"), "{output}");
    let (_, success, output) = result(&results, "notes");
    assert!(!success && !output.contains("plain notes"), "{output}");
    let (_, success, output) = result(&results, "system");
    assert!(*success && output.starts_with("root"), "{output}");
}

#[tokio::test]
async fn a_real_build_and_test_runs_inside_the_workspace() {
    let Some((_place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let ws = rig.home.workspace();
    std::fs::write(
        ws.join("hello.c"),
        "#include <stdio.h>\nint main(void) { puts(\"hello from the sandbox\"); return 0; }\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("Makefile"),
        "hello: hello.c\n\tcc -O1 -o hello hello.c\ntest: hello\n\t./hello | grep -q sandbox && echo tests passed\n",
    )
    .unwrap();
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("build", "make test".into()),
            (
                "git",
                "git init -q && git add hello.c && git -c user.name=t -c user.email=t@e commit -qm c && git log --oneline | wc -l".into(),
            ),
        ],
    )
    .await;
    let (_, success, output) = result(&results, "build");
    assert!(*success, "{output}");
    assert!(output.contains("tests passed"), "{output}");
    assert!(ws.join("hello").exists());
    let (_, success, output) = result(&results, "git");
    assert!(*success && output.starts_with("1\n"), "{output}");
}

#[tokio::test]
async fn read_only_allows_no_write_but_the_sessions_own_temp_directory() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    let extra = format!("{AUTO_SANDBOXED}\nsandbox = \"read-only\"");
    let mut rig = rig_in(&place, &extra, &[]).await;
    rig.server
        .send(json!({"type":"session.start","request_id":"s","cwd":rig.home.workspace()}))
        .await;
    let started = rig.server.expect("session.started").await;
    assert_eq!(started["sandbox"], "read-only");
    let session = started["session_id"].as_str().unwrap().to_string();
    rig.server.expect("queue.snapshot").await;
    let results = run_all(
        &mut rig,
        &session,
        &[
            ("workspace", "echo x > inside.txt".into()),
            ("tmp", "echo x > /tmp/scv-read-only-probe".into()),
            (
                "private",
                "echo kept > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo \"$TMPDIR\"".into(),
            ),
            ("read", "ls".into()),
        ],
    )
    .await;
    let (_, success, output) = result(&results, "workspace");
    assert!(!success, "{output}");
    assert!(!rig.home.workspace().join("inside.txt").exists());
    // /tmp is the session's own: a write there lands in no shared /tmp.
    let (_, success, output) = result(&results, "tmp");
    assert!(*success, "{output}");
    assert!(!Path::new("/tmp/scv-read-only-probe").exists());
    let (_, success, output) = result(&results, "private");
    assert!(*success, "{output}");
    assert_eq!(output.lines().nth(1), Some("/tmp"), "{output}");
    assert!(result(&results, "read").1);
}

#[tokio::test]
async fn writable_roots_widen_the_sandbox() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    let extra = format!(
        "{AUTO_SANDBOXED}\nsandbox_writable_roots = [\"{}\"]",
        place.outside.display()
    );
    let mut rig = rig_in(&place, &extra, &[]).await;
    let session = rig.session().await;
    let out = place.outside.display();
    let results = run_all(
        &mut rig,
        &session,
        &[("root", format!("echo x > {out}/cache.txt"))],
    )
    .await;
    assert!(result(&results, "root").1, "{:?}", results);
    assert!(place.outside.join("cache.txt").exists());
}

/// Starts a listener on 127.0.0.1 and reports whether anything connected.
struct Listener(std::net::TcpListener);

impl Listener {
    fn new() -> Listener {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Listener(listener)
    }

    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }

    fn connected(&self) -> bool {
        self.0.accept().is_ok()
    }
}

fn network_commands(port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("bash-tcp", format!("echo hi > /dev/tcp/127.0.0.1/{port}")),
        (
            "python-tcp",
            format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port})).close()\""),
        ),
        (
            "ipv6",
            "python3 -c \"import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()\"".into(),
        ),
        (
            "unix",
            "python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'x'); print('unix', b.recv(1))\"".into(),
        ),
    ]
}

#[tokio::test]
async fn with_the_network_off_no_ip_socket_opens_but_unix_sockets_work() {
    let listener = Listener::new();
    let Some((_place, mut rig, session)) =
        start(&format!("{AUTO_SANDBOXED}\nsandbox_network = false")).await
    else {
        return;
    };
    let (started, _) = rig.start(json!({})).await;
    assert_eq!(started["sandbox_network"], false, "{started}");
    let results = run_all(&mut rig, &session, &network_commands(listener.port())).await;
    for id in ["bash-tcp", "python-tcp", "ipv6"] {
        let (_, success, output) = result(&results, id);
        assert!(!success, "{id}: {output}");
        assert!(
            output.contains("Operation not permitted") || output.contains("PermissionError"),
            "{id}: {output}"
        );
        assert!(
            output.contains("and network connections (sandbox_network = false)")
                && output.contains("or sets sandbox_network = true"),
            "{id}: {output}"
        );
    }
    let (_, success, output) = result(&results, "unix");
    assert!(*success && output.contains("unix b'x'"), "{output}");
    assert!(!output.contains("[sandbox:"), "{output}");
    assert!(
        !listener.connected(),
        "a sandboxed command reached the listener"
    );
}

#[tokio::test]
async fn with_the_network_on_a_local_listener_is_reached() {
    let listener = Listener::new();
    let Some((_place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let results = run_all(&mut rig, &session, &network_commands(listener.port())).await;
    for (id, success, output) in &results {
        assert!(*success, "{id}: {output}");
    }
    assert!(listener.connected());
}

/// The variables a test server starts with: a provider key under a name
/// that matches no pattern, credentials by pattern, one passed through.
const SECRETS: &[(&str, &str)] = &[
    ("ACME_LLM", "acme-secret-1"),
    ("OPENAI_API_KEY", "sk-secret-2"),
    ("GITHUB_TOKEN", "ghp-secret-3"),
    ("DB_PASSWORD", "pw-secret-4"),
    ("CI_TOKEN", "passed-5"),
    ("PLAIN_SETTING", "plain-6"),
];
const ENV_CONFIG: &str = "api_key_env = \"ACME_LLM\"\ntool_env_passthrough = [\"CI_TOKEN\"]";

#[tokio::test]
async fn a_tool_sees_no_provider_key_or_credential_but_what_passes_through() {
    // Every mode scrubs; `off` needs no kernel support.
    let place = Place::new();
    let extra = format!("sandbox = \"off\"\nauto_approve = [\"read\", \"process\"]\n{ENV_CONFIG}");
    let mut rig = rig_in(&place, &extra, SECRETS).await;
    let session = rig.session().await;
    let results = run_all(&mut rig, &session, &[("env", "env".into())]).await;
    let (_, success, output) = result(&results, "env");
    assert!(*success, "{output}");
    for secret in [
        "acme-secret-1",
        "sk-secret-2",
        "ghp-secret-3",
        "pw-secret-4",
    ] {
        assert!(!output.contains(secret), "{secret} leaked: {output}");
    }
    assert!(output.contains("CI_TOKEN=passed-5"), "{output}");
    // Built from an allow-list: a variable it does not name stays out.
    assert!(!output.contains("PLAIN_SETTING"), "{output}");
    // The server itself still has the key it needs.
    assert_eq!(
        rig.mock.requests()[0].headers["authorization"],
        "Bearer acme-secret-1"
    );
}

#[tokio::test]
async fn the_servers_own_environment_block_holds_no_key() {
    let place = Place::new();
    let extra = format!("sandbox = \"off\"\nauto_approve = [\"read\", \"process\"]\n{ENV_CONFIG}");
    let mut rig = rig_in(&place, &extra, SECRETS).await;
    let session = rig.session().await;
    let pid = rig.server.pid();
    let results = run_all(
        &mut rig,
        &session,
        &[
            (
                "server",
                format!("tr '\\0' '\\n' < /proc/{pid}/environ; echo read-it"),
            ),
            (
                "reaper",
                "tr '\\0' '\\n' < /proc/$PPID/environ; echo read-it".into(),
            ),
        ],
    )
    .await;
    for (id, success, output) in &results {
        // Readable (no sandbox here), and nothing secret in it.
        assert!(*success && output.contains("read-it"), "{id}: {output}");
        for secret in [
            "acme-secret-1",
            "sk-secret-2",
            "ghp-secret-3",
            "pw-secret-4",
        ] {
            assert!(!output.contains(secret), "{id}: {secret} is in {output}");
        }
    }
    // The key survived in the server, where it is needed.
    assert_eq!(
        rig.mock.requests()[0].headers["authorization"],
        "Bearer acme-secret-1"
    );
}

/// Starts a turn of one `bash` call and returns the approval it asks for,
/// if it asks (else the turn's events).
async fn ask(rig: &mut Rig, session: &str, arguments: Value) -> (Option<Value>, Vec<Value>) {
    rig.mock
        .push(Reply::tool_calls(&[("b", "bash", arguments)]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(session, "t", "run").await;
    let mut events = Vec::new();
    loop {
        let event = rig.server.next().await;
        let kind = event["type"].as_str().unwrap().to_string();
        events.push(event.clone());
        if kind == "approval.requested" {
            return (Some(event), events);
        }
        if matches!(
            kind.as_str(),
            "turn.completed" | "turn.failed" | "turn.cancelled"
        ) {
            return (None, events);
        }
    }
}

async fn resolve(rig: &mut Rig, session: &str, approval: &Value, approved: bool) -> Vec<Value> {
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"ap","session_id":session,
                     "approval_id":approval["approval_id"],"approved":approved}),
        )
        .await;
    rig.server.until_terminal().await
}

#[tokio::test]
async fn sandboxed_commands_run_without_asking_and_leaving_the_sandbox_always_asks() {
    let Some((place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let (asked, events) = ask(&mut rig, &session, json!({"command": "echo in"})).await;
    assert!(asked.is_none(), "{events:?}");
    assert!(completed(&events)[0].1);

    let out = place.outside.join("free.txt");
    let command = format!("echo x > {}", out.display());
    let (asked, _) = ask(
        &mut rig,
        &session,
        json!({"command": command, "unsandboxed": true}),
    )
    .await;
    let asked = asked.expect("an unsandboxed command asks");
    assert_eq!(asked["sandboxed"], false);
    assert_eq!(
        asked["summary"],
        format!("Run shell command outside the sandbox: {command}")
    );
    let events = resolve(&mut rig, &session, &asked, true).await;
    assert!(completed(&events)[0].1, "{events:?}");
    assert!(out.exists(), "the approved command ran outside the sandbox");
}

#[tokio::test]
async fn by_default_a_sandboxed_command_still_asks_and_says_it_is_sandboxed() {
    let Some((_place, mut rig, session)) = start("").await else {
        return;
    };
    let (asked, _) = ask(&mut rig, &session, json!({"command": "echo in"})).await;
    let asked = asked.expect("process calls ask by default");
    assert_eq!(asked["sandboxed"], true);
    assert_eq!(asked["risk"], "process");
    assert_eq!(asked["summary"], "Run shell command: echo in");
    resolve(&mut rig, &session, &asked, false).await;
}

#[tokio::test]
async fn without_an_enforceable_sandbox_nothing_is_auto_approved_as_sandboxed() {
    for (extra, env, status) in [
        (
            AUTO_SANDBOXED.to_string(),
            vec![("SCV_SANDBOX_TEST_NO_LANDLOCK", "1")],
            "unavailable",
        ),
        (
            format!("{AUTO_SANDBOXED}\nsandbox = \"off\""),
            vec![],
            "off",
        ),
    ] {
        let place = Place::new();
        let mut rig = rig_in(&place, &extra, &env).await;
        rig.server
            .send(json!({"type":"session.start","request_id":"s","cwd":rig.home.workspace()}))
            .await;
        let started = rig.server.expect("session.started").await;
        assert_eq!(started["sandbox"], status);
        let session = started["session_id"].as_str().unwrap().to_string();
        rig.server.expect("queue.snapshot").await;
        let out = place.outside.join("x.txt");
        let (asked, _) = ask(
            &mut rig,
            &session,
            json!({"command": format!("echo x > {}", out.display())}),
        )
        .await;
        let asked = asked.unwrap_or_else(|| panic!("{status}: the command ran without asking"));
        assert_eq!(asked["sandboxed"], false, "{status}");
        let events = resolve(&mut rig, &session, &asked, true).await;
        // Approved, it runs unconfined, as the status said.
        assert!(completed(&events)[0].1, "{status}: {events:?}");
        assert!(out.exists(), "{status}");
    }
}

#[tokio::test]
async fn a_directory_swapped_for_a_link_after_approval_leads_no_file_tool_outside() {
    let place = Place::new();
    let mut rig = rig_in(&place, "", &[]).await;
    let session = rig.session().await;
    let ws = rig.home.workspace();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/f.txt"), "old\n").unwrap();
    std::fs::write(place.outside.join("f.txt"), "old\n").unwrap();
    let calls = [
        (
            "write_file",
            json!({"path": "sub/new.txt", "content": "planted"}),
        ),
        (
            "edit_file",
            json!({"path": "sub/f.txt", "old_string": "old", "new_string": "new"}),
        ),
    ];
    for (name, arguments) in calls {
        rig.mock.push(Reply::tool_calls(&[("c", name, arguments)]));
        rig.mock.push(Reply::text(["done"]));
        rig.server.start_turn(&session, "t", "go").await;
        let events = rig.server.until("approval.requested").await;
        // Between approval and execution, the directory becomes a link out.
        if ws.join("sub").is_symlink() {
            std::fs::remove_file(ws.join("sub")).unwrap();
        } else {
            std::fs::rename(ws.join("sub"), ws.join("sub-old")).unwrap();
        }
        symlink(&place.outside, ws.join("sub")).unwrap();
        let events = resolve(&mut rig, &session, events.last().unwrap(), true).await;
        let (_, success, output) = &completed(&events)[0];
        assert!(!success, "{name}: {output}");
        assert!(output.contains("outside the workspace"), "{name}: {output}");
    }
    assert!(!place.outside.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(place.outside.join("f.txt")).unwrap(),
        "old\n"
    );
}

#[tokio::test]
async fn cancel_and_timeout_kill_every_process_of_a_sandboxed_command() {
    let Some((_place, mut rig, session)) = start(AUTO_SANDBOXED).await else {
        return;
    };
    let ws = rig.home.workspace();

    std::fs::create_dir(ws.join("t")).unwrap();
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": escaping(&ws.join("t"), "sleep 1000"), "timeout_ms": 3000}),
    )]));
    rig.mock.push(Reply::text(["slow"]));
    let events = rig.turn(&session, "escape").await;
    let (_, success, output) = &completed(&events)[0];
    assert!(!success);
    assert!(
        output.contains("[command timed out after 3000 ms and was killed]"),
        "{output}"
    );
    all_gone(&escaped_pids(&ws.join("t")).await).await;

    std::fs::create_dir(ws.join("c")).unwrap();
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": escaping(&ws.join("c"), "sleep 1000")}),
    )]));
    rig.server.start_turn(&session, "t2", "escape").await;
    let events = rig.server.until("tool.started").await;
    let pids = escaped_pids(&ws.join("c")).await;
    rig.server
        .send(json!({"type":"turn.cancel","request_id":"c","session_id":session,"turn_id":events[0]["turn_id"]}))
        .await;
    assert_eq!(
        types(&rig.server.until_terminal().await),
        ["turn.cancelled"]
    );
    all_gone(&pids).await;
}

/// The configuration is live, and an edit is no way around the sandbox:
/// a session started after `sandbox_network = false` was written cannot
/// open an IP socket, and a variable an edit names as a key (which does
/// not look like a credential by its name) never reaches a tool, while
/// the server sends it to the provider.
#[tokio::test]
async fn a_live_edit_tightens_new_sessions_and_keeps_new_keys_from_tools() {
    if !enforced() {
        assert!(std::env::var_os("SCV_REQUIRE_LANDLOCK").is_none());
        return;
    }
    let listener = Listener::new();
    let place = Place::new();
    let mut rig = rig_in(&place, AUTO_SANDBOXED, &[("PLAIN_NAME", "live-secret-7")]).await;
    let before = rig.session().await;
    let config = rig.home.path().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}\nsandbox_network = false\napi_key_env = \"PLAIN_NAME\"\n"),
    )
    .unwrap();
    let after = rig.session().await;
    let port = listener.port();
    let commands = [
        ("tcp", format!("echo hi > /dev/tcp/127.0.0.1/{port}")),
        ("env", "env".to_string()),
    ];
    let results = run_all(&mut rig, &after, &commands).await;
    let (_, success, output) = result(&results, "tcp");
    assert!(
        !success,
        "the edited sandbox let a socket through: {output}"
    );
    assert!(output.contains("sandbox_network = false"), "{output}");
    let (_, _, env) = result(&results, "env");
    assert!(
        !env.contains("live-secret-7"),
        "the new key reached a tool: {env}"
    );
    assert!(
        !listener.connected(),
        "a sandboxed command reached the listener"
    );
    let last = rig.mock.requests().pop().unwrap();
    assert_eq!(last.headers["authorization"], "Bearer live-secret-7");
    // The session from before the edit keeps the sandbox it started with.
    let results = run_all(
        &mut rig,
        &before,
        &[("tcp", format!("echo hi > /dev/tcp/127.0.0.1/{port}"))],
    )
    .await;
    let (_, success, output) = result(&results, "tcp");
    assert!(*success, "the earlier session kept its network: {output}");
    assert!(listener.connected());
}
