#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The Anthropic Messages and OpenAI Responses wires through the real
//! binary, against mock servers that stream as those services do (shapes
//! from their documentation and real captures; see scv-test-support's
//! `wires`). Each request is checked for the wire's invariants.

mod common;
use common::*;
use scv_test_support::wires::anthropic::Block;
use scv_test_support::wires::responses::Item;
use scv_test_support::Wire;

const ANTHROPIC_KEY: &str = "sk-ant-test-0123456789abcdef";

/// A rig whose `anthropic` and `openai-responses` presets point at the mock.
async fn rig(extra: &str, capabilities: Option<Value>) -> Rig {
    let mock = MockProvider::start().await;
    let base = mock.base_url();
    // Top-level keys first: what follows a table header belongs to it.
    let config = format!(
        "{extra}\n[providers.anthropic]\nbase_url = \"{base}\"\nmodel = \"claude-test\"\n\
         [providers.openai-responses]\nbase_url = \"{base}\"\nmodel = \"gpt-test\"\n"
    );
    let home = TestHome::new(&base, &config);
    let mut server =
        TestServer::spawn_with(BIN, home.path(), &[("ANTHROPIC_API_KEY", ANTHROPIC_KEY)]);
    let mut init = json!({"type": "initialize", "request_id": "init", "protocol_version": 2});
    if let Some(capabilities) = capabilities {
        init["capabilities"] = capabilities;
    }
    server.send(init).await;
    server.expect("initialized").await;
    Rig { mock, home, server }
}

async fn session_on(rig: &mut Rig, provider: &str) -> String {
    let workspace = rig.home.workspace();
    rig.server
        .start_session_with(json!({"cwd": workspace, "provider": provider}))
        .await
}

fn kinds(events: &[Value]) -> Vec<&str> {
    types(events)
}

fn text_of(events: &[Value], kind: &str) -> String {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| e["content"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn anthropic_text_turn_with_its_headers_cache_and_usage() {
    let mut rig = rig("", None).await;
    let session = session_on(&mut rig, "anthropic").await;
    rig.mock
        .push(Reply::anthropic_text(["Hello", " from Claude."]));
    let events = rig.turn(&session, "hi").await;
    assert_eq!(text_of(&events, "assistant.delta"), "Hello from Claude.");
    let completed = events.last().unwrap();
    assert_eq!(completed["type"], "turn.completed", "{completed}");
    let request = &rig.mock.requests_on(Wire::Anthropic)[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(ANTHROPIC_KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("authorization"), None, "never Authorization");
    let body = &request.body;
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 32000);
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(body["system"][0]["text"]
        .as_str()
        .unwrap()
        .contains("You are SCV"));
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        last["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(body["tools"][0].get("input_schema").is_some());
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );
    // Usage the mock reported: input + cache creation + cache read.
    let usage = &completed["usage"];
    assert!(usage["input_tokens"].as_u64().unwrap() > 0, "{usage}");
}

#[tokio::test]
async fn anthropic_thinking_streams_to_opted_in_clients_and_goes_back_with_its_signature() {
    let mut rig = rig(
        "reasoning_effort = \"high\"\nauto_approve = [\"read\"]\n",
        Some(json!({"reasoning": true})),
    )
    .await;
    let session = session_on(&mut rig, "anthropic").await;
    rig.mock.push(Reply::anthropic_thinking(
        ["I should ", "list the files."],
        "sig-EqQBCgIY",
        Block::tool_uses(&[("toolu_1", "list_dir", json!({"path": "."}))]),
    ));
    rig.mock.push(Reply::anthropic_text(["It is empty."]));
    let events = rig.turn(&session, "what is here?").await;
    assert_eq!(
        text_of(&events, "reasoning.delta"),
        "I should list the files."
    );
    assert_eq!(text_of(&events, "assistant.delta"), "It is empty.");
    for event in events.iter().filter(|e| e["type"] == "assistant.completed") {
        assert!(!event["content"]
            .as_str()
            .unwrap()
            .contains("list the files"));
    }
    assert_seq_contiguous(&events);
    let requests = rig.mock.requests_on(Wire::Anthropic);
    assert_eq!(
        requests[0].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 24576})
    );
    let continuation = &requests[1].body["messages"];
    let assistant = &continuation[1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "I should list the files.", "signature": "sig-EqQBCgIY"})
    );
    assert_eq!(assistant[1]["type"], "tool_use");
    assert_eq!(continuation[2]["content"][0]["type"], "tool_result");
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );
}

