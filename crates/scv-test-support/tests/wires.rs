#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The mock provider over real HTTP: framing per wire, endings, wire
//! routing, recording and request checks.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use scv_test_support::wires::{anthropic, responses};
use scv_test_support::{Ending, MockProvider, Reply, SseEvent, Wire};
use serde_json::{json, Value};
use std::time::Duration;

struct Answer {
    status: u16,
    content_type: String,
    /// The body, or the error that ended it (with the bytes read so far).
    body: Result<Vec<u8>, (String, Vec<u8>)>,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8(self.body.clone().expect("body ended cleanly")).unwrap()
    }
}

async fn post(mock: &MockProvider, path: &str, headers: &[(&str, &str)], body: &Value) -> Answer {
    let addr = mock
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut request = hyper::Request::post(path).header("host", "mock");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = send.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let mut body = response.into_body();
    let mut read = Vec::new();
    let body = loop {
        match body.frame().await {
            None => break Ok(read),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    read.extend_from_slice(&data);
                }
            }
            Some(Err(e)) => break Err((e.to_string(), read)),
        }
    };
    Answer {
        status,
        content_type,
        body,
    }
}

fn encoded(events: &[SseEvent]) -> String {
    String::from_utf8(events.iter().flat_map(SseEvent::encode).collect()).unwrap()
}

#[tokio::test]
async fn chat_output_is_unchanged() {
    let mock = MockProvider::start().await;
    let replies = vec![
        Reply::text(["Hel", "lo"]),
        Reply::tool_calls(&[
            ("call_1", "read", json!({"path": "/src/lib.rs"})),
            ("call_2", "bash", json!({"command": "ls -la /tmp"})),
        ]),
        Reply::response(["a"], &[("c", "n", json!({}))], 3).batched(2),
        Reply::text(["x", "y"]).then(2, Ending::Eof),
        Reply::text(["x"]).without_usage(),
        Reply::raw(vec!["{\"a\":1}".into()], Ending::Done),
        Reply::error(400, "bad"),
    ];
    let mut out = String::new();
    for reply in replies {
        mock.push(reply);
        out.push_str(
            &post(&mock, "/v1/chat/completions", &[], &json!({}))
                .await
                .text(),
        );
        out.push_str("\n=====\n");
    }
    // Captured from the mock before the Anthropic and Responses wires.
    // Key order is compared sorted: `agent-client-protocol` turns on
    // serde_json's `preserve_order` in workspace builds only.
    assert_eq!(
        sorted_keys(&out),
        sorted_keys(include_str!("fixtures/chat_golden.txt"))
    );
}

