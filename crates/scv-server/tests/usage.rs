#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Usage by kind, cost and budgets (capability `usage`) through the real
//! binary against the mock provider: every wire's usage is counted once
//! (repeated and cumulative usage, Anthropic's `message_start` +
//! `message_delta`, Responses' `response.completed`), summed per turn and
//! per session; a priced model's turns carry their cost; a budget stops
//! the request that could cross it before it is sent.

mod common;
use common::*;
use scv_test_support::wires::anthropic::{self, Block, DeltaUsage};
use scv_test_support::wires::responses::{self, Item, Response};

/// Mock + home (`extra` config, and the presets pointed at the mock) +
/// server, initialized with `capabilities`.
async fn rig(extra: &str, capabilities: Option<Value>) -> Rig {
    let mock = MockProvider::start().await;
    let base = mock.base_url();
    let config = format!(
        "{extra}\n[providers.anthropic]\nbase_url = \"{base}\"\nmodel = \"claude-test\"\n\
         [providers.openai-responses]\nbase_url = \"{base}\"\nmodel = \"gpt-test\"\n"
    );
    let home = TestHome::new(&base, &config);
    let mut server = TestServer::spawn_with(BIN, home.path(), &[("ANTHROPIC_API_KEY", "k")]);
    let mut init = json!({"type": "initialize", "request_id": "init", "protocol_version": 2});
    if let Some(capabilities) = capabilities {
        init["capabilities"] = capabilities;
    }
    server.send(init.clone()).await;
    let initialized = server.expect("initialized").await;
    if let Some(asked) = init.get("capabilities") {
        assert_eq!(
            initialized["capabilities"]["usage"], asked["usage"],
            "{initialized}"
        );
    }
    Rig { mock, home, server }
}

fn usage_cap() -> Option<Value> {
    Some(json!({"usage": true}))
}

async fn session_on(rig: &mut Rig, provider: Option<&str>) -> String {
    let workspace = rig.home.workspace();
    let mut start = json!({"cwd": workspace});
    if let Some(provider) = provider {
        start["provider"] = json!(provider);
    }
    rig.server.start_session_with(start).await
}

fn last(events: &[Value]) -> &Value {
    events.last().unwrap()
}

/// A chat stream answering `text`, then each of `usages` as its own
/// usage chunk (as servers that repeat or grow usage send it).
fn chat_with_usage(text: &str, usages: &[Value]) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    let mut events = vec![
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": text}), Value::Null),
        chunk(json!({}), json!("stop")),
    ];
    for usage in usages {
        events.push(
            json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [], "usage": usage})
            .to_string(),
        );
    }
    Reply::raw(events, Ending::Done)
}

fn detail(input: u64, cache_read: u64, cache_write: u64, output: u64, reasoning: u64) -> Value {
    json!({"input": input, "cache_read": cache_read, "cache_write": cache_write,
        "output": output, "reasoning": reasoning})
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-12)
}

#[tokio::test]
async fn chat_usage_repeated_and_growing_is_counted_once_with_cache_and_reasoning() {
    let mut rig = rig("", usage_cap()).await;
    let session = session_on(&mut rig, None).await;
    // A first, partial usage chunk, then the whole one: the last one is
    // the request's count, never added to the first.
    rig.mock.push(chat_with_usage(
        "hi",
        &[
            json!({"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101}),
            json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                "prompt_tokens_details": {"cached_tokens": 60},
                "completion_tokens_details": {"reasoning_tokens": 5}}),
            json!({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                "prompt_tokens_details": {"cached_tokens": 60},
                "completion_tokens_details": {"reasoning_tokens": 5}}),
        ],
    ));
    let events = rig.turn(&session, "hi").await;
    let done = last(&events);
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 100, "output_tokens": 20})
    );
    assert_eq!(done["usage_detail"], detail(40, 60, 0, 20, 5), "{done}");
    assert_eq!(done["session_usage_detail"], detail(40, 60, 0, 20, 5));
    // mock-model has no price: tokens, and cost null, never 0.
    assert!(done["cost_usd"].is_null(), "{done}");
    assert!(done.as_object().unwrap().contains_key("cost_usd"));
    assert!(done["session_cost_usd"].is_null());

    // DeepSeek reports its cache hits apart.
    rig.mock.push(chat_with_usage(
        "again",
        &[json!({"prompt_tokens": 50, "completion_tokens": 4,
            "prompt_cache_hit_tokens": 30, "prompt_cache_miss_tokens": 20})],
    ));
    let events = rig.turn(&session, "again").await;
    let done = last(&events);
    assert_eq!(done["usage_detail"], detail(20, 30, 0, 4, 0), "{done}");
    assert_eq!(done["session_usage_detail"], detail(60, 90, 0, 24, 5));
}

