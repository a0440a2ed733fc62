//! Claude Code's permission rule syntax — `Tool` or `Tool(specifier)` —
//! read and matched against SCV's tool calls. A hook's `if` field and the
//! `permissions.allow|deny|ask` lists of a settings file are written in it.
//!
//! - `Bash(npm run build)` is that command exactly; `*` matches any text
//!   (`Bash(git * main)`); a space before a trailing `*` is a word boundary
//!   (`Bash(ls *)` matches `ls -la` and `ls`, not `lsof`); the older
//!   `Bash(npm run test:*)` is a prefix (`npm run test`, then a word or
//!   nothing). A command of several parts (`a && b`, `a | b`, `a; b`) is
//!   matched part by part, each with its `VAR=value` prefixes and the
//!   wrappers `nohup`, `nice`, `timeout N`, `time` taken off.
//! - `Read(…)`, `Edit(…)`, `Write(…)`: gitignore-style paths. `//abs` is an
//!   absolute path, `~/p` beneath the home, `/p` beneath the project root,
//!   `./p` or `p` beneath the working directory; a pattern without a `/`
//!   (`*.ts`, `.env`) matches at any depth; `**` crosses folders, `*` not.
//! - `WebFetch(domain:example.com)` (`*.example.com` covers subdomains).
//! - `mcp__server`, `mcp__server__*`, `mcp__server__tool`.
//! - `Task(name)` / `Agent(name)`, `Skill(name)`: the subagent or skill.
//!
//! A rule names a Claude Code tool or SCV's own name of it; a Claude Code
//! tool SCV lacks (`WebSearch`, `NotebookEdit`, …) is read and matches
//! nothing. Anything else is an error that says what is wrong.
//!
//! Two ways of matching a Bash command: [`Mode::Any`] (a hook's `if`, a
//! `deny` or `ask` rule) holds when any part matches, or the whole line;
//! [`Mode::All`] (an `allow` rule) holds only when every part matches and
//! the line substitutes no command (`$(…)`, backquotes, `<(…)`), so an
//! allowed `git status` never carries a `rm -rf` along.

use std::path::{Component, Path, PathBuf};

use regex::{Regex, RegexBuilder};
use serde_json::Value;

/// The longest rule read.
pub const MAX_RULE_CHARS: usize = 4096;
/// How big a compiled pattern may get.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Claude Code's tools and the SCV tools each covers. Empty: SCV has no
/// such tool; the rule is read and matches nothing.
const TOOLS: &[(&str, &[&str])] = &[
    ("Bash", &["bash"]),
    ("Read", &["read_file", "list_dir", "search"]),
    ("Edit", &["edit_file", "write_file"]),
    ("MultiEdit", &["edit_file"]),
    ("Write", &["write_file"]),
    ("Glob", &["list_dir", "search"]),
    ("Grep", &["search"]),
    ("LS", &["list_dir"]),
    ("WebFetch", &["web_fetch"]),
    ("Task", &["task"]),
    ("Agent", &["task"]),
    ("Skill", &["skill"]),
    ("BashOutput", &["bash_output"]),
    ("KillShell", &["bash_kill"]),
    ("KillBash", &["bash_kill"]),
    ("WebSearch", &[]),
    ("NotebookEdit", &[]),
    ("NotebookRead", &[]),
    ("TodoWrite", &[]),
    ("ExitPlanMode", &[]),
    ("SlashCommand", &[]),
    ("ListMcpResourcesTool", &[]),
    ("ReadMcpResourceTool", &[]),
];

/// SCV's own tool names, which a rule may use too.
const SCV_TOOLS: &[&str] = &[
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "search",
    "web_fetch",
    "task",
    "skill",
    "bash_output",
    "bash_kill",
];

/// How a Bash command is matched (see the module's note).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Any,
    All,
}

/// Where relative paths of a rule are resolved.
#[derive(Clone, Copy, Debug)]
pub struct Places<'a> {
    /// The working directory (`./p`, `p`) and the project root (`/p`).
    pub cwd: &'a Path,
    /// The home (`~/p`); `None`: such a rule matches nothing.
    pub home: Option<&'a Path>,
}

/// One rule, read.
#[derive(Clone, Debug)]
pub struct Rule {
    text: String,
    tools: Tools,
    spec: Spec,
}

