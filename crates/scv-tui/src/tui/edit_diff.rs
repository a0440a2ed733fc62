//! A file edit's card as a unified diff: line numbers from the file as it
//! is when the call is proposed (before anything changed), three lines of
//! context around each change, and the change itself diffed line by line
//! (`similar`), not the raw `old_string` / `new_string`. Where the file
//! cannot be read here (a remote session, a file over the bound) the
//! diff has the change alone, without numbers.

use serde_json::Value;
use similar::{ChangeTag, TextDiff};
use std::path::Path;

/// Lines of context on each side of a change.
const CONTEXT: usize = 3;
/// At most this many lines per diff (the card says how many more).
pub const MAX_DIFF_LINES: usize = 2000;
/// A file larger than this is not read for numbers and context.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// One line of a diff: `-` removed, `+` added, ` ` context; its number in
/// the old and the new file where known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub sign: char,
    pub old: Option<usize>,
    pub new: Option<usize>,
    pub text: String,
}

impl DiffLine {
    pub fn bytes(&self) -> usize {
        self.text.len() + 24
    }
}

/// The diff of a proposed `edit_file` or `write_file` call in the
/// workspace `cwd` (`None`: the file is not to be read — a replayed call,
/// whose file has changed since — so the change alone); `None` for other
/// tools.
pub fn of_call(cwd: Option<&str>, name: &str, arguments: &Value) -> Option<Vec<DiffLine>> {
    let arg = |key: &str| arguments.get(key).and_then(Value::as_str);
    let path = arg("path")?;
    let current = cwd.and_then(|cwd| read_bounded(&Path::new(cwd).join(path)));
    let mut lines = match name {
        "edit_file" => edit(current.as_deref(), arg("old_string")?, arg("new_string")?),
        "write_file" => whole(current.as_deref().unwrap_or(""), arg("content")?),
        _ => return None,
    };
    lines.truncate(MAX_DIFF_LINES);
    Some(lines)
}

fn read_bounded(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// `old` replaced by `new` in `file` (its first occurrence, where the
/// numbers come from); without the file, the change alone.
fn edit(file: Option<&str>, old: &str, new: &str) -> Vec<DiffLine> {
    let Some((file, at)) = file.and_then(|f| f.find(old).map(|at| (f, at))) else {
        return changed(old, new, 1, false);
    };
    // Lines are whole lines of the file: from the start of the line the
    // match begins in to the end of the line it ends in.
    let start = file[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = file[at + old.len()..]
        .find('\n')
        .map_or(file.len(), |i| at + old.len() + i + 1);
    let before_lines = file[..start].lines().count();
    let old_block = &file[start..end];
    let new_block = format!("{}{new}{}", &file[start..at], &file[at + old.len()..end]);
    let mut out = Vec::new();
    let head: Vec<&str> = file[..start].lines().collect();
    for (i, line) in head
        .iter()
        .enumerate()
        .skip(head.len().saturating_sub(CONTEXT))
    {
        out.push(context(i + 1, i + 1, line));
    }
    let first = before_lines + 1;
    out.extend(changed(old_block, &new_block, first, true));
    let old_count = old_block.lines().count();
    let new_count = new_block.lines().count();
    for (i, line) in file[end..].lines().take(CONTEXT).enumerate() {
        out.push(context(first + old_count + i, first + new_count + i, line));
    }
    out
}

/// A whole file written over `current` (empty: a new file), in hunks
/// with context.
fn whole(current: &str, content: &str) -> Vec<DiffLine> {
    let diff = TextDiff::from_lines(current, content);
    let mut out = Vec::new();
    for group in diff.grouped_ops(CONTEXT) {
        for op in group {
            for change in diff.iter_changes(&op) {
                out.push(DiffLine {
                    sign: sign(change.tag()),
                    old: change.old_index().map(|i| i + 1),
                    new: change.new_index().map(|i| i + 1),
                    text: change.value().trim_end_matches('\n').to_string(),
                });
            }
        }
    }
    out
}

/// `old` → `new` line by line, numbered from `first` when `numbered`.
fn changed(old: &str, new: &str, first: usize, numbered: bool) -> Vec<DiffLine> {
    let diff = TextDiff::from_lines(old, new);
    diff.iter_all_changes()
        .map(|change| DiffLine {
            sign: sign(change.tag()),
            old: change.old_index().filter(|_| numbered).map(|i| first + i),
            new: change.new_index().filter(|_| numbered).map(|i| first + i),
            text: change.value().trim_end_matches('\n').to_string(),
        })
        .collect()
}

fn context(old: usize, new: usize, text: &str) -> DiffLine {
    DiffLine {
        sign: ' ',
        old: Some(old),
        new: Some(new),
        text: text.to_string(),
    }
}

fn sign(tag: ChangeTag) -> char {
    match tag {
        ChangeTag::Delete => '-',
        ChangeTag::Insert => '+',
        ChangeTag::Equal => ' ',
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(lines: &[DiffLine]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                let n = |n: Option<usize>| n.map_or("-".into(), |n| n.to_string());
                format!("{} {} {}{}", n(l.old), n(l.new), l.sign, l.text)
            })
            .collect()
    }

    #[test]
    fn an_edit_is_numbered_from_the_file_with_context_and_indentation() {
        let dir = tempfile::tempdir().unwrap();
        let text =
            "fn a() {}\n\nfn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n\nfn b() {}\n";
        std::fs::write(dir.path().join("m.rs"), text).unwrap();
        let cwd = dir.path().display().to_string();
        let diff = of_call(
            Some(&cwd),
            "edit_file",
            &json!({"path": "m.rs", "old_string": "let x = 1;", "new_string": "let x = 2;\n    let y = 3;"}),
        )
        .unwrap();
        assert_eq!(
            shown(&diff),
            [
                "1 1  fn a() {}",
                "2 2  ",
                "3 3  fn main() {",
                "4 - -    let x = 1;",
                "- 4 +    let x = 2;",
                "- 5 +    let y = 3;",
                "5 6      println!(\"{x}\");",
                "6 7  }",
                "7 8  ",
            ]
        );
    }

    #[test]
    fn without_the_file_the_change_alone_and_new_files_whole() {
        let diff = of_call(
            None,
            "edit_file",
            &json!({"path": "x", "old_string": "a\nb", "new_string": "a\nc"}),
        )
        .unwrap();
        assert_eq!(shown(&diff), ["- -  a", "- - -b", "- - +c"]);
        let diff = of_call(
            None,
            "write_file",
            &json!({"path": "x", "content": "one\ntwo\n"}),
        )
        .unwrap();
        assert_eq!(shown(&diff), ["- 1 +one", "- 2 +two"]);
        assert!(of_call(Some("/"), "bash", &json!({"command": "ls"})).is_none());
    }
}
