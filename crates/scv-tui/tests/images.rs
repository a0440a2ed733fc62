#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Images from the command line: `scv exec --image FILE` (repeatable)
//! through the real daemon to the mock provider, where the Chat
//! Completions request carries each as an `image_url` part with a `data:`
//! URL (OpenAI's API reference, "Create chat completion"), read back to
//! the file's bytes; a file that is no image is refused before anything
//! is sent.

mod common;
use common::*;

#[tokio::test(flavor = "multi_thread")]
async fn exec_sends_each_image_file_with_the_prompt() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let workspace = home.workspace();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0..2000u32).map(|i| (i % 253) as u8));
    let mut gif = b"GIF89a".to_vec();
    gif.extend((0..900u32).map(|i| (i * 3 % 256) as u8));
    std::fs::write(workspace.join("shot.png"), &png).unwrap();
    std::fs::write(workspace.join("anim.gif"), &gif).unwrap();
    mock.push(Reply::text(["Two pictures."]));
    let output = home
        .scv()
        .args(["exec", "--image", "shot.png", "--image"])
        .arg(workspace.join("anim.gif"))
        .arg("describe them")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Two pictures.\n");
    let requests = mock.requests();
    let images = requests[0].images().unwrap();
    let got: Vec<(&str, &Vec<u8>)> = images
        .iter()
        .map(|i| (i.mime_type.as_str(), &i.bytes))
        .collect();
    assert_eq!(got, [("image/png", &png), ("image/gif", &gif)]);
    assert!(requests[0].body.to_string().contains("describe them"));
    assert!(
        requests[0].violations().is_empty(),
        "{:?}",
        requests[0].violations()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_refuses_a_file_that_is_no_image_before_sending_anything() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    std::fs::write(home.workspace().join("notes.png"), b"just text").unwrap();
    let output = home
        .scv()
        .args(["exec", "--image", "notes.png", "look"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(
        err.contains("--image") && err.contains("not a PNG, JPEG, GIF or WebP"),
        "{err}"
    );
    assert!(mock.requests().is_empty());
}

/// The TUI: `@shot.png` in a prompt sends the file's bytes with it (the
/// mention stays in the text); a file that is no image is said on the
/// hint line and nothing is sent; a pasted image path becomes a mention.
#[test]
fn the_tui_sends_a_mentioned_image_and_says_why_not() {
    use base64::Engine as _;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use scv_protocol::ClientMessage;
    use scv_tui::tui::app::{App, Outgoing};
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(0..200u8);
    std::fs::write(cwd.join("shot.png"), &png).unwrap();
    std::fs::write(cwd.join("fake.png"), b"words").unwrap();
    let mut app = App::new(std::time::Instant::now());
    let started = json!({"type":"session.started","request_id":"s","session_id":"s1","cwd":cwd,"model":"m",
        "context_max_tokens":1000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,
        "max_transcript_items":100,"max_prompt_history_bytes":1048576,"max_prompt_history_items":10});
    app.apply(serde_json::from_value(started).unwrap());
    let enter = |app: &mut App, text: &str| {
        for c in text.chars() {
            app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE))
    };
    let out = enter(&mut app, "what is @shot.png?");
    let [Outgoing::Send {
        message: ClientMessage::TurnStart(start),
        ..
    }] = &out[..]
    else {
        panic!("{out:?}")
    };
    assert_eq!(start.prompt, "what is @shot.png?");
    assert_eq!(start.images.len(), 1);
    assert_eq!(start.images[0].mime_type, "image/png");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&start.images[0].data)
        .unwrap();
    assert_eq!(bytes, png);
    let out = enter(&mut app, "and @fake.png");
    assert!(out.is_empty(), "{out:?}");
    assert!(
        app.hint
            .as_deref()
            .unwrap_or("")
            .contains("not a PNG, JPEG, GIF or WebP"),
        "{:?}",
        app.hint
    );
    assert_eq!(app.input.text(), "and @fake.png", "the prompt stays");
    app.input.set("");
    app.on_paste(&format!("'{}'", cwd.join("shot.png").display()));
    assert_eq!(
        app.input.text(),
        format!("@{} ", cwd.join("shot.png").display())
    );
}