#[derive(Clone, Debug)]
enum Tools {
    /// These SCV tools (empty: none SCV has).
    Named(&'static [&'static str]),
    /// An MCP server's tools: `mcp__server` or `mcp__server__*` (None), or
    /// one tool.
    Mcp {
        server: String,
        tool: Option<String>,
    },
}

#[derive(Clone, Debug)]
enum Spec {
    /// No specifier, `()` or `(*)`: every call.
    Any,
    /// A command pattern (whole-string match), plus the bare command a
    /// trailing ` *` or `:*` also covers.
    Command(Regex, Option<String>),
    /// A path pattern, not yet anchored (resolved per call).
    Path(String),
    /// `domain:host`.
    Domain(String),
    /// A name pattern (subagent, skill), whole-string.
    Name(Regex),
}

impl Rule {
    /// Reads one rule; the error says what is wrong, in one line.
    pub fn parse(text: &str) -> Result<Rule, String> {
        let trimmed = text.trim();
        if trimmed.chars().count() > MAX_RULE_CHARS {
            return Err(format!(
                "a rule may have at most {MAX_RULE_CHARS} characters"
            ));
        }
        if trimmed.is_empty() {
            return Err("the rule is empty".into());
        }
        let (name, spec) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                if !trimmed.ends_with(')') {
                    return Err(format!(
                        "`{trimmed}` is not a rule: one is `Tool` or `Tool(specifier)`, as in `Bash(git push *)`"
                    ));
                }
                (
                    &trimmed[..open],
                    Some(&trimmed[open + 1..trimmed.len() - 1]),
                )
            }
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*'))
        {
            return Err(format!(
                "`{trimmed}` is not a rule: one is `Tool` or `Tool(specifier)`, as in `Bash(git push *)`"
            ));
        }
        let tools = tools_of(name)?;
        let spec = match spec.map(str::trim) {
            None | Some("") | Some("*") => Spec::Any,
            Some(spec) => spec_of(name, &tools, spec)?,
        };
        Ok(Rule {
            text: trimmed.to_string(),
            tools,
            spec,
        })
    }

    /// The rule as written (trimmed).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the rule names SCV's tool `tool` at all (whatever its
    /// specifier): `Bash(git *)` names `bash`.
    pub fn names_tool(&self, tool: &str) -> bool {
        match &self.tools {
            Tools::Named(tools) => tools.contains(&tool),
            Tools::Mcp { server, tool: one } => {
                let Some(rest) = tool
                    .strip_prefix("mcp__")
                    .and_then(|r| r.strip_prefix(server.as_str()))
                    .and_then(|r| r.strip_prefix("__"))
                else {
                    return false;
                };
                one.as_deref().is_none_or(|one| one == rest)
            }
        }
    }

    /// Whether a call of SCV's tool `tool` with `arguments` matches.
    pub fn matches(&self, tool: &str, arguments: &Value, places: &Places<'_>, mode: Mode) -> bool {
        if !self.names_tool(tool) {
            return false;
        }
        let arg = |key: &str| arguments.get(key).and_then(Value::as_str);
        match &self.spec {
            Spec::Any => true,
            Spec::Command(re, bare) => {
                let Some(command) = arg("command") else {
                    return false;
                };
                command_matches(re, bare.as_deref(), command, mode)
            }
            Spec::Path(pattern) => {
                let path = arg("path").unwrap_or(".");
                path_matches(pattern, path, places)
            }
            Spec::Domain(domain) => {
                arg("url")
                    .and_then(host_of)
                    .is_some_and(|host| match domain.strip_prefix("*.") {
                        Some(parent) => host.ends_with(&format!(".{parent}")) || host == parent,
                        None => host == *domain,
                    })
            }
            Spec::Name(re) => ["agent", "name", "subagent_type"]
                .iter()
                .find_map(|key| arg(key))
                .is_some_and(|name| re.is_match(name)),
        }
    }
}

