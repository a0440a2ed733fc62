#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! ACP v1's later methods with the official TypeScript SDK as the editor
//! (tests/acp-interop/v1.mjs, one scenario per test): the real `scv acp`,
//! the real daemon it starts, the scripted mock provider behind it.
//! Skips when node or the SDK is missing, unless `SCV_REQUIRE_INTEROP=1`.

mod common;
use common::*;
use std::time::Duration;

/// A long answer, one word every 50 ms: a turn still streaming whenever
/// the editor acts on it.
fn slow_answer() -> Reply {
    let words: Vec<String> = (0..400).map(|n| format!("w{n} ")).collect();
    Reply::text(words).drip(Duration::from_millis(50))
}

/// The interop directory, when node and the SDK are there; `None`
/// (skip) otherwise, unless `SCV_REQUIRE_INTEROP=1`.
fn interop() -> Option<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp-interop");
    let required = std::env::var("SCV_REQUIRE_INTEROP").as_deref() == Ok("1");
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let sdk = dir
        .join("node_modules/@agentclientprotocol/sdk/package.json")
        .exists();
    if !node || !sdk {
        assert!(
            !required,
            "SCV_REQUIRE_INTEROP=1 but node or the SDK is missing"
        );
        eprintln!("skipping the ACP interop test: node or the SDK is missing");
        return None;
    }
    Some(dir)
}

/// Runs `scenario` of v1.mjs against a fresh home whose mock provider
/// answers `replies` in order (`extra`: config.toml lines); returns the mock and the checks printed.
/// `None`: skipped (no node or SDK, and interop not required).
async fn scenario(name: &str, extra: &str, replies: Vec<Reply>) -> Option<(MockProvider, String)> {
    scenario_with(name, extra, replies, &[], &[]).await
}

/// [`scenario`] with a provider listing `models`, and `env` for the
/// script.
async fn scenario_with(
    name: &str,
    extra: &str,
    replies: Vec<Reply>,
    models: &[&str],
    env: &[(&str, String)],
) -> Option<(MockProvider, String)> {
    let dir = interop()?;
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, extra);
    mock.set_models(models);
    for reply in replies {
        mock.push(reply);
    }
    let mut command = tokio::process::Command::new("node");
    command.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    command
        .arg(dir.join("v1.mjs"))
        .arg(SCV)
        .arg(home.workspace())
        .arg(name)
        .env("SCV_HOME", home.path())
        .env(
            "CLAUDE_CONFIG_DIR",
            scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
        )
        .env("SCV_SERVER_BIN", server_bin())
        .env_remove("OPENAI_API_KEY")
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(90), command.output())
        .await
        .expect("the interop client finishes")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("FAIL"), "{stderr}");
    // The daemon this home started stops with it.
    drop(home);
    Some((mock, stderr))
}

fn has(stderr: &str, checks: &[&str]) {
    for check in checks {
        assert!(stderr.contains(check), "{check}:\n{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn session_close_cancels_its_prompt_frees_it_and_the_other_session_goes_on() {
    let replies = vec![slow_answer(), Reply::text(["B goes on."])];
    let Some((mock, stderr)) = scenario("close", "", replies).await else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: sessionCapabilities.close",
            "ok: additionalDirectories",
            "ok: images",
            "ok: close answered {}",
            "ok: the running prompt: cancelled",
            "ok: a prompt to the closed session: -32002",
            "ok: closing it again ends the same",
            "ok: the other session: end_turn",
            "ok: the closed session resumes here",
            "ok: scv acp exited 0",
        ],
    );
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn session_resume_continues_a_stored_session_without_replay() {
    let replies = vec![Reply::text(["First."]), Reply::text(["Resumed."])];
    let Some((mock, stderr)) = scenario("resume", "", replies).await else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: sessionCapabilities.resume",
            "ok: resumed prompt end_turn",
            "ok: nothing replayed",
            "ok: resumed text \"Resumed.\"",
            "ok: resuming a session live here answers",
            "ok: an unknown session: -32002",
            "ok: a relative cwd: -32602",
        ],
    );
    let bodies: Vec<String> = mock.requests().iter().map(|r| r.body.to_string()).collect();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    // The resumed session's request carries its history.
    assert!(bodies[1].contains("RESUME-FIRST") && bodies[1].contains("First."));
    assert!(bodies[1].contains("RESUME-SECOND"));
}

#[tokio::test(flavor = "multi_thread")]
async fn session_delete_closes_a_live_session_and_removes_it_from_the_list() {
    let Some((_mock, stderr)) = scenario("delete", "", vec![Reply::text(["Noted."])]).await else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: sessionCapabilities.delete",
            "ok: listed before",
            "ok: delete answered {}",
            "ok: gone from the list",
            "ok: a prompt to the deleted session: -32002",
            "ok: an unknown session deletes silently",
        ],
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_request_for_a_prompt_cancels_its_turn() {
    let replies = vec![slow_answer(), Reply::text(["After."])];
    let Some((mock, stderr)) = scenario("cancelRequest", "", replies).await else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: a model switch while the turn runs: -32600",
            "ok: the prompt: cancelled",
            "ok: the next prompt: end_turn",
        ],
    );
    let bodies: Vec<String> = mock.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(bodies[0].contains("CANCEL-ME") && bodies[1].contains("AFTER"));
}

