#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Tools, approvals and the multi-step loop, end to end through the real
//! binary: event order per call, approvals and denials, limits, cancel
//! during an approval and during a running command, workspace confinement
//! and output caps.

mod common;
use common::*;

/// The tool result messages of a recorded provider request.
fn tool_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn approve(session: &str, approval_id: &Value, approved: bool) -> Value {
    json!({"type":"approval.resolve","request_id":"ap","session_id":session,"approval_id":approval_id,"approved":approved})
}

#[tokio::test]
async fn an_approved_bash_call_runs_and_its_result_goes_back_to_the_model() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let workspace = rig.home.workspace();
    rig.mock.push(Reply::tool_calls(&[(
        "call_123",
        "bash",
        json!({"command": "echo hi from $PWD; echo oops >&2; exit 3"}),
    )]));
    rig.mock.push(Reply::text(["Done."]));
    rig.server.start_turn(&session, "3", "run it").await;

    let events = rig.server.until("approval.requested").await;
    assert_eq!(
        types(&events),
        [
            "turn.started",
            "assistant.completed",
            "tool.proposed",
            "approval.requested"
        ]
    );
    assert_eq!(
        events[1]["content"], "",
        "a tools-only response completes with empty content"
    );
    let turn_id = events[0]["turn_id"].clone();
    assert_eq!(
        events[2],
        json!({"type":"tool.proposed","request_id":"3","session_id":session,"turn_id":turn_id,"seq":3,
               "call_id":"call_123","name":"bash","arguments":{"command":"echo hi from $PWD; echo oops >&2; exit 3"}})
    );
    let request = &events[3];
    let approval_id = request["approval_id"].clone();
    let parsed = approval_id.as_str().unwrap();
    assert_eq!(parsed.len(), 36);
    assert_eq!(&parsed[14..15], "4", "UUIDv4: {parsed}");
    assert_eq!(request["call_id"], "call_123");
    assert_eq!(request["name"], "bash");
    assert_eq!(request["risk"], "process");
    assert_eq!(request["cwd"], workspace.display().to_string());
    assert_eq!(
        request["summary"],
        "Run shell command: echo hi from $PWD; echo oops >&2; exit 3"
    );
    assert_eq!(rig.mock.request_count(), 1, "nothing runs before approval");

    rig.server.send(approve(&session, &approval_id, true)).await;
    let events = rig.server.until_terminal().await;
    assert_eq!(
        types(&events),
        [
            "tool.started",
            "tool.completed",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
    let completed = &events[1];
    assert_eq!(completed["success"], false, "exit 3 is a failure");
    assert_eq!(completed["truncated"], false);
    let output = completed["output"].as_str().unwrap();
    assert!(
        output.contains(&format!("hi from {}", workspace.display())),
        "{output}"
    );
    assert!(output.contains("oops"), "stderr is captured: {output}");
    assert!(output.contains("[exit code: 3]"), "{output}");
    assert_eq!(events[4]["steps"], 2);

    let second = &rig.mock.requests()[1].body;
    let results = tool_results(second);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "call_123");
    assert!(results[0].1.contains("[exit code: 3]"));
    let assistant = &second["messages"][2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_123");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "bash");

    // Resolving the same approval again is an unknown id.
    rig.server.send(approve(&session, &approval_id, true)).await;
    rig.server.expect_error("approval_not_found", "ap").await;
}

#[tokio::test]
async fn two_calls_in_one_response_are_proposed_and_approved_one_by_one() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[
        (
            "call_a",
            "write_file",
            json!({"path": "notes/a.txt", "content": "alpha\n"}),
        ),
        ("call_b", "bash", json!({"command": "cat notes/a.txt"})),
    ]));
    rig.mock.push(Reply::text(["ok"]));
    rig.server.start_turn(&session, "t", "two").await;

    let first = rig.server.until("approval.requested").await;
    assert_eq!(types(&first)[2..], ["tool.proposed", "approval.requested"]);
    assert_eq!(first[2]["call_id"], "call_a");
    assert_eq!(first[3]["risk"], "write");
    assert_eq!(
        first[3]["summary"], "Write file: notes/a.txt (6 bytes, 1 line)\n| alpha",
        "a write's approval shows its size and first lines"
    );
    rig.server
        .send(approve(&session, &first[3]["approval_id"], true))
        .await;

    let second = rig.server.until("approval.requested").await;
    assert_eq!(
        types(&second),
        [
            "tool.started",
            "tool.completed",
            "tool.proposed",
            "approval.requested"
        ]
    );
    assert_eq!(second[1]["call_id"], "call_a");
    assert_eq!(second[1]["success"], true);
    assert_eq!(second[2]["call_id"], "call_b");
    assert_ne!(second[3]["approval_id"], first[3]["approval_id"]);
    // The first approval covered only its own call.
    rig.server
        .send(approve(&session, &first[3]["approval_id"], true))
        .await;
    assert_eq!(
        rig.server.expect("error").await["code"],
        "approval_not_found"
    );
    rig.server
        .send(approve(&session, &second[3]["approval_id"], true))
        .await;

    let rest = rig.server.until_terminal().await;
    let completed = rest.iter().find(|e| e["type"] == "tool.completed").unwrap();
    assert_eq!(completed["call_id"], "call_b");
    assert!(completed["output"].as_str().unwrap().contains("alpha"));
    assert_eq!(rest.last().unwrap()["type"], "turn.completed");
    let results = tool_results(&rig.mock.requests()[1].body);
    assert_eq!(
        results.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["call_a", "call_b"]
    );
}

