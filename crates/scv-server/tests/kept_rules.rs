#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! Kept permission rules through the real binary (capability
//! `permissions`): "always allow" made lasting in `$SCV_HOME/settings.json`
//! or a trusted workspace's `.claude/settings.local.json`, applied from the
//! session's next turn and by new sessions; listed and removed; and every
//! refusal with its code, the session going on.

mod common;
use common::*;

/// Runs a turn whose model calls `bash` with `command`, answering any
/// approval with a denial; whether an approval was asked.
async fn asked_for(rig: &mut Rig, session: &str, command: &str) -> bool {
    rig.mock.push(Reply::tool_calls(&[(
        "b",
        "bash",
        json!({ "command": command }),
    )]));
    rig.mock.push(Reply::text(["done"]));
    rig.server.start_turn(session, "t", "go").await;
    let mut asked = false;
    loop {
        let event = rig.server.next().await;
        match event["type"].as_str().unwrap() {
            "approval.requested" => {
                asked = true;
                rig.server
                    .send(
                        json!({"type":"approval.resolve","request_id":"a","session_id": session,
                                 "approval_id": event["approval_id"],"approved": false}),
                    )
                    .await;
            }
            "turn.completed" | "turn.failed" => return asked,
            _ => {}
        }
    }
}

async fn request(rig: &mut Rig, message: Value) -> Value {
    rig.server.send(message).await;
    loop {
        let event = rig.server.next().await;
        if matches!(event["type"].as_str(), Some("permissions.listed" | "error")) {
            return event;
        }
    }
}

#[tokio::test]
async fn a_kept_rule_runs_its_command_without_asking_until_removed() {
    let mut rig = Rig::with_capabilities("", json!({"permissions": true})).await;
    let (_, session) = rig.start(json!({})).await;
    let sandboxed = common::sandbox::enforced();
    assert!(asked_for(&mut rig, &session, "echo kept").await);

    let listed = request(
        &mut rig,
        json!({"type":"permissions.keep","request_id":"k","session_id": session,
               "rule":"Bash(echo:*)","scope":"user"}),
    )
    .await;
    assert_eq!(listed["type"], "permissions.listed", "{listed}");
    assert_eq!(listed["request_id"], "k");
    let settings = rig.home.path().join("settings.json");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(written["permissions"]["allow"], json!(["Bash(echo:*)"]));
    let rules = listed["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1, "{listed}");
    assert_eq!(rules[0]["rule"], "Bash(echo:*)");
    assert_eq!(rules[0]["kind"], "allow");
    assert_eq!(rules[0]["scope"], "user");
    assert_eq!(rules[0]["path"], settings.display().to_string());

    // The session's next turn, and a new session, run it without asking
    // (only inside the sandbox: outside one no rule skips an approval).
    assert_eq!(asked_for(&mut rig, &session, "echo kept").await, !sandboxed);
    let (_, other) = rig.start(json!({})).await;
    assert_eq!(asked_for(&mut rig, &other, "echo again").await, !sandboxed);
    // Keeping it twice changes nothing.
    let again = request(
        &mut rig,
        json!({"type":"permissions.keep","request_id":"k2","session_id": session,
               "rule":"Bash(echo:*)","scope":"user"}),
    )
    .await;
    assert_eq!(again["rules"].as_array().unwrap().len(), 1);

    let removed = request(
        &mut rig,
        json!({"type":"permissions.remove","request_id":"r","session_id": session,
               "rule":"Bash(echo:*)","scope":"user"}),
    )
    .await;
    assert_eq!(removed["rules"], json!([]), "{removed}");
    assert!(asked_for(&mut rig, &session, "echo kept").await);
    // Removing what is not there says so.
    let error = request(
        &mut rig,
        json!({"type":"permissions.remove","request_id":"r2","session_id": session,
               "rule":"Bash(echo:*)","scope":"user"}),
    )
    .await;
    assert_eq!(error["code"], "invalid_request", "{error}");
    assert!(error["message"].as_str().unwrap().contains("keeps no rule"));
}

#[tokio::test]
async fn a_project_rule_needs_a_trusted_workspace_and_stays_trusted() {
    let mut rig = Rig::with_capabilities("", json!({"permissions": true, "trust": true})).await;
    let ws = rig.home.workspace();
    let (_, session) = rig.start(json!({})).await;
    let keep = json!({"type":"permissions.keep","request_id":"k","session_id": session,
                      "rule":"Bash(cargo test:*)","scope":"project"});
    let error = request(&mut rig, keep.clone()).await;
    assert_eq!(error["code"], "invalid_request", "{error}");
    assert!(error["message"].as_str().unwrap().contains("not trusted"));
    assert!(!ws.join(".claude").exists(), "nothing written");

    rig.home.trust_workspace();
    let (_, session) = rig.start(json!({})).await;
    let mut keep = keep;
    keep["session_id"] = json!(session);
    let listed = request(&mut rig, keep).await;
    assert_eq!(listed["type"], "permissions.listed", "{listed}");
    let local = ws.join(".claude/settings.local.json");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&local).unwrap()).unwrap();
    assert_eq!(
        written["permissions"]["allow"],
        json!(["Bash(cargo test:*)"])
    );
    assert_eq!(listed["rules"][0]["scope"], "project", "{listed}");
    // SCV's own edit keeps the file trusted: a new session applies it.
    let (started, _) = rig.start(json!({})).await;
    let files = started["trust"]["files"].as_array().unwrap();
    let local_file = files
        .iter()
        .find(|f| f["path"] == ".claude/settings.local.json")
        .unwrap();
    assert_eq!(local_file["state"], "trusted", "{started}");

    // Someone else's edit of it is not trusted, and SCV does not write
    // over it (nor trust it by writing).
    std::fs::write(&local, r#"{"permissions":{"allow":["Bash(curl:*)"]}}"#).unwrap();
    let (_, session) = rig.start(json!({})).await;
    let error = request(
        &mut rig,
        json!({"type":"permissions.keep","request_id":"k3","session_id": session,
               "rule":"Bash(make:*)","scope":"project"}),
    )
    .await;
    assert_eq!(error["code"], "invalid_request", "{error}");
    assert!(
        std::fs::read_to_string(&local).unwrap().contains("curl"),
        "the user's edit stays"
    );
}

