//! Workspace trust: a repository is input, not configuration.
//!
//! Files a repository ships can configure what runs: hooks
//! (`.scv/hooks.json`, `hooks` in `.claude/settings.json` and
//! `settings.local.json`), MCP servers (`.mcp.json`), permission rules
//! (`permissions` in those settings files). None of them runs or applies
//! until the user trusts the workspace — `trusted_workspaces` in
//! `$SCV_HOME/config.toml`, which only the user edits (`scv trust`, or the
//! TUI's prompt); a workspace's own files never trust it.
//!
//! Trust covers what the user saw. When a workspace is trusted, SCV keeps
//! a digest (SHA-256) of each of its repository configuration files in
//! `$SCV_HOME/trust.json`; a file changed or added since — by anyone, the
//! model included — does not run or apply until the user trusts the
//! workspace again. An entry written into config.toml by hand trusts the
//! files as they are when SCV first reads them. Digests never live in the
//! workspace.
//!
//! This module is the record and the decision; it reads nothing on the
//! model's behalf: the server hands [`decide`] the bytes it read (beneath
//! the workspace, once) and parses exactly those.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The repository configuration files, relative to the workspace.
pub const REPOSITORY_FILES: &[&str] = &[
    ".scv/hooks.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".mcp.json",
];

/// The largest repository configuration file read.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The most workspaces `trust.json` records; past it the least recently
/// trusted go first (they are asked about again).
pub const MAX_RECORDS: usize = 10_000;

/// The config key.
pub const CONFIG_KEY: &str = "trusted_workspaces";

const RECORDS_FILE: &str = "trust.json";

/// One repository configuration file as read now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoFile {
    /// Relative to the workspace (one of [`REPOSITORY_FILES`]).
    pub rel: String,
    pub bytes: Vec<u8>,
    /// Its inode's last change (`st_ctime`, unix seconds), which no
    /// process can set back.
    pub changed: Option<u64>,
}

impl RepoFile {
    pub fn digest(&self) -> String {
        digest(&self.bytes)
    }
}

/// Whether one file may run or apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileTrust {
    Trusted,
    /// The workspace is not trusted.
    Untrusted,
    /// Changed (or added) since the workspace was trusted.
    Changed,
}

impl FileTrust {
    pub fn as_str(self) -> &'static str {
        match self {
            FileTrust::Trusted => "trusted",
            FileTrust::Untrusted => "untrusted",
            FileTrust::Changed => "changed",
        }
    }
}

/// What the trust of a workspace decides for its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub workspace: PathBuf,
    /// An entry of `trusted_workspaces` covers it.
    pub trusted: bool,
    pub files: Vec<(RepoFile, FileTrust)>,
}

impl Decision {
    /// The file `rel`'s bytes, when it is there and may run or apply.
    pub fn usable(&self, rel: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(file, trust)| file.rel == rel && *trust == FileTrust::Trusted)
            .map(|(file, _)| file.bytes.as_slice())
    }

    /// The files that were skipped, with why.
    pub fn skipped(&self) -> impl Iterator<Item = (&RepoFile, FileTrust)> {
        self.files
            .iter()
            .filter(|(_, trust)| *trust != FileTrust::Trusted)
            .map(|(file, trust)| (file, *trust))
    }
}

/// What `trust.json` holds.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Records {
    #[serde(default)]
    pub workspaces: BTreeMap<String, Record>,
    /// When each entry of `trusted_workspaces` was trusted (by `scv
    /// trust`) or first seen (written by hand), unix seconds: a workspace
    /// beneath it with no record of its own trusts only the files that
    /// were there then.
    #[serde(default)]
    pub entries: BTreeMap<String, u64>,
}

/// What the user trusted of one workspace, and when.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Record {
    pub trusted_unix_seconds: u64,
    /// SHA-256 of each repository configuration file, by relative path.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether an entry of `trusted` covers `workspace` (a directory covers
/// everything beneath it).
pub fn covered(trusted: &[PathBuf], workspace: &Path) -> bool {
    covering(trusted, workspace).is_some()
}

/// The entry of `trusted` that covers `workspace` (the nearest).
fn covering<'a>(trusted: &'a [PathBuf], workspace: &Path) -> Option<&'a PathBuf> {
    trusted
        .iter()
        .filter(|dir| workspace.starts_with(dir))
        .max_by_key(|dir| dir.components().count())
}

