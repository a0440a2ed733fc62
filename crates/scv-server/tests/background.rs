#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Background processes end to end through the real binary: `bash
//! {background: true}` starts a server that answers on its port, its
//! output is read with `bash_output` (and `wait_ms` waits for it), the
//! ring's loss is said, the ninth is refused, and nothing of one is left
//! after `bash_kill`, after its session's connection closes, or after the
//! daemon's SIGTERM — neither a process that ignores SIGTERM nor one that
//! double-forked and called `setsid`. Processes are found by a marker in
//! their command line or environment, in every process of the machine.
//!
//! The sandboxed ones skip where the kernel cannot enforce the sandbox,
//! unless `SCV_REQUIRE_LANDLOCK` is set.

mod common;
use common::sandbox::{enforced, Place};
use common::*;
use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use std::io::{Read, Write};
use std::path::PathBuf;

const AUTO: &str = "auto_approve = [\"read\", \"process\"]";

/// A marker no other process of the machine carries.
fn marker(name: &str) -> String {
    format!("scvbg{}x{name}", std::process::id())
}

/// Every live process whose command line or environment holds `marker`.
fn marked(marker: &str) -> Vec<(i32, String)> {
    let me = std::process::id() as i32;
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid == me || !scv_test_support::procfs::is_running(pid) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let needle = marker.as_bytes();
        let holds = |bytes: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        if holds(&cmdline) || holds(&environ) {
            let shown = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push((pid, shown));
        }
    }
    found
}

/// Waits (bounded) until at least `n` marked processes run.
async fn running(marker: &str, n: usize) {
    let up = scv_test_support::eventually(|| marked(marker).len() >= n).await;
    assert!(
        up,
        "expected {n} processes marked {marker}: {:?}",
        marked(marker)
    );
}

/// Waits (bounded) until no marked process is left.
async fn none_left(marker: &str, after: &str) {
    let gone = scv_test_support::eventually(|| marked(marker).is_empty()).await;
    assert!(gone, "left after {after}: {:?}", marked(marker));
}

/// A background command that ignores SIGTERM, leaves a double-forked
/// `setsid` child (which ignores SIGTERM too), says `ready`, then runs
/// `main` — all of it carrying `marker` in its environment.
fn stubborn(marker: &str, main: &str) -> String {
    format!(
        "export SCV_TEST_MARK={marker}\n\
         trap '' TERM\n\
         (setsid sh -c 'trap \"\" TERM; while :; do sleep 1; done' &)\n\
         echo ready\n\
         {main}"
    )
}

/// `GET path` on the port; the status line of the answer.
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.lines().next().map(str::to_string)
}

/// The `process_id` a `bash {background: true}` result names.
fn process_id(output: &str) -> String {
    output
        .lines()
        .find_map(|l| l.strip_prefix("process_id: "))
        .unwrap_or_else(|| panic!("no process_id in {output}"))
        .trim()
        .to_string()
}

fn call(id: &str, name: &str, arguments: Value) -> (String, String, Value) {
    (id.to_string(), name.to_string(), arguments)
}

/// One turn whose response makes `calls` (auto-approved), then says
/// "ok": the `(call_id, success, output)` of each.
async fn calls(
    client: &mut TestServer,
    mock: &MockProvider,
    session: &str,
    calls: &[(String, String, Value)],
) -> Vec<(String, bool, String)> {
    let borrowed: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
        .collect();
    mock.push(Reply::tool_calls(&borrowed));
    mock.push(Reply::text(["ok"]));
    client.start_turn(session, "t", "go").await;
    let events = client.until_terminal().await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:?}"
    );
    assert!(
        !types(&events).contains(&"approval.requested"),
        "{events:?}"
    );
    completed(&events)
}

