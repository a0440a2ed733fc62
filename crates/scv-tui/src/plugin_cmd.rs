//! `scv plugin add PATH|GIT-URL`, `scv plugin list`, `scv plugin remove
//! PATH|NAME`: the Claude Code plugins every session gets (`plugins` in
//! `$SCV_HOME/config.toml`, everything else in it kept as it was). A URL
//! is cloned (`git clone --depth 1`) into `$SCV_HOME/plugins/NAME`; a
//! folder is used where it is. Either must hold `.claude-plugin/plugin.json`.
//! A running daemon uses the list from the next session.

use anyhow::{anyhow, Context, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The config key.
const KEY: &str = "plugins";

/// `scv plugin add SOURCE`.
pub fn add(home: &Path, source: &str) -> Result<ExitCode> {
    let local = Path::new(source);
    let dir = if local.is_dir() {
        local
            .canonicalize()
            .with_context(|| local.display().to_string())?
    } else if is_git_url(source) {
        clone(home, source)?
    } else {
        return Err(anyhow!(
            "{source} is neither a folder nor a git URL (https://…, git@…, file://…)"
        ));
    };
    let name = plugin_name(&dir).ok_or_else(|| {
        anyhow!(
            "{} is not a Claude Code plugin: it has no readable .claude-plugin/plugin.json",
            dir.display()
        )
    })?;
    let mut list = read(home)?;
    if list.contains(&dir) {
        println!("plugin {name} ({}) is already added", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    list.push(dir.clone());
    write(home, &list)?;
    println!(
        "added plugin {name} ({}) to {}",
        dir.display(),
        home.join("config.toml").display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `scv plugin list`.
pub fn list(home: &Path) -> Result<ExitCode> {
    let list = read(home)?;
    if list.is_empty() {
        println!("no plugins (scv plugin add PATH|GIT-URL adds one)");
    }
    for dir in list {
        match plugin_name(&dir) {
            Some(name) => println!("{name}  {}", dir.display()),
            None => println!("(not a plugin now)  {}", dir.display()),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `scv plugin remove PATH|NAME` (its files stay).
pub fn remove(home: &Path, which: &str) -> Result<ExitCode> {
    let mut list = read(home)?;
    let path = Path::new(which).canonicalize().ok();
    let before = list.len();
    list.retain(|dir| {
        Some(dir) != path.as_ref()
            && dir != Path::new(which)
            && plugin_name(dir).as_deref() != Some(which)
    });
    if list.len() == before {
        return Err(anyhow!(
            "no plugin {which} in {}",
            home.join("config.toml").display()
        ));
    }
    write(home, &list)?;
    println!("removed plugin {which} (its files are left where they are)");
    Ok(ExitCode::SUCCESS)
}

fn is_git_url(source: &str) -> bool {
    source.contains("://") || source.starts_with("git@") || source.ends_with(".git")
}

/// Clones `url` into `$SCV_HOME/plugins/NAME` (NAME: the URL's last part).
fn clone(home: &Path, url: &str) -> Result<PathBuf> {
    let name: String = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()
        .unwrap_or("plugin")
        .trim_end_matches(".git")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    let name = if name.is_empty() || name.starts_with('.') {
        "plugin".to_string()
    } else {
        name
    };
    let parent = home.join("plugins");
    std::fs::create_dir_all(&parent).with_context(|| parent.display().to_string())?;
    let dir = parent.join(&name);
    if dir.exists() {
        return Err(anyhow!(
            "{} exists already; remove it, or add that folder: scv plugin add {}",
            dir.display(),
            dir.display()
        ));
    }
    let status = std::process::Command::new("git")
        .args(["clone", "--depth", "1", "--quiet", "--", url])
        .arg(&dir)
        .status()
        .context("git clone (is git installed?)")?;
    if !status.success() {
        return Err(anyhow!("git clone {url} failed ({status})"));
    }
    dir.canonicalize()
        .with_context(|| dir.display().to_string())
}

/// `plugin.json`'s `name` (the folder's name when it has none); `None`
/// when the folder has no readable `plugin.json`.
fn plugin_name(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".claude-plugin/plugin.json")).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
    let folder = dir.file_name()?.to_string_lossy().into_owned();
    Some(
        manifest
            .get("name")
            .and_then(|n| n.as_str())
            .map_or(folder, str::to_string),
    )
}

fn config_text(home: &Path) -> Result<String> {
    let path = home.join("config.toml");
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(err) => Err(anyhow!("{}: {err}", path.display())),
    }
}

/// The `plugins` of config.toml.
fn read(home: &Path) -> Result<Vec<PathBuf>> {
    let text = config_text(home)?;
    let doc = text
        .parse::<toml_edit::DocumentMut>()
        .map_err(|err| anyhow!("{}: {err}", home.join("config.toml").display()))?;
    Ok(doc
        .get(KEY)
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default())
}

/// Writes `plugins = [...]` into config.toml, the rest kept.
fn write(home: &Path, list: &[PathBuf]) -> Result<()> {
    let path = home.join("config.toml");
    let mut doc = config_text(home)?
        .parse::<toml_edit::DocumentMut>()
        .map_err(|err| anyhow!("{}: {err}", path.display()))?;
    let mut array = toml_edit::Array::new();
    for dir in list {
        array.push(dir.display().to_string());
    }
    doc[KEY] = toml_edit::value(array);
    std::fs::write(&path, doc.to_string()).with_context(|| path.display().to_string())
}
