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
/// A description in [`Catalog::skill_index`] and [`Catalog::agent_index`]
/// is cut to this many bytes (≈ 40 tokens), "…" included.
pub const MAX_INDEX_DESCRIPTION_BYTES: usize = 160;

/// Where to look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    pub workspace: PathBuf,
    pub scv_home: PathBuf,
}

impl Roots {
    /// The command folders, first wins.
    fn commands(&self) -> Vec<(PathBuf, Scope)> {
        vec![
            (self.workspace.join(".scv/commands"), Scope::Workspace),
            (self.workspace.join(".claude/commands"), Scope::Workspace),
            (self.scv_home.join("commands"), Scope::User),
        ]
    }

    /// The skill folders, first wins.
    fn skills(&self) -> Vec<(PathBuf, Scope)> {
        vec![
            (self.workspace.join(".scv/skills"), Scope::Workspace),
            (self.workspace.join(".claude/skills"), Scope::Workspace),
            (self.scv_home.join("skills"), Scope::User),
        ]
    }

    /// The agent folders, first wins.
    fn agents(&self) -> Vec<(PathBuf, Scope)> {
        vec![
            (self.workspace.join(".scv/agents"), Scope::Workspace),
            (self.workspace.join(".claude/agents"), Scope::Workspace),
            (self.scv_home.join("agents"), Scope::User),
        ]
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
    /// A name that is both a command and a skill: `/NAME` runs the command
    /// (a [`Diagnostic`] on the skill says so); the skill stays in
    /// [`Catalog::skills`] and the index, so the model can still load it.
    /// Agents are not typed after `/`, so an agent may share a command's or
    /// a skill's name.
    pub fn load(roots: &Roots) -> Catalog {
        let mut diagnostics = Vec::new();
        let commands = commands::load(&roots.commands(), &mut diagnostics);
        let skills = skills::load(&roots.skills(), &mut diagnostics);
        for skill in &skills {
            if let Some(command) = commands.iter().find(|c| c.name == skill.name) {
                diagnostics.push(Diagnostic::new(
                    &skill.path,
                    None,
                    format!(
                        "/{} runs the command {}, not this skill (the model can still load the skill by name)",
                        skill.name,
                        command.path.display()
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
        if let Some(command) = self.command(name) {
            return Ok(Some(Expansion {
                name: command.name.clone(),
                kind: Kind::Command,
                prompt: expand::substitute(&command.body, args),
            }));
        }
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
    /// DESCRIPTION" (the description on one line, cut to
    /// [`MAX_INDEX_DESCRIPTION_BYTES`] at a char boundary with "…"), at most
    /// [`MAX_INDEXED_SKILLS`] lines, then "(N more skills not listed; …)"
    /// if cut. `None` when there are no skills.
    pub fn skill_index(&self) -> Option<String> {
        let entries = self.skills.iter().map(|s| (&*s.name, &*s.description));
        index(entries, MAX_INDEXED_SKILLS, |more| {
            format!("({more} more skills not listed; the user can name one with /NAME)")
        })
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