#[tokio::test]
async fn anthropic_message_start_and_cumulative_message_delta_count_once() {
    let mut rig = rig("", usage_cap()).await;
    let session = session_on(&mut rig, Some("anthropic")).await;
    let usage = anthropic::Usage {
        input_tokens: 25,
        cache_creation_input_tokens: 100,
        cache_read_input_tokens: 1000,
        output_tokens: 15,
    };
    for delta in [
        DeltaUsage::Cumulative,
        DeltaUsage::ZeroInput,
        DeltaUsage::OutputOnly,
    ] {
        rig.mock.push(
            anthropic::Message::new(vec![Block::text(["Hello"])])
                .usage(usage)
                .delta_usage(delta)
                .reply(),
        );
        let events = rig.turn(&session, "hi").await;
        let done = last(&events);
        assert_eq!(done["type"], "turn.completed", "{delta:?}: {done}");
        assert_eq!(
            done["usage"],
            json!({"input_tokens": 1125, "output_tokens": 15}),
            "{delta:?}"
        );
        assert_eq!(
            done["usage_detail"],
            detail(25, 1000, 100, 15, 0),
            "{delta:?}"
        );
    }
    let events = anthropic_again(&mut rig, &session).await;
    assert_eq!(
        last(&events)["session_usage_detail"],
        detail(100, 4000, 400, 60, 0)
    );
}

/// One more Anthropic turn with the same usage figures.
async fn anthropic_again(rig: &mut Rig, session: &str) -> Vec<Value> {
    rig.mock.push(
        anthropic::Message::new(vec![Block::text(["again"])])
            .usage(anthropic::Usage {
                input_tokens: 25,
                cache_creation_input_tokens: 100,
                cache_read_input_tokens: 1000,
                output_tokens: 15,
            })
            .reply(),
    );
    rig.turn(session, "again").await
}

#[tokio::test]
async fn responses_completed_usage_with_cached_and_reasoning_tokens() {
    let extra = "[pricing.\"gpt-test\"]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\n";
    let mut rig = rig(extra, usage_cap()).await;
    let session = session_on(&mut rig, Some("openai-responses")).await;
    rig.mock.push(
        Response::new(vec![Item::message(["Hi"])])
            .usage(responses::Usage {
                input_tokens: 72,
                cached_tokens: 40,
                output_tokens: 25,
                reasoning_tokens: 10,
            })
            .reply(),
    );
    let events = rig.turn(&session, "hi").await;
    let done = last(&events);
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 72, "output_tokens": 25})
    );
    assert_eq!(done["usage_detail"], detail(32, 40, 0, 25, 10));
    // 32 × 2 + 40 × 0.5 + 25 × 8 per million.
    let cost = (32.0 * 2.0 + 40.0 * 0.5 + 25.0 * 8.0) / 1e6;
    assert!(close(&done["cost_usd"], cost), "{done}");
    assert!(close(&done["session_cost_usd"], cost), "{done}");
}

