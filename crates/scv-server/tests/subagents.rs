#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Subagents end to end through the real binary and a scripted provider
//! (OpenAI Chat Completions shapes, as the other tests): a `task` call
//! runs a child session whose answer is the call's result; a client with
//! capability `subagents` sees the child's events (own session id and
//! seq, `parent`), an old client only the call; calls of one response run
//! together up to `max_subagents`; approvals, cancels, caps, budgets and
//! plan mode reach children; and every way a child could get more than
//! its parent is tried.
//!
//! Each child's requests are told apart from the parent's by their prompt
//! (`push_matching`): the parent's requests never carry a child's prompt
//! until the children are done.

mod common;
use common::*;

fn task(id: &str, description: &str, prompt: &str) -> (String, String, Value) {
    (
        id.to_string(),
        "task".to_string(),
        json!({"description": description, "prompt": prompt}),
    )
}

fn calls(calls: &[(String, String, Value)]) -> Reply {
    let borrowed: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, name, args)| (id.as_str(), name.as_str(), args.clone()))
        .collect();
    Reply::tool_calls(&borrowed)
}

/// A parent whose `task` call (`c1`, prompt `outer`) starts a child whose
/// own `task` call (`c2`, prompt `inner`) starts a grandchild that runs
/// one `bash` (`k`, writing `deep.txt`); then each ends in words.
fn script_nested(mock: &MockProvider, outer: &str, inner: &str) {
    mock.push(calls(&[task("c1", "outer", outer)]));
    mock.push_matching(
        outer,
        Reply::tool_calls(&[(
            "c2",
            "task",
            json!({"description": "inner", "prompt": inner}),
        )]),
    );
    mock.push_matching(
        inner,
        Reply::tool_calls(&[("k", "bash", json!({"command": "echo deep > deep.txt"}))]),
    );
    mock.push_matching(inner, Reply::text(["inner done"]));
    mock.push_matching(outer, Reply::text(["outer done"]));
    mock.push(Reply::text(["all done"]));
}

fn of_session<'a>(events: &'a [Value], session: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["session_id"] == session)
        .collect()
}

fn completed<'a>(events: &'a [Value], call_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["call_id"] == call_id && e["parent"].is_null())
        .unwrap_or_else(|| panic!("no tool.completed for {call_id}: {events:#?}"))
}

fn position(events: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    events
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no such event in {events:#?}"))
}

/// The request whose body carries `needle`.
fn request_with(mock: &MockProvider, needle: &str) -> Value {
    mock.requests()
        .into_iter()
        .find(|r| r.body.to_string().contains(needle))
        .unwrap_or_else(|| panic!("no request carries {needle}"))
        .body
}

fn tools_of(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_task_call_runs_a_child_whose_answer_is_the_result() {
    let mut rig = Rig::with_capabilities("", json!({"subagents": true})).await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(calls(&[task(
        "c1",
        "find the auth code",
        "CHILD-ONE: find where auth lives",
    )]));
    rig.mock
        .push_matching("CHILD-ONE", Reply::text(["Auth lives in ", "src/auth.rs."]));
    rig.mock.push(Reply::text(["The subagent found it."]));
    let events = rig.turn(&session, "explore auth").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );

    let started = events
        .iter()
        .find(|e| e["type"] == "subagent.started")
        .expect("subagent.started");
    let child = started["session_id"].as_str().unwrap().to_string();
    assert_ne!(child, session);
    assert_eq!(
        started["parent"],
        json!({"session_id": session, "turn_id": events.last().unwrap()["turn_id"], "call_id": "c1"})
    );
    assert_eq!(started["description"], "find the auth code");
    assert_eq!(started["depth"], 1);
    assert!(started.get("agent").is_none());
    // Every event of the child: its own id, its own contiguous seq from 0,
    // the parent on the envelope, the parent turn's request id.
    let child_events = of_session(&events, &child);
    for (n, event) in child_events.iter().enumerate() {
        assert_eq!(event["seq"], n as u64, "{event}");
        assert_eq!(event["parent"]["call_id"], "c1", "{event}");
        assert_eq!(event["request_id"], "t", "{event}");
    }
    let kinds: Vec<&str> = child_events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"subagent.started"));
    assert_eq!(kinds.get(1), Some(&"turn.started"));
    assert_eq!(kinds.last(), Some(&"turn.completed"));
    // The parent's own seq never counts the child's events.
    let parent_seqs: Vec<u64> = of_session(&events, &session)
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert!(
        parent_seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "{parent_seqs:?}"
    );
    // Inside the call: after its tool.started, before its tool.completed.
    let call_started = position(&events, |e| {
        e["type"] == "tool.started" && e["call_id"] == "c1"
    });
    let child_first = position(&events, |e| e["type"] == "subagent.started");
    let child_last = position(&events, |e| {
        e["type"] == "turn.completed" && e["session_id"] == child
    });
    let call_done = position(&events, |e| {
        e["type"] == "tool.completed" && e["call_id"] == "c1" && e["parent"].is_null()
    });
    assert!(call_started < child_first && child_last < call_done);

    let result = completed(&events, "c1");
    assert_eq!(result["success"], true);
    let output = result["output"].as_str().unwrap();
    assert!(output.starts_with("Auth lives in src/auth.rs."), "{output}");
    assert!(
        output.contains(&child),
        "the transcript is addressable: {output}"
    );
    // The child's request: the subagent role in its system prompt, the
    // task as its only user message, no `task` tool at depth 1.
    let request = request_with(&rig.mock, "CHILD-ONE");
    let system = request["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("You are a subagent"), "{system}");
    assert!(!request.to_string().contains("explore auth"));
    let tools = tools_of(&request);
    assert!(tools.contains(&"read_file".to_string()), "{tools:?}");
    assert!(!tools.contains(&"task".to_string()), "{tools:?}");
    assert!(tools_of(&rig.mock.requests()[0].body).contains(&"task".to_string()));
    // Usage: the child's own on its turn.completed, summed into the
    // parent's (parent: 20+5 and 11+7; child: 11+7).
    let child_done = child_events.last().unwrap();
    assert_eq!(
        child_done["usage"],
        json!({"input_tokens": 11, "output_tokens": 7})
    );
    assert_eq!(
        events.last().unwrap()["usage"],
        json!({"input_tokens": 42, "output_tokens": 19})
    );
}

