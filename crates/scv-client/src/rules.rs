//! Session approval rules: "always allow" in a client's approval prompt
//! (the TUI's option 2, an ACP client's "Always allow") approves a call and
//! adds a rule that answers later calls of the same kind, for as long as
//! the client runs. Rules are the client's alone, never sent to the server
//! (the protocol keeps approval per call; a rule only answers
//! `approval.requested` with `approval.resolve` itself) — unless the user
//! keeps one (`Rule::claude`, `permissions.keep`), which writes it to a
//! settings file in Claude Code's syntax.
//!
//! A rule's scope is shown before it is made and is narrow on purpose:
//! - `bash`: the program and its subcommand (`cargo test`, `npm run build`,
//!   `git status`; a program without subcommands alone: `ls`, `echo`) with
//!   any further arguments, and exactly the leading
//!   environment assignments the command had (`RUST_LOG=debug cargo test`
//!   is its own rule: an assignment such as `RUSTC_WRAPPER=…` or
//!   `LD_PRELOAD=…` changes what runs). Never a bare interpreter, shell or
//!   program runner (`bash`, `python`, `env`, `sudo`, …), nor `sed` / `awk`
//!   (which run shell commands) or a program that removes, moves or stops
//!   things (`rm`, `mv`, `kill`, …): such a rule would allow anything.
//!   For those, the rule is the exact command line and nothing else (`python3 test_calc.py`), labelled as exact, and only
//!   when its words expand to nothing else (no `$`, globs, `~`).
//! - A command matches only when it is one simple command: the words are
//!   split as a shell would (the `shlex` crate), and anything that makes it
//!   more than one program — `&&`, `||`, `;`, `|`, `&`, backticks, `$(`,
//!   redirections, a newline — means no rule ever answers it.
//! - A call that asks to run outside the sandbox (`unsandboxed`) never
//!   matches a rule.
//! - `write_file` / `edit_file`: edits to files in this workspace (the
//!   server refuses paths outside it).
//! - An MCP tool: that tool of that server.
//! - `web_fetch` (risk `network`): URLs of that host (exactly; the
//!   server still refuses a private or loopback address, and redirects
//!   off the allowlist).

use serde_json::Value;

/// What a rule looks at in a call asking for approval
/// (`approval.requested` and its `tool.proposed` arguments).
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub name: &'a str,
    /// The risk class as the protocol spells it (`process`, `write`, …).
    pub risk: &'a str,
    pub cwd: &'a str,
    pub summary: &'a str,
    pub arguments: &'a Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// `bash` commands: these leading assignments, then these words
    /// (program and subcommand), then any arguments.
    Command {
        env: Vec<String>,
        words: Vec<String>,
    },
    /// `write_file` and `edit_file` calls in the workspace `cwd`.
    WorkspaceEdits { cwd: String },
    /// One MCP tool (`mcp__SERVER__TOOL`).
    McpTool { name: String },
    /// Exactly this `bash` command line, nothing else (for a program no
    /// prefix rule may cover: an interpreter, a shell, a runner).
    Exact { command: String },
    /// `web_fetch` of URLs on this host (lower case, no port).
    FetchHost { host: String },
}

impl Rule {
    /// The rule as the transcript and `/approvals` name it.
    pub fn label(&self) -> String {
        match self {
            Rule::Command { env, words } => {
                let mut all = env.clone();
                all.extend(words.iter().cloned());
                all.join(" ")
            }
            Rule::WorkspaceEdits { .. } => "edits to files in this workspace".into(),
            Rule::McpTool { name } => match mcp_parts(name) {
                Some((server, tool)) => format!("MCP tool {tool} of {server}"),
                None => name.clone(),
            },
            Rule::Exact { command } => format!("exactly `{command}`"),
            Rule::FetchHost { host } => format!("web_fetch of {host}"),
        }
    }

