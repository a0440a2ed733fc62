//! The tools offered to the model. Names, arguments and risk classes are
//! fixed interfaces (ARCHITECTURE.md). Every tool answers with text the
//! model reads; failures are model-visible text too, never a turn failure.

mod bash;
pub mod beneath;
mod files;
pub mod output;
pub mod reaper;
mod search;

use scv_protocol::Risk;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Limits and place for one tool call.
pub struct ToolContext<'a> {
    /// The canonical session workspace.
    pub workspace: &'a Path,
    pub bash_timeout: Duration,
    /// Cap on a model's own `timeout_ms`.
    pub bash_max_timeout: Duration,
    pub max_output_bytes: usize,
    /// Cancels the call (bash kills its process group).
    pub cancel: &'a CancellationToken,
}

/// What a call produced: shown to the client and given to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub success: bool,
    pub output: String,
    pub truncated: bool,
}

impl ToolOutput {
    pub fn ok(output: impl Into<String>) -> Self {
        ToolOutput {
            success: true,
            output: output.into(),
            truncated: false,
        }
    }

    pub fn error(output: impl Into<String>) -> Self {
        ToolOutput {
            success: false,
            output: output.into(),
            truncated: false,
        }
    }
}

struct ToolSpec {
    name: &'static str,
    risk: Risk,
    description: &'static str,
    parameters: fn() -> Value,
}

const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "bash",
        risk: Risk::Process,
        description: "Run a shell command with bash in the workspace directory. stdin is closed; stdout and stderr are returned together with the exit code. Long output is cut in the middle.",
        parameters: || json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run."},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "Kill the command after this many milliseconds."}
            },
            "required": ["command"]
        }),
    },
    ToolSpec {
        name: "read_file",
        risk: Risk::Read,
        description: "Read a text file in the workspace. Returns numbered lines; use offset (first line, 1-based) and limit (number of lines) for large files.",
        parameters: || json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace."},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1}
            },
            "required": ["path"]
        }),
    },
    ToolSpec {
        name: "write_file",
        risk: Risk::Write,
        description: "Create or overwrite a file in the workspace with the given content. Parent directories are created.",
        parameters: || json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            },
            "required": ["path", "content"]
        }),
    },
    ToolSpec {
        name: "edit_file",
        risk: Risk::Write,
        description: "Replace an exact string in a file. old_string must match exactly once unless replace_all is true.",
        parameters: || json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"}
            },
            "required": ["path", "old_string", "new_string"]
        }),
    },
    ToolSpec {
        name: "list_dir",
        risk: Risk::Read,
        description: "List a directory in the workspace; directories end with '/'.",
        parameters: || json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"]
        }),
    },
    ToolSpec {
        name: "search",
        risk: Risk::Read,
        description: "Search file contents with a regular expression, honouring .gitignore. Returns path:line:text matches.",
        parameters: || json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)."},
                "path": {"type": "string", "description": "Directory or file to search; default the workspace."},
                "glob": {"type": "string", "description": "Only files whose path matches this glob, e.g. *.rs"}
            },
            "required": ["pattern"]
        }),
    },
];

/// The tool definitions sent to the provider (OpenAI function tools).
pub fn definitions() -> &'static [Value] {
    static DEFINITIONS: LazyLock<Vec<Value>> = LazyLock::new(|| {
        TOOLS
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": (tool.parameters)(),
                    }
                })
            })
            .collect()
    });
    &DEFINITIONS
}

/// Serialized size of [`definitions`], for request-size estimates.
pub fn definitions_bytes() -> usize {
    static BYTES: LazyLock<usize> =
        LazyLock::new(|| serde_json::to_vec(definitions()).map_or(0, |v| v.len()));
    *BYTES
}

/// Tool names with their one-line descriptions, for the system prompt.
pub fn catalogue() -> impl Iterator<Item = (&'static str, &'static str)> {
    TOOLS.iter().map(|t| (t.name, t.description))
}

/// The risk class of a tool, `None` for an unknown name.
pub fn risk(name: &str) -> Option<Risk> {
    TOOLS.iter().find(|t| t.name == name).map(|t| t.risk)
}

/// What an approval prompt shows of a call: all of it. A command keeps
/// every line and every character (clients render control characters
/// visibly); a write shows its size and first lines; an edit shows the
/// change.
pub fn summary(name: &str, arguments: &Value) -> String {
    let arg = |key: &str| arguments.get(key).and_then(Value::as_str).unwrap_or("");
    match name {
        "bash" => format!("Run shell command: {}", arg("command")),
        "read_file" => format!("Read file: {}", arg("path")),
        "write_file" => {
            let content = arg("content");
            let lines = content.lines().count();
            let mut text = format!(
                "Write file: {} ({} bytes, {lines} {})",
                arg("path"),
                content.len(),
                if lines == 1 { "line" } else { "lines" }
            );
            for line in content.lines().take(WRITE_PREVIEW_LINES) {
                text.push_str("\n| ");
                text.push_str(line);
            }
            if lines > WRITE_PREVIEW_LINES {
                text.push_str(&format!("\n[… {} more lines]", lines - WRITE_PREVIEW_LINES));
            }
            text
        }
        "edit_file" => {
            let all = arguments.get("replace_all").and_then(Value::as_bool) == Some(true);
            let mut text = format!(
                "Edit file: {}{}",
                arg("path"),
                if all { " (every occurrence)" } else { "" }
            );
            for line in arg("old_string").split('\n') {
                text.push_str("\n- ");
                text.push_str(line);
            }
            for line in arg("new_string").split('\n') {
                text.push_str("\n+ ");
                text.push_str(line);
            }
            text
        }
        "list_dir" => format!("List directory: {}", arg("path")),
        "search" => format!("Search for: {}", arg("pattern")),
        other => format!("Run tool: {other}"),
    }
}

/// Lines of a write shown in its approval prompt.
const WRITE_PREVIEW_LINES: usize = 20;

/// Runs one call. Output is capped at `max_output_bytes`.
pub async fn run(name: &str, arguments: &Value, ctx: &ToolContext<'_>) -> ToolOutput {
    let result = match name {
        "bash" => bash::run(arguments, ctx).await,
        "read_file" => files::read_file(arguments, ctx).await,
        "write_file" => files::write_file(arguments, ctx).await,
        "edit_file" => files::edit_file(arguments, ctx).await,
        "list_dir" => files::list_dir(arguments, ctx).await,
        "search" => search::run(arguments, ctx).await,
        other => Err(format!("unknown tool `{other}`")),
    };
    let result = result.unwrap_or_else(|message| ToolOutput::error(format!("error: {message}")));
    let (output, cut) = output::cap(result.output, ctx.max_output_bytes);
    ToolOutput {
        success: result.success,
        output,
        truncated: result.truncated || cut,
    }
}

/// Typed arguments, or a model-visible message saying what is wrong.
fn parse<T: serde::de::DeserializeOwned>(arguments: &Value) -> Result<T, String> {
    serde_json::from_value(arguments.clone()).map_err(|err| format!("invalid arguments: {err}"))
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| format!("tool task failed: {err}"))?
}
