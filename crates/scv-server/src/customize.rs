//! What the user's files add to a session: hooks (`$SCV_HOME/hooks.json`
//! and Claude Code's `~/.claude/settings.json`; the repository's
//! `WORKSPACE/.scv/hooks.json`, `.claude/settings.json` and
//! `.claude/settings.local.json` in a trusted workspace: `trust`), custom
//! commands and skills (`scv_commands`). Read
//! when the session starts — a session never runs without the hooks the
//! user wrote, so a malformed hooks file of theirs (or of a repository
//! they trusted) refuses the session with the file and line — and kept for
//! its life.

use scv_client::trust::Decision;
use scv_commands::{Catalog, Roots};
use scv_hooks::{Hooks, Origin};
use scv_protocol::{CommandInfo, CommandKind};
use std::path::{Path, PathBuf};

/// A session's hooks, commands, skills and subagent definitions.
#[derive(Debug, Default)]
pub(crate) struct Customization {
    pub hooks: Hooks,
    pub catalog: Catalog,
    /// The subagent definitions it can run (`catalog.agents`, checked).
    pub agents: std::sync::Arc<[Definition]>,
    /// Why the others were skipped.
    pub agent_diagnostics: Vec<String>,
    /// What `SessionStart` hooks added to the context, once they ran
    /// (before the session's first turn).
    pub started: tokio::sync::OnceCell<Vec<String>>,
    /// `SessionStart`'s `source`: `startup` or `resume`.
    pub source: &'static str,
    /// The workspace's trust as it was decided when this was loaded.
    pub trust: Option<Decision>,
    /// Claude Code's permission rules (`permissions`).
    pub permissions: crate::permissions::Permissions,
    /// What of the settings files SCV skipped (`config_warnings`).
    pub warnings: Vec<String>,
    /// The Claude Code plugins config.toml names (`plugins`).
    pub plugins: Vec<crate::plugins::Plugin>,
    /// What custom commands grant their turns (`inline`), the last
    /// [`MAX_GRANTS`].
    pub grants: std::sync::Mutex<std::collections::VecDeque<Grant>>,
}

/// What a custom command grants the turn of its expanded prompt (the turn
/// is found by that prompt).
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    pub prompt: String,
    /// `allowed-tools` rules (only the user's commands' or a trusted
    /// workspace's).
    pub rules: Vec<String>,
    /// `model:`: the model that turn asks for.
    pub model: Option<String>,
}

impl Customization {
    /// The grant of the turn that runs `prompt`, if a command made one.
    pub(crate) fn grant_of(&self, prompt: &str) -> Option<Grant> {
        let grants = crate::sync::lock(&self.grants);
        grants.iter().find(|g| g.prompt == prompt).cloned()
    }
}

/// The most commands' grants a session keeps.
pub(crate) const MAX_GRANTS: usize = 16;

/// The repository's files that hold hooks, relative to the workspace:
/// SCV's hooks.json (which must have `hooks`), then Claude Code's settings
/// files (which need not). Each is a repository configuration file of
/// `scv_client::trust`.
const REPOSITORY_HOOKS: [(&str, bool); 3] = [
    (".scv/hooks.json", true),
    (".claude/settings.json", false),
    (".claude/settings.local.json", false),
];

/// Reads a session's hooks, commands and skills (blocking); `trusted` is
/// `trusted_workspaces`. The error is a malformed or unreadable hooks
/// file: "FILE:LINE:COL: what".
pub(crate) fn load(
    scv_home: &Path,
    workspace: &Path,
    trusted: &[PathBuf],
    plugins: &[PathBuf],
    source: &'static str,
) -> Result<Customization, String> {
    let mut hooks = Hooks::load(&[scv_home.join("hooks.json")]).map_err(|err| err.to_string())?;
    if let Some(dir) = crate::claude::user_dir() {
        let settings = Hooks::load_settings(&dir.join("settings.json"), Origin::User)
            .map_err(|err| err.to_string())?;
        hooks = bounded(hooks.merge(settings), &dir.join("settings.json"))?;
    }
    let (plugins, plugin_warnings) = crate::plugins::read(plugins);
    for plugin in &plugins {
        hooks = bounded(hooks.merge(plugin_hooks(plugin)?), &plugin.root)?;
    }
    let trust = crate::trust::decide(scv_home, trusted, workspace);
    for (rel, needs_hooks) in REPOSITORY_HOOKS {
        let Some(bytes) = trust.usable(rel) else {
            continue;
        };
        let path = workspace.join(rel);
        let text = std::str::from_utf8(bytes)
            .map_err(|_| format!("{}: not valid UTF-8", path.display()))?;
        let repository = if needs_hooks {
            Hooks::parse_from(&path, text, Origin::Repository)
        } else {
            Hooks::parse_settings(&path, text, Origin::Repository)
        }
        .map_err(|e| e.to_string())?;
        hooks = bounded(hooks.merge(repository), &path)?;
    }
    for warning in hooks.warnings() {
        tracing::warn!("hooks: {warning}");
    }
    let (permissions, mut warnings) = permissions(scv_home, workspace, &trust);
    warnings.extend(plugin_warnings);
    let catalog = Catalog::load(&Roots {
        workspace: workspace.to_path_buf(),
        scv_home: scv_home.to_path_buf(),
        claude_home: crate::claude::user_dir(),
        plugins: plugins.iter().map(|p| p.root.clone()).collect(),
    });
    for diagnostic in &catalog.diagnostics {
        tracing::warn!("{diagnostic}");
    }
    Ok(Customization {
        hooks,
        catalog,
        agents: std::sync::Arc::new([]),
        agent_diagnostics: Vec::new(),
        started: tokio::sync::OnceCell::new(),
        source,
        trust: Some(trust),
        permissions,
        warnings,
        plugins,
        grants: Default::default(),
    })
}

