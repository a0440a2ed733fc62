//! Claude Code plugins: folders with a `.claude-plugin/plugin.json`,
//! named in `$SCV_HOME/config.toml` as `plugins = ["/abs/path", ...]` (the
//! user's own configuration: a workspace never adds one). What a plugin
//! brings, from its default folders:
//!
//! - `hooks/hooks.json` (or the file or object `plugin.json`'s `hooks`
//!   names): hooks of the user's, run with `CLAUDE_PLUGIN_ROOT` set to the
//!   plugin's folder, which the session's sandbox shows read-only;
//! - `commands/`, `skills/`, `agents/`: the user's, after `~/.claude`'s;
//! - `.mcp.json` (or `plugin.json`'s `mcpServers`): MCP servers for the
//!   session, `${CLAUDE_PLUGIN_ROOT}` and `${VAR}` expanded.
//!
//! A folder without a readable `plugin.json` is a warning, never a refused
//! session; a plugin's malformed hooks file refuses it, as the user's own
//! does. Bounded: at most [`MAX_PLUGINS`].

use std::path::{Path, PathBuf};

/// The most plugins a configuration may name.
pub(crate) const MAX_PLUGINS: usize = 32;

/// One plugin, found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plugin {
    /// Its folder (`CLAUDE_PLUGIN_ROOT`), canonical.
    pub root: PathBuf,
    /// `plugin.json`'s `name`.
    pub name: String,
    /// `plugin.json` as read.
    manifest: serde_json::Value,
}

/// The `plugins` of config.toml's top-level table: the absolute paths,
/// and a warning for anything else.
pub(crate) fn configured(table: &toml::Table) -> (Vec<PathBuf>, Vec<String>) {
    let mut warnings = Vec::new();
    let Some(value) = table.get("plugins") else {
        return (Vec::new(), warnings);
    };
    let Some(list) = value.as_array() else {
        warnings.push("config.toml: `plugins` must be a list of folder paths; ignored".into());
        return (Vec::new(), warnings);
    };
    let mut paths = Vec::new();
    for item in list {
        match item.as_str().map(Path::new) {
            Some(path) if path.is_absolute() => paths.push(path.to_path_buf()),
            _ => warnings.push(format!(
                "config.toml: plugins: {item} is not an absolute folder path; skipped"
            )),
        }
    }
    if paths.len() > MAX_PLUGINS {
        warnings.push(format!(
            "config.toml: plugins names {} folders; the first {MAX_PLUGINS} are used",
            paths.len()
        ));
        paths.truncate(MAX_PLUGINS);
    }
    (paths, warnings)
}

/// The plugins at `paths` (blocking), and a warning for each folder that
/// is not one.
pub(crate) fn read(paths: &[PathBuf]) -> (Vec<Plugin>, Vec<String>) {
    let mut plugins = Vec::new();
    let mut warnings = Vec::new();
    for path in paths {
        let manifest_path = path.join(".claude-plugin/plugin.json");
        let text = std::fs::metadata(&manifest_path)
            .map_err(|e| e.to_string())
            .and_then(|meta| {
                if meta.len() > scv_hooks::MAX_FILE_BYTES {
                    return Err("too big".to_string());
                }
                std::fs::read_to_string(&manifest_path).map_err(|e| e.to_string())
            });
        let manifest = text.and_then(|t| {
            serde_json::from_str::<serde_json::Value>(&t)
                .map_err(|e| format!("not valid JSON: {e}"))
        });
        let (manifest, root) = match (manifest, path.canonicalize()) {
            (Ok(manifest), Ok(root)) => (manifest, root),
            (Err(why), _) => {
                warnings.push(format!(
                    "plugin {}: its .claude-plugin/plugin.json cannot be used ({why}); skipped",
                    path.display()
                ));
                continue;
            }
            (_, Err(why)) => {
                warnings.push(format!("plugin {}: {why}; skipped", path.display()));
                continue;
            }
        };
        let name = manifest
            .get("name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_else(|| {
                path.file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("plugin")
            })
            .to_string();
        plugins.push(Plugin {
            root,
            name,
            manifest,
        });
    }
    (plugins, warnings)
}

impl Plugin {
    /// Its hooks file: `plugin.json`'s `hooks` when that names one (a
    /// path relative to the plugin), else `hooks/hooks.json`. `None` when
    /// `plugin.json` holds its hooks inline ([`Plugin::inline_hooks`]).
    pub(crate) fn hooks_file(&self) -> Option<PathBuf> {
        match self.manifest.get("hooks") {
            Some(serde_json::Value::String(rel)) => Some(self.root.join(rel)),
            Some(serde_json::Value::Object(_)) => None,
            _ => Some(self.root.join("hooks/hooks.json")),
        }
    }

    /// `plugin.json`'s own `hooks` object, as a hooks file's text.
    pub(crate) fn inline_hooks(&self) -> Option<String> {
        let hooks = self.manifest.get("hooks")?.as_object()?;
        Some(serde_json::json!({ "hooks": hooks }).to_string())
    }

    /// Its MCP servers as `.mcp.json` text: `plugin.json`'s `mcpServers`,
    /// else the plugin's `.mcp.json`.
    pub(crate) fn mcp_json(&self) -> Option<String> {
        if let Some(servers) = self.manifest.get("mcpServers").and_then(|s| s.as_object()) {
            return Some(serde_json::json!({ "mcpServers": servers }).to_string());
        }
        let path = self.root.join(".mcp.json");
        let meta = std::fs::metadata(&path).ok()?;
        (meta.len() <= scv_hooks::MAX_FILE_BYTES)
            .then(|| std::fs::read_to_string(&path).ok())
            .flatten()
    }
}
