//! search: a regex over the workspace, honouring `.gitignore`, `.ignore`
//! and `.git/info/exclude`, with capped results (the `ignore` and `grep`
//! crates, as ripgrep uses them).
//!
//! The walk reads no file itself: ignore files and searched files are
//! opened beneath the workspace (`beneath`), so an ignore file that is a
//! link leading outside, not a regular file or over [`MAX_IGNORE_FILE_BYTES`]
//! is skipped, and a file swapped for a link mid-walk is never read. Lines
//! over [`MAX_LINE_BYTES`] are skipped (and counted), so one huge line
//! cannot make the server hold it.

use super::beneath::{Rel, Workspace};
use super::builtin::{
    blocking, parse, schema_of, Builtin, ToolContext, ToolError, ToolOutput, ToolResult,
};
use grep_regex::RegexMatcher;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::OverrideBuilder;
use ignore::{Match, WalkBuilder};
use schemars::JsonSchema;
use scv_protocol::Risk;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

const MAX_MATCHES: usize = 200;
const MAX_LINE_CHARS: usize = 300;
/// Ignore files larger than this are not read.
pub(super) const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;
/// Lines longer than this are not searched.
pub(super) const MAX_LINE_BYTES: usize = 1024 * 1024;
/// The searcher's own allocation bound, a backstop behind [`MAX_LINE_BYTES`].
const SEARCHER_HEAP_LIMIT: usize = 4 * MAX_LINE_BYTES;

pub(crate) const TOOL: Builtin = Builtin {
    name: "search",
    risk: Risk::Read,
    description: "Search file contents with a regular expression, honouring .gitignore. Returns path:line:text matches.",
    parameters: schema_of::<SearchArgs>,
    summary: |arguments| format!("Search for: {}", super::builtin::arg(arguments, "pattern")),
    stays_sandboxed: None,
    run: |arguments, ctx| Box::pin(run(arguments, ctx)),
};

#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    /// Regular expression (Rust regex syntax).
    pattern: String,
    /// Directory or file to search; default the workspace.
    #[serde(default)]
    path: Option<String>,
    /// Only files whose path matches this glob, e.g. *.rs
    #[serde(default)]
    glob: Option<String>,
}

