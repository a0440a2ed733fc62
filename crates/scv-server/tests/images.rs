#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Images with prompts (capability `images`) through the real binary: the
//! bytes a client sent reach the mock provider as each wire's image
//! content — Chat Completions `image_url` parts with a `data:` URL
//! (OpenAI API reference, "Create chat completion"), Responses
//! `input_image` parts (OpenAI API reference, "Create a model response",
//! `ResponseInputImage`), Anthropic `image` blocks with a base64 source
//! (Anthropic Messages API reference, `ImageBlockParam`) — decoded back
//! by scv-test-support's `wires::images` and compared byte for byte;
//! refusals come in words with their codes and the connection carries
//! on; a resumed session still sends its images.

mod common;
use base64::Engine as _;
use common::*;
use scv_test_support::wires::images::SentImage;
use scv_test_support::Wire;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An image-like payload: `signature`, then `len` bytes of a pattern
/// seeded by `seed` (the server reads only the signature).
fn payload(signature: &[u8], seed: u8, len: usize) -> Vec<u8> {
    let mut bytes = signature.to_vec();
    bytes.extend((0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)));
    bytes
}

fn png(seed: u8) -> Vec<u8> {
    payload(b"\x89PNG\r\n\x1a\n", seed, 3000)
}

fn jpeg(seed: u8) -> Vec<u8> {
    payload(&[0xFF, 0xD8, 0xFF, 0xE0], seed, 5000)
}

fn image(mime: &str, bytes: &[u8]) -> Value {
    json!({"mime_type": mime, "data": b64(bytes)})
}

async fn rig(extra: &str, capabilities: Value) -> Rig {
    let mock = MockProvider::start().await;
    let base = mock.base_url();
    let config = format!(
        "{extra}\n[providers.anthropic]\nbase_url = \"{base}\"\nmodel = \"claude-test\"\n\
         [providers.openai-responses]\nbase_url = \"{base}\"\nmodel = \"gpt-test\"\n"
    );
    let home = TestHome::new(&base, &config);
    let mut server = TestServer::spawn_with(BIN, home.path(), &[("ANTHROPIC_API_KEY", "sk-ant-x")]);
    server
        .send(
            json!({"type": "initialize", "request_id": "init", "protocol_version": 2,
            "capabilities": capabilities}),
        )
        .await;
    server.expect("initialized").await;
    Rig { mock, home, server }
}

async fn send_images(rig: &mut Rig, session: &str, rid: &str, prompt: &str, images: Vec<Value>) {
    rig.server
        .send(
            json!({"type": "turn.start", "request_id": rid, "session_id": session,
            "prompt": prompt, "images": images}),
        )
        .await;
}

fn sent(mime: &str, bytes: Vec<u8>) -> SentImage {
    SentImage {
        mime_type: mime.into(),
        bytes,
    }
}

#[tokio::test]
async fn images_reach_each_wire_as_its_image_content_byte_for_byte() {
    let mut rig = rig("", json!({"images": true})).await;
    let workspace = rig.home.workspace();
    for (n, (provider, wire)) in [
        ("openai", Wire::Chat),
        ("openai-responses", Wire::Responses),
        ("anthropic", Wire::Anthropic),
    ]
    .into_iter()
    .enumerate()
    {
        let mut fields = json!({"cwd": workspace});
        if provider != "openai" {
            fields["provider"] = json!(provider);
        }
        let session = rig.server.start_session_with(fields).await;
        let (first, second) = (png(n as u8), jpeg(n as u8));
        for _ in 0..2 {
            rig.mock.push(match wire {
                Wire::Chat => Reply::text(["I see it."]),
                Wire::Responses => Reply::responses_text(["I see it."]),
                Wire::Anthropic => Reply::anthropic_text(["I see it."]),
            });
        }
        send_images(
            &mut rig,
            &session,
            "t1",
            "what is in these?",
            vec![image("image/png", &first), image("image/jpeg", &second)],
        )
        .await;
        let events = rig.server.until_terminal().await;
        assert_eq!(
            events.last().unwrap()["type"],
            "turn.completed",
            "{events:?}"
        );
        // A later turn sends the history: the images again, unchanged.
        rig.server.start_turn(&session, "t2", "and now?").await;
        let events = rig.server.until_terminal().await;
        assert_eq!(
            events.last().unwrap()["type"],
            "turn.completed",
            "{events:?}"
        );
        let requests = rig.mock.requests_on(wire);
        let recent = &requests[requests.len() - 2..];
        for request in recent {
            assert_eq!(
                request.images().unwrap(),
                [
                    sent("image/png", first.clone()),
                    sent("image/jpeg", second.clone())
                ],
                "{provider}"
            );
            assert!(
                request.violations().is_empty(),
                "{:?}",
                request.violations()
            );
        }
        // The text goes with them, in the wire's own part.
        let body = recent[0].body.to_string();
        assert!(body.contains("what is in these?"), "{provider}");
    }
}

