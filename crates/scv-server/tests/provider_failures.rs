#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Every way a provider can fail, each ending the turn with exactly one
//! `turn.failed` carrying the code the protocol names, after which the
//! session still takes turns.

mod common;
use common::*;
use std::time::Duration;

/// Runs one turn whose provider reply is `reply`; returns its events.
async fn turn_with(rig: &mut Rig, session: &str, reply: Reply) -> Vec<Value> {
    rig.mock.push(reply);
    rig.turn(session, "go").await
}

fn failed(events: &[Value]) -> (&str, &str) {
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn.failed", "{last}");
    let terminal = events
        .iter()
        .filter(|e| {
            matches!(
                e["type"].as_str(),
                Some("turn.completed" | "turn.cancelled" | "turn.failed")
            )
        })
        .count();
    assert_eq!(terminal, 1, "exactly one terminal event");
    (
        last["code"].as_str().unwrap(),
        last["message"].as_str().unwrap(),
    )
}

async fn still_works(rig: &mut Rig, session: &str) {
    rig.mock.push(Reply::text(["fine"]));
    let events = rig.turn(session, "again").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn http_errors_are_provider_errors_with_status_and_text() {
    let mut rig = Rig::new("provider_max_retries = 0").await;
    let session = rig.session().await;
    let events = turn_with(
        &mut rig,
        &session,
        Reply::error(400, "model `x` does not exist"),
    )
    .await;
    let (code, message) = failed(&events);
    assert_eq!(code, "provider_error");
    assert!(
        message.contains("400") && message.contains("model `x` does not exist"),
        "{message}"
    );
    assert_eq!(types(&events), ["turn.started", "turn.failed"]);

    let events = turn_with(
        &mut rig,
        &session,
        Reply::status(503, "upstream <b>down</b>"),
    )
    .await;
    let (code, message) = failed(&events);
    assert_eq!(code, "provider_error");
    assert!(
        message.contains("503") && message.contains("upstream"),
        "{message}"
    );
    still_works(&mut rig, &session).await;
}

#[tokio::test]
async fn connection_refused_is_a_provider_error() {
    // Bind then drop a listener: nothing listens on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut rig = Rig::new("").await;
    let workspace = rig.home.workspace();
    let session = rig
        .server
        .start_session_with(
            json!({"cwd": workspace, "base_url": format!("http://127.0.0.1:{port}/v1")}),
        )
        .await;
    rig.server.start_turn(&session, "t", "hi").await;
    let events = rig.server.until_terminal().await;
    let (code, message) = failed(&events);
    assert_eq!(code, "provider_error");
    assert!(message.contains("cannot connect"), "{message}");
}

#[tokio::test]
async fn broken_streams_are_provider_errors() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;

    let cut = Reply::text(["a", "b"])
        .then(2, Ending::Cut)
        .drip(Duration::from_millis(50));
    let events = turn_with(&mut rig, &session, cut).await;
    assert_eq!(failed(&events).0, "provider_error");
    assert_eq!(
        types(&events),
        ["turn.started", "assistant.delta", "turn.failed"]
    );

    let events = turn_with(
        &mut rig,
        &session,
        Reply::text(["a", "b"]).then(2, Ending::Eof),
    )
    .await;
    let (code, message) = failed(&events);
    assert_eq!(code, "provider_error");
    assert!(message.contains("ended before"), "{message}");

    let garbage = Reply::raw(
        vec![
            "{\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}".into(),
            "{not json".into(),
        ],
        Ending::Done,
    );
    let events = turn_with(&mut rig, &session, garbage).await;
    let (code, message) = failed(&events);
    assert_eq!(code, "provider_error");
    assert!(message.contains("malformed"), "{message}");

    let mid_error = Reply::raw(
        vec![json!({"error":{"message":"overloaded"}}).to_string()],
        Ending::Done,
    );
    let events = turn_with(&mut rig, &session, mid_error).await;
    let (code, message) = failed(&events);
    assert_eq!(code, "provider_error");
    assert!(message.contains("overloaded"), "{message}");

    still_works(&mut rig, &session).await;
}

