//! What a hook's run means: Claude Code's exit codes and JSON output, and
//! SCV's rule that a gate which cannot answer closes.
//!
//! Claude Code's documentation, "Simple: Exit Code":
//! - "Exit code 0: Success. `stdout` is shown to the user in transcript mode
//!   (CTRL-R), except for `UserPromptSubmit` and `SessionStart`, where stdout
//!   is added to the context."
//! - "Exit code 2: Blocking error. `stderr` is fed back to Claude to process
//!   automatically." ("Claude Code ignores stdout and any JSON in it.")
//! - "Other exit codes: Non-blocking error. `stderr` is shown to the user and
//!   execution continues."
//!
//! FAIL CLOSED (SCV, stricter than Claude Code): PreToolUse and
//! UserPromptSubmit hooks are gates. One that could not start, timed out,
//! was killed by a signal, printed more than [`MAX_STDOUT_BYTES`], printed
//! stdout that starts with `{` but is not JSON, or answered with a decision
//! that is not one of the known values DENIES the call / BLOCKS the prompt,
//! with a reason naming the hook. For the other events the same failures are
//! messages to the user and nothing is blocked. (A plain non-zero exit other
//! than 2 stays Claude Code's non-blocking error: that is the documented
//! meaning hooks are written against.)

use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::HookCommand;
use crate::event::Event;

/// The most stdout the server keeps of a run; more sets `stdout_truncated`.
pub const MAX_STDOUT_BYTES: usize = 64 * 1024;
/// The most stderr the server keeps of a run; more sets `stderr_truncated`.
pub const MAX_STDERR_BYTES: usize = 16 * 1024;
/// The longest text put in a reason or a user message.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024;
/// The longest text one hook adds to the context.
pub const MAX_CONTEXT_BYTES: usize = 16 * 1024;

/// How a hook's process ended.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past its timeout (and was killed).
    TimedOut,
    /// It could not be started (the error).
    FailedToStart(String),
}

/// One run of a hook, as the server captured it (at most
/// [`MAX_STDOUT_BYTES`] and [`MAX_STDERR_BYTES`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Run {
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// It printed more on stdout than was kept.
    pub stdout_truncated: bool,
    /// It printed more on stderr than was kept.
    pub stderr_truncated: bool,
}

/// What the hooks decided.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub enum Decision {
    /// Nothing: the action goes on as it would have.
    #[default]
    None,
    /// PreToolUse: "allow" (skip asking the user).
    Allow,
    /// PreToolUse: the call is not made; `reason` is its result.
    Deny,
    /// PreToolUse: ask the user (`reason` is shown in the question).
    Ask,
    /// UserPromptSubmit: the prompt is blocked and erased (`reason` to the
    /// user only). Stop: keep going (`reason` tells the model what to do).
    /// PostToolUse: `reason` is fed to the model with the tool's result.
    Block,
}

impl Decision {
    /// deny beats block beats ask beats allow beats none.
    fn rank(self) -> u8 {
        match self {
            Decision::None => 0,
            Decision::Allow => 1,
            Decision::Ask => 2,
            Decision::Block => 3,
            Decision::Deny => 4,
        }
    }
}

/// What the server does after one hook (or, combined, all of an event's).
#[derive(Clone, PartialEq, Eq, Default, Debug)]
pub struct Outcome {
    pub decision: Decision,
    /// For the model and the user: PreToolUse deny, the tool result; ask,
    /// the question's explanation; Stop block, what to do next; PostToolUse
    /// block (or exit 2), appended to the tool result; UserPromptSubmit
    /// block, why (to the user only).
    pub reason: Option<String>,
    /// Added to the model's context: `additionalContext`, and for
    /// UserPromptSubmit and SessionStart plain stdout on exit 0.
    pub context: Vec<String>,
    /// For the user only: `systemMessage`, non-blocking errors, failures of
    /// hooks that are not gates, a PreToolUse allow's reason.
    pub user_messages: Vec<String>,
    /// `"continue": false`: stop processing, for this reason (the user's).
    pub stop: Option<String>,
}

/// Whether a failure of a hook of this event closes the gate.
fn fails_closed(event: Event) -> bool {
    matches!(event, Event::PreToolUse | Event::UserPromptSubmit)
}

/// What a hook that went wrong (`message` names it) means for `event`.
fn failure(event: Event, message: String) -> Outcome {
    let message = bound(&message, MAX_MESSAGE_BYTES);
    if !fails_closed(event) {
        return Outcome {
            user_messages: vec![message],
            ..Outcome::default()
        };
    }
    let decision = if event == Event::PreToolUse {
        Decision::Deny
    } else {
        Decision::Block
    };
    Outcome {
        decision,
        reason: Some(message),
        ..Outcome::default()
    }
}