    /// The rule in Claude Code's syntax, as a settings file keeps it
    /// (`permissions.keep`); `None` for one that is not kept: an MCP
    /// tool's (its calls leave the sandbox, so no kept rule skips their
    /// approval) and a command with leading assignments (Claude Code's
    /// syntax has no way to say "exactly these assignments").
    pub fn claude(&self) -> Option<String> {
        match self {
            Rule::Command { env, words } if env.is_empty() => {
                Some(format!("Bash({}:*)", words.join(" ")))
            }
            Rule::Exact { command } => Some(format!("Bash({command})")),
            Rule::WorkspaceEdits { .. } => Some("Edit(./**)".into()),
            Rule::FetchHost { host } => Some(format!("WebFetch(domain:{host})")),
            Rule::Command { .. } | Rule::McpTool { .. } => None,
        }
    }

    /// What the rule allows, in a sentence (the prompt's preview).
    pub fn scope(&self) -> String {
        match self {
            Rule::Command { .. } => format!("`{} …` (any arguments)", self.label()),
            Rule::WorkspaceEdits { .. } => {
                "edits to files in this workspace (write_file, edit_file)".into()
            }
            Rule::McpTool { .. } => self.label(),
            Rule::FetchHost { host } => format!("fetching pages of {host} (web_fetch)"),
            Rule::Exact { command } => {
                format!("exactly `{command}` (this command line, nothing else)")
            }
        }
    }

    /// Whether the rule answers this call.
    pub fn matches(&self, call: &Call<'_>) -> bool {
        match self {
            Rule::Exact { command } => {
                call.name == "bash"
                    && call.risk == "process"
                    && !unsandboxed(call)
                    && call
                        .arguments
                        .get("command")
                        .and_then(Value::as_str)
                        .is_some_and(|c| c.trim() == command)
            }
            Rule::Command { env, words } => {
                if call.name != "bash" || call.risk != "process" || unsandboxed(call) {
                    return false;
                }
                let Some(command) = call.arguments.get("command").and_then(Value::as_str) else {
                    return false;
                };
                let Ok(simple) = simple_command(command) else {
                    return false;
                };
                simple.env == *env
                    && simple.words.len() >= words.len()
                    && simple.words[..words.len()] == words[..]
            }
            Rule::WorkspaceEdits { cwd } => {
                matches!(call.name, "write_file" | "edit_file")
                    && call.risk == "write"
                    && call.cwd == cwd
            }
            Rule::McpTool { name } => call.risk == "mcp" && call.name == *name,
            Rule::FetchHost { host } => {
                call.name == "web_fetch"
                    && call.risk == "network"
                    && fetched_host(call).as_deref() == Some(host.as_str())
            }
        }
    }
}

/// The rule `a` would add for this call, or why there is none (one line).
pub fn propose(call: &Call<'_>) -> Result<Rule, String> {
    match (call.name, call.risk) {
        ("bash", "process") => {
            if unsandboxed(call) {
                return Err("a command outside the sandbox is approved one at a time".into());
            }
            let command = call
                .arguments
                .get("command")
                .and_then(Value::as_str)
                .ok_or_else(|| "the command is not known yet".to_string())?;
            let simple = simple_command(command).map_err(str::to_string)?;
            let program = simple.words.first().map(String::as_str).unwrap_or("");
            if let Some(why) = refused_program(program) {
                return exact(command, &simple).map_err(|_| format!("`{program}` {why}"));
            }
            let taken = match runner_words(&simple.words) {
                Ok(taken) => taken.unwrap_or_else(|| rule_words(&simple.words)),
                Err(why) => return exact(command, &simple).map_err(|_| why),
            };
            if let Some(bad) = simple
                .words
                .iter()
                .take(taken)
                .find(|w| w.contains(['$', '*', '?', '[', '{', '~', '\\', '=']))
            {
                return Err(format!("`{bad}` is not a plain word"));
            }
            let words = simple.words[..taken].to_vec();
            Ok(Rule::Command {
                env: simple.env,
                words,
            })
        }
        ("write_file" | "edit_file", "write") => Ok(Rule::WorkspaceEdits {
            cwd: call.cwd.to_string(),
        }),
        (name, "mcp") if mcp_parts(name).is_some() => Ok(Rule::McpTool { name: name.into() }),
        ("web_fetch", "network") => fetched_host(call)
            .map(|host| Rule::FetchHost { host })
            .ok_or_else(|| "the URL names no host".to_string()),
        (name, _) => Err(format!("`{name}` calls are approved one at a time")),
    }
}

