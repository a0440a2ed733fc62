#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! The stored-session commands from a shell: `scv exec --resume ID` and
//! `--continue` carry on a conversation with the history the provider is
//! sent; `scv sessions list | export | delete` read the store; each
//! refusal is one line with its reason.

mod common;
use common::*;

/// The session id `scv exec` printed on stderr (`[session] ID`).
fn session_of(output: &std::process::Output) -> String {
    stderr(output)
        .lines()
        .find_map(|l| l.strip_prefix("[session] "))
        .unwrap_or_else(|| panic!("no session id: {}", stderr(output)))
        .to_string()
}

/// Every message text the last provider request carried.
fn last_history(mock: &MockProvider) -> String {
    mock.requests().last().expect("a request").body["messages"].to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_resume_and_continue_carry_the_conversation_on() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    mock.push(Reply::text(["noted: kiwi"]));
    let first = home
        .scv()
        .args(["exec", "remember the word kiwi"])
        .output()
        .unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let id = session_of(&first);

    mock.push(Reply::text(["it was kiwi"]));
    let resumed = home
        .scv()
        .args(["exec", "--resume", &id, "which word?"])
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(session_of(&resumed), id, "the same session");
    assert!(stdout(&resumed).contains("it was kiwi"));
    let history = last_history(&mock);
    assert!(history.contains("remember the word kiwi"), "{history}");
    assert!(history.contains("noted: kiwi"), "{history}");

    // --continue: the last session of this directory, this one.
    mock.push(Reply::text(["still kiwi"]));
    let continued = home
        .scv()
        .args(["exec", "--continue", "and now?"])
        .output()
        .unwrap();
    assert!(continued.status.success(), "{}", stderr(&continued));
    assert_eq!(session_of(&continued), id);
    let history = last_history(&mock);
    assert!(history.contains("which word?"), "{history}");
    assert!(history.contains("it was kiwi"), "{history}");

    // --json: the resumed session.started says so.
    mock.push(Reply::text(["ok"]));
    let json = home
        .scv()
        .args(["exec", "--json", "--resume", &id, "once more"])
        .output()
        .unwrap();
    let started = stdout(&json)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "session.started")
        .expect("session.started");
    assert_eq!(started["session_id"], id.as_str());
    assert_eq!(started["resumed"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_refuses_an_unknown_session_and_a_directory_with_none() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let unknown = home
        .scv()
        .args(["exec", "--resume", "0000000000000000", "hi"])
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    let err = stderr(&unknown);
    assert!(err.contains("the server has no such session"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let none = home
        .scv()
        .args(["exec", "--continue", "hi"])
        .output()
        .unwrap();
    assert!(!none.status.success());
    let err = stderr(&none);
    assert!(err.contains("no earlier session"), "{err}");
    assert_eq!(mock.request_count(), 0, "nothing was sent anywhere");
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_list_export_and_delete() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    // An answer with a clear-screen and a tool call with backticks in
    // its output.
    mock.push(Reply::tool_calls(&[(
        "c1",
        "read_file",
        json!({"path": "notes.md"}),
    )]));
    mock.push(Reply::text(["the notes say \u{1b}[2J hello"]));
    std::fs::write(home.workspace().join("notes.md"), "```\nfenced\n```\n").unwrap();
    let run = home
        .scv()
        .args(["exec", "--approve", "read", "summarize notes.md"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let id = session_of(&run);

    let list = home.scv().args(["sessions", "list"]).output().unwrap();
    let text = stdout(&list);
    assert!(text.contains(&id), "{text}");
    assert!(text.contains("summarize notes.md"), "{text}");
    // `scv exec` has exited; the daemon closes its session as it reads
    // the end of that connection, which may come a moment later.
    let mut listed = Value::Null;
    for _ in 0..200 {
        let json = home
            .scv()
            .args(["sessions", "list", "--json"])
            .output()
            .unwrap();
        listed = serde_json::from_slice(&json.stdout).unwrap();
        if listed[0]["open"] == false {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(listed[0]["session_id"], id.as_str());
    assert_eq!(listed[0]["turns"], 1);
    assert_eq!(
        listed[0]["open"], false,
        "closed once exec's connection ended"
    );

    let md = home
        .scv()
        .args(["sessions", "export", &id])
        .output()
        .unwrap();
    let md = stdout(&md);
    assert!(md.starts_with("# summarize notes.md\n"), "{md}");
    assert!(md.contains("## User\n\nsummarize notes.md"), "{md}");
    assert!(md.contains("### Tool `read_file` (done)"), "{md}");
    // The output's own fence does not close the export's.
    assert!(md.contains("````\n"), "{md}");
    assert!(md.contains("the notes say ␛[2J hello"), "{md}");
    assert!(!md.contains('\u{1b}'), "{md}");

    let export = home
        .scv()
        .args(["sessions", "export", &id, "--format", "json"])
        .output()
        .unwrap();
    let export: Value = serde_json::from_slice(&export.stdout).unwrap();
    let kinds: Vec<&str> = export["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["user", "tool", "assistant", "turn_ended"],
        "{export}"
    );
    assert_eq!(
        export["items"][2]["text"], "the notes say \u{1b}[2J hello",
        "JSON keeps the text exactly"
    );

    let deleted = home
        .scv()
        .args(["sessions", "delete", &id])
        .output()
        .unwrap();
    assert!(deleted.status.success(), "{}", stderr(&deleted));
    let list = home.scv().args(["sessions", "list"]).output().unwrap();
    assert!(!stdout(&list).contains(&id));
    let again = home
        .scv()
        .args(["sessions", "delete", &id])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("no stored session"),
        "{}",
        stderr(&again)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn scv_undo_puts_back_the_last_changing_turn_of_this_directory() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let file = home.workspace().join("f.txt");
    std::fs::write(&file, "before\n").unwrap();
    let none = home.scv().args(["undo"]).output().unwrap();
    assert!(!none.status.success(), "no session here yet");
    assert!(
        stderr(&none).contains("no earlier session"),
        "{}",
        stderr(&none)
    );

    let change = |text: &str| {
        mock.push(Reply::tool_calls(&[(
            "c1",
            "bash",
            json!({"command": format!("echo {text} > f.txt")}),
        )]));
        mock.push(Reply::text(["changed"]));
    };
    change("after");
    let run = home
        .scv()
        .args(["exec", "--approve", "process", "change f.txt"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "after\n");
    let undo = home.scv().args(["undo"]).output().unwrap();
    assert!(undo.status.success(), "{}", stderr(&undo));
    assert_eq!(
        stdout(&undo),
        "undone: the turn “change f.txt”\n  put back: f.txt\n"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "before\n");

    // Someone else's edit since is not overwritten without --force.
    change("again");
    let run = home
        .scv()
        .args(["exec", "--approve", "process", "change it again"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    std::fs::write(home.workspace().join("mine.txt"), "by hand\n").unwrap();
    let refused = home.scv().args(["undo"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("mine.txt"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "again\n");
    let forced = home.scv().args(["undo", "--force"]).output().unwrap();
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "before\n");
    assert!(!home.workspace().join("mine.txt").exists());
}

/// The short id the TUI prints names the session everywhere: `scv exec
/// --resume`, `scv sessions export` and `delete`; a start shared by two
/// sessions is refused; deleting an open session says how.
#[tokio::test(flavor = "multi_thread")]
async fn short_ids_name_a_session_and_an_open_one_is_not_deleted_but_explained() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    mock.push(Reply::text(["noted: fig"]));
    let first = home
        .scv()
        .args(["exec", "remember the word fig"])
        .output()
        .unwrap();
    let id = session_of(&first);
    let short = id.split('-').next().unwrap().to_string();
    assert_eq!(short.len(), 8);

    mock.push(Reply::text(["it was fig"]));
    let resumed = home
        .scv()
        .args(["exec", "--resume", &short, "which word?"])
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(session_of(&resumed), id, "the same session");
    assert!(last_history(&mock).contains("remember the word fig"));

    let exported = home
        .scv()
        .args(["sessions", "export", &short, "--format", "json"])
        .output()
        .unwrap();
    assert!(exported.status.success(), "{}", stderr(&exported));
    assert!(stdout(&exported).contains(&id));

    // Open in a running `scv exec` (its turn stalls): not deleted, and
    // the refusal says where it lives and what to do.
    mock.push(Reply::text(["thinking"]).then(1, Ending::Stall));
    let mut running = home
        .scv()
        .args(["exec", "--resume", &id, "take your time"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut open = false;
    for _ in 0..400 {
        let out = home
            .scv()
            .args(["sessions", "list", "--json"])
            .output()
            .unwrap();
        let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
        if listed
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session_id"] == id.as_str() && s["open"] == true)
        {
            open = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(open, "the session was never open");
    let refused = home
        .scv()
        .args(["sessions", "delete", &short])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = stderr(&refused);
    assert!(
        said.contains(&format!("session {id} is open in a running scv")),
        "{said}"
    );
    assert!(
        said.contains(&format!("then run `scv sessions delete {short}` again")),
        "{said}"
    );
    assert!(!said.contains("fork it"), "{said}");
    unsafe { libc::kill(running.id() as i32, libc::SIGTERM) };
    running.wait().unwrap();

    // A start two sessions share names neither.
    mock.push(Reply::text(["second"]));
    let second = home.scv().args(["exec", "another"]).output().unwrap();
    let other = session_of(&second);
    let shared: String = id
        .chars()
        .zip(other.chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    if shared.len() >= 4 {
        let out = home
            .scv()
            .args(["sessions", "export", &shared])
            .output()
            .unwrap();
        assert!(stderr(&out).contains("more than one session id starts with"));
    }
    let gone = home
        .scv()
        .args(["sessions", "delete", &short])
        .output()
        .unwrap();
    assert!(gone.status.success(), "{}", stderr(&gone));
    assert!(stderr(&gone).contains(&format!("deleted session {id}")));
}
