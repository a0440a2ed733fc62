//! Custom slash commands, Agent Skills and subagent definitions for one
//! workspace: finding them, reading them, and expanding `/NAME args` into a
//! prompt. A pure library:
//! [`Catalog::load`] reads folders with blocking system calls, and nothing
//! here runs anything.
//!
//! # Where they are found
//!
//! First found wins on a name clash; each loser is a [`Diagnostic`] saying
//! which file shadows it. Claude Code's user folder (`~/.claude`, given as
//! [`Roots::claude_home`]) comes after `SCV_HOME`: its `commands/`,
//! `skills/` and `agents/` are the user's too. A skill wins over a command
//! of the same name (`/NAME` runs the skill), as in Claude Code.
//!
//! - **Commands** (Claude Code's command files): `*.md` in
//!   `WORKSPACE/.scv/commands/`, `WORKSPACE/.claude/commands/`,
//!   `SCV_HOME/commands/`, `~/.claude/commands/`, named by the file stem (`[A-Za-z0-9_:.-]+`).
//!   Subfolders (up to 3 levels) namespace without renaming, as Claude Code
//!   documents: `.claude/commands/frontend/component.md` is `/component`,
//!   described "(project:frontend)". Frontmatter is optional: `description`
//!   (else the body's first line), `argument-hint`, `allowed-tools`,
//!   `model`; other keys are accepted and ignored (Claude Code has more).
//! - **Skills** (the Agent Skills format): `SKILL.md` in each folder of
//!   `WORKSPACE/.scv/skills/`, `WORKSPACE/.claude/skills/`,
//!   `SCV_HOME/skills/`, `~/.claude/skills/`, with required `name` and `description`; see
//!   [`Skill`] for what is checked.
//! - **Agents** (Claude Code's subagent files): `*.md` directly in
//!   `WORKSPACE/.scv/agents/`, `WORKSPACE/.claude/agents/`,
//!   `SCV_HOME/agents/`, `~/.claude/agents/` (subfolders are not entered), with required `name`
//!   (a skill's rules) and `description`; optional `tools` (a
//!   comma-separated string or a list; absent, the parent's tools),
//!   `model`, and SCV's `sandbox: read-only`. The body is the subagent's
//!   system prompt and must not be empty; see [`Agent`].
//!
//! Files must be valid UTF-8 and at most [`MAX_FILE_BYTES`]; symlinked
//! files are read, symlinked folders inside a commands tree are not
//! entered (see below for where a link may lead). The frontmatter is a strict YAML subset (one-line scalars,
//! quoted or not, lists, one level of map, `|`/`>` blocks); anything else is
//! a [`Diagnostic`] with its line and the file is skipped. At most
//! [`MAX_COMMANDS`] commands, [`MAX_SKILLS`] skills and [`MAX_AGENTS`]
//! agents are loaded.
//!
//! # How files are opened
//!
//! Every file is opened once and read from that descriptor: it is
//! `fstat`ed there (only a regular file is read; the open is non-blocking,
//! so a FIFO is refused rather than waited on) and read to at most
//! [`MAX_FILE_BYTES`] plus one byte. Nothing is checked by name and then
//! opened by name again, so swapping a file for a link between the two has
//! no window: a `SKILL.md` is opened this way when the catalog is loaded and
//! again each time its body is read ([`Skill::load_body`], `/NAME`).
//!
//! A workspace's files and folders (`.scv/…`, `.claude/…`) are opened
//! beneath the workspace directory with `openat2(2)` and `RESOLVE_BENEATH |
//! RESOLVE_NO_MAGICLINKS`: the kernel resolves the path and refuses `..` or
//! a link that leads outside the workspace at the open itself (a
//! [`Diagnostic`] says "it leads outside the workspace"). Relative links
//! that stay inside are followed; so is a link to an absolute path inside
//! the workspace, whose target is opened beneath the workspace again.
//! Folders are listed from a descriptor opened the same way. Reading
//! `~/.aws/credentials` into a prompt because a repository linked to it
//! would leak it to the model. The user's own files (`SCV_HOME`) are opened
//! by path and may link anywhere (dotfiles are often links), but are opened
//! and read the same once-only way. Linux only (`openat2` needs 5.6).
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
//! **Nothing is executed or inlined here.** Claude Code runs ``!`command` ``
//! lines through bash and inlines `@file` references when it expands a
//! command; this crate leaves both as text (and keeps the command's
//! `allowed-tools` and `model`), and the server decides (its `inline`
//! module: sandboxed, only what `allowed-tools` covers, only the user's
//! commands or a trusted workspace's). A command file comes from the
//! repository being worked on, and running what it says when someone types
//! its name would be code execution from a repository without approval:
//! the model sees the text and asks for tools like for any other request.

mod agents;
mod catalog;
mod commands;
mod expand;
mod frontmatter;
mod open;
mod shared;
mod skills;

pub use agents::{Agent, MAX_AGENTS};
pub use catalog::{
    Catalog, Roots, MAX_INDEXED_AGENTS, MAX_INDEXED_SKILLS, MAX_INDEX_DESCRIPTION_BYTES,
    MAX_INDEX_DESCRIPTION_CHARS, MAX_SKILL_INDEX_DESCRIPTION_BYTES,
};
pub use commands::{Command, MAX_COMMANDS};
pub use expand::{ExpandError, Expansion, Kind, Unknown};
pub use shared::{Diagnostic, Scope, MAX_FILE_BYTES};
pub use skills::{Skill, MAX_SKILLS, MAX_SKILL_BYTES};

#[cfg(test)]
mod tests;