/// A plugin's hooks (the user's), told their plugin's folder.
fn plugin_hooks(plugin: &crate::plugins::Plugin) -> Result<Hooks, String> {
    let hooks = match (plugin.hooks_file(), plugin.inline_hooks()) {
        (Some(file), _) => Hooks::load_settings(&file, Origin::User),
        (None, Some(text)) => {
            let path = plugin.root.join(".claude-plugin/plugin.json");
            Hooks::parse_settings(&path, &text, Origin::User)
        }
        (None, None) => Ok(Hooks::default()),
    };
    Ok(hooks.map_err(|e| e.to_string())?.in_plugin(&plugin.root))
}

/// The permission rules of the user's settings (`~/.claude/settings.json`,
/// `$SCV_HOME/settings.json`) and of the trusted repository's
/// (`.claude/settings.json`, `.claude/settings.local.json`), and what
/// could not be read of them.
fn permissions(
    scv_home: &Path,
    workspace: &Path,
    trust: &Decision,
) -> (crate::permissions::Permissions, Vec<String>) {
    let mut permissions = crate::permissions::Permissions::default();
    let mut warnings = Vec::new();
    for (path, text) in permission_files(scv_home, workspace, Some(trust)) {
        permissions.add_file(&path, &text, &mut warnings);
    }
    (permissions, warnings)
}

/// The settings files whose `permissions` apply to a session in
/// `workspace`, in order, with their text: the user's
/// (`~/.claude/settings.json`, `$SCV_HOME/settings.json`), then the
/// workspace's where `trust` lets them apply.
pub(crate) fn permission_files(
    scv_home: &Path,
    workspace: &Path,
    trust: Option<&Decision>,
) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let user = crate::claude::user_dir()
        .map(|dir| dir.join("settings.json"))
        .into_iter()
        .chain([scv_home.join("settings.json")]);
    for path in user {
        let text = std::fs::File::open(&path).and_then(|file| {
            use std::io::Read;
            let mut text = String::new();
            file.take(scv_hooks::MAX_FILE_BYTES)
                .read_to_string(&mut text)
                .map(|_| text)
        });
        if let Ok(text) = text {
            files.push((path, text));
        }
    }
    for (rel, needs_hooks) in REPOSITORY_HOOKS {
        if needs_hooks {
            continue;
        }
        let usable = trust.and_then(|t| t.usable(rel));
        if let Some(text) = usable.and_then(|b| std::str::from_utf8(b).ok()) {
            files.push((workspace.join(rel), text.to_string()));
        }
    }
    files
}

/// `hooks`, unless `path` brought them over [`scv_hooks::MAX_HOOKS`].
fn bounded(hooks: Hooks, path: &Path) -> Result<Hooks, String> {
    if hooks.len() > scv_hooks::MAX_HOOKS {
        return Err(format!(
            "{}: brings the hook commands to {}; at most {} are allowed in all",
            path.display(),
            hooks.len(),
            scv_hooks::MAX_HOOKS
        ));
    }
    Ok(hooks)
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
            .chain(self.agent_diagnostics.iter().cloned())
            .collect()
    }

    /// Checks the catalog's subagent definitions against what this server
    /// can run (their tools, their models).
    /// `known_model`: whether SCV knows a model of that name.
    pub(crate) fn check_agents(&mut self, known_model: impl Fn(&str) -> bool) {
        let (agents, diagnostics) = definitions(&self.catalog.agents, known_model);
        for diagnostic in &diagnostics {
            tracing::warn!("{diagnostic}");
        }
        self.agents = agents.into();
        self.agent_diagnostics = diagnostics;
    }
}