#[tokio::test]
async fn a_stream_that_ends_after_a_finish_reason_without_done_completes() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    // role, content, finish chunk — then EOF with no usage and no [DONE].
    let events = turn_with(
        &mut rig,
        &session,
        Reply::text(["hello"]).then(3, Ending::Eof),
    )
    .await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn transient_failures_are_retried_with_retry_after() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.mock
        .push(Reply::error(429, "slow down").header("retry-after", "0"));
    rig.mock
        .push(Reply::error(502, "bad gateway").header("retry-after", "0"));
    let events = turn_with(&mut rig, &session, Reply::text(["made it"])).await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert_eq!(rig.mock.request_count(), 3);
}

#[tokio::test]
async fn retries_are_bounded() {
    let mut rig = Rig::new("provider_max_retries = 2").await;
    let session = rig.session().await;
    for _ in 0..2 {
        rig.mock
            .push(Reply::error(500, "boom").header("retry-after", "0"));
    }
    let events = turn_with(
        &mut rig,
        &session,
        Reply::error(500, "boom").header("retry-after", "0"),
    )
    .await;
    let (code, message) = failed(&events);
    assert_eq!(code, "provider_error");
    assert!(message.contains("500"), "{message}");
    assert_eq!(rig.mock.request_count(), 3, "one try and two retries");
}

#[tokio::test]
async fn a_retry_wait_is_cancellable() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    rig.mock
        .push(Reply::error(429, "later").header("retry-after", "30"));
    rig.server.start_turn(&session, "t", "go").await;
    let started = rig.server.expect("turn.started").await;
    // Wait until the first attempt reached the provider, then cancel.
    while rig.mock.request_count() == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    rig.server
        .send(json!({"type":"turn.cancel","request_id":"c","session_id":session,"turn_id":started["turn_id"]}))
        .await;
    rig.server.expect("turn.cancelled").await;
    assert_eq!(rig.mock.request_count(), 1);
}

#[tokio::test]
async fn a_silent_stream_times_out() {
    let mut rig = Rig::new("stream_idle_timeout_ms = 300").await;
    let session = rig.session().await;
    let events = turn_with(
        &mut rig,
        &session,
        Reply::text(["a", "b"]).then(2, Ending::Stall),
    )
    .await;
    let (code, message) = failed(&events);
    assert_eq!(code, "provider_error");
    assert!(message.contains("silent for 300 ms"), "{message}");
    assert!(rig.mock.wait_dropped(1).await);
    still_works(&mut rig, &session).await;
}

fn content_event(text: &str) -> String {
    json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]}).to_string()
}

#[tokio::test]
async fn reader_caps_fail_the_turn_with_response_limit() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;

    // One SSE event over 1 MiB.
    let big = Reply::raw(
        vec![content_event(&"x".repeat(1024 * 1024 + 10))],
        Ending::Done,
    );
    let events = turn_with(&mut rig, &session, big).await;
    let (code, message) = failed(&events);
    assert_eq!(code, "response_limit");
    assert!(message.contains("SSE event"), "{message}");

    // Assistant text over 1 MiB in events under the cap.
    let many = Reply::raw(
        (0..20)
            .map(|_| content_event(&"y".repeat(60 * 1024)))
            .collect(),
        Ending::Done,
    );
    let events = turn_with(&mut rig, &session, many).await;
    let (code, message) = failed(&events);
    assert_eq!(code, "response_limit");
    assert!(message.contains("assistant text"), "{message}");

    // Whole response over 4 MiB without much text: padding fields.
    let padded: Vec<String> = (0..6)
        .map(|_| json!({"choices":[{"index":0,"delta":{"content":"z"}}],"padding":"p".repeat(900 * 1024)}).to_string())
        .collect();
    let events = turn_with(&mut rig, &session, Reply::raw(padded, Ending::Done)).await;
    let (code, message) = failed(&events);
    assert_eq!(code, "response_limit");
    assert!(message.contains("4194304"), "{message}");

    still_works(&mut rig, &session).await;
}

