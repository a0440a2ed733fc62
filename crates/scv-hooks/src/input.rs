//! The JSON a hook reads on stdin: Claude Code's fields, so that a hook
//! written for Claude Code reads SCV's input unchanged.
//!
//! Claude Code's documentation: "Hooks receive JSON data via stdin containing
//! session information and event-specific data": `session_id`,
//! `transcript_path` ("Path to conversation JSON", a string), `cwd`,
//! `permission_mode`, `hook_event_name`, and per event `tool_name`,
//! `tool_input`, `tool_response`, `prompt`, `stop_hook_active`, `source`,
//! `reason`, `trigger`, `custom_instructions`.
//!
//! SCV adds one field, `scv_tool_name` (SCV's own name of the tool), to the
//! tool events; `tool_name` is Claude Code's (`Bash`, not `bash`), so that a
//! community hook testing `tool_name == "Bash"` works.

use std::path::Path;

use serde_json::{Map, Value};

use crate::event::Event;
use crate::tools::claude_tool_name;

/// What every event's input has.
#[derive(Clone, Copy, Debug)]
pub struct Common<'a> {
    pub session_id: &'a str,
    /// The session's transcript, when it has one on disk; sent as `""` when
    /// not (Claude Code always sends a string).
    pub transcript_path: Option<&'a Path>,
    /// The working directory (relative tool paths are resolved against it).
    pub cwd: &'a Path,
    /// "default" or "plan".
    pub permission_mode: &'a str,
}

/// The event and what it has beyond [`Common`].
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    PreToolUse {
        /// SCV's tool name.
        tool: &'a str,
        arguments: &'a Value,
    },
    PostToolUse {
        tool: &'a str,
        arguments: &'a Value,
        success: bool,
        output: &'a str,
    },
    UserPromptSubmit {
        prompt: &'a str,
    },
    Stop {
        stop_hook_active: bool,
    },
    SubagentStop {
        stop_hook_active: bool,
    },
    SessionStart {
        /// startup, resume, clear or compact.
        source: &'a str,
    },
    SessionEnd {
        reason: &'a str,
    },
    PreCompact {
        /// manual or auto.
        trigger: &'a str,
        custom_instructions: &'a str,
    },
    Notification {
        message: &'a str,
        /// `permission_prompt` (SCV waits for an approval).
        notification_type: &'a str,
    },
    SubagentStart {
        /// The child session's id.
        agent_id: &'a str,
        /// The definition it runs (`general-purpose` without one).
        agent_type: &'a str,
    },
}

impl Input<'_> {
    /// The event this is the input of.
    pub fn event(&self) -> Event {
        match self {
            Input::PreToolUse { .. } => Event::PreToolUse,
            Input::PostToolUse { .. } => Event::PostToolUse,
            Input::UserPromptSubmit { .. } => Event::UserPromptSubmit,
            Input::Stop { .. } => Event::Stop,
            Input::SubagentStop { .. } => Event::SubagentStop,
            Input::SessionStart { .. } => Event::SessionStart,
            Input::SessionEnd { .. } => Event::SessionEnd,
            Input::PreCompact { .. } => Event::PreCompact,
            Input::Notification { .. } => Event::Notification,
            Input::SubagentStart { .. } => Event::SubagentStart,
        }
    }
}

/// The bytes to write to the hook's stdin (one JSON object, no newline).
pub fn input_json(common: &Common<'_>, input: &Input<'_>) -> Vec<u8> {
    let mut o = Map::new();
    o.insert("session_id".into(), common.session_id.into());
    o.insert(
        "transcript_path".into(),
        common
            .transcript_path
            .map_or_else(String::new, |p| p.display().to_string())
            .into(),
    );
    o.insert("cwd".into(), common.cwd.display().to_string().into());
    o.insert("permission_mode".into(), common.permission_mode.into());
    o.insert("hook_event_name".into(), input.event().as_str().into());
    match *input {
        Input::PreToolUse { tool, arguments } => {
            tool_fields(&mut o, common.cwd, tool, arguments);
        }
        Input::PostToolUse {
            tool,
            arguments,
            success,
            output,
        } => {
            tool_fields(&mut o, common.cwd, tool, arguments);
            o.insert(
                "tool_response".into(),
                tool_response(common.cwd, tool, arguments, success, output),
            );
        }
        Input::UserPromptSubmit { prompt } => {
            o.insert("prompt".into(), prompt.into());
        }
        Input::Stop { stop_hook_active } | Input::SubagentStop { stop_hook_active } => {
            o.insert("stop_hook_active".into(), stop_hook_active.into());
        }
        Input::SessionStart { source } => {
            o.insert("source".into(), source.into());
        }
        Input::SessionEnd { reason } => {
            o.insert("reason".into(), reason.into());
        }
        Input::PreCompact {
            trigger,
            custom_instructions,
        } => {
            o.insert("trigger".into(), trigger.into());
            o.insert("custom_instructions".into(), custom_instructions.into());
        }
        Input::Notification {
            message,
            notification_type,
        } => {
            o.insert("message".into(), message.into());
            o.insert("notification_type".into(), notification_type.into());
        }
        Input::SubagentStart {
            agent_id,
            agent_type,
        } => {
            o.insert("agent_id".into(), agent_id.into());
            o.insert("agent_type".into(), agent_type.into());
        }
    }
    // Serializing a Value with string keys cannot fail.
    serde_json::to_vec(&Value::Object(o)).unwrap_or_default()
}

