#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! TUI rendering benchmark (`cargo bench -p scv-tui --bench render`).
//!
//! - one frame with 10,000 transcript items (user prompts, markdown answers
//!   with code, tool cards), first frame (cold caches) and steady frames;
//!   and with 30,000 items (over 100,000 lines), steady;
//! - frames while streaming: 1,000 deltas into one answer, a frame after
//!   every delta (worse than the real loop, which draws at most every 16 ms);
//! - launch → first frame with the daemon up: `scv` runs in tmux and writes
//!   the time from `main` to its first drawn frame (SCV_FIRST_FRAME_FILE);
//!   the daemon is started first so the figure excludes its start-up.
//!
//! Figures go to docs/BENCHMARKS.md; nothing here asserts a time.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use scv_protocol::Event;
use scv_tui::tui::app::App;
use scv_tui::tui::{highlight, view};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const S: &str = "sess";

fn event(value: Value) -> Event {
    serde_json::from_value(value).unwrap()
}

fn app_with(items: usize) -> App {
    let mut app = App::new(Instant::now());
    app.apply(event(json!({"type":"session.started","request_id":"s","session_id":S,"cwd":"/work/project",
        "model":"m","context_max_tokens":128000,"max_server_frame_bytes":8388608,"max_transcript_bytes":67108864,
        "max_transcript_items":items + 10,"max_prompt_history_bytes":1048576,"max_prompt_history_items":200})));
    let answer = "Here is the **fix**:\n\n```rust\nfn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n```\n\n- it adds\n- it returns";
    let mut n = 0;
    while n < items {
        let turn = |v: &mut Value| {
            v["session_id"] = json!(S);
            v["turn_id"] = json!("t");
        };
        let mut e = json!({"type":"tool.proposed","call_id":format!("c{n}"),"name":"bash","arguments":{"command":"cargo test"}});
        turn(&mut e);
        app.apply(event(e));
        let mut e = json!({"type":"tool.completed","call_id":format!("c{n}"),"name":"bash","success":true,"output":"test a ... ok\ntest b ... ok\n[exit code: 0]","truncated":false});
        turn(&mut e);
        app.apply(event(e));
        let mut e = json!({"type":"assistant.completed","content":answer});
        turn(&mut e);
        app.apply(event(e));
        n += 2;
    }
    app
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn p99(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() as f64 * 0.99) as usize - 1]
}

fn main() {
    // As at launch: load in the background, then give it time to finish.
    highlight::warm_up();
    std::thread::sleep(Duration::from_secs(2));
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();

    let mut app = app_with(10_000);
    app.resize(120, 40);
    assert!(app.transcript.len() >= 10_000);
    let start = Instant::now();
    terminal.draw(|f| view::draw(f, &app)).unwrap();
    let cold = start.elapsed();
    let mut warm = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        terminal.draw(|f| view::draw(f, &app)).unwrap();
        warm.push(start.elapsed());
    }
    println!(
        "frame with {} transcript items (120x40): first {:.3} ms, then median {:.3} ms, p99 {:.3} ms",
        app.transcript.len(),
        cold.as_secs_f64() * 1e3,
        median(warm.clone()).as_secs_f64() * 1e3,
        p99(warm).as_secs_f64() * 1e3
    );

    // A long day: 100,000 transcript lines or more (as wrapped at 120
    // columns), a frame at the bottom and one scrolled to the middle.
    let mut big = app_with(30_000);
    big.resize(120, 40);
    let lines: usize = big
        .transcript
        .items()
        .iter()
        .map(|item| item.lines(118, false).len())
        .sum();
    terminal.draw(|f| view::draw(f, &big)).unwrap();
    let mut frames = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        terminal.draw(|f| view::draw(f, &big)).unwrap();
        frames.push(start.elapsed());
    }
    println!(
        "frame with {} transcript items, {lines} lines (120x40): median {:.3} ms, p99 {:.3} ms",
        big.transcript.len(),
        median(frames.clone()).as_secs_f64() * 1e3,
        p99(frames).as_secs_f64() * 1e3
    );
    drop(big);

    // Scrolled up 200 rows: the view is held there (and counts the rows
    // below it for its marker).
    for _ in 0..20 {
        app.on_key(KeyEvent::new(KeyCode::PageUp, KeyModifiers::NONE));
    }
    let mut scrolled = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        terminal.draw(|f| view::draw(f, &app)).unwrap();
        scrolled.push(start.elapsed());
    }
    println!(
        "same, scrolled up 200 rows: median {:.3} ms",
        median(scrolled).as_secs_f64() * 1e3
    );

    // Streaming: 1,000 deltas, a frame after each.
    let mut app = app_with(10_000);
    app.resize(120, 40);
    terminal.draw(|f| view::draw(f, &app)).unwrap();
    app.apply(event(
        json!({"type":"turn.started","request_id":"r","session_id":S,"turn_id":"t","seq":1}),
    ));
    let mut frames = Vec::new();
    let total = Instant::now();
    for i in 0..1000 {
        let text = if i % 50 == 49 {
            "word\n\n".to_string()
        } else {
            format!("w{i} ")
        };
        app.apply(event(json!({"type":"assistant.delta","session_id":S,"turn_id":"t","seq":i + 2,"content":text})));
        let start = Instant::now();
        terminal.draw(|f| view::draw(f, &app)).unwrap();
        frames.push(start.elapsed());
    }
    let all = total.elapsed();
    println!(
        "streaming 1,000 deltas, a frame after each: frame median {:.3} ms, p99 {:.3} ms; all 1,000 deltas + frames {:.1} ms",
        median(frames.clone()).as_secs_f64() * 1e3,
        p99(frames).as_secs_f64() * 1e3,
        all.as_secs_f64() * 1e3
    );

    thought_frames(&mut terminal);
    launch_to_first_frame();
}