#[tokio::test]
async fn an_old_client_sees_only_the_task_call() {
    let mut rig = Rig::with_capabilities("", json!({})).await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock
        .push(calls(&[task("c1", "look", "CHILD-OLD: look around")]));
    rig.mock
        .push_matching("CHILD-OLD", Reply::text(["Nothing here."]));
    rig.mock.push(Reply::text(["Done."]));
    let events = rig.turn(&session, "go").await;
    assert!(
        events.iter().all(|e| e["session_id"] == session),
        "{events:#?}"
    );
    assert!(events.iter().all(|e| e.get("parent").is_none()));
    assert_eq!(
        types(&events),
        [
            "turn.started",
            "assistant.completed",
            "tool.proposed",
            "tool.started",
            "tool.completed",
            "assistant.delta",
            "assistant.completed",
            "turn.completed"
        ]
    );
    assert!(completed(&events, "c1")["output"]
        .as_str()
        .unwrap()
        .starts_with("Nothing here."));
}

/// Three calls, two slots: two children start before either ends, the
/// third only once one has ended; results go back in call order.
#[tokio::test]
async fn task_calls_run_together_up_to_max_subagents() {
    let mut rig = Rig::with_capabilities("max_subagents = 2", json!({"subagents": true})).await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(calls(&[
        task("a", "a", "CHILD-A"),
        task("b", "b", "CHILD-B"),
        task("c", "c", "CHILD-C"),
    ]));
    let slow =
        |text: &str| Reply::text([text, " done"]).drip(std::time::Duration::from_millis(150));
    rig.mock.push_matching("CHILD-A", slow("A"));
    rig.mock.push_matching("CHILD-B", slow("B"));
    rig.mock.push_matching("CHILD-C", slow("C"));
    rig.mock.push(Reply::text(["All three."]));
    let events = rig.turn(&session, "three at once").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );
    let starts: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "subagent.started")
        .map(|(n, _)| n)
        .collect();
    let ends: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["type"] == "turn.completed" && e.get("parent").is_some())
        .map(|(n, _)| n)
        .collect();
    assert_eq!((starts.len(), ends.len()), (3, 3));
    assert!(starts[1] < ends[0], "two ran at once: {starts:?} {ends:?}");
    assert!(
        starts[2] > ends[0],
        "the third waited for a slot: {starts:?} {ends:?}"
    );
    let last = rig.mock.requests().last().unwrap().body.clone();
    let results: Vec<Value> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect();
    let order: Vec<&str> = results
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["a", "b", "c"]);
    for (m, letter) in results.iter().zip(["A", "B", "C"]) {
        assert!(m["content"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{letter} done")));
    }
}

/// A child's `bash` asks the same client; answered with the child's id.
#[tokio::test]
async fn a_child_approval_reaches_the_client_and_is_answered_for_the_child() {
    let mut rig = Rig::with_capabilities("", json!({"subagents": true})).await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock
        .push(calls(&[task("c1", "make a file", "CHILD-BASH")]));
    rig.mock.push_matching(
        "CHILD-BASH",
        Reply::tool_calls(&[("k1", "bash", json!({"command": "echo made > made.txt"}))]),
    );
    rig.mock
        .push_matching("CHILD-BASH", Reply::text(["Made it."]));
    rig.mock.push(Reply::text(["ok"]));
    rig.server.start_turn(&session, "t", "go").await;
    let mut events = rig.server.until("approval.requested").await;
    let asked = events.last().unwrap().clone();
    let child = asked["session_id"].as_str().unwrap().to_string();
    assert_ne!(child, session);
    assert_eq!(asked["call_id"], "k1");
    assert_eq!(asked["name"], "bash");
    assert_eq!(asked["parent"]["call_id"], "c1");
    // An unknown approval id for the child is refused by name.
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"x","session_id": child,
                     "approval_id":"nope","approved":true}),
        )
        .await;
    rig.server.expect_error("approval_not_found", "x").await;
    // Any other message naming the child is refused.
    rig.server
        .send(json!({"type":"turn.start","request_id":"y","session_id": child,"prompt":"hi"}))
        .await;
    let refused = rig.server.expect_error("invalid_request", "y").await;
    assert!(
        refused["message"].as_str().unwrap().contains("subagent"),
        "{refused}"
    );
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"r","session_id": child,
                     "approval_id": asked["approval_id"],"approved":true}),
        )
        .await;
    events.extend(rig.server.until_terminal().await);
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );
    assert!(rig.home.workspace().join("made.txt").exists());
    assert_eq!(completed(&events, "c1")["success"], true);
}

