//! read_file, write_file, edit_file, list_dir. Every path is opened
//! beneath the workspace by the kernel (see `beneath`); no file over
//! [`MAX_FILE_BYTES`] is read or written.

use super::beneath::Workspace;
use super::output::looks_binary;
use super::{blocking, parse, ToolContext, ToolOutput};
use rustix::fs::FileType;
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write as _};

/// The largest file the tools read whole, or write by editing.
pub const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
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
    let workspace = ctx.workspace.to_path_buf();
    blocking(move || {
        let ws = Workspace::open(&workspace)?;
        let rel = ws.relative(&args.path)?;
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

/// A whole text file of at most [`MAX_FILE_BYTES`], from an open file.
fn read_text(mut file: File, size: u64, shown: &str) -> Result<String, String> {
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "{shown} is too large to read ({size} bytes; limit {MAX_FILE_BYTES})"
        ));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    (&mut file)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read {shown}: {err}"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "{shown} is too large to read (over {MAX_FILE_BYTES} bytes)"
        ));
    }
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
    let workspace = ctx.workspace.to_path_buf();
    blocking(move || {
        let ws = Workspace::open(&workspace)?;
        let rel = ws.relative(&args.path)?;
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
    let workspace = ctx.workspace.to_path_buf();
    blocking(move || {
        let ws = Workspace::open(&workspace)?;
        let rel = ws.relative(&args.path)?;
        let shown = &rel.shown;
        // One open file is read and rewritten: nothing can be swapped in
        // between.
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
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.set_len(0))
            .and_then(|_| file.write_all(updated.as_bytes()))
            .map_err(|err| format!("cannot write {shown}: {err}"))?;
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
    let workspace = ctx.workspace.to_path_buf();
    blocking(move || {
        let ws = Workspace::open(&workspace)?;
        let rel = ws.relative(&args.path)?;
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
