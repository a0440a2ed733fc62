//! search: a regex over the workspace, honouring .gitignore, with capped
//! results (the `ignore` and `grep` crates, as ripgrep uses them).

use super::paths::{display, resolve};
use super::{blocking, parse, ToolContext, ToolOutput};
use grep_regex::RegexMatcher;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::overrides::OverrideBuilder;
use ignore::WalkBuilder;
use serde::Deserialize;
use serde_json::Value;

const MAX_MATCHES: usize = 200;
const MAX_LINE_CHARS: usize = 300;

#[derive(Deserialize)]
struct SearchArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
}

pub async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> Result<ToolOutput, String> {
    let args: SearchArgs = parse(arguments)?;
    let matcher =
        RegexMatcher::new(&args.pattern).map_err(|err| format!("invalid pattern: {err}"))?;
    let root = resolve(ctx.workspace, args.path.as_deref().unwrap_or(""))?;
    let workspace = ctx.workspace.to_path_buf();
    let cancel = ctx.cancel.clone();
    blocking(move || {
        let mut walk = WalkBuilder::new(&root);
        walk.hidden(false)
            .require_git(false)
            .filter_entry(|e| e.file_name() != ".git");
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
            .build();
        let mut lines = Vec::new();
        let mut more = false;
        'files: for entry in walk.build().filter_map(Result::ok) {
            if cancel.is_cancelled() {
                return Err("search cancelled".into());
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let shown = display(&workspace, entry.path());
            let result = searcher.search_path(
                &matcher,
                entry.path(),
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
            if result.is_err() {
                continue; // unreadable or not UTF-8: skip the file
            }
            if more {
                break 'files;
            }
        }
        if lines.is_empty() {
            return Ok(ToolOutput::ok("no matches"));
        }
        let mut out = lines.join("\n");
        if more {
            out.push_str(&format!(
                "\n[stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob]"
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