/// The tools a rule's name covers.
fn tools_of(name: &str) -> Result<Tools, String> {
    if let Some(rest) = name.strip_prefix("mcp__") {
        let (server, tool) = match rest.split_once("__") {
            None => (rest, None),
            Some((server, "*")) => (server, None),
            Some((server, tool)) => (server, Some(tool.to_string())),
        };
        if server.is_empty() || tool.as_deref() == Some("") {
            return Err(format!(
                "`{name}` names no MCP server or tool (one is `mcp__SERVER` or `mcp__SERVER__TOOL`)"
            ));
        }
        return Ok(Tools::Mcp {
            server: server.to_string(),
            tool,
        });
    }
    if let Some((_, tools)) = TOOLS.iter().find(|(cc, _)| *cc == name) {
        return Ok(Tools::Named(tools));
    }
    if let Some(i) = SCV_TOOLS.iter().position(|t| *t == name) {
        return Ok(Tools::Named(&SCV_TOOLS[i..=i]));
    }
    let known: Vec<&str> = TOOLS.iter().map(|(cc, _)| *cc).collect();
    Err(format!(
        "`{name}` is not a tool SCV or Claude Code knows (Claude Code's: {}; or mcp__SERVER__TOOL)",
        known.join(", ")
    ))
}

fn spec_of(name: &str, tools: &Tools, spec: &str) -> Result<Spec, String> {
    let Tools::Named(scv) = tools else {
        return Err(format!(
            "`{name}({spec})`: an MCP rule takes no specifier (write `{name}`)"
        ));
    };
    let first = scv.first().copied().unwrap_or("");
    Ok(match first {
        "bash" => {
            let (re, bare) = command_pattern(spec)?;
            Spec::Command(re, bare)
        }
        "read_file" | "edit_file" | "write_file" | "list_dir" | "search" => {
            if spec.contains('\0') {
                return Err("a path pattern may not hold a NUL".into());
            }
            Spec::Path(spec.to_string())
        }
        "web_fetch" => match spec.strip_prefix("domain:") {
            Some(domain) if !domain.trim().is_empty() => {
                Spec::Domain(domain.trim().to_ascii_lowercase())
            }
            _ => {
                return Err(format!(
                    "`{name}({spec})`: a WebFetch rule is `WebFetch(domain:HOST)`"
                ))
            }
        },
        "task" | "skill" => Spec::Name(glob(spec, ".*")?),
        // A tool SCV lacks: matches nothing, whatever it says.
        _ => Spec::Any,
    })
}

/// A Bash pattern: `*` is any text; `X:*` and a trailing ` *` also cover
/// the bare `X`.
fn command_pattern(spec: &str) -> Result<(Regex, Option<String>), String> {
    if let Some(prefix) = spec.strip_suffix(":*") {
        let prefix = prefix.trim_end();
        let re = glob(&format!("{prefix} *"), ".*")?;
        return Ok((re, Some(prefix.to_string())));
    }
    let bare = spec
        .strip_suffix(" *")
        .map(|p| p.trim_end().to_string())
        .filter(|p| !p.contains('*'));
    Ok((glob(spec, ".*")?, bare))
}

/// `pattern` as a whole-string regex, `*` standing for `star`.
fn glob(pattern: &str, star: &str) -> Result<Regex, String> {
    let mut re = String::from("^(?s:");
    for (i, part) in pattern.split('*').enumerate() {
        if i > 0 {
            re.push_str(star);
        }
        re.push_str(&regex::escape(part));
    }
    re.push_str(")$");
    RegexBuilder::new(&re)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| format!("the pattern is too big: {e}"))
}

fn command_matches(re: &Regex, bare: Option<&str>, command: &str, mode: Mode) -> bool {
    let matches = |part: &str| re.is_match(part) || bare.is_some_and(|b| part == b);
    let one = |part: &str| matches(part) || unquote_program(part).is_some_and(|p| matches(&p));
    let parts = split_command(command);
    match mode {
        Mode::Any => one(command.trim()) || parts.iter().any(|p| one(p)),
        Mode::All => {
            let substitutes = command.contains("$(")
                || command.contains('`')
                || command.contains("<(")
                || command.contains(">(");
            !substitutes && !parts.is_empty() && parts.iter().all(|p| one(p))
        }
    }
}

/// The parts of a command line as [`Mode::All`] reads them (each one
/// unwrapped); `None` when it substitutes a command (`$(…)`, backquotes,
/// `<(…)`, `>(…)`), which no part-by-part reading can cover.
pub fn command_parts(command: &str) -> Option<Vec<String>> {
    let substitutes = ["$(", "`", "<(", ">("].iter().any(|s| command.contains(s));
    (!substitutes).then(|| split_command(command))
}