#[tokio::test]
async fn a_client_that_did_not_ask_gets_no_reasoning_and_no_capabilities() {
    let mut rig = rig("reasoning_effort = \"low\"\n", None).await;
    let session = session_on(&mut rig, "anthropic").await;
    rig.mock.push(Reply::anthropic_thinking(
        ["secret thoughts"],
        "sig",
        vec![Block::text(["Answer."])],
    ));
    let events = rig.turn(&session, "think").await;
    assert!(!kinds(&events).contains(&"reasoning.delta"));
    assert!(events
        .iter()
        .all(|e| !e.to_string().contains("secret thoughts")));

    // And the handshake of such a client is exactly protocol version 2.
    let mut plain = TestServer::spawn(BIN, rig.home.path());
    let initialized = plain.initialize().await;
    assert!(initialized.get("capabilities").is_none(), "{initialized}");
    let mut asking = TestServer::spawn(BIN, rig.home.path());
    asking
        .send(json!({"type":"initialize","request_id":"i","protocol_version":2,"capabilities":{"reasoning":true}}))
        .await;
    assert_eq!(
        asking.expect("initialized").await["capabilities"],
        json!({"reasoning": true})
    );
}

#[tokio::test]
async fn anthropic_failures_map_to_the_protocols_codes() {
    let mut rig = rig("", None).await;
    let session = session_on(&mut rig, "anthropic").await;
    // 529 overloaded before any output is retried.
    rig.mock.push(Reply::anthropic_error(
        529,
        "overloaded_error",
        "Overloaded",
    ));
    rig.mock.push(Reply::anthropic_text(["after a retry"]));
    let events = rig.turn(&session, "one").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    // Overloaded mid-stream ends the turn with the provider's message.
    rig.mock
        .push(Reply::anthropic_text(["par", "tial"]).then_event(
            3,
            scv_test_support::wires::anthropic::error_event("overloaded_error", "Overloaded"),
        ));
    let events = rig.turn(&session, "two").await;
    let failed = events.last().unwrap();
    assert_eq!(
        (failed["type"].as_str(), failed["code"].as_str()),
        (Some("turn.failed"), Some("provider_error"))
    );
    assert!(
        failed["message"].as_str().unwrap().contains("Overloaded"),
        "{failed}"
    );
    // A prompt the context cannot hold: one compaction (its summary
    // request), one retry, then context_limit.
    rig.mock
        .push(Reply::anthropic_prompt_too_long(250_000, 200_000));
    rig.mock.push(Reply::anthropic_text(["the summary"]));
    rig.mock
        .push(Reply::anthropic_prompt_too_long(250_000, 200_000));
    let events = rig.turn(&session, "three").await;
    assert!(kinds(&events).contains(&"context.compacted"), "{events:?}");
    assert_eq!(events.last().unwrap()["code"], "context_limit");
    // A 401 names the status, never the key.
    rig.mock.push(Reply::anthropic_error(
        401,
        "authentication_error",
        &format!("invalid x-api-key {ANTHROPIC_KEY}"),
    ));
    let events = rig.turn(&session, "four").await;
    let failed = events.last().unwrap();
    assert_eq!(failed["code"], "provider_error");
    assert!(!failed.to_string().contains(ANTHROPIC_KEY), "{failed}");
}