/// Decides which of `files` (the workspace's repository configuration as
/// read now) may run or apply. A workspace covered by `trusted` with no
/// record of its own is recorded with the files that were there when its
/// entry was trusted or first seen (an entry written by hand trusts what
/// it covers as it was then); a file changed or added since — by the
/// model in a new folder beneath a trusted one, say — is not.
pub fn decide(
    scv_home: &Path,
    trusted: &[PathBuf],
    workspace: &Path,
    files: Vec<RepoFile>,
) -> Decision {
    let Some(entry) = covering(trusted, workspace) else {
        return Decision {
            workspace: workspace.to_path_buf(),
            trusted: false,
            files: files
                .into_iter()
                .map(|f| (f, FileTrust::Untrusted))
                .collect(),
        };
    };
    let key = workspace.display().to_string();
    let record = match with_records(scv_home, |records| {
        let since = *records
            .entries
            .entry(entry.display().to_string())
            .or_insert_with(crate::time::unix_seconds);
        if !records.workspaces.contains_key(&key) {
            let there_then: Vec<RepoFile> = files
                .iter()
                .filter(|f| f.changed.is_none_or(|changed| changed <= since))
                .cloned()
                .collect();
            records
                .workspaces
                .insert(key.clone(), record_of(&there_then));
        }
        records.workspaces.get(&key).cloned()
    }) {
        Ok(record) => record,
        Err(err) => {
            // Without the record nothing can be checked: nothing runs.
            tracing_like_warn(&format!("cannot read {RECORDS_FILE}: {err}"));
            None
        }
    };
    let files = files
        .into_iter()
        .map(|file| {
            let trust = match &record {
                Some(record) if record.files.get(&file.rel) == Some(&file.digest()) => {
                    FileTrust::Trusted
                }
                _ => FileTrust::Changed,
            };
            (file, trust)
        })
        .collect();
    Decision {
        workspace: workspace.to_path_buf(),
        trusted: true,
        files,
    }
}

/// Trusts `workspace` (canonical) with `files` as they are now: adds it to
/// `trusted_workspaces` in config.toml unless an entry covers it already,
/// and records the files' digests. Returns whether config.toml changed.
pub fn trust(scv_home: &Path, workspace: &Path, files: &[RepoFile]) -> Result<bool, String> {
    let added = edit_config(scv_home, |list| {
        if covered(list, workspace) {
            false
        } else {
            list.push(workspace.to_path_buf());
            true
        }
    })?;
    with_records(scv_home, |records| {
        if added {
            records
                .entries
                .insert(workspace.display().to_string(), crate::time::unix_seconds());
        }
        records
            .workspaces
            .insert(workspace.display().to_string(), record_of(files));
    })?;
    Ok(added)
}

/// SCV itself rewrote the repository configuration file `rel` of a
/// trusted `workspace` for the user (a rule kept with
/// `permissions.keep`): its record moves from `before` (the digest of
/// what was there, `None`: no file) to `after`, so the user's own change
/// does not ask for trust again. Refused when the record does not hold
/// `before` (the file was not trusted as it was): nothing else is
/// trusted by this.
pub fn rerecord(
    scv_home: &Path,
    workspace: &Path,
    rel: &str,
    before: Option<&str>,
    after: &[u8],
) -> Result<(), String> {
    with_records(scv_home, |records| {
        let record = records
            .workspaces
            .get_mut(&workspace.display().to_string())
            .ok_or_else(|| format!("{} is not trusted", workspace.display()))?;
        if record.files.get(rel).map(String::as_str) != before {
            return Err(format!(
                "{rel} changed since the workspace was trusted; trust it again first (`scv trust`)"
            ));
        }
        record.files.insert(rel.to_string(), digest(after));
        Ok(())
    })?
}

/// What `revoke` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoked {
    /// The entry was removed (and the records beneath it).
    Removed,
    /// No entry is `dir`, but this one covers it.
    CoveredBy(PathBuf),
    /// Nothing trusted it.
    NotTrusted,
}

