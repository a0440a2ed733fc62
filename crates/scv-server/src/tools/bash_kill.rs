//! bash_kill: ends a background process of the session and everything it
//! started (its reaper SIGKILLs all of it, wherever it moved), and returns
//! once none of it is left. Only the session's own processes can be
//! named, so it needs no approval.

use super::builtin::{parse, schema_of, Builtin, ToolContext, ToolOutput, ToolResult};
use schemars::JsonSchema;
use scv_protocol::Risk;
use serde::Deserialize;
use serde_json::Value;

pub(crate) const TOOL: Builtin = Builtin {
    name: "bash_kill",
    risk: Risk::Read,
    description: "Stop a background process and every process it started.",
    parameters: schema_of::<Args>,
    summary: |arguments| {
        format!(
            "Stop background process {}",
            super::builtin::arg(arguments, "process_id")
        )
    },
    stays_sandboxed: None,
    run: |arguments, ctx| Box::pin(run(arguments, ctx)),
};

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The process_id bash returned.
    process_id: String,
}

async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
    let args: Args = parse(arguments)?;
    let proc = ctx.background.get(&args.process_id)?;
    if let Some(status) = proc.status() {
        return Ok(ToolOutput::ok(format!(
            "[process {}: had already ended: {status}]",
            proc.id
        )));
    }
    proc.kill().await;
    let status = proc.status().unwrap_or_else(|| "killed".into());
    Ok(ToolOutput::ok(format!("[process {}: {status}]", proc.id)))
}