#[tokio::test]
async fn steps_sum_per_turn_and_turns_per_session_with_their_cost() {
    let extra = "[pricing.\"mock-model\"]\ninput = 1.0\noutput = 4.0\n";
    let mut rig = rig(extra, usage_cap()).await;
    let session = session_on(&mut rig, None).await;
    // Two requests in one turn: a tool call (20 in, 5 out), then text
    // (11 in, 7 out).
    rig.mock.push(Reply::tool_calls(&[(
        "call_1",
        "list_dir",
        json!({"path": "."}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    let events = rig.turn(&session, "look").await;
    let done = last(&events);
    assert_eq!(done["steps"], 2, "{done}");
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 31, "output_tokens": 12})
    );
    assert_eq!(done["usage_detail"], detail(31, 0, 0, 12, 0));
    let first = (31.0 + 12.0 * 4.0) / 1e6;
    assert!(close(&done["cost_usd"], first), "{done}");
    rig.mock.push(Reply::text(["more"]));
    let events = rig.turn(&session, "more").await;
    let done = last(&events);
    assert_eq!(done["session_usage_detail"], detail(42, 0, 0, 19, 0));
    let second = (11.0 + 7.0 * 4.0) / 1e6;
    assert!(close(&done["cost_usd"], second), "{done}");
    assert!(close(&done["session_cost_usd"], first + second), "{done}");
    assert_eq!(rig.mock.request_count(), 3);

    // session.clear starts the session's sums again.
    rig.server
        .send(json!({"type": "session.clear", "request_id": "c", "session_id": session}))
        .await;
    rig.server.expect("session.cleared").await;
    rig.mock.push(Reply::text(["fresh"]));
    let events = rig.turn(&session, "fresh").await;
    assert_eq!(
        last(&events)["session_usage_detail"],
        detail(11, 0, 0, 7, 0)
    );
}

#[tokio::test]
async fn an_old_client_sees_turn_completed_as_the_document_writes_it() {
    let extra =
        "[pricing.\"mock-model\"]\ninput = 1.0\noutput = 4.0\nmax_session_cost_usd = 0.001\n";
    // (the budget key above is inside the pricing table: unknown there.)
    let home_err = {
        let home = TestHome::new("http://127.0.0.1:9/v1", extra);
        let out = tokio::process::Command::new(BIN)
            .arg("--stdio")
            .env("SCV_HOME", home.path())
            .env(
                "CLAUDE_CONFIG_DIR",
                scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
            )
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    assert!(
        home_err.contains(
            "config.toml: line 6: pricing.\"mock-model\": unknown field `max_session_cost_usd`"
        ),
        "{home_err}"
    );
    let mut rig = rig(
        "[pricing.\"mock-model\"]\ninput = 1.0\noutput = 4.0\n",
        None,
    )
    .await;
    let session = session_on(&mut rig, None).await;
    rig.mock.push(Reply::text(["hi"]));
    let events = rig.turn(&session, "hi").await;
    let done = last(&events);
    let mut keys: Vec<&str> = done
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "request_id",
            "seq",
            "session_id",
            "steps",
            "turn_id",
            "type",
            "usage"
        ],
        "{done}"
    );
}

#[tokio::test]
async fn a_malformed_price_or_budget_is_a_config_error_naming_file_and_line() {
    for (extra, expected) in [
        (
            "[pricing.\"mock-model\"]\ninput = -1\noutput = 2\n",
            "config.toml: line 3: pricing.\"mock-model\".input must be a number of USD per million tokens, 0 or more (got -1)",
        ),
        (
            "[pricing.\"mock-model\"]\ninput = 1\n",
            "config.toml: line 3: missing field `output`",
        ),
        (
            "[pricing.\"mock-model\"]\ninput = \"cheap\"\noutput = 1\n",
            "config.toml: line 4: pricing.\"mock-model\": invalid type",
        ),
        (
            "max_session_cost_usd = 0\n",
            "config.toml: line 3: max_session_cost_usd must be a positive number of USD (got 0)",
        ),
        (
            "max_turn_tokens = 0\n",
            "config.toml: line 3: max_turn_tokens must be at least 1",
        ),
    ] {
        let home = TestHome::new("http://127.0.0.1:9/v1", extra);
        let out = tokio::process::Command::new(BIN)
            .arg("--stdio")
            .env("SCV_HOME", home.path())
            .env("CLAUDE_CONFIG_DIR", scv_test_support::client::claude_dir(std::path::Path::new(&home.path())))
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{extra}: {stderr}");
    }
}

/// $1,000 per million output tokens ($0.001 a token), free input: what a
/// request can cost is its `max_output_tokens` (100): $0.10.
const PRICEY: &str = "max_output_tokens = 100\n";
const PRICEY_TABLE: &str = "[pricing.\"mock-model\"]\ninput = 0\noutput = 1000\n";

/// A reply that reports 450 output tokens: $0.45.
fn costly_reply() -> Reply {
    chat_with_usage(
        "spent",
        &[json!({"prompt_tokens": 10, "completion_tokens": 450})],
    )
}

#[tokio::test]
async fn the_session_budget_stops_the_next_request_before_it_is_sent() {
    let extra = format!("{PRICEY}max_session_cost_usd = 0.5\n{PRICEY_TABLE}");
    let mut rig = rig(&extra, usage_cap()).await;
    let session = session_on(&mut rig, None).await;
    rig.mock.push(costly_reply());
    let events = rig.turn(&session, "spend").await;
    // $0.45 of $0.50: past 80 %, told once, before the turn ends.
    let warnings: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "budget.warning")
        .collect();
    assert_eq!(warnings.len(), 1, "{events:?}");
    assert_eq!(warnings[0]["budget"], "max_session_cost_usd");
    assert!(close(&warnings[0]["limit"], 0.5));
    assert!(close(&warnings[0]["spent"], 0.45), "{}", warnings[0]);
    assert_eq!(last(&events)["type"], "turn.completed");
    assert_seq_contiguous(&events);
    assert_eq!(rig.mock.request_count(), 1);

    // $0.45 spent + up to $0.10 > $0.50: not sent.
    rig.mock.push(Reply::text(["never"]));
    let events = rig.turn(&session, "more").await;
    let failed = last(&events);
    assert_eq!(failed["type"], "turn.failed", "{failed}");
    assert_eq!(failed["code"], "step_limit");
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.starts_with("budget reached: spent $0.4500 of $0.5000 (max_session_cost_usd, this session); the next request needs at least $0.1000 (100 output tokens) and was not sent; raise it for this session with /budget AMOUNT, or max_session_cost_usd in config.toml"),
        "{message}"
    );
    assert_eq!(rig.mock.request_count(), 1, "nothing was sent");

    // session.configure raises the session's budget for the rest of it.
    rig.server
        .send(
            json!({"type": "session.configure", "request_id": "b", "session_id": session,
            "max_session_cost_usd": 2.0}),
        )
        .await;
    let configured = rig.server.expect("session.configured").await;
    assert_eq!(configured["max_session_cost_usd"], 2.0);
    assert_eq!(configured["model"], "mock-model");
    let events = rig.turn(&session, "more").await;
    assert_eq!(last(&events)["type"], "turn.completed", "{events:?}");
    assert_eq!(rig.mock.request_count(), 2);
    assert!(
        !events.iter().any(|e| e["type"] == "budget.warning"),
        "below 80 % of the new budget: {events:?}"
    );
}

