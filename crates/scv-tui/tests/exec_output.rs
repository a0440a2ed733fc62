#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! What `scv exec` prints in text mode, against the real daemon and the
//! mock provider: each tool call's command and the tail of its output on
//! stderr, a denied call as denied, and the steps' text on stdout apart.

mod common;
use common::*;

#[tokio::test(flavor = "multi_thread")]
async fn exec_shows_each_calls_command_and_output_tail_and_separates_steps() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let marker = home.workspace().join("made-by-exec");
    mock.push(Reply::response(
        ["Let me count."],
        &[("c1", "bash", json!({"command": "seq 1 15; exit 3"}))],
        7,
    ));
    mock.push(Reply::response(
        ["Now the file."],
        &[(
            "c2",
            "write_file",
            json!({"path": "made-by-exec", "content": "x"}),
        )],
        7,
    ));
    mock.push(Reply::text(["It counted to 15."]));
    let output = home
        .scv()
        .args(["exec", "--approve", "process", "count"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "Let me count.\n\nNow the file.\n\nIt counted to 15.\n"
    );
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().skip(1).collect(); // [session] ID
    let bash = lines
        .iter()
        .position(|l| *l == "[tool] bash running: seq 1 15; exit 3")
        .unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        lines[bash + 1],
        "[tool] bash failed: seq 1 15; exit 3",
        "{err}"
    );
    let tail: Vec<&str> = lines[bash + 2..]
        .iter()
        .take_while(|l| l.starts_with("  "))
        .copied()
        .collect();
    // The output's last lines, the exit status among them, at most 10,
    // after how many were left out.
    assert!(
        tail[0].starts_with("  … ") && tail[0].ends_with(" left out"),
        "{err}"
    );
    assert_eq!(tail.len(), 11, "{err}");
    assert!(tail[1..].iter().all(|l| l.starts_with("  | ")), "{err}");
    assert!(tail.contains(&"  | 15"), "{err}");
    assert!(err.contains("[denied] Write file"), "{err}");
    assert!(
        err.contains("[denied: allow with --approve write]\n[tool] write_file denied, not run: made-by-exec\n"),
        "{err}"
    );
    assert!(!marker.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_says_a_turn_failure_in_words() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "provider_max_retries = 0");
    mock.push(Reply::error(400, "no such model"));
    let output = home.scv().args(["exec", "hi"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        err.contains("scv: the turn failed: the model provider returned an error — "),
        "{err}"
    );
    assert!(!err.contains("provider_error"), "{err}");
}

/// A provider that refuses for now is waited out, and `scv exec` says
/// each wait on stderr; the answer still comes.
#[tokio::test(flavor = "multi_thread")]
async fn exec_says_each_retry_and_its_wait() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    mock.push(Reply::error(429, "slow down").header("retry-after", "1"));
    mock.push(Reply::error(500, "boom").header("retry-after", "0"));
    mock.push(Reply::text(["made it"]));
    let output = home.scv().args(["exec", "go"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "made it\n");
    let err = stderr(&output);
    assert!(
        err.contains("[retry] retrying in 1 s (429 rate limited, 1 of 3)"),
        "{err}"
    );
    assert!(
        err.contains("[retry] retrying in 0 s (500 server error, 2 of 3)"),
        "{err}"
    );
}

/// A chat stream answering `text` that reports `completion_tokens`
/// output tokens.
fn answer_costing(text: &str, completion_tokens: u64) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    Reply::raw(
        vec![
            chunk(json!({"role": "assistant", "content": text}), Value::Null),
            chunk(json!({}), json!("stop")),
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": completion_tokens}})
            .to_string(),
        ],
        Ending::Done,
    )
}