/// `usage_update` after each provider step (the step's tokens in the
/// context window config.toml sets) and at the turn's end with the
/// session's cost at the configured prices; the title at the first
/// prompt; one message id per agent message.
#[tokio::test(flavor = "multi_thread")]
async fn usage_updates_title_and_message_ids() {
    let extra = "context_max_tokens = 50000\n[pricing.\"mock-model\"]\ninput = 1.0\noutput = 4.0\n";
    let replies = vec![
        Reply::tool_calls(&[("c1", "read_file", json!({"path": "missing.txt"}))])
            .with_usage(1000, 500),
        Reply::text(["Do", "ne."]).with_usage(2000, 100),
        Reply::text(["Again."]),
    ];
    let Some((_mock, stderr)) = scenario("usage", extra, replies).await else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: first end_turn",
            "ok: title",
            "ok: updatedAt",
            "ok: one message, one id",
            "ok: the next message has its own id",
            "ok: the title is told once",
        ],
    );
    // 1,000 + 500, then 2,000 + 100 tokens; $0.0054 in all (3,000 in at
    // $1/M, 600 out at $4/M), told at the turn's end.
    let usage: Vec<&str> = stderr.lines().filter(|l| l.starts_with("usage ")).collect();
    assert_eq!(
        usage,
        [
            "usage 1500/50000 -",
            "usage 2100/50000 -",
            "usage 2100/50000 0.0054 USD"
        ],
        "{stderr}"
    );
}

/// Config options: the provider's models, the modes and the reasoning
/// effort, changed by `session/set_config_option` and reaching the
/// provider's requests (the model named, plan mode's tools, the effort).
#[tokio::test(flavor = "multi_thread")]
async fn config_options_set_the_model_and_the_mode() {
    let replies = vec![Reply::text(["On beta."]), Reply::text(["Planning."])];
    let models = ["alpha-model", "beta-model", "mock-model"];
    let Some((mock, stderr)) = scenario_with("config", "", replies, &models, &[]).await else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: model {",
            "ok: model category",
            "ok: mode option",
            "ok: the provider's models",
            "ok: model set",
            "ok: mode set",
            "ok: current_mode_update plan",
            "ok: an unknown option: -32602",
            "ok: an unknown model: -32602",
            "ok: an unknown session: -32002",
            "ok: set_mode told as config_option_update",
            "ok: reasoning option",
            "ok: reasoning set",
            "ok: an unknown effort: -32602",
        ],
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["model"], "beta-model");
    assert!(requests[0].body.to_string().contains("CONFIG-MODEL"));
    let tools = |n: usize| requests[n].body["tools"].to_string();
    assert!(tools(0).contains("write_file"), "{}", tools(0));
    assert!(!tools(1).contains("write_file"), "{}", tools(1));
    // The effort reaches the next request (Chat's `reasoning_effort`).
    assert!(requests[0].body.get("reasoning_effort").is_none());
    assert_eq!(requests[1].body["reasoning_effort"], "high");
    assert_eq!(mock.model_requests().len(), 1);
}

/// The model's side of the elicitation scenario: a prompt naming a tool
/// of the fake MCP server calls it once the server's tools are offered
/// (else answers "waiting"); a tool's result is echoed back as the answer.
fn elicitation_model() -> Reply {
    Reply::from_request(|body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or_default();
        if last["role"] == "tool" {
            let result = last["content"].as_str().unwrap_or_default().to_string();
            return Reply::text([format!("done: {result}")]);
        }
        let offered = body["tools"].to_string().contains("mcp__fake__ask_form");
        let prompt = last["content"].to_string();
        match (
            offered,
            prompt.contains("ASK-FORM"),
            prompt.contains("ASK-URL"),
        ) {
            (true, true, _) => Reply::tool_calls(&[(
                "qf",
                "mcp__fake__ask_form",
                json!({"question": "Who are you?"}),
            )]),
            (true, _, true) => Reply::tool_calls(&[("qu", "mcp__fake__ask_url", json!({}))]),
            _ => Reply::text(["waiting"]),
        }
    })
}