/// What one run of `hook` for `event` means.
pub fn interpret(event: Event, hook: &HookCommand, run: Run) -> Outcome {
    let label = hook.label();
    match &run.exit {
        Exit::FailedToStart(e) => failure(event, format!("{label} failed to start: {e}")),
        Exit::TimedOut => failure(
            event,
            format!("{label} timed out after {}", seconds(hook.timeout)),
        ),
        Exit::Signal(n) => failure(event, format!("{label} was killed by signal {n}")),
        Exit::Code(2) => blocking_error(event, &label, &run),
        Exit::Code(0) => match success(event, &label, &run) {
            Ok(outcome) => outcome,
            Err(message) => failure(event, message),
        },
        Exit::Code(code) => {
            // "Non-blocking error. stderr is shown to the user and execution
            // continues."
            let stderr = stderr_text(&run);
            let message = if stderr.is_empty() {
                format!("{label} exited {code}")
            } else {
                format!("{label} exited {code}: {stderr}")
            };
            Outcome {
                user_messages: vec![bound(&message, MAX_MESSAGE_BYTES)],
                ..Outcome::default()
            }
        }
    }
}

/// Exit code 2. Claude Code's table "Exit Code 2 Behavior":
/// PreToolUse "Blocks the tool call, shows stderr to Claude"; PostToolUse
/// "Shows stderr to Claude (tool already ran)"; UserPromptSubmit "Blocks
/// prompt processing, erases prompt, shows stderr to user only"; Stop
/// "Blocks stoppage, shows stderr to Claude"; PreCompact, SessionStart,
/// SessionEnd "N/A, shows stderr to user only". stdout is ignored.
fn blocking_error(event: Event, label: &str, run: &Run) -> Outcome {
    let stderr = stderr_text(run);
    let reason = |what: &str| {
        if stderr.is_empty() {
            format!("{label} exited 2 ({what}) and wrote nothing on stderr")
        } else {
            stderr.clone()
        }
    };
    match event {
        Event::PreToolUse => Outcome {
            decision: Decision::Deny,
            reason: Some(reason("blocking the tool call")),
            ..Outcome::default()
        },
        Event::PostToolUse => Outcome {
            decision: Decision::Block,
            reason: Some(reason("a blocking error")),
            ..Outcome::default()
        },
        Event::UserPromptSubmit => Outcome {
            decision: Decision::Block,
            reason: Some(reason("blocking the prompt")),
            ..Outcome::default()
        },
        Event::Stop | Event::SubagentStop => Outcome {
            decision: Decision::Block,
            reason: Some(reason("blocking the stop")),
            ..Outcome::default()
        },
        Event::SessionStart
        | Event::SessionEnd
        | Event::PreCompact
        | Event::Notification
        | Event::SubagentStart => {
            let message = if stderr.is_empty() {
                format!("{label} exited 2")
            } else {
                format!("{label} exited 2: {stderr}")
            };
            Outcome {
                user_messages: vec![bound(&message, MAX_MESSAGE_BYTES)],
                ..Outcome::default()
            }
        }
    }
}

/// Exit code 0: JSON on stdout if it is JSON (an object: it starts with
/// `{`), else plain text. Err: what was wrong, naming the hook.
fn success(event: Event, label: &str, run: &Run) -> Result<Outcome, String> {
    if run.stdout_truncated {
        return Err(format!(
            "{label} printed more than {} KiB on stdout",
            MAX_STDOUT_BYTES / 1024
        ));
    }
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stdout = stdout.trim();
    if stdout.starts_with('{') {
        let object: Map<String, Value> = serde_json::from_str(stdout)
            .map_err(|e| format!("{label} printed invalid JSON: {e}"))?;
        return json_output(event, label, &object);
    }
    // "except for UserPromptSubmit and SessionStart, where stdout is added
    // to the context" (elsewhere it is transcript-only; SCV drops it).
    let mut outcome = Outcome::default();
    if !stdout.is_empty() && matches!(event, Event::UserPromptSubmit | Event::SessionStart) {
        outcome.context.push(bound(stdout, MAX_CONTEXT_BYTES));
    }
    Ok(outcome)
}

/// A string field, bounded; anything else (absent, null, another type) is
/// None: the informational fields are read leniently, the deciding ones
/// strictly.
fn text(object: &Map<String, Value>, key: &str, max: usize) -> Option<String> {
    match object.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(bound(s.trim(), max)),
        _ => None,
    }
}

/// A deciding field: None when absent or null, else its string value; a
/// value that is not a string is shown as JSON in the error.
fn word<'o>(object: &'o Map<String, Value>, key: &str) -> Result<Option<&'o str>, &'o Value> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(other),
    }
}

/// Shows a decision value in a message: `"maybe"` or the JSON of a non-string.
fn shown(value: Result<&str, &Value>) -> String {
    match value {
        Ok(s) => Value::from(s).to_string(),
        Err(v) => bound(&v.to_string(), 200),
    }
}