/// A subagent definition the session may run (`.scv/agents/NAME.md`),
/// checked when the session started.
#[derive(Debug, Clone)]
pub(crate) struct Definition {
    pub name: String,
    pub description: String,
    /// SCV tool names; `None`: all of the parent's.
    pub tools: Option<Vec<String>>,
    /// `None`: the parent's (absent or `inherit`).
    pub model: Option<String>,
    pub read_only: bool,
    pub prompt: String,
}

/// Claude Code's tool names, as SCV's.
fn scv_tools(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        // A background `bash` is read and stopped with these two.
        "Bash" | "bash" => &["bash", "bash_output", "bash_kill"],
        "BashOutput" | "bash_output" => &["bash_output"],
        "KillShell" | "KillBash" | "bash_kill" => &["bash_kill"],
        "Read" | "read_file" => &["read_file"],
        "Write" | "write_file" => &["write_file"],
        "Edit" | "MultiEdit" | "edit_file" => &["edit_file"],
        "Grep" | "search" => &["search"],
        "Glob" => &["list_dir", "search"],
        "LS" | "list_dir" => &["list_dir"],
        "Skill" | "skill" => &["skill"],
        "WebFetch" | "web_fetch" => &["web_fetch"],
        "Task" | "Agent" | "task" => &["task"],
        _ => return None,
    })
}

/// `provider` asked to use `model` (an agent's or a command's `model:`):
/// a Claude Code alias is an Anthropic model, or the provider's own model
/// on another wire; any other name is used as it is.
pub(crate) fn use_model(provider: &mut crate::provider::Provider, model: &str) {
    match alias(model) {
        Some(anthropic) if provider.wire == crate::model::Wire::Anthropic => {
            provider.model = anthropic.into()
        }
        Some(_) => {}
        None => provider.model = model.into(),
    }
}

/// Claude Code's model aliases, as the Anthropic models they stand for now.
pub(crate) fn alias(model: &str) -> Option<&'static str> {
    Some(match model {
        "sonnet" => "claude-sonnet-4-5",
        "opus" => "claude-opus-4-1",
        "haiku" => "claude-haiku-4-5",
        _ => return None,
    })
}

/// The definitions of `agents` SCV can run, and a diagnostic ("FILE:
/// what") for each one skipped (an unknown model) or narrowed (tools SCV
/// does not have are dropped, as Claude Code's agents load with what
/// there is).
pub(crate) fn definitions(
    agents: &[scv_commands::Agent],
    known_model: impl Fn(&str) -> bool,
) -> (Vec<Definition>, Vec<String>) {
    let mut ok = Vec::new();
    let mut diagnostics = Vec::new();
    for agent in agents {
        let path = agent.path.display();
        let tools = match &agent.tools {
            None => None,
            Some(names) => {
                let mut tools: Vec<String> = Vec::new();
                let mut unknown = Vec::new();
                for name in names {
                    match scv_tools(name) {
                        Some(mapped) => tools.extend(mapped.iter().map(|t| t.to_string())),
                        None if name.starts_with("mcp__") => tools.push(name.clone()),
                        None => unknown.push(name.as_str()),
                    }
                }
                if !unknown.is_empty() {
                    diagnostics.push(format!(
                        "{path}: agent `{}` names tools SCV does not have ({}); it runs without them (SCV's tools: bash, read_file, write_file, edit_file, list_dir, search, bash_output, bash_kill, web_fetch, skill, task, mcp__SERVER__TOOL; Claude Code's Bash, BashOutput, KillShell, Read, Write, Edit, MultiEdit, Grep, Glob, LS, WebFetch are understood)",
                        agent.name,
                        unknown.join(", ")
                    ));
                }
                tools.dedup();
                Some(tools)
            }
        };
        let model = match agent.model.as_deref() {
            None | Some("inherit") => None,
            Some(model) if alias(model).is_some() => Some(model.to_string()),
            Some(model) if known_model(model) => Some(model.to_string()),
            Some(model) => {
                diagnostics.push(format!(
                    "{path}: agent `{}` names model `{model}`, which SCV does not know; agent skipped (use `inherit`, a provider's model, or a model with a price: add [pricing.\"{model}\"] to config.toml)",
                    agent.name
                ));
                continue;
            }
        };
        ok.push(Definition {
            name: agent.name.clone(),
            description: agent.description.clone(),
            tools,
            model,
            read_only: agent.read_only,
            prompt: agent.prompt.clone(),
        });
    }
    (ok, diagnostics)
}