/// 80 % of a budget spent is said on `scv exec`'s stderr; the next
/// request that cannot fit is refused with "budget reached: spent $X of
/// $Y", nothing sent.
#[tokio::test(flavor = "multi_thread")]
async fn exec_warns_at_80_percent_of_a_budget_and_says_when_it_is_reached() {
    let mock = MockProvider::start().await;
    // $0.001 an output token, free input; requests capped at 100 tokens.
    let home = Home::new(
        &mock,
        "max_output_tokens = 100\nmax_session_cost_usd = 0.5\n\
         [pricing.\"mock-model\"]\ninput = 0\noutput = 1000\n",
    );
    mock.push(answer_costing("spent", 450));
    let output = home.scv().args(["exec", "spend"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("[budget] 90% of budget max_session_cost_usd ($0.5000) spent: $0.4500\n"),
        "{err}"
    );
    let session = err
        .lines()
        .find_map(|l| l.strip_prefix("[session] "))
        .unwrap()
        .to_string();

    mock.push(Reply::text(["never"]));
    let output = home
        .scv()
        .args(["exec", "--resume", &session, "more"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(
            "budget reached: spent $0.4500 of $0.5000 (max_session_cost_usd, this session)"
        ),
        "{err}"
    );
    // `scv exec` asks for capability `budgets`: its own code, in words.
    assert!(
        err.contains("scv: the turn failed: the budget was reached — budget reached"),
        "{err}"
    );
    assert_eq!(mock.request_count(), 1, "nothing was sent");
}

/// A hook that exits 1 (Claude Code: a non-blocking error shown to the
/// user): `scv exec` prints its stderr as `[hook] …`, naming the hook by
/// its script and its line in the hooks file; the call still runs.
#[tokio::test(flavor = "multi_thread")]
async fn exec_shows_a_hooks_non_blocking_error_on_stderr() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let script = home.workspace().join("lint-hook.sh");
    std::fs::write(&script, "echo 'style: prefer rg over grep' >&2\nexit 1\n").unwrap();
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": format!("bash {}", script.display())}]}]}});
    let file = home.path().join("hooks.json");
    let text = serde_json::to_string_pretty(&hooks).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains("\"command\":"))
        .unwrap()
        + 1;
    std::fs::write(&file, &text).unwrap();
    let marker = home.workspace().join("ran");
    mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": format!("touch {}", marker.display())}),
    )]));
    mock.push(Reply::text(["done"]));
    let output = home
        .scv()
        .args(["exec", "--approve", "process", "go"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(marker.exists(), "{err}");
    let name = format!("hook `{}` ({}:{line})", script.display(), file.display());
    assert!(
        err.contains(&format!(
            "[hook] {name} says: {name} exited 1: style: prefer rg over grep\n"
        )),
        "{err}"
    );
    assert!(!mock.requests()[1].body.to_string().contains("prefer rg"));
}

/// An agent definition of the user's (`$SCV_HOME/agents/`) naming a tool
/// SCV lacks loads without it, and `scv exec` says so on stderr (as the
/// TUI's `skipped:` notice does).
#[tokio::test(flavor = "multi_thread")]
async fn exec_says_which_tools_an_agent_definition_lost() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let agents = home.path().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("web.md"),
        "---\nname: web\ndescription: d\ntools: WebSearch, Read\n---\nbody\n",
    )
    .unwrap();
    mock.push(Reply::text(["done"]));
    let output = home.scv().args(["exec", "hello"]).output().unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("[commands] "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains("web.md") && line.contains("WebSearch"),
        "{err}"
    );
}

/// A provider that cannot be reached is said as such, once: not "the
/// model provider returned an error", and no heading twice.
#[tokio::test(flavor = "multi_thread")]
async fn an_unreachable_provider_is_said_in_its_own_words() {
    // A port nothing listens on: taken, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let home = Home {
        home: TestHome::new(
            &format!("http://127.0.0.1:{port}/v1"),
            "provider_max_retries = 0",
        ),
    };
    let output = home.scv().args(["exec", "hello"]).output().unwrap();
    assert!(!output.status.success());
    let err = stderr(&output);
    let line = err
        .lines()
        .find(|l| l.starts_with("scv: the turn failed: "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.starts_with(
            "scv: the turn failed: the model provider could not be reached — cannot connect to provider"
        ),
        "{line}"
    );
    assert!(!err.contains("returned an error"), "{err}");
}

/// Output is held while a batch of events is printed and written when it
/// is done (a write or two per batch, not one per delta): with stdout and
/// stderr on one file, a long answer's text is whole and each tool line
/// still comes after the text before it and before the text after it.
#[tokio::test(flavor = "multi_thread")]
async fn exec_holds_output_per_batch_and_keeps_the_two_streams_in_order() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let first: Vec<String> = (0..3000).map(|i| format!("a{i} ")).collect();
    mock.push(Reply::response(
        &first,
        &[("c1", "bash", json!({"command": "echo from-the-tool"}))],
        7,
    ));
    mock.push(Reply::text(["after the tool."]));
    let both = home.workspace().join("../exec-both.txt");
    let file = std::fs::File::create(&both).unwrap();
    let status = home
        .scv()
        .args(["exec", "--approve", "process", "go"])
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .status()
        .unwrap();
    let printed = std::fs::read_to_string(&both).unwrap();
    assert!(status.success(), "{printed}");
    let text = first.concat();
    let at = |needle: &str| {
        printed
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} not in {printed}"))
    };
    let (answer, running, done, after) = (
        at(&text),
        at("[tool] bash running: echo from-the-tool"),
        at("[tool] bash done: echo from-the-tool"),
        at("after the tool."),
    );
    assert!(
        answer < running && running < done && done < after,
        "{printed}"
    );
    assert!(at("[session] ") < answer, "{printed}");
}
