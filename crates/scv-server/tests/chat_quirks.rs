#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Chat Completions as real servers send it, through the real binary. Each
//! stream is written the way the named server writes it; the sources are
//! the servers' own code, fixtures or bug reports (see docs/DESIGN.md,
//! "Provider", for the list).

mod common;
use common::*;

/// A rig whose client opted into `reasoning.delta`.
async fn rig(extra: &str) -> Rig {
    let mock = MockProvider::start().await;
    let home = TestHome::new(&mock.base_url(), extra);
    let mut server = TestServer::spawn(BIN, home.path());
    server
        .send(json!({"type":"initialize","request_id":"i","protocol_version":2,"capabilities":{"reasoning":true}}))
        .await;
    server.expect("initialized").await;
    Rig { mock, home, server }
}

fn chunk(delta: Value, finish: Value) -> String {
    json!({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":delta,"finish_reason":finish}]}).to_string()
}

fn text(delta: &str) -> String {
    chunk(json!({"content": delta}), Value::Null)
}

fn stop() -> String {
    chunk(json!({}), json!("stop"))
}

fn joined(events: &[Value], kind: &str) -> String {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| e["content"].as_str().unwrap())
        .collect()
}

async fn turn_with(rig: &mut Rig, session: &str, events: Vec<String>) -> Vec<Value> {
    rig.mock.push(Reply::raw(events, Ending::Done));
    rig.turn(session, "go").await
}

#[tokio::test]
async fn mistral_content_parts_split_thinking_from_text() {
    // Mistral's magistral models: `delta.content` as typed parts
    // (mistralai SDK `DeltaMessage`, `ThinkChunk`; prism-php PR #862).
    let mut rig = rig("").await;
    let session = rig.session().await;
    let events = turn_with(
        &mut rig,
        &session,
        vec![
            chunk(json!({"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Okay, the user"}]}]}), Value::Null),
            chunk(json!({"content":[{"type":"thinking","thinking":[{"type":"text","text":" wants 4."}]}]}), Value::Null),
            chunk(json!({"content":[{"type":"text","text":"The answer"}]}), Value::Null),
            text(" is 4."),
            stop(),
        ],
    )
    .await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert_eq!(
        joined(&events, "reasoning.delta"),
        "Okay, the user wants 4."
    );
    assert_eq!(joined(&events, "assistant.delta"), "The answer is 4.");
    let completed = events
        .iter()
        .find(|e| e["type"] == "assistant.completed")
        .unwrap();
    assert_eq!(completed["content"], "The answer is 4.");
}

#[tokio::test]
async fn reasoning_content_and_reasoning_fields_are_reasoning() {
    // DeepSeek's `reasoning_content` (its thinking-mode guide), vLLM ≥0.11,
    // Ollama and OpenRouter's `reasoning` (vLLM reasoning_outputs docs).
    let mut rig = rig("").await;
    let session = rig.session().await;
    for field in ["reasoning_content", "reasoning"] {
        let events = turn_with(
            &mut rig,
            &session,
            vec![
                chunk(
                    json!({"role":"assistant","content":null,field:"Think"}),
                    Value::Null,
                ),
                chunk(json!({field:"ing."}), Value::Null),
                text("Done."),
                stop(),
            ],
        )
        .await;
        assert_eq!(joined(&events, "reasoning.delta"), "Thinking.", "{field}");
        assert_eq!(joined(&events, "assistant.delta"), "Done.", "{field}");
    }
}

#[tokio::test]
async fn think_tags_in_content_are_reasoning_even_split_across_chunks() {
    // Qwen3 and DeepSeek-R1 distills through Ollama / LM Studio / llama.cpp
    // without a reasoning parser (vLLM docs: the deepseek_r1 parser "looks
    // for <think> ... </think>").
    let mut rig = rig("").await;
    let session = rig.session().await;
    let events = turn_with(
        &mut rig,
        &session,
        vec![
            text("<th"),
            text("ink>Let me think"),
            text(" about it.</thi"),
            text("nk>\n\nHere is "),
            text("the answer."),
            stop(),
        ],
    )
    .await;
    assert_eq!(joined(&events, "reasoning.delta"), "Let me think about it.");
    assert_eq!(joined(&events, "assistant.delta"), "Here is the answer.");
    // Content that merely mentions the tag later is answer.
    let events = turn_with(&mut rig, &session, vec![text("Use <think> tags."), stop()]).await;
    assert_eq!(joined(&events, "assistant.delta"), "Use <think> tags.");
    assert_eq!(joined(&events, "reasoning.delta"), "");
}

