//! edit_file: replace an exact string in a file of the workspace.

use super::builtin::{
    blocking, parse, schema_of, Builtin, ToolContext, ToolError, ToolOutput, ToolResult,
};
use super::textfile::{read_text, MAX_FILE_BYTES};
use schemars::JsonSchema;
use scv_protocol::Risk;
use serde::Deserialize;
use serde_json::Value;
use std::io::{Seek, SeekFrom, Write as _};

pub(crate) const TOOL: Builtin = Builtin {
    name: "edit_file",
    risk: Risk::Write,
    description: "Replace an exact string in a file. old_string must match exactly once unless replace_all is true.",
    parameters: schema_of::<EditArgs>,
    summary,
    stays_sandboxed: None,
    run: |arguments, ctx| Box::pin(run(arguments, ctx)),
};

/// The change: every old line, then every new line.
fn summary(arguments: &Value) -> String {
    let all = arguments.get("replace_all").and_then(Value::as_bool) == Some(true);
    let mut text = format!(
        "Edit file: {}{}",
        super::builtin::arg(arguments, "path"),
        if all { " (every occurrence)" } else { "" }
    );
    for line in super::builtin::arg(arguments, "old_string").split('\n') {
        text.push_str("\n- ");
        text.push_str(line);
    }
    for line in super::builtin::arg(arguments, "new_string").split('\n') {
        text.push_str("\n+ ");
        text.push_str(line);
    }
    text
}

#[derive(Deserialize, JsonSchema)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
    let args: EditArgs = parse(arguments)?;
    if args.old_string.is_empty() {
        return Err(ToolError::Model(
            "old_string is empty; use write_file to create a file".into(),
        ));
    }
    let workspace = ctx.workspace.to_path_buf();
    let scv_home = ctx.scv_home.to_path_buf();
    let roots = ctx.roots.clone();
    blocking(move || {
        let (ws, rel) = super::roots::resolve(&workspace, &roots, &args.path, true)?;
        let ws = ws.protecting(&scv_home);
        let shown = &rel.shown;
        // One open file is read and rewritten: nothing can be swapped in
        // between.
        let shared = ws.shared(&rel)?;
        let (mut file, size) = ws.open_read_write(&rel)?;
        let text = read_text(file.try_clone().map_err(|e| e.to_string())?, size, shown)?;
        let count = text.matches(&args.old_string).count();
        if count == 0 {
            return Err(format!("old_string was not found in {shown}; read the file and copy the text exactly"));
        }
        if count > 1 && !args.replace_all {
            return Err(format!(
                "old_string occurs {count} times in {shown}; add surrounding context to make it unique, or set replace_all"
            ));
        }
        let replaced = if args.replace_all { count } else { 1 };
        // The size is known before anything is built.
        let new_size = (text.len() as u64 + replaced as u64 * args.new_string.len() as u64)
            .saturating_sub(replaced as u64 * args.old_string.len() as u64);
        if new_size > MAX_FILE_BYTES {
            return Err(format!(
                "the edit would make {shown} {new_size} bytes; the limit is {MAX_FILE_BYTES}"
            ));
        }
        let updated = if args.replace_all {
            text.replace(&args.old_string, &args.new_string)
        } else {
            text.replacen(&args.old_string, &args.new_string, 1)
        };
        let noun = if count == 1 { "occurrence" } else { "occurrences" };
        if let Some(mode) = shared {
            // Other hard links (maybe outside) keep the old content.
            ws.replace(&rel, updated.as_bytes(), mode)?;
            return Ok(ToolOutput::ok(format!(
                "Replaced {count} {noun} in {shown} (it had other hard links, which keep the old content)"
            )));
        }
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.set_len(0))
            .and_then(|_| file.write_all(updated.as_bytes()))
            .map_err(|err| format!("cannot write {shown}: {err}"))?;
        Ok(ToolOutput::ok(format!("Replaced {count} {noun} in {shown}")))
    })
    .await
}
