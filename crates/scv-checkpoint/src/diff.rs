//! What changed between two snapshots: the paths, and a unified diff.

use crate::error::CheckpointError;
use crate::snapshot::join;
use crate::store::CheckpointStore;
use crate::tree::{Entry, Node, Tree};
use serde::{Deserialize, Serialize};

/// One path that differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Relative, with `/`.
    pub path: String,
    pub kind: ChangeKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// Files and links that differ (content, mode, link target, kind), and
/// directories that appear or go while empty; sorted by path. Skipped
/// entries count as absent.
pub(crate) fn changes(from: &Tree, to: &Tree) -> Vec<Change> {
    let mut out = Vec::new();
    diff_dirs("", Some(from), Some(to), &mut out);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The entries of two directories paired by name (skipped ones left out).
pub(crate) fn pair<'a>(
    a: Option<&'a Tree>,
    b: Option<&'a Tree>,
) -> Vec<(&'a str, Option<&'a Entry>, Option<&'a Entry>)> {
    let live = |t: Option<&'a Tree>| -> Vec<&'a Entry> {
        t.map(|t| t.entries.iter().filter(|e| !e.is_skipped()).collect())
            .unwrap_or_default()
    };
    let (xs, ys) = (live(a), live(b));
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(xs.len().max(ys.len()));
    while i < xs.len() || j < ys.len() {
        match (xs.get(i), ys.get(j)) {
            (Some(x), Some(y)) if x.name == y.name => {
                out.push((x.name.as_str(), Some(*x), Some(*y)));
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.name < y.name => {
                out.push((x.name.as_str(), Some(*x), None));
                i += 1;
            }
            (Some(x), None) => {
                out.push((x.name.as_str(), Some(*x), None));
                i += 1;
            }
            (_, Some(y)) => {
                out.push((y.name.as_str(), None, Some(*y)));
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}

fn diff_dirs(prefix: &str, a: Option<&Tree>, b: Option<&Tree>, out: &mut Vec<Change>) {
    for (name, x, y) in pair(a, b) {
        let path = join(prefix, name);
        match (x, y) {
            (Some(x), Some(y)) => match (x.tree(), y.tree()) {
                (Some(tx), Some(ty)) => {
                    if !x.same_content(y) {
                        diff_dirs(&path, Some(tx), Some(ty), out);
                    }
                }
                (Some(tx), None) => {
                    out.push(change(&path, ChangeKind::Modified));
                    diff_dirs(&path, Some(tx), None, out);
                }
                (None, Some(ty)) => {
                    out.push(change(&path, ChangeKind::Modified));
                    diff_dirs(&path, None, Some(ty), out);
                }
                (None, None) => {
                    if !x.same_content(y) {
                        out.push(change(&path, ChangeKind::Modified));
                    }
                }
            },
            (Some(x), None) => one_side(&path, x, ChangeKind::Deleted, out),
            (None, Some(y)) => one_side(&path, y, ChangeKind::Added, out),
            (None, None) => {}
        }
    }
}

fn one_side(path: &str, e: &Entry, kind: ChangeKind, out: &mut Vec<Change>) {
    match e.tree() {
        Some(tree) => {
            let before = out.len();
            let (a, b) = match kind {
                ChangeKind::Deleted => (Some(&**tree), None),
                _ => (None, Some(&**tree)),
            };
            diff_dirs(path, a, b, out);
            if out.len() == before {
                out.push(change(path, kind));
            }
        }
        None => out.push(change(path, kind)),
    }
}

fn change(path: &str, kind: ChangeKind) -> Change {
    Change {
        path: path.to_string(),
        kind,
    }
}

/// The entry at `path` in `tree`, skipped ones counting as absent.
pub(crate) fn lookup<'a>(tree: &'a Tree, path: &str) -> Option<&'a Entry> {
    let mut tree = tree;
    let mut parts = path.split('/').peekable();
    while let Some(part) = parts.next() {
        let entry = tree.get(part)?;
        if parts.peek().is_none() {
            return (!entry.is_skipped()).then_some(entry);
        }
        tree = entry.tree()?;
    }
    None
}

/// A blob bigger than this is not diffed line by line.
const MAX_DIFF_FILE: u64 = 8 * 1024 * 1024;
const CONTEXT: usize = 3;

enum Text {
    Absent,
    Lines(String),
    Binary,
    NoContent,
    Big,
    Link(String),
}

pub(crate) fn unified_diff(
    store: &CheckpointStore,
    from: &Tree,
    to: &Tree,
    max_bytes: usize,
) -> Result<(String, bool), CheckpointError> {
    let mut out = String::new();
    for c in changes(from, to) {
        let a = lookup(from, &c.path);
        let b = lookup(to, &c.path);
        if a.is_some_and(Entry::is_dir) && b.is_some_and(Entry::is_dir) {
            continue;
        }
        let piece = file_diff(store, &c.path, a, b)?;
        if out.len() + piece.len() > max_bytes {
            let mut room = max_bytes.saturating_sub(out.len());
            while room > 0 && !piece.is_char_boundary(room) {
                room -= 1;
            }
            out.push_str(&piece[..room]);
            return Ok((out, true));
        }
        out.push_str(&piece);
    }
    Ok((out, false))
}

fn text_of(store: &CheckpointStore, e: Option<&Entry>) -> Result<Text, CheckpointError> {
    let Some(e) = e else {
        return Ok(Text::Absent);
    };
    Ok(match &e.node {
        Node::File { hash: None, .. } => Text::NoContent,
        // Holes read as zeros: not text.
        Node::File { sparse: true, .. } => Text::Binary,
        Node::File { hash: Some(h), .. } => {
            if e.stat.size > MAX_DIFF_FILE {
                Text::Big
            } else {
                let bytes = store.read_blob(h)?;
                if bytes.contains(&0) {
                    Text::Binary
                } else {
                    match String::from_utf8(bytes) {
                        Ok(s) => Text::Lines(s),
                        Err(_) => Text::Binary,
                    }
                }
            }
        }
        Node::Link { target } => Text::Link(target.clone()),
        Node::Dir { .. } | Node::Skipped { .. } => Text::Absent,
    })
}

fn mode_of(e: Option<&Entry>) -> Option<u32> {
    match e.map(|e| &e.node) {
        Some(Node::File { mode, .. }) => Some(*mode),
        _ => None,
    }
}

fn file_diff(
    store: &CheckpointStore,
    path: &str,
    a: Option<&Entry>,
    b: Option<&Entry>,
) -> Result<String, CheckpointError> {
    let mut out = format!("diff a/{path} b/{path}\n");
    if let (Some(m), Some(n)) = (mode_of(a), mode_of(b)) {
        if m != n {
            out.push_str(&format!("old mode {m:o}\nnew mode {n:o}\n"));
        }
    }
    let (ta, tb) = (text_of(store, a)?, text_of(store, b)?);
    let left = if a.is_some_and(|e| !e.is_dir()) {
        format!("a/{path}")
    } else {
        "/dev/null".to_string()
    };
    let right = if b.is_some_and(|e| !e.is_dir()) {
        format!("b/{path}")
    } else {
        "/dev/null".to_string()
    };
    let lines = |t: &Text| -> Option<String> {
        match t {
            Text::Absent => Some(String::new()),
            Text::Lines(s) => Some(s.clone()),
            _ => None,
        }
    };
    for (t, side) in [(&ta, &left), (&tb, &right)] {
        match t {
            Text::NoContent => out.push_str(&format!(
                "{side}: over 64 MiB of content, recorded without it\n"
            )),
            Text::Big => out.push_str(&format!("{side}: too big to diff\n")),
            Text::Binary => {}
            _ => {}
        }
    }
    if matches!(ta, Text::Link(_)) || matches!(tb, Text::Link(_)) {
        let show = |t: &Text| match t {
            Text::Link(s) => format!("link to {s}"),
            Text::Absent => "nothing".to_string(),
            Text::Lines(_) | Text::Binary => "a file".to_string(),
            Text::NoContent | Text::Big => "a big file".to_string(),
        };
        out.push_str(&format!("{path}: {} -> {}\n", show(&ta), show(&tb)));
        return Ok(out);
    }
    if matches!(ta, Text::Binary) || matches!(tb, Text::Binary) {
        out.push_str(&format!("Binary files {left} and {right} differ\n"));
        return Ok(out);
    }
    let (Some(x), Some(y)) = (lines(&ta), lines(&tb)) else {
        return Ok(out);
    };
    if x == y {
        return Ok(out);
    }
    out.push_str(&format!("--- {left}\n+++ {right}\n"));
    out.push_str(&hunks(&x, &y));
    Ok(out)
}

/// Lines with their endings (a last line without one is marked).
fn split(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Op {
    Same,
    Del,
    Ins,
}

/// The hunks of a unified diff from `x` to `y`.
pub(crate) fn hunks(x: &str, y: &str) -> String {
    let a = split(x);
    let b = split(y);
    let script = edit_script(&a, &b);
    // (op, index in a, index in b)
    let mut ops = Vec::with_capacity(script.len());
    let (mut i, mut j) = (0usize, 0usize);
    for op in script {
        ops.push((op, i, j));
        match op {
            Op::Same => {
                i += 1;
                j += 1;
            }
            Op::Del => i += 1,
            Op::Ins => j += 1,
        }
    }
    let mut out = String::new();
    let mut k = 0;
    while k < ops.len() {
        if ops[k].0 == Op::Same {
            k += 1;
            continue;
        }
        // A hunk: from CONTEXT lines before this change to CONTEXT after
        // the last change closer than 2 * CONTEXT to the one before.
        let start = k.saturating_sub(CONTEXT);
        let mut end = k;
        let mut last_change = k;
        while end < ops.len() {
            if ops[end].0 != Op::Same {
                last_change = end;
            } else if end - last_change > 2 * CONTEXT {
                break;
            }
            end += 1;
        }
        let end = (last_change + 1 + CONTEXT).min(ops.len());
        let (a0, b0) = (ops[start].1, ops[start].2);
        let a_len = ops[start..end].iter().filter(|o| o.0 != Op::Ins).count();
        let b_len = ops[start..end].iter().filter(|o| o.0 != Op::Del).count();
        let from = if a_len == 0 { a0 } else { a0 + 1 };
        let to = if b_len == 0 { b0 } else { b0 + 1 };
        out.push_str(&format!("@@ -{from},{a_len} +{to},{b_len} @@\n"));
        for &(op, i, j) in &ops[start..end] {
            let (mark, line) = match op {
                Op::Same => (' ', a[i]),
                Op::Del => ('-', a[i]),
                Op::Ins => ('+', b[j]),
            };
            out.push(mark);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
        k = end;
    }
    out
}

/// Myers' O(ND) diff on the part between the common prefix and suffix;
/// past `MAX_D` edits the middle is shown as replaced whole.
fn edit_script(a: &[&str], b: &[&str]) -> Vec<Op> {
    const MAX_D: usize = 600;
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut ops = vec![Op::Same; prefix];
    match myers(ma, mb, MAX_D) {
        Some(mid) => ops.extend(mid),
        None => {
            ops.extend(std::iter::repeat_n(Op::Del, ma.len()));
            ops.extend(std::iter::repeat_n(Op::Ins, mb.len()));
        }
    }
    ops.extend(std::iter::repeat_n(Op::Same, suffix));
    ops
}

fn myers(a: &[&str], b: &[&str], max_d: usize) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (n + m) as usize;
    let limit = max.min(max_d);
    let offset = limit as isize + 1;
    let width = 2 * limit + 3;
    let mut v = vec![0isize; width];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    for d in 0..=limit as isize {
        trace.push(v.clone());
        let mut k = -d;
        while k <= d {
            let idx = (k + offset) as usize;
            let mut x = if k == -d || (k != d && v[idx - 1] < v[idx + 1]) {
                v[idx + 1]
            } else {
                v[idx - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[idx] = x;
            if x >= n && y >= m {
                return Some(backtrack(&trace, d, offset, n, m));
            }
            k += 2;
        }
    }
    None
}

/// The edits back from the end: `trace[d]` is the frontier before step d.
fn backtrack(trace: &[Vec<isize>], last_d: isize, offset: isize, n: isize, m: isize) -> Vec<Op> {
    let mut ops = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=last_d).rev() {
        let v = &trace[d as usize];
        let k = x - y;
        let down =
            k == -d || (k != d && v[(k - 1 + offset) as usize] < v[(k + 1 + offset) as usize]);
        let prev_k = if down { k + 1 } else { k - 1 };
        let prev_x = v[(prev_k + offset) as usize];
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            ops.push(Op::Same);
            x -= 1;
            y -= 1;
        }
        ops.push(if down { Op::Ins } else { Op::Del });
        x = prev_x;
        y = prev_y;
    }
    while x > 0 && y > 0 {
        ops.push(Op::Same);
        x -= 1;
        y -= 1;
    }
    ops.reverse();
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(a: &[&str], b: &[&str], ops: &[Op]) -> (Vec<String>, Vec<String>) {
        let (mut i, mut j) = (0, 0);
        let (mut left, mut right) = (Vec::new(), Vec::new());
        for op in ops {
            match op {
                Op::Same => {
                    assert_eq!(a[i], b[j]);
                    left.push(a[i].to_string());
                    right.push(b[j].to_string());
                    i += 1;
                    j += 1;
                }
                Op::Del => {
                    left.push(a[i].to_string());
                    i += 1;
                }
                Op::Ins => {
                    right.push(b[j].to_string());
                    j += 1;
                }
            }
        }
        (left, right)
    }

    #[test]
    fn the_edit_script_rebuilds_both_sides() {
        let cases: &[(&str, &str)] = &[
            ("", ""),
            ("a\n", ""),
            ("", "a\n"),
            ("a\nb\nc\n", "a\nx\nc\n"),
            ("a\nb\nc\nd\ne\nf\n", "b\nc\nd\ne\nf\ng\n"),
            ("x\ny\nz\n", "z\ny\nx\n"),
            (
                "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
                "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\neleven\n12\n",
            ),
        ];
        for (x, y) in cases {
            let (a, b) = (split(x), split(y));
            let ops = edit_script(&a, &b);
            let (left, right) = apply(&a, &b, &ops);
            assert_eq!(left.concat(), *x);
            assert_eq!(right.concat(), *y);
        }
        // Myers finds the shortest: one line changed is one del + one ins.
        let ops = edit_script(&split("a\nb\nc\n"), &split("a\nx\nc\n"));
        assert_eq!(ops.iter().filter(|o| **o != Op::Same).count(), 2);
    }

    #[test]
    fn hunks_are_unified() {
        let x = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
        let y = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10";
        let h = hunks(x, y);
        assert_eq!(
            h,
            "@@ -2,9 +2,9 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n-10\n+10\n\\ No newline at end of file\n"
        );
        assert_eq!(hunks("", "a\n"), "@@ -0,0 +1,1 @@\n+a\n");
    }
}