/// Without `subagents` the child's approval is asked as the parent's, on
/// the `task` call, saying whose it is; answered as any other.
#[tokio::test]
async fn an_old_client_is_asked_for_a_child_approval_on_the_task_call() {
    let mut rig = Rig::with_capabilities("", json!({})).await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock
        .push(calls(&[task("c1", "make a file", "CHILD-OLD-BASH")]));
    rig.mock.push_matching(
        "CHILD-OLD-BASH",
        Reply::tool_calls(&[("k1", "bash", json!({"command": "echo x > denied.txt"}))]),
    );
    rig.mock
        .push_matching("CHILD-OLD-BASH", Reply::text(["It was denied."]));
    rig.mock.push(Reply::text(["ok"]));
    rig.server.start_turn(&session, "t", "go").await;
    let mut events = rig.server.until("approval.requested").await;
    let asked = events.last().unwrap().clone();
    assert_eq!(asked["session_id"], session.as_str());
    assert_eq!(asked["call_id"], "c1");
    assert_eq!(asked["name"], "bash");
    assert!(
        asked["summary"]
            .as_str()
            .unwrap()
            .starts_with("subagent «make a file»: "),
        "{asked}"
    );
    assert!(asked.get("parent").is_none());
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"r","session_id": session,
                     "approval_id": asked["approval_id"],"approved":false}),
        )
        .await;
    events.extend(rig.server.until_terminal().await);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(!rig.home.workspace().join("denied.txt").exists());
    let denied = request_with(&rig.mock, "It was denied").to_string();
    assert!(denied.contains("CHILD-OLD-BASH"));
    // The child's model read the denial.
    let child_second = rig
        .mock
        .requests()
        .into_iter()
        .filter(|r| r.body.to_string().contains("CHILD-OLD-BASH"))
        .nth(1)
        .unwrap();
    assert!(child_second
        .body
        .to_string()
        .contains("denied this tool call"));
}

/// Cancelling the parent turn cancels the child; the child's terminal
/// event comes before the parent's.
#[tokio::test]
async fn cancelling_the_parent_cancels_every_child_first() {
    let mut rig = Rig::with_capabilities("", json!({"subagents": true})).await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(calls(&[
        task("a", "a", "CHILD-STALL-A"),
        task("b", "b", "CHILD-STALL-B"),
    ]));
    for needle in ["CHILD-STALL-A", "CHILD-STALL-B"] {
        rig.mock
            .push_matching(needle, Reply::text(["thinking"]).then(2, Ending::Stall));
    }
    rig.server.start_turn(&session, "t", "go").await;
    let mut events = rig.server.until("turn.started").await;
    let turn_id = events.last().unwrap()["turn_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Both children are streaming.
    let mut deltas = 0;
    while deltas < 2 {
        let event = rig.server.next().await;
        if event["type"] == "assistant.delta" && event.get("parent").is_some() {
            deltas += 1;
        }
        events.push(event);
    }
    rig.server
        .send(
            json!({"type":"turn.cancel","request_id":"c","session_id": session,"turn_id": turn_id}),
        )
        .await;
    events.extend(rig.server.until_terminal().await);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn.cancelled");
    assert_eq!(last["session_id"], session.as_str());
    let child_ends: Vec<&Value> = events
        .iter()
        .filter(|e| e.get("parent").is_some() && e["type"] == "turn.cancelled")
        .collect();
    assert_eq!(child_ends.len(), 2, "{events:#?}");
    assert!(
        rig.mock.wait_dropped(2).await,
        "both children's streams were dropped"
    );
}

/// `turn.cancel` naming a child stops that child alone: its call fails,
/// the parent turn goes on.
#[tokio::test]
async fn cancelling_one_child_fails_its_call_and_the_parent_goes_on() {
    let mut rig = Rig::with_capabilities("", json!({"subagents": true})).await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(calls(&[task("a", "a", "CHILD-ALONE")]));
    rig.mock
        .push_matching("CHILD-ALONE", Reply::text(["hm"]).then(2, Ending::Stall));
    rig.mock.push(Reply::text(["Went on without it."]));
    rig.server.start_turn(&session, "t", "go").await;
    let mut events = rig.server.until("subagent.started").await;
    let child = events.last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let child_turn = rig.server.until("turn.started").await;
    let child_turn = child_turn.last().unwrap().clone();
    assert_eq!(child_turn["session_id"], child.as_str());
    // Its stream has begun: cancelled before its request went out, the
    // child would leave its reply queued for the parent's next request
    // (which names CHILD-ALONE too), and that would stall.
    rig.server.until("assistant.delta").await;
    rig.server
        .send(json!({"type":"turn.cancel","request_id":"x","session_id": child,"turn_id":"other"}))
        .await;
    rig.server.expect_error("turn_not_found", "x").await;
    rig.server
        .send(
            json!({"type":"turn.cancel","request_id":"c","session_id": child,
                     "turn_id": child_turn["turn_id"]}),
        )
        .await;
    events.extend(rig.server.until_terminal().await);
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );
    let result = completed(&events, "a");
    assert_eq!(result["success"], false);
    assert!(result["output"]
        .as_str()
        .unwrap()
        .contains("cancelled by the user"));
}

