//! read_file: numbered lines of a text file in the workspace.

use super::builtin::{blocking, parse, schema_of, Builtin, ToolContext, ToolOutput, ToolResult};
use super::textfile::read_text;
use schemars::JsonSchema;
use scv_protocol::Risk;
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write as _;

const DEFAULT_LINE_LIMIT: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;

pub(crate) const TOOL: Builtin = Builtin {
    name: "read_file",
    risk: Risk::Read,
    description: "Read a text file in the workspace. Returns numbered lines; use offset (first line, 1-based) and limit (number of lines) for large files.",
    parameters: schema_of::<ReadArgs>,
    summary: |arguments| format!("Read file: {}", super::builtin::arg(arguments, "path")),
    stays_sandboxed: None,
    run: |arguments, ctx| Box::pin(run(arguments, ctx)),
};

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// Path relative to the workspace.
    path: String,
    #[schemars(range(min = 1))]
    offset: Option<usize>,
    #[schemars(range(min = 1))]
    limit: Option<usize>,
}

async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
    let args: ReadArgs = parse(arguments)?;
    let workspace = ctx.workspace.to_path_buf();
    let roots = ctx.roots.clone();
    blocking(move || {
        let (ws, rel) = super::roots::resolve(&workspace, &roots, &args.path, false)?;
        let (file, size) = ws.open_read(&rel)?;
        let text = read_text(file, size, &rel.shown)?;
        let shown = rel.shown;
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_LINE_LIMIT).max(1);
        let total = text.lines().count();
        if total == 0 {
            return Ok(ToolOutput::ok(format!("{shown} is empty")));
        }
        if offset > total {
            return Err(format!(
                "{shown} has {total} lines; offset {offset} is past the end"
            ));
        }
        let mut out = String::new();
        for (index, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
            let line = match line.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => format!("{}… [line cut]", &line[..cut]),
                None => line.to_string(),
            };
            let _ = writeln!(out, "{:>6}\t{line}", index + 1);
        }
        let last = (offset - 1 + limit).min(total);
        if last < total {
            let _ = writeln!(
                out,
                "[lines {offset}-{last} of {total}; use offset to read more]"
            );
        }
        Ok(ToolOutput::ok(out))
    })
    .await
}
