//! hooks.json: Claude Code's schema, parsed, checked and compiled.
//!
//! ```json
//! {"hooks": {"PreToolUse": [{"matcher": "Bash|Write",
//!   "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}}
//! ```
//!
//! Other top-level keys are ignored, so a Claude Code `.claude/settings.json`
//! (which has `permissions`, `env`, ...) loads as well. Other keys of a
//! matcher group or of a hook (`description`, ...) are ignored too.
//!
//! Read as Claude Code reads it, never more strictly: an event SCV does not
//! fire (`Notification`, `PermissionRequest`, ...) and a hook of a type
//! other than `command` (`prompt`, `agent`, `http`) are skipped with a
//! warning naming them ([`Hooks::warnings`]), never a refused session. A
//! hook's `if` (Claude Code's permission rule syntax, `"Bash(git push *)"`)
//! narrows the tool calls it runs for; an `if` SCV cannot read is an error
//! at its line.

use std::fmt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::event::Event;
use crate::matcher::Matcher;
use crate::rule::{Mode, Places, Rule};
use crate::span::{key_position, value_position, Step};

/// The largest hooks.json read.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most hook commands all the files together may have.
pub const MAX_HOOKS: usize = 256;
/// "Timeout: 60-second execution limit by default, configurable per command."
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest `timeout` a hook may ask for, in seconds.
pub const MAX_TIMEOUT_SECS: f64 = 3600.0;
/// The most warnings one file keeps.
const MAX_WARNINGS: usize = 32;
/// How much of a command a label shows.
const LABEL_COMMAND_CHARS: usize = 80;

/// One hook: a command the server runs (under its sandbox) with the event's
/// input JSON on stdin.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct HookCommand {
    /// The shell command, as written.
    pub command: String,
    /// How long it may run ("How long a command should run, in seconds,
    /// before canceling that specific command"); 60 s unless given.
    pub timeout: Duration,
    /// The hooks.json it came from.
    pub source: PathBuf,
    /// The line of its `command` in that file (from 1; `None` when the
    /// hook was not read from a file).
    pub line: Option<usize>,
    /// Whose file that is.
    pub origin: Origin,
    /// Its `if`: the tool calls it runs for (within its group's matcher).
    pub condition: Option<Condition>,
    /// The plugin folder it came from (`CLAUDE_PLUGIN_ROOT`), if any.
    pub plugin_root: Option<PathBuf>,
}

/// A hook's `if`, read.
#[derive(Clone, Debug)]
pub struct Condition(pub Rule);

impl PartialEq for Condition {
    fn eq(&self, other: &Condition) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

impl Eq for Condition {}

/// Whose hooks file a hook came from: the user's own, or a repository's
/// (which the model may have written, and which runs only in a trusted
/// workspace). A repository hook's `allow` never skips an approval.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Origin {
    #[default]
    User,
    Repository,
}

impl HookCommand {
    /// Names the hook in messages by the script it runs and where it is
    /// configured: "hook `/path/to/check.py` (/p/.scv/hooks.json:7)". The
    /// script is the program the command starts, or, when that is an
    /// interpreter (`python3`, `bash`, `node`, …, however long its path),
    /// the file it is given; a command that is no such line (a pipeline,
    /// unbalanced quotes) is shown itself. Cut to about 80 characters and
    /// kept on one line.
    pub fn label(&self) -> String {
        let shown = script(&self.command).unwrap_or_else(|| self.command.trim().to_string());
        let one_line: String = shown
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let shown = if one_line.chars().count() > LABEL_COMMAND_CHARS {
            let cut: String = one_line.chars().take(LABEL_COMMAND_CHARS - 1).collect();
            format!("{cut}…")
        } else {
            one_line
        };
        match self.line {
            Some(line) => format!("hook `{shown}` ({}:{line})", self.source.display()),
            None => format!("hook `{shown}` ({})", self.source.display()),
        }
    }
}

/// Programs that run a script named after them: the script is the hook.
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "deno",
    "bun",
    "bash",
    "sh",
    "zsh",
    "dash",
    "fish",
    "ruby",
    "perl",
    "php",
    "lua",
    "Rscript",
    "osascript",
    "pwsh",
];

/// The script `command` runs: its first word after `VAR=value`
/// assignments and `env`, or, when that is an interpreter, the first of
/// its arguments that is not an option. `None` when the command is more
/// than one program (a pipeline, a list, a redirection), does not split
/// into words, or has an interpreter run inline code (`sh -c …`).
fn script(command: &str) -> Option<String> {
    if command
        .trim()
        .contains(['\n', ';', '|', '&', '`', '(', '<', '>'])
    {
        // A script of its own: the command is what names it.
        return None;
    }
    let words = shlex::split(command.trim())?;
    let mut words = words
        .into_iter()
        .skip_while(|w| w.contains('=') && !w.starts_with('-') && !w.starts_with('/'))
        .peekable();
    if words
        .peek()
        .is_some_and(|w| w == "env" || w.ends_with("/env"))
    {
        words.next();
        while words
            .peek()
            .is_some_and(|w| w.contains('=') || w.starts_with('-'))
        {
            words.next();
        }
    }
    let program = words.next()?;
    let name = program.rsplit('/').next().unwrap_or(&program);
    let interpreter = INTERPRETERS.iter().any(|i| {
        name == *i
            || name
                .strip_prefix(i)
                .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    });
    if !interpreter {
        return Some(program);
    }
    for word in words {
        let inline_e = ["node", "nodejs", "deno", "bun", "ruby", "perl"].contains(&name);
        if word == "-c" || (word == "-e" && inline_e) {
            // The code is inline: the command is what names it.
            return None;
        }
        if !word.starts_with('-') {
            return Some(word);
        }
    }
    Some(program)
}

