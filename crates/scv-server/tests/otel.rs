#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! OpenTelemetry export against a real OTLP/HTTP receiver written with the
//! official `opentelemetry-proto` Python package (`tests/otel/receiver.py`,
//! decoding what SCV sent): span names, parentage and GenAI attributes;
//! contents only with `otel_log_content`; a broken collector never fails
//! a turn. The Python comes from `target/otel-venv` (`.ci/run` installs
//! it) or `SCV_OTEL_PYTHON`; without it the tests skip, saying so, unless
//! `SCV_REQUIRE_OTEL` is set (CI).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

fn python() -> Option<PathBuf> {
    let python = std::env::var_os("SCV_OTEL_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/otel-venv/bin/python3")
        });
    let works = std::process::Command::new(&python)
        .args(["-c", "import opentelemetry.proto"])
        .output()
        .is_ok_and(|out| out.status.success());
    if works {
        return Some(python);
    }
    assert!(
        std::env::var_os("SCV_REQUIRE_OTEL").is_none(),
        "SCV_REQUIRE_OTEL is set but {} cannot import opentelemetry.proto (run .ci/run)",
        python.display()
    );
    eprintln!(
        "skipped: no Python with opentelemetry-proto at {}",
        python.display()
    );
    None
}

struct Receiver {
    _child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    port: u16,
    /// Metric lines read while waiting for spans.
    metrics: Vec<Value>,
}

impl Receiver {
    async fn start(python: &Path, mode: &str) -> Receiver {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otel/receiver.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg(mode)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = lines.next_line().await.unwrap().unwrap().parse().unwrap();
        Receiver {
            _child: child,
            lines,
            port,
            metrics: Vec::new(),
        }
    }

    async fn line(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("nothing more arrived")
            .unwrap()
            .expect("the receiver ended");
        let line: Value = serde_json::from_str(&line).unwrap();
        assert!(line.get("error").is_none(), "{line}");
        line
    }

    /// The next `n` spans it decoded (bounded wait).
    async fn spans(&mut self, n: usize) -> Vec<Value> {
        let mut spans = Vec::new();
        while spans.len() < n {
            let line = self.line().await;
            if line.get("metric").is_some() {
                self.metrics.push(line);
            } else {
                spans.push(line);
            }
        }
        spans
    }

    /// The metric `name` once `done` holds for its points (cumulative:
    /// each export has the totals so far).
    async fn metric(&mut self, name: &str, done: impl Fn(&Value) -> bool) -> Value {
        loop {
            if let Some(metric) = self
                .metrics
                .iter()
                .rev()
                .find(|m| m["metric"] == name)
                .filter(|m| done(m))
            {
                return metric.clone();
            }
            let line = self.line().await;
            if line.get("metric").is_some() {
                self.metrics.push(line);
            }
        }
    }
}

async fn traced_rig(receiver_port: u16, extra: &str) -> Rig {
    let config = format!(
        "otel_endpoint = \"http://127.0.0.1:{receiver_port}\"\n{extra}\n\
         [pricing.\"mock-model\"]\ninput = 1.0\noutput = 4.0\n"
    );
    // Export soon (the SDK's own variables).
    Rig::with_env(
        &config,
        &[
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "100"),
        ],
    )
    .await
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

const PROMPT: &str = "list the secret-plans directory";

async fn tool_turn(rig: &mut Rig) -> Vec<Value> {
    let session = rig.session().await;
    rig.mock.push(Reply::tool_calls(&[(
        "call_1",
        "list_dir",
        json!({"path": "."}),
    )]));
    rig.mock.push(Reply::text(["nothing there"]));
    let events = rig.turn(&session, PROMPT).await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    events
}