async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
    let args: SearchArgs = parse(arguments)?;
    let matcher = RegexMatcher::new(&args.pattern)
        .map_err(|err| ToolError::Model(format!("invalid pattern: {err}")))?;
    let (workspace, roots) = (ctx.workspace.to_path_buf(), ctx.roots.clone());
    let cancel = ctx.cancel.clone();
    blocking(move || {
        let path = args.path.as_deref().unwrap_or("");
        let (ws, start) = super::roots::resolve(&workspace, &roots, path, false)
            .map(|(ws, start)| (Arc::new(ws), start))?;
        ws.stat(&start)?;
        let root = ws.join(&start);
        let ignores = Arc::new(Ignores {
            ws: ws.clone(),
            dirs: Mutex::default(),
        });
        let mut walk = WalkBuilder::new(&root);
        // The walk reads no ignore file itself; `Ignores` does, safely.
        walk.standard_filters(false).follow_links(false);
        {
            let ignores = ignores.clone();
            walk.filter_entry(move |entry| {
                entry.file_name() != ".git"
                    && !ignores.ignored(entry.path(), entry.file_type().is_some_and(|t| t.is_dir()))
            });
        }
        if let Some(glob) = &args.glob {
            let mut overrides = OverrideBuilder::new(&root);
            overrides
                .add(glob)
                .map_err(|err| format!("invalid glob: {err}"))?;
            walk.overrides(
                overrides
                    .build()
                    .map_err(|err| format!("invalid glob: {err}"))?,
            );
        }
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .heap_limit(Some(SEARCHER_HEAP_LIMIT))
            .build();
        let mut lines = Vec::new();
        let mut more = false;
        let mut long_lines = 0usize;
        'files: for entry in walk.build().filter_map(Result::ok) {
            if cancel.is_cancelled() {
                return Err("search cancelled".into());
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(ws.path()) else {
                continue;
            };
            let rel = Rel {
                path: rel.to_path_buf(),
                shown: rel.display().to_string(),
            };
            let Ok((file, _)) = ws.open_read(&rel) else {
                continue; // gone, swapped for a link, or not a regular file
            };
            let mut reader = LongLines::new(file, MAX_LINE_BYTES, cancel.clone());
            let shown = &rel.shown;
            let result = searcher.search_reader(
                &matcher,
                &mut reader,
                UTF8(|number, line| {
                    if lines.len() >= MAX_MATCHES {
                        more = true;
                        return Ok(false);
                    }
                    let line = line.trim_end_matches(['\n', '\r']);
                    let line = match line.char_indices().nth(MAX_LINE_CHARS) {
                        Some((cut, _)) => format!("{}…", &line[..cut]),
                        None => line.to_string(),
                    };
                    lines.push(format!("{shown}:{number}:{line}"));
                    Ok(true)
                }),
            );
            long_lines += reader.skipped;
            if cancel.is_cancelled() {
                return Err("search cancelled".into());
            }
            if result.is_err() {
                continue; // unreadable or not UTF-8: skip the file
            }
            if more {
                break 'files;
            }
        }
        let mut out = if lines.is_empty() {
            "no matches".to_string()
        } else {
            lines.join("\n")
        };
        if more {
            out.push_str(&format!(
                "\n[stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob]"
            ));
        }
        if long_lines > 0 {
            let (noun, verb) = if long_lines == 1 {
                ("line", "was")
            } else {
                ("lines", "were")
            };
            out.push_str(&format!(
                "\n[{long_lines} {noun} longer than {MAX_LINE_BYTES} bytes {verb} not searched]"
            ));
        }
        Ok(ToolOutput {
            success: true,
            output: out,
            truncated: more,
        })
    })
    .await
}

/// The ignore rules of each directory, read once per search.
struct Ignores {
    ws: Arc<Workspace>,
    dirs: Mutex<HashMap<PathBuf, Arc<DirRules>>>,
}

/// A directory's rules in precedence order: `.ignore`, `.gitignore`,
/// `.git/info/exclude`.
struct DirRules(Vec<Gitignore>);

impl Ignores {
    /// Whether `path` (under the workspace) is ignored: the nearest
    /// directory with a matching rule decides, as in ripgrep.
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        let Ok(rel) = path.strip_prefix(self.ws.path()) else {
            return false;
        };
        let mut dir = rel.parent();
        while let Some(current) = dir {
            for rules in &self.rules(current).0 {
                match rules.matched(path, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            dir = current.parent();
        }
        false
    }

    fn rules(&self, dir: &Path) -> Arc<DirRules> {
        let mut dirs = crate::sync::lock(&self.dirs);
        dirs.entry(dir.to_path_buf())
            .or_insert_with(|| Arc::new(self.load(dir)))
            .clone()
    }

    fn load(&self, dir: &Path) -> DirRules {
        let mut rules = Vec::new();
        for name in [".ignore", ".gitignore", ".git/info/exclude"] {
            let file = dir.join(name);
            let rel = Rel {
                shown: file.display().to_string(),
                path: file,
            };
            let Some(bytes) = self.ws.read_small(&rel, MAX_IGNORE_FILE_BYTES) else {
                continue;
            };
            let mut builder = GitignoreBuilder::new(self.ws.path().join(dir));
            for line in String::from_utf8_lossy(&bytes).lines() {
                let _ = builder.add_line(Some(rel.path.clone()), line);
            }
            if let Ok(matcher) = builder.build() {
                rules.push(matcher);
            }
        }
        DirRules(rules)
    }
}

/// A reader that passes lines of at most `max` bytes through and replaces
/// longer ones with an empty line (so line numbers stay right), counting
/// them. It holds at most one line.
struct LongLines<R> {
    inner: R,
    max: usize,
    /// The line being collected (no newline yet).
    line: Vec<u8>,
    /// Inside an over-long line: dropping bytes until its newline.
    dropping: bool,
    /// Bytes ready to hand out, and how many were handed out.
    out: Vec<u8>,
    pos: usize,
    chunk: Box<[u8]>,
    eof: bool,
    skipped: usize,
    /// The turn's cancellation: checked before every read, so a cancelled
    /// search stops inside a huge file, not only between files.
    cancel: CancellationToken,
}

impl<R: Read> LongLines<R> {
    fn new(inner: R, max: usize, cancel: CancellationToken) -> Self {
        LongLines {
            cancel,
            inner,
            max,
            line: Vec::new(),
            dropping: false,
            out: Vec::new(),
            pos: 0,
            chunk: vec![0; 64 * 1024].into_boxed_slice(),
            eof: false,
            skipped: 0,
        }
    }