#[tokio::test]
async fn refusals_say_why_with_their_codes_and_the_connection_carries_on() {
    let mut rig = rig("", json!({"images": true})).await;
    let session = rig.session().await;
    let cases: Vec<(&str, Vec<Value>, &str)> = vec![
        (
            "a",
            vec![image("image/png", b"plain text, not an image")],
            "not a PNG, JPEG, GIF or WebP",
        ),
        (
            "b",
            vec![image("image/png", &jpeg(1))],
            "says image/png but its bytes are image/jpeg",
        ),
        (
            "c",
            vec![json!({"mime_type": "image/png", "data": "%%%"})],
            "not standard base64",
        ),
        ("d", vec![image("image/png", &png(1)); 9], "at most 8"),
        (
            "e",
            vec![image(
                "image/png",
                &payload(b"\x89PNG\r\n\x1a\n", 0, 5 * 1024 * 1024),
            )],
            "an image may have at most 5242880",
        ),
    ];
    for (rid, images, words) in cases {
        send_images(&mut rig, &session, rid, "look", images).await;
        let error = rig.server.expect_error("invalid_request", rid).await;
        assert!(
            error["message"].as_str().unwrap().contains(words),
            "{error}"
        );
    }
    assert!(
        rig.mock.requests().is_empty(),
        "nothing refused reached the provider"
    );
    // The session goes on.
    rig.mock.push(Reply::text(["fine"]));
    let events = rig.turn(&session, "hello").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");

    // A model known to take text only.
    let workspace = rig.home.workspace();
    let text_only = rig
        .server
        .start_session_with(json!({"cwd": workspace, "model": "deepseek-chat"}))
        .await;
    send_images(
        &mut rig,
        &text_only,
        "u",
        "look",
        vec![image("image/png", &png(2))],
    )
    .await;
    let error = rig.server.expect_error("unsupported", "u").await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("does not take images"),
        "{error}"
    );
    assert_eq!(rig.mock.requests().len(), 1);
}

#[tokio::test]
async fn without_the_capability_the_field_is_ignored_and_frames_stay_at_one_mib() {
    let mut rig = rig("", json!({})).await;
    let session = rig.session().await;
    rig.mock.push(Reply::text(["text only"]));
    send_images(
        &mut rig,
        &session,
        "t",
        "look",
        vec![image("image/png", &png(3))],
    )
    .await;
    let events = rig.server.until_terminal().await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let request = &rig.mock.requests()[0];
    assert!(request.images().unwrap().is_empty());
    assert_eq!(request.body["messages"][1]["content"], "look", "v2 as ever");
    // A frame past 1 MiB is still refused on this connection.
    let big = vec![image(
        "image/png",
        &payload(b"\x89PNG\r\n\x1a\n", 0, 1024 * 1024),
    )];
    send_images(&mut rig, &session, "big", "look", big).await;
    let error = rig.server.expect("error").await;
    assert_eq!(error["code"], "invalid_request");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("1048576-byte limit"),
        "{error}"
    );
}

#[tokio::test]
async fn a_resumed_session_still_sends_its_images_and_keeps_at_most_sixteen() {
    let (mock, home, workspace) = common::stored::setup("").await;
    let caps = json!({"sessions": true, "images": true});
    let start = |home: &std::path::Path| {
        let mut server = TestServer::spawn(BIN, home);
        let caps = caps.clone();
        async move {
            server
                .send(
                    json!({"type":"initialize","request_id":"init","protocol_version":2,
                    "capabilities": caps}),
                )
                .await;
            server.expect("initialized").await;
            server
        }
    };
    let mut first = start(home.path()).await;
    let id = first.start_session(&workspace).await;
    let kept = png(7);
    mock.push(Reply::text(["seen"]));
    first
        .send(
            json!({"type":"turn.start","request_id":"t","session_id":id,"prompt":"remember this",
            "images":[image("image/png", &kept)]}),
        )
        .await;
    let events = first.until_terminal().await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    first.close_stdin().await;
    first.wait().await;

    let mut second = start(home.path()).await;
    second
        .send(json!({"type":"session.resume","request_id":"r","session_id":id}))
        .await;
    second.expect("session.started").await;
    second.expect("queue.snapshot").await;
    second.expect("session.transcript").await;
    mock.push(Reply::text(["still seen"]));
    second.start_turn(&id, "t2", "what was it?").await;
    let events = second.until_terminal().await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    let request = mock.requests().last().unwrap().clone();
    assert_eq!(request.images().unwrap(), [sent("image/png", kept.clone())]);

    // Past sixteen, the oldest give way to a line of text.
    for round in 0..2u8 {
        let images: Vec<Value> = (0..8)
            .map(|i| image("image/gif", &payload(b"GIF89a", round * 8 + i, 100)))
            .collect();
        mock.push(Reply::text(["ok"]));
        second
            .send(json!({"type":"turn.start","request_id":"m","session_id":id,"prompt":"more","images":images}))
            .await;
        let events = second.until_terminal().await;
        assert_eq!(
            events.last().unwrap()["type"],
            "turn.completed",
            "{events:?}"
        );
    }
    let request = mock.requests().last().unwrap().clone();
    let images = request.images().unwrap();
    assert_eq!(images.len(), 16);
    assert!(
        images.iter().all(|i| i.mime_type == "image/gif"),
        "the first one went"
    );
    let first_prompt = &request.body["messages"][1]["content"];
    assert!(
        first_prompt
            .to_string()
            .contains("an image (image/png, 3 KiB) was here"),
        "{first_prompt}"
    );
}