#[tokio::test]
async fn mid_stream_error_objects_fail_the_turn_with_the_providers_message() {
    let mut rig = rig("").await;
    let session = rig.session().await;
    // OpenRouter, "Errors After Tokens Have Been Sent (Mid-Stream)".
    let openrouter = json!({"id":"cmpl-abc123","object":"chat.completion.chunk","created":1234567890,"model":"gpt-3.5-turbo","provider":"openai","error":{"code":"server_error","message":"Provider disconnected unexpectedly"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}).to_string();
    // vLLM's streaming error (create_streaming_error_response) and its
    // older ErrorResponse; LM Studio's error as a plain string.
    let vllm =
        json!({"error":{"message":"The engine died","type":"InternalServerError","code":500}})
            .to_string();
    let vllm_old = json!({"object":"error","message":"max_tokens must be at least 1, got -186.","type":"BadRequestError","param":null,"code":400}).to_string();
    let lmstudio = json!({"error":"Model unloaded"}).to_string();
    for (event, message) in [
        (openrouter, "Provider disconnected unexpectedly"),
        (vllm, "The engine died"),
        (vllm_old, "max_tokens must be at least 1"),
        (lmstudio, "Model unloaded"),
    ] {
        let events = turn_with(&mut rig, &session, vec![text("par"), event]).await;
        let last = events.last().unwrap();
        assert_eq!(
            (last["type"].as_str(), last["code"].as_str()),
            (Some("turn.failed"), Some("provider_error"))
        );
        assert!(
            last["message"].as_str().unwrap().contains(message),
            "{last}"
        );
    }
}

#[tokio::test]
async fn azure_filter_chunks_comments_refusals_and_missing_spaces_are_read() {
    let mut rig = rig("").await;
    let session = rig.session().await;
    // Azure OpenAI's first chunk (a captured Azure stream in
    // quarkus-langchain4j's tests), `: keep-alive` comments, `data:` without
    // its space (the SSE spec allows it), `content: null`, and a refusal.
    let azure = json!({"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}).to_string();
    let body = format!(
        "data: {azure}\n\n: keep-alive\n\ndata:{}\n\ndata: {}\n\ndata: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(json!({"content":"","refusal":null,"role":"assistant"}), Value::Null),
        chunk(json!({"content":null}), Value::Null),
        chunk(json!({"refusal":"I can't help with that."}), Value::Null),
        stop(),
    );
    rig.mock.push(Reply::bytes(body));
    let events = rig.turn(&session, "go").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert_eq!(
        joined(&events, "assistant.delta"),
        "I can't help with that."
    );
}

#[tokio::test]
async fn usage_in_every_chunk_takes_the_last_and_none_at_all_is_fine() {
    let mut rig = rig("").await;
    let session = rig.session().await;
    // vLLM `continuous_usage_stats` and several gateways: usage on every
    // chunk, cumulative.
    let with_usage = |delta: Value, finish: Value, prompt: u64, completion: u64| {
        json!({"choices":[{"index":0,"delta":delta,"finish_reason":finish}],"usage":{"prompt_tokens":prompt,"completion_tokens":completion,"total_tokens":prompt+completion}}).to_string()
    };
    let events = turn_with(
        &mut rig,
        &session,
        vec![
            with_usage(json!({"content":"a"}), Value::Null, 10, 1),
            with_usage(json!({"content":"b"}), Value::Null, 10, 2),
            with_usage(json!({}), json!("stop"), 10, 3),
        ],
    )
    .await;
    assert_eq!(
        events.last().unwrap()["usage"],
        json!({"input_tokens": 10, "output_tokens": 3})
    );
    let events = turn_with(&mut rig, &session, vec![text("no usage"), stop()]).await;
    assert!(events.last().unwrap().get("usage").is_none());
}

#[tokio::test]
async fn tool_calls_run_whatever_the_finish_reason_says() {
    // gpt-4o and Gemini's compat layer send "stop" on tool-call turns
    // (ollama PR #7963 discussion, googleapis/python-genai#2868); legacy
    // servers send "function_call"; some send none before [DONE].
    let mut rig = rig("").await;
    let session = rig.session().await;
    for finish in [json!("stop"), json!("function_call"), Value::Null] {
        rig.mock.push(Reply::raw(
            vec![
                chunk(json!({"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"}}]}), Value::Null),
                chunk(json!({}), finish.clone()),
            ],
            Ending::Done,
        ));
        rig.mock.push(Reply::text(["listed"]));
        let events = rig.turn(&session, "list").await;
        assert!(
            events
                .iter()
                .any(|e| e["type"] == "tool.completed" && e["success"] == true),
            "{finish}: {events:?}"
        );
        assert_eq!(events.last().unwrap()["type"], "turn.completed");
    }
}