#[tokio::test]
async fn responses_reasoning_items_and_calls_round_trip_statelessly() {
    let mut rig = rig(
        "reasoning_effort = \"medium\"\n",
        Some(json!({"reasoning": true})),
    )
    .await;
    let session = session_on(&mut rig, "openai-responses").await;
    rig.mock.push(Reply::responses_reasoning(
        ["**Plan** list it"],
        "enc-gAAAAB",
        Item::function_calls(&[("call_1", "list_dir", json!({"path": "."}))]),
    ));
    rig.mock
        .push(Reply::responses_text(["Empty", " workspace."]));
    let events = rig.turn(&session, "look").await;
    assert_eq!(text_of(&events, "reasoning.delta"), "**Plan** list it");
    assert_eq!(text_of(&events, "assistant.delta"), "Empty workspace.");
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let requests = rig.mock.requests_on(Wire::Responses);
    let first = &requests[0].body;
    assert_eq!(first["store"], false);
    assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        first["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert!(first["instructions"]
        .as_str()
        .unwrap()
        .contains("You are SCV"));
    assert_eq!(first["tools"][0]["type"], "function");
    let input = requests[1].body["input"].as_array().unwrap();
    let types: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(
        input[1]["encrypted_content"], "enc-gAAAAB",
        "the output_item.done copy"
    );
    assert_eq!(input[2]["call_id"], "call_1");
    assert_eq!(input[3]["call_id"], "call_1");
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );
}

#[tokio::test]
async fn responses_terminal_events_and_failures() {
    let mut rig = rig("", None).await;
    let session = session_on(&mut rig, "openai-responses").await;
    // Incomplete (max_output_tokens): the turn keeps what came.
    rig.mock
        .push(Reply::responses_incomplete(["cut ", "short"]));
    let events = rig.turn(&session, "one").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert_eq!(text_of(&events, "assistant.delta"), "cut short");
    // response.failed carries the provider's message.
    rig.mock.push(Reply::responses_failed(
        "server_error",
        "The model failed to generate a response.",
    ));
    let events = rig.turn(&session, "two").await;
    let failed = events.last().unwrap();
    assert_eq!(failed["code"], "provider_error");
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("The model failed"),
        "{failed}"
    );
    // context_length_exceeded: one compaction, one retry, context_limit.
    rig.mock.push(Reply::responses_context_length_exceeded());
    rig.mock.push(Reply::responses_text(["the summary"]));
    rig.mock.push(Reply::responses_context_length_exceeded());
    let events = rig.turn(&session, "three").await;
    assert!(kinds(&events).contains(&"context.compacted"), "{events:?}");
    assert_eq!(events.last().unwrap()["code"], "context_limit");
    // A stream that ends without its terminal event fails.
    rig.mock
        .push(Reply::responses_text(["no", "end"]).then(usize::MAX, Ending::Eof));
    let events = rig.turn(&session, "four").await;
    assert_eq!(events.last().unwrap()["code"], "provider_error");
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );
}