/// A client that asked for capability `budgets` gets the refusal as its
/// own code, `budget_exceeded`; and a budget edited in config.toml
/// reaches the session already open, from its next turn, with no
/// `session.configure`.
#[tokio::test]
async fn a_budget_edited_in_config_reaches_the_open_session_with_its_own_code() {
    let config = |budget: &str| format!("{PRICEY}max_session_cost_usd = {budget}\n{PRICEY_TABLE}");
    let caps = json!({"usage": true, "budgets": true});
    let mut rig = rig(&config("0.5"), Some(caps)).await;
    let session = session_on(&mut rig, None).await;
    rig.mock.push(costly_reply());
    let events = rig.turn(&session, "spend").await;
    assert_eq!(last(&events)["type"], "turn.completed", "{events:?}");
    assert!(events.iter().any(|e| e["type"] == "budget.warning"));

    rig.mock.push(Reply::text(["never"]));
    let events = rig.turn(&session, "more").await;
    let failed = last(&events);
    assert_eq!(failed["type"], "turn.failed", "{failed}");
    assert_eq!(failed["code"], "budget_exceeded", "{failed}");
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .starts_with("budget reached: spent $0.4500 of $0.5000"),
        "{failed}"
    );
    assert_eq!(rig.mock.request_count(), 1, "nothing was sent");

    // The user raises it in config.toml: the open session takes it.
    let mut text = std::fs::read_to_string(rig.home.path().join("config.toml")).unwrap();
    text = text.replace(&config("0.5"), &config("2.0"));
    assert!(text.contains("max_session_cost_usd = 2.0"), "{text}");
    std::fs::write(rig.home.path().join("config.toml"), text).unwrap();
    rig.mock.push(Reply::text(["now it fits"]));
    let events = rig.turn(&session, "more").await;
    assert_eq!(last(&events)["type"], "turn.completed", "{events:?}");
    assert_eq!(rig.mock.request_count(), 2);

    // Lowered again below what is spent: refused again, its own code.
    let mut text = std::fs::read_to_string(rig.home.path().join("config.toml")).unwrap();
    text = text.replace(&config("2.0"), &config("0.25"));
    std::fs::write(rig.home.path().join("config.toml"), text).unwrap();
    let events = rig.turn(&session, "more").await;
    let failed = last(&events);
    assert_eq!(failed["code"], "budget_exceeded", "{failed}");
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.starts_with("budget reached: spent $0.45"),
        "{message}"
    );
    assert!(
        message.contains(" of $0.2500 (max_session_cost_usd"),
        "{message}"
    );
    assert_eq!(rig.mock.request_count(), 2);
}

