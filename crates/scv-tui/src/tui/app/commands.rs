//! Slash commands: the table, and what each command does.
//!
//! [`SLASH_COMMANDS`] is the one list of built-ins: the completion popup,
//! `/help`, Tab and Enter all read it, then the session's custom commands
//! and skills (`session.started.commands`), which the server expands.
//! Adding a built-in is a row there and its action here.

use super::{App, Outgoing};
use crate::session::Which;
use crate::tui::overlays::{OpenOverlay, OverlayKind};
use crate::tui::state::SessionView;
use scv_protocol::SessionPause;
use scv_protocol::{ClientMessage, CommandInfo, CommandKind, SessionClear, SessionConfigure};

/// What `/init` asks of the model.
pub(super) const INIT_PROMPT: &str = "Please analyze this codebase and create an AGENTS.md file in the workspace's root, which will be given to future coding agents working in this repository.\n\nWhat to add:\n1. The commands that will be commonly used: how to build, lint and run the tests, including how to run a single test.\n2. The high-level architecture and structure of the code, the big picture that takes reading several files to understand.\n\nUsage notes:\n- If there is already an AGENTS.md, suggest improvements to it.\n- If there is a CLAUDE.md, .cursor/rules/, .cursorrules, .github/copilot-instructions.md or a README.md, include what is important in them.\n- Do not repeat yourself, and do not list every file or generic advice.\n- Start the file with a line saying what it is for.";

/// One slash command.
pub(super) struct SlashCommand {
    /// What is typed, `/` included.
    pub name: &'static str,
    /// Its line in the popup and in `/help`.
    pub help: &'static str,
    /// It takes an argument after a space (`/model M`). For the others,
    /// text after the command makes the line a prompt.
    pub takes_arg: bool,
    /// What it does, and whether it needs the session.
    pub run: Run,
}

/// A command's action, given its argument (`""` when there is none).
#[derive(Clone, Copy)]
pub(super) enum Run {
    /// Works with or without a session.
    Always(fn(&mut App, &str) -> Vec<Outgoing>),
    /// Opens an overlay.
    Show(fn() -> OverlayKind),
    /// Needs the session, and gets it; without one the command is
    /// refused with "not connected".
    WithSession(fn(&mut App, SessionView, &str) -> Vec<Outgoing>),
}

/// The slash commands, in the order the popup and `/help` list them.
pub(super) const SLASH_COMMANDS: &[SlashCommand] = &[
    SlashCommand {
        name: "/approvals",
        help: "list this session's approval rules; remove them",
        takes_arg: false,
        run: Run::Show(|| OverlayKind::Approvals),
    },
    SlashCommand {
        name: "/clear",
        help: "clear the session (history, queue, usage)",
        takes_arg: false,
        run: Run::WithSession(App::clear_session),
    },
    SlashCommand {
        name: "/copy",
        help: "copy the last answer to the clipboard (OSC 52)",
        takes_arg: false,
        run: Run::Always(App::copy_last_answer),
    },
    SlashCommand {
        name: "/ps",
        help: "background processes; /ps ID: one's output; /ps kill ID: stop it",
        takes_arg: true,
        run: Run::Always(App::show_processes),
    },
    SlashCommand {
        name: "/cost",
        help: "what this session's turns cost, turn by turn",
        takes_arg: false,
        run: Run::Show(|| OverlayKind::Cost),
    },
    SlashCommand {
        name: "/budget",
        help: "/budget: this session's cost budget; /budget AMOUNT: set it (USD) for this session",
        takes_arg: true,
        run: Run::WithSession(App::budget_command),
    },
    SlashCommand {
        name: "/diff",
        help: "show the workspace's git diff",
        takes_arg: false,
        run: Run::WithSession(App::show_diff),
    },
    SlashCommand {
        name: "/compact",
        help: "/compact [focus]: summarize the conversation so far now, to free context (idle)",
        takes_arg: true,
        run: Run::WithSession(App::compact_command),
    },
    SlashCommand {
        name: "/init",
        help: "write an AGENTS.md for this project (as Claude Code's /init writes its CLAUDE.md)",
        takes_arg: false,
        run: Run::WithSession(App::init_command),
    },
    SlashCommand {
        name: "/model",
        help: "/model: pick from the provider's models; /model M or /model PROVIDER/M: switch (idle)",
        takes_arg: true,
        run: Run::WithSession(App::switch_model),
    },
    SlashCommand {
        name: "/plan",
        help: "plan mode on/off (as Shift+Tab)",
        takes_arg: false,
        run: Run::WithSession(App::plan_command),
    },
    SlashCommand {
        name: "/pause",
        help: "pause the queue: queued prompts wait",
        takes_arg: false,
        run: Run::WithSession(App::pause_queue),
    },
    SlashCommand {
        name: "/unpause",
        help: "let the queue run again",
        takes_arg: false,
        run: Run::WithSession(App::resume_queue),
    },
    SlashCommand {
        name: "/undo",
        help: "put the files and the conversation back to before the last turn that changed files (/undo force: over others' changes)",
        takes_arg: true,
        run: Run::WithSession(App::undo_command),
    },
    SlashCommand {
        name: "/permissions",
        help: "rules kept in settings files (/permissions keep [--project])",
        takes_arg: true,
        run: Run::WithSession(App::permissions_command),
    },
    SlashCommand {
        name: "/rewind",
        help: "go back to a checkpoint: files, conversation or both",
        takes_arg: false,
        run: Run::WithSession(App::rewind_command),
    },
    SlashCommand {
        name: "/new",
        help: "start a new session here (this one stays stored; /resume brings it back)",
        takes_arg: false,
        run: Run::Always(App::new_session),
    },
    SlashCommand {
        name: "/resume",
        help: "pick a stored session and continue it here",
        takes_arg: false,
        run: Run::Always(App::pick_session),
    },
    SlashCommand {
        name: "/fork",
        help: "continue this conversation in a new session (this one stays as it is)",
        takes_arg: false,
        run: Run::WithSession(App::fork_session),
    },
    SlashCommand {
        name: "/status",
        help: "provider, model, context, usage, queue, sandbox, rules, MCP",
        takes_arg: false,
        run: Run::Always(App::show_status),
    },
    SlashCommand {
        name: "/help",
        help: "show keys and commands",
        takes_arg: false,
        run: Run::Show(|| OverlayKind::Help),
    },
    SlashCommand {
        name: "/quit",
        help: "quit scv",
        takes_arg: false,
        run: Run::Always(App::quit),
    },
];