/// Caps end a child as a failed call the model reads, never a failed
/// parent turn: the wall clock, and the step cap.
#[tokio::test]
async fn a_child_that_never_finishes_is_ended_by_its_caps() {
    let mut rig = Rig::with_capabilities(
        "subagent_timeout_ms = 400\nsubagent_max_steps = 1",
        json!({"subagents": true}),
    )
    .await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(calls(&[
        task("slow", "s", "CHILD-FOREVER"),
        task("busy", "b", "CHILD-BUSY"),
    ]));
    rig.mock.push_matching(
        "CHILD-FOREVER",
        Reply::text(["never"]).then(2, Ending::Stall),
    );
    rig.mock.push_matching(
        "CHILD-BUSY",
        Reply::tool_calls(&[("r", "list_dir", json!({"path": "."}))]),
    );
    rig.mock.push(Reply::text(["Both failed."]));
    let events = rig.turn(&session, "go").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );
    let slow = completed(&events, "slow");
    assert_eq!(slow["success"], false);
    assert!(
        slow["output"]
            .as_str()
            .unwrap()
            .contains("time limit (subagent_timeout_ms = 400)"),
        "{slow}"
    );
    let busy = completed(&events, "busy");
    assert_eq!(busy["success"], false);
    assert!(
        busy["output"].as_str().unwrap().contains("step_limit"),
        "{busy}"
    );
    let failed: Vec<&Value> = events
        .iter()
        .filter(|e| e.get("parent").is_some() && e["type"] == "turn.failed")
        .collect();
    assert_eq!(failed.len(), 2);
    assert!(failed.iter().all(|e| e["code"] == "step_limit"));
}