/// The parts of a command line: split at `&&`, `||`, `;`, `|`, `&` and
/// newlines outside quotes, each trimmed, with its leading `VAR=value`
/// words and wrappers taken off.
pub(crate) fn split_command(command: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut heredocs: Vec<String> = Vec::new();
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (Some('"'), '\\') => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            (Some(_), c) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            (None, '\\') => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            (None, '<') if chars.peek() == Some(&'<') => {
                chars.next();
                current.push_str("<<");
                if let Some(delimiter) = heredoc_delimiter(&mut chars, &mut current) {
                    heredocs.push(delimiter);
                }
            }
            (None, '\n') if !heredocs.is_empty() => {
                // A here-document's lines are its command's input, not
                // commands: skipped up to each delimiter.
                parts.push(std::mem::take(&mut current));
                for delimiter in heredocs.drain(..) {
                    let mut line = String::new();
                    for c in chars.by_ref() {
                        if c != '\n' {
                            line.push(c);
                        } else if line.trim_start_matches('\t') == delimiter {
                            break;
                        } else {
                            line.clear();
                        }
                    }
                }
            }
            (None, '&' | '|' | ';' | '\n') => {
                if matches!(chars.peek(), Some('&' | '|')) && c != ';' && c != '\n' {
                    chars.next();
                }
                parts.push(std::mem::take(&mut current));
            }
            (None, c) => current.push(c),
        }
    }
    parts.push(current);
    parts
        .iter()
        .map(|p| unwrap_command(p.trim()))
        .filter(|p| !p.is_empty())
        .collect()
}

/// The delimiter of a here-document after `<<` (`-`, blanks, then a word,
/// quoted or not; `<<<` is a here-string, not one), copied to `current`.
fn heredoc_delimiter(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    current: &mut String,
) -> Option<String> {
    if chars.peek() == Some(&'<') {
        return None;
    }
    if chars.peek() == Some(&'-') {
        current.push('-');
        chars.next();
    }
    while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
        current.push(' ');
        chars.next();
    }
    let mut word = String::new();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '<' | '>' | '(' | ')') {
            break;
        }
        current.push(c);
        chars.next();
        if c != '\'' && c != '"' {
            word.push(c);
        }
    }
    (!word.is_empty()).then_some(word)
}

/// `part` with the quotes of its first word taken off
/// (`"/p/run.sh" --x` is `/p/run.sh --x`), as a rule names a program.
fn unquote_program(part: &str) -> Option<String> {
    let first = part.chars().next()?;
    if first != '"' && first != '\'' {
        return None;
    }
    let end = part[1..].find(first)? + 1;
    Some(format!("{}{}", &part[1..end], &part[end + 1..]))
}

/// A part without its `VAR=value` prefixes and `nohup`/`nice`/`time`/
/// `timeout N` wrappers.
fn unwrap_command(part: &str) -> String {
    let mut rest = part
        .trim_start_matches(['(', '{', ' '])
        .trim_end_matches([')', '}', ' ']);
    loop {
        let (word, after) = match rest.split_once(char::is_whitespace) {
            Some((w, a)) => (w, a.trim_start()),
            None => (rest, ""),
        };
        let assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if assignment && !after.is_empty() || matches!(word, "nohup" | "time" | "command") {
            rest = after;
        } else if word == "nice" || word == "timeout" {
            // Their options and (timeout's) duration.
            let mut after = after;
            while let Some((w, a)) = after.split_once(char::is_whitespace) {
                let option = w.starts_with('-')
                    || (word == "timeout" && w.chars().next().is_some_and(|c| c.is_ascii_digit()));
                let value_of_n =
                    word == "nice" && w.chars().all(|c| c.is_ascii_digit() || c == '-');
                if option || value_of_n {
                    after = a.trim_start();
                } else {
                    break;
                }
            }
            rest = after;
        } else {
            return rest.to_string();
        }
        if rest.is_empty() {
            return String::new();
        }
    }
}

/// Whether the tool's `path` (relative to the working directory) matches a
/// gitignore-style pattern.
fn path_matches(pattern: &str, path: &str, places: &Places<'_>) -> bool {
    let target = normalize(&places.cwd.join(path));
    let (base, rel): (PathBuf, &str) = if let Some(abs) = pattern.strip_prefix("//") {
        (PathBuf::from("/"), abs)
    } else if let Some(home) = pattern.strip_prefix("~/") {
        match places.home {
            Some(h) => (h.to_path_buf(), home),
            None => return false,
        }
    } else if let Some(root) = pattern.strip_prefix('/') {
        (places.cwd.to_path_buf(), root)
    } else {
        (
            places.cwd.to_path_buf(),
            pattern.strip_prefix("./").unwrap_or(pattern),
        )
    };
    let rel = rel.trim_end_matches('/');
    let anywhere = !rel.contains('/');
    let Ok(under) = target.strip_prefix(normalize(&base)) else {
        return false;
    };
    let under = under.to_string_lossy();
    let mut re = String::from("^(?s:");
    if anywhere {
        re.push_str("(?:.*/)?");
    }
    re.push_str(&path_glob(rel));
    re.push_str(")(?:/.*)?$");
    RegexBuilder::new(&re)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .is_ok_and(|re| re.is_match(&under) || (rel.is_empty() || rel == "**"))
}