fn tool_fields(o: &mut Map<String, Value>, cwd: &Path, tool: &str, arguments: &Value) {
    o.insert("tool_name".into(), claude_tool_name(tool).into());
    o.insert("scv_tool_name".into(), tool.into());
    o.insert("tool_input".into(), tool_input(cwd, tool, arguments));
}

/// SCV's arguments with Claude Code's names added beside them (SCV's keys
/// are kept): `file_path` for the file tools ("File paths are absolute" in
/// Claude Code's input, so it is `cwd` joined with a relative `path`), and
/// Bash's `timeout` (milliseconds in Claude Code's Bash tool, as SCV's
/// `timeout_ms`), Task's `subagent_type` (SCV's `agent`). list_dir and search already use Glob's and Grep's names
/// (`path`, `pattern`, `glob`). A key the arguments already have is never
/// overwritten.
pub fn tool_input(cwd: &Path, tool: &str, arguments: &Value) -> Value {
    let Some(args) = arguments.as_object() else {
        return arguments.clone();
    };
    let mut out = args.clone();
    match tool {
        "read_file" | "write_file" | "edit_file" => {
            if let Some(path) = absolute_path(cwd, args) {
                out.entry("file_path").or_insert(path.into());
            }
        }
        "bash" => {
            if let Some(ms) = args.get("timeout_ms").filter(|v| v.is_number()) {
                out.entry("timeout").or_insert(ms.clone());
            }
        }
        // Claude Code's Task names the definition `subagent_type`.
        "task" => {
            if let Some(agent) = args.get("agent").filter(|v| v.is_string()) {
                out.entry("subagent_type").or_insert(agent.clone());
            }
        }
        _ => {}
    }
    Value::Object(out)
}

/// `cwd` joined with the arguments' `path` (itself when absolute).
fn absolute_path(cwd: &Path, args: &Map<String, Value>) -> Option<String> {
    let path = args.get("path")?.as_str()?;
    Some(cwd.join(path).display().to_string())
}