#[tokio::test]
async fn a_denied_call_completes_unsuccessfully_and_the_turn_goes_on() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let marker = rig.home.workspace().join("should-not-exist");
    rig.mock.push(Reply::tool_calls(&[(
        "call_x",
        "bash",
        json!({"command": format!("touch {}", marker.display())}),
    )]));
    rig.mock.push(Reply::text(["Understood."]));
    rig.server.start_turn(&session, "t", "touch").await;
    let events = rig.server.until("approval.requested").await;
    rig.server
        .send(approve(
            &session,
            &events.last().unwrap()["approval_id"],
            false,
        ))
        .await;
    let rest = rig.server.until_terminal().await;
    assert_eq!(
        types(&rest),
        [
            "tool.completed",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
    assert_eq!(rest[0]["success"], false);
    assert!(rest[0]["output"].as_str().unwrap().contains("denied"));
    assert!(!marker.exists());
    let results = tool_results(&rig.mock.requests()[1].body);
    assert!(
        results[0].1.contains("denied"),
        "the model is told: {results:?}"
    );
}

#[tokio::test]
async fn unknown_approval_ids_are_rejected() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.server
        .send(approve(
            &session,
            &json!("11111111-1111-4111-8111-111111111111"),
            true,
        ))
        .await;
    rig.server.expect_error("approval_not_found", "ap").await;
    rig.server.send(approve("nope", &json!("x"), true)).await;
    assert_eq!(
        rig.server.expect("error").await["code"],
        "session_not_found"
    );
}

#[tokio::test]
async fn read_tools_run_without_approval_and_fragmented_arguments_assemble() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let workspace = rig.home.workspace();
    let text: String = (1..=30).map(|i| format!("line number {i}\n")).collect();
    std::fs::write(workspace.join("data.txt"), &text).unwrap();
    // Arguments arrive three characters at a time.
    rig.mock.push(Reply::tool_calls_in(
        &[(
            "call_r",
            "read_file",
            json!({"path": "data.txt", "offset": 10, "limit": 3}),
        )],
        3,
    ));
    rig.mock.push(Reply::text(["read"]));
    let events = rig.turn(&session, "read").await;
    assert_eq!(
        types(&events),
        [
            "turn.started",
            "assistant.completed",
            "tool.proposed",
            "tool.started",
            "tool.completed",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
    assert_eq!(
        events[2]["arguments"],
        json!({"path": "data.txt", "offset": 10, "limit": 3})
    );
    let output = events[4]["output"].as_str().unwrap();
    assert!(
        output.starts_with(
            "    10\tline number 10\n    11\tline number 11\n    12\tline number 12\n"
        ),
        "{output}"
    );
    assert!(output.contains("lines 10-12 of 30"), "{output}");
    assert_seq_contiguous(&events);
}

#[tokio::test]
async fn auto_approve_names_the_classes_that_run_without_asking() {
    let mut rig = Rig::new("auto_approve = [\"read\", \"write\"]").await;
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "w",
        "write_file",
        json!({"path": "x.txt", "content": "x"}),
    )]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "write").await;
    assert!(!types(&events).contains(&"approval.requested"));
    assert_eq!(
        std::fs::read_to_string(rig.home.workspace().join("x.txt")).unwrap(),
        "x"
    );
}