#[tokio::test]
async fn session_configure_switches_provider_and_model_keeping_the_history() {
    let mut rig = rig("", None).await;
    let session = rig.session().await;
    // Gemini-style extra fields on a chat tool call (kept for chat only).
    rig.mock.push(Reply::raw(
        vec![
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_g","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"},"extra_content":{"google":{"thought_signature":"sig-g"}}}]}}]}).to_string(),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
        ],
        Ending::Done,
    ));
    rig.mock.push(Reply::text(["listed"]));
    let events = rig.turn(&session, "remember the word teapot").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");

    let configure = |provider: Value, model: Value| json!({"type":"session.configure","request_id":"cfg","session_id":session,"provider":provider,"model":model});
    rig.server
        .send(configure(json!("anthropic"), Value::Null))
        .await;
    let configured = rig.server.expect("session.configured").await;
    assert_eq!(
        (
            configured["provider"].as_str(),
            configured["model"].as_str(),
            configured["context_max_tokens"].as_u64()
        ),
        (Some("anthropic"), Some("claude-test"), Some(200_000))
    );
    assert_eq!(configured["request_id"], "cfg");
    assert!(configured["seq"].is_u64());
    rig.mock.push(Reply::anthropic_text(["teapot"]));
    let events = rig.turn(&session, "which word?").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let body = rig.mock.requests_on(Wire::Anthropic)[0].body.to_string();
    assert!(
        body.contains("remember the word teapot"),
        "the history is kept"
    );
    assert!(!body.contains("sig-g"), "another wire's data is never sent");
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );

    // A model alone keeps the provider.
    rig.server
        .send(configure(Value::Null, json!("claude-other")))
        .await;
    let configured = rig.server.expect("session.configured").await;
    assert_eq!(
        (
            configured["provider"].as_str(),
            configured["model"].as_str()
        ),
        (Some("anthropic"), Some("claude-other"))
    );
    // Unknown provider; busy session.
    rig.server.send(configure(json!("nope"), Value::Null)).await;
    let error = rig.server.expect_error("invalid_request", "cfg").await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("known: anthropic"),
        "{error}"
    );
    rig.mock
        .push(Reply::anthropic_text(["slow"]).then(1, Ending::Stall));
    rig.server.start_turn(&session, "busy", "take time").await;
    rig.server.expect("turn.started").await;
    rig.server
        .send(configure(json!("openai"), Value::Null))
        .await;
    rig.server.expect_error("turn_active", "cfg").await;
}

#[tokio::test]
async fn an_unknown_provider_in_config_stops_the_server_naming_file_and_names() {
    let home = TestHome::new("http://127.0.0.1:9/v1", "provider = \"claude\"");
    let out = tokio::process::Command::new(BIN)
        .arg("--stdio")
        .env("SCV_HOME", home.path())
        .env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
        )
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("config.toml: line 3: unknown provider `claude` (known: anthropic, deepseek, gemini, lmstudio, ollama, openai, openai-responses, openrouter)"), "{stderr}");
}

#[tokio::test]
async fn the_provider_caps_hold_on_every_wire() {
    let mut rig = rig("", None).await;
    let marker = rig.home.workspace().join("ran");
    let calls: Vec<(String, Value)> = (0..33)
        .map(|i| {
            (
                format!("c{i}"),
                json!({"command": format!("touch {}", marker.display())}),
            )
        })
        .collect();
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "bash", args.clone()))
        .collect();
    let big = "x".repeat(64 * 1024);
    let texts: Vec<&str> = (0..17).map(|_| big.as_str()).collect();
    for provider in ["anthropic", "openai-responses"] {
        let session = session_on(&mut rig, provider).await;
        let (many, long) = match provider {
            "anthropic" => (
                Reply::anthropic_tool_calls(&calls),
                Reply::anthropic_text(texts.clone()),
            ),
            _ => (
                Reply::responses_tool_calls(&calls),
                Reply::responses_text(texts.clone()),
            ),
        };
        rig.mock.push(many);
        let events = rig.turn(&session, "many").await;
        assert_eq!(events.last().unwrap()["code"], "tool_limit", "{provider}");
        assert!(!kinds(&events).contains(&"tool.proposed"), "{provider}");
        rig.mock.push(long);
        let events = rig.turn(&session, "long").await;
        assert_eq!(
            events.last().unwrap()["code"],
            "response_limit",
            "{provider}"
        );
    }
    assert!(!marker.exists());
}

/// Runs a turn, denying every approval it asks for.
async fn turn_denying(rig: &mut Rig, session: &str, prompt: &str) -> Vec<Value> {
    rig.server.start_turn(session, "t", prompt).await;
    let mut events = Vec::new();
    loop {
        let event = rig.server.next().await;
        let kind = event["type"].as_str().unwrap_or_default().to_string();
        if kind == "approval.requested" {
            rig.server
                .send(
                    json!({"type":"approval.resolve","request_id":"ap","session_id":session,
                    "approval_id":event["approval_id"],"approved":false}),
                )
                .await;
        }
        events.push(event);
        if matches!(
            kind.as_str(),
            "turn.completed" | "turn.cancelled" | "turn.failed"
        ) {
            return events;
        }
    }
}