#[tokio::test]
async fn a_turn_is_a_trace_with_a_span_per_request_and_tool_call() {
    let Some(python) = python() else { return };
    let mut receiver = Receiver::start(&python, "ok").await;
    let mut rig = traced_rig(receiver.port, "").await;
    tool_turn(&mut rig).await;
    let spans = receiver.spans(4).await;

    let turn = named(&spans, "invoke_agent scv");
    let chats = named(&spans, "chat mock-model");
    let tools = named(&spans, "execute_tool list_dir");
    assert_eq!(
        (turn.len(), chats.len(), tools.len()),
        (1, 2, 1),
        "{spans:#?}"
    );
    let turn = turn[0];
    assert_eq!(turn["parent_span_id"], "", "the turn is the root");
    assert_eq!(turn["service"], "scv-server");
    for child in chats.iter().chain(&tools) {
        assert_eq!(child["trace_id"], turn["trace_id"], "{child}");
        assert_eq!(child["parent_span_id"], turn["span_id"], "{child}");
    }
    let a = &turn["attributes"];
    assert_eq!(a["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(a["gen_ai.request.model"], "mock-model");
    assert_eq!(a["gen_ai.provider.name"], "openai");
    // The mock: 20 in / 5 out for the tool call, 11 / 7 for the answer.
    assert_eq!(a["gen_ai.usage.input_tokens"], 31);
    assert_eq!(a["gen_ai.usage.output_tokens"], 12);
    assert!(
        (a["scv.cost_usd"].as_f64().unwrap() - 79e-6).abs() < 1e-12,
        "{a}"
    );
    let mut by_reason: Vec<(String, i64, i64)> = chats
        .iter()
        .map(|c| {
            let a = &c["attributes"];
            assert_eq!(a["gen_ai.operation.name"], "chat");
            assert_eq!(a["gen_ai.request.max_tokens"], 32000);
            assert_eq!(c["kind"], 3, "SPAN_KIND_CLIENT");
            (
                a["gen_ai.response.finish_reasons"][0]
                    .as_str()
                    .unwrap()
                    .to_string(),
                a["gen_ai.usage.input_tokens"].as_i64().unwrap(),
                a["gen_ai.usage.output_tokens"].as_i64().unwrap(),
            )
        })
        .collect();
    by_reason.sort();
    assert_eq!(
        by_reason,
        [("stop".into(), 11, 7), ("tool_calls".into(), 20, 5)]
    );
    let t = &tools[0]["attributes"];
    assert_eq!(t["gen_ai.operation.name"], "execute_tool");
    assert_eq!(t["gen_ai.tool.name"], "list_dir");
    assert_eq!(t["gen_ai.tool.call.id"], "call_1");

    // The counters: tokens per request by type, and the cost.
    let point = |m: &Value, kind: &str| -> Option<(f64, u64)> {
        m["points"]
            .as_array()?
            .iter()
            .find(|p| p["attributes"]["gen_ai.token.type"] == kind)
            .map(|p| (p["sum"].as_f64().unwrap(), p["count"].as_u64().unwrap()))
    };
    let tokens = receiver
        .metric("gen_ai.client.token.usage", |m| {
            point(m, "input") == Some((31.0, 2)) && point(m, "output") == Some((12.0, 2))
        })
        .await;
    assert_eq!(tokens["unit"], "{token}");
    let points = tokens["points"].as_array().unwrap();
    assert!(points
        .iter()
        .all(|p| p["attributes"]["gen_ai.request.model"] == "mock-model"));
    let cost = receiver
        .metric("scv.cost", |m| {
            m["points"][0]["value"]
                .as_f64()
                .is_some_and(|v| (v - 79e-6).abs() < 1e-12)
        })
        .await;
    assert_eq!(cost["unit"], "USD");

    // No content without otel_log_content: not the prompt, the answer,
    // the arguments or the result.
    for span in &spans {
        let text = span.to_string();
        for secret in [
            "secret-plans",
            "nothing there",
            "\"path\"",
            "gen_ai.input.messages",
        ] {
            assert!(!text.contains(secret), "{secret} exported: {span}");
        }
    }
}

#[tokio::test]
async fn contents_are_exported_only_with_otel_log_content() {
    let Some(python) = python() else { return };
    let mut receiver = Receiver::start(&python, "ok").await;
    let mut rig = traced_rig(receiver.port, "otel_log_content = true").await;
    tool_turn(&mut rig).await;
    let spans = receiver.spans(4).await;
    let turn = named(&spans, "invoke_agent scv")[0];
    let input = turn["attributes"]["gen_ai.input.messages"]
        .as_str()
        .unwrap();
    let input: Value = serde_json::from_str(input).unwrap();
    assert_eq!(input[0]["role"], "user");
    assert_eq!(input[0]["parts"][0]["content"], PROMPT);
    let answered: Vec<String> = named(&spans, "chat mock-model")
        .iter()
        .filter_map(|c| c["attributes"]["gen_ai.output.messages"].as_str())
        .map(String::from)
        .collect();
    assert!(
        answered.iter().any(|m| m.contains("nothing there")),
        "{answered:?}"
    );
    let tool = &named(&spans, "execute_tool list_dir")[0]["attributes"];
    assert_eq!(tool["gen_ai.tool.call.arguments"], "{\"path\":\".\"}");
    assert!(tool["gen_ai.tool.call.result"].is_string(), "{tool}");
}

#[tokio::test]
async fn a_broken_or_absent_collector_never_fails_a_turn() {
    let Some(python) = python() else { return };
    let receiver = Receiver::start(&python, "fail").await;
    for port in [receiver.port, 9] {
        let mut rig = traced_rig(port, "").await;
        for _ in 0..3 {
            tool_turn(&mut rig).await;
        }
        assert_eq!(rig.mock.request_count(), 6);
    }
}

/// `[mcp_servers.meta]`: the Python SDK server that answers with the
/// `_meta` its call carried (`tests/mcp/meta_server.py`).
fn meta_server_table(python: &Path) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/meta_server.py");
    format!(
        "[mcp_servers.meta]\ncommand = {}\nargs = [{}]\nauto_approve = true\n",
        serde_json::to_string(&python.display().to_string()).unwrap(),
        serde_json::to_string(&script.display().to_string()).unwrap(),
    )
}

/// Calls the meta server's tool in a turn (once it is offered); the
/// `_meta` the server got.
async fn meta_call(rig: &mut Rig) -> Value {
    let session = rig.session().await;
    for _ in 0..80 {
        rig.mock.push(Reply::text(["hello"]));
        rig.turn(&session, "are the tools there").await;
        if offered(&rig.mock, rig.mock.requests().len() - 1)
            .iter()
            .any(|t| t == "mcp__meta__meta")
        {
            rig.mock
                .push(Reply::tool_calls(&[("m", "mcp__meta__meta", json!({}))]));
            rig.mock.push(Reply::text(["done"]));
            let events = rig.turn(&session, "what meta").await;
            let done = completed(&events);
            assert_eq!(done.len(), 1, "{events:?}");
            assert!(done[0].1, "{events:?}");
            return serde_json::from_str(&done[0].2).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the meta server's tool was never offered");
}

/// With traces on, an MCP call carries its `execute_tool` span as
/// `_meta.traceparent` (W3C Trace Context, as MCP's SEP-414 puts it), so
/// the server's own spans join the turn's trace; with traces off it
/// carries none.
#[tokio::test]
async fn an_mcp_call_carries_its_span_as_traceparent_when_traces_are_on() {
    let Some(python) = python() else { return };
    let Some(mcp_python) = scv_test_support::mcp_python::python() else {
        return;
    };
    let mut receiver = Receiver::start(&python, "ok").await;
    let mut rig = traced_rig(receiver.port, &meta_server_table(&mcp_python)).await;
    let meta = meta_call(&mut rig).await;
    let traceparent = meta["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("{meta}"));
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    assert_eq!((parts[0], parts[3]), ("00", "01"), "{traceparent}");
    let span = loop {
        let span = receiver.spans(1).await.remove(0);
        if span["name"] == "execute_tool mcp__meta__meta" {
            break span;
        }
    };
    assert_eq!(parts[1], span["trace_id"], "{span}");
    assert_eq!(parts[2], span["span_id"], "{span}");

    let mut untraced = Rig::new(&meta_server_table(&mcp_python)).await;
    let meta = meta_call(&mut untraced).await;
    assert!(meta.get("traceparent").is_none(), "{meta}");
}