/// "Advanced: JSON Output".
fn json_output(event: Event, label: &str, o: &Map<String, Value>) -> Result<Outcome, String> {
    let mut out = Outcome::default();

    // "continue: Whether Claude should continue after hook execution
    // (default: true)"; "stopReason accompanies continue with a reason shown
    // to the user, not shown to Claude."
    match o.get("continue") {
        None | Some(Value::Null) | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => {
            out.stop =
                Some(text(o, "stopReason", MAX_MESSAGE_BYTES).unwrap_or_else(|| {
                    format!("{label} stopped processing (\"continue\": false)")
                }));
        }
        Some(other) => {
            return Err(format!(
                "{label} gave \"continue\" {}, not true or false",
                bound(&other.to_string(), 200)
            ))
        }
    }
    // "systemMessage: Optional warning message shown to the user".
    // `suppressOutput` ("Hide stdout from transcript mode") needs nothing:
    // SCV shows no hook's stdout.
    if let Some(message) = text(o, "systemMessage", MAX_MESSAGE_BYTES) {
        out.user_messages.push(message);
    }

    let specific = match o.get("hookSpecificOutput") {
        None | Some(Value::Null) => None,
        Some(Value::Object(specific)) => Some(specific),
        Some(_) => {
            return Err(format!(
                "{label} gave a \"hookSpecificOutput\" that is not an object"
            ))
        }
    };
    if let Some(specific) = specific {
        match word(specific, "hookEventName") {
            Ok(None) => {}
            Ok(Some(name)) if name == event.as_str() => {}
            other => {
                return Err(format!(
                    "{label} gave hookEventName {} in the output of a {event} hook",
                    shown(other.map(Option::unwrap_or_default))
                ))
            }
        }
        if let Some(context) = text(specific, "additionalContext", MAX_CONTEXT_BYTES) {
            out.context.push(context);
        }
    }
    let decision = word(o, "decision");
    let reason = text(o, "reason", MAX_MESSAGE_BYTES);

    match event {
        Event::PreToolUse => pre_tool_use(&mut out, label, specific, decision, reason)?,
        Event::PostToolUse => match decision {
            // ""block" automatically prompts Claude with reason";
            // "undefined does nothing. reason is ignored."
            Ok(None) | Ok(Some("approve")) => {}
            Ok(Some("block")) => {
                out.decision = Decision::Block;
                out.reason = Some(reason.unwrap_or_else(|| format!("{label} flagged the result")));
            }
            other => {
                out.user_messages.push(format!(
                    "{label} gave decision {}, not block",
                    shown(other.map(Option::unwrap_or_default))
                ));
            }
        },
        Event::UserPromptSubmit => user_prompt_submit(&mut out, label, decision, reason)?,
        Event::Stop | Event::SubagentStop => match decision {
            Ok(None) | Ok(Some("approve")) => {}
            // ""block" prevents Claude from stopping. You must populate
            // reason for Claude to know how to proceed."
            Ok(Some("block")) => {
                // "For Stop and SubagentStop, [continue: false] takes
                // precedence over any "decision": "block" output."
                if out.stop.is_none() {
                    out.decision = Decision::Block;
                    out.reason = Some(reason.unwrap_or_else(|| {
                        format!("{label} kept the turn going but gave no reason")
                    }));
                }
            }
            other => {
                out.user_messages.push(format!(
                    "{label} gave decision {}, not block",
                    shown(other.map(Option::unwrap_or_default))
                ));
            }
        },
        // SessionStart: additionalContext (above); SessionEnd, PreCompact,
        // Notification, SubagentStart are told and decide nothing here.
        _ => {}
    }
    Ok(out)
}