#[tokio::test]
async fn bad_task_calls_are_tool_errors_before_anything_starts() {
    let mut rig = Rig::with_capabilities("", json!({"subagents": true})).await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(Reply::tool_calls(&[
        ("m", "task", json!({"prompt": "no description"})),
        ("e", "task", json!({"description": "d", "prompt": "  "})),
        (
            "u",
            "task",
            json!({"description": "d", "prompt": "p", "agent": "nobody"}),
        ),
    ]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(!types(&events).contains(&"subagent.started"));
    let output = |id: &str| {
        completed(&events, id)["output"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(output("m").contains("description"), "{}", output("m"));
    assert_eq!(
        output("e"),
        "error: `prompt` is empty; give the subagent a prompt"
    );
    assert!(
        output("u").contains("no subagent definition named `nobody`"),
        "{}",
        output("u")
    );
    assert_eq!(rig.mock.request_count(), 2);
}

/// Definitions from the workspace: offered by name in the tool's
/// description, their tools and body applied; malformed ones and unknown
/// models skipped with a diagnostic; one naming tools SCV lacks loads
/// with the tools it has, and the diagnostic names those dropped.
#[tokio::test]
async fn definitions_narrow_a_child_and_bad_ones_are_skipped_with_a_reason() {
    let mut rig = Rig::with_capabilities("", json!({"subagents": true, "commands": true})).await;
    let agents = rig.home.workspace().join(".scv/agents");
    std::fs::create_dir_all(&agents).unwrap();
    let write = |name: &str, text: &str| std::fs::write(agents.join(name), text).unwrap();
    write(
        "explore.md",
        "---\nname: explore\ndescription: Reads code and reports\ntools: Read, Grep, Glob\n---\nEXPLORER-BODY: only read.\n",
    );
    write(
        "web.md",
        "---\nname: web\ndescription: d\ntools: WebSearch, Read\n---\nbody\n",
    );
    write(
        "odd-model.md",
        "---\nname: odd-model\ndescription: d\nmodel: gpt-99-imaginary\n---\nbody\n",
    );
    write(
        "broken.md",
        "---\nname: broken\nthis line is no key\n---\nbody\n",
    );
    let (started, session) = rig.start(json!({})).await;
    let diagnostics = started["command_diagnostics"].to_string();
    assert!(
        diagnostics.contains("web.md") && diagnostics.contains("(WebSearch); it runs without them"),
        "{diagnostics}"
    );
    assert!(
        diagnostics.contains("odd-model.md") && diagnostics.contains("gpt-99-imaginary"),
        "{diagnostics}"
    );
    assert!(diagnostics.contains("broken.md:3"), "{diagnostics}");
    rig.mock.push(Reply::tool_calls(&[
        (
            "x",
            "task",
            json!({"description": "read", "prompt": "CHILD-EXPLORE", "agent": "explore"}),
        ),
        (
            "w",
            "task",
            json!({"description": "web", "prompt": "CHILD-WEB", "agent": "web"}),
        ),
    ]));
    rig.mock
        .push_matching("CHILD-EXPLORE", Reply::text(["Read it."]));
    rig.mock
        .push_matching("CHILD-WEB", Reply::text(["Fetched nothing."]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    let first = &rig.mock.requests()[0].body;
    let task_tool = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap();
    let description = task_tool["function"]["description"].as_str().unwrap();
    assert!(
        description.contains("- explore: Reads code and reports"),
        "{description}"
    );
    assert!(description.contains("- web: d"), "{description}");
    let child = request_with(&rig.mock, "CHILD-EXPLORE");
    let mut tools = tools_of(&child);
    tools.sort();
    assert_eq!(tools, ["list_dir", "read_file", "search"]);
    assert!(child["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("EXPLORER-BODY"));
    // Both children started (together, in either order).
    let mut agents: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "subagent.started")
        .map(|e| e["agent"].as_str().unwrap())
        .collect();
    agents.sort();
    assert_eq!(agents, ["explore", "web"]);
    assert_eq!(
        tools_of(&request_with(&rig.mock, "CHILD-WEB")),
        ["read_file"]
    );
    assert!(completed(&events, "w")["output"]
        .as_str()
        .unwrap()
        .contains("Fetched nothing."));
}

/// Plan mode reaches children: a definition asking for a write tool fails
/// by name, a general child is offered none, and a write it sends anyway
/// is refused. A session without tools has no `task` tool at all.
#[tokio::test]
async fn a_child_is_never_more_than_its_parent() {
    let mut rig = Rig::with_capabilities(
        "auto_approve = [\"read\", \"write\", \"process\"]",
        json!({"subagents": true}),
    )
    .await;
    let agents = rig.home.workspace().join(".scv/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("writer.md"),
        "---\nname: writer\ndescription: writes\ntools: Write, Read\n---\nWrite things.\n",
    )
    .unwrap();
    let (_, session) = rig.start(json!({"mode": "plan"})).await;
    rig.mock.push(Reply::tool_calls(&[
        (
            "w",
            "task",
            json!({"description": "w", "prompt": "p", "agent": "writer"}),
        ),
        (
            "g",
            "task",
            json!({"description": "g", "prompt": "CHILD-PLAN"}),
        ),
    ]));
    rig.mock.push_matching(
        "CHILD-PLAN",
        Reply::tool_calls(&[(
            "f",
            "write_file",
            json!({"path": "sneaky.txt", "content": "x"}),
        )]),
    );
    rig.mock
        .push_matching("CHILD-PLAN", Reply::text(["Could not write."]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    let writer = completed(&events, "w")["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        writer.contains("`write_file`") && writer.contains("plan mode"),
        "{writer}"
    );
    let child = request_with(&rig.mock, "CHILD-PLAN");
    let tools = tools_of(&child);
    assert!(!tools.contains(&"write_file".to_string()), "{tools:?}");
    assert!(!tools.contains(&"edit_file".to_string()), "{tools:?}");
    assert!(child["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("Plan mode is on"));
    let refused = events
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["call_id"] == "f")
        .unwrap();
    assert_eq!(refused["success"], false);
    assert!(!rig.home.workspace().join("sneaky.txt").exists());

    // No tools, no task.
    let (_, bare) = rig.start(json!({"no_tools": true})).await;
    rig.mock.push(Reply::tool_calls(&[(
        "t",
        "task",
        json!({"description": "d", "prompt": "CHILD-NONE"}),
    )]));
    rig.mock.push(Reply::text(["fine"]));
    let before = rig.mock.request_count();
    let events = rig.turn(&bare, "go").await;
    assert!(tools_of(&rig.mock.requests()[before].body).is_empty());
    assert!(!types(&events).contains(&"subagent.started"));
    assert_eq!(rig.mock.request_count(), before + 2, "no child ran");
}

/// A child under a parent that auto-approves everything it may: a call
/// that leaves the sandbox is still asked (and denied here, nothing runs),
/// a tool the parent does not have (an MCP name) is unknown to it, and a
/// definition naming one fails the call by name.
#[tokio::test]
async fn a_child_cannot_leave_the_sandbox_or_reach_tools_the_parent_lacks() {
    let mut rig = Rig::with_capabilities(
        "auto_approve = [\"read\", \"write\", \"process\"]",
        json!({"subagents": true}),
    )
    .await;
    let agents = rig.home.workspace().join(".scv/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("fetcher.md"),
        "---\nname: fetcher\ndescription: fetches\ntools: mcp__ghost__fetch, Read\n---\nFetch.\n",
    )
    .unwrap();
    let (_, session) = rig.start(json!({})).await;
    rig.mock
        .push(calls(&[task("c1", "escape", "CHILD-ESCAPE")]));
    rig.mock.push_matching(
        "CHILD-ESCAPE",
        Reply::tool_calls(&[
            (
                "out",
                "bash",
                json!({"command": "echo x > escaped.txt", "unsandboxed": true}),
            ),
            ("ghost", "mcp__ghost__fetch", json!({"url": "http://x"})),
        ]),
    );
    rig.mock
        .push_matching("CHILD-ESCAPE", Reply::text(["stopped"]));
    rig.mock.push(calls(&[(
        "c2".to_string(),
        "task".to_string(),
        json!({"description": "f", "prompt": "CHILD-FETCH", "agent": "fetcher"}),
    )]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(&session, "t", "go").await;
    let mut events = rig.server.until("approval.requested").await;
    let asked = events.last().unwrap().clone();
    assert_eq!(asked["call_id"], "out", "{asked}");
    assert_eq!(asked["sandboxed"], false, "{asked}");
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"r","session_id": asked["session_id"],
                     "approval_id": asked["approval_id"],"approved":false}),
        )
        .await;
    events.extend(rig.server.until_terminal().await);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(!rig.home.workspace().join("escaped.txt").exists());
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "approval.requested")
            .count(),
        1,
        "only the call leaving the sandbox asked"
    );
    let ghost = events
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["call_id"] == "ghost")
        .unwrap();
    assert_eq!(ghost["success"], false);
    assert!(
        ghost["output"].as_str().unwrap().contains("unknown tool"),
        "{ghost}"
    );
    // The definition's MCP tool is not the parent's: the call fails,
    // naming it, and no child starts.
    let fetched = completed(&events, "c2");
    assert_eq!(fetched["success"], false, "{fetched}");
    let output = fetched["output"].as_str().unwrap();
    assert!(
        output.contains("`mcp__ghost__fetch`")
            && output.contains("never gets more than its parent"),
        "{output}"
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "subagent.started")
            .count(),
        1
    );
}

/// A child's commands run under the parent's sandbox, or the read-only
/// one when its definition says so: the kernel holds it.
#[tokio::test]
async fn a_read_only_definition_runs_its_commands_read_only() {
    if !common::sandbox::enforced() {
        return;
    }
    let mut rig = Rig::with_capabilities(
        "auto_approve = [\"read\", \"sandboxed\"]",
        json!({"subagents": true}),
    )
    .await;
    let agents = rig.home.workspace().join(".scv/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("looker.md"),
        "---\nname: looker\ndescription: looks\ntools: Bash\nsandbox: read-only\n---\nLook only.\n",
    )
    .unwrap();
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(Reply::tool_calls(&[(
        "l",
        "task",
        json!({"description": "look", "prompt": "CHILD-LOOK", "agent": "looker"}),
    )]));
    rig.mock.push_matching(
        "CHILD-LOOK",
        Reply::tool_calls(&[(
            "b",
            "bash",
            json!({"command": "echo x > written.txt; echo status $?"}),
        )]),
    );
    rig.mock
        .push_matching("CHILD-LOOK", Reply::text(["Looked."]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );
    assert!(!rig.home.workspace().join("written.txt").exists());
    let ran = events
        .iter()
        .find(|e| e["type"] == "tool.completed" && e["call_id"] == "b")
        .unwrap();
    assert!(
        !ran["output"].as_str().unwrap().contains("status 0"),
        "{ran}"
    );
}

/// Budgets count children: a turn-token budget the child's usage crosses
/// stops the parent's next request, and the child's own requests are
/// checked against what the parent spent.
#[tokio::test]
async fn budgets_count_what_children_spend() {
    // Each request's worst case is its prompt plus max_output_tokens.
    let mut rig = Rig::with_capabilities(
        "max_output_tokens = 10\nmax_turn_tokens = 4000",
        json!({"subagents": true}),
    )
    .await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(calls(&[task("a", "a", "CHILD-SPENDER")]));
    rig.mock.push_matching(
        "CHILD-SPENDER",
        Reply::raw(
            vec![
                json!({"id":"x","object":"chat.completion.chunk","created":1,"model":"m",
                       "choices":[{"index":0,"delta":{"content":"spent a lot"},"finish_reason":"stop"}]})
                .to_string(),
                json!({"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],
                       "usage":{"prompt_tokens":3900,"completion_tokens":50,"total_tokens":3950}})
                .to_string(),
            ],
            Ending::Done,
        ),
    );
    rig.mock.push(Reply::text(["never sent"]));
    let events = rig.turn(&session, "go").await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "turn.failed", "{events:#?}");
    assert_eq!(last["code"], "step_limit");
    assert!(
        last["message"]
            .as_str()
            .unwrap()
            .contains("max_turn_tokens"),
        "{last}"
    );
    // Parent's first request and the child's; the parent's second was not sent.
    assert_eq!(rig.mock.request_count(), 2);
}

/// What a provider writes when nothing caps it (the model's own limit).
const UNCAPPED: u64 = 40_000;
/// The prompt tokens the mock reports for a child's request: below the
/// server's estimate of it (system prompt and tools), so the sum below
/// measures what the budget held.
const CHILD_PROMPT: u64 = 500;

/// A provider that uses all the output a request allows (`UNCAPPED`
/// when the request sets no cap), slowly enough that the children of one
/// response are all in flight together.
fn spends_all() -> Reply {
    Reply::from_request(|body| {
        let out = Reply::requested_output_cap(body).unwrap_or(UNCAPPED);
        Reply::text(["spent ", "all"])
            .with_usage(CHILD_PROMPT, out)
            .drip(std::time::Duration::from_millis(200))
    })
}

/// Six children started by one response, each writing all it may, under
/// `max_turn_tokens = 150000`: they reserve before they send, so what the
/// turn uses never passes the budget — the children that no longer fit
/// are refused before their request is sent (a failed `task` call, not a
/// failed turn). Checking without reserving let all six pass the check
/// before any had spent: 243,025 tokens. The session and the connection
/// go on afterwards.
#[tokio::test]
async fn children_at_once_never_overrun_the_turn_token_budget() {
    let budget = 150_000;
    let mut rig = Rig::with_capabilities(
        &format!("max_subagents = 6\nmax_output_tokens = {UNCAPPED}\nmax_turn_tokens = {budget}"),
        json!({"subagents": true}),
    )
    .await;
    let (_, session) = rig.start(json!({})).await;
    let names = ["A", "B", "C", "D", "E", "F"];
    let tasks: Vec<_> = names
        .iter()
        .map(|n| task(n, n, &format!("CHILD-{n}: spend")))
        .collect();
    rig.mock.push(calls(&tasks));
    for n in names {
        rig.mock.push_matching(&format!("CHILD-{n}"), spends_all());
    }
    rig.mock.push(spends_all());
    let events = rig.turn(&session, "six at once").await;
    let last = events.last().unwrap();
    assert_eq!(last["parent"], Value::Null, "{last}");
    assert!(
        last["type"] == "turn.completed"
            || (last["type"] == "turn.failed" && last["code"] == "step_limit"),
        "{events:#?}"
    );

    // What the provider was asked and reported: the parent's first
    // request (Reply::tool_calls reports 20 in, 5 out), then each sent
    // request used all its cap.
    let requests = rig.mock.requests();
    let mut used = 25;
    for request in &requests[1..] {
        used += CHILD_PROMPT + Reply::requested_output_cap(&request.body).unwrap_or(UNCAPPED);
    }
    assert!(used <= budget, "the turn used {used} tokens of {budget}");

    // The children that did not fit were refused before sending.
    let refused: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| {
            let call = completed(&events, n);
            call["success"] == false
                && call["output"]
                    .as_str()
                    .unwrap()
                    .contains("(step_limit): budget reached: used ")
        })
        .collect();
    let sent: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| {
            requests
                .iter()
                .any(|r| r.body["messages"][1]["content"] == format!("CHILD-{n}: spend"))
        })
        .collect();
    assert!(
        !refused.is_empty(),
        "some children were refused: {events:#?}"
    );
    assert_eq!(
        refused.len() + sent.len(),
        names.len(),
        "{refused:?} {sent:?}"
    );
    // The turn's own figures agree: its usage (children's summed in) is
    // what the provider reported, when the parent's last request fit.
    let sum = |e: &Value| {
        e["usage"]["input_tokens"].as_u64().unwrap() + e["usage"]["output_tokens"].as_u64().unwrap()
    };
    let children: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "turn.completed" && !e["parent"].is_null())
        .collect();
    assert_eq!(children.len(), sent.len());
    assert!(children.iter().map(|e| sum(e)).sum::<u64>() <= used);
    if last["type"] == "turn.completed" {
        assert_eq!(sum(last), used, "{last}");
    }

    // The refusal was this turn's: the next turn, and another session,
    // are served.
    rig.mock.push(Reply::text(["next"]));
    let events = rig.turn(&session, "and now?").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );
    let (_, other) = rig.start(json!({})).await;
    rig.mock.push(Reply::text(["hello"]));
    let events = rig.turn(&other, "hi").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );
}