/// An MCP server's questions reach the editor as `elicitation/create`
/// (form and URL) and its answers reach the server.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_elicitation_reaches_the_editor_and_back() {
    let Some(python) = scv_test_support::mcp_python::python() else {
        return;
    };
    let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scv-server/tests/mcp/fake_server.py")
        .canonicalize()
        .unwrap();
    let env = [
        ("SCV_TEST_PYTHON", python.display().to_string()),
        ("SCV_TEST_MCP_SERVER", server.display().to_string()),
    ];
    let replies = (0..100).map(|_| elicitation_model()).collect();
    let Some((mock, stderr)) = scenario_with("elicit", "", replies, &[], &env).await else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: the server's tool was called",
            "ok: form asked in the session",
            "ok: the form's schema",
            "ok: the tool's result",
            "ok: url asked",
            "ok: the url tool's result",
        ],
    );
    let bodies: Vec<String> = mock.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(
        bodies
            .iter()
            .any(|b| b.contains(r#"form: accept {\"age\": 36, \"name\": \"Ada\"}"#)),
        "{bodies:?}"
    );
}

/// A workspace with repository configuration SCV skips: the editor is
/// asked (form elicitation) and its "trust" trusts the workspace, as
/// `scv trust` does.
#[tokio::test(flavor = "multi_thread")]
async fn the_trust_prompt_goes_to_the_editor() {
    let Some(dir) = interop() else {
        return;
    };
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    std::fs::write(
        home.workspace().join(".mcp.json"),
        r#"{"mcpServers": {"x": {"command": "true"}}}"#,
    )
    .unwrap();
    let output = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new("node")
            .arg(dir.join("v1.mjs"))
            .arg(SCV)
            .arg(home.workspace())
            .arg("trust")
            .env("SCV_HOME", home.path())
            .env(
                "CLAUDE_CONFIG_DIR",
                scv_test_support::client::claude_dir(std::path::Path::new(&home.path())),
            )
            .env("SCV_SERVER_BIN", server_bin())
            .env_remove("OPENAI_API_KEY")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the interop client finishes")
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && !stderr.contains("FAIL"),
        "{stderr}"
    );
    has(
        &stderr,
        &[
            "ok: trust asked",
            "ok: the message names the file",
            "ok: said",
        ],
    );
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let workspace = home.workspace().display().to_string();
    assert!(
        config.contains("trusted_workspaces") && config.contains(&workspace),
        "{config}"
    );
}

/// Images in prompts: the editor's image block reaches the provider as
/// the Chat Completions wire's `image_url` part (a `data:` URL, OpenAI's
/// API reference, "Create chat completion"), byte for byte; the image
/// refusals (type by the bytes, count, a text-only model) are -32602 and
/// the connection carries on.
#[tokio::test(flavor = "multi_thread")]
async fn image_blocks_reach_the_provider_and_refusals_are_invalid_params() {
    use base64::Engine as _;
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend((0..4000u32).map(|i| (i * 7 % 251) as u8));
    let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
    let replies = vec![Reply::text(["A picture."]), Reply::text(["After."])];
    let env = [("IMAGE_B64", b64)];
    let Some((mock, stderr)) = scenario_with(
        "images",
        "",
        replies,
        &["mock-model", "deepseek-chat"],
        &env,
    )
    .await
    else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: promptCapabilities.image",
            "ok: the image prompt: end_turn",
            "ok: a PNG said to be a JPEG: -32602",
            "ok: text said to be an image: -32602",
            "ok: nine images: -32602",
            "ok: a text-only model: -32602",
            "ok: the next prompt: end_turn",
        ],
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "refused prompts never reached it");
    let images = requests[0].images().unwrap();
    assert_eq!(images.len(), 1);
    assert_eq!(
        (images[0].mime_type.as_str(), &images[0].bytes),
        ("image/png", &png)
    );
    assert!(requests[0].body.to_string().contains("IMAGE-PROMPT"));
    assert!(
        requests[0].violations().is_empty(),
        "{:?}",
        requests[0].violations()
    );
    assert!(requests[1].body.to_string().contains("IMAGE-AFTER"));
}

/// `additionalDirectories`: advertised; a relative, missing, `/`-reaching
/// or `$SCV_HOME` directory is -32602; a session given a directory outside
/// its workspace reads a file there with `read_file` (the result the
/// provider gets back holds the file's text).
#[tokio::test(flavor = "multi_thread")]
async fn additional_directories_are_readable_roots_and_hostile_ones_are_invalid_params() {
    let outside = tempfile::tempdir().unwrap();
    let extra = outside.path().canonicalize().unwrap().join("docs");
    std::fs::create_dir(&extra).unwrap();
    std::fs::write(extra.join("notes.txt"), "EXTRA-ROOT-TEXT\n").unwrap();
    let root_link = outside.path().join("to-root");
    std::os::unix::fs::symlink("/", &root_link).unwrap();
    let path = extra.join("notes.txt").display().to_string();
    let replies = vec![
        Reply::tool_calls(&[("c1", "read_file", json!({"path": path}))]),
        Reply::text(["Read it."]),
    ];
    let env = [
        ("EXTRA_DIR", extra.display().to_string()),
        ("ROOT_LINK", root_link.display().to_string()),
    ];
    let Some((mock, stderr)) =
        scenario_with("dirs", "auto_approve = [\"read\"]", replies, &[], &env).await
    else {
        return;
    };
    has(
        &stderr,
        &[
            "ok: sessionCapabilities.additionalDirectories",
            "ok: a relative directory: -32602",
            "ok: a missing directory: -32602",
            "ok: the whole file system: -32602",
            "ok: SCV_HOME itself: -32602",
            "ok: the prompt: end_turn",
            "ok: a resume with a relative directory: -32602",
        ],
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let result = requests[1].body.to_string();
    assert!(result.contains("EXTRA-ROOT-TEXT"), "{result}");
}
