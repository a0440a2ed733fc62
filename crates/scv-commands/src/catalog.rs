//! The commands, skills and agents of one workspace, found in their folders
//! in precedence order, and what is done with them: look-up, `/NAME`
//! expansion, the system prompt's skill index, the agent index.

use std::path::PathBuf;

use crate::agents::{self, Agent};
use crate::commands::{self, Command};
use crate::expand::{self, ExpandError, Expansion, Kind, Unknown};
use crate::shared::{self, Diagnostic, Scope};
use crate::skills::{self, Skill};

/// At most this many skills are listed in [`Catalog::skill_index`].
pub const MAX_INDEXED_SKILLS: usize = 64;
/// At most this many agents are listed in [`Catalog::agent_index`].
pub const MAX_INDEXED_AGENTS: usize = 32;
/// A description in [`Catalog::agent_index`] is cut to this many bytes
/// (≈ 40 tokens), "…" included.
pub const MAX_INDEX_DESCRIPTION_BYTES: usize = 160;
/// A skill's description in [`Catalog::skill_index`] is kept to this many
/// characters, as Claude Code allows ("Must be 1-1024 characters"): its
/// "Use when…" trigger is most often past the first 160 bytes.
pub const MAX_INDEX_DESCRIPTION_CHARS: usize = 1024;
/// The descriptions of [`Catalog::skill_index`] together take at most this
/// many bytes (the bound the index had when each was cut to 160 bytes:
/// [`MAX_INDEXED_SKILLS`] × [`MAX_INDEX_DESCRIPTION_BYTES`]). Past it the
/// longest are shortened evenly — every one to the same length, as long
/// as the bound allows — and none is dropped.
pub const MAX_SKILL_INDEX_DESCRIPTION_BYTES: usize =
    MAX_INDEXED_SKILLS * MAX_INDEX_DESCRIPTION_BYTES;

/// Where to look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    pub workspace: PathBuf,
    pub scv_home: PathBuf,
    /// Claude Code's user folder (`~/.claude`), whose `commands/`,
    /// `skills/` and `agents/` are the user's too, after SCV's own.
    pub claude_home: Option<PathBuf>,
    /// Claude Code plugins' folders, whose `commands/`, `skills/` and
    /// `agents/` are the user's, after `claude_home`'s.
    pub plugins: Vec<PathBuf>,
}

impl Roots {
    /// The command folders, first wins.
    fn commands(&self) -> Vec<(PathBuf, Scope)> {
        vec![
            (self.workspace.join(".scv/commands"), Scope::Workspace),
            (self.workspace.join(".claude/commands"), Scope::Workspace),
            (self.scv_home.join("commands"), Scope::User),
        ]
        .into_iter()
        .chain(
            self.claude_home
                .iter()
                .chain(&self.plugins)
                .map(|dir| (dir.join("commands"), Scope::User)),
        )
        .collect()
    }

    /// The skill folders, first wins.
    fn skills(&self) -> Vec<(PathBuf, Scope)> {
        vec![
            (self.workspace.join(".scv/skills"), Scope::Workspace),
            (self.workspace.join(".claude/skills"), Scope::Workspace),
            (self.scv_home.join("skills"), Scope::User),
        ]
        .into_iter()
        .chain(
            self.claude_home
                .iter()
                .chain(&self.plugins)
                .map(|dir| (dir.join("skills"), Scope::User)),
        )
        .collect()
    }

    /// The agent folders, first wins.
    fn agents(&self) -> Vec<(PathBuf, Scope)> {
        vec![
            (self.workspace.join(".scv/agents"), Scope::Workspace),
            (self.workspace.join(".claude/agents"), Scope::Workspace),
            (self.scv_home.join("agents"), Scope::User),
        ]
        .into_iter()
        .chain(
            self.claude_home
                .iter()
                .chain(&self.plugins)
                .map(|dir| (dir.join("agents"), Scope::User)),
        )
        .collect()
    }
}

