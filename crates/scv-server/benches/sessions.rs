#![allow(clippy::unwrap_used, clippy::expect_used)] // a bench fails loudly
//! The session store's costs (`cargo bench -p scv-server --bench sessions`).
//!
//! Against the release server and the mock provider the tests use:
//! - journaling on the stream path: one 15,000-delta turn through
//!   `scv-server --stdio` with `session_store = true` and `= false`,
//!   interleaved, turn.start written → turn.completed read;
//! - `session.list` over 1,000 stored sessions (copies of a real session's
//!   journal), with their summaries (as the daemon leaves them) and
//!   without (as a crash leaves them: every journal replayed);
//! - `session.resume` of a session that emitted 10,000 events (real turns
//!   with a tool call and a streamed answer each), request → its
//!   `session.transcript`, and the daemon's resident memory before and
//!   after;
//! - `session.fork` of that session and of a two-turn one.
//!
//! Figures go to docs/BENCHMARKS.md; nothing here asserts a time.

use scv_store::{Record, SessionStore};
use scv_test_support::daemon::{spawn_daemon, wait_for_socket, DaemonLog};
use scv_test_support::mock_provider::{MockProvider, Reply};
use scv_test_support::procfs::status_field;
use scv_test_support::{TestHome, TestServer};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scv-server");
const DELTAS: usize = 15_000;
const STREAM_RUNS: usize = 25;
const LISTED: usize = 1000;
const EVENTS: usize = 10_000;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn initialize(client: &mut TestServer) {
    client
        .send(
            json!({"type":"initialize","request_id":"init","protocol_version":2,
            "client":{"name":"bench","version":"0"},"capabilities":{"sessions":true}}),
        )
        .await;
    client.expect("initialized").await;
}

/// One turn's times: turn.start → turn.completed, and its two ends
/// (turn.start → turn.started, assistant.completed → turn.completed),
/// where the journal writes.
struct Timed {
    whole: Duration,
    start: Duration,
    end: Duration,
}

/// One 15,000-delta turn through `scv-server --stdio` in `home`.
async fn stream_turn(mock: &MockProvider, home: &TestHome) -> Timed {
    let fragments: Vec<String> = (0..DELTAS).map(|i| format!("t{} ", i % 10)).collect();
    mock.push(Reply::response(&fragments, &[], 64).batched(256));
    let mut server = TestServer::spawn(BIN, home.path());
    initialize(&mut server).await;
    let session = server.start_session(&home.workspace()).await;
    let start = Instant::now();
    server.start_turn(&session, "t", "stream").await;
    let mut line = Vec::new();
    let (mut started, mut answered) = (start, start);
    loop {
        line.clear();
        assert!(server.next_raw(&mut line).await > 0, "server closed early");
        if line.starts_with(b"{\"type\":\"turn.started\"") {
            started = Instant::now();
        } else if line.starts_with(b"{\"type\":\"assistant.completed\"") {
            answered = Instant::now();
        } else if line.starts_with(b"{\"type\":\"turn.completed\"") {
            break;
        }
        assert!(!line.starts_with(b"{\"type\":\"turn.failed\""));
    }
    let timed = Timed {
        whole: start.elapsed(),
        start: started - start,
        end: answered.elapsed(),
    };
    server.close_stdin().await;
    server.wait().await;
    timed
}

async fn journaling_on_the_stream_path(mock: &MockProvider) {
    let stored = TestHome::new(&mock.base_url(), "");
    let unstored = TestHome::new(&mock.base_url(), "session_store = false");
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..STREAM_RUNS {
        on.push(stream_turn(mock, &stored).await);
        off.push(stream_turn(mock, &unstored).await);
    }
    let part = |runs: &[Timed], f: fn(&Timed) -> Duration| median(runs.iter().map(f).collect());
    let (whole_on, whole_off) = (part(&on, |t| t.whole), part(&off, |t| t.whole));
    println!(
        "15,000-delta turn: store on median {:.1} ms, off {:.1} ms ({STREAM_RUNS} interleaved runs each): {:+.1} %",
        ms(whole_on),
        ms(whole_off),
        (whole_on.as_secs_f64() / whole_off.as_secs_f64() - 1.0) * 100.0
    );
    println!(
        "  turn.start -> turn.started: on {:.3} ms, off {:.3} ms; assistant.completed -> turn.completed: on {:.3} ms, off {:.3} ms",
        ms(part(&on, |t| t.start)),
        ms(part(&off, |t| t.start)),
        ms(part(&on, |t| t.end)),
        ms(part(&off, |t| t.end))
    );
}

/// Runs `turns` real turns in a new session on `client`, each with a
/// `read_file` call and an answer of `deltas` deltas, until the session
/// emitted at least `events` events (when nonzero). Returns the session
/// id and the events it emitted.
async fn real_session(
    mock: &MockProvider,
    client: &mut TestServer,
    cwd: &Path,
    turns: usize,
    deltas: usize,
    events: usize,
) -> (String, usize) {
    std::fs::write(
        cwd.join("notes.md"),
        "# Notes\nThe build runs on two cores.\n",
    )
    .unwrap();
    let session = client.start_session(cwd).await;
    let mut emitted = 0;
    let answer: Vec<String> = (0..deltas).map(|i| format!("word{i} ")).collect();
    for turn in 0.. {
        if (events == 0 && turn == turns) || (events > 0 && emitted >= events) {
            break;
        }
        mock.push(Reply::tool_calls(&[(
            "c1",
            "read_file",
            json!({"path": "notes.md"}),
        )]));
        mock.push(Reply::text(&answer));
        client
            .start_turn(
                &session,
                &format!("r{turn}"),
                &format!("question {turn}: what do the notes say about the build?"),
            )
            .await;
        let seen = client.until_terminal().await;
        assert_eq!(seen.last().unwrap()["type"], "turn.completed", "{seen:?}");
        // The turn's events, the queue.updated ones included.
        emitted += seen
            .iter()
            .filter(|e| e["session_id"] == session.as_str())
            .count();
    }
    (session, emitted)
}