/// A `PreToolUse` hook's decision: `hookSpecificOutput.permissionDecision`
/// (allow, deny, ask) with its reason, else the deprecated top-level
/// `decision` (approve, block); `updatedInput` is refused.
fn pre_tool_use(
    out: &mut Outcome,
    label: &str,
    specific: Option<&Map<String, Value>>,
    decision: Result<Option<&str>, &Value>,
    reason: Option<String>,
) -> Result<(), String> {
    let specific_decision = specific.map_or(Ok(None), |s| word(s, "permissionDecision"));
    let (decision, reason) = match specific_decision {
        // "allow" / "deny" / "ask", with permissionDecisionReason.
        Ok(Some(d)) => {
            let decision = match d {
                "allow" => Decision::Allow,
                "deny" => Decision::Deny,
                "ask" => Decision::Ask,
                _ => {
                    return Err(format!(
                        "{label} gave permissionDecision {}, not allow, deny or ask",
                        shown(Ok(d))
                    ))
                }
            };
            let reason =
                specific.and_then(|s| text(s, "permissionDecisionReason", MAX_MESSAGE_BYTES));
            (decision, reason)
        }
        Err(v) => {
            return Err(format!(
                "{label} gave permissionDecision {}, not allow, deny or ask",
                shown(Err(v))
            ))
        }
        // "decision": "approve" | "block" — "Deprecated for
        // PreToolUse but still supported": "Deprecated "approve"
        // value + reason has the same behavior" as allow; ""block"
        // value + reason has the same behavior" as deny.
        Ok(None) => match decision {
            Ok(None) => (Decision::None, None),
            Ok(Some("approve")) => (Decision::Allow, reason),
            Ok(Some("block")) => (Decision::Deny, reason),
            other => {
                return Err(format!(
                    "{label} gave decision {}, not approve or block",
                    shown(other.map(Option::unwrap_or_default))
                ))
            }
        },
    };
    // Claude Code may rewrite the call's arguments (updatedInput);
    // SCV cannot, and running the call unchanged could be exactly
    // what the hook meant to prevent.
    if specific.is_some_and(|s| !matches!(s.get("updatedInput"), None | Some(Value::Null))) {
        return Err(format!(
            "{label} gave updatedInput, which SCV does not support (it cannot change a call's arguments)"
        ));
    }
    out.decision = decision;
    match decision {
        // "permissionDecisionReason is shown to the user but not to
        // Claude."
        Decision::Allow => out.user_messages.extend(reason),
        // deny: "shown to Claude"; ask: "shown to the user" in the
        // question.
        Decision::Deny => {
            out.reason = Some(reason.unwrap_or_else(|| format!("{label} denied the call")));
        }
        _ => out.reason = reason,
    }
    Ok(())
}

/// A `UserPromptSubmit` hook's decision: `block` (or `continue: false`)
/// keeps the prompt out, and then its context too.
fn user_prompt_submit(
    out: &mut Outcome,
    label: &str,
    decision: Result<Option<&str>, &Value>,
    reason: Option<String>,
) -> Result<(), String> {
    match decision {
        Ok(None) | Ok(Some("approve")) => {}
        // ""block" prevents the prompt from being processed. The
        // submitted prompt is erased from context. "reason" is shown
        // to the user but not added to context."
        Ok(Some("block")) => {
            out.decision = Decision::Block;
            out.reason = Some(reason.unwrap_or_else(|| format!("{label} blocked the prompt")));
        }
        other => {
            return Err(format!(
                "{label} gave decision {}, not block",
                shown(other.map(Option::unwrap_or_default))
            ))
        }
    }
    // "continue: false ... For UserPromptSubmit, this prevents the
    // prompt from being processed."
    if let Some(stop) = &out.stop {
        out.decision = Decision::Block;
        out.reason.get_or_insert_with(|| stop.clone());
    }
    // "additionalContext adds the string to the context if not
    // blocked."
    if out.decision == Decision::Block {
        out.context.clear();
    }
    Ok(())
}

/// Several hooks ran for one event: deny beats ask beats allow beats none
/// (and any block blocks); the winning decision's reasons are joined in
/// order (the others' go to the user), contexts, messages and stops are
/// concatenated in order. For Stop, a `continue: false` of any hook beats
/// every block, as it does within one hook's output.
pub fn combine(event: Event, outcomes: Vec<Outcome>) -> Outcome {
    let decision = outcomes
        .iter()
        .map(|o| o.decision)
        .max_by_key(|d| d.rank())
        .unwrap_or_default();
    let mut out = Outcome {
        decision,
        ..Outcome::default()
    };
    let mut reasons = Vec::new();
    let mut stops = Vec::new();
    for o in outcomes {
        if let Some(reason) = o.reason {
            if o.decision == decision {
                reasons.push(reason);
            } else {
                out.user_messages.push(reason);
            }
        }
        out.context.extend(o.context);
        out.user_messages.extend(o.user_messages);
        stops.extend(o.stop);
    }
    if !reasons.is_empty() {
        out.reason = Some(reasons.join("\n\n"));
    }
    if !stops.is_empty() {
        out.stop = Some(stops.join("\n"));
    }
    if event == Event::Stop && out.stop.is_some() && out.decision == Decision::Block {
        out.decision = Decision::None;
        out.user_messages.extend(out.reason.take());
    }
    out
}

/// stderr as text: lossy UTF-8, trimmed, bounded, with a marker when the
/// server cut it.
fn stderr_text(run: &Run) -> String {
    let stderr = String::from_utf8_lossy(&run.stderr);
    let mut text = bound(stderr.trim(), MAX_MESSAGE_BYTES);
    if run.stderr_truncated && text.len() == stderr.trim().len() {
        text.push_str(&format!(" [stderr cut at {} KiB]", MAX_STDERR_BYTES / 1024));
    }
    text
}

/// `s`, cut to at most `max` bytes (at a character boundary) with a marker
/// saying how much was left out.
fn bound(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… [{} more bytes cut]", &s[..cut], s.len() - cut)
}