/// `tool_use_id` → the whole `tool_result` block, over every message.
fn tool_results(body: &Value) -> std::collections::HashMap<String, Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| (b["tool_use_id"].as_str().unwrap().to_string(), b))
        .collect()
}

/// Anthropic's `ToolResultBlockParam.is_error`: "Set to true if the tool
/// execution resulted in an error". Every result whose `tool.completed` said
/// `success: false` (unknown tool, denied, interrupted by a cancel) gets
/// it; a successful one has no `is_error` at all; and the other wires
/// send their tool results exactly as before (no such field).
#[tokio::test]
async fn failed_tool_results_carry_is_error_on_anthropic_only() {
    let mut rig = rig("auto_approve = [\"read\"]\n", None).await;
    let session = session_on(&mut rig, "anthropic").await;
    rig.mock.push(Reply::anthropic_tool_calls(&[
        ("toolu_ok", "list_dir", json!({"path": "."})),
        ("toolu_unknown", "no_such_tool", json!({})),
        ("toolu_denied", "bash", json!({"command": "true"})),
    ]));
    rig.mock.push(Reply::anthropic_text(["Noted."]));
    let events = turn_denying(&mut rig, &session, "try all three").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let outcomes: Vec<(String, bool)> = completed(&events)
        .into_iter()
        .map(|(id, success, _)| (id, success))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("toolu_ok".to_string(), true),
            ("toolu_unknown".to_string(), false),
            ("toolu_denied".to_string(), false)
        ]
    );
    let results = tool_results(&rig.mock.requests_on(Wire::Anthropic)[1].body);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results["toolu_ok"].get("is_error").is_none(), "{results:?}");
    assert_eq!(results["toolu_unknown"]["is_error"], true);
    assert_eq!(results["toolu_denied"]["is_error"], true);

    // A call cancelled while it waits for approval gets an "interrupted"
    // result, sent with the next turn: a failure too.
    rig.mock.push(Reply::anthropic_tool_calls(&[(
        "toolu_cut",
        "bash",
        json!({"command": "true"}),
    )]));
    rig.server.start_turn(&session, "c", "one more").await;
    let started = rig.server.until("approval.requested").await;
    rig.server
        .send(
            json!({"type":"turn.cancel","request_id":"x","session_id":session,
            "turn_id":started[0]["turn_id"]}),
        )
        .await;
    assert_eq!(
        rig.server.until_terminal().await.last().unwrap()["type"],
        "turn.cancelled"
    );
    rig.mock.push(Reply::anthropic_text(["ok"]));
    let events = rig.turn(&session, "and now?").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let results = tool_results(&rig.mock.requests_on(Wire::Anthropic)[3].body);
    assert_eq!(results["toolu_cut"]["is_error"], true, "{results:?}");
    assert!(results["toolu_ok"].get("is_error").is_none(), "{results:?}");
    assert_eq!(results["toolu_denied"]["is_error"], true);
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );

    // Responses and chat: a failed result goes as it always did.
    let session = session_on(&mut rig, "openai-responses").await;
    rig.mock.push(Reply::responses_tool_calls(&[(
        "call_unknown",
        "no_such_tool",
        json!({}),
    )]));
    rig.mock.push(Reply::responses_text(["ok"]));
    rig.turn(&session, "try").await;
    let input = rig.mock.requests_on(Wire::Responses)[1].body["input"].clone();
    let output = input
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call_output")
        .unwrap();
    let mut keys: Vec<&str> = output
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["call_id", "output", "type"]);
    let session = rig.session().await;
    rig.mock
        .push(Reply::tool_calls(&[("call_c", "no_such_tool", json!({}))]));
    rig.mock.push(Reply::text(["ok"]));
    rig.turn(&session, "try").await;
    let body = &rig.mock.requests_on(Wire::Chat)[1].body;
    let tool = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    let mut keys: Vec<&str> = tool
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["content", "role", "tool_call_id"]);
}
/// Anthropic's streaming-refusals doc: `stop_reason: "refusal"` comes
/// with no refusal message of its own ("You must handle the response and
/// provide appropriate user-facing messaging") and the conversation must
/// be reset before continuing. The turn fails with `provider_error`
/// saying the model declined; the partial text was streamed; the refused
/// turn is not sent again.
#[tokio::test]
async fn an_anthropic_refusal_fails_the_turn_and_leaves_the_history() {
    let mut rig = rig("", None).await;
    let session = session_on(&mut rig, "anthropic").await;
    rig.mock.push(Reply::anthropic_text(["Sure."]));
    rig.turn(&session, "the first prompt").await;
    rig.mock.push(Reply::anthropic_refusal(["Hello", ".."]));
    let events = rig.turn(&session, "the refused prompt").await;
    assert_eq!(text_of(&events, "assistant.delta"), "Hello..");
    assert!(
        !kinds(&events).contains(&"assistant.completed"),
        "{events:?}"
    );
    let failed = events.last().unwrap();
    assert_eq!(
        (failed["type"].as_str(), failed["code"].as_str()),
        (Some("turn.failed"), Some("provider_error")),
        "{failed}"
    );
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("declined") && message.contains("safety"),
        "{message}"
    );
    assert_seq_contiguous(&events);

    rig.mock.push(Reply::anthropic_text(["Fine."]));
    let events = rig.turn(&session, "something else").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let body = &rig.mock.requests_on(Wire::Anthropic)[2].body;
    let texts: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["the first prompt", "Sure.", "something else"]);
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );
}