/// The command named `name` (`/` included).
fn find(name: &str) -> Option<&'static SlashCommand> {
    SLASH_COMMANDS.iter().find(|c| c.name == name)
}

/// The commands as `/help` lists them (name, help): the built-ins, then
/// the session's own.
pub(super) fn help_list(custom: &[CommandInfo]) -> Vec<(String, String)> {
    entries(custom).collect()
}

/// Every command as (name, help), built-ins first. A custom command
/// named as a built-in is never run, so it is not offered either.
fn entries(custom: &[CommandInfo]) -> impl Iterator<Item = (String, String)> + '_ {
    let builtins = SLASH_COMMANDS
        .iter()
        .map(|c| (c.name.to_string(), c.help.to_string()));
    let custom = custom
        .iter()
        .map(|c| (format!("/{}", c.name), custom_help(c)))
        .filter(|(name, _)| find(name).is_none());
    builtins.chain(custom)
}

/// A custom command's line: its arguments, what it does, and what it is
/// (the description comes from a file in the workspace: one line, no
/// control characters).
fn custom_help(command: &CommandInfo) -> String {
    let kind = match command.kind {
        CommandKind::Command => "command",
        CommandKind::Skill => "skill",
    };
    let label = format!("({} {kind})", command.scope);
    let description = command.description.lines().next().unwrap_or("").trim();
    let text = match command.argument_hint.as_deref().map(str::trim) {
        Some(hint) if !hint.is_empty() => format!("{hint} · {description} {label}"),
        _ if description.is_empty() => label,
        _ => format!("{description} {label}"),
    };
    scv_client::text::visible(&text).into_owned()
}

/// What Enter does with a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Line {
    /// A built-in runs: one word, or one that takes an argument and its
    /// argument.
    Builtin,
    /// The session's command or skill: the server expands it.
    Custom,
    /// One word after `/` that names nothing: refused here.
    Unknown,
    /// Sent as written (`/usr/bin/foo is slow`, a built-in's name and
    /// words it does not take, anything else).
    Prompt,
}

/// How Enter reads `text`: a built-in's name runs it; else a name the
/// session lists goes to the server as a command; else a lone `/word` is
/// an unknown command, and the rest (a path: `/` again in the first word)
/// is a prompt.
pub(super) fn classify(text: &str, custom: &[CommandInfo]) -> Line {
    let Some(rest) = text.strip_prefix('/') else {
        return Line::Prompt;
    };
    let first = text.split_whitespace().next().unwrap_or("");
    let one_word = !text.contains(char::is_whitespace);
    if let Some(command) = find(first) {
        return if one_word || command.takes_arg {
            Line::Builtin
        } else {
            Line::Prompt
        };
    }
    let name = rest.split_whitespace().next().unwrap_or("");
    if !name.is_empty() && custom.iter().any(|c| c.name == name) {
        return Line::Custom;
    }
    if one_word && !name.contains('/') {
        Line::Unknown
    } else {
        Line::Prompt
    }
}