#[tokio::test]
async fn a_background_server_answers_its_output_is_read_and_bash_kill_leaves_nothing() {
    if !enforced() {
        return;
    }
    let place = Place::new();
    // The test reaches the server from outside: the host's network (under
    // `allowlist` its port would be in the session's own namespace).
    let mut rig = common::sandbox::rig_in(&place, "sandbox_network = true", &[]).await;
    let session = rig.session().await;
    let mark = marker("serve");
    let port = free_port();
    let command = stubborn(
        &mark,
        &format!("exec python3 -u -m http.server {port} --bind 127.0.0.1"),
    );

    // Approved like any bash call, the approval saying it is a background
    // one; it returns at once, naming its process.
    rig.mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": command, "background": true}),
    )]));
    rig.mock.push(Reply::text(["started"]));
    rig.server.start_turn(&session, "t", "serve").await;
    let events = rig.server.until("approval.requested").await;
    let approval = events.last().unwrap();
    assert_eq!(approval["risk"], "process");
    let summary = approval["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("Run shell command in the background: export SCV_TEST_MARK"),
        "{summary}"
    );
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"ap","session_id":session,
                     "approval_id":approval["approval_id"],"approved":true}),
        )
        .await;
    let events = rig.server.until_terminal().await;
    let results = completed(&events);
    assert!(results[0].1, "{results:?}");
    assert!(results[0].2.contains("in the sandbox"), "{}", results[0].2);
    let id = process_id(&results[0].2);
    assert_eq!(id, "bg1");

    // It answers on its port; python, bash's double-forked child and its
    // sleeps run meanwhile.
    let answered = scv_test_support::eventually(|| get(port, "/first").is_some()).await;
    assert!(answered, "the background server never answered");
    assert!(get(port, "/first").unwrap().contains("404"));
    running(&mark, 2).await;

    // Its output so far: bash's `ready`, python's banner and the request
    // lines (stderr), without approval.
    let results = calls(
        &mut rig.server,
        &rig.mock,
        &session,
        &[call("o1", "bash_output", json!({"process_id": id}))],
    )
    .await;
    let output = &results[0].2;
    assert!(output.contains("ready"), "{output}");
    assert!(output.contains("GET /first"), "{output}");
    assert!(output.ends_with("[process bg1: running]"), "{output}");
    // Read once: nothing new now.
    let results = calls(
        &mut rig.server,
        &rig.mock,
        &session,
        &[call("o2", "bash_output", json!({"process_id": id}))],
    )
    .await;
    assert!(results[0].2.starts_with("(no new output)"), "{results:?}");

    // wait_ms waits for output: the request comes after the call started.
    rig.mock.push(Reply::tool_calls(&[(
        "o3",
        "bash_output",
        json!({"process_id": id, "wait_ms": 30000}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    rig.server.start_turn(&session, "t", "wait").await;
    rig.server.until("tool.started").await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(get(port, "/waited-for").is_some());
    let events = rig.server.until_terminal().await;
    let mut output = completed(&events)[0].2.clone();
    assert!(
        output.contains("404"),
        "output that came while it waited: {output}"
    );
    if !output.contains("GET /waited-for") {
        // python logs the 404 before the request's line, in two writes:
        // the wait ended at the first; the next read has the rest.
        let results = calls(
            &mut rig.server,
            &rig.mock,
            &session,
            &[call("o4", "bash_output", json!({"process_id": id}))],
        )
        .await;
        output.push_str(&results[0].2);
    }
    assert!(output.contains("GET /waited-for"), "{output}");

    // bash_kill: everything of it is gone when it returns, the SIGTERM-
    // ignoring python and the setsid child included.
    let results = calls(
        &mut rig.server,
        &rig.mock,
        &session,
        &[call("k1", "bash_kill", json!({"process_id": id}))],
    )
    .await;
    assert!(
        results[0].2.starts_with("[process bg1: killed"),
        "{results:?}"
    );
    assert!(
        marked(&mark).is_empty(),
        "left after bash_kill returned: {:?}",
        marked(&mark)
    );
    assert!(get(port, "/").is_none(), "the port still answers");

    // A second kill, and an unknown id, are said.
    let results = calls(
        &mut rig.server,
        &rig.mock,
        &session,
        &[
            call("k2", "bash_kill", json!({"process_id": id})),
            call("o4", "bash_output", json!({"process_id": "bg9"})),
        ],
    )
    .await;
    assert!(
        results[0].2.contains("had already ended: killed"),
        "{results:?}"
    );
    assert_eq!(
        results[1].2,
        "error: no background process `bg9` in this session (there are: bg1)"
    );
}

#[tokio::test]
async fn the_ninth_is_refused_in_words_and_the_rings_loss_is_said() {
    // A context the whole ring fits in, read 64 KiB at a time.
    let mut rig = Rig::new(&format!(
        "{AUTO}\nsandbox = \"off\"\ncontext_max_tokens = 100000000"
    ))
    .await;
    let session = rig.session().await;
    let mark = marker("nine");
    let mut nine: Vec<(String, String, Value)> = (1..=8)
        .map(|n| {
            call(
                &format!("b{n}"),
                "bash",
                json!({"command": format!("export M={mark}; exec sleep 1000"), "background": true}),
            )
        })
        .collect();
    nine.push(call(
        "b9",
        "bash",
        json!({"command": "echo never", "background": true}),
    ));
    let results = calls(&mut rig.server, &rig.mock, &session, &nine).await;
    assert!(results[..8].iter().all(|r| r.1), "{results:?}");
    let ids: Vec<String> = results[..8].iter().map(|r| process_id(&r.2)).collect();
    assert_eq!(ids, (1..=8).map(|n| format!("bg{n}")).collect::<Vec<_>>());
    let refused = &results[8];
    assert!(!refused.1);
    assert!(
        refused.2.starts_with(
            "error: refused: this session already has 8 background processes running, the most max_background_processes (8) allows: bg1"
        ),
        "{}",
        refused.2
    );
    running(&mark, 8).await;

    // One killed makes room; the ring keeps the last MiB of a chatty one
    // and says what it lost.
    let workspace = rig.home.workspace();
    let chatty = "head -c 3000000 /dev/zero | tr '\\0' x; echo END; touch finished";
    let mut kill_and_start = vec![call("k", "bash_kill", json!({"process_id": "bg3"}))];
    kill_and_start.push(call(
        "c",
        "bash",
        json!({"command": chatty, "background": true}),
    ));
    let results = calls(&mut rig.server, &rig.mock, &session, &kill_and_start).await;
    assert!(
        results[0].2.starts_with("[process bg3: killed"),
        "{results:?}"
    );
    assert_eq!(process_id(&results[1].2), "bg9");
    assert!(
        scv_test_support::eventually(|| workspace.join("finished").exists()).await,
        "the chatty command never finished"
    );
    // After bash_kill returns, everything it wrote has been read.
    let results = calls(
        &mut rig.server,
        &rig.mock,
        &session,
        &[
            call("k9", "bash_kill", json!({"process_id": "bg9"})),
            call("o9", "bash_output", json!({"process_id": "bg9"})),
        ],
    )
    .await;
    let output = &results[1].2;
    let written = 3_000_000 + "END\n".len();
    let lost = written - (1 << 20);
    assert!(
        output.starts_with(&format!(
            "[{lost} bytes of output were lost before this read: the process keeps only its last 1024 KiB]\nxxx"
        )),
        "{}",
        &output[..output.len().min(300)]
    );
    assert!(
        output.contains("more bytes: call bash_output again"),
        "the read is bounded"
    );
    assert!(output.ends_with("[process bg9: exited with code 0]"));
    // The rest reads in further calls, to its end.
    let mut rest = String::new();
    for n in 0..40 {
        let results = calls(
            &mut rig.server,
            &rig.mock,
            &session,
            &[call(
                &format!("r{n}"),
                "bash_output",
                json!({"process_id": "bg9"}),
            )],
        )
        .await;
        rest = results[0].2.clone();
        if !rest.contains("more bytes") {
            break;
        }
    }
    assert!(rest.contains("xEND\n[process bg9: exited"), "{rest}");
}

/// A daemon in `place` (its home beside it) with `extra` config.
struct Daemon {
    mock: MockProvider,
    home: TestHome,
    socket: PathBuf,
    child: tokio::process::Child,
}

impl Daemon {
    async fn start(place: &Place, extra: &str) -> Daemon {
        let mock = MockProvider::start().await;
        let home = TestHome::new_in(
            place.outside.parent().unwrap(),
            &mock.base_url(),
            &common::sandbox::with_network(extra),
        );
        let socket = home.path().join("server.sock");
        let child = spawn_daemon(BIN, home.path(), &socket, &DaemonLog::default());
        wait_for_socket(&socket).await;
        Daemon {
            mock,
            home,
            socket,
            child,
        }
    }

    async fn client(&self) -> (TestServer, String) {
        let mut client = TestServer::connect(&self.socket).await;
        client.initialize().await;
        let session = client.start_session(&self.home.workspace()).await;
        (client, session)
    }

    /// Two stubborn background processes in `session`, running.
    async fn stubborn_pair(&self, client: &mut TestServer, session: &str, mark: &str) {
        let command = stubborn(mark, "while :; do sleep 1; done");
        let results = calls(
            client,
            &self.mock,
            session,
            &[
                call("a", "bash", json!({"command": command, "background": true})),
                call("b", "bash", json!({"command": command, "background": true})),
            ],
        )
        .await;
        assert!(results.iter().all(|r| r.1), "{results:?}");
        // Each: bash, its setsid child, and their sleeps.
        running(mark, 4).await;
    }
}

/// With the sandbox (`sandboxed`) or without: a session's background
/// processes end when its connection closes, while the daemon and its
/// other sessions go on; the others' end when the daemon gets SIGTERM.
async fn nothing_outlives_its_session_or_the_daemon(sandboxed: bool) {
    let place = Place::new();
    let extra = if sandboxed {
        AUTO.to_string()
    } else {
        format!("{AUTO}\nsandbox = \"off\"")
    };
    let mut daemon = Daemon::start(&place, &extra).await;
    let (mut first, first_session) = daemon.client().await;
    let (mut second, second_session) = daemon.client().await;
    let closed = marker(&format!("closed{sandboxed}"));
    let killed = marker(&format!("daemon{sandboxed}"));
    daemon
        .stubborn_pair(&mut first, &first_session, &closed)
        .await;
    daemon
        .stubborn_pair(&mut second, &second_session, &killed)
        .await;

    drop(first);
    none_left(&closed, "their session's connection closed").await;
    assert!(
        !marked(&killed).is_empty(),
        "another session's processes were killed too"
    );
    let results = calls(
        &mut second,
        &daemon.mock,
        &second_session,
        &[call("o", "bash_output", json!({"process_id": "bg1"}))],
    )
    .await;
    assert!(results[0].2.contains("ready"), "{results:?}");

    let pid = daemon.child.id().unwrap() as i32;
    // SAFETY: a signal to the daemon this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    assert!(daemon.child.wait().await.unwrap().success());
    none_left(&killed, "the daemon's SIGTERM").await;
}

#[tokio::test]
async fn sandboxed_ones_end_with_their_session_and_with_the_daemon() {
    if !enforced() {
        return;
    }
    nothing_outlives_its_session_or_the_daemon(true).await;
}

#[tokio::test]
async fn unsandboxed_ones_end_with_their_session_and_with_the_daemon() {
    nothing_outlives_its_session_or_the_daemon(false).await;
}

/// The daemon killed outright (SIGKILL: no clean-up of its own runs):
/// the kernel's parent-death signals end them.
async fn nothing_outlives_a_killed_daemon(sandboxed: bool) {
    let place = Place::new();
    let extra = if sandboxed {
        AUTO.to_string()
    } else {
        format!("{AUTO}\nsandbox = \"off\"")
    };
    let mut daemon = Daemon::start(&place, &extra).await;
    let (mut client, session) = daemon.client().await;
    let mark = marker(&format!("sigkill{sandboxed}"));
    daemon.stubborn_pair(&mut client, &session, &mark).await;
    daemon.child.start_kill().unwrap();
    daemon.child.wait().await.unwrap();
    none_left(&mark, "the daemon was killed with SIGKILL").await;
}

#[tokio::test]
async fn sandboxed_ones_end_when_the_daemon_is_killed_outright() {
    if !enforced() {
        return;
    }
    nothing_outlives_a_killed_daemon(true).await;
}

#[tokio::test]
async fn unsandboxed_ones_end_when_the_daemon_is_killed_outright() {
    nothing_outlives_a_killed_daemon(false).await;
}

/// Hooks see the two tools by their names, SCV's or Claude Code's: a
/// `PreToolUse` hook on `KillShell` (told `tool_name` "KillShell") blocks
/// `bash_kill`, which then kills nothing; `bash_output` does not match it.
#[tokio::test]
async fn hooks_see_bash_kill_as_kill_shell_and_can_block_it() {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), &format!("{AUTO}\nsandbox = \"off\""));
    let dir = home.workspace().join(".scv");
    std::fs::create_dir_all(&dir).unwrap();
    let hook = "python3 -c 'import json, sys; print(\"no killing\", json.load(sys.stdin)[\"tool_name\"], file=sys.stderr)'; exit 2";
    std::fs::write(
        dir.join("hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "KillShell",
            "hooks": [{"type": "command", "command": hook}]}]}})
        .to_string(),
    )
    .unwrap();
    home.trust_workspace();
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    let session = server.start_session(&home.workspace()).await;
    let mark = marker("hooked");
    let results = calls(
        &mut server,
        &mock,
        &session,
        &[call(
            "b",
            "bash",
            json!({"command": format!("export M={mark}; echo up; exec sleep 1000"), "background": true}),
        )],
    )
    .await;
    let id = process_id(&results[0].2);
    running(&mark, 1).await;
    let results = calls(
        &mut server,
        &mock,
        &session,
        &[
            call("k", "bash_kill", json!({"process_id": id})),
            call(
                "o",
                "bash_output",
                json!({"process_id": id, "wait_ms": 10000}),
            ),
        ],
    )
    .await;
    assert!(!results[0].1);
    assert!(
        results[0].2.contains("PreToolUse hook blocked")
            && results[0].2.contains("no killing KillShell"),
        "{results:?}"
    );
    assert!(results[1].2.contains("up"), "{results:?}");
    assert!(
        results[1].2.ends_with("[process bg1: running]"),
        "{results:?}"
    );
    assert!(!marked(&mark).is_empty(), "a blocked bash_kill killed it");
    drop(server);
    none_left(&mark, "the server was dropped").await;
}

