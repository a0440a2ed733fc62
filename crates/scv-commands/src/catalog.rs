//! The commands and skills of one workspace, found in their folders in
//! precedence order, and what is done with them: look-up, `/NAME`
//! expansion, the system prompt's skill index.

use std::path::PathBuf;

use crate::commands::{self, Command};
use crate::expand::{self, ExpandError, Expansion, Kind, Unknown};
use crate::shared::{self, Diagnostic, Scope};
use crate::skills::{self, Skill};

/// At most this many skills are listed in [`Catalog::skill_index`].
pub const MAX_INDEXED_SKILLS: usize = 64;
/// A description in [`Catalog::skill_index`] is cut to this many bytes
/// (≈ 40 tokens), "…" included.
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
}

/// Every command and skill found, and what was skipped or shadowed.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    pub commands: Vec<Command>,
    pub skills: Vec<Skill>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Catalog {
    /// Reads the command and skill folders (blocking `std::fs`; call it off
    /// an async runtime). Never fails: an unreadable or malformed file is
    /// skipped with a [`Diagnostic`]. A folder that does not exist is
    /// silently empty.
    ///
    /// A name that is both a command and a skill: `/NAME` runs the command
    /// (a [`Diagnostic`] on the skill says so); the skill stays in
    /// [`Catalog::skills`] and the index, so the model can still load it.
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
        Catalog {
            commands,
            skills,
            diagnostics,
        }
    }

    pub fn command(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name)
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
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
        if self.skills.is_empty() {
            return None;
        }
        let mut lines: Vec<String> = self
            .skills
            .iter()
            .take(MAX_INDEXED_SKILLS)
            .map(|s| {
                let description = shared::cut(
                    &shared::one_line(&s.description),
                    MAX_INDEX_DESCRIPTION_BYTES,
                );
                format!("- {}: {description}", s.name)
            })
            .collect();
        let more = self.skills.len().saturating_sub(MAX_INDEXED_SKILLS);
        if more > 0 {
            lines.push(format!(
                "({more} more skills not listed; the user can name one with /NAME)"
            ));
        }
        Some(lines.join("\n"))
    }
}
