//! Calls of MCP servers' tools, as the agent sees them: an approval
//! summary naming the server and tool, and a run that goes through the
//! hub (bounded by the server's `tool_timeout_ms`, cancelled with the
//! turn, the server told in both cases).

use super::builtin::{ToolContext, ToolOutput};
use scv_mcp::{CallError, McpTool};
use serde_json::Value;

/// Arguments shown in an approval, at most.
const SUMMARY_ARGUMENTS: usize = 1000;

pub(crate) fn summary(tool: &McpTool, arguments: &Value) -> String {
    let mut arguments = arguments.to_string();
    if arguments.len() > SUMMARY_ARGUMENTS {
        let mut cut = SUMMARY_ARGUMENTS;
        while !arguments.is_char_boundary(cut) {
            cut -= 1;
        }
        let more = arguments.len() - cut;
        arguments.truncate(cut);
        arguments.push_str(&format!("… ({more} more bytes)"));
    }
    // Hints are the server's word: shown, never a reason to skip asking.
    let hint = match (tool.read_only_hint, tool.destructive_hint) {
        (Some(true), _) => " (the server says it only reads)",
        (_, Some(true)) => " (the server says it may destroy data)",
        _ => "",
    };
    format!(
        "Call MCP tool `{}` of server `{}`{hint}: {arguments}",
        tool.tool, tool.server
    )
}

pub(crate) async fn run(tool: &McpTool, arguments: &Value, ctx: &ToolContext<'_>) -> ToolOutput {
    match ctx
        .mcp
        .call(
            tool,
            arguments,
            ctx.cancel,
            ctx.elicitor.clone(),
            ctx.traceparent.as_deref(),
        )
        .await
    {
        Ok((text, false)) => ToolOutput::ok(text),
        Ok((text, true)) => ToolOutput::error(text),
        Err(CallError::TimedOut(after)) => ToolOutput::error(format!(
            "error: the MCP tool timed out after {} ms (the server was told to cancel it)",
            after.as_millis()
        )),
        Err(err) => ToolOutput::error(format!("error: {err}")),
    }
}