/// A client that asked for capability `processes` lists a session's
/// background processes, looks at the end of one's output (`process.peek`, which leaves the model's
/// next read whole) and stops it (`process.kill`: nothing of it is left
/// when `process.state` comes); one that did not is refused in words.
#[tokio::test]
async fn a_client_peeks_at_and_kills_a_background_process() {
    let mut rig = Rig::with_capabilities(
        &format!("{AUTO}\nsandbox = \"off\""),
        json!({"processes": true}),
    )
    .await;
    let session = rig.session().await;
    let mark = marker("client");
    let command = stubborn(&mark, "echo serving; while :; do sleep 1; done");
    let results = calls(
        &mut rig.server,
        &rig.mock,
        &session,
        &[call(
            "b",
            "bash",
            json!({"command": command, "background": true}),
        )],
    )
    .await;
    let id = process_id(&results[0].2);
    running(&mark, 2).await;

    let peek = json!({"type":"process.peek","request_id":"p","session_id":session,"process_id":id});
    let mut state = Value::Null;
    for _ in 0..200 {
        rig.server.send(peek.clone()).await;
        state = rig.server.expect("process.state").await;
        if state["output"].as_str().unwrap().contains("serving") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(state["request_id"], "p");
    assert_eq!(state["session_id"], session);
    assert_eq!(state["running"], true, "{state}");
    assert_eq!(state["output"], "ready\nserving\n", "{state}");
    assert!(state["command"].as_str().unwrap().contains(&mark));

    rig.server
        .send(json!({"type":"process.list","request_id":"l","session_id":session}))
        .await;
    let listed = rig.server.expect("process.listed").await;
    assert_eq!(listed["request_id"], "l");
    assert_eq!(
        listed["processes"],
        json!([{"process_id": "bg1", "command": command, "running": true}])
    );

    rig.server
        .send(
            json!({"type":"process.kill","request_id":"k","session_id":session,"process_id":"bg7"}),
        )
        .await;
    let error = rig.server.expect_error("invalid_request", "k").await;
    assert_eq!(
        error["message"],
        "no background process `bg7` in this session (there are: bg1)"
    );
    rig.server
        .send(json!({"type":"process.kill","request_id":"k","session_id":session,"process_id":id}))
        .await;
    let state = rig.server.expect("process.state").await;
    assert_eq!(state["running"], false, "{state}");
    assert!(
        state["status"].as_str().unwrap().starts_with("killed"),
        "{state}"
    );
    assert!(
        marked(&mark).is_empty(),
        "left after process.state said it was killed: {:?}",
        marked(&mark)
    );
    // The model still reads everything, and how it ended.
    let results = calls(
        &mut rig.server,
        &rig.mock,
        &session,
        &[call("o", "bash_output", json!({"process_id": id}))],
    )
    .await;
    assert!(
        results[0]
            .2
            .starts_with("ready\nserving\n[process bg1: killed"),
        "{results:?}"
    );

    // Without the capability: refused, named.
    let mut plain = Rig::new(&format!("{AUTO}\nsandbox = \"off\"")).await;
    let other = plain.session().await;
    plain
        .server
        .send(json!({"type":"process.kill","request_id":"x","session_id":other,"process_id":"bg1"}))
        .await;
    let error = plain.server.expect_error("invalid_request", "x").await;
    assert_eq!(
        error["message"],
        "process.kill needs capability `processes` (ask for it in initialize)"
    );
}