/// `text` with each JSON line (`data: {…}` or a bare body) re-written
/// with sorted keys.
fn sorted_keys(text: &str) -> String {
    fn sort(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.sort_keys();
                map.values_mut().for_each(sort);
            }
            Value::Array(items) => items.iter_mut().for_each(sort),
            _ => {}
        }
    }
    text.split('\n')
        .map(|line| {
            let (prefix, body) = match line.strip_prefix("data: ") {
                Some(body) => ("data: ", body),
                None => ("", line),
            };
            match serde_json::from_str::<Value>(body) {
                Ok(mut value) if value.is_object() => {
                    sort(&mut value);
                    format!("{prefix}{value}")
                }
                _ => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn anthropic_stream_has_event_lines_and_ends_at_message_stop() {
    let mock = MockProvider::start().await;
    let reply = Reply::anthropic_thinking(
        ["Let me think"],
        "EqQBsig",
        Block::tool_uses(&[("toolu_1", "get_weather", json!({"location": "SF"}))]),
    );
    let events = reply.events();
    mock.push(reply);
    let answer = post(
        &mock,
        "/v1/messages",
        &[
            ("x-api-key", "sk-ant-test"),
            ("anthropic-version", "2023-06-01"),
        ],
        &json!({"max_tokens": 2048, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.content_type, "text/event-stream");
    let text = answer.text();
    assert_eq!(text, encoded(&events));
    assert!(text.starts_with("event: message_start\ndata: {\"type\":\"message_start\""));
    assert!(text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    assert!(!text.contains("[DONE]"));
    for frame in text.trim_end().split("\n\n") {
        let lines: Vec<&str> = frame.lines().collect();
        assert_eq!(lines.len(), 2, "{frame}");
        let name = lines[0].strip_prefix("event: ").unwrap();
        let data: Value = serde_json::from_str(lines[1].strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(data["type"], name);
    }

    let recorded = &mock.requests()[0];
    assert_eq!(recorded.path, "/v1/messages");
    assert_eq!(recorded.wire(), Some(Wire::Anthropic));
    assert_eq!(recorded.header("X-Api-Key"), Some("sk-ant-test"));
    assert_eq!(recorded.headers["anthropic-version"], "2023-06-01");
    assert_eq!(mock.violations(), Vec::<String>::new());
}

use anthropic::Block;

#[tokio::test]
async fn responses_stream_ends_at_its_terminal_event() {
    let mock = MockProvider::start().await;
    for reply in [
        Reply::responses_reasoning(
            ["**Plan**"],
            "gAAAA",
            vec![responses::Item::message(["hi"])],
        ),
        Reply::responses_incomplete(["cut"]),
        Reply::responses_failed("server_error", "boom"),
    ] {
        let events = reply.events();
        let terminal = events.last().unwrap().event.clone().unwrap();
        mock.push(reply);
        let answer = post(&mock, "/v1/responses", &[], &json!({})).await;
        assert_eq!(answer.status, 200);
        let text = answer.text();
        assert_eq!(text, encoded(&events));
        assert!(text.starts_with("event: response.created\ndata: "));
        let last = text.trim_end().rsplit("\n\n").next().unwrap();
        assert!(last.starts_with(&format!("event: {terminal}\n")), "{last}");
        assert!(!text.contains("[DONE]"));
    }
}

#[tokio::test]
async fn endings_apply_to_every_wire() {
    let mock = MockProvider::start().await;
    let wires: [(Reply, &str, &str); 2] = [
        (
            Reply::anthropic_text(["a", "b"]),
            "/v1/messages",
            "message_stop",
        ),
        (
            Reply::responses_text(["a", "b"]),
            "/v1/responses",
            "response.completed",
        ),
    ];
    for (reply, path, terminal) in wires {
        let all = reply.events();
        // Eof: everything but the terminal event.
        mock.push(reply.clone().then(usize::MAX, Ending::Eof));
        let text = post(&mock, path, &[], &json!({})).await.text();
        assert_eq!(text, encoded(&all[..all.len() - 1]));
        assert!(!text.contains(terminal));
        // then(n, Done): the first n events and the terminal one.
        mock.push(reply.clone().then(3, Ending::Done));
        let text = post(&mock, path, &[], &json!({})).await.text();
        assert!(text.starts_with(&encoded(&all[..3])));
        assert_eq!(text.matches("\n\n").count(), 4);
        assert!(text.contains(&format!("event: {terminal}\n")));
        // Cut: a body error after the kept events (dripped, so they are
        // flushed before the connection goes).
        mock.push(
            reply
                .clone()
                .drip(Duration::from_millis(20))
                .then(2, Ending::Cut),
        );
        let answer = post(&mock, path, &[], &json!({})).await;
        let (_, read) = answer.body.expect_err("cut");
        assert_eq!(String::from_utf8(read).unwrap(), encoded(&all[..2]));
        // Stall: the body never ends; dropping it is counted.
        let dropped = mock.dropped_streams();
        mock.push(reply.clone().then(1, Ending::Stall));
        let stalled = tokio::time::timeout(
            Duration::from_millis(300),
            post(&mock, path, &[], &json!({})),
        )
        .await;
        assert!(stalled.is_err());
        assert!(mock.wait_dropped(dropped + 1).await);
    }
}

#[tokio::test]
async fn mid_stream_error_event_ends_the_body() {
    let mock = MockProvider::start().await;
    mock.push(
        Reply::anthropic_text(["a", "b"])
            .then_event(4, anthropic::error_event("overloaded_error", "Overloaded")),
    );
    let text = post(&mock, "/v1/messages", &[], &json!({})).await.text();
    assert!(text.ends_with(
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
    ));
    assert!(!text.contains("message_stop"));
}

#[tokio::test]
async fn a_reply_for_another_wire_is_refused_and_kept() {
    let mock = MockProvider::start().await;
    mock.push(Reply::anthropic_text(["for anthropic"]));
    let answer = post(&mock, "/v1/responses", &[], &json!({})).await;
    assert_eq!(answer.status, 500);
    let body: Value = serde_json::from_str(&answer.text()).unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "mock provider: expected a request on the Anthropic Messages wire (POST /v1/messages)"
        ),
        "{message}"
    );
    assert!(message.contains("got POST /v1/responses"));
    let answer = post(&mock, "/v1/chat/completions", &[], &json!({})).await;
    assert_eq!(answer.status, 500);
    // The reply is still there for the right path.
    let answer = post(&mock, "/v1/messages", &[], &json!({})).await;
    assert!(answer.text().contains("for anthropic"));
    assert_eq!(mock.request_count(), 3);
    assert_eq!(mock.requests_on(Wire::Responses).len(), 1);

    // Chat builders are chat-only too, and routed replies are checked.
    mock.push(Reply::text(["chat"]));
    let answer = post(&mock, "/v1/messages", &[], &json!({})).await;
    assert_eq!(answer.status, 500);
    assert!(answer
        .text()
        .contains("expected a request on the Chat Completions wire"));
    assert!(post(&mock, "/v1/chat/completions", &[], &json!({}))
        .await
        .text()
        .contains("chat"));
    mock.push_matching("needle", Reply::responses_text(["routed"]));
    let answer = post(&mock, "/v1/messages", &[], &json!({"x": "needle"})).await;
    assert!(answer
        .text()
        .contains("expected a request on the OpenAI Responses wire"));
    let answer = post(&mock, "/v1/responses", &[], &json!({"x": "needle"})).await;
    assert!(answer.text().contains("routed"));

    // Wire-specific errors are wire-specific.
    mock.push(Reply::anthropic_error(429, "rate_limit_error", "slow").header("retry-after", "1"));
    assert_eq!(
        post(&mock, "/v1/responses", &[], &json!({})).await.status,
        500
    );
    assert_eq!(
        post(&mock, "/v1/messages", &[], &json!({})).await.status,
        429
    );
}

#[tokio::test]
async fn wire_agnostic_replies_go_anywhere() {
    let mock = MockProvider::start().await;
    mock.push(Reply::status(503, "{}"));
    assert_eq!(
        post(&mock, "/v1/messages", &[], &json!({})).await.status,
        503
    );
    mock.push(Reply::error(400, "bad"));
    assert_eq!(
        post(&mock, "/v1/responses", &[], &json!({})).await.status,
        400
    );
    mock.push(Reply::bytes("event: ping\ndata: {\"type\":\"ping\"}\n\n"));
    assert_eq!(
        post(&mock, "/v1/messages", &[], &json!({})).await.text(),
        "event: ping\ndata: {\"type\":\"ping\"}\n\n"
    );
    mock.push(Reply::raw(vec!["{}".into()], Ending::Done));
    assert_eq!(
        post(&mock, "/v1/responses", &[], &json!({})).await.text(),
        "data: {}\n\ndata: [DONE]\n\n"
    );
    // A proxy-style Anthropic stream: data lines only.
    let reply = Reply::anthropic_text(["a"]).without_event_lines();
    assert_eq!(reply.wire(), Some(Wire::Anthropic));
    mock.push(reply);
    let text = post(&mock, "/v1/messages", &[], &json!({})).await.text();
    assert!(!text.contains("event:"));
    assert!(text.ends_with("data: {\"type\":\"message_stop\"}\n\n"));
    mock.push(Reply::sse(
        vec![SseEvent::named("x", "{}"), SseEvent::data("{}")],
        Ending::Done,
    ));
    assert_eq!(
        post(&mock, "/v1/messages", &[], &json!({})).await.text(),
        "event: x\ndata: {}\n\ndata: {}\n\n"
    );
    mock.push(Reply::repeat(": keep-alive\n\n", Duration::from_millis(10)));
    assert!(tokio::time::timeout(
        Duration::from_millis(100),
        post(&mock, "/v1/responses", &[], &json!({}))
    )
    .await
    .is_err());
    assert!(mock.wait_dropped(1).await);
    // Unknown paths are still 404 and not recorded.
    let count = mock.request_count();
    assert_eq!(post(&mock, "/v1/models", &[], &json!({})).await.status, 404);
    assert_eq!(mock.request_count(), count);
}

#[tokio::test]
async fn violations_name_the_request_and_rule() {
    let mock = MockProvider::start().await;
    mock.push(Reply::text(["a"]));
    mock.push(Reply::responses_text(["a"]));
    mock.push(Reply::anthropic_text(["a"]));
    let chat = json!({"messages": [{"role": "user", "content": "hi"}]});
    post(&mock, "/v1/chat/completions", &[], &chat).await;
    let stateful = json!({"instructions": "x", "store": true, "stream": true,
        "include": ["reasoning.encrypted_content"], "input": []});
    post(&mock, "/v1/responses", &[], &stateful).await;
    let no_max = json!({"messages": [{"role": "user", "content": "hi"}]});
    post(&mock, "/v1/messages", &[], &no_max).await;
    assert_eq!(
        mock.violations(),
        [
            "request 1 (POST /v1/responses): `store` must be false (got a boolean)",
            "request 2 (POST /v1/messages): `max_tokens` must be a positive integer (got null)",
        ]
    );
    assert!(mock.requests()[0].violations().is_empty());
}