/// Takes `dir` out of `trusted_workspaces` and forgets the records of the
/// workspaces beneath it.
pub fn revoke(scv_home: &Path, dir: &Path) -> Result<Revoked, String> {
    let mut outcome = Revoked::NotTrusted;
    edit_config(scv_home, |list| {
        let before = list.len();
        list.retain(|entry| entry != dir);
        if list.len() != before {
            outcome = Revoked::Removed;
            return true;
        }
        if let Some(parent) = list.iter().find(|entry| dir.starts_with(entry)) {
            outcome = Revoked::CoveredBy(parent.clone());
        }
        false
    })?;
    if outcome == Revoked::Removed {
        with_records(scv_home, |records| {
            records
                .workspaces
                .retain(|ws, _| !Path::new(ws).starts_with(dir));
            records.entries.remove(&dir.display().to_string());
        })?;
    }
    Ok(outcome)
}

/// `trusted_workspaces` as config.toml says now (an unreadable or
/// malformed file trusts nothing).
pub fn trusted_dirs(scv_home: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(scv_home.join("config.toml")) else {
        return Vec::new();
    };
    let Ok(doc) = text.parse::<toml_edit::DocumentMut>() else {
        return Vec::new();
    };
    list_of(&doc)
}

/// `trust.json` as it is now.
pub fn records(scv_home: &Path) -> Records {
    read_records(&scv_home.join(RECORDS_FILE)).unwrap_or_default()
}

/// The repository configuration files of `workspace` as they are now, read
/// plainly (for `scv trust`: the user's own terminal, on a directory they
/// named; the server reads beneath the workspace instead).
pub fn read_files(workspace: &Path) -> Vec<RepoFile> {
    REPOSITORY_FILES
        .iter()
        .filter_map(|rel| {
            let path = workspace.join(rel);
            let meta = std::fs::metadata(&path).ok()?;
            if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
                return None;
            }
            let mut bytes = Vec::new();
            std::fs::File::open(&path)
                .ok()?
                .take(MAX_FILE_BYTES)
                .read_to_end(&mut bytes)
                .ok()?;
            Some(RepoFile {
                rel: rel.to_string(),
                bytes,
                changed: u64::try_from(std::os::unix::fs::MetadataExt::ctime(&meta)).ok(),
            })
        })
        .collect()
}

/// What one repository configuration file would enable, in words.
pub fn enables(file: &RepoFile) -> Vec<String> {
    let Ok(value) = serde_json::from_slice::<Value>(&file.bytes) else {
        return vec!["not valid JSON".into()];
    };
    let mut out = Vec::new();
    if let Some(hooks) = value.get("hooks").and_then(Value::as_object) {
        let events: Vec<String> = hooks
            .iter()
            .map(|(event, groups)| {
                let count: usize = groups
                    .as_array()
                    .map(|groups| {
                        groups
                            .iter()
                            .map(|g| g.get("hooks").and_then(Value::as_array).map_or(0, Vec::len))
                            .sum()
                    })
                    .unwrap_or(0);
                format!("{event} ({count})")
            })
            .collect();
        if !events.is_empty() {
            out.push(format!("hooks: {}", events.join(", ")));
        }
    }
    if let Some(servers) = value.get("mcpServers").and_then(Value::as_object) {
        let names: Vec<&str> = servers.keys().map(String::as_str).collect();
        if !names.is_empty() {
            out.push(format!("MCP servers: {}", names.join(", ")));
        }
    }
    if let Some(permissions) = value.get("permissions").and_then(Value::as_object) {
        let rules: Vec<String> = ["allow", "ask", "deny"]
            .iter()
            .filter_map(|kind| {
                let n = permissions.get(*kind)?.as_array()?.len();
                (n > 0).then(|| format!("{kind} ({n})"))
            })
            .collect();
        if !rules.is_empty() {
            out.push(format!("permission rules: {}", rules.join(", ")));
        }
    }
    out
}

fn record_of(files: &[RepoFile]) -> Record {
    Record {
        trusted_unix_seconds: crate::time::unix_seconds(),
        files: files
            .iter()
            .map(|file| (file.rel.clone(), file.digest()))
            .collect(),
    }
}

fn list_of(doc: &toml_edit::DocumentMut) -> Vec<PathBuf> {
    doc.get(CONFIG_KEY)
        .and_then(|item| item.as_array())
        .map(|array| {
            array
                .iter()
                .filter_map(|v| v.as_str())
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .collect()
        })
        .unwrap_or_default()
}

