//! read_file, write_file, edit_file, list_dir.

use super::output::looks_binary;
use super::paths::{display, resolve};
use super::{blocking, parse, ToolContext, ToolOutput};
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Files larger than this are not read whole.
const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
const DEFAULT_LINE_LIMIT: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;
const MAX_DIR_ENTRIES: usize = 1000;

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

pub async fn read_file(arguments: &Value, ctx: &ToolContext<'_>) -> Result<ToolOutput, String> {
    let args: ReadArgs = parse(arguments)?;
    let path = resolve(ctx.workspace, &args.path)?;
    let shown = display(ctx.workspace, &path);
    blocking(move || {
        let text = read_text(&path, &shown)?;
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

fn read_text(path: &PathBuf, shown: &str) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|err| format!("cannot read {shown}: {err}"))?;
    if meta.is_dir() {
        return Err(format!("{shown} is a directory; use list_dir"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{shown} is too large to read ({} bytes; limit {MAX_FILE_BYTES})",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|err| format!("cannot read {shown}: {err}"))?;
    if looks_binary(&bytes) {
        return Err(format!(
            "{shown} is a binary file ({} bytes); not shown",
            bytes.len()
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("{shown} is not valid UTF-8 text; not shown"))
}

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

pub async fn write_file(arguments: &Value, ctx: &ToolContext<'_>) -> Result<ToolOutput, String> {
    let args: WriteArgs = parse(arguments)?;
    let path = resolve(ctx.workspace, &args.path)?;
    let shown = display(ctx.workspace, &path);
    blocking(move || {
        if path.is_dir() {
            return Err(format!("{shown} is a directory"));
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
        }
        let existed = path.exists();
        std::fs::write(&path, args.content.as_bytes())
            .map_err(|err| format!("cannot write {shown}: {err}"))?;
        let verb = if existed { "Overwrote" } else { "Created" };
        Ok(ToolOutput::ok(format!(
            "{verb} {shown} ({} bytes)",
            args.content.len()
        )))
    })
    .await
}

#[derive(Deserialize)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

pub async fn edit_file(arguments: &Value, ctx: &ToolContext<'_>) -> Result<ToolOutput, String> {
    let args: EditArgs = parse(arguments)?;
    if args.old_string.is_empty() {
        return Err("old_string is empty; use write_file to create a file".into());
    }
    let path = resolve(ctx.workspace, &args.path)?;
    let shown = display(ctx.workspace, &path);
    blocking(move || {
        let text = read_text(&path, &shown)?;
        let count = text.matches(&args.old_string).count();
        if count == 0 {
            return Err(format!("old_string was not found in {shown}; read the file and copy the text exactly"));
        }
        if count > 1 && !args.replace_all {
            return Err(format!(
                "old_string occurs {count} times in {shown}; add surrounding context to make it unique, or set replace_all"
            ));
        }
        let updated = if args.replace_all {
            text.replace(&args.old_string, &args.new_string)
        } else {
            text.replacen(&args.old_string, &args.new_string, 1)
        };
        std::fs::write(&path, updated).map_err(|err| format!("cannot write {shown}: {err}"))?;
        let noun = if count == 1 { "occurrence" } else { "occurrences" };
        Ok(ToolOutput::ok(format!("Replaced {count} {noun} in {shown}")))
    })
    .await
}

#[derive(Deserialize)]
struct ListArgs {
    #[serde(default)]
    path: String,
}

pub async fn list_dir(arguments: &Value, ctx: &ToolContext<'_>) -> Result<ToolOutput, String> {
    let args: ListArgs = parse(arguments)?;
    let path = resolve(ctx.workspace, &args.path)?;
    let shown = display(ctx.workspace, &path);
    blocking(move || {
        let reader =
            std::fs::read_dir(&path).map_err(|err| format!("cannot list {shown}: {err}"))?;
        let mut names: Vec<String> = reader
            .filter_map(Result::ok)
            .map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                match entry.file_type() {
                    Ok(kind) if kind.is_dir() => format!("{name}/"),
                    Ok(kind) if kind.is_symlink() => format!("{name}@"),
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
