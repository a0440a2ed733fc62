//! list_dir: the entries of a directory in the workspace.

use super::builtin::{blocking, parse, schema_of, Builtin, ToolContext, ToolOutput, ToolResult};
use rustix::fs::FileType;
use schemars::JsonSchema;
use scv_protocol::Risk;
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write as _;

const MAX_DIR_ENTRIES: usize = 1000;

pub(crate) const TOOL: Builtin = Builtin {
    name: "list_dir",
    risk: Risk::Read,
    description: "List a directory in the workspace; directories end with '/'.",
    parameters: schema_of::<ListArgs>,
    summary: |arguments| format!("List directory: {}", super::builtin::arg(arguments, "path")),
    stays_sandboxed: None,
    run: |arguments, ctx| Box::pin(run(arguments, ctx)),
};

// `path` is required in the schema (the model always names the directory)
// though a call without it lists the workspace, as it always did.
#[derive(Deserialize, JsonSchema)]
#[schemars(extend("required" = ["path"]))]
struct ListArgs {
    #[serde(default)]
    path: String,
}

async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
    let args: ListArgs = parse(arguments)?;
    let workspace = ctx.workspace.to_path_buf();
    let roots = ctx.roots.clone();
    blocking(move || {
        let (ws, rel) = super::roots::resolve(&workspace, &roots, &args.path, false)?;
        let shown = rel.shown.clone();
        let dir = ws.open_dir(&rel)?;
        let entries = rustix::fs::Dir::read_from(&dir)
            .map_err(|err| format!("cannot list {shown}: {err}"))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|entry| !matches!(entry.file_name().to_bytes(), b"." | b".."))
            .map(|entry| {
                let name = String::from_utf8_lossy(entry.file_name().to_bytes()).into_owned();
                let kind = match entry.file_type() {
                    FileType::Unknown => rustix::fs::statat(
                        &dir,
                        entry.file_name(),
                        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                    )
                    .map_or(FileType::Unknown, |st| FileType::from_raw_mode(st.st_mode)),
                    known => known,
                };
                match kind {
                    FileType::Directory => format!("{name}/"),
                    FileType::Symlink => format!("{name}@"),
                    _ => name,
                }
            })
            .collect();
        names.sort();
        let total = names.len();
        if total == 0 {
            return Ok(ToolOutput::ok(format!("{shown} is empty")));
        }
        let mut out = names
            .into_iter()
            .take(MAX_DIR_ENTRIES)
            .collect::<Vec<_>>()
            .join("\n");
        if total > MAX_DIR_ENTRIES {
            let _ = write!(
                out,
                "\n[{} more entries not shown]",
                total - MAX_DIR_ENTRIES
            );
        }
        Ok(ToolOutput {
            success: true,
            output: out,
            truncated: total > MAX_DIR_ENTRIES,
        })
    })
    .await
}