/// Commands matching `text`, while it is a `/` and a word.
fn matches(text: &str, custom: &[CommandInfo]) -> Vec<(String, String)> {
    if !text.starts_with('/') || text.contains(char::is_whitespace) {
        return Vec::new();
    }
    entries(custom)
        .filter(|(name, _)| name.starts_with(text))
        .collect()
}

/// `text` completed as far as the matching commands agree; `None` when
/// nothing matches.
fn complete(text: &str, custom: &[CommandInfo]) -> Option<String> {
    let matches = matches(text, custom);
    let first = matches.first()?;
    if matches.iter().all(|(name, _)| *name == first.0) {
        Some(first.0.clone())
    } else {
        Some(common_prefix(matches.iter().map(|(name, _)| name.as_str())))
    }
}

/// `/model M` keeps the provider; `/model PROVIDER/M` names both (a
/// model id with a slash, as OpenRouter's, is a model alone when the
/// session's `current` model has one): (provider, model).
fn model_choice(arg: &str, current: &str) -> (Option<String>, Option<String>) {
    match arg.split_once('/') {
        Some((provider, model)) if !current.contains('/') && !provider.is_empty() => (
            Some(provider.to_string()),
            (!model.is_empty()).then(|| model.to_string()),
        ),
        _ => (None, Some(arg.to_string())),
    }
}

fn common_prefix<'a>(mut words: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = words.next() else {
        return String::new();
    };
    let mut prefix = first.to_string();
    for word in words {
        while !word.starts_with(&prefix) {
            prefix.pop();
        }
    }
    prefix
}

impl App {
    /// Runs the command line `text` (a [`Line::Builtin`] or
    /// [`Line::Unknown`]).
    pub(super) fn run_command(&mut self, text: &str) -> Vec<Outgoing> {
        let (name, arg) = match text.split_once(char::is_whitespace) {
            Some((name, arg)) => (name, arg.trim()),
            None => (text, ""),
        };
        let Some(command) = find(name) else {
            self.hint = Some(format!("unknown command {name}; try /help"));
            return Vec::new();
        };
        match command.run {
            Run::Always(run) => run(self, arg),
            Run::Show(kind) => {
                self.overlay = Some(OpenOverlay::new(kind()));
                Vec::new()
            }
            Run::WithSession(run) => match self.session.clone() {
                Some(session) => run(self, session, arg),
                None => {
                    self.hint = Some("not connected".into());
                    Vec::new()
                }
            },
        }
    }

    /// Commands matching what is typed after `/` (the completion popup):
    /// (name, help), built-ins first.
    pub fn slash_matches(&self) -> Vec<(String, String)> {
        matches(self.input.text(), self.custom_commands())
    }

    /// Tab on a partial command completes as far as it is unambiguous.
    pub(super) fn complete_slash(&mut self) {
        if let Some(completed) = complete(self.input.text(), self.custom_commands()) {
            self.input.set(&completed);
        }
    }

    /// The session's custom commands and skills (none before it starts).
    pub(super) fn custom_commands(&self) -> &[CommandInfo] {
        self.session.as_ref().map_or(&[], |s| s.commands.as_slice())
    }

    /// `/plan`: as Shift+Tab.
    fn plan_command(&mut self, _: SessionView, _: &str) -> Vec<Outgoing> {
        self.toggle_mode()
    }

    /// `/init`: a turn asking the model to study the project and write
    /// its `AGENTS.md` (which SCV reads, as it reads `CLAUDE.md`).
    fn init_command(&mut self, session: SessionView, _: &str) -> Vec<Outgoing> {
        vec![self.start_turn(session.session_id, INIT_PROMPT.to_string())]
    }

    /// `/compact [focus]`: the server's own command, a turn that only
    /// compacts (its `context.compacted` shows what it freed).
    fn compact_command(&mut self, session: SessionView, arg: &str) -> Vec<Outgoing> {
        let text = match arg.trim() {
            "" => "/compact".to_string(),
            focus => format!("/compact {focus}"),
        };
        vec![self.start_command(session.session_id, text)]
    }

    /// Text `/copy` wants on the clipboard.
    pub fn take_clipboard(&mut self) -> Option<String> {
        self.clipboard.take()
    }

    fn quit(&mut self, _: &str) -> Vec<Outgoing> {
        self.should_quit = true;
        vec![Outgoing::Quit]
    }

    /// `/ps [ID | kill ID]`.
    fn show_processes(&mut self, arg: &str) -> Vec<Outgoing> {
        let session_id = self.session_id();
        match self.processes.command(arg, session_id) {
            crate::tui::processes::Command::Send(message) => vec![self.send(message)],
            crate::tui::processes::Command::Say(text) => {
                self.notice(text);
                Vec::new()
            }
        }
    }

