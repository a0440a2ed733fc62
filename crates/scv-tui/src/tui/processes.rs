//! The session's background processes as the TUI knows them, derived from
//! the tool calls it sees (no event of their own): a `bash {background:
//! true}` whose result names a `process_id` starts one; a `bash_output`
//! result carries its newest output and its state (`[process ID: …]` on
//! its last line); a `bash_kill` result says it ended. The status line
//! counts the running ones and `/ps` lists them with the output last read.
//!
//! Bounded: at most [`MAX_PROCESSES`] kept (the oldest ended go first),
//! and [`MAX_TAIL_BYTES`] of output each.

use serde_json::Value;

/// Processes kept (a session runs at most 64 at once).
pub const MAX_PROCESSES: usize = 64;
/// Output kept per process: the end of what the model last read.
pub const MAX_TAIL_BYTES: usize = 4096;
/// Lines of a process's output `/ps ID` shows (its end).
const SHOWN_LINES: usize = 40;
/// Calls awaiting their result.
const MAX_PENDING: usize = 64;

/// One background process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub id: String,
    pub command: String,
    /// `None` while it runs; how it ended, in the server's words.
    pub ended: Option<String>,
    /// The end of the output the model read last.
    pub tail: String,
}

#[derive(Debug, Default)]
pub struct Processes {
    list: Vec<Process>,
    /// `(call_id, command)` of background `bash` calls not yet done.
    pending: Vec<(String, String)>,
}

impl Processes {
    /// A proposed call: remembered when it may start a process.
    pub fn proposed(&mut self, call_id: &str, name: &str, arguments: &Value) {
        let background = arguments.get("background").and_then(Value::as_bool) == Some(true);
        if name == "bash" && background {
            let command = arguments
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if self.pending.len() >= MAX_PENDING {
                self.pending.remove(0);
            }
            self.pending.push((call_id.to_string(), command));
        }
    }

    /// A call's result.
    pub fn completed(&mut self, call_id: &str, name: &str, success: bool, output: &str) {
        let pending = self.pending.iter().position(|(id, _)| id == call_id);
        let command = pending.map(|at| self.pending.remove(at).1);
        match (name, command) {
            ("bash", Some(command)) if success => {
                if let Some(id) = output
                    .lines()
                    .find_map(|l| l.strip_prefix("process_id: "))
                    .map(str::trim)
                {
                    self.started(id, command);
                }
            }
            ("bash_output" | "bash_kill", _) if success => self.read(output),
            _ => {}
        }
    }

    fn started(&mut self, id: &str, command: String) {
        self.list.retain(|p| p.id != id);
        if self.list.len() >= MAX_PROCESSES {
            let oldest = self
                .list
                .iter()
                .position(|p| p.ended.is_some())
                .unwrap_or(0);
            self.list.remove(oldest);
        }
        self.list.push(Process {
            id: id.to_string(),
            command,
            ended: None,
            tail: String::new(),
        });
    }

    /// A `bash_output` or `bash_kill` result: its last line says which
    /// process and how it stands; what comes before is new output.
    fn read(&mut self, output: &str) {
        let (body, last) = output.rsplit_once('\n').unwrap_or(("", output));
        let Some(state) = last
            .strip_prefix("[process ")
            .and_then(|s| s.strip_suffix(']'))
        else {
            return;
        };
        let Some((id, status)) = state.split_once(": ") else {
            return;
        };
        let Some(process) = self.list.iter_mut().find(|p| p.id == id) else {
            return;
        };
        let status = status.trim_start_matches("had already ended: ");
        process.ended = (status != "running").then(|| status.to_string());
        let body = body.trim_end();
        if !body.is_empty() && body != "(no new output)" {
            process.tail.push_str(body);
            process.tail.push('\n');
            if process.tail.len() > MAX_TAIL_BYTES {
                let mut cut = process.tail.len() - MAX_TAIL_BYTES;
                while !process.tail.is_char_boundary(cut) {
                    cut += 1;
                }
                process.tail.drain(..cut);
            }
        }
    }

    /// How many run now.
    pub fn running(&self) -> usize {
        self.list.iter().filter(|p| p.ended.is_none()).count()
    }

    pub fn get(&self, id: &str) -> Option<&Process> {
        self.list.iter().find(|p| p.id == id)
    }

    /// `/ps`: one line each.
    pub fn listing(&self) -> String {
        if self.list.is_empty() {
            return "no background processes in this session".into();
        }
        let mut out = String::from("background processes (/ps ID: the output last read):");
        for p in &self.list {
            let state = p.ended.as_deref().unwrap_or("running");
            let command = p.command.lines().next().unwrap_or("");
            out.push_str(&format!("\n  {}  {state}  {command}", p.id));
        }
        out
    }