/// The exact rule for `command`, when its words are what runs (nothing a
/// shell would expand differently another time).
fn exact(command: &str, simple: &SimpleCommand) -> Result<Rule, ()> {
    let expands = |w: &String| w.contains(['$', '*', '?', '[', '{', '~', '`', '\\']);
    if simple.env.iter().chain(&simple.words).any(expands) {
        return Err(());
    }
    Ok(Rule::Exact {
        command: command.trim().to_string(),
    })
}

/// `unsandboxed: true`, or a summary that says the command leaves the
/// sandbox.
fn unsandboxed(call: &Call<'_>) -> bool {
    call.arguments.get("unsandboxed").and_then(Value::as_bool) == Some(true)
        || call
            .summary
            .starts_with("Run shell command outside the sandbox:")
}

/// The host of a `web_fetch` call's `url` (http or https), lower case,
/// without user name or port.
fn fetched_host(call: &Call<'_>) -> Option<String> {
    let url = call.arguments.get("url").and_then(Value::as_str)?.trim();
    let (scheme, rest) = url.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.split(':').next()?,
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    (!host.is_empty()).then_some(host)
}

/// `mcp__github__get_issue` → (`github`, `get_issue`).
fn mcp_parts(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// Programs whose first argument is a subcommand or target (`git status`,
/// `cargo test`, `make test`): their rules take it. Any other program's
/// rule is the program alone (`ls`, `echo`, `cat` with any arguments):
/// its first argument is an argument like the rest (`echo hello` is no
/// subcommand).
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "apt",
    "apt-get",
    "aws",
    "az",
    "bazel",
    "brew",
    "bun",
    "bundle",
    "cabal",
    "cargo",
    "cmake",
    "composer",
    "conda",
    "corepack",
    "docker",
    "dotnet",
    "flyctl",
    "gcloud",
    "gh",
    "git",
    "go",
    "gradle",
    "hatch",
    "helm",
    "heroku",
    "hg",
    "jj",
    "just",
    "kubectl",
    "lerna",
    "make",
    "mamba",
    "meson",
    "mix",
    "mvn",
    "ninja",
    "nix",
    "nox",
    "npm",
    "nx",
    "pdm",
    "pip",
    "pip3",
    "pipenv",
    "pixi",
    "pnpm",
    "podman",
    "poetry",
    "rails",
    "rake",
    "rustup",
    "rye",
    "stack",
    "svn",
    "swift",
    "systemctl",
    "terraform",
    "tox",
    "turbo",
    "uv",
    "vercel",
    "wrangler",
    "yarn",
    "zig",
];

/// How many leading words a rule takes: the program, and its subcommand
/// when it has them and the second word is one (`cargo test`, not `cargo
/// --version`; `ls`, not `ls -la`; `echo`, not `echo hello`); package
/// runners take the script too (`npm run build`).
fn rule_words(words: &[String]) -> usize {
    let is_sub = |w: &String| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
            && !w.starts_with(['-', '.'])
    };
    let program = basename(words.first().map(String::as_str).unwrap_or(""));
    if !SUBCOMMAND_PROGRAMS.contains(&program) {
        return 1;
    }
    match words.get(1) {
        Some(sub) if is_sub(sub) => {
            let two_level = matches!(
                (program, sub.as_str()),
                ("npm" | "pnpm" | "yarn" | "bun", "run") | ("docker" | "podman", "compose")
            );
            if two_level && words.get(2).is_some_and(is_sub) {
                3
            } else {
                2
            }
        }
        _ => 1,
    }
}