#[tokio::test]
async fn the_step_limit_fails_the_turn_with_the_configured_number() {
    let mut rig = Rig::new("max_steps = 3").await;
    let session = rig.session().await;
    for i in 0..3 {
        rig.mock.push(Reply::tool_calls(&[(
            &format!("c{i}"),
            "list_dir",
            json!({"path": "."}),
        )]));
    }
    let events = rig.turn(&session, "loop").await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn.failed");
    assert_eq!(last["code"], "step_limit");
    assert_eq!(last["message"], "agent reached 3 steps");
    assert_eq!(rig.mock.request_count(), 3, "steps count provider requests");
    let ran = events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .count();
    assert_eq!(ran, 2, "the last step's calls do not run");
    // The session goes on, and the dangling call got a result.
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "next").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let results = tool_results(&rig.mock.requests()[3].body);
    assert_eq!(
        results.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["c0", "c1", "c2"]
    );
}

#[tokio::test]
async fn cancel_while_waiting_for_approval_forgets_the_approval() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "c",
        "bash",
        json!({"command": "true"}),
    )]));
    rig.server.start_turn(&session, "t", "go").await;
    let events = rig.server.until("approval.requested").await;
    let approval_id = events.last().unwrap()["approval_id"].clone();
    rig.server
        .send(json!({"type":"turn.cancel","request_id":"c","session_id":session,"turn_id":events[0]["turn_id"]}))
        .await;
    let cancelled = rig.server.expect("turn.cancelled").await;
    assert_eq!(cancelled["request_id"], "t");
    rig.server.send(approve(&session, &approval_id, true)).await;
    assert_eq!(
        rig.server.expect("error").await["code"],
        "approval_not_found"
    );
    rig.mock.push(Reply::text(["fresh"]));
    let events = rig.turn(&session, "again").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn cancel_during_bash_kills_the_whole_process_group() {
    let mut rig = Rig::new("auto_approve = [\"read\", \"process\"]").await;
    let session = rig.session().await;
    let pidfile = rig.home.workspace().join("bg.pid");
    // A backgrounded grandchild that would outlive bash if only bash died.
    let command = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    rig.mock.push(Reply::tool_calls(&[(
        "c",
        "bash",
        json!({"command": command}),
    )]));
    rig.server.start_turn(&session, "t", "sleep").await;
    let events = rig.server.until("tool.started").await;
    let pid = read_pid(&pidfile).await;
    assert!(scv_test_support::procfs::is_running(pid));
    rig.server
        .send(json!({"type":"turn.cancel","request_id":"c","session_id":session,"turn_id":events[0]["turn_id"]}))
        .await;
    let terminal = rig.server.until_terminal().await;
    assert_eq!(types(&terminal), ["turn.cancelled"]);
    assert!(gone(pid).await, "sleep {pid} outlived its cancelled call");
}

#[tokio::test]
async fn a_bash_timeout_kills_the_command_and_says_so() {
    let mut rig = Rig::new("auto_approve = [\"read\", \"process\"]").await;
    let session = rig.session().await;
    let pidfile = rig.home.workspace().join("t.pid");
    let command = format!(
        "echo started; sleep 300 & echo $! > {}; wait",
        pidfile.display()
    );
    rig.mock.push(Reply::tool_calls(&[(
        "c",
        "bash",
        json!({"command": command, "timeout_ms": 300}),
    )]));
    rig.mock.push(Reply::text(["slow"]));
    let events = rig.turn(&session, "slow").await;
    let completed = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    assert_eq!(completed["success"], false);
    let output = completed["output"].as_str().unwrap();
    assert!(
        output.contains("started") && output.contains("timed out after 300 ms"),
        "{output}"
    );
    assert!(gone(read_pid(&pidfile).await).await);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn file_tools_refuse_paths_outside_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let mut rig = Rig::new("auto_approve = [\"read\", \"write\"]").await;
    let session = rig.session().await;
    let workspace = rig.home.workspace();
    std::os::unix::fs::symlink(outside.path(), workspace.join("link")).unwrap();
    let secret = outside.path().join("secret.txt");
    rig.mock.push(Reply::tool_calls(&[
        (
            "dots",
            "read_file",
            json!({"path": "../../../../../../etc/passwd"}),
        ),
        ("link", "read_file", json!({"path": "link/secret.txt"})),
        ("abs", "read_file", json!({"path": secret})),
        (
            "write",
            "write_file",
            json!({"path": "link/planted.txt", "content": "x"}),
        ),
        ("list", "list_dir", json!({"path": ".."})),
    ]));
    rig.mock.push(Reply::text(["refused"]));
    let events = rig.turn(&session, "escape").await;
    let completed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .collect();
    assert_eq!(completed.len(), 5);
    for event in completed {
        assert_eq!(event["success"], false, "{event}");
        assert!(
            event["output"]
                .as_str()
                .unwrap()
                .contains("outside the workspace"),
            "{event}"
        );
    }
    assert!(!outside.path().join("planted.txt").exists());
    let results = tool_results(&rig.mock.requests()[1].body);
    assert!(results
        .iter()
        .all(|(_, text)| text.contains("outside the workspace") && !text.contains("secret\n")));
}