/// A child is a stored session of its own: resumable by its id, its
/// header naming its parent call.
#[tokio::test]
async fn a_child_is_journaled_and_its_transcript_resumable() {
    let mut rig = Rig::with_capabilities("", json!({"subagents": true, "sessions": true})).await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock
        .push(calls(&[task("c1", "remember", "CHILD-JOURNAL")]));
    rig.mock
        .push_matching("CHILD-JOURNAL", Reply::text(["Journaled answer."]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    let child = events
        .iter()
        .find(|e| e["type"] == "subagent.started")
        .unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    rig.server
        .send(json!({"type":"session.resume","request_id":"r","session_id": child}))
        .await;
    let resumed = rig.server.expect("session.started").await;
    assert_eq!(resumed["session_id"], child.as_str());
    rig.server.expect("queue.snapshot").await;
    let transcript = rig.server.expect("session.transcript").await.to_string();
    assert!(transcript.contains("CHILD-JOURNAL"), "{transcript}");
    assert!(transcript.contains("Journaled answer."), "{transcript}");
    // Listed with the call that started it; the parent without one.
    rig.server
        .send(json!({"type":"session.list","request_id":"l"}))
        .await;
    let listed = rig.server.expect("session.listed").await;
    let entry = |id: &str| {
        listed["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed: {listed}"))
            .clone()
    };
    assert_eq!(entry(&child)["parent"]["session_id"], session.as_str());
    assert_eq!(entry(&child)["parent"]["call_id"], "c1");
    assert!(entry(&session).get("parent").is_none());
}

/// The parent's hooks gate a child's calls (PreToolUse, exit 2 blocks),
/// and a child at the depth cap that sends `task` anyway gets "unknown
/// tool": no grandchild starts.
#[tokio::test]
async fn hooks_gate_a_child_and_it_cannot_nest_past_the_cap() {
    let mut rig = Rig::with_capabilities(
        "auto_approve = [\"read\", \"process\"]",
        json!({"subagents": true}),
    )
    .await;
    let dir = rig.home.workspace().join(".scv");
    std::fs::create_dir_all(&dir).unwrap();
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo 'no shell for anyone' >&2; exit 2"}]}]}});
    std::fs::write(dir.join("hooks.json"), hooks.to_string()).unwrap();
    rig.home.trust_workspace();
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(calls(&[task("c1", "try", "CHILD-HOOKED")]));
    let marker = rig.home.workspace().join("ran");
    rig.mock.push_matching(
        "CHILD-HOOKED",
        Reply::tool_calls(&[
            (
                "b",
                "bash",
                json!({"command": format!("touch {}", marker.display())}),
            ),
            (
                "n",
                "task",
                json!({"description": "deeper", "prompt": "GRANDCHILD"}),
            ),
        ]),
    );
    rig.mock
        .push_matching("CHILD-HOOKED", Reply::text(["Blocked twice."]));
    rig.mock.push(Reply::text(["ok"]));
    let events = rig.turn(&session, "go").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );
    assert!(!marker.exists(), "the hook blocked the child's command");
    let child_result = |id: &str| {
        events
            .iter()
            .find(|e| {
                e["type"] == "tool.completed" && e["call_id"] == id && e.get("parent").is_some()
            })
            .unwrap_or_else(|| panic!("no child tool.completed {id}"))
            .clone()
    };
    let blocked = child_result("b");
    assert!(
        blocked["output"]
            .as_str()
            .unwrap()
            .contains("no shell for anyone"),
        "{blocked}"
    );
    let nested = child_result("n");
    assert_eq!(nested["output"], "error: unknown tool `task`");
    assert_eq!(
        events
            .iter()
            .filter(|e| e["type"] == "subagent.started")
            .count(),
        1,
        "no grandchild"
    );
    assert!(!rig.mock.requests().iter().any(|r| {
        r.body["messages"]
            .as_array()
            .is_some_and(|m| m.len() == 2 && m[1].to_string().contains("GRANDCHILD"))
    }));
}