/// A matcher group: the hooks that run when its matcher matches.
#[derive(Clone, Debug)]
struct Group {
    matcher: Matcher,
    commands: Vec<Arc<HookCommand>>,
}

#[derive(Default, Debug)]
struct Table {
    /// Indexed by [`Event::index`].
    events: [Vec<Group>; Event::ALL.len()],
    /// What was skipped, and why ("FILE:LINE: what").
    warnings: Vec<String>,
}

/// Every configured hook, by event. Cheap to clone.
#[derive(Clone, Default, Debug)]
pub struct Hooks {
    table: Arc<Table>,
}

/// Why a hooks file could not be loaded.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{}: {message}", self.location())]
pub struct LoadError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl LoadError {
    fn new(path: &Path, at: Option<(usize, usize)>, message: impl Into<String>) -> LoadError {
        LoadError {
            path: path.to_path_buf(),
            line: at.map(|(l, _)| l),
            column: at.map(|(_, c)| c),
            message: message.into(),
        }
    }

    /// "PATH:LINE:COL", "PATH:LINE" or "PATH".
    fn location(&self) -> impl fmt::Display + '_ {
        struct Location<'a>(&'a LoadError);
        impl fmt::Display for Location<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0.path.display())?;
                if let Some(line) = self.0.line {
                    write!(f, ":{line}")?;
                    if let Some(column) = self.0.column {
                        write!(f, ":{column}")?;
                    }
                }
                Ok(())
            }
        }
        Location(self)
    }
}

impl Hooks {
    /// Parses one hooks.json of the user's (`path` names it in errors and
    /// in each [`HookCommand::source`]).
    pub fn parse(path: &Path, text: &str) -> Result<Hooks, LoadError> {
        Hooks::parse_from(path, text, Origin::User)
    }

    /// Parses one hooks.json whose hooks are `origin`'s.
    pub fn parse_from(path: &Path, text: &str, origin: Origin) -> Result<Hooks, LoadError> {
        Hooks::parse_file(path, text, origin, true)
    }

    /// Parses a Claude Code settings file (`settings.json`,
    /// `settings.local.json`): like a hooks.json, but one without `hooks`
    /// (only `permissions`, say) is no hooks rather than an error.
    pub fn parse_settings(path: &Path, text: &str, origin: Origin) -> Result<Hooks, LoadError> {
        Hooks::parse_file(path, text, origin, false)
    }

    /// The same hooks, each told its plugin folder (`CLAUDE_PLUGIN_ROOT`).
    pub fn in_plugin(self, root: &Path) -> Hooks {
        let mut table = Table {
            warnings: self.table.warnings.clone(),
            ..Table::default()
        };
        for (i, groups) in table.events.iter_mut().enumerate() {
            for group in &self.table.events[i] {
                let commands = group
                    .commands
                    .iter()
                    .map(|c| {
                        Arc::new(HookCommand {
                            plugin_root: Some(root.to_path_buf()),
                            ..HookCommand::clone(c)
                        })
                    })
                    .collect();
                groups.push(Group {
                    matcher: group.matcher.clone(),
                    commands,
                });
            }
        }
        Hooks {
            table: Arc::new(table),
        }
    }

    fn parse_file(
        path: &Path,
        text: &str,
        origin: Origin,
        needs_hooks: bool,
    ) -> Result<Hooks, LoadError> {
        if text.len() as u64 > MAX_FILE_BYTES {
            return Err(LoadError::new(
                path,
                None,
                format!(
                    "is {} bytes; a hooks file may have at most {MAX_FILE_BYTES}",
                    text.len()
                ),
            ));
        }
        let root: Value = serde_json::from_str(text).map_err(|e| {
            let at = (e.line() > 0).then(|| (e.line(), e.column()));
            LoadError::new(path, at, format!("not valid JSON: {}", strip_position(&e)))
        })?;
        Parser {
            path,
            text,
            origin,
            needs_hooks,
            warnings: Default::default(),
        }
        .root(&root)
    }

