#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fails loudly
//! `scv` end to end in a real terminal: tmux runs it against the daemon
//! and the mock provider; the test types with send-keys and reads the
//! screen with capture-pane. Type a prompt and see the answer, approve a
//! bash call and see its output, cancel a turn, quit cleanly.

mod common;
use common::*;
use std::process::Command;
use std::time::Duration;

struct Tmux {
    socket: String,
}

impl Tmux {
    fn new(name: &str) -> Tmux {
        Tmux {
            socket: format!("scv-e2e-{}-{name}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Waits (bounded) until the screen contains `text`.
    async fn wait_for(&self, text: &str) -> String {
        for _ in 0..600 {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("screen never showed {text:?}:\n{}", self.screen());
    }

    /// Ctrl+D once the session is idle: a turn still ending (its answer
    /// drawn, `turn.completed` not yet in) would make the quit a question
    /// (leave it running?) instead.
    async fn quit(&self) {
        self.wait_for("idle").await;
        self.keys(&["C-d"]);
    }

    /// Waits (bounded) until the screen no longer contains `text`.
    async fn wait_without(&self, text: &str) -> String {
        for _ in 0..600 {
            let screen = self.screen();
            if !screen.contains(text) {
                return screen;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("screen kept showing {text:?}:\n{}", self.screen());
    }
}

impl Tmux {
    /// Runs `scv` for `home` in its workspace; the shell then prints the
    /// exit code and lingers so the screen can be read.
    fn start_scv(&self, home: &Home) {
        self.start_scv_with(home, "");
    }

    /// [`Tmux::start_scv`] with arguments (shell words) for `scv`.
    fn start_scv_with(&self, home: &Home, args: &str) {
        self.start_command(home, &scv_command(home, args));
    }

    /// Runs the shell line `command` in `home`'s workspace.
    fn start_command(&self, home: &Home, command: &str) {
        let workspace = home.workspace();
        self.run(&[
            "new-session",
            "-d",
            "-s",
            "e2e",
            "-x",
            "100",
            "-y",
            "30",
            "-c",
            workspace.to_str().unwrap(),
            command,
        ]);
    }

    /// Runs `scv` again in the same pane, killing what runs there. Killing
    /// the session instead races the tmux server's own exit (the server
    /// quits with its last session, and a `new-session` sent meanwhile
    /// can land on the dying server and leave no pane at all).
    fn restart_scv_with(&self, home: &Home, args: &str) {
        self.restart_command(home, &scv_command(home, args));
    }

    /// Runs the shell line `command` again in the same pane.
    fn restart_command(&self, home: &Home, command: &str) {
        let workspace = home.workspace();
        self.run(&[
            "respawn-pane",
            "-k",
            "-t",
            "e2e",
            "-c",
            workspace.to_str().unwrap(),
            command,
        ]);
        self.run(&["clear-history", "-t", "e2e"]);
    }
}

/// The shell line that runs `scv` for `home`, prints its exit code and
/// lingers so the screen can be read.
fn scv_command(home: &Home, args: &str) -> String {
    format!(
        "env SCV_HOME={} SCV_SERVER_BIN={} {SCV} {args}; echo SCV-EXIT=$?; sleep 60",
        home.path().display(),
        server_bin().display()
    )
}

impl Home {
    /// The daemon started by someone other than `scv` (after a restart).
    fn start_daemon(&self) -> std::process::Child {
        Command::new(server_bin())
            .arg("--socket")
            .arg(self.socket())
            .env("SCV_HOME", self.path())
            .env(
                "CLAUDE_CONFIG_DIR",
                scv_test_support::client::claude_dir(std::path::Path::new(&self.path())),
            )
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    }
}

fn stop(daemon: &mut std::process::Child) {
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    daemon.wait().unwrap();
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn type_answer_approve_cancel_quit() {
    if Command::new("tmux").arg("-V").output().is_err() {
        panic!("tmux is required for this test (.ci/run installs it)");
    }
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("main");
    tmux.start_scv(&home);
    tmux.wait_for("Message").await;
    tmux.wait_for("idle").await;

    // A prompt and its streamed answer.
    mock.push(Reply::text(["Hello from ", "the **mock** provider."]));
    tmux.keys(&["say hello", "Enter"]);
    let screen = tmux.wait_for("Hello from the mock provider.").await;
    assert!(screen.contains("› say hello"), "{screen}");

    // A bash call: approve it and see its output.
    mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "echo tmux-e2e-$((6*7))"}),
    )]));
    mock.push(Reply::text(["The command printed 42."]));
    tmux.keys(&["run the command", "Enter"]);
    let screen = tmux.wait_for("Approval needed").await;
    assert!(
        screen.contains("Run shell command: echo tmux-e2e-$((6*7))"),
        "{screen}"
    );
    // The prompt takes an answer once it has been up for half a second;
    // then the highlight shows what Enter would choose. `1` picks "Yes,
    // once" and Enter answers with it.
    tmux.wait_for("❯ 1 Yes, once").await;
    tmux.keys(&["1", "Enter"]);
    let screen = tmux.wait_for("The command printed 42.").await;
    assert!(screen.contains("tmux-e2e-42"), "{screen}");
    assert!(screen.contains("[done]"), "{screen}");

    // A turn that stalls: Esc cancels it.
    mock.push(Reply::text(["partial answer", "never arrives"]).then(2, Ending::Stall));
    tmux.keys(&["a long task", "Enter"]);
    tmux.wait_for("partial answer").await;
    tmux.wait_for("working").await;
    tmux.keys(&["Escape"]);
    let screen = tmux.wait_for("turn cancelled").await;
    assert!(screen.contains("idle"), "{screen}");

    // Ctrl+C twice quits and the terminal is restored.
    tmux.keys(&["C-c"]);
    tmux.wait_for("press Ctrl+C again to quit").await;
    tmux.keys(&["C-c"]);
    let screen = tmux.wait_for("SCV-EXIT=").await;
    assert!(screen.contains("SCV-EXIT=0"), "{screen}");
    assert!(
        !screen.contains("Message"),
        "the alternate screen is gone: {screen}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ui_reconnects_when_the_daemon_comes_back() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("reconnect");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    let first = home.daemon_pid().expect("scv started the daemon");

    unsafe { libc::kill(first, libc::SIGTERM) };
    tmux.wait_for("the connection dropped").await;

    // Nobody starts it: `scv` does, and says so.
    let screen = tmux.wait_for("a new session started").await;
    let second = home.daemon_pid().expect("scv started the daemon again");
    assert_ne!(first, second);
    // The session ran nothing, so nothing of it was kept to offer back.
    assert!(!screen.contains("Ctrl+R"), "{screen}");
    mock.push(Reply::text(["back in business"]));
    tmux.keys(&["hello again", "Enter"]);
    tmux.wait_for("back in business").await;
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// The daemon comes back started by someone else: `scv` takes it.
#[tokio::test(flavor = "multi_thread")]
async fn the_ui_reconnects_to_a_daemon_someone_else_started() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("reconnect-other");
    let mut daemon = home.start_daemon();
    while !home.socket().exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    stop(&mut daemon);
    tmux.wait_for("the connection dropped").await;
    let mut daemon = home.start_daemon();
    tmux.wait_for("a new session started").await;
    mock.push(Reply::text(["back in business"]));
    tmux.keys(&["hello again", "Enter"]);
    tmux.wait_for("back in business").await;
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
    stop(&mut daemon);
}

/// A daemon that cannot start again (config.toml broken meanwhile) is
/// reported in its own words, with the file and line, not "reconnecting"
/// forever; fixing the file lets the next try through.
#[tokio::test(flavor = "multi_thread")]
async fn a_daemon_that_cannot_start_again_says_why() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("reconnect-broken");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    let config = home.path().join("config.toml");
    let good = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{good}\nmax_steps = [\n")).unwrap();
    let first = home.daemon_pid().expect("scv started the daemon");
    unsafe { libc::kill(first, libc::SIGTERM) };
    let screen = tmux.wait_for("cannot start the SCV daemon again").await;
    assert!(screen.contains("config.toml"), "{screen}");
    std::fs::write(&config, good).unwrap();
    tmux.wait_for("a new session started").await;
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// A conversation outlives its daemon: after a restart the TUI offers it
/// back, Ctrl+R brings it (transcript and history) and nothing of it runs
/// again until the user types.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_r_resumes_the_conversation_a_restart_took_away() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("resume");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    mock.push(Reply::text(["the answer is forty-two"]));
    tmux.keys(&["what is the answer", "Enter"]);
    tmux.wait_for("the answer is forty-two").await;
    tmux.wait_for("idle").await;
    let first = home.daemon_pid().expect("scv started the daemon");
    unsafe { libc::kill(first, libc::SIGKILL) };
    // `scv` starts the daemon again itself.
    tmux.wait_for("Press Ctrl+R to resume").await;
    let requests = mock.request_count();
    tmux.keys(&["C-r"]);
    let screen = tmux.wait_for("resumed").await;
    assert!(screen.contains("what is the answer"), "{screen}");
    assert_eq!(mock.request_count(), requests, "nothing ran again");

    mock.push(Reply::text(["still here"]));
    tmux.keys(&["and again", "Enter"]);
    tmux.wait_for("still here").await;
    let last = mock.requests().pop().unwrap();
    let body = last.body.to_string();
    assert!(body.contains("what is the answer"), "{body}");
    assert!(body.contains("the answer is forty-two"), "{body}");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// `/resume` lists the directory's sessions; typing filters, Enter opens
/// one; `scv --continue` opens the latest; `/fork` copies the one in view.
#[tokio::test(flavor = "multi_thread")]
async fn the_picker_resumes_continue_reopens_and_fork_copies() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("picker");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    mock.push(Reply::text(["penguins live in the south"]));
    tmux.keys(&["tell me about penguins", "Enter"]);
    tmux.wait_for("penguins live in the south").await;
    tmux.wait_for("│ idle │").await; // /new waits for the turn's end
    tmux.keys(&["/new", "Enter"]);
    tmux.wait_for("new session started").await;
    mock.push(Reply::text(["camels store fat"]));
    tmux.keys(&["tell me about camels", "Enter"]);
    tmux.wait_for("camels store fat").await;
    tmux.wait_for("│ idle │").await; // /new waits for the turn's end
    tmux.keys(&["/new", "Enter"]);
    tmux.wait_without("camels store fat").await;

    tmux.keys(&["/resume", "Enter"]);
    let screen = tmux.wait_for("tell me about penguins").await;
    assert!(screen.contains("tell me about camels"), "{screen}");
    tmux.keys(&["pengu"]);
    let screen = tmux.wait_for("filter: pengu").await;
    assert!(!screen.contains("tell me about camels"), "{screen}");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("penguins live in the south").await;
    assert!(!screen.contains("camels store fat"), "{screen}");

    tmux.keys(&["/fork", "Enter"]);
    let screen = tmux.wait_for("forked").await;
    assert!(screen.contains("penguins live in the south"), "{screen}");
    // It says which session the user is in now and which one is kept.
    let line = screen
        .lines()
        .find(|l| l.contains("forked: you are in "))
        .unwrap_or_else(|| panic!("{screen}"));
    let rest = line.split("forked: you are in ").nth(1).unwrap();
    let (fork, source) = (&rest[..8], &rest[10..18]);
    assert!(rest[18..].starts_with(" is kept"), "{line}");
    assert_ne!(fork, source, "{line}");
    // `scv sessions list` tells the fork apart.
    let listed = std::process::Command::new(SCV)
        .args(["sessions", "list"])
        .env("SCV_HOME", home.path())
        .output()
        .unwrap();
    let table = stdout(&listed);
    let fork_row = table
        .lines()
        .find(|l| l.contains(&format!("[fork of {source}]")));
    assert!(fork_row.is_some_and(|r| r.starts_with(fork)), "{table}");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;

    // The latest session of this directory is the fork, which holds the
    // penguins too.
    tmux.restart_scv_with(&home, "--continue");
    let screen = tmux.wait_for("penguins live in the south").await;
    assert!(!screen.contains("camels"), "{screen}");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;

    // So does the picker: the fork's short id and where it came from.
    tmux.restart_scv_with(&home, "resume");
    let screen = tmux.wait_for(&format!("forked from {source}")).await;
    let row = screen.lines().find(|l| l.contains("forked from")).unwrap();
    assert!(row.contains(fork), "{row}");
    assert!(
        screen.contains(&format!("{source} ·")),
        "the source: {screen}"
    );
}

/// `/undo` undoes the last turn that changed files, not a later one whose
/// `bash` only read: the first `/undo` puts the file back, the
/// conversation goes back to before the changing turn, and that turn's
/// prompt returns to the input box to be edited and sent again.
#[tokio::test(flavor = "multi_thread")]
async fn undo_skips_a_reading_bash_turn_and_gives_the_prompt_back() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "auto_approve = [\"read\", \"process\"]");
    let file = home.workspace().join("story.txt");
    std::fs::write(&file, "once upon a time\n").unwrap();
    let tmux = Tmux::new("undo-read");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "echo the end > story.txt"}),
    )]));
    mock.push(Reply::text(["Rewrote the story."]));
    tmux.keys(&["rewrite the story", "Enter"]);
    tmux.wait_for("Rewrote the story.").await;
    tmux.wait_for("idle").await;
    mock.push(Reply::tool_calls(&[(
        "c2",
        "bash",
        json!({"command": "cat story.txt"}),
    )]));
    mock.push(Reply::text(["It says the end."]));
    tmux.keys(&["read it back", "Enter"]);
    tmux.wait_for("It says the end.").await;
    tmux.wait_for("idle").await;
    tmux.keys(&["/undo", "Enter"]);
    let screen = tmux.wait_for("undone: 1 file").await;
    assert!(screen.contains("story.txt"), "{screen}");
    let words = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("its prompt is back in the input box"),
        "{screen}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "once upon a time\n"
    );
    assert!(!screen.contains("It says the end."), "{screen}");
    assert!(!screen.contains("Rewrote the story."), "{screen}");
    // The prompt waits in the input box: Enter sends it again.
    mock.push(Reply::text(["Again."]));
    tmux.keys(&["Enter"]);
    tmux.wait_for("Again.").await;
    let requests = mock.requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("rewrite the story"), "{last}");
    assert!(!last.contains("read it back"), "{last}");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// `/undo` puts the files back and takes the turn out of the
