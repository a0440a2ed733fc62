#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! session.start validation and the exact shape of session.started.

mod common;
use common::*;

#[tokio::test]
async fn session_started_carries_every_field_and_a_canonical_cwd() {
    let mut rig = Rig::new("context_max_tokens = 64000").await;
    let workspace = rig.home.workspace();
    std::fs::create_dir(workspace.join("sub")).unwrap();
    let winding = format!("{}/sub/../sub/.", workspace.display());
    rig.server
        .send(json!({"type":"session.start","request_id":"2","cwd":winding}))
        .await;
    let started = rig.server.expect("session.started").await;
    let id = started["session_id"].as_str().unwrap().to_string();
    let (sandbox, enforced) = match scv_sandbox::probe() {
        scv_sandbox::Support::Enforced { .. } => ("workspace-write", true),
        scv_sandbox::Support::Unavailable(_) => ("unavailable", false),
    };
    let mut expected = json!({"type":"session.started","request_id":"2","session_id":id,
           "cwd":workspace.join("sub").display().to_string(),"model":"mock-model",
           "context_max_tokens":64000,"max_server_frame_bytes":8388608,
           "max_transcript_bytes":8388608,"max_transcript_items":10000,
           "max_prompt_history_bytes":1048576,"max_prompt_history_items":200,
           "provider":"openai","sandbox":sandbox,"mode":"default"});
    if enforced {
        // Confined commands: whether they may use the network.
        expected["sandbox_network"] = json!(true);
    }
    assert_eq!(
        started,
        expected,
        "the document's fields, the provider, the sandbox and the mode (extensions an old client ignores)"
    );
    let snapshot = rig.server.expect("queue.snapshot").await;
    assert_eq!(
        snapshot,
        json!({"type":"queue.snapshot","request_id":"2","session_id":id,"seq":0,"entries":[]})
    );
}

#[tokio::test]
async fn bad_workspaces_are_invalid_requests_naming_the_problem() {
    let mut rig = Rig::new("").await;
    let workspace = rig.home.workspace();
    let file = workspace.join("file.txt");
    std::fs::write(&file, "x").unwrap();
    let cases = [
        ("relative/path".to_string(), "not an absolute path"),
        (
            workspace.join("missing").display().to_string(),
            "does not exist",
        ),
        (file.display().to_string(), "not a directory"),
        (String::new(), "empty"),
    ];
    for (cwd, problem) in cases {
        rig.server
            .send(json!({"type":"session.start","request_id":"s","cwd":cwd}))
            .await;
        let event = rig.server.expect("error").await;
        assert_eq!(event["code"], "invalid_request", "{cwd}");
        assert_eq!(event["request_id"], "s");
        assert!(
            event["message"].as_str().unwrap().contains(problem),
            "{event}"
        );
    }
    rig.server
        .send(
            json!({"type":"session.start","request_id":"p","cwd":workspace,"provider":"claude-code"}),
        )
        .await;
    let event = rig.server.expect("error").await;
    assert_eq!(event["code"], "invalid_request");
    assert_eq!(
        event["message"],
        "unknown provider `claude-code` (known: anthropic, deepseek, gemini, lmstudio, ollama, openai, openai-responses, openrouter)"
    );
    // The connection goes on.
    rig.session().await;
}

#[tokio::test]
async fn turn_requests_are_validated() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.server
        .send(json!({"type":"turn.start","request_id":"u","session_id":"no-such","prompt":"hi"}))
        .await;
    rig.server.expect_error("session_not_found", "u").await;

    rig.server.start_turn(&session, "e", "   ").await;
    rig.server.expect_error("invalid_request", "e").await;

    let huge = "x".repeat(256 * 1024 + 1);
    rig.server.start_turn(&session, "h", &huge).await;
    let event = rig.server.expect_error("invalid_request", "h").await;
    assert!(event["message"].as_str().unwrap().contains("262144"));

    // A prompt of exactly the limit is accepted.
    rig.mock.push(Reply::text(["ok"]));
    let exact = "y".repeat(256 * 1024);
    let events = rig.turn(&session, &exact).await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert_eq!(
        rig.mock.request_count(),
        1,
        "no provider request for refused prompts"
    );
}

#[tokio::test]
async fn sessions_are_independent_and_overrides_apply_to_one_session() {
    let mut rig = Rig::new("").await;
    let other = MockProvider::start().await;
    let plain = rig.session().await;
    let workspace = rig.home.workspace();
    let custom = rig
        .server
        .start_session_with(json!({"cwd":workspace,"model":"other-model","base_url":other.base_url(),"no_tools":true}))
        .await;
    assert_ne!(plain, custom);

    other.push(Reply::text(["from other"]));
    let events = rig.turn(&custom, "hi").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let request = &other.requests()[0];
    assert_eq!(request.body["model"], "other-model");
    assert!(
        request.body.get("tools").is_none(),
        "no_tools offers no tools"
    );

    rig.mock.push(Reply::text(["from default"]));
    let events = rig.turn(&plain, "hi").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let request = &rig.mock.requests()[0];
    assert_eq!(request.body["model"], "mock-model");
    let tools: Vec<&str> = request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
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

#[tokio::test]
async fn sessions_per_connection_are_bounded_with_a_clear_error() {
    let mut rig = Rig::new("").await;
    let workspace = rig.home.workspace();
    let first = rig.server.start_session(&workspace).await;
    for _ in 1..1024 {
        rig.server.start_session(&workspace).await;
    }
    rig.server
        .send(json!({"type":"session.start","request_id":"over","cwd":workspace}))
        .await;
    let error = rig.server.expect_error("invalid_request", "over").await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("already holds 1024 sessions, its limit"),
        "{error}"
    );
    // The connection and its sessions carry on.
    rig.mock.push(Reply::text(["fine"]));
    let events = rig.turn(&first, "hi").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}