/// 10,000 items and a long thought (about 60 KB, 10,000 words): frames
/// while it streams (a frame after each of 1,000 deltas), then collapsed
/// and expanded.
fn thought_frames(terminal: &mut Terminal<TestBackend>) {
    let mut app = app_with(10_000);
    app.resize(120, 40);
    terminal.draw(|f| view::draw(f, &app)).unwrap();
    app.apply(event(
        json!({"type":"turn.started","request_id":"r","session_id":S,"turn_id":"t","seq":1}),
    ));
    let sentence = "Let me think about the failing test and what the function returns here. ";
    let mut frames = Vec::new();
    for i in 0..1000 {
        let text = if i % 20 == 19 {
            format!("{sentence}\n")
        } else {
            sentence.to_string()
        };
        app.apply(event(json!({"type":"reasoning.delta","session_id":S,"turn_id":"t","seq":i + 2,"content":text})));
        let start = Instant::now();
        terminal.draw(|f| view::draw(f, &app)).unwrap();
        frames.push(start.elapsed());
    }
    println!(
        "a long thought (1,000 deltas, {} KB) over 10,000 items, a frame after each delta: median {:.3} ms, p99 {:.3} ms",
        1000 * sentence.len() / 1024,
        median(frames.clone()).as_secs_f64() * 1e3,
        p99(frames).as_secs_f64() * 1e3
    );
    app.apply(event(json!({"type":"assistant.delta","session_id":S,"turn_id":"t","seq":2000,"content":"The answer."})));
    let mut collapsed = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        terminal.draw(|f| view::draw(f, &app)).unwrap();
        collapsed.push(start.elapsed());
    }
    app.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::CONTROL));
    let start = Instant::now();
    terminal.draw(|f| view::draw(f, &app)).unwrap();
    let expand = start.elapsed();
    let mut expanded = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        terminal.draw(|f| view::draw(f, &app)).unwrap();
        expanded.push(start.elapsed());
    }
    println!(
        "then collapsed to one line: frame median {:.3} ms; expanded (Ctrl+O): first {:.3} ms, then median {:.3} ms",
        median(collapsed).as_secs_f64() * 1e3,
        expand.as_secs_f64() * 1e3,
        median(expanded).as_secs_f64() * 1e3
    );
}

fn launch_to_first_frame() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use scv_test_support::mock_provider::MockProvider;
        use scv_test_support::TestHome;
        if std::process::Command::new("tmux")
            .arg("-V")
            .output()
            .is_err()
        {
            println!("launch -> first frame: skipped (no tmux)");
            return;
        }
        let mock = MockProvider::start().await;
        let home = TestHome::new(&mock.base_url(), "");
        let scv = env!("CARGO_BIN_EXE_scv");
        let server = std::path::Path::new(scv).with_file_name("scv-server");
        let socket = home.path().join("server.sock");
        // The daemon is up before the clock starts.
        drop(
            scv_client::daemon::ensure_daemon_with(&server, home.path(), &socket)
                .await
                .unwrap(),
        );
        let tmux = format!("scv-bench-{}", std::process::id());
        let mut times = Vec::new();
        for i in 0..20 {
            let file = home.path().join(format!("first-frame-{i}"));
            let command = format!(
                "env SCV_HOME={} SCV_FIRST_FRAME_FILE={} {scv}",
                home.path().display(),
                file.display()
            );
            let status = std::process::Command::new("tmux")
                .args([
                    "-L",
                    &tmux,
                    "new-session",
                    "-d",
                    "-s",
                    &format!("b{i}"),
                    "-x",
                    "120",
                    "-y",
                    "40",
                    "-c",
                ])
                .arg(home.workspace())
                .arg(&command)
                .status()
                .unwrap();
            assert!(status.success());
            let mut micros = None;
            for _ in 0..400 {
                if let Ok(text) = std::fs::read_to_string(&file) {
                    if let Ok(v) = text.trim().parse::<u64>() {
                        micros = Some(v);
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            times.push(Duration::from_micros(micros.expect("scv drew a frame")));
            std::process::Command::new("tmux")
                .args(["-L", &tmux, "kill-session", "-t", &format!("b{i}")])
                .status()
                .unwrap();
        }
        std::process::Command::new("tmux")
            .args(["-L", &tmux, "kill-server"])
            .stderr(std::process::Stdio::null())
            .status()
            .ok();
        let status = scv_client::control(&socket, scv_protocol::DaemonCommand::Status)
            .await
            .unwrap();
        unsafe { libc::kill(status.pid as i32, libc::SIGTERM) };
        println!(
            "launch -> first frame (daemon up, in tmux): median {:.2} ms, p90 {:.2} ms (20 runs)",
            median(times.clone()).as_secs_f64() * 1e3,
            {
                let mut t = times;
                t.sort();
                t[17].as_secs_f64() * 1e3
            }
        );
    });
}