/// conversation; `/rewind` lists what is left.
#[tokio::test(flavor = "multi_thread")]
async fn undo_puts_back_what_a_command_changed() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "auto_approve = [\"read\", \"process\"]");
    let file = home.workspace().join("story.txt");
    std::fs::write(&file, "once upon a time\n").unwrap();
    let tmux = Tmux::new("undo");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "echo the end > story.txt"}),
    )]));
    mock.push(Reply::text(["Rewrote the story."]));
    tmux.keys(&["rewrite the story", "Enter"]);
    let screen = tmux.wait_for("Rewrote the story.").await;
    assert!(screen.contains("/undo puts it back"), "{screen}");
    // The turn ends once what it left is recorded.
    tmux.wait_for("idle").await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "the end\n");
    tmux.keys(&["/undo", "Enter"]);
    let screen = tmux.wait_for("undone: 1 file").await;
    assert!(screen.contains("story.txt"), "{screen}");
    assert!(!screen.contains("› rewrite the story"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "once upon a time\n"
    );
    // The undone prompt is back in the input box; Ctrl+C clears it.
    tmux.keys(&["C-c", "/rewind", "Enter"]);
    tmux.wait_for("no checkpoints yet").await;
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_on_a_terminal_shows_control_sequences_instead_of_obeying_them() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("exec");
    // A clipboard write (OSC 52) and a clear-screen inside the answer.
    mock.push(Reply::text([
        "before \u{1b}]52;c;cHduZWQ=\u{7} \u{1b}[2J",
        " after",
    ]));
    tmux.start_scv_with(&home, "exec 'say it'");
    let screen = tmux.wait_for("SCV-EXIT=").await;
    assert!(screen.contains("SCV-EXIT=0"), "{screen}");
    assert!(
        screen.contains("before ␛]52;c;cHduZWQ=␇ ␛[2J after"),
        "{screen}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_across_an_approval_answers_nothing_and_keeps_the_text() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    std::fs::write(
        home.workspace().join("app.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    let tmux = Tmux::new("typeahead");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    // The edit arrives while the next prompt is being typed.
    mock.push(
        Reply::tool_calls(&[(
            "e1",
            "edit_file",
            json!({"path": "app.py", "old_string": "a - b", "new_string": "a + b"}),
        )])
        .drip(Duration::from_millis(40)),
    );
    tmux.keys(&["fix the add function", "Enter"]);
    let typed = "yes yes no no y n and also rename it please";
    for c in typed.chars() {
        tmux.keys(&["-l", &c.to_string()]);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    tmux.wait_for("Approval needed").await;
    // Every key typed lands in the box (the last may be drawn a frame
    // after the prompt).
    let screen = tmux.wait_for(typed).await;
    assert!(
        screen.contains(typed),
        "the typed text is intact:\n{screen}"
    );
    assert!(
        screen.contains("empty the box to answer (↑↓ or 1/2/3, then Enter)"),
        "the prompt says how to answer:\n{screen}"
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(mock.request_count(), 1, "no tool result went back");
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("app.py")).unwrap(),
        "def add(a, b):\n    return a - b\n",
        "the file is unchanged"
    );
    assert!(tmux.screen().contains(typed));
    // Esc denies the call and cancels the turn, as /help says.
    tmux.keys(&["Escape"]);
    tmux.wait_for("turn cancelled").await;
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("app.py")).unwrap(),
        "def add(a, b):\n    return a - b\n",
        "the file is unchanged"
    );
    assert!(
        tmux.screen().contains(typed),
        "the draft survives the answer"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_from_a_answers_the_next_matching_command_and_a_compound_one_still_asks() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("rules");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;

    // First call: asked, answered with `a`, which shows the rule first.
    mock.push(Reply::tool_calls(&[(
        "r1",
        "bash",
        json!({"command": "echo hello 'rule'-2"}),
    )]));
    mock.push(Reply::text(["first done"]));
    tmux.keys(&["greet", "Enter"]);
    let screen = tmux.wait_for("Approval needed").await;
    assert!(
        screen.contains("always allow `echo …` (any arguments)"),
        "{screen}"
    );
    tmux.wait_for("❯ 1 Yes, once").await;
    tmux.keys(&["2", "Enter"]);
    let screen = tmux.wait_for("first done").await;
    assert!(screen.contains("hello rule-2"), "{screen}");
    assert!(screen.contains("rule added: `echo …`"), "{screen}");

    // A matching command runs without a prompt.
    mock.push(Reply::tool_calls(&[(
        "r2",
        "bash",
        json!({"command": "echo hello 'again'-3"}),
    )]));
    mock.push(Reply::text(["second done"]));
    tmux.keys(&["greet again", "Enter"]);
    let screen = tmux.wait_for("second done").await;
    assert!(screen.contains("hello again-3"), "{screen}");
    assert!(screen.contains("✓ approved by rule `echo`"), "{screen}");
    assert!(!screen.contains("Approval needed"), "{screen}");

    // A compound command with the same start still asks.
    mock.push(Reply::tool_calls(&[(
        "r3",
        "bash",
        json!({"command": "echo hello && echo 'compound'-4"}),
    )]));
    mock.push(Reply::text(["third done"]));
    tmux.keys(&["greet twice", "Enter"]);
    tmux.wait_for("Approval needed").await;
    tmux.wait_for("no rule: it is more than one command").await;
    tmux.wait_for("❯ 1 Yes, once").await;
    // No rule: ↓ goes from "Yes, once" straight to "No"; Enter picks it.
    tmux.keys(&["Down"]);
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("third done").await;
    assert!(!screen.contains("compound-4"), "it did not run: {screen}");
    assert!(screen.contains("[denied]"), "{screen}");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn scv_asks_for_reasoning_and_folds_the_thought_once_the_answer_starts() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("thinking");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    mock.push(Reply::text([
        "<think>first I weigh ",
        "the options</think>",
        "Here is the answer.",
    ]));
    tmux.keys(&["think first", "Enter"]);
    let screen = tmux.wait_for("Here is the answer.").await;
    assert!(screen.contains("✻ thought for 0 s · 5 words"), "{screen}");
    assert!(!screen.contains("<think>"), "{screen}");
    assert!(!screen.contains("weigh"), "folded: {screen}");
    tmux.keys(&["C-o"]);
    tmux.wait_for("first I weigh the options").await;
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_first_run_without_a_key_opens_with_a_note() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    // The default provider, its key variable unset.
    std::fs::write(
        home.path().join("config.toml"),
        "api_key_env = \"SCV_E2E_KEY_NEVER_SET\"\n",
    )
    .unwrap();
    let before = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let tmux = Tmux::new("firstrun");
    tmux.start_scv(&home);
    let screen = tmux.wait_for("First run?").await;
    assert!(
        screen.contains("SCV_E2E_KEY_NEVER_SET is not set"),
        "{screen}"
    );
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
    assert_eq!(
        std::fs::read_to_string(home.path().join("config.toml")).unwrap(),
        before,
        "nothing written on the user's behalf"
    );
}

/// With the default provider's key unset but Anthropic's set, the note
/// names Anthropic and the command that uses it, once.
#[tokio::test(flavor = "multi_thread")]
async fn a_first_run_with_another_providers_key_names_that_provider_once() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    std::fs::write(
        home.path().join("config.toml"),
        "api_key_env = \"SCV_E2E_KEY_NEVER_SET\"\n",
    )
    .unwrap();
    let tmux = Tmux::new("firstrun-anthropic");
    tmux.start_command(
        &home,
        &format!(
            "env -u OPENROUTER_API_KEY -u DEEPSEEK_API_KEY -u GEMINI_API_KEY ANTHROPIC_API_KEY=sk-ant-test {}",
            scv_command(&home, "")
        ),
    );
    tmux.wait_for("First run?").await;
    let screen = tmux.wait_for("scv --provider anthropic").await;
    assert!(
        screen.contains("ANTHROPIC_API_KEY is set: use anthropic with"),
        "{screen}"
    );
    assert_eq!(screen.matches("--provider").count(), 1, "once: {screen}");
    assert_eq!(screen.matches("First run?").count(), 1, "once: {screen}");
    // The server's warning of the same missing key is not said again.
    assert_eq!(screen.matches("is not set").count(), 1, "once: {screen}");
    assert!(!screen.contains("export SCV_E2E_KEY_NEVER_SET"), "{screen}");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn model_switches_the_running_session_and_copy_sets_the_clipboard() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("model");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    // tmux takes OSC 52 from the application into a paste buffer.
    tmux.run(&["set", "-g", "set-clipboard", "on"]);
    mock.push(Reply::text(["first answer"]));
    tmux.keys(&["hello", "Enter"]);
    tmux.wait_for("first answer").await;
    // The answer shows before the turn ends, and the model switches only
    // while idle.
    tmux.wait_for("│ idle │").await;

    tmux.keys(&["/model other-model", "Enter"]);
    let screen = tmux.wait_for("now using").await;
    assert!(screen.contains("other-model"), "{screen}");
    mock.push(Reply::text(["second answer"]));
    tmux.keys(&["again", "Enter"]);
    tmux.wait_for("second answer").await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["model"], "mock-model");
    assert_eq!(requests[1].body["model"], "other-model");
    let history = requests[1].body["messages"].to_string();
    assert!(history.contains("first answer"), "the history is kept");

    tmux.keys(&["/copy", "Enter"]);
    tmux.wait_for("copied the last answer").await;
    let mut buffer = String::new();
    for _ in 0..200 {
        buffer = tmux.run(&["show-buffer"]);
        if !buffer.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(buffer, "second answer");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_call_shows_its_subagents_card_and_ctrl_o_its_transcript() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("subagent");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    // The parent calls `task`; the child answers slowly (its card shows
    // it running); then the parent answers with what the child found.
    mock.push(Reply::tool_calls(&[(
        "t1",
        "task",
        json!({"description": "count the files", "prompt": "Count the files in the workspace."}),
    )]));
    mock.push(
        Reply::text(["There are ", "three ", "files ", "here."]).drip(Duration::from_millis(400)),
    );
    mock.push(Reply::text(["The subagent counted three files."]));
    tmux.keys(&["count the files with a subagent", "Enter"]);
    let screen = tmux.wait_for("«count the files»  running").await;
    assert!(screen.contains("task «count the files»"), "{screen}");
    let screen = tmux.wait_for("«count the files»  completed").await;
    assert!(screen.contains("1 step"), "{screen}");
    tmux.wait_for("The subagent counted three files.").await;
    tmux.wait_for("idle").await;

    // Ctrl+O: the child's own transcript, opening with its task.
    tmux.keys(&["C-o"]);
    let screen = tmux.wait_for("Esc closes").await;
    assert!(
        screen.contains("› Count the files in the workspace."),
        "{screen}"
    );
    assert!(screen.contains("There are three files here."), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.wait_without("Esc closes").await;
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// A provider's "not now" (429) shows on the status line as a countdown
/// with the reason, and goes when the answer comes.
#[tokio::test(flavor = "multi_thread")]
async fn a_retry_counts_down_on_the_status_line() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("retry");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    mock.push(Reply::error(429, "slow down").header("retry-after", "3"));
    mock.push(Reply::text(["after the wait"]));
    tmux.keys(&["go", "Enter"]);
    let screen = tmux.wait_for("(429 rate limited, 1 of 3)").await;
    assert!(screen.contains("retrying in"), "{screen}");
    tmux.wait_for("after the wait").await;
    let screen = tmux.wait_for("idle").await;
    assert!(!screen.contains("retrying"), "{screen}");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// A command the sandbox refused says so on its card, with how to allow
/// it; with the network off the status line and `/status` say that too.
#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_refusal_is_named_on_the_card_and_the_network_state_is_shown() {
    if !matches!(scv_sandbox::probe(), scv_sandbox::Support::Enforced { .. }) {
        assert!(std::env::var_os("SCV_REQUIRE_LANDLOCK").is_none());
        return;
    }
    let mock = MockProvider::start().await;
    let home = Home::new(
        &mock,
        "sandbox_network = false\nauto_approve = [\"read\", \"sandboxed\"]",
    );
    let tmux = Tmux::new("refusal");
    tmux.start_scv(&home);
    let screen = tmux.wait_for("idle").await;
    assert!(screen.contains("net off"), "{screen}");
    mock.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        json!({"command": "touch /usr/scv-refused"}),
    )]));
    mock.push(Reply::text(["It was refused."]));
    tmux.keys(&["make the file", "Enter"]);
    tmux.wait_for("It was refused.").await;
    let screen = tmux.wait_for("ran in the sandbox").await;
    assert!(screen.contains("unsandboxed"), "{screen}");
    tmux.keys(&["/status", "Enter"]);
    tmux.wait_for("sandbox_network = false").await;
    tmux.keys(&["Escape"]);
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// `/model` alone lists the provider's models as a picker: typing
/// filters, Enter switches, and the next request uses the new model.
#[tokio::test(flavor = "multi_thread")]
async fn model_without_a_name_picks_from_the_providers_list() {
    let mock = MockProvider::start().await;
    mock.set_models(&["alpha-model", "beta-model", "mock-model"]);
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("models");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    tmux.keys(&["/model", "Enter"]);
    let screen = tmux.wait_for("Switch model").await;
    assert!(screen.contains("alpha-model"), "{screen}");
    assert!(screen.contains("(current)"), "{screen}");
    tmux.keys(&["beta"]);
    let screen = tmux.wait_for("filter: beta").await;
    assert!(!screen.contains("alpha-model"), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("now using openai/beta-model").await;
    mock.push(Reply::text(["hi from beta"]));
    tmux.keys(&["hello", "Enter"]);
    tmux.wait_for("hi from beta").await;
    assert_eq!(mock.requests().pop().unwrap().body["model"], "beta-model");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// `scv "PROMPT"` opens the TUI and sends it as the first message, as
/// `claude "…"` and `codex "…"` do.
#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_on_the_command_line_is_the_first_message() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    mock.push(Reply::text(["answered from the command line"]));
    let tmux = Tmux::new("argprompt");
    tmux.start_scv_with(&home, "'what is in here?'");
    let screen = tmux.wait_for("answered from the command line").await;
    assert!(screen.contains("› what is in here?"), "{screen}");
    let body = &mock.requests()[0].body;
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["content"], "what is in here?");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// Quitting leaves a summary on the normal screen: the session, how to
/// resume it, what it used (the transcript left with the alternate
/// screen).
#[tokio::test(flavor = "multi_thread")]
async fn quitting_prints_how_to_resume_the_session() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("summary");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    mock.push(Reply::text(["noted"]));
    tmux.keys(&["remember this", "Enter"]);
    tmux.wait_for("noted").await;
    tmux.wait_for("idle").await;
    tmux.quit().await;
    let screen = tmux.wait_for("SCV-EXIT=0").await;
    let text = screen.replace('\n', "");
    assert!(text.contains("resume it with `scv resume "), "{screen}");
    assert!(text.contains("input and "), "{screen}");
}