#[tokio::test]
async fn the_daily_budget_holds_across_sessions_of_the_process() {
    let extra = format!("{PRICEY}max_daily_cost_usd = 0.5\n{PRICEY_TABLE}");
    let mut rig = rig(&extra, usage_cap()).await;
    let first = session_on(&mut rig, None).await;
    rig.mock.push(costly_reply());
    let events = rig.turn(&first, "spend").await;
    assert_eq!(last(&events)["type"], "turn.completed");
    assert!(events
        .iter()
        .any(|e| e["type"] == "budget.warning" && e["budget"] == "max_daily_cost_usd"));
    let second = session_on(&mut rig, None).await;
    rig.mock.push(Reply::text(["never"]));
    let events = rig.turn(&second, "more").await;
    let failed = last(&events);
    assert_eq!(failed["code"], "step_limit", "{failed}");
    assert!(
        failed["message"].as_str().unwrap().contains(
            "budget reached: spent $0.4500 of $0.5000 today (max_daily_cost_usd, this server, UTC day)"
        ),
        "{failed}"
    );
    assert_eq!(rig.mock.request_count(), 1);
}

#[tokio::test]
async fn the_turn_token_budget_counts_the_worst_case_before_the_first_request() {
    let mut rig = rig("max_output_tokens = 100\nmax_turn_tokens = 50\n", None).await;
    let session = session_on(&mut rig, None).await;
    rig.mock.push(Reply::text(["never"]));
    let events = rig.turn(&session, "hi").await;
    let failed = last(&events);
    assert_eq!(failed["code"], "step_limit", "{failed}");
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.starts_with("budget reached: used 0 of 50 tokens this turn (max_turn_tokens; 50 left); the next request needs"),
        "{message}"
    );
    assert_eq!(rig.mock.request_count(), 0);
}

/// The working day's case: $10 a million output tokens (free input),
/// `max_output_tokens` worth $0.064, answers of $0.04. A session budget
/// of $0.12 pays for exactly three: the third request goes with its cap
/// lowered to what is left (4,000 tokens) rather than being refused at
/// $0.08 because it "could cost up to $0.064"; the fourth is refused at
/// the budget, nothing sent. The connection and another session go on.
#[tokio::test]
async fn a_session_budget_that_pays_for_three_requests_stops_after_the_third() {
    let extra = "max_output_tokens = 6400\nmax_session_cost_usd = 0.12\n\
                 [pricing.\"mock-model\"]\ninput = 0\noutput = 10\n";
    let mut rig = rig(extra, usage_cap()).await;
    let session = session_on(&mut rig, None).await;
    for n in 1..=3 {
        rig.mock.push(chat_with_usage(
            "four cents",
            &[json!({"prompt_tokens": 900, "completion_tokens": 4000})],
        ));
        let events = rig.turn(&session, &format!("request {n}")).await;
        let done = last(&events);
        assert_eq!(done["type"], "turn.completed", "request {n}: {events:?}");
        assert!(close(&done["cost_usd"], 0.04), "{done}");
    }
    // The cap each request asked the provider for (the mock's address is
    // not OpenAI's: `max_tokens`).
    let caps: Vec<Value> = rig
        .mock
        .requests()
        .iter()
        .map(|r| r.body["max_tokens"].clone())
        .collect();
    assert_eq!(caps, [json!(6400), json!(6400), json!(4000)]);

    rig.mock.push(Reply::text(["never"]));
    let events = rig.turn(&session, "request 4").await;
    let failed = last(&events);
    assert_eq!(failed["type"], "turn.failed", "{failed}");
    assert_eq!(failed["code"], "step_limit");
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.starts_with("budget reached: spent $0.1200 of $0.1200 (max_session_cost_usd, this session); the next request needs at least $0.0102 (1024 output tokens) and was not sent;"),
        "{message}"
    );
    assert_eq!(rig.mock.request_count(), 3, "nothing was sent");

    // The refusal is the turn's: the connection goes on, and another
    // session (a budget of its own) is served in full.
    let other = session_on(&mut rig, None).await;
    rig.mock.push(Reply::text(["still here"]));
    let events = rig.turn(&other, "hello").await;
    assert_eq!(last(&events)["type"], "turn.completed", "{events:?}");
    assert_eq!(rig.mock.requests()[3].body["max_tokens"], 6400);
}