/// Claude Code: "The exact schema for `tool_input` and `tool_response`
/// depends on the tool"; its example for Write is
/// `{"filePath": "/path/to/file.txt", "success": true}`. SCV sends
/// `{"success", "output"}` for every tool (its tools return text) and adds
/// `filePath` for write_file and edit_file, as Claude Code's Write and Edit do.
fn tool_response(cwd: &Path, tool: &str, arguments: &Value, success: bool, output: &str) -> Value {
    let mut o = Map::new();
    if matches!(tool, "write_file" | "edit_file") {
        if let Some(path) = arguments.as_object().and_then(|a| absolute_path(cwd, a)) {
            o.insert("filePath".into(), path.into());
        }
    }
    o.insert("success".into(), success.into());
    o.insert("output".into(), output.into());
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn common() -> Common<'static> {
        Common {
            session_id: "s1",
            transcript_path: Some(Path::new("/home/u/.scv/sessions/s1.jsonl")),
            cwd: Path::new("/work/p"),
            permission_mode: "default",
        }
    }

    fn parsed(common: &Common<'_>, input: &Input<'_>) -> Value {
        serde_json::from_slice(&input_json(common, input)).unwrap()
    }

    #[test]
    fn common_fields() {
        let v = parsed(&common(), &Input::UserPromptSubmit { prompt: "hi" });
        assert_eq!(
            v,
            json!({
                "session_id": "s1",
                "transcript_path": "/home/u/.scv/sessions/s1.jsonl",
                "cwd": "/work/p",
                "permission_mode": "default",
                "hook_event_name": "UserPromptSubmit",
                "prompt": "hi",
            })
        );
        let no_transcript = Common {
            transcript_path: None,
            permission_mode: "plan",
            ..common()
        };
        let v = parsed(
            &no_transcript,
            &Input::Stop {
                stop_hook_active: true,
            },
        );
        assert_eq!(v["transcript_path"], "");
        assert_eq!(v["permission_mode"], "plan");
        assert_eq!(v["stop_hook_active"], true);
        assert_eq!(v["hook_event_name"], "Stop");
    }

    #[test]
    fn session_and_compact_fields() {
        let c = common();
        assert_eq!(
            parsed(&c, &Input::SessionStart { source: "resume" })["source"],
            "resume"
        );
        assert_eq!(
            parsed(&c, &Input::SessionEnd { reason: "other" })["reason"],
            "other"
        );
        let v = parsed(
            &c,
            &Input::PreCompact {
                trigger: "manual",
                custom_instructions: "keep the plan",
            },
        );
        assert_eq!(v["hook_event_name"], "PreCompact");
        assert_eq!(v["trigger"], "manual");
        assert_eq!(v["custom_instructions"], "keep the plan");
    }

    #[test]
    fn file_tools_get_an_absolute_file_path() {
        let args = json!({"path": "src/main.rs", "old_string": "a", "new_string": "b", "replace_all": false});
        let v = parsed(
            &common(),
            &Input::PreToolUse {
                tool: "edit_file",
                arguments: &args,
            },
        );
        assert_eq!(v["tool_name"], "Edit");
        assert_eq!(v["scv_tool_name"], "edit_file");
        assert_eq!(
            v["tool_input"],
            json!({"path": "src/main.rs", "file_path": "/work/p/src/main.rs",
                   "old_string": "a", "new_string": "b", "replace_all": false})
        );
        let args = json!({"path": "/etc/hosts", "offset": 1, "limit": 5});
        let v = parsed(
            &common(),
            &Input::PreToolUse {
                tool: "read_file",
                arguments: &args,
            },
        );
        assert_eq!(v["tool_name"], "Read");
        assert_eq!(v["tool_input"]["file_path"], "/etc/hosts");
        assert_eq!(v["tool_input"]["offset"], 1);
        let args = json!({"path": "a.txt", "content": "x"});
        let v = parsed(
            &common(),
            &Input::PreToolUse {
                tool: "write_file",
                arguments: &args,
            },
        );
        assert_eq!(v["tool_name"], "Write");
        assert_eq!(v["tool_input"]["file_path"], "/work/p/a.txt");
        assert_eq!(v["tool_input"]["content"], "x");
    }

    #[test]
    fn bash_gets_timeout_in_milliseconds() {
        let args = json!({"command": "ls", "timeout_ms": 5000, "unsandboxed": false});
        let v = parsed(
            &common(),
            &Input::PreToolUse {
                tool: "bash",
                arguments: &args,
            },
        );
        assert_eq!(v["tool_name"], "Bash");
        assert_eq!(
            v["tool_input"],
            json!({"command": "ls", "timeout_ms": 5000, "timeout": 5000, "unsandboxed": false})
        );
        let args = json!({"command": "ls"});
        let v = parsed(
            &common(),
            &Input::PreToolUse {
                tool: "bash",
                arguments: &args,
            },
        );
        assert_eq!(v["tool_input"], json!({"command": "ls"}));
    }

    #[test]
    fn search_list_and_mcp_keep_their_arguments() {
        let args = json!({"pattern": "fn main", "path": "src", "glob": "*.rs"});
        let v = parsed(
            &common(),
            &Input::PreToolUse {
                tool: "search",
                arguments: &args,
            },
        );
        assert_eq!(v["tool_name"], "Grep");
        assert_eq!(v["tool_input"], args);
        let args = json!({"path": "src"});
        let v = parsed(
            &common(),
            &Input::PreToolUse {
                tool: "list_dir",
                arguments: &args,
            },
        );
        assert_eq!(v["tool_name"], "Glob");
        assert_eq!(v["tool_input"], args);
        let args = json!({"entities": [1]});
        let v = parsed(
            &common(),
            &Input::PreToolUse {
                tool: "mcp__memory__create_entities",
                arguments: &args,
            },
        );
        assert_eq!(v["tool_name"], "mcp__memory__create_entities");
        assert_eq!(v["scv_tool_name"], "mcp__memory__create_entities");
        assert_eq!(v["tool_input"], args);
        // Arguments that are not an object go as they are.
        let odd = json!("x");
        let v = parsed(
            &common(),
            &Input::PreToolUse {
                tool: "bash",
                arguments: &odd,
            },
        );
        assert_eq!(v["tool_input"], "x");
    }

    #[test]
    fn an_existing_key_is_not_overwritten() {
        let args = json!({"path": "a", "file_path": "mine"});
        let v = parsed(
            &common(),
            &Input::PreToolUse {
                tool: "read_file",
                arguments: &args,
            },
        );
        assert_eq!(v["tool_input"]["file_path"], "mine");
    }

    #[test]
    fn post_tool_use_has_a_tool_response() {
        let args = json!({"path": "a.txt", "content": "x"});
        let v = parsed(
            &common(),
            &Input::PostToolUse {
                tool: "write_file",
                arguments: &args,
                success: true,
                output: "wrote 1 byte",
            },
        );
        assert_eq!(v["hook_event_name"], "PostToolUse");
        assert_eq!(v["tool_input"]["file_path"], "/work/p/a.txt");
        assert_eq!(
            v["tool_response"],
            json!({"filePath": "/work/p/a.txt", "success": true, "output": "wrote 1 byte"})
        );
        let args = json!({"command": "false"});
        let v = parsed(
            &common(),
            &Input::PostToolUse {
                tool: "bash",
                arguments: &args,
                success: false,
                output: "exit 1",
            },
        );
        assert_eq!(
            v["tool_response"],
            json!({"success": false, "output": "exit 1"})
        );
    }
}