/// Reads config.toml, lets `change` edit `trusted_workspaces` (returning
/// whether it did), and writes the file back — keeping everything else in
/// it as it was — when it did. Under the trust lock.
fn edit_config(
    scv_home: &Path,
    change: impl FnOnce(&mut Vec<PathBuf>) -> bool,
) -> Result<bool, String> {
    let _lock = Lock::take(scv_home)?;
    let path = scv_home.join("config.toml");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    let mut doc = text.parse::<toml_edit::DocumentMut>().map_err(|err| {
        format!(
            "{} does not parse, so it was not changed: {err}",
            path.display()
        )
    })?;
    let mut list = list_of(&doc);
    if !change(&mut list) {
        return Ok(false);
    }
    let mut array = toml_edit::Array::new();
    for dir in &list {
        array.push(dir.display().to_string());
    }
    doc[CONFIG_KEY] = toml_edit::value(array);
    crate::home::write_private(&path, doc.to_string().as_bytes())?;
    Ok(true)
}

/// Reads `trust.json`, lets `change` edit it, and writes it back when it
/// changed. Under the trust lock.
fn with_records<T>(scv_home: &Path, change: impl FnOnce(&mut Records) -> T) -> Result<T, String> {
    let _lock = Lock::take(scv_home)?;
    let path = scv_home.join(RECORDS_FILE);
    let mut records = read_records(&path)?;
    let before = records.clone();
    let out = change(&mut records);
    if records != before {
        while records.workspaces.len() > MAX_RECORDS {
            let oldest = records
                .workspaces
                .iter()
                .min_by_key(|(_, r)| r.trusted_unix_seconds)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(key) => records.workspaces.remove(&key),
                None => break,
            };
        }
        let json = serde_json::to_vec_pretty(&records).map_err(|e| e.to_string())?;
        crate::home::write_private(&path, &json)?;
    }
    Ok(out)
}

fn read_records(path: &Path) -> Result<Records, String> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|err| format!("{} is malformed: {err}", path.display())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Records::default()),
        Err(err) => Err(format!("cannot read {}: {err}", path.display())),
    }
}

/// Writes `bytes` to `path` whole or not at all (a temporary file renamed
/// over it), 0600, the temporary file removed on failure.
/// An exclusive lock on `$SCV_HOME/trust.lock` (the daemon and `scv trust`
/// may edit the same files).
struct Lock {
    _file: std::fs::File,
}