/// Subcommands that run the program named next (`uv run pytest`): a rule
/// takes that program too, and none is made when it is itself a shell,
/// interpreter or runner (`uv run sh -c …`).
const RUNS_NEXT: &[(&str, &str)] = &[
    ("uv", "run"),
    ("npm", "exec"),
    ("pnpm", "exec"),
    ("pnpm", "dlx"),
    ("yarn", "exec"),
    ("yarn", "dlx"),
    ("bun", "x"),
    ("poetry", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("pipenv", "run"),
    ("rye", "run"),
    ("pixi", "run"),
    ("conda", "run"),
    ("mamba", "run"),
    ("micromamba", "run"),
    ("bundle", "exec"),
    ("pipx", "run"),
    ("mise", "exec"),
    ("asdf", "exec"),
    ("direnv", "exec"),
];

/// Programs that run the program named next (`npx eslint`).
const RUNNER_PROGRAMS: &[&str] = &["npx", "pnpx", "bunx", "uvx"];

/// Subcommands that run whatever they are given and cannot be narrowed
/// (an image and its command, a remote shell, a flake, a source file).
const RUNS_ANYTHING: &[(&str, &str)] = &[
    ("docker", "run"),
    ("docker", "exec"),
    ("podman", "run"),
    ("podman", "exec"),
    ("kubectl", "exec"),
    ("kubectl", "run"),
    ("nix", "run"),
    ("nix", "shell"),
    ("nix", "develop"),
    ("go", "run"),
];

/// For a program runner, how many words a rule takes (the runner's and the
/// program it runs), or why there is no rule; `None`: not a runner.
fn runner_words(words: &[String]) -> Result<Option<usize>, String> {
    let program = basename(words.first().map(String::as_str).unwrap_or(""));
    let sub = words.get(1).map(String::as_str).unwrap_or("");
    if RUNS_ANYTHING.contains(&(program, sub)) {
        return Err(format!("`{program} {sub}` runs whatever it is given"));
    }
    let at = if RUNNER_PROGRAMS.contains(&program) {
        1
    } else if RUNS_NEXT.contains(&(program, sub)) {
        2
    } else {
        return Ok(None);
    };
    let runner = words[..at].join(" ");
    match words.get(at) {
        None => Err(format!("`{runner}` names no program")),
        Some(next) if next.starts_with('-') => Err(format!(
            "`{runner}` has options before its program, which could run anything"
        )),
        Some(next) => match refused_program(next) {
            Some(why) => Err(format!("`{runner} {next}`: `{next}` {why}")),
            None => Ok(Some(at + 1)),
        },
    }
}

fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Why a rule for `program` would allow anything, if it would.
fn refused_program(program: &str) -> Option<&'static str> {
    let name = basename(program);
    // `python3.12` is `python`.
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let why = match stem {
        "" => "is not a program",
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "fish" | "csh" | "tcsh" | "ash"
        | "busybox" | "pwsh" | "powershell" => "is a shell and runs whatever it is given",
        "python" | "pypy" | "node" | "nodejs" | "deno" | "ruby" | "perl" | "php" | "lua"
        | "luajit" | "tclsh" | "osascript" | "Rscript" | "julia" => {
            "is an interpreter and runs whatever it is given"
        }
        "env" | "xargs" | "exec" | "eval" | "command" | "builtin" | "source" | "nohup" | "nice"
        | "ionice" | "time" | "timeout" | "watch" | "setsid" | "stdbuf" | "strace" | "ltrace"
        | "chroot" | "unshare" | "nsenter" | "flock" | "script" => "runs another program",
        "sudo" | "doas" | "su" | "pkexec" | "runuser" => "runs programs as another user",
        "find" | "parallel" => "runs other programs (-exec and the like)",
        "sed" | "gsed" | "awk" | "gawk" | "mawk" | "nawk" => {
            "can run shell commands (sed's `e`, awk's `system()`)"
        }
        "rm" | "rmdir" | "mv" | "cp" | "dd" | "shred" | "truncate" | "chmod" | "chown"
        | "chgrp" | "ln" | "install" | "tee" | "kill" | "pkill" | "killall" => {
            "changes, removes or stops things: any arguments would reach anything"
        }
        _ => return None,
    };
    Some(why)
}

/// A command that is one simple command: its leading `NAME=value`
/// assignments and its words, split as a shell splits them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    pub env: Vec<String>,
    pub words: Vec<String>,
}

/// `command` as one simple command, or why it is not one.
pub fn simple_command(command: &str) -> Result<SimpleCommand, &'static str> {
    if let Some(why) = not_simple(command) {
        return Err(why);
    }
    let words = shlex::split(command).ok_or("its quoting is unfinished")?;
    let assignments = words.iter().take_while(|w| is_assignment(w)).count();
    let (env, words) = words.split_at(assignments);
    if words.is_empty() {
        return Err("it runs no program");
    }
    Ok(SimpleCommand {
        env: env.to_vec(),
        words: words.to_vec(),
    })
}