    /// Reads and merges these files in order. A file that does not exist is
    /// no hooks; one that cannot be read, is too big or is malformed is an
    /// error, as is more than [`MAX_HOOKS`] commands in all.
    pub fn load(paths: &[PathBuf]) -> Result<Hooks, LoadError> {
        let mut hooks = Hooks::default();
        for path in paths {
            let text = match read_bounded(path) {
                Ok(Some(text)) => text,
                Ok(None) => continue,
                Err(message) => return Err(LoadError::new(path, None, message)),
            };
            hooks = hooks.merge(Hooks::parse(path, &text)?);
            if hooks.len() > MAX_HOOKS {
                return Err(LoadError::new(
                    path,
                    None,
                    format!(
                        "brings the hook commands to {}; at most {MAX_HOOKS} are allowed in all",
                        hooks.len()
                    ),
                ));
            }
        }
        Ok(hooks)
    }

    /// Reads one Claude Code settings file ([`Hooks::parse_settings`]); a
    /// file that does not exist is no hooks.
    pub fn load_settings(path: &Path, origin: Origin) -> Result<Hooks, LoadError> {
        match read_bounded(path) {
            Ok(Some(text)) => Hooks::parse_settings(path, &text, origin),
            Ok(None) => Ok(Hooks::default()),
            Err(message) => Err(LoadError::new(path, None, message)),
        }
    }

    /// `self`'s hooks and then `other`'s, event by event (the order they run
    /// in and their outcomes are combined in).
    pub fn merge(self, other: Hooks) -> Hooks {
        if other.is_empty() && other.warnings().is_empty() {
            return self;
        }
        if self.is_empty() && self.warnings().is_empty() {
            return other;
        }
        let mut table = Table::default();
        for (i, groups) in table.events.iter_mut().enumerate() {
            groups.extend(self.table.events[i].iter().cloned());
            groups.extend(other.table.events[i].iter().cloned());
        }
        table.warnings = self.table.warnings.clone();
        table.warnings.extend(other.table.warnings.iter().cloned());
        Hooks {
            table: Arc::new(table),
        }
    }

    /// What the files held that SCV skipped (an event it does not fire, a
    /// hook type it does not run), one line each: "FILE:LINE: what".
    pub fn warnings(&self) -> &[String] {
        &self.table.warnings
    }

    /// No hooks at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of hook commands (over every event and group).
    pub fn len(&self) -> usize {
        self.table
            .events
            .iter()
            .flatten()
            .map(|g| g.commands.len())
            .sum()
    }

    /// The commands to run for `event`, in order. For PreToolUse and
    /// PostToolUse, `tool` is SCV's tool name and a group runs when its
    /// matcher matches that name or Claude Code's name of it. For
    /// SessionStart (`source`), PreCompact (`trigger`) and SessionEnd
    /// (`reason`) the server may pass that word, as Claude Code matches on
    /// it. UserPromptSubmit and Stop "don't use matchers": theirs are not
    /// consulted. `tool: None` consults no matcher: every group runs.
    ///
    /// "Multiple identical hook commands are deduplicated automatically":
    /// a command that two groups both match runs once (the first one's
    /// timeout).
    ///
    /// A hook with an `if` runs only through [`Hooks::matching_call`],
    /// which knows the call's arguments.
    pub fn matching(&self, event: Event, tool: Option<&str>) -> Vec<Arc<HookCommand>> {
        self.matching_call(event, tool, None)
    }

    /// [`Hooks::matching`] for a tool call whose `arguments` (and the
    /// places its paths are relative to) a hook's `if` is tested against:
    /// it runs when its rule matches the call — any part of a compound
    /// command is enough, as in Claude Code.
    pub fn matching_call(
        &self,
        event: Event,
        tool: Option<&str>,
        call: Option<(&Value, &Places<'_>)>,
    ) -> Vec<Arc<HookCommand>> {
        let mut out: Vec<Arc<HookCommand>> = Vec::new();
        for group in &self.table.events[event.index()] {
            let matches = match (tool, event) {
                (None, _) | (_, Event::UserPromptSubmit | Event::Stop | Event::SubagentStop) => {
                    true
                }
                (Some(tool), e) if e.is_tool_event() => group.matcher.matches_tool(tool),
                (Some(word), _) => group.matcher.matches_word(word),
            };
            if !matches {
                continue;
            }
            for command in &group.commands {
                if let Some(Condition(rule)) = &command.condition {
                    let holds = match (tool, call) {
                        (Some(tool), Some((arguments, places))) => {
                            rule.matches(tool, arguments, places, Mode::Any)
                        }
                        _ => false,
                    };
                    if !holds {
                        continue;
                    }
                }
                if !out.iter().any(|c| c.command == command.command) {
                    out.push(Arc::clone(command));
                }
            }
        }
        out
    }
}

/// The file's text; None when it does not exist.
fn read_bounded(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read: {e}")),
    };
    if !meta.is_file() {
        return Err("is not a file".to_owned());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "is {} bytes; a hooks file may have at most {MAX_FILE_BYTES}",
            meta.len()
        ));
    }
    match std::fs::read(path) {
        Ok(bytes) if bytes.len() as u64 > MAX_FILE_BYTES => Err(format!(
            "is over {MAX_FILE_BYTES} bytes; a hooks file may have no more"
        )),
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|e| format!("is not UTF-8 (byte {})", e.utf8_error().valid_up_to())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot be read: {e}")),
    }
}

