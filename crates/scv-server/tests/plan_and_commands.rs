#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Plan mode, custom commands and skills, end to end through the real
//! binary: what plan mode offers and refuses (and that the kernel holds a
//! command to read-only), switching it while a turn runs, `/NAME args`
//! expanded from `.scv/commands/`, an unknown one refused before any
//! provider call, skills indexed in the system prompt and loaded by the
//! `skill` tool, malformed files named with their line, and a `SKILL.md`
//! flipped to a link outside the workspace never reaching the model.

mod common;
use common::*;
use std::path::Path;

/// The last message's text in request `n`.
fn last_message(mock: &MockProvider, n: usize) -> String {
    mock.requests()[n].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn completed<'a>(events: &'a [Value], call_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool.completed for {call_id}: {events:?}"))
}

/// A server initialized with capabilities `commands` and `hooks`.
async fn rig(extra: &str) -> Rig {
    Rig::with_capabilities(extra, json!({"commands": true, "hooks": true})).await
}

#[tokio::test]
async fn plan_mode_offers_no_write_tool_and_refuses_one_sent_anyway() {
    let mut rig = rig("auto_approve = [\"read\", \"write\", \"process\"]").await;
    let (started, session) = rig.start(json!({"mode": "plan"})).await;
    assert_eq!(started["mode"], "plan");
    let workspace = rig.home.workspace();
    rig.mock.push(Reply::tool_calls(&[
        (
            "w",
            "write_file",
            json!({"path": "planned.txt", "content": "x"}),
        ),
        (
            "e",
            "edit_file",
            json!({"path": "planned.txt", "old_string": "x", "new_string": "y"}),
        ),
        (
            "u",
            "bash",
            json!({"command": "touch unsandboxed.txt", "unsandboxed": true}),
        ),
    ]));
    rig.mock.push(Reply::text(["Here is the plan."]));
    let events = rig.turn(&session, "plan it").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let tools = offered(&rig.mock, 0);
    assert!(tools.contains(&"read_file".to_string()), "{tools:?}");
    assert!(tools.contains(&"bash".to_string()), "{tools:?}");
    assert!(!tools.contains(&"write_file".to_string()), "{tools:?}");
    assert!(!tools.contains(&"edit_file".to_string()), "{tools:?}");
    for call in ["w", "e", "u"] {
        let done = completed(&events, call);
        assert_eq!(done["success"], false);
        assert!(
            done["output"].as_str().unwrap().contains("plan mode is on"),
            "{done}"
        );
    }
    assert!(!types(&events).contains(&"tool.started"));
    assert!(!types(&events).contains(&"approval.requested"));
    assert!(!workspace.join("planned.txt").exists());
    assert!(!workspace.join("unsandboxed.txt").exists());
    let system = rig.mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("Plan mode is on"), "{system}");
}