/// `NAME=value` with a shell variable name.
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What, outside quotes as a shell reads them, makes `command` more than
/// one simple command: operators, redirections, substitutions, a newline.
fn not_simple(command: &str) -> Option<&'static str> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let mut quote = Quote::None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' || c == '\r' {
            return Some("it has more than one line");
        }
        if c.is_control() && c != '\t' {
            return Some("it has control characters");
        }
        // Invisible and reordering characters make what is shown differ
        // from what runs.
        if matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
        {
            return Some("it has invisible or reordering characters");
        }
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                }
            }
            Quote::Double => match c {
                '"' => quote = Quote::None,
                '\\' => {
                    chars.next();
                }
                '`' => return Some("it runs a command substitution"),
                '$' if chars.peek() == Some(&'(') => return Some("it runs a command substitution"),
                _ => {}
            },
            Quote::None => match c {
                '\'' => quote = Quote::Single,
                '"' => quote = Quote::Double,
                '\\' => {
                    if matches!(chars.next(), Some('\n' | '\r')) {
                        return Some("it has more than one line");
                    }
                }
                ';' | '&' | '|' => return Some("it is more than one command"),
                '<' | '>' => return Some("it has a redirection"),
                '(' | ')' => return Some("it has a subshell"),
                '`' => return Some("it runs a command substitution"),
                '$' if chars.peek() == Some(&'(') => return Some("it runs a command substitution"),
                _ => {}
            },
        }
    }
    None
}

/// The rules of this session, in the order they were made.
#[derive(Debug, Default)]
pub struct Rules {
    list: Vec<Rule>,
}

impl Rules {
    /// Adds `rule` (once).
    pub fn add(&mut self, rule: Rule) {
        if !self.list.contains(&rule) {
            self.list.push(rule);
        }
    }

    pub fn remove(&mut self, index: usize) -> Option<Rule> {
        (index < self.list.len()).then(|| self.list.remove(index))
    }

    pub fn list(&self) -> &[Rule] {
        &self.list
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The first rule that answers `call`.
    pub fn find(&self, call: &Call<'_>) -> Option<&Rule> {
        self.list.iter().find(|rule| rule.matches(call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_assignments_and_words() {
        assert_eq!(
            simple_command("FOO=1 cargo test 'a b'"),
            Ok(SimpleCommand {
                env: vec!["FOO=1".into()],
                words: vec!["cargo".into(), "test".into(), "a b".into()],
            })
        );
        assert!(simple_command("echo 'a; b'").is_ok());
        assert!(simple_command("echo \"$(id)\"").is_err());
        assert!(simple_command("echo '$(id)'").is_ok());
        assert!(simple_command("FOO=1").is_err());
        assert!(simple_command("echo 'open").is_err());
    }

    #[test]
    fn a_fetch_rule_answers_that_host_only() {
        let args = |url: &str| serde_json::json!({ "url": url });
        fn call(arguments: &Value) -> Call<'_> {
            Call {
                name: "web_fetch",
                risk: "network",
                cwd: "/w",
                summary: "Fetch",
                arguments,
            }
        }
        let first = args("https://Docs.RS./serde/latest/serde/");
        let rule = propose(&call(&first)).unwrap();
        assert_eq!(
            rule,
            Rule::FetchHost {
                host: "docs.rs".into()
            }
        );
        assert_eq!(rule.label(), "web_fetch of docs.rs");
        for same in ["http://docs.rs:8080/x", "https://me@docs.rs/?q=1"] {
            assert!(rule.matches(&call(&args(same))), "{same}");
        }
        for other in [
            "https://docs.rs.evil.test/",
            "https://evil.test/docs.rs",
            "https://evil.test?docs.rs",
            "ftp://docs.rs/",
        ] {
            assert!(!rule.matches(&call(&args(other))), "{other}");
        }
        let mut bash = call(&first);
        bash.name = "bash";
        assert!(!rule.matches(&bash));
        assert!(propose(&call(&args("not a url"))).is_err());
    }
}
