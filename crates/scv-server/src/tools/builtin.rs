//! What a tool is: a [`Builtin`] (name, risk, description, schema,
//! summary, run), the [`ToolContext`] a call runs in, and what it returns.
//! Every tool file and the registry import this; it imports none of them.

use schemars::transform::{transform_subschemas, Transform};
use schemars::{JsonSchema, Schema};
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
    /// `$SCV_HOME`, which the file tools never write (it may lie inside
    /// the workspace).
    pub scv_home: &'a Path,
    pub bash_timeout: Duration,
    /// Cap on a model's own `timeout_ms`.
    pub bash_max_timeout: Duration,
    pub max_output_bytes: usize,
    /// Cancels the call; tools watch it (bash kills everything it started
    /// before returning).
    pub cancel: &'a CancellationToken,
    /// The sandbox commands run in; `None`: unconfined.
    pub sandbox: Option<crate::sandbox::SandboxView>,
    /// The environment of tool processes (no credentials).
    pub env: &'a [(std::ffi::OsString, std::ffi::OsString)],
    /// The MCP servers, for calls of their tools.
    pub mcp: &'a scv_mcp::Hub,
    /// Asks the session's client an MCP server's questions during the
    /// server's calls (`None`: declined).
    pub elicitor: Option<scv_mcp::Elicitor>,
    /// The call's span's W3C `traceparent` when traces are on (MCP calls
    /// carry it in `_meta`).
    pub traceparent: Option<String>,
    /// The session's custom commands and skills (`skill` loads one).
    pub catalog: &'a scv_commands::Catalog,
    /// The session's background processes (`bash {background: true}`).
    pub background: &'a crate::background::Background,
    /// `web_fetch`'s allowlist and bounds.
    pub web: &'a crate::egress::fetch::WebLimits,
    /// The session's additional directories (`tools::roots`).
    pub roots: &'a std::sync::Arc<[super::roots::Root]>,
}

/// What a call produced: shown to the client and given to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolOutput {
    pub success: bool,
    pub output: String,
    pub truncated: bool,
}

impl ToolOutput {
    pub(crate) fn ok(output: impl Into<String>) -> Self {
        ToolOutput {
            success: true,
            output: output.into(),
            truncated: false,
        }
    }

    pub(crate) fn error(output: impl Into<String>) -> Self {
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
    /// JSON Schema of the arguments: [`schema_of`] the tool's args struct.
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

/// The JSON Schema of a tool's arguments, derived from the struct its run
/// parses them into, so the two cannot drift apart.
///
/// What schemars adds on its own is taken out again ([`Plain`]), so the
/// schema is what models were offered when these were written by hand
/// (`registry`'s test compares them). Field doc comments become the
/// model's descriptions; `#[schemars(range(min = 1))]` sets a minimum.
pub(super) fn schema_of<T: JsonSchema>() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    // No `$schema`: none of the wires' tool definitions carries one.
    settings.meta_schema = None;
    settings.transforms.push(Box::new(Plain));
    settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// Reduces a derived schema to the plain form models are offered: no
/// `title` (the struct's name), `format` (`uint64`) or `default`; an
/// `Option` field's type without `"null"` (leaving it out of `required` is
/// how an optional argument is said); `description` last in each object,
/// so that where serde_json keeps insertion order the text is byte for
/// byte what it was. Objects are rebuilt rather than edited in place:
/// `Map::remove` would move the last key into the gap in that mode.
#[derive(Clone)]
struct Plain;

impl Transform for Plain {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        let mut description = None;
        for (key, value) in std::mem::take(object) {
            match key.as_str() {
                "title" | "format" | "default" => {}
                "description" => description = Some(value),
                "type" => {
                    let value = match value {
                        Value::Array(types) => {
                            let mut types: Vec<Value> =
                                types.into_iter().filter(|t| t != "null").collect();
                            if types.len() == 1 {
                                types.remove(0)
                            } else {
                                Value::Array(types)
                            }
                        }
                        other => other,
                    };
                    object.insert(key, value);
                }
                _ => {
                    object.insert(key, value);
                }
            }
        }
        if let Some(description) = description {
            object.insert("description".into(), description);
        }
    }
}