/// A budget's cap goes out on every wire, under the wire's own name:
/// with `max_turn_tokens` below `max_output_tokens`, the first request
/// asks for what the budget leaves after its prompt.
#[tokio::test]
async fn a_budgets_lowered_cap_reaches_the_request_on_every_wire() {
    let mut rig = rig(
        "max_output_tokens = 100000\nmax_turn_tokens = 60000\n",
        None,
    )
    .await;
    let wires: [(Option<&str>, Reply, &str); 3] = [
        (None, Reply::text(["chat"]), "max_tokens"),
        (
            Some("anthropic"),
            anthropic::Message::new(vec![Block::text(["anthropic"])]).reply(),
            "max_tokens",
        ),
        (
            Some("openai-responses"),
            Response::new(vec![Item::message(["responses"])]).reply(),
            "max_output_tokens",
        ),
    ];
    for (provider, reply, field) in wires {
        let session = session_on(&mut rig, provider).await;
        rig.mock.push(reply);
        let events = rig.turn(&session, "hi").await;
        assert_eq!(last(&events)["type"], "turn.completed", "{events:?}");
        let body = rig.mock.requests().last().unwrap().body.clone();
        let cap = body[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{field}: {body}"));
        assert!((1024..60_000).contains(&cap), "{provider:?}: {cap}");
    }
    assert!(
        rig.mock.violations().is_empty(),
        "{:?}",
        rig.mock.violations()
    );
}

/// The cap a budget sends never asks for more than the context leaves
/// after the prompt (a local server refuses that), and is reserved as
/// such.
#[tokio::test]
async fn the_cap_sent_leaves_the_prompt_its_room_in_the_context() {
    let mut rig = rig(
        "context_max_tokens = 8000\nmax_output_tokens = 32000\nmax_turn_tokens = 100000\n",
        None,
    )
    .await;
    let session = session_on(&mut rig, None).await;
    rig.mock.push(Reply::text(["fits"]));
    let events = rig.turn(&session, "hi").await;
    assert_eq!(last(&events)["type"], "turn.completed", "{events:?}");
    let cap = rig.mock.requests()[0].body["max_tokens"].as_u64().unwrap();
    assert!((1024..8000).contains(&cap), "{cap}");
}

#[tokio::test]
async fn a_cost_budget_on_a_model_without_a_price_sends_nothing() {
    let mut rig = rig("max_session_cost_usd = 5\n", None).await;
    let session = session_on(&mut rig, None).await;
    rig.mock.push(Reply::text(["never"]));
    let events = rig.turn(&session, "hi").await;
    let failed = last(&events);
    assert_eq!(failed["code"], "step_limit", "{failed}");
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .contains("budget max_session_cost_usd is set but model `mock-model` has no price"),
        "{failed}"
    );
    assert_eq!(rig.mock.request_count(), 0);
}

#[tokio::test]
async fn raising_a_budget_needs_the_capability_and_a_positive_amount() {
    let mut rig = rig("", None).await;
    let session = session_on(&mut rig, None).await;
    rig.server
        .send(
            json!({"type": "session.configure", "request_id": "b", "session_id": session,
            "max_session_cost_usd": 2.0}),
        )
        .await;
    rig.server.expect_error("invalid_request", "b").await;
    let mut rig = rig_with_usage().await;
    let session = session_on(&mut rig, None).await;
    rig.server
        .send(
            json!({"type": "session.configure", "request_id": "b", "session_id": session,
            "max_session_cost_usd": -1}),
        )
        .await;
    rig.server.expect_error("invalid_request", "b").await;
}

async fn rig_with_usage() -> Rig {
    rig("", usage_cap()).await
}

/// A new server process on `home`, `session` resumed on it
/// (capabilities `usage` and `sessions`; its replies consumed).
async fn resumed(home: &TestHome, session: &str) -> TestServer {
    let mut server = TestServer::spawn_with(BIN, home.path(), &[]);
    server
        .send(
            json!({"type": "initialize", "request_id": "init", "protocol_version": 2,
            "capabilities": {"usage": true, "sessions": true}}),
        )
        .await;
    server.expect("initialized").await;
    server
        .send(json!({"type": "session.resume", "request_id": "r", "session_id": session}))
        .await;
    server.expect("session.started").await;
    server.expect("queue.snapshot").await;
    server.expect("session.transcript").await;
    server
}