#[tokio::test]
async fn max_response_bytes_sets_the_whole_response_cap_and_the_failure_says_so() {
    // 3,000 small deltas: ~36 KB of text, several hundred KB on the wire.
    let fragments: Vec<String> = (0..3000).map(|i| format!("w{i:04} ")).collect();
    let text: String = fragments.concat();
    let mut rig = Rig::new("max_response_bytes = 100000").await;
    let session = rig.session().await;
    let events = turn_with(&mut rig, &session, Reply::text(&fragments)).await;
    let (code, message) = failed(&events);
    assert_eq!(code, "response_limit");
    assert!(
        message.contains("max_response_bytes") && message.contains("100000"),
        "names the limit hit: {message}"
    );
    assert!(
        message.contains("config.toml"),
        "says how to raise it: {message}"
    );
    still_works(&mut rig, &session).await;

    // Raised past the document's 4 MiB: a response of 5.3 MiB completes.
    let padded: Vec<String> = (0..6)
        .map(|_| json!({"choices":[{"index":0,"delta":{"content":"z"}}],"padding":"p".repeat(900 * 1024)}).to_string())
        .collect();
    let mut rig = Rig::new("max_response_bytes = 8388608").await;
    let session = rig.session().await;
    let events = turn_with(&mut rig, &session, Reply::raw(padded, Ending::Done)).await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{:?}",
        types(&events)
    );
    // And the long answer, whole.
    let events = turn_with(&mut rig, &session, Reply::text(&fragments)).await;
    let done = events
        .iter()
        .find(|e| e["type"] == "assistant.completed")
        .unwrap();
    assert_eq!(done["content"], text.as_str());
}

#[tokio::test]
async fn tool_caps_fail_the_turn_with_tool_limit_and_run_nothing() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let marker = rig.home.workspace().join("ran");

    // 33 calls in one response.
    let calls: Vec<(String, Value)> = (0..33)
        .map(|i| {
            (
                format!("call_{i}"),
                json!({"command": format!("touch {}", marker.display())}),
            )
        })
        .collect();
    let calls: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "bash", args.clone()))
        .collect();
    let events = turn_with(&mut rig, &session, Reply::tool_calls(&calls)).await;
    let (code, _) = failed(&events);
    assert_eq!(code, "tool_limit");
    assert!(
        !types(&events).contains(&"tool.proposed"),
        "no call of that response starts"
    );

    // One argument object over 256 KiB.
    let huge = json!({"path": "a.txt", "content": "q".repeat(256 * 1024)});
    let events = turn_with(
        &mut rig,
        &session,
        Reply::tool_calls_in(&[("call_big", "write_file", huge)], 64 * 1024),
    )
    .await;
    assert_eq!(failed(&events).0, "tool_limit");
    assert!(!marker.exists());
    assert!(!rig.home.workspace().join("a.txt").exists());
    still_works(&mut rig, &session).await;
}

/// A key shaped like a real one, set in the server's environment.
const KEY: &str = "sk-test-0123456789abcdefghijklmnopqrstuvwxyz0123";

/// True when any 8 consecutive characters of the key appear in `text`.
fn leaks_key(text: &str) -> bool {
    KEY.as_bytes()
        .windows(8)
        .any(|w| text.contains(std::str::from_utf8(w).unwrap()))
}

#[tokio::test]
async fn an_echoed_key_is_redacted_before_anything_is_cut() {
    let mut rig = Rig::with_env("", &[("OPENAI_API_KEY", KEY)]).await;
    let session = rig.session().await;
    // The key straddles the 300-character cut of error messages.
    let message = format!("{} {KEY} is not valid", "x".repeat(290));
    let replies = [
        Reply::error(401, &message),
        Reply::status(400, message.clone()),
        Reply::raw(
            vec![json!({"error": {"message": message, "code": 401}}).to_string()],
            Ending::Done,
        ),
    ];
    for reply in replies {
        let events = turn_with(&mut rig, &session, reply).await;
        let (code, text) = failed(&events);
        assert_eq!(code, "provider_error");
        assert!(text.contains("[redacted"), "{text}");
        assert!(!leaks_key(text), "part of the key leaked: {text}");
    }
    assert_eq!(
        rig.mock.requests()[0].headers["authorization"],
        format!("Bearer {KEY}")
    );
}