/// In plan mode `bash` runs under the read-only sandbox: the kernel, not
/// the model's good will, keeps the workspace unchanged.
#[tokio::test]
async fn plan_mode_runs_bash_read_only() {
    if !common::sandbox::enforced() {
        return;
    }
    let mut rig = rig("auto_approve = [\"process\"]").await;
    let (_, session) = rig.start(json!({"mode": "plan"})).await;
    std::fs::write(rig.home.workspace().join("seen.txt"), "visible").unwrap();
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({"command": "cat seen.txt; echo changed > seen.txt; touch new.txt"}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "look").await;
    let output = completed(&events, "b")["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(output.contains("visible"), "{output}");
    assert_eq!(
        std::fs::read_to_string(rig.home.workspace().join("seen.txt")).unwrap(),
        "visible"
    );
    assert!(!rig.home.workspace().join("new.txt").exists());
    // The model is told to put it in the plan, never to retry unsandboxed.
    assert!(
        output.contains("[sandbox: plan mode — this command ran in the read-only sandbox"),
        "{output}"
    );
    assert!(
        output.contains("Do not run it again with unsandboxed: true"),
        "{output}"
    );
    assert!(!output.contains("run it again with unsandboxed: true (the user is asked)"));
}

/// `session.configure {mode}` while a turn runs: the next step sees it.
/// Leaving plan mode offers the write tools again.
#[tokio::test]
async fn switching_mode_applies_from_the_next_step_even_mid_turn() {
    let mut rig = rig("auto_approve = [\"read\", \"write\"]").await;
    let (started, session) = rig.start(json!({})).await;
    assert_eq!(started["mode"], "default");
    rig.mock.push(
        Reply::tool_calls(&[("r", "read_file", json!({"path": "missing.txt"}))])
            .drip(std::time::Duration::from_millis(300)),
    );
    rig.mock.push(Reply::tool_calls(&[(
        "w",
        "write_file",
        json!({"path": "late.txt", "content": "x"}),
    )]));
    rig.mock.push(Reply::text(["planned"]));
    rig.server.start_turn(&session, "t", "go").await;
    rig.server.expect("turn.started").await;
    rig.server
        .send(
            json!({"type":"session.configure","request_id":"m","session_id":session,"mode":"plan"}),
        )
        .await;
    let events = rig.server.until_terminal().await;
    let configured = events
        .iter()
        .find(|e| e["type"] == "session.configured")
        .unwrap();
    assert_eq!(configured["mode"], "plan");
    assert_eq!(configured["request_id"], "m");
    assert!(completed(&events, "w")["output"]
        .as_str()
        .unwrap()
        .contains("plan mode is on"));
    assert!(!rig.home.workspace().join("late.txt").exists());
    assert!(!offered(&rig.mock, 1).contains(&"write_file".to_string()));

    rig.server
        .send(json!({"type":"session.configure","request_id":"d","session_id":session,"mode":"default"}))
        .await;
    let configured = rig.server.expect("session.configured").await;
    assert_eq!(configured["mode"], "default");
    rig.mock.push(Reply::text(["ready"]));
    rig.turn(&session, "carry out the plan").await;
    assert!(offered(&rig.mock, 3).contains(&"write_file".to_string()));
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn custom_commands_expand_and_unknown_ones_never_reach_the_model() {
    let mut rig = Rig::with_capabilities("", json!({"commands":true,"hooks":true})).await;
    let workspace = rig.home.workspace();
    write(
        &workspace.join(".scv/commands/review.md"),
        "---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $ARGUMENTS for bugs; start with $1.\n",
    );
    write(
        &rig.home.path().join("commands/standup.md"),
        "Write my standup notes.\n",
    );
    let (started, session) = rig.start(json!({})).await;
    let commands = started["commands"].as_array().unwrap();
    let review = commands.iter().find(|c| c["name"] == "review").unwrap();
    assert_eq!(review["description"], "Review a file");
    assert_eq!(review["argument_hint"], "FILE");
    assert_eq!(review["kind"], "command");
    assert_eq!(review["scope"], "workspace");
    let standup = commands.iter().find(|c| c["name"] == "standup").unwrap();
    assert_eq!(standup["scope"], "user");

    rig.mock.push(Reply::text(["looks fine"]));
    rig.server
        .send(
            json!({"type":"turn.start","request_id":"c","session_id":session,
                     "prompt":"/review src/lib.rs","command":true}),
        )
        .await;
    rig.server.until_terminal().await;
    let user = last_message(&rig.mock, 0);
    assert_eq!(user, "Review src/lib.rs for bugs; start with src/lib.rs.");

    // Unknown: a clear error, no turn, no request.
    rig.server
        .send(
            json!({"type":"turn.start","request_id":"u","session_id":session,
                     "prompt":"/reveiw x","command":true}),
        )
        .await;
    let error = rig.server.expect_error("invalid_request", "u").await;
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("/reveiw"), "{message}");
    assert!(message.contains("review"), "a suggestion: {message}");
    assert_eq!(rig.mock.request_count(), 1);

    // Without `command`, a prompt is sent as written.
    rig.mock.push(Reply::text(["ok"]));
    rig.turn(&session, "/review is a word I like").await;
    let user = last_message(&rig.mock, 1);
    assert_eq!(user, "/review is a word I like");
}

#[tokio::test]
async fn skills_are_indexed_loaded_by_the_tool_and_by_slash_name() {
    let mut rig = Rig::with_capabilities("", json!({"commands":true,"hooks":true})).await;
    let workspace = rig.home.workspace();
    write(
        &workspace.join(".claude/skills/release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: How this project writes its release notes\n---\nGroup by crate. Past tense. No emoji.\n",
    );
    // Malformed: the frontmatter never closes.
    write(
        &workspace.join(".scv/skills/broken/SKILL.md"),
        "---\nname: broken\ndescription: never closed\n",
    );
    let (started, session) = rig.start(json!({})).await;
    let diagnostics = started["command_diagnostics"].as_array().unwrap();
    assert!(
        diagnostics
            .iter()
            .any(|d| d.as_str().unwrap().contains("broken/SKILL.md:1")),
        "{diagnostics:?}"
    );
    rig.mock.push(Reply::tool_calls(&[(
        "s",
        "skill",
        json!({"name": "release-notes"}),
    )]));
    rig.mock.push(Reply::text(["noted"]));
    let events = rig.turn(&session, "write the release notes").await;
    let system = rig.mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("release-notes: How this project writes its release notes"),
        "{system}"
    );
    assert!(
        !system.contains("Past tense"),
        "only the index, not the body"
    );
    assert!(offered(&rig.mock, 0).contains(&"skill".to_string()));
    let loaded = completed(&events, "s");
    assert_eq!(loaded["success"], true);
    assert!(loaded["output"].as_str().unwrap().contains("Past tense"));
    assert!(!types(&events).contains(&"approval.requested"), "risk read");

    rig.mock.push(Reply::text(["ok"]));
    rig.server
        .send(
            json!({"type":"turn.start","request_id":"k","session_id":session,
                     "prompt":"/release-notes v0.2","command":true}),
        )
        .await;
    rig.server.until_terminal().await;
    let user = last_message(&rig.mock, 2);
    assert!(user.contains("Past tense"), "{user}");
    assert!(user.contains("v0.2"), "{user}");
}

/// Finding c02 through the real daemon: while a thread flips
/// `.scv/skills/notes/SKILL.md` between the skill and a link to a key
/// outside the workspace (each flip one atomic `renameat2` exchange), the
/// model calls `skill {name: "notes"}` 320 times over two turns and the
/// user types `/notes` 20 times. The key is in no tool result, no
/// expansion and no request to the provider; the session carries on.
#[tokio::test]
async fn a_skill_flipped_to_a_link_outside_never_reaches_the_model() {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    const KEY: &str = "c02-PRIVATE-KEY-MATERIAL";
    let mut rig = rig("").await;
    let outside = tempfile::tempdir().unwrap();
    let key = outside.path().join("id_ed25519");
    std::fs::write(
        &key,
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY}\n-----END OPENSSH PRIVATE KEY-----\n"),
    )
    .unwrap();
    let skill = rig.home.workspace().join(".scv/skills/notes/SKILL.md");
    write(
        &skill,
        "---\nname: notes\ndescription: Take notes\n---\nWrite notes in NOTES.md.\n",
    );
    let link = skill.with_file_name(".SKILL.md.link");
    std::os::unix::fs::symlink(&key, &link).unwrap();
    let (_, session) = rig.start(json!({})).await;

    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, skill, link) = (Arc::clone(&stop), skill.clone(), link.clone());
        std::thread::spawn(move || {
            let flip = || renameat_with(CWD, &skill, CWD, &link, RenameFlags::EXCHANGE);
            let mut flips = 0u64;
            while !stop.load(Ordering::Relaxed) {
                flip().unwrap();
                flips += 1;
            }
            if flips % 2 == 1 {
                flip().unwrap(); // back to the skill
            }
            flips
        })
    };

    let (mut loaded, mut refused) = (0, 0);
    for turn in 0..2 {
        for response in 0..5 {
            let calls: Vec<(String, &str, Value)> = (0..32)
                .map(|i| {
                    let id = format!("s{turn}-{response}-{i}");
                    (id, "skill", json!({"name": "notes"}))
                })
                .collect();
            let calls: Vec<(&str, &str, Value)> = calls
                .iter()
                .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
                .collect();
            rig.mock.push(Reply::tool_calls(&calls));
        }
        rig.mock.push(Reply::text(["noted"]));
        let events = rig.turn(&session, "take notes").await;
        assert_eq!(events.last().unwrap()["type"], "turn.completed");
        for (id, success, output) in common::completed(&events) {
            assert!(!output.contains(KEY), "{id} read the key: {output}");
            if success {
                assert!(output.contains("Write notes in NOTES.md."), "{output}");
                loaded += 1;
            } else {
                refused += 1;
            }
        }
    }
    assert_eq!(loaded + refused, 320);
    // `/notes`, expanded by the server from the file as it is now.
    let mut pending = false;
    for i in 0..20 {
        if !pending {
            rig.mock.push(Reply::text(["ok"]));
            pending = true;
        }
        let id = format!("n{i}");
        rig.server
            .send(
                json!({"type":"turn.start","request_id":id,"session_id":session,
                         "prompt":"/notes","command":true}),
            )
            .await;
        let first = rig.server.next().await;
        if first["type"] == "error" {
            let message = first["message"].as_str().unwrap();
            assert!(!message.contains(KEY), "{message}");
            continue;
        }
        pending = false;
        let mut events = vec![first.clone()];
        if !matches!(
            first["type"].as_str(),
            Some("turn.completed" | "turn.failed")
        ) {
            events.extend(rig.server.until_terminal().await);
        }
        assert_eq!(events.last().unwrap()["type"], "turn.completed");
    }
    if pending {
        rig.turn(&session, "nothing").await; // takes the reply left queued
    }
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    eprintln!("{flips} flips; {loaded} loaded, {refused} refused");
    for request in rig.mock.requests() {
        assert!(!request.body.to_string().contains(KEY), "sent to the model");
    }

    // The flipping over, the skill loads as before.
    rig.mock.push(Reply::tool_calls(&[(
        "last",
        "skill",
        json!({"name": "notes"}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(&session, "once more").await;
    let last = completed(&events, "last");
    assert_eq!(last["success"], true, "{last}");
    assert!(last["output"]
        .as_str()
        .unwrap()
        .contains("Write notes in NOTES.md."));
}

/// A session without skills is offered exactly the built-in tools (and
/// `task`, subagents being on by default), and a client without
/// capability `commands` gets no `commands` field.
#[tokio::test]
async fn nothing_changes_for_a_session_without_any() {
    let mut rig = Rig::new("").await;
    rig.server
        .send(json!({"type":"session.start","request_id":"s","cwd":rig.home.workspace()}))
        .await;
    let started = rig.server.expect("session.started").await;
    rig.server.expect("queue.snapshot").await;
    assert!(started.get("commands").is_none());
    assert!(started.get("command_diagnostics").is_none());
    let session = started["session_id"].as_str().unwrap().to_string();
    rig.mock.push(Reply::text(["hi"]));
    rig.turn(&session, "hello").await;
    assert_eq!(
        offered(&rig.mock, 0),
        [
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "list_dir",
            "search",
            "bash_output",
            "bash_kill",
            "web_fetch",
            "task"
        ]
    );
}

/// A session without tools runs no custom command: a clear error, and the
/// session carries on.
#[tokio::test]
async fn a_session_without_tools_refuses_commands_and_carries_on() {
    let mut rig = Rig::with_capabilities("", json!({"commands":true,"hooks":true})).await;
    write(
        &rig.home.workspace().join(".scv/commands/review.md"),
        "Review $ARGUMENTS.",
    );
    let (_, session) = rig.start(json!({"no_tools": true})).await;
    rig.server
        .send(
            json!({"type":"turn.start","request_id":"c","session_id":session,
                     "prompt":"/review x","command":true}),
        )
        .await;
    let error = rig.server.expect_error("invalid_request", "c").await;
    assert!(error["message"].as_str().unwrap().contains("without tools"));
    assert_eq!(rig.mock.request_count(), 0);
    rig.mock.push(Reply::text(["hi"]));
    let events = rig.turn(&session, "hello").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}
