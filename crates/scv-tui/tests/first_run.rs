#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The first-run note: when it applies, probing a local server's
//! `/v1/models` (a real HTTP server on a free port), and the note as
//! shown with and without a local server answering.

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use scv_tui::first_run::{self, Local};
use scv_tui::tui::app::App;
use scv_tui::tui::view;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn home_with(config: Option<&str>) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    if let Some(config) = config {
        std::fs::write(home.path().join("config.toml"), config).unwrap();
    }
    home
}

#[test]
fn the_note_applies_only_to_the_default_provider_without_its_key() {
    let unset = "SCV_TEST_KEY_THAT_IS_NEVER_SET_17";
    let config = format!("api_key_env = \"{unset}\"\n");
    assert_eq!(
        first_run::missing_key(home_with(Some(&config)).path(), None).as_deref(),
        Some(unset)
    );
    assert_eq!(
        first_run::missing_key(home_with(Some(&config)).path(), Some("ollama")),
        None,
        "--provider chose something else"
    );
    let with_provider = format!("{config}provider = \"anthropic\"\n");
    assert_eq!(
        first_run::missing_key(home_with(Some(&with_provider)).path(), None),
        None
    );
    let with_url = format!("{config}base_url = \"http://127.0.0.1:9/v1\"\n");
    assert_eq!(
        first_run::missing_key(home_with(Some(&with_url)).path(), None),
        None
    );
    // A variable that is set (PATH always is).
    assert_eq!(
        first_run::missing_key(home_with(Some("api_key_env = \"PATH\"\n")).path(), None),
        None
    );
}

/// Serves one canned HTTP answer per connection on a free port.
async fn serve(body: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = vec![0u8; 4096];
            let n = stream.read(&mut request).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&request[..n]).to_string();
            let (status, body) = if head.starts_with("GET /v1/models ") {
                ("200 OK", body)
            } else {
                ("404 Not Found", "{}")
            };
            let answer = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    base
}

#[tokio::test]
async fn probing_names_the_models_and_gives_up_quickly() {
    let base = serve(r#"{"object":"list","data":[{"id":"qwen3:8b"},{"id":"llama3.2"}]}"#).await;
    assert_eq!(
        first_run::probe(&base, Duration::from_secs(2)).await,
        Some(vec!["qwen3:8b".to_string(), "llama3.2".to_string()])
    );
    // Something that accepts and never answers: bounded by the timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", silent.local_addr().unwrap());
    let start = Instant::now();
    assert_eq!(
        first_run::probe(&base, Duration::from_millis(200)).await,
        None
    );
    assert!(start.elapsed() < Duration::from_secs(2));
    // Nothing listening.
    drop(silent);
    assert_eq!(
        first_run::probe(&base, Duration::from_millis(200)).await,
        None
    );
}

fn render_note(locals: &[Local]) -> String {
    let mut app = App::new(Instant::now());
    let started = json!({"type":"session.started","request_id":"s","session_id":"s1","cwd":"/work/project",
        "model":"gpt-4.1-mini","context_max_tokens":128000,"max_server_frame_bytes":8388608,
        "max_transcript_bytes":8388608,"max_transcript_items":10000,"max_prompt_history_bytes":1048576,
        "max_prompt_history_items":200,"provider":"openai"});
    app.apply(serde_json::from_value(started).unwrap());
    app.notes(first_run::note(
        "OPENAI_API_KEY",
        Path::new("/home/me/.scv"),
        &[],
        locals,
    ));
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|frame| view::draw(frame, &app)).unwrap();
    terminal.backend().to_string()
}

#[test]
fn first_run_without_a_local_server() {
    let screen = render_note(&[]);
    assert!(screen.contains("OPENAI_API_KEY is not set"), "{screen}");
    assert!(screen.contains("none answered"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn first_run_with_ollama_answering() {
    let screen = render_note(&[Local {
        name: "Ollama".into(),
        preset: "ollama".into(),
        models: vec!["qwen3:8b".into(), "llama3.2".into()],
    }]);
    assert!(screen.contains("qwen3:8b, llama3.2"), "{screen}");
    assert!(
        screen.contains("scv --provider ollama --model qwen3:8b"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
}