#[tokio::test]
async fn keep_alives_and_empty_deltas_do_not_keep_a_turn_alive() {
    let mut rig = Rig::new("stream_idle_timeout_ms = 500").await;
    let session = rig.session().await;
    let frames: [&[u8]; 3] = [
        b": keep-alive\n\n",
        b": OPENROUTER PROCESSING\n\n",
        b"data: {\"choices\":[{\"index\":0,\"delta\":{}}]}\n\n",
    ];
    for (n, frame) in frames.into_iter().enumerate() {
        let reply = Reply::repeat(frame, Duration::from_millis(50));
        let events = turn_with(&mut rig, &session, reply).await;
        let (code, message) = failed(&events);
        assert_eq!(code, "provider_error");
        assert!(message.contains("silent for 500 ms"), "{message}");
        assert!(rig.mock.wait_dropped(n + 1).await, "the stream was dropped");
    }
    still_works(&mut rig, &session).await;
}

#[tokio::test]
async fn parallel_calls_without_index_and_repeated_names_are_assembled_right() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    // Calls with neither `index` nor `type`, the second one's name repeated
    // on its later fragment (as several Chat Completions servers send it).
    rig.mock.push(Reply::raw(
        vec![
            json!({"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"}}]}}]}).to_string(),
            json!({"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"list_dir","arguments":"{\"path\""}}]}}]}).to_string(),
            json!({"choices":[{"delta":{"tool_calls":[{"function":{"name":"list_dir","arguments":":\".\"}"}}]}}]}).to_string(),
            json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}).to_string(),
        ],
        Ending::Done,
    ));
    rig.mock.push(Reply::text(["listed"]));
    let events = rig.turn(&session, "list").await;
    let proposed: Vec<(&str, &str, &Value)> = events
        .iter()
        .filter(|e| e["type"] == "tool.proposed")
        .map(|e| {
            (
                e["call_id"].as_str().unwrap(),
                e["name"].as_str().unwrap(),
                &e["arguments"],
            )
        })
        .collect();
    let dot = json!({"path": "."});
    assert_eq!(proposed, [("a", "list_dir", &dot), ("b", "list_dir", &dot)]);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn sse_lines_ending_in_a_bare_cr_are_read() {
    let mut rig = Rig::new("").await;
    let session = rig.session().await;
    let chunk = |delta: Value, finish: Value| {
        json!({"choices":[{"index":0,"delta":delta,"finish_reason":finish}]}).to_string()
    };
    let body = format!(
        "data: {}\r\rdata: {}\r\r: comment\rdata: {}\r\rdata: [DONE]\r\r",
        chunk(json!({"content": "hello "}), Value::Null),
        chunk(json!({"content": "world"}), Value::Null),
        chunk(json!({}), json!("stop")),
    );
    let events = turn_with(&mut rig, &session, Reply::bytes(body)).await;
    let completed = events
        .iter()
        .find(|e| e["type"] == "assistant.completed")
        .unwrap();
    assert_eq!(completed["content"], "hello world");
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}

/// A provider that refuses a request without a key (401) is told which
/// variable the key would have come from; the session carries on.
#[tokio::test]
async fn a_refusal_without_a_key_names_its_variable() {
    let mut rig = Rig::new("provider_max_retries = 0").await;
    let session = rig.session().await;
    let events = turn_with(&mut rig, &session, Reply::error(401, "missing bearer")).await;
    let (code, message) = failed(&events);
    assert_eq!(code, "provider_error");
    assert!(
        message
            .ends_with("(no key was sent: OPENAI_API_KEY is not set in the server's environment)"),
        "{message}"
    );
    still_works(&mut rig, &session).await;
    assert!(!rig.mock.requests()[0].headers.contains_key("authorization"));
}

/// A key that was sent and refused is named by its variable, never shown.
#[tokio::test]
async fn a_refused_key_is_named_by_its_variable() {
    let mut rig = Rig::with_env("provider_max_retries = 0", &[("OPENAI_API_KEY", KEY)]).await;
    let session = rig.session().await;
    let events = turn_with(&mut rig, &session, Reply::error(401, "invalid api key")).await;
    let (_, message) = failed(&events);
    assert!(
        message.ends_with("(the key from OPENAI_API_KEY was refused)"),
        "{message}"
    );
    assert!(!leaks_key(message));
}