#[tokio::test]
async fn long_output_is_truncated_and_everyone_is_told() {
    let mut rig =
        Rig::new("auto_approve = [\"read\", \"process\"]\ntool_output_max_bytes = 2000").await;
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "c",
        "bash",
        json!({"command": "seq 1 100000"}),
    )]));
    rig.mock.push(Reply::text(["long"]));
    let events = rig.turn(&session, "long").await;
    let completed = events
        .iter()
        .find(|e| e["type"] == "tool.completed")
        .unwrap();
    assert_eq!(completed["truncated"], true);
    let output = completed["output"].as_str().unwrap();
    assert!(output.len() <= 2000, "{}", output.len());
    assert!(output.starts_with("1\n2\n3\n"), "head kept");
    assert!(
        output.contains("100000\n[exit code: 0]"),
        "tail kept: {output}"
    );
    let results = tool_results(&rig.mock.requests()[1].body);
    assert!(results[0].1.contains("[output was truncated]"));
}

#[tokio::test]
async fn a_no_tools_session_refuses_calls_the_model_makes_anyway() {
    let mut rig = Rig::new("").await;
    let workspace = rig.home.workspace();
    let session = rig
        .server
        .start_session_with(json!({"cwd": workspace, "no_tools": true}))
        .await;
    rig.mock.push(Reply::tool_calls(&[(
        "c",
        "bash",
        json!({"command": "touch nope"}),
    )]));
    rig.mock.push(Reply::text(["fine"]));
    let events = rig.turn(&session, "try").await;
    assert_eq!(
        types(&events),
        [
            "turn.started",
            "assistant.completed",
            "tool.proposed",
            "tool.completed",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
    assert_eq!(events[3]["success"], false);
    assert!(events[3]["output"].as_str().unwrap().contains("disabled"));
    assert!(!workspace.join("nope").exists());
    let requests = rig.mock.requests();
    assert!(requests.iter().all(|r| r.body.get("tools").is_none()));
    assert!(requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("No tools"));
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_are_model_visible_errors() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.mock.push(Reply::raw(
        vec![
            json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"u","function":{"name":"teleport","arguments":"{}"}}]}}]}).to_string(),
            json!({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"read_file","arguments":"{\"path\": "}}]}}]}).to_string(),
            json!({"choices":[{"delta":{"tool_calls":[{"index":2,"id":"m","function":{"name":"read_file","arguments":"{}"}}]}}]}).to_string(),
            json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
        ],
        Ending::Done,
    ));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "odd").await;
    let completed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .collect();
    assert_eq!(completed.len(), 3);
    assert!(completed[0]["output"]
        .as_str()
        .unwrap()
        .contains("unknown tool `teleport`"));
    assert!(completed[1]["output"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    assert!(completed[2]["output"]
        .as_str()
        .unwrap()
        .contains("invalid arguments"));
    assert!(completed.iter().all(|e| e["success"] == false));
    let proposed = events
        .iter()
        .find(|e| e["type"] == "tool.proposed" && e["call_id"] == "b")
        .unwrap();
    assert_eq!(
        proposed["arguments"], "{\"path\": ",
        "unparseable arguments are shown raw"
    );
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn the_system_prompt_names_the_workspace_tools_and_agents_md() {
    let mut rig = Rig::new("").await;
    let workspace = rig.home.workspace();
    std::fs::write(
        workspace.join("AGENTS.md"),
        "Always run `make check` before finishing.",
    )
    .unwrap();
    let session = rig.session().await;
    rig.mock.push(Reply::text(["hi"]));
    rig.turn(&session, "hi").await;
    let system = rig.mock.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("You are SCV"));
    assert!(system.contains(&workspace.display().to_string()));
    for tool in [
        "bash",
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "search",
    ] {
        assert!(system.contains(&format!("- {tool}:")), "{tool} missing");
    }
    assert!(system.contains("Always run `make check` before finishing."));
}

#[tokio::test]
async fn file_tools_edit_search_list_and_refuse_binary() {
    let mut rig = Rig::new("auto_approve = [\"read\", \"write\"]").await;
    let session = rig.session().await;
    let ws = rig.home.workspace();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("target")).unwrap();
    std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(
        ws.join("src/lib.rs"),
        "fn alpha() {}\nfn beta() {}\nfn alpha_two() {}\n",
    )
    .unwrap();
    std::fs::write(ws.join("target/out.rs"), "fn alpha() {}\n").unwrap();
    std::fs::write(ws.join("blob.bin"), [0u8, 159, 146, 150, 0, 1, 2]).unwrap();
    rig.mock.push(Reply::tool_calls(&[
        ("e1", "edit_file", json!({"path": "src/lib.rs", "old_string": "fn beta() {}", "new_string": "fn gamma() {}"})),
        ("e2", "edit_file", json!({"path": "src/lib.rs", "old_string": "fn missing()", "new_string": "x"})),
        ("e3", "edit_file", json!({"path": "src/lib.rs", "old_string": "alpha", "new_string": "delta"})),
        ("e4", "edit_file", json!({"path": "src/lib.rs", "old_string": "alpha", "new_string": "delta", "replace_all": true})),
        ("s1", "search", json!({"pattern": "fn (gamma|delta)"})),
        ("s2", "search", json!({"pattern": "delta", "glob": "*.txt"})),
        ("s3", "search", json!({"pattern": "(unclosed"})),
        ("r1", "read_file", json!({"path": "blob.bin"})),
        ("l1", "list_dir", json!({"path": "."})),
    ]));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(&session, "work").await;
    let out: std::collections::HashMap<String, (bool, String)> = events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .map(|e| {
            (
                e["call_id"].as_str().unwrap().to_string(),
                (
                    e["success"].as_bool().unwrap(),
                    e["output"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect();
    assert_eq!(
        out["e1"],
        (true, "Replaced 1 occurrence in src/lib.rs".to_string())
    );
    assert!(
        !out["e2"].0 && out["e2"].1.contains("not found"),
        "{:?}",
        out["e2"]
    );
    assert!(
        !out["e3"].0 && out["e3"].1.contains("occurs 2 times"),
        "{:?}",
        out["e3"]
    );
    assert_eq!(
        out["e4"],
        (true, "Replaced 2 occurrences in src/lib.rs".to_string())
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("src/lib.rs")).unwrap(),
        "fn delta() {}\nfn gamma() {}\nfn delta_two() {}\n"
    );
    let (ok, found) = &out["s1"];
    assert!(ok);
    assert_eq!(
        found,
        "src/lib.rs:1:fn delta() {}\nsrc/lib.rs:2:fn gamma() {}\nsrc/lib.rs:3:fn delta_two() {}"
    );
    assert!(!found.contains("target/"), ".gitignore is honoured");
    assert_eq!(out["s2"], (true, "no matches".to_string()));
    assert!(!out["s3"].0 && out["s3"].1.contains("invalid pattern"));
    assert!(
        !out["r1"].0 && out["r1"].1.contains("binary file"),
        "{:?}",
        out["r1"]
    );
    assert_eq!(
        out["l1"],
        (true, ".gitignore\nblob.bin\nsrc/\ntarget/".to_string())
    );
}

#[tokio::test]
async fn sigterm_to_a_stdio_server_kills_the_running_tool() {
    let mut rig = Rig::new("auto_approve = [\"read\", \"process\"]").await;
    let session = rig.session().await;
    let pidfile = rig.home.workspace().join("stdio.pid");
    let command = format!("sleep 300 & echo $! > {}; wait", pidfile.display());
    rig.mock.push(Reply::tool_calls(&[(
        "c",
        "bash",
        json!({"command": command}),
    )]));
    rig.server.start_turn(&session, "t", "sleep").await;
    rig.server.until("tool.started").await;
    let pid = read_pid(&pidfile).await;
    unsafe { libc::kill(rig.server.pid() as i32, libc::SIGTERM) };
    let rest = rig.server.until_terminal().await;
    assert_eq!(rest.last().unwrap()["type"], "turn.cancelled");
    assert!(gone(pid).await, "sleep {pid} outlived the server");
    let Rig { server, .. } = rig;
    assert!(server.wait().await.success());
}