/// A cancelled turn's spend counts on the status line, and after a resume
/// the counters and `/cost` come back with what the session spent, as
/// `scv usage` counts it.
#[tokio::test(flavor = "multi_thread")]
async fn a_resume_brings_the_counters_and_cost_back_with_a_cancelled_turns_spend() {
    let mock = MockProvider::start().await;
    let home = Home::new(
        &mock,
        "[pricing.\"mock-model\"]\ninput = 1.0\noutput = 4.0\n",
    );
    let tmux = Tmux::new("resume-cost");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    // 1,000 in and 500 out: $0.0030.
    mock.push(Reply::text(["first answer"]).with_usage(1000, 500));
    tmux.keys(&["first", "Enter"]);
    tmux.wait_for("first answer").await;
    // The step's tokens come first (`usage.updated`), the cost with the
    // turn's end.
    tmux.wait_for("1.0k↑ 500↓").await;
    tmux.wait_for("$0.0030").await;
    // A step of 2,000 in and 100 out ($0.0024) asks to run a command;
    // Esc cancels the turn there.
    mock.push(
        Reply::tool_calls(&[("c1", "bash", json!({"command": "echo hi"}))]).with_usage(2000, 100),
    );
    tmux.keys(&["second", "Enter"]);
    tmux.wait_for("Approval needed").await;
    tmux.keys(&["Escape"]);
    tmux.wait_for("turn cancelled").await;
    tmux.wait_for("3.0k↑ 600↓").await;
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;

    tmux.restart_scv_with(&home, "--continue");
    tmux.wait_for("resumed").await;
    tmux.wait_for("3.0k↑ 600↓").await;
    tmux.wait_for("$0.0054").await;
    tmux.keys(&["/cost", "Enter"]);
    let screen = tmux.wait_for("turns before this resume").await;
    assert!(screen.contains("3.0k in"), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;

    let output = std::process::Command::new(SCV)
        .args(["usage", "--by", "model"])
        .env("SCV_HOME", home.path())
        .output()
        .unwrap();
    let table = stdout(&output);
    assert!(table.contains("0.0054"), "{table}");
}

/// A provider key exported in this shell but missing in the running daemon
/// is said exactly, with when the daemon started; `scv daemon restart`
/// from this shell gives the daemon the key.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_set_in_the_shell_but_not_in_the_daemon_is_said_and_restart_fixes_it() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    // The default provider (a public API, so it needs its key).
    std::fs::write(
        home.path().join("config.toml"),
        "api_key_env = \"SCV_E2E_A2_KEY\"\n",
    )
    .unwrap();
    let mut daemon = home.start_daemon(); // without SCV_E2E_A2_KEY
    while !home.socket().exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let tmux = Tmux::new("key-in-shell");
    let with_key = format!("env SCV_E2E_A2_KEY=sk-test {}", scv_command(&home, ""));
    tmux.start_command(&home, &with_key);
    let screen = tmux
        .wait_for("SCV_E2E_A2_KEY is set in this shell, not in the daemon started at ")
        .await;
    let flat = screen.replace('\n', " ");
    assert!(flat.contains("`scv daemon restart`, then /new"), "{screen}");
    assert!(!screen.contains("not set in the server's"), "{screen}");
    assert!(!screen.contains("First run?"), "{screen}");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;

    let restarted = Command::new(SCV)
        .args(["daemon", "restart"])
        .env("SCV_HOME", home.path())
        .env("SCV_SERVER_BIN", server_bin())
        .env("SCV_E2E_A2_KEY", "sk-test")
        .output()
        .unwrap();
    assert!(restarted.status.success(), "{}", stderr(&restarted));
    assert!(
        stdout(&restarted).contains("started"),
        "{}",
        stdout(&restarted)
    );
    daemon.wait().unwrap(); // the first one stopped

    tmux.restart_command(&home, &with_key);
    let screen = tmux.wait_for("idle").await;
    assert!(!screen.contains("SCV_E2E_A2_KEY"), "{screen}");
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// An edit of `config.toml` the open session does not take is said on the
/// status line until `/new`; a budget's edit (which it takes) is not.
#[tokio::test(flavor = "multi_thread")]
async fn a_config_change_the_open_session_does_not_take_is_on_the_status_line() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("config-changed");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    let config = home.path().join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    // A budget reaches the open session: nothing to say.
    std::fs::write(&config, format!("max_turn_tokens = 900000\n{text}")).unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        !tmux.screen().contains("config changed"),
        "{}",
        tmux.screen()
    );
    // The step bound does not.
    std::fs::write(
        &config,
        format!("max_turn_tokens = 900000\nmax_steps = 7\n{text}"),
    )
    .unwrap();
    let screen = tmux.wait_for("config changed: /new to use it").await;
    assert!(screen.contains("idle"), "{screen}");
    tmux.keys(&["/new", "Enter"]);
    tmux.wait_for("new session started").await;
    tmux.wait_without("config changed").await;
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
}

