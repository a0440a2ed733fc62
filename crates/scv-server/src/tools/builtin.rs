//! What a tool is: a [`Builtin`] (name, risk, description, schema,
//! summary, run), the [`ToolContext`] a call runs in, and what it returns.
//! Every tool file and the registry import this; it imports none of them.

use scv_protocol::Risk;
use serde_json::Value;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Limits and place for one tool call.
pub(crate) struct ToolContext<'a> {
    /// The canonical session workspace.
    pub workspace: &'a Path,
    pub bash_timeout: Duration,
    /// Cap on a model's own `timeout_ms`.
    pub bash_max_timeout: Duration,
    pub max_output_bytes: usize,
    /// Cancels the call; tools watch it (bash kills everything it started
    /// before returning).
    pub cancel: &'a CancellationToken,
    /// The sandbox commands run in; `None`: unconfined.
    pub sandbox: Option<&'a scv_sandbox::Policy>,
    /// The environment of tool processes (no credentials).
    pub env: &'a [(std::ffi::OsString, std::ffi::OsString)],
    /// The MCP servers, for calls of their tools.
    pub mcp: &'a scv_mcp::Hub,
}

/// What a call produced: shown to the client and given to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolOutput {
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

/// Why a call did not produce output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolError {
    /// The call failed; the model is told (bad arguments, a missing file).
    Model(String),
    /// SCV itself failed: the turn fails with `internal_error`.
    Internal(String),
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError::Model(message)
    }
}

pub(crate) type ToolResult = Result<ToolOutput, ToolError>;
pub(crate) type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolResult> + Send + 'a>>;

/// A tool built into SCV.
pub(crate) struct Builtin {
    pub name: &'static str,
    pub risk: Risk,
    pub description: &'static str,
    pub parameters: fn() -> Value,
    /// What an approval prompt shows of a call: all of it.
    pub summary: fn(&Value) -> String,
    /// For a tool that runs commands: whether a call stays inside the
    /// sandbox (false: it asked to leave it).
    pub stays_sandboxed: Option<fn(&Value) -> bool>,
    pub run: for<'a> fn(&'a Value, &'a ToolContext<'a>) -> ToolFuture<'a>,
}

/// A string argument, or "".
pub(super) fn arg<'a>(arguments: &'a Value, key: &str) -> &'a str {
    arguments.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Typed arguments, or a model-visible message saying what is wrong.
pub(super) fn parse<T: serde::de::DeserializeOwned>(arguments: &Value) -> Result<T, String> {
    serde_json::from_value(arguments.clone()).map_err(|err| format!("invalid arguments: {err}"))
}

/// Runs blocking file work off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, ToolError> {
    match crate::blocking::run(work).await {
        Ok(result) => result.map_err(ToolError::Model),
        Err(err) => Err(ToolError::Internal(format!("tool task failed: {err}"))),
    }
}