#[tokio::test]
async fn ollama_whole_calls_at_index_zero_stay_separate() {
    // Ollama's openai.go builds each call whole (arguments marshalled
    // complete), and for several models every call has `index: 0`
    // (ollama/ollama#15457); each chunk repeats role and empty content.
    let mut rig = rig("").await;
    let session = rig.session().await;
    let call = |id: &str, path: &str| {
        json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"qwen3","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":id,"index":0,"type":"function","function":{"name":"read_file","arguments":format!("{{\"path\":\"{path}\"}}")}}]},"finish_reason":null}]}).to_string()
    };
    std::fs::write(rig.home.workspace().join("a.txt"), "A").unwrap();
    std::fs::write(rig.home.workspace().join("b.txt"), "B").unwrap();
    rig.mock.push(Reply::raw(
        vec![
            call("call_a", "a.txt"),
            call("call_b", "b.txt"),
            chunk(json!({}), json!("tool_calls")),
        ],
        Ending::Done,
    ));
    rig.mock.push(Reply::text(["read both"]));
    let events = rig.turn(&session, "read").await;
    let outputs: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool.completed")
        .map(|e| e["output"].as_str().unwrap())
        .collect();
    assert_eq!(outputs.len(), 2);
    assert!(
        outputs[0].contains("A") && outputs[1].contains("B"),
        "{outputs:?}"
    );
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );
}

#[tokio::test]
async fn geminis_thought_signatures_go_back_with_their_calls() {
    // Gemini's OpenAI-compatible layer: `extra_content.google.
    // thought_signature` on a tool call, here in a later chunk carrying
    // only the index (a bridge's fixture `test_captures_streamed_signature_
    // by_tool_index`); omitting it gets HTTP 400 "missing a
    // thought_signature".
    let mut rig = rig("").await;
    let session = rig.session().await;
    rig.mock.push(Reply::raw(
        vec![
            chunk(json!({"tool_calls":[{"index":0,"id":"call_456","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"}}]}), Value::Null),
            chunk(json!({"tool_calls":[{"index":0,"extra_content":{"google":{"thought_signature":"opaque-stream"}}}]}), Value::Null),
            chunk(json!({}), json!("tool_calls")),
        ],
        Ending::Done,
    ));
    rig.mock.push(Reply::text(["ok"]));
    rig.turn(&session, "list").await;
    let second = &rig.mock.requests()[1].body;
    let assistant = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(
        assistant["tool_calls"][0]["extra_content"],
        json!({"google": {"thought_signature": "opaque-stream"}})
    );
    // A call without one sends none (an invented field can itself be
    // refused).
    let first_turn_request = &rig.mock.requests()[0].body;
    assert!(!first_turn_request.to_string().contains("extra_content"));
}

#[tokio::test]
async fn deepseek_gets_reasoning_content_back_on_tool_calling_turns() {
    // DeepSeek's thinking-mode guide: "For turns that do perform tool
    // calls, the reasoning_content must be fully passed back to the API in
    // all subsequent requests."
    let mock = MockProvider::start().await;
    let home = TestHome::new(
        &mock.base_url(),
        &format!(
            "provider = \"deepseek\"\n[providers.deepseek]\nbase_url = \"{}\"\n",
            mock.base_url()
        ),
    );
    let mut server = TestServer::spawn(BIN, home.path());
    server.initialize().await;
    let mut rig = Rig { mock, home, server };
    let session = rig.session().await;
    rig.mock.push(Reply::raw(
        vec![
            chunk(json!({"role":"assistant","reasoning_content":"Need the listing."}), Value::Null),
            chunk(json!({"tool_calls":[{"index":0,"id":"call_d","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"}}]}), Value::Null),
            chunk(json!({}), json!("tool_calls")),
        ],
        Ending::Done,
    ));
    rig.mock.push(Reply::text(["Nothing here."]));
    let events = rig.turn(&session, "look").await;
    assert!(
        !events.iter().any(|e| e["type"] == "reasoning.delta"),
        "not asked for"
    );
    let second = &rig.mock.requests()[1].body;
    assert_eq!(second["model"], "mock-model");
    let assistant = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["reasoning_content"], "Need the listing.");
    // The openai preset never sends it.
    let mut plain = rig_plain().await;
    let session = plain.session().await;
    plain.mock.push(Reply::raw(
        vec![
            chunk(json!({"role":"assistant","reasoning_content":"hmm"}), Value::Null),
            chunk(json!({"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"list_dir","arguments":"{}"}}]}), Value::Null),
            chunk(json!({}), json!("tool_calls")),
        ],
        Ending::Done,
    ));
    plain.mock.push(Reply::text(["ok"]));
    plain.turn(&session, "look").await;
    assert!(!plain.mock.requests()[1]
        .body
        .to_string()
        .contains("reasoning_content"));
}

async fn rig_plain() -> Rig {
    Rig::new("").await
}