/// A gitignore pattern's regex: `**/` any folders, `/**` everything
/// beneath, `*` within a name, `?` one character.
fn path_glob(pattern: &str) -> String {
    let mut out = String::new();
    let mut rest = pattern;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("**/") {
            out.push_str("(?:.*/)?");
            rest = r;
        } else if let Some(r) = rest.strip_prefix("**") {
            out.push_str(".*");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('*') {
            out.push_str("[^/]*");
            rest = r;
        } else if let Some(r) = rest.strip_prefix('?') {
            out.push_str("[^/]");
            rest = r;
        } else {
            let c = rest.chars().next().unwrap_or_default();
            out.push_str(&regex::escape(&c.to_string()));
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// `path` with `.` and `..` resolved by name (no file system access).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The host of an http(s) URL, lower-cased.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => host.split(':').next()?,
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn places() -> Places<'static> {
        Places {
            cwd: Path::new("/w/p"),
            home: Some(Path::new("/home/u")),
        }
    }

    fn bash(rule: &str, command: &str, mode: Mode) -> bool {
        Rule::parse(rule)
            .unwrap()
            .matches("bash", &json!({"command": command}), &places(), mode)
    }

    #[test]
    fn bash_patterns() {
        assert!(bash("Bash", "anything", Mode::All));
        assert!(bash("Bash(*)", "anything", Mode::All));
        assert!(bash("Bash(npm run build)", "npm run build", Mode::All));
        assert!(!bash("Bash(npm run build)", "npm run build:dev", Mode::All));
        assert!(bash("Bash(ls *)", "ls -la", Mode::All));
        assert!(bash("Bash(ls *)", "ls", Mode::All));
        assert!(!bash("Bash(ls *)", "lsof", Mode::All));
        assert!(bash("Bash(ls*)", "lsof", Mode::All));
        assert!(bash("Bash(git * main)", "git checkout main", Mode::All));
        assert!(bash("Bash(npm run test:*)", "npm run test", Mode::All));
        assert!(bash(
            "Bash(npm run test:*)",
            "npm run test --watch",
            Mode::All
        ));
        assert!(!bash("Bash(npm run test:*)", "npm run tester", Mode::All));
        assert!(bash(
            "Bash(git push --force*)",
            "git push --force origin",
            Mode::Any
        ));
        assert!(!bash("Bash(git push --force*)", "ls", Mode::Any));
    }

    #[test]
    fn compound_commands_match_part_by_part() {
        // Any: a part is enough (a guard hook's `if`, a deny rule).
        assert!(bash("Bash(rm *)", "cd /tmp && rm -rf x", Mode::Any));
        assert!(bash(
            "Bash(git push *)",
            "FOO=bar git push origin",
            Mode::Any
        ));
        assert!(bash("Bash(rm *)", "timeout 5 nohup rm -rf x", Mode::Any));
        assert!(bash("Bash(curl * | bash)", "curl -s x | bash", Mode::Any));
        // All: every part must be allowed; no command substitution.
        assert!(!bash(
            "Bash(git status)",
            "git status && rm -rf /",
            Mode::All
        ));
        assert!(!bash(
            "Bash(git status*)",
            "git status; rm -rf /",
            Mode::All
        ));
        assert!(!bash("Bash(echo *)", "echo $(rm -rf x)", Mode::All));
        assert!(!bash("Bash(echo *)", "echo `rm -rf x`", Mode::All));
        assert!(bash(
            "Bash(git *)",
            "git add . && git commit -m 'a && b'",
            Mode::All
        ));
        // Quotes keep their separators.
        assert_eq!(split_command("echo 'a; b' | wc"), ["echo 'a; b'", "wc"]);
        // A here-document is input, not commands; a quoted program is
        // matched without its quotes.
        let heredoc = "\"/p/setup.sh\" --from-stdin <<'END'\nrm -rf / && x\nEND\necho done";
        assert_eq!(
            split_command(heredoc),
            ["\"/p/setup.sh\" --from-stdin <<'END'", "echo done"]
        );
        assert!(!bash("Bash(/p/setup.sh:*)", heredoc, Mode::All));
        assert!(bash(
            "Bash(/p/setup.sh:*)",
            &heredoc.replace("\necho done", ""),
            Mode::All
        ));
        assert!(bash("Bash(cat <<EOF*)", "cat <<EOF\nline\nEOF", Mode::All));
        assert_eq!(split_command("cat <<< word; ls"), ["cat <<< word", "ls"]);
    }

    #[test]
    fn paths_are_gitignore_style() {
        let read = |rule: &str, path: &str| {
            Rule::parse(rule).unwrap().matches(
                "read_file",
                &json!({"path": path}),
                &places(),
                Mode::Any,
            )
        };
        assert!(read("Read(./src/**)", "src/a/b.rs"));
        assert!(read("Read(src/**)", "/w/p/src/x"));
        assert!(!read("Read(./src/**)", "tests/x.rs"));
        assert!(read("Read(.env)", "a/b/.env"));
        assert!(read("Read(*.ts)", "deep/x.ts"));
        assert!(!read("Read(*.ts)", "deep/x.tsx"));
        assert!(read("Read(//etc/**)", "/etc/passwd"));
        assert!(!read("Read(//etc/**)", "etc/passwd"));
        assert!(read("Read(~/.ssh/**)", "/home/u/.ssh/id"));
        assert!(read("Read(/docs/*.md)", "docs/a.md"));
        assert!(!read("Read(/docs/*.md)", "docs/x/a.md"));
        assert!(read("Read(**/secrets/**)", "a/secrets/k"));
        assert!(!read("Read(./src/**)", "src/../../p/other"));
        // Edit covers writes; Read does not cover them.
        let rule = Rule::parse("Edit(src/**)").unwrap();
        assert!(rule.matches(
            "write_file",
            &json!({"path": "src/x"}),
            &places(),
            Mode::Any
        ));
        assert!(!Rule::parse("Read").unwrap().names_tool("write_file"));
    }

    #[test]
    fn other_tools() {
        let fetch = Rule::parse("WebFetch(domain:*.example.com)").unwrap();
        let url = |u: &str| json!({"url": u});
        assert!(fetch.matches(
            "web_fetch",
            &url("https://docs.example.com/x"),
            &places(),
            Mode::All
        ));
        assert!(!fetch.matches(
            "web_fetch",
            &url("https://example.org"),
            &places(),
            Mode::All
        ));
        let mcp = Rule::parse("mcp__memory").unwrap();
        assert!(mcp.names_tool("mcp__memory__create"));
        assert!(!mcp.names_tool("mcp__memoryx__create"));
        assert!(Rule::parse("mcp__memory__*")
            .unwrap()
            .names_tool("mcp__memory__a"));
        let one = Rule::parse("mcp__memory__read").unwrap();
        assert!(one.names_tool("mcp__memory__read") && !one.names_tool("mcp__memory__write"));
        let agent = Rule::parse("Task(code-*)").unwrap();
        assert!(agent.matches(
            "task",
            &json!({"agent": "code-explorer"}),
            &places(),
            Mode::All
        ));
        assert!(!agent.matches("task", &json!({"agent": "other"}), &places(), Mode::All));
        let absent = Rule::parse("WebSearch").unwrap();
        for tool in SCV_TOOLS {
            assert!(!absent.names_tool(tool));
        }
        assert!(Rule::parse("bash(ls)").unwrap().names_tool("bash"));
    }

    #[test]
    fn unreadable_rules_say_why() {
        for (rule, why) in [
            ("", "empty"),
            ("tool_input.command matches 'git push'", "not a rule"),
            ("Bash(git push", "not a rule"),
            ("Bsh(ls)", "not a tool"),
            ("mcp__", "names no MCP server"),
            ("mcp__x(y)", "no specifier"),
            ("WebFetch(example.com)", "domain:"),
        ] {
            let e = Rule::parse(rule).unwrap_err();
            assert!(e.contains(why), "{rule}: {e}");
            assert!(!e.contains('\n'));
        }
        assert!(Rule::parse(&format!("Bash({})", "x".repeat(MAX_RULE_CHARS))).is_err());
    }
}