/// Every command, skill and agent found, and what was skipped or shadowed.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    pub commands: Vec<Command>,
    pub skills: Vec<Skill>,
    pub agents: Vec<Agent>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Catalog {
    /// Reads the command, skill and agent folders (blocking system calls;
    /// call it off an async runtime), each file opened once (see
    /// [the crate docs](crate#how-files-are-opened)). Never fails: an unreadable or malformed file is
    /// skipped with a [`Diagnostic`]. A folder that does not exist is
    /// silently empty.
    ///
    /// A name that is both a command and a skill: `/NAME` runs the skill,
    /// as in Claude Code (a [`Diagnostic`] on the command says so).
    /// Agents are not typed after `/`, so an agent may share a command's or
    /// a skill's name.
    pub fn load(roots: &Roots) -> Catalog {
        let mut diagnostics = Vec::new();
        let commands = commands::load(&roots.commands(), &mut diagnostics);
        let skills = skills::load(&roots.skills(), &mut diagnostics);
        for command in &commands {
            if let Some(skill) = skills.iter().find(|s| s.name == command.name) {
                diagnostics.push(Diagnostic::new(
                    &command.path,
                    None,
                    format!(
                        "/{} runs the skill {}, not this command (a skill wins over a command of its name, as in Claude Code)",
                        command.name,
                        skill.path.display()
                    ),
                ));
            }
        }
        let agents = agents::load(&roots.agents(), &mut diagnostics);
        Catalog {
            commands,
            skills,
            agents,
            diagnostics,
        }
    }

    pub fn command(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name)
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn agent(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// `text` is what the user typed, starting with `/`.
    ///
    /// - `Ok(None)`: not the slash command form (`/` alone, a name with a
    ///   character outside `[A-Za-z0-9_:.-]` such as `/usr/bin is ...`, or no
    ///   leading `/`): send the text as it is.
    /// - `Ok(Some(_))`: a command (its body with the arguments substituted,
    ///   see [the placeholders](crate#expansion)) or a skill (a short
    ///   instruction, [`Skill::load_body`], the arguments).
    /// - `Err(ExpandError::Unknown)`: a well-formed `/NAME` that is neither.
    /// - `Err(ExpandError::Unreadable)`: a skill whose `SKILL.md` cannot be
    ///   read now.
    pub fn expand(&self, text: &str) -> Result<Option<Expansion>, ExpandError> {
        let Some((name, args)) = expand::parse_invocation(text) else {
            return Ok(None);
        };
        if let Some(skill) = self.skill(name) {
            let body = skill.read_body().map_err(|error| ExpandError::Unreadable {
                name: skill.name.clone(),
                path: skill.path.clone(),
                error,
            })?;
            let prompt = format!(
                "The user invoked the skill `{}`. Follow its instructions below.\n\n{}{}",
                skill.name,
                skill.header(),
                expand::substitute(&body, args)
            );
            return Ok(Some(Expansion {
                name: skill.name.clone(),
                kind: Kind::Skill,
                prompt,
            }));
        }
        if let Some(command) = self.command(name) {
            return Ok(Some(Expansion {
                name: command.name.clone(),
                kind: Kind::Command,
                prompt: expand::substitute(&command.body, args),
            }));
        }
        let names = self
            .commands
            .iter()
            .map(|c| c.name.as_str())
            .chain(self.skills.iter().map(|s| s.name.as_str()));
        Err(Unknown {
            name: name.to_owned(),
            known: expand::nearest(name, names),
        }
        .into())
    }

    /// The system prompt's skill index: one line per skill, "- NAME:
    /// DESCRIPTION" (the description on one line, at most
    /// [`MAX_INDEX_DESCRIPTION_CHARS`] characters, and all of them within
    /// [`MAX_SKILL_INDEX_DESCRIPTION_BYTES`], the longest shortened evenly,
    /// cut at a char boundary with "…"), at most [`MAX_INDEXED_SKILLS`]
    /// lines, then "(N more skills not listed; …)" if cut. `None` when
    /// there are no skills.
    pub fn skill_index(&self) -> Option<String> {
        let listed = &self.skills[..self.skills.len().min(MAX_INDEXED_SKILLS)];
        let descriptions: Vec<String> = listed
            .iter()
            .map(|s| {
                cut_chars(
                    &shared::one_line(&s.description),
                    MAX_INDEX_DESCRIPTION_CHARS,
                )
            })
            .collect();
        let cap = even_cap(
            descriptions.iter().map(String::len),
            MAX_SKILL_INDEX_DESCRIPTION_BYTES,
        );
        let mut lines: Vec<String> = listed
            .iter()
            .zip(&descriptions)
            .map(|(skill, d)| format!("- {}: {}", skill.name, shared::cut(d, cap)))
            .collect();
        if lines.is_empty() {
            return None;
        }
        let more = self.skills.len() - listed.len();
        if more > 0 {
            lines.push(format!(
                "({more} more skills not listed; the user can name one with /NAME)"
            ));
        }
        Some(lines.join("\n"))
    }

    /// The agent index, for the model to pick a subagent by: one line per
    /// agent, "- NAME: DESCRIPTION" (cut as in [`Catalog::skill_index`]), at
    /// most [`MAX_INDEXED_AGENTS`] lines, then "(N more agents not listed)"
    /// if cut. `None` when there are no agents.
    pub fn agent_index(&self) -> Option<String> {
        let entries = self.agents.iter().map(|a| (&*a.name, &*a.description));
        index(entries, MAX_INDEXED_AGENTS, |more| {
            format!("({more} more agents not listed)")
        })
    }
}

/// `text` cut to `max` characters, "…" last when cut.
fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((end, _)) if text.chars().count() > max => {
            format!("{}…", text[..end].trim_end())
        }
        _ => text.to_owned(),
    }
}

/// The largest length `cap` such that the `lengths`, each cut to `cap`,
/// add up to at most `budget` (every length when they fit already). At
/// least 16, so that no description goes whole.
fn even_cap(lengths: impl Iterator<Item = usize> + Clone, budget: usize) -> usize {
    let total = |cap: usize| lengths.clone().map(|l| l.min(cap)).sum::<usize>();
    let longest = lengths.clone().max().unwrap_or(0);
    if total(longest) <= budget {
        return longest.max(16);
    }
    let (mut low, mut high) = (0, longest);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if total(mid) <= budget {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    low.max(16)
}

/// "- NAME: DESCRIPTION" lines for the first `max` of `entries`, then
/// `more(N)` for the N left out. `None` when there are none.
fn index<'a>(
    entries: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    max: usize,
    more: impl FnOnce(usize) -> String,
) -> Option<String> {
    let left_out = entries.len().saturating_sub(max);
    let mut lines: Vec<String> = entries
        .take(max)
        .map(|(name, description)| {
            let description =
                shared::cut(&shared::one_line(description), MAX_INDEX_DESCRIPTION_BYTES);
            format!("- {name}: {description}")
        })
        .collect();
    if lines.is_empty() {
        return None;
    }
    if left_out > 0 {
        lines.push(more(left_out));
    }
    Some(lines.join("\n"))
}