/// With `max_subagent_depth = 2` a child may start its own: the
/// grandchild's `parent` is the child, its depth 2, and its approval is
/// answered like any other; at depth 2 no `task` is offered.
#[tokio::test]
async fn children_nest_to_the_configured_depth() {
    let mut rig =
        Rig::with_capabilities("max_subagent_depth = 2", json!({"subagents": true})).await;
    let (_, session) = rig.start(json!({})).await;
    script_nested(&rig.mock, "CHILD-OUTER", "CHILD-INNER");
    rig.server.start_turn(&session, "t", "go").await;
    let mut events = rig.server.until("approval.requested").await;
    let asked = events.last().unwrap().clone();
    let starts: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "subagent.started")
        .cloned()
        .collect();
    assert_eq!(starts.len(), 2);
    let (outer, inner) = (&starts[0], &starts[1]);
    assert_eq!(outer["parent"]["session_id"], session.as_str());
    assert_eq!(inner["parent"]["session_id"], outer["session_id"]);
    assert_eq!(inner["parent"]["call_id"], "c2");
    assert_eq!(inner["depth"], 2);
    assert_eq!(asked["session_id"], inner["session_id"]);
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"r","session_id": asked["session_id"],
                     "approval_id": asked["approval_id"],"approved":true}),
        )
        .await;
    events.extend(rig.server.until_terminal().await);
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );
    assert!(rig.home.workspace().join("deep.txt").exists());
    assert!(tools_of(&request_with(&rig.mock, "CHILD-OUTER")).contains(&"task".to_string()));
    assert!(!tools_of(&request_with(&rig.mock, "CHILD-INNER")).contains(&"task".to_string()));
    assert!(completed(&events, "c1")["output"]
        .as_str()
        .unwrap()
        .starts_with("outer done"));
}