    /// A `process.state` (the answer to `/ps ID` or `/ps kill ID`): the
    /// process's state taken in; what to show.
    pub fn state(&mut self, state: &scv_protocol::ProcessState) -> String {
        let ended =
            (!state.running).then(|| state.status.clone().unwrap_or_else(|| "ended".into()));
        if let Some(process) = self.list.iter_mut().find(|p| p.id == state.process_id) {
            process.ended = ended.clone();
        }
        let shown = ended.as_deref().unwrap_or("running");
        let mut text = format!(
            "{} ({shown}): {}",
            state.process_id,
            state.command.lines().next().unwrap_or("")
        );
        if let Some(output) = &state.output {
            let lines: Vec<&str> = output.lines().collect();
            let from = lines.len().saturating_sub(SHOWN_LINES);
            if from > 0 {
                text.push_str(&format!("\n… {from} lines before"));
            }
            for line in &lines[from..] {
                text.push('\n');
                text.push_str(line);
            }
            if lines.is_empty() {
                text.push_str("\n(no output yet)");
            }
        }
        text
    }

    /// A `process.listed`: the server's list replaces what the tool
    /// results said (a client that attached late learns what runs); the
    /// output read so far is kept.
    pub fn listed(&mut self, processes: &[scv_protocol::ProcessState]) {
        let mut known = std::mem::take(&mut self.list);
        for state in processes.iter().rev().take(MAX_PROCESSES).rev() {
            let tail = known
                .iter_mut()
                .find(|p| p.id == state.process_id)
                .map(|p| std::mem::take(&mut p.tail))
                .unwrap_or_default();
            self.list.push(Process {
                id: state.process_id.clone(),
                command: state.command.clone(),
                ended: (!state.running)
                    .then(|| state.status.clone().unwrap_or_else(|| "ended".into())),
                tail,
            });
        }
        known.clear();
    }

    /// `/ps ID` without a session: the output the model read last.
    pub fn detail(&self, id: &str) -> String {
        match self.get(id) {
            None => format!("no background process `{id}` (/ps lists them)"),
            Some(p) => {
                let state = p.ended.as_deref().unwrap_or("running");
                let tail = if p.tail.is_empty() {
                    "(no output read yet)"
                } else {
                    p.tail.trim_end()
                };
                format!("{} ({state}): {}\n{tail}", p.id, p.command)
            }
        }
    }
}

/// What `/ps [ID | kill ID]` does.
pub enum Command {
    /// Asked of the server.
    Send(scv_protocol::ClientMessage),
    /// Said from what the tool results told (no session to ask).
    Say(String),
}

impl Processes {
    /// `/ps`: the list; `/ps ID`: the end of its output; `/ps kill ID`:
    /// stop it — asked of the server (without a session: what the tool
    /// results said).
    pub fn command(&self, arg: &str, session_id: Option<String>) -> Command {
        use scv_protocol::{ClientMessage, ProcessList, ProcessRequest};
        let (kill, id) = match arg.trim().strip_prefix("kill ") {
            Some(id) => (true, id.trim()),
            None => (false, arg.trim()),
        };
        let request = ProcessRequest {
            session_id: session_id.clone().unwrap_or_default(),
            process_id: id.to_string(),
        };
        match (id, kill, session_id) {
            ("", _, Some(session_id)) => {
                Command::Send(ClientMessage::ProcessList(ProcessList { session_id }))
            }
            ("", _, None) => Command::Say(self.listing()),
            (_, true, Some(_)) => Command::Send(ClientMessage::ProcessKill(request)),
            (_, true, None) => {
                Command::Say("not connected: the process cannot be stopped now".into())
            }
            (_, false, Some(_)) => Command::Send(ClientMessage::ProcessPeek(request)),
            (id, false, None) => Command::Say(self.detail(id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn processes_follow_the_tool_results() {
        let mut ps = Processes::default();
        ps.proposed(
            "c1",
            "bash",
            &json!({"command": "python3 -m http.server", "background": true}),
        );
        ps.proposed("c2", "bash", &json!({"command": "ls"}));
        ps.completed("c2", "bash", true, "process_id: bgX\n[exit code: 0]");
        assert_eq!(ps.running(), 0, "a foreground call starts nothing");
        ps.completed(
            "c1",
            "bash",
            true,
            "Started in the background in the sandbox.\nprocess_id: bg1\nRead its output…",
        );
        assert_eq!(ps.running(), 1);
        ps.completed(
            "c3",
            "bash_output",
            true,
            "Serving HTTP on 0.0.0.0\nGET /\n[process bg1: running]",
        );
        assert_eq!(
            ps.get("bg1").unwrap().tail,
            "Serving HTTP on 0.0.0.0\nGET /\n"
        );
        ps.completed(
            "c4",
            "bash_output",
            true,
            "(no new output)\n[process bg1: running]",
        );
        assert_eq!(ps.running(), 1);
        assert!(ps
            .listing()
            .contains("bg1  running  python3 -m http.server"));
        ps.completed("c5", "bash_kill", true, "[process bg1: killed]");
        assert_eq!(ps.running(), 0);
        assert_eq!(ps.get("bg1").unwrap().ended.as_deref(), Some("killed"));
        assert!(ps.detail("bg1").starts_with("bg1 (killed): python3"));
    }
}
