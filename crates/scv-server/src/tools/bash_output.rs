//! bash_output: what a background process (`bash {background: true}`)
//! wrote since the last read — stdout and stderr together, bounded by the
//! tool output cap — with how it stands; `wait_ms` waits (at most
//! `background::MAX_WAIT`) for output when there is none yet. Reads only:
//! no approval.

use super::builtin::{parse, schema_of, Builtin, ToolContext, ToolOutput, ToolResult};
use crate::background::RING_BYTES;
use schemars::JsonSchema;
use scv_protocol::Risk;
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

pub(crate) const TOOL: Builtin = Builtin {
    name: "bash_output",
    risk: Risk::Read,
    description: "The output (stdout and stderr) a background process wrote since the last read, and whether it still runs.",
    parameters: schema_of::<Args>,
    summary: |arguments| {
        format!(
            "Read the output of background process {}",
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
    /// Wait up to this long (at most 60000) for output when there is none yet.
    wait_ms: Option<u64>,
}

/// Room kept for the status lines.
const STATUS_ROOM: usize = 512;

async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
    let args: Args = parse(arguments)?;
    let proc = ctx.background.get(&args.process_id)?;
    let budget = ctx.max_output_bytes.saturating_sub(STATUS_ROOM).max(64);
    let wait = Duration::from_millis(args.wait_ms.unwrap_or(0));
    let (read, status) = proc.read_new(budget, wait, ctx.cancel).await;
    let mut out = String::new();
    if read.lost > 0 {
        out.push_str(&format!(
            "[{} bytes of output were lost before this read: the process keeps only its last {} KiB]\n",
            read.lost,
            RING_BYTES / 1024
        ));
    }
    let text = String::from_utf8_lossy(&read.bytes);
    if text.is_empty() {
        out.push_str("(no new output)\n");
    } else {
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    if read.more > 0 {
        out.push_str(&format!(
            "[{} more bytes: call bash_output again to read them]\n",
            read.more
        ));
    }
    match status {
        Some(status) => out.push_str(&format!("[process {}: {status}]", proc.id)),
        None => out.push_str(&format!("[process {}: running]", proc.id)),
    }
    Ok(ToolOutput {
        success: true,
        output: out,
        truncated: read.lost > 0,
    })
}