    /// `/status` shows at once; the MCP servers fill in when the daemon
    /// answers.
    fn show_status(&mut self, _: &str) -> Vec<Outgoing> {
        self.overlay = Some(OpenOverlay::new(OverlayKind::Status));
        vec![self.ask_daemon_status()]
    }

    /// `/resume`: the picker opens when the daemon lists the sessions.
    pub(crate) fn pick_session(&mut self, _: &str) -> Vec<Outgoing> {
        vec![self.ask_session_list()]
    }

    fn undo_command(&mut self, session: SessionView, arg: &str) -> Vec<Outgoing> {
        self.undo(session.session_id, Some(arg))
    }

    fn rewind_command(&mut self, session: SessionView, _: &str) -> Vec<Outgoing> {
        self.undo(session.session_id, None)
    }

    /// `/new`: a fresh session in this view. Switching closes this
    /// session's connection, which would cancel a running turn, so it
    /// waits for the turn to end.
    fn new_session(&mut self, _: &str) -> Vec<Outgoing> {
        if self.turn.is_some() {
            self.hint = Some("start a new session when the turn has ended (Esc cancels it)".into());
            return Vec::new();
        }
        vec![Outgoing::Open(Which::New)]
    }

    /// `/fork`: a new session with this one's history.
    fn fork_session(&mut self, session: SessionView, _: &str) -> Vec<Outgoing> {
        if self.turn.is_some() {
            self.hint = Some("fork when the turn has ended (Esc cancels it)".into());
            return Vec::new();
        }
        vec![Outgoing::Open(Which::Fork {
            session_id: session.session_id,
            turn_id: None,
        })]
    }

    fn clear_session(&mut self, session: SessionView, _: &str) -> Vec<Outgoing> {
        vec![self.send(ClientMessage::SessionClear(SessionClear {
            session_id: session.session_id,
        }))]
    }

    /// The paused flag shown is the one asked for; the server's
    /// `queue.snapshot` confirms it.
    fn pause_queue(&mut self, session: SessionView, _: &str) -> Vec<Outgoing> {
        self.queue.set_paused(true);
        vec![self.send(ClientMessage::SessionPause(SessionPause {
            session_id: session.session_id,
            paused: true,
        }))]
    }

    fn resume_queue(&mut self, session: SessionView, _: &str) -> Vec<Outgoing> {
        self.queue.set_paused(false);
        vec![self.send(ClientMessage::SessionPause(SessionPause {
            session_id: session.session_id,
            paused: false,
        }))]
    }

    /// `/model M` keeps the provider; `/model PROVIDER/M` switches both
    /// (a model id with a slash, as OpenRouter's, is a model alone when
    /// the session's model already has one). Only while idle: the server
    /// refuses a switch during a turn.
    fn switch_model(&mut self, session: SessionView, arg: &str) -> Vec<Outgoing> {
        let current = session.model;
        if arg.is_empty() {
            // The provider's list; its answer opens the picker.
            self.hint = Some(format!(
                "asking {} for its models… (now {})",
                session.provider.as_deref().unwrap_or("the provider"),
                self.model_label()
            ));
            return vec![
                self.send(ClientMessage::ModelsList(scv_protocol::ModelsList {
                    session_id: session.session_id,
                })),
            ];
        }
        if self.turn.is_some() {
            self.hint = Some("the model switches only while idle (Esc cancels the turn)".into());
            return Vec::new();
        }
        let (provider, model) = model_choice(arg, &current);
        vec![self.send(ClientMessage::SessionConfigure(SessionConfigure {
            session_id: session.session_id,
            provider,
            model,
            ..SessionConfigure::default()
        }))]
    }

    /// `/diff`: the workspace's `git diff` in an overlay; a hint when it
    /// is not a repository or nothing changed.
    fn show_diff(&mut self, session: SessionView, _: &str) -> Vec<Outgoing> {
        match crate::tui::diff::git_diff(std::path::Path::new(&session.cwd)) {
            Ok(lines) if lines.is_empty() => {
                self.hint = Some("no changes (git diff is empty)".into())
            }
            Ok(lines) => self.overlay = Some(OpenOverlay::new(OverlayKind::Diff(lines))),
            Err(why) => self.hint = Some(format!("/diff: {why}")),
        }
        Vec::new()
    }

    /// `/copy`: the last answer goes to the clipboard (OSC 52, written by
    /// the event loop: see [`App::take_clipboard`]).
    fn copy_last_answer(&mut self, _: &str) -> Vec<Outgoing> {
        let last = self.transcript.last_answer();
        match last {
            Some(text) => {
                self.hint = Some(format!(
                    "copied the last answer ({} characters) through the terminal (OSC 52)",
                    text.chars().count()
                ));
                self.clipboard = Some(text);
            }
            None => self.hint = Some("no answer to copy yet".into()),
        }
        Vec::new()
    }
}