/// Quitting while a turn runs asks; `L` leaves it running in the daemon
/// (`scv agents` lists it, it completes); `scv attach ID` shows it whole
/// and takes prompts; quitting an idle session `scv` did not open leaves
/// it live, and `S` on a running one stops it.
#[tokio::test(flavor = "multi_thread")]
async fn quitting_mid_turn_asks_leave_runs_on_and_attach_takes_it_back() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("leave");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    let words: Vec<String> = (0..30).map(|n| format!("tok{n} ")).collect();
    mock.push(Reply::text(words).drip(Duration::from_millis(60)));
    tmux.keys(&["count to thirty", "Enter"]);
    tmux.wait_for("tok1").await;
    // Mid-turn on purpose: the quit is a question.
    tmux.keys(&["C-d"]);
    tmux.wait_for("L: leave it running").await;
    tmux.keys(&["l"]);
    tmux.wait_for("SCV-EXIT=0").await;

    // Still live, and it runs to its end without any client.
    let agents = |json: bool| {
        let mut command = home.scv();
        command.arg("agents");
        if json {
            command.arg("--json");
        }
        stdout(&command.output().unwrap())
    };
    let listed: Vec<Value> = serde_json::from_str(&agents(true)).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let id = listed[0]["session_id"].as_str().unwrap().to_string();
    let mut idle = false;
    for _ in 0..400 {
        let listed: Vec<Value> = serde_json::from_str(&agents(true)).unwrap();
        if listed[0]["state"] == "idle" && listed[0]["turns"] == 1 {
            idle = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(idle, "{}", agents(false));

    // Attached again: the whole answer, and it takes a prompt.
    tmux.restart_scv_with(&home, &format!("attach {}", &id[..8]));
    tmux.wait_for("attached to session").await;
    tmux.wait_for("tok29").await;
    mock.push(Reply::text(["attached and answering"]));
    tmux.keys(&["and now?", "Enter"]);
    tmux.wait_for("attached and answering").await;
    tmux.wait_without("working").await;
    // Quitting an attached idle session leaves it live.
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
    let listed: Vec<Value> = serde_json::from_str(&agents(true)).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["turns"], 2);

    // `S` stops a running one: closed, its turn cancelled.
    mock.push(Reply::text(["slow", "never"]).then(2, Ending::Stall));
    tmux.restart_scv_with(&home, &format!("attach {id}"));
    tmux.wait_for("attached to session").await;
    tmux.keys(&["hang on", "Enter"]);
    tmux.wait_for("slow").await;
    tmux.quit().await;
    tmux.wait_for("S: stop it").await;
    tmux.keys(&["s"]);
    tmux.wait_for("SCV-EXIT=0").await;
    let mut gone = false;
    for _ in 0..200 {
        if agents(false) == "no live sessions\n" {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(gone, "{}", agents(false));
}

/// A session the TUI opened and quit idle is closed: nothing lingers.
#[tokio::test(flavor = "multi_thread")]
async fn quitting_an_idle_session_leaves_nothing_live() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    let tmux = Tmux::new("idle-quit");
    tmux.start_scv(&home);
    tmux.wait_for("idle").await;
    mock.push(Reply::text(["done"]));
    tmux.keys(&["hi", "Enter"]);
    tmux.wait_for("done").await;
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
    let out = home.scv().arg("agents").output().unwrap();
    assert_eq!(stdout(&out), "no live sessions\n");
}

/// `scv agents` in a terminal numbers the live sessions and attaches the
/// TUI to the one chosen.
#[tokio::test(flavor = "multi_thread")]
async fn agents_in_a_terminal_picks_a_session_to_attach() {
    let mock = MockProvider::start().await;
    let home = Home::new(&mock, "");
    mock.push(Reply::text(["picked and shown"]));
    let bg = home.scv().args(["--bg", "say something"]).output().unwrap();
    assert!(bg.status.success(), "{}", stderr(&bg));
    let id = stdout(&bg).trim().to_string();
    let tmux = Tmux::new("agents-pick");
    tmux.start_scv_with(&home, "agents");
    let screen = tmux.wait_for("attach to (1-1, Enter: none)").await;
    assert!(screen.contains(&id[..8]), "{screen}");
    tmux.keys(&["1", "Enter"]);
    tmux.wait_for("attached to session").await;
    tmux.wait_for("picked and shown").await;
    tmux.wait_without("working").await;
    tmux.quit().await;
    tmux.wait_for("SCV-EXIT=0").await;
    let stop = home.scv().args(["stop", &id]).output().unwrap();
    assert!(stop.status.success(), "{}", stderr(&stop));
}
