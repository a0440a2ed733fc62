//! write_file: create or overwrite a file in the workspace.

use super::builtin::{blocking, parse, schema_of, Builtin, ToolContext, ToolOutput, ToolResult};
use schemars::JsonSchema;
use scv_protocol::Risk;
use serde::Deserialize;
use serde_json::Value;
use std::io::Write as _;

/// Lines of a write shown in its approval prompt.
const PREVIEW_LINES: usize = 20;

pub(crate) const TOOL: Builtin = Builtin {
    name: "write_file",
    risk: Risk::Write,
    description: "Create or overwrite a file in the workspace with the given content. Parent directories are created.",
    parameters: schema_of::<WriteArgs>,
    summary,
    stays_sandboxed: None,
    run: |arguments, ctx| Box::pin(run(arguments, ctx)),
};

/// The size and the first lines of what will be written.
fn summary(arguments: &Value) -> String {
    let content = super::builtin::arg(arguments, "content");
    let lines = content.lines().count();
    let mut text = format!(
        "Write file: {} ({} bytes, {lines} {})",
        super::builtin::arg(arguments, "path"),
        content.len(),
        if lines == 1 { "line" } else { "lines" }
    );
    for line in content.lines().take(PREVIEW_LINES) {
        text.push_str("\n| ");
        text.push_str(line);
    }
    if lines > PREVIEW_LINES {
        text.push_str(&format!("\n[… {} more lines]", lines - PREVIEW_LINES));
    }
    text
}

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    path: String,
    content: String,
}

async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
    let args: WriteArgs = parse(arguments)?;
    let workspace = ctx.workspace.to_path_buf();
    let scv_home = ctx.scv_home.to_path_buf();
    let roots = ctx.roots.clone();
    blocking(move || {
        let (ws, rel) = super::roots::resolve(&workspace, &roots, &args.path, true)?;
        let ws = ws.protecting(&scv_home);
        if let Some(mode) = ws.shared(&rel)? {
            ws.replace(&rel, args.content.as_bytes(), mode)?;
            return Ok(ToolOutput::ok(format!(
                "Overwrote {} ({} bytes; it had other hard links, which keep the old content)",
                rel.shown,
                args.content.len()
            )));
        }
        let (mut file, existed) = ws.create(&rel)?;
        file.write_all(args.content.as_bytes())
            .map_err(|err| format!("cannot write {}: {err}", rel.shown))?;
        let verb = if existed { "Overwrote" } else { "Created" };
        Ok(ToolOutput::ok(format!(
            "{verb} {} ({} bytes)",
            rel.shown,
            args.content.len()
        )))
    })
    .await
}