/// A resumed session is the same session: what it spent counts against
/// its budget, and its sums go on.
#[tokio::test]
async fn a_resumed_session_keeps_what_it_spent() {
    let extra = format!("{PRICEY}max_session_cost_usd = 0.5\n{PRICEY_TABLE}");
    let mut rig = rig(&extra, Some(json!({"usage": true, "sessions": true}))).await;
    let session = session_on(&mut rig, None).await;
    rig.mock.push(costly_reply());
    let events = rig.turn(&session, "spend").await;
    assert_eq!(last(&events)["type"], "turn.completed");
    drop(rig.server);

    let mut server = resumed(&rig.home, &session).await;
    rig.mock.push(Reply::text(["never"]));
    server.start_turn(&session, "t", "more").await;
    let events = server.until_terminal().await;
    let failed = last(&events);
    assert_eq!(failed["code"], "step_limit", "{failed}");
    assert!(
        failed["message"]
            .as_str()
            .unwrap()
            .starts_with("budget reached: spent $0.4500 of $0.5000"),
        "{failed}"
    );
    assert_eq!(rig.mock.request_count(), 1);
}

/// A budget `session.configure` raised holds for the rest of the
/// session: after a resume on another connection too.
#[tokio::test]
async fn a_raised_budget_is_kept_across_a_resume() {
    let extra = format!("{PRICEY}max_session_cost_usd = 0.5\n{PRICEY_TABLE}");
    let mut rig = rig(&extra, Some(json!({"usage": true, "sessions": true}))).await;
    let session = session_on(&mut rig, None).await;
    rig.mock.push(costly_reply());
    rig.turn(&session, "spend").await;
    rig.server
        .send(
            json!({"type": "session.configure", "request_id": "b", "session_id": session,
            "max_session_cost_usd": 2.0}),
        )
        .await;
    rig.server.expect("session.configured").await;
    drop(rig.server);

    let mut server = resumed(&rig.home, &session).await;
    // $0.45 spent + up to $0.10: over the configured $0.50, within $2.
    rig.mock.push(Reply::text(["sent"]));
    server.start_turn(&session, "t", "more").await;
    let events = server.until_terminal().await;
    assert_eq!(last(&events)["type"], "turn.completed", "{events:?}");
    assert_eq!(rig.mock.request_count(), 2);
}

/// Anthropic's `message_delta` usage is cumulative: two of them (5, then
/// the final 15 output tokens) are 15, not 20.
#[tokio::test]
async fn repeated_cumulative_message_deltas_are_not_added() {
    let mut rig = rig("", usage_cap()).await;
    let session = session_on(&mut rig, Some("anthropic")).await;
    let mut events = anthropic::Message::new(vec![Block::text(["Hello"])])
        .usage(anthropic::Usage {
            input_tokens: 25,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 1000,
            output_tokens: 15,
        })
        .delta_usage(DeltaUsage::Cumulative)
        .events();
    let at = events
        .iter()
        .position(|e| e.json().is_some_and(|j| j["type"] == "message_delta"))
        .unwrap();
    let mut early = events[at].json().unwrap();
    early["usage"]["output_tokens"] = json!(5);
    early["delta"]["stop_reason"] = Value::Null;
    events.insert(at, scv_test_support::SseEvent::typed(&early));
    rig.mock.push(Reply::sse(events, Ending::Done));
    let events = rig.turn(&session, "hi").await;
    let done = last(&events);
    assert_eq!(done["type"], "turn.completed", "{done}");
    assert_eq!(done["usage_detail"], detail(25, 1000, 0, 15, 0), "{done}");
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 1025, "output_tokens": 15})
    );
}

