//! What `scv exec` makes of each event: the JSON line (`--json`), the
//! answer on stdout, tool activity, hooks, approvals and subagents on
//! stderr, the approval answers and the exit code. No I/O but the two
//! writers, so the routing can be tested with built events.
//!
//! A tool call on stderr: `[tool] NAME running: WHAT` when it starts,
//! `[tool] NAME done: WHAT` or `… failed: WHAT` when it ends, then the
//! last [`TAIL_LINES`] lines (at most [`TAIL_BYTES`]) of its output as
//! `  | line`, after `  … N earlier lines left out`; a call denied by
//! `--approve` ends as `[tool] NAME denied, not run: WHAT` after the
//! approval lines saying how to allow it. Errors and turn failures are
//! said in words, never as the protocol's codes.
//!
//! A subagent's events (capability `subagents`: they carry `parent`) are
//! never the parent's: their text is not the answer and their turn's end
//! does not end the run. In text mode a child is a line when it starts and
//! one when it ends, its tool calls indented under it; its approvals
//! follow `--approve` like the parent's and are answered with the child's
//! session id.

use scv_client::session::{Approval, Outcome, Request, SessionClient, ToolChange, Update};
use scv_client::text::visible;
use scv_client::text::{error_words, failure_words};
use scv_protocol::{Event, Risk, Usage};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Write};

/// Most tool calls remembered at once between `tool.proposed` and
/// `tool.completed`; past it the oldest is forgotten.
const MAX_CALLS: usize = 1024;

/// The one-line description of a call is cut to this many characters.
const WHAT_CHARS: usize = 200;

/// A completed call's output: at most this many of its last lines…
const TAIL_LINES: usize = 10;
/// …and at most this many bytes.
const TAIL_BYTES: usize = 2048;

/// How the run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Completed,
    Failed,
    Cancelled,
}

/// `text` as it may be printed on `tty`.
/// How much of a child's description names its tool lines.
const LABEL_CHARS: usize = 32;