/// A grandchild's approval reaches a client that does not see children:
/// on the top-level `task` call (the only one that client saw), the label
/// naming both subagents; answered there, the grandchild's call runs.
/// (Asked on its parent's call, it went to a sink that client never
/// reads, and the grandchild waited for its wall-clock cap.)
#[tokio::test]
async fn an_old_client_is_asked_a_grandchilds_approval_on_the_top_task_call() {
    let mut rig = Rig::with_capabilities("max_subagent_depth = 2", json!({})).await;
    let (_, session) = rig.start(json!({})).await;
    script_nested(&rig.mock, "OLD-OUTER", "OLD-INNER");
    rig.server.start_turn(&session, "t", "go").await;
    let mut events = rig.server.until("approval.requested").await;
    let asked = events.last().unwrap().clone();
    assert_eq!(asked["session_id"], session.as_str());
    assert_eq!(asked["call_id"], "c1");
    assert_eq!(asked["name"], "bash");
    assert!(
        asked["summary"]
            .as_str()
            .unwrap()
            .starts_with("subagent «outer › inner»: "),
        "{asked}"
    );
    rig.server
        .send(
            json!({"type":"approval.resolve","request_id":"r","session_id": session,
                     "approval_id": asked["approval_id"],"approved":true}),
        )
        .await;
    events.extend(rig.server.until_terminal().await);
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
    assert!(rig.home.workspace().join("deep.txt").exists());
    assert!(events.iter().all(|e| e.get("parent").is_none()));
}

/// A child whose provider refuses it fails its call with the code the
/// model reads; the parent turn completes and its other child's report
/// still comes back.
#[tokio::test]
async fn a_childs_provider_error_is_a_failed_call_not_a_failed_turn() {
    let mut rig =
        Rig::with_capabilities("provider_max_retries = 0", json!({"subagents": true})).await;
    let (_, session) = rig.start(json!({})).await;
    rig.mock.push(calls(&[
        task("bad", "b", "CHILD-REFUSED"),
        task("good", "g", "CHILD-FINE"),
    ]));
    rig.mock.push_matching(
        "CHILD-REFUSED",
        Reply::error(400, "this request is malformed"),
    );
    rig.mock
        .push_matching("CHILD-FINE", Reply::text(["fine report"]));
    rig.mock.push(Reply::text(["one of two"]));
    let events = rig.turn(&session, "go").await;
    assert_eq!(
        events.last().unwrap()["type"],
        "turn.completed",
        "{events:#?}"
    );
    let bad = completed(&events, "bad");
    assert_eq!(bad["success"], false);
    assert!(
        bad["output"].as_str().unwrap().contains("provider_error"),
        "{bad}"
    );
    assert!(completed(&events, "good")["output"]
        .as_str()
        .unwrap()
        .starts_with("fine report"));
}