/// Responses: a refusal content part (`response.refusal.delta`, a
/// `refusal` part in the message item) is the model declining. It is
/// shown as it streams and ends the turn as an Anthropic refusal does.
#[tokio::test]
async fn a_responses_refusal_fails_the_turn_like_an_anthropic_one() {
    let mut rig = rig("", None).await;
    let session = session_on(&mut rig, "openai-responses").await;
    rig.mock.push(Reply::responses_refusal([
        "I'm sorry, ",
        "I can't help with that.",
    ]));
    let events = rig.turn(&session, "the refused prompt").await;
    assert_eq!(
        text_of(&events, "assistant.delta"),
        "I'm sorry, I can't help with that."
    );
    assert!(!kinds(&events).contains(&"assistant.completed"));
    let failed = events.last().unwrap();
    assert_eq!(
        (failed["type"].as_str(), failed["code"].as_str()),
        (Some("turn.failed"), Some("provider_error")),
        "{failed}"
    );
    assert!(failed["message"].as_str().unwrap().contains("declined"));

    rig.mock.push(Reply::responses_text(["Fine."]));
    rig.turn(&session, "something else").await;
    let input = rig.mock.requests_on(Wire::Responses)[1].body["input"].clone();
    assert_eq!(input.as_array().unwrap().len(), 1, "{input}");
    assert_eq!(input[0]["content"][0]["text"], "something else");
}
/// Anthropic's stop reasons doc, "pause_turn": send the paused response
/// back as the assistant turn and Claude continues it. The turn goes on
/// with a second request whose last message is that assistant content
/// (no user message in between; its final text without trailing
/// whitespace, which the API rejects there); each request is a step,
/// bounded by `max_steps`.
#[tokio::test]
async fn an_anthropic_pause_turn_continues_the_turn() {
    let mut rig = rig("max_steps = 3\n", None).await;
    let session = session_on(&mut rig, "anthropic").await;
    rig.mock.push(Reply::anthropic_pause_turn(vec![Block::text([
        "Let me look",
        " into it. ",
    ])]));
    rig.mock.push(Reply::anthropic_text(["Found it."]));
    let events = rig.turn(&session, "research this").await;
    assert_eq!(
        text_of(&events, "assistant.delta"),
        "Let me look into it. Found it."
    );
    let completed: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "assistant.completed")
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(completed, ["Let me look into it. ", "Found it."]);
    let done = events.last().unwrap();
    assert_eq!(
        (done["type"].as_str(), done["steps"].as_u64()),
        (Some("turn.completed"), Some(2)),
        "{done}"
    );
    let requests = rig.mock.requests_on(Wire::Anthropic);
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"][0]["text"], "Let me look into it.");

    // The next turn sends the whole continued answer as one assistant
    // message; pauses in a row stop at max_steps.
    for _ in 0..4 {
        rig.mock.push(Reply::anthropic_pause_turn(vec![Block::text([
            "still going",
        ])]));
    }
    let events = rig.turn(&session, "keep going").await;
    let failed = events.last().unwrap();
    assert_eq!(failed["code"], "step_limit", "{failed}");
    let requests = rig.mock.requests_on(Wire::Anthropic);
    assert_eq!(requests.len(), 5, "three steps, then the limit");
    let first = &requests[2].body["messages"];
    let answer: Vec<&str> = first[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap())
        .collect();
    assert_eq!(answer, ["Let me look into it. ", "Found it."]);
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );
}
/// openai-python's `ResponseOutputMessage.phase`: "preserve and resend
/// phase on all assistant messages". Each assistant message goes back
/// with the phase it came with (none when it had none), and never to
/// another wire.
#[tokio::test]
async fn responses_message_phase_goes_back_as_received() {
    let mut rig = rig("auto_approve = [\"read\"]\n", None).await;
    let session = session_on(&mut rig, "openai-responses").await;
    rig.mock.push(Reply::responses(vec![
        Item::phased_message(["Checking the files."], "commentary"),
        Item::function_call("call_1", "list_dir", json!({"path": "."})),
    ]));
    rig.mock.push(Reply::responses(vec![Item::phased_message(
        ["It is empty."],
        "final_answer",
    )]));
    let events = rig.turn(&session, "look").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    rig.mock.push(Reply::responses_text(["No phase here."]));
    rig.turn(&session, "again").await;
    rig.mock.push(Reply::responses_text(["ok"]));
    rig.turn(&session, "once more").await;

    let requests = rig.mock.requests_on(Wire::Responses);
    let assistant = |index: usize| -> Vec<(String, Option<String>)> {
        requests[index].body["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "message" && i["role"] == "assistant")
            .map(|i| {
                (
                    i["content"][0]["text"].as_str().unwrap().to_string(),
                    i.get("phase").map(|p| p.as_str().unwrap().to_string()),
                )
            })
            .collect()
    };
    let phased = |text: &str, phase: Option<&str>| (text.to_string(), phase.map(str::to_string));
    assert_eq!(
        assistant(1),
        [phased("Checking the files.", Some("commentary"))]
    );
    assert_eq!(
        assistant(3),
        [
            phased("Checking the files.", Some("commentary")),
            phased("It is empty.", Some("final_answer")),
            phased("No phase here.", None),
        ]
    );
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );

    // Another wire never sees it.
    rig.server
        .send(json!({"type":"session.configure","request_id":"cfg","session_id":session,"provider":"anthropic"}))
        .await;
    rig.server.expect("session.configured").await;
    rig.mock.push(Reply::anthropic_text(["hi"]));
    rig.turn(&session, "switch").await;
    let body = rig.mock.requests_on(Wire::Anthropic)[0].body.to_string();
    assert!(body.contains("Checking the files."), "the history is kept");
    assert!(!body.contains("commentary") && !body.contains("final_answer"));
}
