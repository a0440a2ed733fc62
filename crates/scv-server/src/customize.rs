//! What the user's files add to a session: hooks (`$SCV_HOME/hooks.json`
//! and `WORKSPACE/.scv/hooks.json`), custom commands and skills
//! (`scv_commands`). Read when the session starts — a session never runs
//! without the hooks the user wrote, so a malformed hooks file refuses the
//! session with the file and line — and kept for its life.

use scv_commands::{Catalog, Roots};
use scv_hooks::Hooks;
use scv_protocol::{CommandInfo, CommandKind};
use std::path::{Path, PathBuf};

/// A session's hooks, commands and skills.
#[derive(Debug, Default)]
pub(crate) struct Customization {
    pub hooks: Hooks,
    pub catalog: Catalog,
    /// What `SessionStart` hooks added to the context, once they ran
    /// (before the session's first turn).
    pub started: tokio::sync::OnceCell<Vec<String>>,
    /// `SessionStart`'s `source`: `startup` or `resume`.
    pub source: &'static str,
}

/// The hooks files, in the order they apply.
pub(crate) fn hook_files(scv_home: &Path, workspace: &Path) -> [PathBuf; 2] {
    [
        scv_home.join("hooks.json"),
        workspace.join(".scv").join("hooks.json"),
    ]
}

/// Reads a session's hooks, commands and skills (blocking). The error is
/// a malformed or unreadable hooks file: "FILE:LINE:COL: what".
pub(crate) fn load(
    scv_home: &Path,
    workspace: &Path,
    source: &'static str,
) -> Result<Customization, String> {
    let hooks = Hooks::load(&hook_files(scv_home, workspace)).map_err(|err| err.to_string())?;
    let catalog = Catalog::load(&Roots {
        workspace: workspace.to_path_buf(),
        scv_home: scv_home.to_path_buf(),
    });
    for diagnostic in &catalog.diagnostics {
        tracing::warn!("{diagnostic}");
    }
    Ok(Customization {
        hooks,
        catalog,
        started: tokio::sync::OnceCell::new(),
        source,
    })
}

impl Customization {
    /// `session.started.commands`: every command, then every skill.
    pub(crate) fn infos(&self) -> Vec<CommandInfo> {
        let scope = |scope: &scv_commands::Scope| match scope {
            scv_commands::Scope::Workspace => "workspace".to_string(),
            scv_commands::Scope::User => "user".to_string(),
        };
        let commands = self.catalog.commands.iter().map(|c| CommandInfo {
            name: c.name.clone(),
            kind: CommandKind::Command,
            description: c.description.clone(),
            argument_hint: c.argument_hint.clone(),
            scope: scope(&c.scope),
        });
        let skills = self.catalog.skills.iter().map(|s| CommandInfo {
            name: s.name.clone(),
            kind: CommandKind::Skill,
            description: s.description.clone(),
            argument_hint: None,
            scope: scope(&s.scope),
        });
        commands.chain(skills).collect()
    }

    /// `session.started.command_diagnostics`.
    pub(crate) fn diagnostics(&self) -> Vec<String> {
        self.catalog
            .diagnostics
            .iter()
            .map(ToString::to_string)
            .collect()
    }
}
