//! Custom slash commands, Agent Skills and subagent definitions for one
//! workspace: finding them, reading them, and expanding `/NAME args` into a
//! prompt. A pure library:
//! [`Catalog::load`] reads folders with blocking `std::fs`, and nothing
//! here runs anything.
//!
//! # Where they are found
//!
//! First found wins on a name clash; each loser is a [`Diagnostic`] saying
//! which file shadows it.
//!
//! - **Commands** (Claude Code's command files): `*.md` in
//!   `WORKSPACE/.scv/commands/`, `WORKSPACE/.claude/commands/`,
//!   `SCV_HOME/commands/`, named by the file stem (`[A-Za-z0-9_:.-]+`).
//!   Subfolders (up to 3 levels) namespace without renaming, as Claude Code
//!   documents: `.claude/commands/frontend/component.md` is `/component`,
//!   described "(project:frontend)". Frontmatter is optional: `description`
//!   (else the body's first line), `argument-hint`, `allowed-tools`,
//!   `model`; other keys are accepted and ignored (Claude Code has more).
//! - **Skills** (the Agent Skills format): `SKILL.md` in each folder of
//!   `WORKSPACE/.scv/skills/`, `WORKSPACE/.claude/skills/`,
//!   `SCV_HOME/skills/`, with required `name` and `description`; see
//!   [`Skill`] for what is checked.
//! - **Agents** (Claude Code's subagent files): `*.md` directly in
//!   `WORKSPACE/.scv/agents/`, `WORKSPACE/.claude/agents/`,
//!   `SCV_HOME/agents/` (subfolders are not entered), with required `name`
//!   (a skill's rules) and `description`; optional `tools` (a
//!   comma-separated string or a list; absent, the parent's tools),
//!   `model`, and SCV's `sandbox: read-only`. The body is the subagent's
//!   system prompt and must not be empty; see [`Agent`].
//!
//! Files must be valid UTF-8 and at most [`MAX_FILE_BYTES`]; symlinked
//! files are read, symlinked folders inside a commands tree are not
//! entered. The frontmatter is a strict YAML subset (one-line scalars,
//! quoted or not, lists, one level of map, `|`/`>` blocks); anything else is
//! a [`Diagnostic`] with its line and the file is skipped. At most
//! [`MAX_COMMANDS`] commands, [`MAX_SKILLS`] skills and [`MAX_AGENTS`]
//! agents are loaded.
//!
//! # Expansion
//!
//! `$ARGUMENTS` is the whole argument string (trimmed); `$1`…`$9` are the
//! arguments split like a shell (whitespace, `"…"` and `'…'` grouping), a
//! missing one empty; `$10` is `$1` then `0`. A body with no placeholder gets
//! "\n\nARGUMENTS: …" appended when arguments are given, as Claude Code does.
//! A skill's prompt is a short instruction, a header naming its folder, and
//! its body (substituted the same way).
//!
//! **Nothing is executed or inlined.** Claude Code runs ``!`command` ``
//! lines through bash and inlines `@file` references when it expands a
//! command; here both are left as text. A command file comes from the
//! repository being worked on, and running what it says when someone types
//! its name would be code execution from a repository without approval:
//! the model sees the text and asks for tools like for any other request.

mod agents;
mod catalog;
mod commands;
mod expand;
mod frontmatter;
mod shared;
mod skills;

pub use agents::{Agent, MAX_AGENTS};
pub use catalog::{
    Catalog, Roots, MAX_INDEXED_AGENTS, MAX_INDEXED_SKILLS, MAX_INDEX_DESCRIPTION_BYTES,
};
pub use commands::{Command, MAX_COMMANDS};
pub use expand::{ExpandError, Expansion, Kind, Unknown};
pub use shared::{Diagnostic, Scope, MAX_FILE_BYTES};
pub use skills::{Skill, MAX_SKILLS, MAX_SKILL_BYTES};

#[cfg(test)]
mod tests;
