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
    let got: Vec<(&str, &Vec<u8>)> = images.iter().map(|i| (i.mime_type.as_str(), &i.bytes)).collect();
    assert_eq!(got, [("image/png", &png), ("image/gif", &gif)]);
    assert!(requests[0].body.to_string().contains("describe them"));
    assert!(requests[0].violations().is_empty(), "{:?}", requests[0].violations());
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
    assert!(err.contains("--image") && err.contains("not a PNG, JPEG, GIF or WebP"), "{err}");
    assert!(mock.requests().is_empty());
}