pub(crate) fn shown(text: &str, tty: bool) -> Cow<'_, str> {
    if tty {
        visible(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// Whether `--approve` allows this call.
pub(crate) fn approved(approval: &Approval, approve: &[Risk]) -> bool {
    approve.contains(&approval.risk)
        || (approval.sandboxed == Some(true) && approve.contains(&Risk::Sandboxed))
}

fn indent(depth: u32) -> String {
    "  ".repeat(depth as usize)
}

fn steps(n: u32) -> String {
    if n == 1 {
        "1 step".into()
    } else {
        format!("{n} steps")
    }
}

/// `(3 steps, 1200 tokens)`.
fn spent(n: u32, usage: Option<&Usage>) -> String {
    match usage {
        Some(usage) => format!(
            "({}, {} tokens)",
            steps(n),
            usage.input_tokens + usage.output_tokens
        ),
        None => format!("({})", steps(n)),
    }
}

/// `text` cut to `max` characters, `…` marking the cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// What a call does, on one line: a shell command, a file tool's path,
/// a subagent's description, else its arguments as compact JSON, cut to [`WHAT_CHARS`].
pub(crate) fn what(name: &str, arguments: &serde_json::Value) -> String {
    let field = |key: &str| arguments.get(key).and_then(|v| v.as_str());
    let file_tool = matches!(name, "read_file" | "write_file" | "edit_file" | "list_dir");
    let text = match (name, field("command"), field("path")) {
        ("bash", Some(command), _) => {
            let mut lines = command.lines();
            let first = lines.next().unwrap_or_default();
            match lines.count() {
                0 => first.to_string(),
                1 => format!("{first} (+1 more line)"),
                n => format!("{first} (+{n} more lines)"),
            }
        }
        (_, _, Some(path)) if file_tool => path.to_string(),
        ("task", _, _) if field("description").is_some() => {
            format!("«{}»", field("description").unwrap_or_default())
        }
        _ => serde_json::to_string(arguments).unwrap_or_default(),
    };
    cut(&text, WHAT_CHARS)
}

/// The last lines of a call's output, each `{inner}  | line`, at most
/// [`TAIL_LINES`] lines and [`TAIL_BYTES`] bytes, after a line saying how
/// many earlier ones were left out; empty for no output.
pub(crate) fn tail(output: &str, inner: &str, tty: bool) -> String {
    let all: Vec<&str> = output.trim_end_matches('\n').lines().collect();
    let mut shown_lines: Vec<Cow<'_, str>> = Vec::new();
    let mut bytes = 0;
    for line in all.iter().rev().take(TAIL_LINES) {
        if bytes + line.len() > TAIL_BYTES {
            if shown_lines.is_empty() {
                // One line longer than the bound: its end.
                let mut from = line.len() - TAIL_BYTES;
                while !line.is_char_boundary(from) {
                    from += 1;
                }
                shown_lines.push(Cow::Owned(format!("…{}", &line[from..])));
            }
            break;
        }
        bytes += line.len();
        shown_lines.push(Cow::Borrowed(line));
    }
    let mut text = String::new();
    let left_out = all.len() - shown_lines.len();
    if left_out > 0 {
        let lines = if left_out == 1 { "line" } else { "lines" };
        text.push_str(&format!("\n{inner}  … {left_out} earlier {lines} left out"));
    }
    for line in shown_lines.iter().rev() {
        if line.is_empty() {
            text.push_str(&format!("\n{inner}  |"));
        } else {
            text.push_str(&format!("\n{inner}  | {}", shown(line, tty)));
        }
    }
    text
}

/// A tool call between its `tool.proposed` and its `tool.completed`.
#[derive(Debug)]
struct Call {
    what: String,
    started: bool,
    order: u64,
}

/// The calls of the run (own: `None`; a child's: its session id).
#[derive(Debug, Default)]
pub(crate) struct Calls {
    live: HashMap<(Option<String>, String), Call>,
    next: u64,
}

impl Calls {
    fn proposed(
        &mut self,
        session: Option<&str>,
        call: &str,
        name: &str,
        arguments: &serde_json::Value,
    ) {
        let key = (session.map(str::to_string), call.to_string());
        if self.live.len() >= MAX_CALLS && !self.live.contains_key(&key) {
            let oldest = self
                .live
                .iter()
                .min_by_key(|(_, c)| c.order)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.live.remove(&oldest);
            }
        }
        self.next += 1;
        self.live.insert(
            key,
            Call {
                what: what(name, arguments),
                started: false,
                order: self.next,
            },
        );
    }

    /// `: what it does` (nothing for a call never proposed).
    fn what(&self, session: Option<&str>, call: &str, tty: bool) -> String {
        let key = (session.map(str::to_string), call.to_string());
        match self.live.get(&key) {
            Some(call) => format!(": {}", shown(&call.what, tty)),
            None => String::new(),
        }
    }

    /// The stderr lines of a call as it runs and ends (proposed: none),
    /// `inner` before each.
    pub(crate) fn lines(
        &mut self,
        session: Option<&str>,
        change: &ToolChange,
        inner: &str,
        tty: bool,
    ) -> Option<String> {
        match change {
            ToolChange::Proposed {
                call_id,
                name,
                arguments,
            } => {
                self.proposed(session, call_id, name, arguments);
                None
            }
            ToolChange::Running { call_id, name } => {
                let key = (session.map(str::to_string), call_id.clone());
                if let Some(call) = self.live.get_mut(&key) {
                    call.started = true;
                }
                Some(format!(
                    "{inner}[tool] {} running{}",
                    shown(name, tty),
                    self.what(session, call_id, tty)
                ))
            }
            ToolChange::Done {
                call_id,
                name,
                success,
                output,
                denied,
                ..
            } => {
                let what = self.what(session, call_id, tty);
                let key = (session.map(str::to_string), call_id.clone());
                let call = self.live.remove(&key);
                let name = shown(name, tty);
                if *denied && !call.as_ref().is_some_and(|c| c.started) {
                    return Some(format!("{inner}[tool] {name} denied, not run{what}"));
                }
                let verb = if *success { "done" } else { "failed" };
                Some(format!(
                    "{inner}[tool] {name} {verb}{what}{}",
                    tail(output, inner, tty)
                ))
            }
        }
    }
}

/// What one event asks of the caller: requests to send, and whether the
/// run is over.
#[derive(Debug, Default)]
pub(crate) struct Step {
    pub(crate) requests: Vec<Request>,
    pub(crate) exit: Option<Exit>,
    /// MCP servers' questions to ask on the terminal (`--elicit`).
    pub(crate) questions: Vec<scv_protocol::ElicitationRequested>,
}

/// The `elicitation.resolve` answering question `elicitation_id` (a
/// subagent's too goes with the session's id).
pub(crate) fn elicited(
    client: &mut SessionClient,
    elicitation_id: &str,
    action: scv_protocol::ElicitationAction,
    content: Option<serde_json::Value>,
) -> Request {
    let session_id = client.session_id().unwrap_or_default().to_string();
    client.request(scv_protocol::ClientMessage::ElicitationResolve(
        scv_protocol::ElicitationResolve {
            session_id,
            elicitation_id: elicitation_id.to_string(),
            action,
            content,
        },
    ))
}

/// The output side of one `scv exec` run.
pub(crate) struct Printer<O: Write, E: Write> {
    pub(crate) out: O,
    pub(crate) err: E,
    out_tty: bool,
    err_tty: bool,
    json: bool,
    /// Text of the current model response was streamed as deltas.
    streamed: bool,
    /// Thinking went to stderr without its final line break.
    thinking: bool,
    /// Some step's text is on stdout already: the next one's goes after a
    /// blank line.
    answered: bool,
    calls: Calls,
    /// `--elicit`: MCP servers' questions are asked, not declined.
    pub(crate) elicit: bool,
}

impl<O: Write, E: Write> Printer<O, E> {
    pub(crate) fn new(out: O, err: E, out_tty: bool, err_tty: bool, json: bool) -> Self {
        Printer {
            out,
            err,
            out_tty,
            err_tty,
            json,
            streamed: false,
            thinking: false,
            answered: false,
            calls: Calls::default(),
            elicit: false,
        }
    }

    /// Applies one event: printed, given to the session client, its
    /// approvals answered by `approve`.
    pub(crate) fn event(
        &mut self,
        client: &mut SessionClient,
        event: &Event,
        approve: &[Risk],
    ) -> io::Result<Step> {
        let mut step = Step::default();
        if self.json {
            // Every event, the children's too, as the line it is.
            writeln!(self.out, "{}", serde_json::to_string(event)?)?;
            self.out.flush()?;
        }
        let applied = client.apply(event);
        step.requests.extend(applied.requests);
        if self.thinking && !matches!(applied.updates.as_slice(), [Update::Reasoning(_)]) {
            writeln!(self.err)?;
            self.thinking = false;
        }
        for update in applied.updates {
            match update {
                // That the session is no longer saved (or is again) goes to
                // stderr whatever the mode: `--json` readers see it too (a
                // subagent's own journal is the log's).
                Update::Warning(warning) => writeln!(
                    self.err,
                    "[session] {}",
                    shown(&warning.message, self.err_tty)
                )?,
                // 80 % of a budget spent: on stderr whatever the format.
                Update::Budget(warning) => writeln!(
                    self.err,
                    "[budget] {}",
                    shown(&warning.message, self.err_tty)
                )?,
                Update::ApprovalRequested(approval) => {
                    let approved = approved(&approval, approve);
                    if !self.json {
                        self.approval(client, &approval, approved)?;
                    }
                    step.requests
                        .extend(client.resolve(&approval.approval_id, approved));
                }
                Update::Refused { error, .. } => {
                    self.error(&error)?;
                    step.exit = Some(Exit::Failed);
                }
                Update::Elicitation(asked) if self.elicit => step.questions.push(*asked),
                Update::Elicitation(asked) => {
                    if !self.json {
                        writeln!(
                            self.err,
                            "[elicitation] MCP server `{}` asked: {} — declined (scv exec --elicit answers on the terminal)",
                            shown(&asked.server, self.err_tty),
                            shown(&asked.message, self.err_tty)
                        )?;
                    }
                    step.requests.push(elicited(
                        client,
                        &asked.elicitation_id,
                        scv_protocol::ElicitationAction::Decline,
                        None,
                    ));
                }
                Update::Ended {
                    request_id: Some(_),
                    outcome,
                    ..
                } => step.exit = Some(self.ended(outcome)?),
                _ if self.json => {}
                Update::SubagentStarted { session_id } => {
                    if let Some(line) = self.child_started(client, &session_id) {
                        writeln!(self.err, "{line}")?;
                    }
                }
                Update::Subagent { session_id, update } => {
                    if let Some(line) = self.child_line(client, &session_id, &update) {
                        writeln!(self.err, "{line}")?;
                    }
                }
                update => self.own(update)?,
            }
            if step.exit.is_some() {
                break;
            }
        }
        Ok(step)
    }

    /// How our turn ended, said on stderr unless it completed.
    fn ended(&mut self, outcome: Outcome) -> io::Result<Exit> {
        Ok(match outcome {
            Outcome::Completed { .. } => Exit::Completed,
            Outcome::Cancelled => {
                if !self.json {
                    writeln!(self.err, "scv: the turn was cancelled")?;
                }
                Exit::Cancelled
            }
            Outcome::Failed { code, message } => {
                if !self.json {
                    writeln!(
                        self.err,
                        "scv: the turn failed: {}",
                        scv_client::text::failure_line(
                            code.as_str(),
                            &shown(&message, self.err_tty),
                            " — "
                        )
                    )?;
                }
                Exit::Failed
            }
        })
    }

    /// An error the server sent the session, in words (text mode).
    fn error(&mut self, error: &scv_protocol::ErrorBody) -> io::Result<()> {
        if self.json {
            return Ok(());
        }
        writeln!(
            self.err,
            "scv: {}: {}",
            error_words(error.code),
            shown(&error.message, self.err_tty)
        )
    }

    /// `[subagent] «…» (agent …, model …) started`, indented by depth.
    fn child_started(&self, client: &SessionClient, session_id: &str) -> Option<String> {
        let child = client.subagent(session_id)?;
        let tty = self.err_tty;
        let agent = child.agent.as_deref().unwrap_or("general-purpose");
        Some(format!(
            "{}[subagent] «{}» (agent {}, model {}) started",
            indent(child.depth.max(1) - 1),
            shown(&child.description, tty),
            shown(agent, tty),
            shown(&child.model, tty)
        ))
    }

    /// The stderr line a child's update makes, if any: its calls and hook
    /// notes indented under it, a line when it ends.
    fn child_line(
        &mut self,
        client: &SessionClient,
        session_id: &str,
        update: &Update,
    ) -> Option<String> {
        let tty = self.err_tty;
        let (description, depth) = match client.subagent(session_id) {
            Some(child) => (child.description.as_str(), child.depth.max(1)),
            None => (session_id, 1),
        };
        let head = format!(
            "{}[subagent] «{}»",
            indent(depth - 1),
            shown(description, tty)
        );
        let inner = indent(depth);
        Some(match update {
            // Its calls name it: children running at once interleave.
            Update::Tool(change) => {
                let lines = self.calls.lines(Some(session_id), change, &inner, tty)?;
                let label: String = if description.chars().count() > LABEL_CHARS {
                    let cut: String = description.chars().take(LABEL_CHARS - 1).collect();
                    format!("{cut}…")
                } else {
                    description.to_string()
                };
                let tagged = format!("{inner}«{}» [tool]", shown(&label, tty));
                return Some(lines.replacen(&format!("{inner}[tool]"), &tagged, 1));
            }
            Update::Hook(note) => format!("{inner}{}", hook_line(note, tty)),
            Update::Ended { outcome, .. } => match outcome {
                Outcome::Completed { steps, usage, .. } => {
                    format!("{head} completed {}", spent(*steps, usage.as_ref()))
                }
                Outcome::Failed { code, message } => format!(
                    "{head} failed: {} — {}",
                    failure_words(*code),
                    shown(message, tty)
                ),
                Outcome::Cancelled => format!("{head} cancelled"),
            },
            _ => return None,
        })
    }

    /// An update of the session's own, in text mode.
    fn own(&mut self, update: Update) -> io::Result<()> {
        let (out_tty, err_tty) = (self.out_tty, self.err_tty);
        match update {
            Update::Text(content) => {
                if !self.streamed && self.answered {
                    // An earlier step's text ended with its line break.
                    writeln!(self.out)?;
                }
                write!(self.out, "{}", shown(&content, out_tty))?;
                self.out.flush()?;
                self.streamed = true;
            }
            Update::TextDone(content) => {
                if !self.streamed && !content.is_empty() {
                    if self.answered {
                        writeln!(self.out)?;
                    }
                    write!(self.out, "{}", shown(&content, out_tty))?;
                }
                if self.streamed || !content.is_empty() {
                    writeln!(self.out)?;
                    self.answered = true;
                }
                self.streamed = false;
            }
            Update::Reasoning(content) => {
                write!(self.err, "{}", shown(&content, err_tty))?;
                self.err.flush()?;
                self.thinking = true;
            }
            Update::Tool(change) => {
                if let Some(lines) = self.calls.lines(None, &change, "", err_tty) {
                    writeln!(self.err, "{lines}")?;
                }
            }
            Update::Hook(note) => writeln!(self.err, "{}", hook_line(&note, err_tty))?,
            // Before the call runs: it has no undo point.
            Update::CheckpointFailed { message } => {
                writeln!(self.err, "[checkpoint] {}", shown(&message, err_tty))?
            }
            Update::Retrying(retry) => writeln!(
                self.err,
                "[retry] retrying in {} s ({} {}, {} of {})",
                retry.wait_ms.div_ceil(1000),
                retry.status,
                shown(&retry.reason, err_tty),
                retry.attempt,
                retry.max_retries
            )?,
            Update::Failed { error, .. } => self.error(&error)?,
            _ => {}
        }
        Ok(())
    }

    /// The whole call, every line, as the person deciding on `--approve`
    /// must be able to read it afterwards; a subagent's indented under it.
    fn approval(
        &mut self,
        client: &SessionClient,
        approval: &Approval,
        approved: bool,
    ) -> io::Result<()> {
        let summary = shown(&approval.summary, self.err_tty);
        let text = if approved {
            format!("[approved] {summary}")
        } else {
            format!(
                "[denied] {summary}\n[denied: allow with --approve {}]",
                approval.risk.as_str()
            )
        };
        match &approval.child_session {
            None => writeln!(self.err, "{text}"),
            Some(child) => {
                let depth = client.subagent(child).map_or(1, |c| c.depth.max(1));
                let inner = indent(depth);
                for line in text.split('\n') {
                    writeln!(self.err, "{inner}{line}")?;
                }
                Ok(())
            }
        }
    }
}

/// `[hook] NAME blocked: …` or `[hook] NAME says: …`.
fn hook_line(note: &scv_protocol::HookMessage, tty: bool) -> String {
    format!(
        "[hook] {} {}: {}",
        shown(&note.hook, tty),
        if note.blocked { "blocked" } else { "says" },
        shown(&note.message, tty)
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use scv_protocol::{ClientMessage, ErrorCode, EventBody, FailureCode, Parent, SubagentStarted};
    use serde_json::json;

    const RID: &str = "exec-1";

    fn own(body: EventBody) -> Event {
        Event {
            body,
            request_id: Some(RID.into()),
            session_id: Some("P".into()),
            turn_id: Some("T".into()),
            seq: None,
            parent: None,
        }
    }

    fn child(session: &str, call: &str, body: EventBody) -> Event {
        Event {
            body,
            request_id: Some(RID.into()),
            session_id: Some(session.into()),
            turn_id: Some(format!("{session}-T")),
            seq: None,
            parent: Some(Parent {
                session_id: "P".into(),
                turn_id: "T".into(),
                call_id: call.into(),
            }),
        }
    }

    fn started(description: &str, agent: Option<&str>) -> EventBody {
        EventBody::SubagentStarted(SubagentStarted {
            agent: agent.map(str::to_string),
            description: description.into(),
            provider: "openai".into(),
            model: "gpt-test".into(),
            tools: vec!["read_file".into()],
            depth: 1,
        })
    }

    fn delta(text: &str) -> EventBody {
        EventBody::AssistantDelta {
            content: text.into(),
        }
    }

    fn completed_text(text: &str) -> EventBody {
        EventBody::AssistantCompleted {
            content: text.into(),
        }
    }

    fn tool_started(call: &str, name: &str) -> EventBody {
        EventBody::ToolStarted {
            call_id: call.into(),
            name: name.into(),
        }
    }

    fn tool_completed(call: &str, name: &str, success: bool) -> EventBody {
        EventBody::ToolCompleted {
            call_id: call.into(),
            name: name.into(),
            success,
            output: "out".into(),
            truncated: false,
        }
    }

    fn turn_completed(steps: u32) -> EventBody {
        EventBody::TurnCompleted {
            steps,
            usage: Some(Usage {
                input_tokens: 100,
                output_tokens: 20,
            }),
            cost: None,
        }
    }

    fn approval(call: &str, risk: Risk, summary: &str) -> EventBody {
        EventBody::ApprovalRequested {
            approval_id: format!("a-{call}"),
            call_id: call.into(),
            name: "bash".into(),
            risk,
            cwd: "/w".into(),
            summary: summary.into(),
            sandboxed: None,
        }
    }

    /// A session client with the prompt `exec-1` running in session `P`.
    fn client() -> SessionClient {
        let mut client = SessionClient::new("exec-");
        client.set_session("P");
        let sent = client.submit("do it");
        assert_eq!(sent.request_id, RID);
        client
    }

    struct Run {
        printer: Printer<Vec<u8>, Vec<u8>>,
        client: SessionClient,
        requests: Vec<Request>,
        exits: Vec<(usize, Exit)>,
    }

    impl Run {
        fn new(json: bool) -> Run {
            Run {
                printer: Printer::new(Vec::new(), Vec::new(), false, false, json),
                client: client(),
                requests: Vec::new(),
                exits: Vec::new(),
            }
        }

        fn feed(&mut self, events: &[Event], approve: &[Risk]) {
            for (n, event) in events.iter().enumerate() {
                let step = self
                    .printer
                    .event(&mut self.client, event, approve)
                    .unwrap();
                self.requests.extend(step.requests);
                if let Some(exit) = step.exit {
                    self.exits.push((n, exit));
                }
            }
        }

        fn out(&self) -> String {
            String::from_utf8(self.printer.out.clone()).unwrap()
        }

        fn err(&self) -> String {
            String::from_utf8(self.printer.err.clone()).unwrap()
        }
    }

    /// A turn whose model starts two subagents: one completes after a
    /// tool call, the other fails.
    fn two_children() -> Vec<Event> {
        let task = |call: &str, description: &str| EventBody::ToolProposed {
            call_id: call.into(),
            name: "task".into(),
            arguments: json!({"description": description, "prompt": "look"}),
        };
        vec![
            own(EventBody::TurnStarted {}),
            own(task("t1", "find the auth code")),
            own(task("t2", "count the tests")),
            own(tool_started("t1", "task")),
            own(tool_started("t2", "task")),
            child("C1", "t1", started("find the auth code", Some("explore"))),
            child("C2", "t2", started("count the tests", None)),
            child("C1", "t1", EventBody::TurnStarted {}),
            child("C2", "t2", EventBody::TurnStarted {}),
            child("C1", "t1", delta("child one thinks aloud")),
            child("C1", "t1", tool_started("k1", "read_file")),
            child("C2", "t2", delta("child two says")),
            child("C1", "t1", tool_completed("k1", "read_file", true)),
            child("C1", "t1", completed_text("child one thinks aloud")),
            child("C1", "t1", turn_completed(2)),
            child(
                "C2",
                "t2",
                EventBody::TurnFailed {
                    code: FailureCode::StepLimit,
                    message: "24 steps".into(),
                },
            ),
            own(tool_completed("t1", "task", true)),
            own(tool_completed("t2", "task", false)),
            own(delta("The auth code is in auth.rs.")),
            own(completed_text("The auth code is in auth.rs.")),
            own(turn_completed(2)),
        ]
    }

    #[test]
    fn two_children_are_lines_on_stderr_and_never_the_answer() {
        let mut run = Run::new(false);
        let events = two_children();
        run.feed(&events, &[]);
        assert_eq!(run.out(), "The auth code is in auth.rs.\n");
        assert_eq!(
            run.err(),
            "[tool] task running: «find the auth code»\n\
             [tool] task running: «count the tests»\n\
             [subagent] «find the auth code» (agent explore, model gpt-test) started\n\
             [subagent] «count the tests» (agent general-purpose, model gpt-test) started\n  \
             «find the auth code» [tool] read_file running\n  \
             «find the auth code» [tool] read_file done\n    \
             | out\n\
             [subagent] «find the auth code» completed (2 steps, 120 tokens)\n\
             [subagent] «count the tests» failed: the step limit was reached — 24 steps\n\
             [tool] task done: «find the auth code»\n  \
             | out\n\
             [tool] task failed: «count the tests»\n  \
             | out\n"
        );
        // Only the parent's own turn.completed ends the run.
        assert_eq!(run.exits, [(events.len() - 1, Exit::Completed)]);
        assert!(run.requests.is_empty());
    }

    #[test]
    fn json_has_every_child_event_with_its_parent() {
        let mut run = Run::new(true);
        let events = two_children();
        run.feed(&events, &[]);
        let lines: Vec<serde_json::Value> = run
            .out()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), events.len());
        let children: Vec<&serde_json::Value> =
            lines.iter().filter(|l| l.get("parent").is_some()).collect();
        assert_eq!(children.len(), 11);
        assert_eq!(children[0]["type"], "subagent.started");
        assert_eq!(children[0]["session_id"], "C1");
        assert_eq!(
            children[0]["parent"],
            json!({"session_id": "P", "turn_id": "T", "call_id": "t1"})
        );
        assert_eq!(children[0]["agent"], "explore");
        assert!(run.err().is_empty(), "{}", run.err());
        assert_eq!(run.exits, [(events.len() - 1, Exit::Completed)]);
    }

    #[test]
    fn a_childs_approval_follows_approve_and_names_the_child() {
        let events = [
            own(EventBody::TurnStarted {}),
            own(tool_started("t1", "task")),
            child("C1", "t1", started("tidy up", None)),
            child("C1", "t1", EventBody::TurnStarted {}),
            child("C1", "t1", approval("k1", Risk::Write, "Write file: a.txt")),
            child(
                "C1",
                "t1",
                approval("k2", Risk::Process, "Run shell command: ls\nrm x"),
            ),
        ];
        let mut run = Run::new(false);
        run.feed(&events, &[Risk::Write]);
        let resolved: Vec<(String, String, bool)> = run
            .requests
            .iter()
            .map(|r| match &r.message {
                ClientMessage::ApprovalResolve(resolve) => (
                    resolve.session_id.clone(),
                    resolve.approval_id.clone(),
                    resolve.approved,
                ),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            resolved,
            [
                ("C1".to_string(), "a-k1".to_string(), true),
                ("C1".to_string(), "a-k2".to_string(), false)
            ]
        );
        assert_eq!(
            run.err(),
            "[tool] task running\n\
             [subagent] «tidy up» (agent general-purpose, model gpt-test) started\n  \
             [approved] Write file: a.txt\n  \
             [denied] Run shell command: ls\n  \
             rm x\n  \
             [denied: allow with --approve process]\n"
        );
        assert!(run.exits.is_empty(), "the parent's turn goes on");
    }

    #[test]
    fn a_cancelled_child_and_an_unknown_one() {
        let mut run = Run::new(false);
        let cancelled = Update::Ended {
            request_id: None,
            turn_id: "CT".into(),
            outcome: Outcome::Cancelled,
            cancelled_by_us: false,
        };
        let line = run.printer.child_line(&run.client, "C9", &cancelled);
        assert_eq!(line.as_deref(), Some("[subagent] «C9» cancelled"));
        run.printer.err_tty = true;
        run.feed(
            &[
                child("C1", "t1", started("a\u{1b}[2Jb", None)),
                child("C1", "t1", turn_completed(1)),
            ],
            &[],
        );
        let err = run.err();
        let line = err.lines().last().unwrap();
        assert!(line.ends_with("completed (1 step, 120 tokens)"), "{line}");
        assert!(!err.contains('\u{1b}'), "control characters shown visibly");
    }

    fn proposed(call: &str, name: &str, arguments: serde_json::Value) -> EventBody {
        EventBody::ToolProposed {
            call_id: call.into(),
            name: name.into(),
            arguments,
        }
    }

    fn tool_output(call: &str, name: &str, success: bool, output: &str) -> EventBody {
        EventBody::ToolCompleted {
            call_id: call.into(),
            name: name.into(),
            success,
            output: output.into(),
            truncated: false,
        }
    }

    #[test]
    fn a_call_names_what_it_does_and_ends_with_its_outputs_tail() {
        let output: String = (1..=14).map(|n| format!("line {n}\n")).collect();
        let events = [
            own(EventBody::TurnStarted {}),
            own(proposed("c1", "bash", json!({"command": "cargo test"}))),
            own(approval(
                "c1",
                Risk::Process,
                "Run shell command: cargo test",
            )),
            own(tool_started("c1", "bash")),
            own(tool_output("c1", "bash", false, &output)),
            own(proposed("c2", "read_file", json!({"path": "src/a.rs"}))),
            own(tool_started("c2", "read_file")),
            own(tool_output("c2", "read_file", true, "fn a() {}")),
            own(proposed(
                "c3",
                "search",
                json!({"pattern": "x".repeat(300)}),
            )),
            own(tool_started("c3", "search")),
            own(tool_output("c3", "search", true, "")),
        ];
        let mut run = Run::new(false);
        run.feed(&events, &[Risk::Process]);
        let search = format!("{{\"pattern\":\"{}…", "x".repeat(200 - 12));
        assert_eq!(
            run.err(),
            format!(
                "[approved] Run shell command: cargo test\n\
                 [tool] bash running: cargo test\n\
                 [tool] bash failed: cargo test\n  \
                 … 4 earlier lines left out\n  \
                 | line 5\n  | line 6\n  | line 7\n  | line 8\n  | line 9\n  \
                 | line 10\n  | line 11\n  | line 12\n  | line 13\n  | line 14\n\
                 [tool] read_file running: src/a.rs\n\
                 [tool] read_file done: src/a.rs\n  \
                 | fn a() {{}}\n\
                 [tool] search running: {search}\n\
                 [tool] search done: {search}\n"
            )
        );
    }

    #[test]
    fn a_denied_call_says_so_and_how_to_allow_it() {
        let events = [
            own(EventBody::TurnStarted {}),
            own(proposed(
                "c1",
                "bash",
                json!({"command": "rm -rf x\necho gone"}),
            )),
            own(approval(
                "c1",
                Risk::Process,
                "Run shell command: rm -rf x\necho gone",
            )),
            own(tool_output(
                "c1",
                "bash",
                false,
                "the user denied this call",
            )),
        ];
        let mut run = Run::new(false);
        run.feed(&events, &[]);
        assert_eq!(
            run.err(),
            "[denied] Run shell command: rm -rf x\n\
             echo gone\n\
             [denied: allow with --approve process]\n\
             [tool] bash denied, not run: rm -rf x (+1 more line)\n"
        );
    }

    #[test]
    fn the_tail_is_bounded_in_bytes_and_shown_visibly_on_a_terminal() {
        let long = "y".repeat(5000);
        let text = tail(&format!("a\n{long}\n"), "  ", false);
        assert_eq!(
            text,
            format!(
                "\n    … 1 earlier line left out\n    | …{}",
                "y".repeat(2048)
            )
        );
        let text = tail(&format!("{}\nlast\n", "z".repeat(2046)), "", false);
        assert_eq!(text, "\n  … 1 earlier line left out\n  | last");
        let text = tail("ok\u{1b}[2J", "", true);
        assert!(!text.contains('\u{1b}'), "{text}");
        assert_eq!(tail("a\n\nb", "", false), "\n  | a\n  |\n  | b");
        assert_eq!(tail("", "", false), "");
        assert_eq!(tail("\n", "", false), "");
    }

    #[test]
    fn a_childs_calls_are_indented_with_their_output() {
        let events = [
            own(EventBody::TurnStarted {}),
            own(tool_started("t1", "task")),
            child("C1", "t1", started("look", None)),
            child("C1", "t1", proposed("k1", "list_dir", json!({"path": "."}))),
            child("C1", "t1", tool_started("k1", "list_dir")),
            child(
                "C1",
                "t1",
                tool_output("k1", "list_dir", true, "a.txt\nb.txt\n"),
            ),
        ];
        let mut run = Run::new(false);
        run.feed(&events, &[]);
        assert_eq!(
            run.err(),
            "[tool] task running\n\
             [subagent] «look» (agent general-purpose, model gpt-test) started\n  \
             «look» [tool] list_dir running: .\n  \
             «look» [tool] list_dir done: .\n    \
             | a.txt\n    \
             | b.txt\n"
        );
    }

    #[test]
    fn steps_text_is_separated_by_one_blank_line() {
        let events = [
            own(EventBody::TurnStarted {}),
            own(delta("Let me look.")),
            own(completed_text("Let me look.")),
            own(proposed("c1", "read_file", json!({"path": "a"}))),
            own(tool_started("c1", "read_file")),
            own(tool_output("c1", "read_file", true, "")),
            own(completed_text("")),
            own(delta("It is ")),
            own(delta("42.")),
            own(completed_text("It is 42.")),
            own(completed_text("Not streamed.")),
            own(turn_completed(3)),
        ];
        let mut run = Run::new(false);
        run.feed(&events, &[]);
        assert_eq!(run.out(), "Let me look.\n\nIt is 42.\n\nNot streamed.\n");
        let mut run = Run::new(false);
        run.feed(&[own(delta("Just")), own(completed_text("Just"))], &[]);
        assert_eq!(run.out(), "Just\n", "one step: as before");
    }

    #[test]
    fn errors_and_failures_are_said_in_words() {
        // The server refuses the prompt: an error answering it.
        let mut run = Run::new(false);
        run.feed(
            &[own(EventBody::Error(scv_protocol::ErrorBody {
                code: ErrorCode::TurnActive,
                message: "a turn is running".into(),
                fatal: false,
                entry: None,
                conflicts: None,
            }))],
            &[],
        );
        assert_eq!(
            run.err(),
            "scv: the session is already running a turn: a turn is running\n"
        );
        assert_eq!(run.exits, [(0, Exit::Failed)], "the exit code is as before");
        let mut run = Run::new(false);
        run.feed(
            &[
                own(EventBody::TurnStarted {}),
                own(EventBody::TurnFailed {
                    code: FailureCode::StepLimit,
                    message: "24 steps".into(),
                }),
            ],
            &[],
        );
        assert_eq!(
            run.err(),
            "scv: the turn failed: the step limit was reached — 24 steps\n"
        );
        assert_eq!(run.exits, [(1, Exit::Failed)], "the exit code is as before");
        assert_eq!(
            error_words(ErrorCode::InvalidRequest),
            "the server refused the request"
        );
    }
}