/// A provider that needs a key whose variable is not set: every preset's
/// session says so at `session.start` (naming the variable), its turns fail
/// before anything is sent, and a switch to it is refused while the
/// session keeps the provider that works. Only a preset's public API is
/// known to need one: a local server or any other URL gets the request
/// without a key, as ARCHITECTURE.md's fixed interface says.
#[tokio::test]
async fn a_missing_key_is_named_at_start_and_switch_and_nothing_is_sent() {
    let mut rig = Rig::new(
        "[providers.remote]\nwire = \"chat\"\nbase_url = \"https://api.openai.com/v1\"\nmodel = \"m\"\napi_key_env = \"SCV_TEST_UNSET_KEY\"\n\
         [providers.proxy]\nwire = \"chat\"\nbase_url = \"https://llm.example.invalid/v1\"\nmodel = \"m\"\napi_key_env = \"SCV_TEST_UNSET_KEY\"\n",
    )
    .await;
    for (preset, var) in [
        ("openai", "OPENAI_API_KEY"),
        ("openai-responses", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
        ("deepseek", "DEEPSEEK_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
        ("remote", "SCV_TEST_UNSET_KEY"),
        ("proxy", "SCV_TEST_UNSET_KEY"),
    ] {
        // `openai` is configured at the mock (a local server): no warning.
        let (started, _) = rig.start(json!({"provider": preset})).await;
        let warnings = started["config_warnings"].to_string();
        if preset == "openai" || preset == "proxy" {
            assert!(started.get("config_warnings").is_none(), "{warnings}");
            continue;
        }
        assert!(
            warnings.contains(&format!(
                "provider `{preset}` needs a key: {var} is not set in the server's environment"
            )),
            "{preset}: {warnings}"
        );
        assert!(
            warnings.contains("turns fail until it is set"),
            "{warnings}"
        );
    }
    let (_, remote) = rig.start(json!({"provider": "remote"})).await;
    let events = rig.turn(&remote, "hi").await;
    let (code, message) = failed(&events);
    assert_eq!(code, "provider_error");
    assert!(message.contains("SCV_TEST_UNSET_KEY"), "{message}");
    assert!(message.ends_with("nothing was sent"), "{message}");

    let session = rig.session().await;
    rig.server
        .send(json!({"type":"session.configure","request_id":"c","session_id":session,"provider":"remote"}))
        .await;
    let error = rig.server.expect_error("invalid_request", "c").await;
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("SCV_TEST_UNSET_KEY is not set"),
        "{message}"
    );
    assert!(
        message.contains("the session keeps its provider"),
        "{message}"
    );
    still_works(&mut rig, &session).await;
    assert_eq!(
        rig.mock.request_count(),
        1,
        "only the working session's turn"
    );
}

/// With capability `retries`, each wait is told before it starts: which
/// retry, of how many, how long, and why; a client without it sees
/// nothing new.
#[tokio::test]
async fn retries_are_told_to_a_client_that_asked() {
    let mut rig =
        Rig::with_capabilities("provider_max_retries = 3", json!({"retries": true})).await;
    let session = rig.session().await;
    rig.mock
        .push(Reply::error(429, "slow down").header("retry-after", "0"));
    rig.mock
        .push(Reply::error(503, "busy").header("retry-after", "0"));
    let events = turn_with(&mut rig, &session, Reply::text(["made it"])).await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    common::assert_seq_contiguous(&events);
    let retrying: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "provider.retrying")
        .collect();
    assert_eq!(retrying.len(), 2, "{events:?}");
    assert_eq!(
        (
            &retrying[0]["attempt"],
            &retrying[0]["max_retries"],
            &retrying[0]["wait_ms"],
            &retrying[0]["status"],
            &retrying[0]["reason"]
        ),
        (
            &json!(1),
            &json!(3),
            &json!(0),
            &json!(429),
            &json!("rate limited")
        )
    );
    assert_eq!(retrying[1]["attempt"], 2);
    assert_eq!(retrying[1]["reason"], "overloaded");
    assert_eq!(retrying[0]["turn_id"], events[0]["turn_id"]);

    let mut old = Rig::new("").await;
    let session = old.session().await;
    old.mock
        .push(Reply::error(429, "slow down").header("retry-after", "0"));
    let events = turn_with(&mut old, &session, Reply::text(["made it"])).await;
    assert!(events.iter().all(|e| e["type"] != "provider.retrying"));
    common::assert_seq_contiguous(&events);
}