    /// Reads one chunk and moves what is complete to `out`.
    fn fill(&mut self) -> std::io::Result<()> {
        self.out.clear();
        self.pos = 0;
        if self.cancel.is_cancelled() {
            return Err(std::io::Error::other("search cancelled"));
        }
        let n = self.inner.read(&mut self.chunk)?;
        if n == 0 {
            self.eof = true;
            if !self.dropping {
                self.out.append(&mut self.line);
            }
            return Ok(());
        }
        let mut rest = &self.chunk[..n];
        while !rest.is_empty() {
            let newline = memchr::memchr(b'\n', rest);
            let (part, after) = match newline {
                Some(at) => (&rest[..at], Some(&rest[at + 1..])),
                None => (rest, None),
            };
            if !self.dropping {
                if self.line.len() + part.len() > self.max {
                    self.line.clear();
                    self.dropping = true;
                    self.skipped += 1;
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            match after {
                Some(after) => {
                    if !self.dropping {
                        self.out.append(&mut self.line);
                    }
                    self.out.push(b'\n');
                    self.dropping = false;
                    rest = after;
                }
                None => break,
            }
        }
        Ok(())
    }
}

impl<R: Read> Read for LongLines<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.out.len() {
            if self.eof {
                return Ok(0);
            }
            self.fill()?;
        }
        let n = buf.len().min(self.out.len() - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through(input: &[u8], max: usize) -> (String, usize) {
        let mut reader = LongLines::new(input, max, CancellationToken::new());
        let mut out = Vec::new();
        reader.read_to_end(&mut out).unwrap();
        (String::from_utf8(out).unwrap(), reader.skipped)
    }

    /// An endless file (a FIFO would be refused; a huge one behaves so):
    /// once the turn is cancelled the next read fails, so the search ends.
    #[test]
    fn a_cancelled_search_stops_inside_an_endless_file() {
        let cancel = CancellationToken::new();
        let mut reader = LongLines::new(std::io::repeat(b'\n'), 1024, cancel.clone());
        let mut buf = [0u8; 4096];
        assert!(reader.read(&mut buf).unwrap() > 0);
        cancel.cancel();
        let mut out = Vec::new();
        let err = reader.read_to_end(&mut out).unwrap_err();
        assert_eq!(err.to_string(), "search cancelled");
    }

    #[test]
    fn long_lines_become_empty_and_are_counted() {
        assert_eq!(through(b"a\nbb\nccc", 4), ("a\nbb\nccc".into(), 0));
        assert_eq!(
            through(b"short\nwaytoolong\nok\n", 4),
            ("\n\nok\n".into(), 2)
        );
        let long = vec![b'x'; 200_000];
        let mut input = b"first\n".to_vec();
        input.extend_from_slice(&long);
        input.extend_from_slice(b"\nlast");
        assert_eq!(through(&input, 1000), ("first\n\nlast".into(), 1));
    }
}