impl Lock {
    fn take(scv_home: &Path) -> Result<Lock, String> {
        crate::home::create_private_dir(scv_home)
            .map_err(|e| format!("cannot create {}: {e}", scv_home.display()))?;
        let path = scv_home.join("trust.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        // SAFETY: flock on a descriptor we own; released when it closes.
        if unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) } < 0 {
            return Err(format!(
                "cannot lock {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(Lock { _file: file })
    }
}

/// scv-client has no logger: a failure to read the records is written to
/// stderr (the daemon's goes to its log).
fn tracing_like_warn(message: &str) {
    eprintln!("scv: trust: {message}");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn file(rel: &str, text: &str) -> RepoFile {
        RepoFile {
            rel: rel.into(),
            bytes: text.as_bytes().to_vec(),
            changed: Some(1),
        }
    }

    #[test]
    fn an_untrusted_workspace_runs_nothing_and_a_changed_file_is_asked_again() {
        let home = tempfile::tempdir().unwrap();
        let ws = Path::new("/w/project");
        let hooks = file(".scv/hooks.json", "{}");
        let d = decide(home.path(), &[], ws, vec![hooks.clone()]);
        assert!(!d.trusted);
        assert_eq!(d.usable(".scv/hooks.json"), None);
        assert!(trust(home.path(), ws, std::slice::from_ref(&hooks)).unwrap());
        let list = trusted_dirs(home.path());
        assert_eq!(list, [PathBuf::from("/w/project")]);
        let d = decide(home.path(), &list, ws, vec![hooks.clone()]);
        assert_eq!(d.usable(".scv/hooks.json"), Some(b"{}".as_slice()));
        // Changed by the model: not used until trusted again.
        let changed = file(".scv/hooks.json", "{\"hooks\":{}}");
        let added = file(".mcp.json", "{}");
        let d = decide(home.path(), &list, ws, vec![changed.clone(), added]);
        assert_eq!(d.usable(".scv/hooks.json"), None);
        let skipped: Vec<_> = d.skipped().map(|(f, t)| (f.rel.clone(), t)).collect();
        assert_eq!(
            skipped,
            [
                (".scv/hooks.json".to_string(), FileTrust::Changed),
                (".mcp.json".to_string(), FileTrust::Changed)
            ]
        );
        // Trusted again: config.toml already covers it.
        assert!(!trust(home.path(), ws, std::slice::from_ref(&changed)).unwrap());
        let d = decide(home.path(), &list, ws, vec![changed]);
        assert!(d.usable(".scv/hooks.json").is_some());
    }

    #[test]
    fn a_hand_written_entry_trusts_the_files_as_first_read_and_config_is_kept() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "# mine\nmodel = \"m\" # the model\ntrusted_workspaces = [\"/w\"]\n",
        )
        .unwrap();
        let list = trusted_dirs(home.path());
        let ws = Path::new("/w/a");
        let d = decide(home.path(), &list, ws, vec![file(".mcp.json", "1")]);
        assert!(d.usable(".mcp.json").is_some());
        let d = decide(home.path(), &list, ws, vec![file(".mcp.json", "2")]);
        assert!(d.usable(".mcp.json").is_none());
        assert_eq!(
            revoke(home.path(), ws).unwrap(),
            Revoked::CoveredBy("/w".into())
        );
        assert_eq!(
            revoke(home.path(), Path::new("/w")).unwrap(),
            Revoked::Removed
        );
        let text = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
        assert!(
            text.contains("# mine") && text.contains("model = \"m\" # the model"),
            "{text}"
        );
        assert!(trusted_dirs(home.path()).is_empty());
        assert!(records(home.path()).workspaces.is_empty());
        assert_eq!(
            revoke(home.path(), Path::new("/w")).unwrap(),
            Revoked::NotTrusted
        );
    }

    /// F10 of the fourth pass: beneath a trusted directory, a folder with
    /// no record of its own trusts only the files that were there when the
    /// directory was trusted; one the model adds later is not.
    #[test]
    fn a_file_added_beneath_a_trusted_directory_after_it_was_trusted_is_not() {
        let home = tempfile::tempdir().unwrap();
        assert!(trust(home.path(), Path::new("/w"), &[]).unwrap());
        let list = trusted_dirs(home.path());
        let since = records(home.path()).entries["/w"];
        let old = RepoFile {
            changed: Some(since - 10),
            ..file(".scv/hooks.json", "old")
        };
        let d = decide(home.path(), &list, Path::new("/w/a"), vec![old]);
        assert!(d.usable(".scv/hooks.json").is_some());
        let planted = RepoFile {
            changed: Some(since + 10),
            ..file(".scv/hooks.json", "planted")
        };
        let d = decide(home.path(), &list, Path::new("/w/b"), vec![planted.clone()]);
        assert_eq!(d.usable(".scv/hooks.json"), None);
        assert_eq!(d.files[0].1, FileTrust::Changed);
        // Asked again: still not, until trusted.
        let d = decide(home.path(), &list, Path::new("/w/b"), vec![planted.clone()]);
        assert_eq!(d.usable(".scv/hooks.json"), None);
        trust(
            home.path(),
            Path::new("/w/b"),
            std::slice::from_ref(&planted),
        )
        .unwrap();
        let d = decide(home.path(), &list, Path::new("/w/b"), vec![planted]);
        assert!(d.usable(".scv/hooks.json").is_some());
    }

    #[test]
    fn what_a_file_enables_is_said_in_words() {
        let file = RepoFile {
            changed: None,
            rel: ".claude/settings.json".into(),
            bytes: br#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"a"},{"type":"command","command":"b"}]}],"SessionStart":[{"hooks":[{"type":"command","command":"c"}]}]},"permissions":{"allow":["Bash(ls)"]},"mcpServers":{"db":{}}}"#.to_vec(),
        };
        assert_eq!(
            enables(&file),
            [
                "hooks: PreToolUse (2), SessionStart (1)",
                "MCP servers: db",
                "permission rules: allow (1)"
            ]
        );
    }
}