/// "60 s", "1.5 s".
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Origin;
    use std::path::PathBuf;

    const ALL: [Event; 10] = Event::ALL;

    fn hook() -> HookCommand {
        HookCommand {
            command: "./x.sh".into(),
            timeout: Duration::from_secs(60),
            source: PathBuf::from("/p/.scv/hooks.json"),
            line: None,
            origin: Origin::User,
            condition: None,
            plugin_root: None,
        }
    }

    const LABEL: &str = "hook `./x.sh` (/p/.scv/hooks.json)";

    fn run(code: i32, stdout: &str, stderr: &str) -> Run {
        Run {
            exit: Exit::Code(code),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            stdout_truncated: false,
            stderr_truncated: false,
        }
    }

    fn exit(e: Exit) -> Run {
        Run {
            exit: e,
            ..run(0, "", "")
        }
    }

    fn it(event: Event, r: Run) -> Outcome {
        interpret(event, &hook(), r)
    }

    fn json(event: Event, stdout: &str) -> Outcome {
        it(event, run(0, stdout, ""))
    }

    // --- exit codes -------------------------------------------------------

    #[test]
    fn exit_0_with_nothing_is_nothing() {
        for event in ALL {
            assert_eq!(
                it(event, run(0, "", "warned")),
                Outcome::default(),
                "{event}"
            );
        }
    }

    #[test]
    fn exit_0_plain_stdout_is_context_only_for_prompts_and_session_start() {
        for event in ALL {
            let o = it(event, run(0, "  today is Monday\n", ""));
            if matches!(event, Event::UserPromptSubmit | Event::SessionStart) {
                assert_eq!(o.context, ["today is Monday"], "{event}");
                assert_eq!(o.decision, Decision::None);
            } else {
                assert_eq!(o, Outcome::default(), "{event}");
            }
        }
        // Not an object: plain text, even if it is JSON.
        assert_eq!(json(Event::SessionStart, "[1, 2]").context, ["[1, 2]"]);
    }

    #[test]
    fn exit_2_per_event() {
        let o = it(
            Event::PreToolUse,
            run(2, r#"{"decision": "approve"}"#, "no rm -rf\n"),
        );
        assert_eq!(o.decision, Decision::Deny);
        assert_eq!(o.reason.as_deref(), Some("no rm -rf"));
        // stdout (and JSON in it) is ignored on exit 2.
        assert!(o.user_messages.is_empty() && o.context.is_empty());

        let o = it(Event::PostToolUse, run(2, "", "lint failed"));
        assert_eq!(
            (o.decision, o.reason.as_deref()),
            (Decision::Block, Some("lint failed"))
        );

        let o = it(
            Event::UserPromptSubmit,
            run(2, "context?", "secret in prompt"),
        );
        assert_eq!(
            (o.decision, o.reason.as_deref()),
            (Decision::Block, Some("secret in prompt"))
        );
        assert!(o.context.is_empty());

        let o = it(Event::Stop, run(2, "", "tests fail; fix them"));
        assert_eq!(
            (o.decision, o.reason.as_deref()),
            (Decision::Block, Some("tests fail; fix them"))
        );

        for event in [Event::SessionStart, Event::SessionEnd, Event::PreCompact] {
            let o = it(event, run(2, "ctx", "oops"));
            assert_eq!(o.decision, Decision::None, "{event}");
            assert_eq!(o.reason, None);
            assert!(o.context.is_empty());
            assert_eq!(o.user_messages, [format!("{LABEL} exited 2: oops")]);
        }
    }

    #[test]
    fn exit_2_without_stderr_still_blocks_and_names_the_hook() {
        let o = it(Event::PreToolUse, run(2, "", ""));
        assert_eq!(o.decision, Decision::Deny);
        assert!(o.reason.unwrap().starts_with(LABEL));
        assert_eq!(
            it(Event::SessionEnd, run(2, "", "")).user_messages,
            [format!("{LABEL} exited 2")]
        );
    }

    #[test]
    fn other_exit_codes_are_non_blocking_for_every_event() {
        for event in ALL {
            for code in [1, 3, 127, -1] {
                let o = it(
                    event,
                    run(code, r#"{"decision": "block"}"#, "Traceback: boom\n"),
                );
                assert_eq!(o.decision, Decision::None, "{event} {code}");
                assert_eq!(o.reason, None);
                assert_eq!(
                    o.user_messages,
                    [format!("{LABEL} exited {code}: Traceback: boom")]
                );
            }
        }
        assert_eq!(
            it(Event::Stop, run(1, "", "")).user_messages,
            [format!("{LABEL} exited 1")]
        );
    }

    // --- fail closed ------------------------------------------------------

    fn failures() -> Vec<(Run, &'static str)> {
        vec![
            (
                exit(Exit::FailedToStart("No such file or directory".into())),
                "failed to start: No such file",
            ),
            (exit(Exit::TimedOut), "timed out after 60 s"),
            (exit(Exit::Signal(9)), "was killed by signal 9"),
            (
                Run {
                    stdout_truncated: true,
                    ..run(0, "{}", "")
                },
                "printed more than 64 KiB on stdout",
            ),
            (
                run(0, "{\"decision\": ", ""),
                "printed invalid JSON: EOF while parsing",
            ),
            (
                run(0, "{not json}", ""),
                "printed invalid JSON: key must be a string",
            ),
        ]
    }

    #[test]
    fn gates_fail_closed_naming_the_hook() {
        for (r, what) in failures() {
            let o = it(Event::PreToolUse, r.clone());
            assert_eq!(o.decision, Decision::Deny, "{what}");
            let reason = o.reason.unwrap();
            assert!(reason.starts_with(LABEL), "{reason}");
            assert!(reason.contains(what), "{reason}");

            let o = it(Event::UserPromptSubmit, r);
            assert_eq!(o.decision, Decision::Block, "{what}");
            assert!(o.reason.unwrap().contains(what));
        }
    }

    #[test]
    fn other_events_only_tell_the_user() {
        for event in [
            Event::PostToolUse,
            Event::Stop,
            Event::SessionStart,
            Event::SessionEnd,
            Event::PreCompact,
        ] {
            for (r, what) in failures() {
                let o = it(event, r);
                assert_eq!(o.decision, Decision::None, "{event} {what}");
                assert_eq!(o.reason, None);
                assert!(o.context.is_empty());
                assert_eq!(o.user_messages.len(), 1);
                assert!(o.user_messages[0].starts_with(LABEL) && o.user_messages[0].contains(what));
            }
        }
    }

    #[test]
    fn the_timeout_is_the_hooks_own() {
        let h = HookCommand {
            timeout: Duration::from_millis(1500),
            ..hook()
        };
        let o = interpret(Event::PreToolUse, &h, exit(Exit::TimedOut));
        assert!(o.reason.unwrap().ends_with("timed out after 1.5 s"));
    }

    #[test]
    fn unknown_decisions_fail_closed() {
        let o = json(
            Event::PreToolUse,
            r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "maybe"}}"#,
        );
        assert_eq!(o.decision, Decision::Deny);
        assert_eq!(
            o.reason.as_deref(),
            Some(
                format!("{LABEL} gave permissionDecision \"maybe\", not allow, deny or ask")
                    .as_str()
            )
        );
        let o = json(
            Event::PreToolUse,
            r#"{"hookSpecificOutput": {"permissionDecision": true}}"#,
        );
        assert!(o.reason.unwrap().contains("permissionDecision true"));
        let o = json(Event::PreToolUse, r#"{"decision": "allow"}"#);
        assert_eq!(o.decision, Decision::Deny);
        assert!(o
            .reason
            .unwrap()
            .contains("gave decision \"allow\", not approve or block"));
        let o = json(Event::UserPromptSubmit, r#"{"decision": "deny"}"#);
        assert_eq!(o.decision, Decision::Block);
        assert!(o
            .reason
            .unwrap()
            .contains("gave decision \"deny\", not block"));
        let o = json(Event::PreToolUse, r#"{"continue": "no"}"#);
        assert_eq!(o.decision, Decision::Deny);
        let o = json(Event::PreToolUse, r#"{"hookSpecificOutput": "allow"}"#);
        assert_eq!(o.decision, Decision::Deny);
        let o = json(
            Event::PreToolUse,
            r#"{"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "allow"}}"#,
        );
        assert_eq!(o.decision, Decision::Deny);
        assert!(o.reason.unwrap().contains("hookEventName \"PostToolUse\""));
        let o = json(
            Event::PreToolUse,
            r#"{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "ls"}}}"#,
        );
        assert_eq!(o.decision, Decision::Deny);
        assert!(o.reason.unwrap().contains("updatedInput"));
        // Not a gate: a message, no block.
        let o = json(Event::Stop, r#"{"decision": "maybe"}"#);
        assert_eq!(o.decision, Decision::None);
        assert_eq!(o.user_messages.len(), 1);
        let o = json(Event::PostToolUse, r#"{"decision": "deny"}"#);
        assert_eq!(o.decision, Decision::None);
        assert_eq!(o.user_messages.len(), 1);
    }

    // --- JSON output --------------------------------------------------------

    #[test]
    fn pre_tool_use_permission_decisions() {
        let pd = |d: &str| {
            json(
                Event::PreToolUse,
                &format!(
                    r#"{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "{d}", "permissionDecisionReason": "because"}}}}"#
                ),
            )
        };
        let allow = pd("allow");
        assert_eq!(allow.decision, Decision::Allow);
        assert_eq!(allow.reason, None, "allow's reason is not for Claude");
        assert_eq!(allow.user_messages, ["because"]);
        let deny = pd("deny");
        assert_eq!(
            (deny.decision, deny.reason.as_deref()),
            (Decision::Deny, Some("because"))
        );
        let ask = pd("ask");
        assert_eq!(
            (ask.decision, ask.reason.as_deref()),
            (Decision::Ask, Some("because"))
        );
        // A deny without a reason still says who denied.
        let o = json(
            Event::PreToolUse,
            r#"{"hookSpecificOutput": {"permissionDecision": "deny"}}"#,
        );
        assert_eq!(
            o.reason.as_deref(),
            Some(format!("{LABEL} denied the call").as_str())
        );
    }

    #[test]
    fn pre_tool_use_deprecated_decisions() {
        let o = json(
            Event::PreToolUse,
            r#"{"decision": "approve", "reason": "fine"}"#,
        );
        assert_eq!(
            (o.decision, o.user_messages.clone()),
            (Decision::Allow, vec!["fine".to_owned()])
        );
        let o = json(
            Event::PreToolUse,
            r#"{"decision": "block", "reason": "no"}"#,
        );
        assert_eq!(
            (o.decision, o.reason.as_deref()),
            (Decision::Deny, Some("no"))
        );
        // The new field wins over the deprecated one.
        let o = json(
            Event::PreToolUse,
            r#"{"decision": "approve", "hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "new"}}"#,
        );
        assert_eq!(
            (o.decision, o.reason.as_deref()),
            (Decision::Deny, Some("new"))
        );
        // Nothing decided: none.
        assert_eq!(json(Event::PreToolUse, "{}"), Outcome::default());
        assert_eq!(
            json(
                Event::PreToolUse,
                r#"{"decision": null, "suppressOutput": true}"#
            ),
            Outcome::default()
        );
    }

    #[test]
    fn common_fields_continue_stop_reason_and_system_message() {
        for event in ALL {
            let o = json(
                event,
                r#"{"continue": false, "stopReason": "build is broken", "systemMessage": "heads up"}"#,
            );
            assert_eq!(o.stop.as_deref(), Some("build is broken"), "{event}");
            assert_eq!(o.user_messages, ["heads up"], "{event}");
        }
        let o = json(Event::PostToolUse, r#"{"continue": false}"#);
        assert!(o.stop.unwrap().starts_with(LABEL));
        assert_eq!(
            json(Event::PostToolUse, r#"{"continue": true}"#),
            Outcome::default()
        );
    }

    #[test]
    fn post_tool_use_block_and_context() {
        let o = json(
            Event::PostToolUse,
            r#"{"decision": "block", "reason": "format the file", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "ruff: 2 issues"}}"#,
        );
        assert_eq!(o.decision, Decision::Block);
        assert_eq!(o.reason.as_deref(), Some("format the file"));
        assert_eq!(o.context, ["ruff: 2 issues"]);
        // "undefined does nothing. reason is ignored."
        assert_eq!(
            json(Event::PostToolUse, r#"{"reason": "ignored"}"#),
            Outcome::default()
        );
    }

    #[test]
    fn user_prompt_submit_block_and_context() {
        let o = json(
            Event::UserPromptSubmit,
            r#"{"decision": "block", "reason": "no secrets", "hookSpecificOutput": {"additionalContext": "dropped"}}"#,
        );
        assert_eq!(
            (o.decision, o.reason.as_deref()),
            (Decision::Block, Some("no secrets"))
        );
        assert!(o.context.is_empty(), "context only when not blocked");
        let o = json(
            Event::UserPromptSubmit,
            r#"{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "branch: main"}}"#,
        );
        assert_eq!(
            (o.decision, o.context.clone()),
            (Decision::None, vec!["branch: main".to_owned()])
        );
        // continue: false "prevents the prompt from being processed".
        let o = json(
            Event::UserPromptSubmit,
            r#"{"continue": false, "stopReason": "later"}"#,
        );
        assert_eq!(
            (o.decision, o.reason.as_deref(), o.stop.as_deref()),
            (Decision::Block, Some("later"), Some("later"))
        );
    }

    #[test]
    fn stop_block_and_continue_false_precedence() {
        let o = json(
            Event::Stop,
            r#"{"decision": "block", "reason": "run the tests"}"#,
        );
        assert_eq!(
            (o.decision, o.reason.as_deref()),
            (Decision::Block, Some("run the tests"))
        );
        let o = json(Event::Stop, r#"{"decision": "block"}"#);
        assert!(o.reason.unwrap().starts_with(LABEL));
        let o = json(
            Event::Stop,
            r#"{"decision": "block", "reason": "x", "continue": false}"#,
        );
        assert_eq!(o.decision, Decision::None);
        assert!(o.stop.is_some());
        assert_eq!(
            json(Event::Stop, r#"{"decision": "approve"}"#),
            Outcome::default()
        );
    }

    #[test]
    fn session_start_context() {
        let o = json(
            Event::SessionStart,
            r#"{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "open issues: 3"}}"#,
        );
        assert_eq!(o.context, ["open issues: 3"]);
        assert_eq!(
            json(Event::SessionEnd, r#"{"decision": "block"}"#),
            Outcome::default()
        );
        assert_eq!(
            json(Event::PreCompact, r#"{"decision": "block"}"#),
            Outcome::default()
        );
    }

    // --- bounds -------------------------------------------------------------

    #[test]
    fn long_and_invalid_stderr_is_bounded_and_lossy() {
        let mut stderr = "é".repeat(5000).into_bytes();
        stderr.extend([0xff, 0xfe]);
        let o = it(
            Event::PreToolUse,
            Run {
                stderr,
                stderr_truncated: true,
                ..run(2, "", "")
            },
        );
        let reason = o.reason.unwrap();
        assert!(reason.len() < MAX_MESSAGE_BYTES + 100, "{}", reason.len());
        assert!(reason.contains("more bytes cut"));
        let o = it(
            Event::Stop,
            Run {
                stderr: vec![b'a', 0xff, b'b'],
                stderr_truncated: true,
                ..run(1, "", "")
            },
        );
        assert_eq!(
            o.user_messages,
            [format!(
                "{LABEL} exited 1: a\u{fffd}b [stderr cut at 16 KiB]"
            )]
        );
        let long = format!(
            r#"{{"decision": "block", "reason": "{}"}}"#,
            "x".repeat(10_000)
        );
        assert!(json(Event::Stop, &long).reason.unwrap().len() < MAX_MESSAGE_BYTES + 100);
        let o = it(
            Event::PreToolUse,
            exit(Exit::FailedToStart("e".repeat(10_000))),
        );
        assert!(o.reason.unwrap().len() < MAX_MESSAGE_BYTES + 100);
        let ctx = "c".repeat(MAX_CONTEXT_BYTES * 2);
        assert!(json(Event::SessionStart, &ctx).context[0].len() < MAX_CONTEXT_BYTES + 100);
    }

    #[test]
    fn bound_cuts_at_a_character_boundary() {
        assert_eq!(bound("abc", 3), "abc");
        assert_eq!(bound("ééé", 3), "é… [4 more bytes cut]");
    }

    // --- combine ------------------------------------------------------------

    fn decided(decision: Decision, reason: &str) -> Outcome {
        Outcome {
            decision,
            reason: Some(reason.into()),
            ..Outcome::default()
        }
    }

    #[test]
    fn combine_precedence() {
        use Decision::*;
        let d = |ds: &[Decision]| {
            combine(
                Event::PreToolUse,
                ds.iter()
                    .map(|&d| Outcome {
                        decision: d,
                        ..Outcome::default()
                    })
                    .collect(),
            )
            .decision
        };
        assert_eq!(d(&[]), None);
        assert_eq!(d(&[None, Allow]), Allow);
        assert_eq!(d(&[Allow, Ask, None]), Ask);
        assert_eq!(d(&[Ask, Deny, Allow]), Deny);
        assert_eq!(d(&[Deny, Allow]), Deny);
        assert_eq!(
            combine(Event::Stop, vec![Outcome::default(), decided(Block, "b")]).decision,
            Block
        );
        assert_eq!(combine(Event::Stop, vec![]), Outcome::default());
    }

    #[test]
    fn combine_concatenates_in_order() {
        let a = Outcome {
            context: vec!["c1".into()],
            user_messages: vec!["m1".into()],
            ..decided(Decision::Deny, "r1")
        };
        let b = Outcome {
            context: vec!["c2".into()],
            ..decided(Decision::Ask, "ask why")
        };
        let c = Outcome {
            user_messages: vec!["m3".into()],
            stop: Some("s3".into()),
            ..decided(Decision::Deny, "r3")
        };
        let o = combine(Event::PreToolUse, vec![a, b, c]);
        assert_eq!(o.decision, Decision::Deny);
        assert_eq!(o.reason.as_deref(), Some("r1\n\nr3"));
        assert_eq!(o.context, ["c1", "c2"]);
        assert_eq!(o.user_messages, ["m1", "ask why", "m3"]);
        assert_eq!(o.stop.as_deref(), Some("s3"));
    }

    #[test]
    fn combine_stop_continue_false_beats_block() {
        let stop = Outcome {
            stop: Some("enough".into()),
            ..Outcome::default()
        };
        let o = combine(Event::Stop, vec![decided(Decision::Block, "go on"), stop]);
        assert_eq!(o.decision, Decision::None);
        assert_eq!(o.reason, None);
        assert_eq!(o.stop.as_deref(), Some("enough"));
        assert_eq!(o.user_messages, ["go on"]);
    }
}