/// serde_json's message without its " at line L column C" (the error's
/// location says that).
fn strip_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message,
    }
}

struct Parser<'a> {
    path: &'a Path,
    text: &'a str,
    origin: Origin,
    /// A file without `hooks` is an error (a hooks.json), not no hooks (a
    /// settings file).
    needs_hooks: bool,
    /// What was skipped: "FILE:LINE:COL: what".
    warnings: std::cell::RefCell<Vec<String>>,
}

impl Parser<'_> {
    fn err_value(&self, at: &[Step<'_>], message: impl Into<String>) -> LoadError {
        LoadError::new(self.path, value_position(self.text, at), message)
    }

    /// Notes something skipped, located at the key (or value) `at`.
    fn warn(&self, at: &[Step<'_>], key: bool, message: impl Into<String>) {
        let position = if key {
            key_position(self.text, at)
        } else {
            value_position(self.text, at)
        };
        let mut warnings = self.warnings.borrow_mut();
        if warnings.len() < MAX_WARNINGS {
            warnings.push(LoadError::new(self.path, position, message).to_string());
        }
    }

    fn root(&self, root: &Value) -> Result<Hooks, LoadError> {
        let Some(root) = root.as_object() else {
            return Err(self.err_value(&[], "must be a JSON object with a \"hooks\" object"));
        };
        let Some(events) = root.get("hooks") else {
            if !self.needs_hooks {
                return Ok(Hooks::default());
            }
            return Err(self.err_value(&[], "has no \"hooks\" object"));
        };
        let Some(events) = events.as_object() else {
            return Err(self.err_value(&[Step::Key("hooks")], "\"hooks\" must be an object"));
        };
        let mut table = Table::default();
        let mut count = 0;
        for (name, groups) in events {
            let Some(event) = Event::from_name(name) else {
                let known: Vec<&str> = Event::ALL.iter().map(|e| e.as_str()).collect();
                self.warn(
                    &[Step::Key("hooks"), Step::Key(name)],
                    true,
                    format!(
                        "hook event \"{name}\" is not one SCV fires, so its hooks are skipped (SCV fires {})",
                        known.join(", ")
                    ),
                );
                continue;
            };
            let at = [Step::Key("hooks"), Step::Key(name)];
            let Some(groups) = groups.as_array() else {
                return Err(
                    self.err_value(&at, format!("{name} must be an array of matcher groups"))
                );
            };
            for (i, group) in groups.iter().enumerate() {
                let group = self.group(name, i, group)?;
                count += group.commands.len();
                if count > MAX_HOOKS {
                    return Err(self.err_value(
                        &[Step::Key("hooks"), Step::Key(name), Step::Index(i)],
                        format!("more than {MAX_HOOKS} hook commands"),
                    ));
                }
                table.events[event.index()].push(group);
            }
        }
        table.warnings = self.warnings.take();
        Ok(Hooks {
            table: Arc::new(table),
        })
    }

    fn group(&self, event: &str, i: usize, group: &Value) -> Result<Group, LoadError> {
        let at = [Step::Key("hooks"), Step::Key(event), Step::Index(i)];
        let Some(group) = group.as_object() else {
            return Err(self.err_value(
                &at,
                format!("{event}[{i}] must be an object with \"matcher\" and \"hooks\""),
            ));
        };
        let matcher = match group.get("matcher") {
            None | Some(Value::Null) => None,
            Some(Value::String(m)) => Some(m.as_str()),
            Some(_) => {
                return Err(self.err_value(
                    &[at[0], at[1], at[2], Step::Key("matcher")],
                    "\"matcher\" must be a string",
                ))
            }
        };
        let matcher = Matcher::new(matcher).map_err(|e| {
            self.err_value(
                &[at[0], at[1], at[2], Step::Key("matcher")],
                format!("\"matcher\" is not a valid regex: {}", one_line(&e)),
            )
        })?;
        let hooks_at = [at[0], at[1], at[2], Step::Key("hooks")];
        let hooks = match group.get("hooks") {
            Some(Value::Array(hooks)) => hooks,
            Some(_) => return Err(self.err_value(&hooks_at, "\"hooks\" must be an array")),
            None => return Err(self.err_value(&at, format!("{event}[{i}] has no \"hooks\" array"))),
        };
        let mut commands = Vec::with_capacity(hooks.len());
        for (j, hook) in hooks.iter().enumerate() {
            let at = [
                hooks_at[0],
                hooks_at[1],
                hooks_at[2],
                hooks_at[3],
                Step::Index(j),
            ];
            if let Some(hook) = self.hook(event, &at, hook)? {
                commands.push(Arc::new(hook));
            }
        }
        Ok(Group { matcher, commands })
    }

    fn hook(
        &self,
        event: &str,
        at: &[Step<'_>; 5],
        hook: &Value,
    ) -> Result<Option<HookCommand>, LoadError> {
        let Some(hook) = hook.as_object() else {
            return Err(
                self.err_value(at, "a hook must be an object with \"type\" and \"command\"")
            );
        };
        let field = |key| [at[0], at[1], at[2], at[3], at[4], Step::Key(key)];
        match hook.get("type") {
            Some(Value::String(t)) if t == "command" => {}
            Some(Value::String(t)) => {
                self.warn(
                    &field("type"),
                    false,
                    format!("a \"{t}\" hook is skipped: SCV runs only \"command\" hooks"),
                );
                return Ok(None);
            }
            Some(_) => return Err(self.err_value(&field("type"), "\"type\" must be \"command\"")),
            None => {
                return Err(self.err_value(at, "the hook has no \"type\" (it must be \"command\")"))
            }
        }
        let command = match hook.get("command") {
            Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
            Some(Value::String(_)) => {
                return Err(self.err_value(&field("command"), "\"command\" is empty"))
            }
            Some(_) => {
                return Err(self.err_value(&field("command"), "\"command\" must be a string"))
            }
            None => return Err(self.err_value(at, "the hook has no \"command\"")),
        };
        let timeout = match hook.get("timeout") {
            None | Some(Value::Null) => DEFAULT_TIMEOUT,
            Some(t) => match t.as_f64() {
                Some(secs) if secs > 0.0 && secs <= MAX_TIMEOUT_SECS => Duration::from_secs_f64(secs),
                // Longer than SCV waits: the hook runs, cut to the bound.
                Some(secs) if secs > MAX_TIMEOUT_SECS && secs.is_finite() => {
                    self.warn(
                        &field("timeout"),
                        false,
                        format!("\"timeout\" {t} is over {MAX_TIMEOUT_SECS} seconds; the hook gets {MAX_TIMEOUT_SECS}"),
                    );
                    Duration::from_secs_f64(MAX_TIMEOUT_SECS)
                }
                _ => {
                    return Err(self.err_value(
                        &field("timeout"),
                        format!(
                            "\"timeout\" must be a number of seconds above 0 and at most {MAX_TIMEOUT_SECS}, not {t}"
                        ),
                    ))
                }
            },
        };
        let condition = match hook.get("if") {
            None | Some(Value::Null) => None,
            Some(Value::String(rule)) => match Rule::parse(rule) {
                Ok(rule) => Some(Condition(rule)),
                Err(e) => {
                    return Err(self.err_value(
                        &field("if"),
                        format!("\"if\" is not a rule SCV can read: {e}"),
                    ))
                }
            },
            Some(_) => {
                return Err(self.err_value(
                    &field("if"),
                    "\"if\" must be a string: a permission rule such as \"Bash(git push *)\"",
                ))
            }
        };
        if condition.is_some() && !Event::from_name(event).is_some_and(Event::is_tool_event) {
            self.warn(
                &field("if"),
                false,
                format!(
                    "a hook with \"if\" runs only for tool events, so this {event} hook never runs"
                ),
            );
            return Ok(None);
        }
        Ok(Some(HookCommand {
            command,
            timeout,
            source: self.path.to_path_buf(),
            line: value_position(self.text, &field("command")).map(|(line, _)| line),
            origin: self.origin,
            condition,
            plugin_root: None,
        }))
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Hooks, LoadError> {
        Hooks::parse(Path::new("/p/.scv/hooks.json"), text)
    }

    fn commands(hooks: &Hooks, event: Event, tool: Option<&str>) -> Vec<String> {
        hooks
            .matching(event, tool)
            .iter()
            .map(|c| c.command.clone())
            .collect()
    }

    const EXAMPLE: &str = r#"{
  "permissions": {"allow": ["Bash(ls)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./bash.sh", "timeout": 30}]},
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "./edit.sh"}]},
      {"matcher": "mcp__memory__.*", "hooks": [{"type": "command", "command": "./memory.sh"}]},
      {"hooks": [{"type": "command", "command": "./all.sh", "description": "ignored"}]}
    ],
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "./prompt.sh"}]}],
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "./start.sh"}]}]
  }
}"#;

    #[test]
    fn parses_claude_codes_schema_and_ignores_other_keys() {
        let hooks = parse(EXAMPLE).unwrap();
        assert_eq!(hooks.len(), 6);
        assert!(!hooks.is_empty());
        let bash = hooks.matching(Event::PreToolUse, Some("bash"));
        assert_eq!(bash.len(), 2);
        assert_eq!(bash[0].command, "./bash.sh");
        assert_eq!(bash[0].timeout, Duration::from_secs(30));
        assert_eq!(bash[0].source, Path::new("/p/.scv/hooks.json"));
        assert_eq!(bash[1].timeout, DEFAULT_TIMEOUT);
        assert_eq!(
            commands(&hooks, Event::PreToolUse, Some("write_file")),
            ["./edit.sh", "./all.sh"]
        );
        assert_eq!(
            commands(
                &hooks,
                Event::PreToolUse,
                Some("mcp__memory__create_entities")
            ),
            ["./memory.sh", "./all.sh"]
        );
        assert_eq!(
            commands(&hooks, Event::PreToolUse, Some("read_file")),
            ["./all.sh"]
        );
        assert!(hooks.matching(Event::PostToolUse, Some("bash")).is_empty());
        assert_eq!(
            commands(&hooks, Event::UserPromptSubmit, None),
            ["./prompt.sh"]
        );
        assert_eq!(
            commands(&hooks, Event::SessionStart, Some("startup")),
            ["./start.sh"]
        );
        assert!(commands(&hooks, Event::SessionStart, Some("resume")).is_empty());
        assert_eq!(commands(&hooks, Event::SessionStart, None), ["./start.sh"]);
    }

    #[test]
    fn prompt_and_stop_hooks_ignore_a_matcher() {
        let hooks = parse(
            r#"{"hooks": {"Stop": [{"matcher": "nothing", "hooks": [{"type": "command", "command": "s"}]}]}}"#,
        )
        .unwrap();
        assert_eq!(commands(&hooks, Event::Stop, Some("x")), ["s"]);
    }

    #[test]
    fn identical_commands_run_once() {
        let hooks = parse(
            r#"{"hooks": {"PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "same"}]},
                {"matcher": "*", "hooks": [{"type": "command", "command": "same"}, {"type": "command", "command": "other"}]}
            ]}}"#,
        )
        .unwrap();
        assert_eq!(
            commands(&hooks, Event::PreToolUse, Some("bash")),
            ["same", "other"]
        );
        assert_eq!(hooks.len(), 3);
    }

    #[test]
    fn merge_keeps_order_and_default_is_empty() {
        let a = parse(r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a"}]}]}}"#)
            .unwrap();
        let b = Hooks::parse(
            Path::new("/home/.scv/hooks.json"),
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "b"}]}]}}"#,
        )
        .unwrap();
        let merged = a.clone().merge(b);
        assert_eq!(commands(&merged, Event::Stop, None), ["a", "b"]);
        assert_eq!(
            merged.matching(Event::Stop, None)[1].source,
            Path::new("/home/.scv/hooks.json")
        );
        assert!(Hooks::default().is_empty());
        assert_eq!(Hooks::default().len(), 0);
        assert_eq!(Hooks::default().merge(a.clone()).len(), 1);
        assert_eq!(a.merge(Hooks::default()).len(), 1);
        assert!(parse(r#"{"hooks": {}}"#).unwrap().is_empty());
    }

    #[test]
    fn syntax_errors_have_serdes_line_and_column() {
        let e = parse("{\n  \"hooks\": {\n    \"Stop\": [,]\n  }\n}").unwrap_err();
        assert_eq!((e.line, e.column), (Some(3), Some(14)));
        assert!(e.message.starts_with("not valid JSON: "), "{e}");
        assert!(!e.message.contains("at line"), "{e}");
        assert!(
            e.to_string()
                .starts_with("/p/.scv/hooks.json:3:14: not valid JSON"),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_event_is_a_warning_with_its_line_and_the_known_ones() {
        let hooks = parse(
            "{\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"s\"}]}],\n    \"PreToolUs\": []\n  }\n}",
        )
        .unwrap();
        assert_eq!(commands(&hooks, Event::Stop, None), ["s"]);
        let [w] = hooks.warnings() else {
            panic!("{:?}", hooks.warnings())
        };
        assert!(w.starts_with("/p/.scv/hooks.json:4:5: "), "{w}");
        assert!(w.contains("\"PreToolUs\""), "{w}");
        for known in Event::ALL {
            assert!(w.contains(known.as_str()), "{w}");
        }
        // Claude Code events SCV does not fire: skipped, named.
        let hooks = parse(
            r#"{"hooks": {"PostToolUseFailure": [{"hooks": [{"type": "command", "command": "n"}]}], "PermissionRequest": []}}"#,
        )
        .unwrap();
        assert!(hooks.is_empty());
        assert_eq!(hooks.warnings().len(), 2);
        // (In the file's order or sorted, as serde_json's map is built.)
        assert!(hooks
            .warnings()
            .iter()
            .any(|w| w.contains("\"PostToolUseFailure\"")));
        // Warnings survive a merge.
        let merged = Hooks::default().merge(hooks.clone()).merge(hooks);
        assert_eq!(merged.warnings().len(), 4);
    }

    #[test]
    fn if_narrows_the_calls_a_hook_runs_for() {
        let hooks = parse(
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "guard", "if": "Bash(git push --force*)"},
                {"type": "command", "command": "always"}]}]}}"#,
        )
        .unwrap();
        let places = Places {
            cwd: Path::new("/w"),
            home: None,
        };
        let run = |command: &str| -> Vec<String> {
            let args = serde_json::json!({ "command": command });
            hooks
                .matching_call(Event::PreToolUse, Some("bash"), Some((&args, &places)))
                .iter()
                .map(|c| c.command.clone())
                .collect()
        };
        assert_eq!(run("ls"), ["always"]);
        assert_eq!(run("cd x && git push --force origin"), ["guard", "always"]);
        // Without the call's arguments an `if` hook does not run.
        assert_eq!(
            commands(&hooks, Event::PreToolUse, Some("bash")),
            ["always"]
        );
    }

    #[test]
    fn an_unreadable_if_is_an_error_at_its_line() {
        let text = "{\"hooks\": {\"PreToolUse\": [{\"hooks\": [\n  {\"type\": \"command\", \"command\": \"x\",\n   \"if\": \"tool_input.command matches 'git push'\"}]}]}}";
        let e = parse(text).unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(e.message.contains("\"if\" is not a rule"), "{e}");
        let e = parse(r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "if": 1}]}]}}"#).unwrap_err();
        assert!(e.message.contains("must be a string"), "{e}");
        // On an event without tools: a warning, and the hook never runs.
        let hooks = parse(r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "if": "Bash"}]}]}}"#).unwrap();
        assert!(hooks.is_empty());
        assert!(hooks.warnings()[0].contains("only for tool events"));
    }

    #[test]
    fn a_settings_file_without_hooks_is_no_hooks() {
        let path = Path::new("/p/.claude/settings.json");
        let hooks = Hooks::parse_settings(
            path,
            r#"{"permissions": {"allow": []}}"#,
            Origin::Repository,
        )
        .unwrap();
        assert!(hooks.is_empty() && hooks.warnings().is_empty());
        assert!(Hooks::parse_from(path, "{}", Origin::Repository).is_err());
    }

    #[test]
    fn an_invalid_regex_is_an_error_at_its_line() {
        let text = "{\"hooks\": {\"PreToolUse\": [\n  {\"matcher\": \"Bash\", \"hooks\": []},\n  {\"matcher\": \"Bash(\", \"hooks\": []}\n]}}";
        let e = parse(text).unwrap_err();
        assert_eq!((e.line, e.column), (Some(3), Some(15)));
        assert!(e.message.contains("not a valid regex"), "{e}");
        assert!(!e.message.contains('\n'));
        assert_eq!(e.to_string().lines().count(), 1);
    }

    #[test]
    fn structure_errors() {
        let cases: &[(&str, &str)] = &[
            ("[]", "must be a JSON object"),
            ("{}", "has no \"hooks\""),
            (r#"{"hooks": []}"#, "\"hooks\" must be an object"),
            (r#"{"hooks": {"Stop": {}}}"#, "must be an array"),
            (r#"{"hooks": {"Stop": [1]}}"#, "must be an object"),
            (r#"{"hooks": {"Stop": [{}]}}"#, "no \"hooks\" array"),
            (
                r#"{"hooks": {"Stop": [{"hooks": {}}]}}"#,
                "\"hooks\" must be an array",
            ),
            (
                r#"{"hooks": {"Stop": [{"matcher": 1, "hooks": []}]}}"#,
                "\"matcher\" must be a string",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": ["x"]}]}}"#,
                "a hook must be an object",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}}"#,
                "no \"type\"",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}"#,
                "no \"command\"",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": " "}]}]}}"#,
                "is empty",
            ),
            (
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": 1}]}]}}"#,
                "must be a string",
            ),
        ];
        for (text, want) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.message.contains(want), "{text}: {e}");
            assert_eq!(e.line, Some(1), "{text}: {e}");
        }
    }

    #[test]
    fn hooks_other_than_command_hooks_are_skipped_with_a_warning() {
        let hooks = parse("{\"hooks\": {\"Stop\": [{\"hooks\": [\n {\"type\": \"prompt\", \"prompt\": \"x\"}, {\"type\": \"command\", \"command\": \"c\"}]}]}}").unwrap();
        assert_eq!(commands(&hooks, Event::Stop, None), ["c"]);
        let [w] = hooks.warnings() else {
            panic!("{:?}", hooks.warnings())
        };
        assert!(w.contains("\"prompt\" hook is skipped"), "{w}");
        assert!(w.starts_with("/p/.scv/hooks.json:2:"), "{w}");
        let e = parse(r#"{"hooks": {"Stop": [{"hooks": [{"type": 1, "command": "c"}]}]}}"#)
            .unwrap_err();
        assert!(e.message.contains("must be"), "{e}");
    }

    #[test]
    fn timeouts_are_positive_and_bounded() {
        let hook = |t: &str| {
            parse(&format!(
                r#"{{"hooks": {{"Stop": [{{"hooks": [{{"type": "command", "command": "x", "timeout": {t}}}]}}]}}}}"#
            ))
        };
        assert_eq!(
            hook("1.5").unwrap().matching(Event::Stop, None)[0].timeout,
            Duration::from_millis(1500)
        );
        assert_eq!(
            hook("3600").unwrap().matching(Event::Stop, None)[0].timeout,
            Duration::from_secs(3600)
        );
        for bad in ["0", "-1", "\"30\"", "true"] {
            let e = hook(bad).unwrap_err();
            assert!(e.message.contains("\"timeout\""), "{bad}: {e}");
        }
        // Over the bound: cut to it, with a warning.
        let long = hook("7200").unwrap();
        assert_eq!(
            long.matching(Event::Stop, None)[0].timeout,
            Duration::from_secs(3600)
        );
        assert!(long.warnings()[0].contains("over 3600"));
    }

    #[test]
    fn bounds() {
        let big = format!(
            "{{\"hooks\": {{}}, \"pad\": \"{}\"}}",
            "x".repeat(MAX_FILE_BYTES as usize)
        );
        let e = parse(&big).unwrap_err();
        assert!(e.message.contains("at most"), "{e}");
        let one = r#"{"type": "command", "command": "x"}"#;
        let many = |n: usize| {
            format!(
                r#"{{"hooks": {{"Stop": [{{"hooks": [{}]}}]}}}}"#,
                vec![one; n].join(",")
            )
        };
        assert_eq!(parse(&many(MAX_HOOKS)).unwrap().len(), MAX_HOOKS);
        let e = parse(&many(MAX_HOOKS + 1)).unwrap_err();
        assert!(e.message.contains("more than 256"), "{e}");
    }

    #[test]
    fn labels_name_the_command_and_file() {
        let hook = HookCommand {
            command: "./x.sh".into(),
            timeout: DEFAULT_TIMEOUT,
            source: "/p/.scv/hooks.json".into(),
            line: None,
            origin: Origin::User,
            condition: None,
            plugin_root: None,
        };
        assert_eq!(hook.label(), "hook `./x.sh` (/p/.scv/hooks.json)");
        let at = |command: &str| HookCommand {
            command: command.into(),
            line: Some(7),
            ..hook.clone()
        };
        // The script an interpreter runs, however long the interpreter's path.
        assert_eq!(
            at(r#""/very/long/path/to/a/venv/bin/python3" "/path/to/check.py" --strict"#).label(),
            "hook `/path/to/check.py` (/p/.scv/hooks.json:7)"
        );
        assert_eq!(
            at("FOO=1 env -i bash -e ./guard.sh arg").label(),
            "hook `./guard.sh` (/p/.scv/hooks.json:7)"
        );
        assert_eq!(
            at("python3.12 -u hooks/x.py").label(),
            "hook `hooks/x.py` (/p/.scv/hooks.json:7)"
        );
        assert_eq!(
            at("/usr/local/bin/my-gate --fast").label(),
            "hook `/usr/local/bin/my-gate` (/p/.scv/hooks.json:7)"
        );
        assert_eq!(
            at("sh -c 'exit 2'").label(),
            "hook `sh -c 'exit 2'` (/p/.scv/hooks.json:7)"
        );
        let long = HookCommand {
            command: format!("echo {}\nexit 2", "é".repeat(200)),
            ..hook
        };
        let label = long.label();
        assert!(label.contains('…'));
        assert!(!label.contains('\n'));
        assert!(label.chars().count() < 80 + 40, "{label}");
    }

    #[test]
    fn load_merges_files_skips_missing_ones_and_names_bad_ones() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let b = dir.path().join("b.json");
        let missing = dir.path().join("missing.json");
        std::fs::write(
            &a,
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(
            &b,
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "b"}]}]}}"#,
        )
        .unwrap();
        let hooks = Hooks::load(&[a.clone(), missing.clone(), b.clone()]).unwrap();
        assert_eq!(commands(&hooks, Event::Stop, None), ["a", "b"]);
        assert_eq!(hooks.matching(Event::Stop, None)[0].source, a);
        assert!(Hooks::load(&[missing]).unwrap().is_empty());

        std::fs::write(&b, "{\"hooks\": ").unwrap();
        let e = Hooks::load(&[a.clone(), b.clone()]).unwrap_err();
        assert_eq!(e.path, b);
        assert!(e.line.is_some());

        let e = Hooks::load(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(e.message.contains("not a file"), "{e}");

        std::fs::write(&b, vec![b' '; MAX_FILE_BYTES as usize + 1]).unwrap();
        let e = Hooks::load(std::slice::from_ref(&b)).unwrap_err();
        assert!(e.message.contains("at most"), "{e}");

        std::fs::write(&b, [0xff, 0xfe]).unwrap();
        assert!(Hooks::load(std::slice::from_ref(&b))
            .unwrap_err()
            .message
            .contains("UTF-8"));
    }

    #[test]
    fn load_bounds_the_total() {
        let dir = tempfile::tempdir().unwrap();
        let one = r#"{"type": "command", "command": "x"}"#;
        let file = format!(
            r#"{{"hooks": {{"Stop": [{{"hooks": [{}]}}]}}}}"#,
            vec![one; 200].join(",")
        );
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        std::fs::write(&a, &file).unwrap();
        std::fs::write(&b, &file).unwrap();
        let e = Hooks::load(&[a, b.clone()]).unwrap_err();
        assert_eq!(e.path, b);
        assert!(e.message.contains("400"), "{e}");
    }

    #[test]
    fn display_without_a_line() {
        let e = LoadError::new(Path::new("/x.json"), None, "is not a file");
        assert_eq!(e.to_string(), "/x.json: is not a file");
    }
}