/// The same turn (a retry, a tool call, two steps' usage) on a connection
/// that asked for every capability and on one that asked for none: the
/// second hears exactly the first's events less the extension events and
/// fields, and its `seq`s have no gap where they were left out (the
/// capabilities are consulted where events leave the server).
#[tokio::test]
async fn a_connection_without_capabilities_hears_the_turn_less_the_extensions() {
    let every = json!({"reasoning": true, "sessions": true, "checkpoints": true,
        "usage": true, "commands": true, "hooks": true, "subagents": true,
        "retries": true, "step_usage": true, "trust": true, "budgets": true,
        "daemon_status": true, "elicitation": true, "permissions": true,
        "processes": true});
    let config = "provider_max_retries = 3";
    let mut heard = Vec::new();
    for asked in [Some(every), None] {
        let mut rig = match asked {
            Some(caps) => Rig::with_capabilities(config, caps).await,
            None => Rig::new(config).await,
        };
        let session = rig.session().await;
        rig.mock
            .push(Reply::error(429, "slow down").header("retry-after", "0"));
        rig.mock.push(Reply::tool_calls(&[(
            "call_1",
            "list_dir",
            json!({"path": "."}),
        )]));
        rig.mock.push(Reply::text(["done"]));
        let events = rig.turn(&session, "look").await;
        assert_eq!(
            events.last().unwrap()["type"],
            "turn.completed",
            "{events:?}"
        );
        assert_seq_contiguous(&events);
        heard.push(events);
    }
    let extensions = ["provider.retrying", "usage.updated"];
    let cost_fields = [
        "usage_detail",
        "session_usage_detail",
        "cost_usd",
        "session_cost_usd",
    ];
    for kind in extensions {
        assert!(
            heard[0].iter().any(|e| e["type"] == kind),
            "no {kind}: {:?}",
            heard[0]
        );
    }
    assert!(heard[0].last().unwrap().get("usage_detail").is_some());
    // What each event says, ids and numbering aside.
    let said = |events: &[Value], strip: bool| -> Vec<Value> {
        events
            .iter()
            .filter(|e| !strip || !extensions.contains(&e["type"].as_str().unwrap_or("")))
            .map(|e| {
                let mut e = e.clone();
                let object = e.as_object_mut().unwrap();
                for key in ["seq", "session_id", "turn_id"] {
                    object.remove(key);
                }
                if strip {
                    for key in cost_fields {
                        object.remove(key);
                    }
                }
                e
            })
            .collect()
    };
    assert_eq!(said(&heard[1], false), said(&heard[0], true));
}

/// `models.list` asks the session's provider what it offers, with the
/// key the session's requests carry; an unknown session is
/// `session_not_found`, a provider that cannot answer an
/// `invalid_request` saying why, and the session goes on.
#[tokio::test]
async fn models_are_listed_from_the_sessions_provider() {
    let mut rig = Rig::with_env("", &[("OPENAI_API_KEY", KEY)]).await;
    rig.mock.set_models(&["gpt-b", "gpt-a"]);
    let session = rig.session().await;
    rig.server
        .send(json!({"type":"models.list","request_id":"m","session_id":session}))
        .await;
    let listed = rig.server.expect("models.listed").await;
    assert_eq!(listed["request_id"], "m");
    assert_eq!(listed["session_id"], session.as_str());
    assert_eq!(listed["provider"], "openai");
    assert_eq!(listed["models"], json!(["gpt-a", "gpt-b"]));
    let asked = rig.mock.model_requests();
    assert_eq!(asked[0]["authorization"], format!("Bearer {KEY}"));

    rig.server
        .send(json!({"type":"models.list","request_id":"u","session_id":"nope"}))
        .await;
    rig.server.expect_error("session_not_found", "u").await;
    still_works(&mut rig, &session).await;

    let mut dead = Rig::new(
        "[providers.dead]\nwire = \"chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n",
    )
    .await;
    let (_, session) = dead.start(json!({"provider": "dead"})).await;
    dead.server
        .send(json!({"type":"models.list","request_id":"d","session_id":session}))
        .await;
    let error = dead.server.expect_error("invalid_request", "d").await;
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("cannot list the models: cannot reach http://127.0.0.1:9/v1/models"),
        "{message}"
    );
}