#[tokio::test]
async fn refusals_name_their_cause_and_the_connection_goes_on() {
    // Without the capability.
    let mut plain = Rig::new("").await;
    let session = plain.session().await;
    let error = request(
        &mut plain,
        json!({"type":"permissions.list","request_id":"l","session_id": session}),
    )
    .await;
    assert_eq!(error["code"], "invalid_request");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("capability `permissions`"));

    let mut rig = Rig::with_capabilities("", json!({"permissions": true})).await;
    let (_, session) = rig.start(json!({})).await;
    for (rule, why) in [
        ("mcp__github__create_issue", "MCP tool"),
        ("Bash(", "not a rule SCV reads"),
        ("Frobnicate(x)", "not a rule SCV reads"),
    ] {
        let error = request(
            &mut rig,
            json!({"type":"permissions.keep","request_id":"k","session_id": session,
                   "rule": rule,"scope":"user"}),
        )
        .await;
        assert_eq!(error["code"], "invalid_request", "{rule}: {error}");
        assert!(error["message"].as_str().unwrap().contains(why), "{error}");
    }
    // A settings file SCV cannot edit is left as it is.
    let settings = rig.home.path().join("settings.json");
    std::fs::write(&settings, "[\"not an object\"]").unwrap();
    let error = request(
        &mut rig,
        json!({"type":"permissions.keep","request_id":"k","session_id": session,
               "rule":"Read","scope":"user"}),
    )
    .await;
    assert_eq!(error["code"], "invalid_request");
    assert!(error["message"]
        .as_str()
        .unwrap()
        .contains("not a JSON object"));
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "[\"not an object\"]"
    );
    // An unknown session.
    let error = request(
        &mut rig,
        json!({"type":"permissions.list","request_id":"l","session_id":"nope"}),
    )
    .await;
    assert_eq!(error["code"], "session_not_found", "{error}");
    // The session goes on.
    rig.mock.push(Reply::text(["still here"]));
    let events = rig.turn(&session, "hello").await;
    assert_eq!(events.last().unwrap()["type"], "turn.completed");
}