/// Copies of `source`'s journal under new ids, `with_summaries` or not.
fn copies(home: &Path, source: &str, n: usize, with_summaries: bool) -> Vec<String> {
    let store = SessionStore::open(home).unwrap();
    let journal = std::fs::read(store.dir().join(format!("{source}.jsonl"))).unwrap();
    let records: Vec<Record> = journal
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    (0..n)
        .map(|i| {
            let id = format!("00000000-0000-4000-8000-{i:012x}");
            let Record::Session(mut header) = records[0].clone() else {
                panic!("a journal opens with its header")
            };
            header.session_id = id.clone();
            let mut copy = store.create(&header).unwrap();
            for record in &records[1..] {
                copy.append(record).unwrap();
            }
            drop(copy);
            if with_summaries {
                let replay = store.read(&id, None).unwrap();
                let len = std::fs::metadata(store.dir().join(format!("{id}.jsonl")))
                    .unwrap()
                    .len();
                store.write_meta(&id, &replay.meta(len)).unwrap();
            }
            id
        })
        .collect()
}

/// Median time of `session.list` (limit 1000) over `runs` requests.
async fn time_list(client: &mut TestServer, runs: usize) -> (Duration, usize) {
    let mut times = Vec::new();
    let mut listed = 0;
    for i in 0..runs {
        let start = Instant::now();
        client
            .send(json!({"type":"session.list","request_id":format!("l{i}"),"limit":1000}))
            .await;
        let reply = client.expect("session.listed").await;
        times.push(start.elapsed());
        listed = reply["sessions"].as_array().unwrap().len();
    }
    (median(times), listed)
}

/// Time from `message` to its `session.transcript` on a new connection.
async fn time_open(socket: &Path, message: Value) -> (Duration, TestServer) {
    let mut client = TestServer::connect(socket).await;
    initialize(&mut client).await;
    let start = Instant::now();
    client.send(message).await;
    client.until("session.transcript").await;
    (start.elapsed(), client)
}

async fn store_operations(mock: &MockProvider) {
    let home = TestHome::new(&mock.base_url(), "");
    let socket = home.path().join("server.sock");
    let log = DaemonLog::default();
    let mut daemon = spawn_daemon(BIN, home.path(), &socket, &log);
    wait_for_socket(&socket).await;
    let pid = daemon.id().unwrap();
    let mut client = TestServer::connect(&socket).await;
    initialize(&mut client).await;

    // The sessions to list: a real two-turn session, copied.
    let (small, _) = real_session(mock, &mut client, &home.workspace(), 2, 40, 0).await;
    let (big, emitted) = real_session(mock, &mut client, &home.workspace(), 0, 80, EVENTS).await;
    drop(client);
    tokio::time::sleep(Duration::from_millis(300)).await; // the sessions close
    let store = SessionStore::open(home.path()).unwrap();
    let journal_bytes = |id: &str| {
        std::fs::metadata(store.dir().join(format!("{id}.jsonl")))
            .unwrap()
            .len()
    };
    let big_records = std::fs::read(store.dir().join(format!("{big}.jsonl")))
        .unwrap()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    println!(
        "the big session: {emitted} events emitted, journal {} records, {:.0} KiB; the small one {:.1} KiB",
        big_records,
        journal_bytes(&big) as f64 / 1024.0,
        journal_bytes(&small) as f64 / 1024.0
    );

    let copied = copies(home.path(), &small, LISTED - 2, true);
    let mut client = TestServer::connect(&socket).await;
    initialize(&mut client).await;
    let (with, listed) = time_list(&mut client, 30).await;
    println!(
        "session.list of {listed} sessions, summaries present: median {:.2} ms (30 requests)",
        ms(with)
    );
    for id in &copied {
        std::fs::remove_file(store.dir().join(format!("{id}.meta"))).unwrap();
    }
    let (without, listed) = time_list(&mut client, 10).await;
    println!("session.list of {listed} sessions, no summaries (every journal replayed): median {:.2} ms (10 requests)", ms(without));
    drop(client);

    // Resume the big one, five times (each on its own connection, closed
    // before the next).
    let mut times = Vec::new();
    let mut rss = Vec::new();
    for i in 0..5 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = status_field(pid, "VmRSS:");
        let (took, client) = time_open(
            &socket,
            json!({"type":"session.resume","request_id":format!("r{i}"),"session_id":big}),
        )
        .await;
        let after = status_field(pid, "VmRSS:");
        times.push(took);
        rss.push(after as i64 - before as i64);
        drop(client);
    }
    rss.sort();
    println!(
        "session.resume of the {emitted}-event session: median {:.2} ms (5 runs); resident memory {:+.1} MiB while it is open (median), high-water mark {:.1} MiB",
        ms(median(times)),
        rss[rss.len() / 2] as f64 / 1024.0,
        status_field(pid, "VmHWM:") as f64 / 1024.0
    );

    for (name, id) in [("big", &big), ("two-turn", &small)] {
        let mut times = Vec::new();
        for i in 0..5 {
            let (took, client) = time_open(
                &socket,
                json!({"type":"session.fork","request_id":format!("f{i}"),"session_id":id}),
            )
            .await;
            times.push(took);
            drop(client);
        }
        println!(
            "session.fork of the {name} session: median {:.2} ms (5 runs)",
            ms(median(times))
        );
    }
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    daemon.wait().await.unwrap();
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mock = MockProvider::start().await;
    journaling_on_the_stream_path(&mock).await;
    store_operations(&mock).await;
}