/// With capability `step_usage` each step's usage comes as it arrives
/// (`usage.updated`: the step's, the turn's so far, steps so far), in
/// order with the turn's events; without it, nothing new.
#[tokio::test]
async fn each_steps_usage_is_told_as_it_arrives_to_a_client_that_asked() {
    let mut new = rig("", Some(json!({"step_usage": true}))).await;
    let session = session_on(&mut new, None).await;
    new.mock.push(Reply::tool_calls(&[(
        "call_1",
        "list_dir",
        json!({"path": "."}),
    )]));
    new.mock.push(Reply::text(["done"]));
    let events = new.turn(&session, "look").await;
    common::assert_seq_contiguous(&events);
    let updates: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "usage.updated")
        .collect();
    assert_eq!(updates.len(), 2, "{events:?}");
    assert_eq!(
        updates[0]["step"],
        json!({"input_tokens": 20, "output_tokens": 5})
    );
    assert_eq!(
        updates[0]["turn"],
        json!({"input_tokens": 20, "output_tokens": 5})
    );
    assert_eq!(updates[0]["steps"], 1);
    assert_eq!(
        updates[1]["turn"],
        json!({"input_tokens": 31, "output_tokens": 12})
    );
    assert_eq!(updates[1]["steps"], 2);
    // The first comes before the tool runs.
    let at = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
    assert!(at("usage.updated") < at("tool.started"));
    assert_eq!(last(&events)["usage"], updates[1]["turn"]);

    let mut old = rig("", None).await;
    let session = session_on(&mut old, None).await;
    old.mock.push(Reply::text(["done"]));
    let events = old.turn(&session, "look").await;
    assert!(events.iter().all(|e| e["type"] != "usage.updated"));
}

/// `session.started.max_session_cost_usd` (capability `usage`): the budget
/// the session opens with — config's, or after a resume the one
/// `session.configure` gave it; a client that asked for nothing never
/// gets the field.
#[tokio::test]
async fn session_started_names_the_budget_to_a_client_that_asked() {
    let extra = format!("{PRICEY}max_session_cost_usd = 0.5\n{PRICEY_TABLE}");
    let mut rig = rig(&extra, Some(json!({"usage": true, "sessions": true}))).await;
    let workspace = rig.home.workspace();
    rig.server
        .send(json!({"type": "session.start", "request_id": "s", "cwd": workspace}))
        .await;
    let started = rig.server.expect("session.started").await;
    assert_eq!(started["max_session_cost_usd"], 0.5, "{started}");
    rig.server.expect("queue.snapshot").await;
    let session = started["session_id"].as_str().unwrap().to_string();
    rig.server
        .send(
            json!({"type": "session.configure", "request_id": "b", "session_id": session,
            "max_session_cost_usd": 2.0}),
        )
        .await;
    rig.server.expect("session.configured").await;
    drop(rig.server);

    let mut server = TestServer::spawn_with(BIN, rig.home.path(), &[]);
    server
        .send(
            json!({"type": "initialize", "request_id": "init", "protocol_version": 2,
            "capabilities": {"usage": true, "sessions": true}}),
        )
        .await;
    server.expect("initialized").await;
    server
        .send(json!({"type": "session.resume", "request_id": "r", "session_id": session}))
        .await;
    let started = server.expect("session.started").await;
    assert_eq!(started["max_session_cost_usd"], 2.0, "{started}");
    drop(server);

    let mut old = TestServer::spawn_with(BIN, rig.home.path(), &[]);
    old.initialize().await;
    old.send(json!({"type": "session.start", "request_id": "s", "cwd": workspace}))
        .await;
    let started = old.expect("session.started").await;
    assert!(started.get("max_session_cost_usd").is_none(), "{started}");
}

/// The trial's case with real prices ($3 / $15 a million tokens): a $0.25
/// budget does not refuse the first request for its 32,000-token output
/// cap (worth $0.48); the request goes with the cap lowered to what the
/// budget pays for.
#[tokio::test]
async fn a_quarter_dollar_budget_at_real_prices_sends_the_first_request() {
    let extra = "max_session_cost_usd = 0.25\n[pricing.\"mock-model\"]\ninput = 3\noutput = 15\n";
    let mut rig = rig(extra, usage_cap()).await;
    let session = session_on(&mut rig, None).await;
    rig.mock.push(chat_with_usage(
        "hello",
        &[json!({"prompt_tokens": 900, "completion_tokens": 10})],
    ));
    let events = rig.turn(&session, "hi").await;
    assert_eq!(last(&events)["type"], "turn.completed", "{events:?}");
    let cap = rig.mock.requests()[0].body["max_tokens"].as_u64().unwrap();
    // $0.25 less the prompt, at $15 a million: a little under 16,667.
    assert!((15_000..16_667).contains(&cap), "{cap}");
}
