//! The configuration as it is now. `config.toml` is read again when its
//! stamp (size, times, inode) changed: before each `session.start` and
//! `session.configure`, on every supervisor tick and on `reload`. New
//! sessions take what is current; a running session keeps what it started
//! with until it switches (`session.configure`). An edit that does not
//! parse changes nothing: the last good configuration runs on and the
//! error is told to every client that starts a session.

use crate::agent::Limits;
use crate::config::Config;
use crate::provider::presets::ProviderDef;
use crate::sandbox::Sandbox;
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Keys read once, when the daemon starts: a change waits for the next
/// start (the stores, the exporter and the listener are made then).
const NEEDS_RESTART: &[&str] = &[
    "workspace",
    "max_connections",
    "initialize_timeout_ms",
    "session_store",
    "session_retention_days",
    "max_session_store_bytes",
    "checkpoints",
    "max_checkpoint_store_bytes",
    "otel_endpoint",
    "otel_log_content",
];

/// One reading of the configuration and what is made from it.
pub(crate) struct Current {
    pub config: Arc<Config>,
    pub limits: Arc<Limits>,
    /// The sandbox of sessions started with this configuration (its roots,
    /// network and the tool environment without this file's key
    /// variables).
    pub sandbox: Arc<Sandbox>,
    /// Provider keys by variable name, from the server's environment as it
    /// started.
    keys: HashMap<String, String>,
}

impl Current {
    fn new(config: Config, scv_home: &Path, launch_env: &[(OsString, OsString)]) -> Current {
        Current {
            keys: config.api_keys(launch_env),
            sandbox: Arc::new(Sandbox::new(&config, scv_home, launch_env)),
            limits: Arc::new(Limits::from_config(&config)),
            config: Arc::new(config),
        }
    }

    /// The key for `def`, if its variable was set.
    pub(crate) fn api_key(&self, def: &ProviderDef) -> Option<String> {
        def.api_key_env
            .as_ref()
            .and_then(|var| self.keys.get(var))
            .cloned()
    }
}

/// What a file's metadata says about its content; `None`: no file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    inode: u64,
}

fn stamp(path: &Path) -> std::io::Result<Option<Stamp>> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(Some(Stamp {
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            inode: meta.ino(),
        })),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// What one look at the file found.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Reread {
    /// Keys whose new values new sessions use.
    pub changed: Vec<String>,
    /// Keys that changed but wait for the daemon's next start.
    pub needs_restart: Vec<String>,
}

impl Reread {
    pub(crate) fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.needs_restart.is_empty()
    }
}

struct State {
    current: Arc<Current>,
    /// The file's stamp when it was last read (successfully or not).
    stamp: Option<Stamp>,
    /// What the current configuration was read from, for diffs.
    table: toml::Table,
    /// What the last `reload` answer was about (at first: the file as the
    /// server started with it), so a reload names what changed since the
    /// previous one even when a tick already applied it.
    reported: toml::Table,
    /// Why the file as it is now is not used.
    problem: Option<String>,
}

pub(crate) struct LiveConfig {
    path: PathBuf,
    scv_home: PathBuf,
    launch_env: Arc<[(OsString, OsString)]>,
    state: Mutex<State>,
}

impl LiveConfig {
    /// `config` is what was read from `scv_home/config.toml` at start-up.
    pub(crate) fn new(
        config: Config,
        scv_home: &Path,
        launch_env: &[(OsString, OsString)],
    ) -> LiveConfig {
        let path = scv_home.join("config.toml");
        let stamp = stamp(&path).ok().flatten();
        let table = config.table.clone();
        LiveConfig {
            state: Mutex::new(State {
                current: Arc::new(Current::new(config, scv_home, launch_env)),
                stamp,
                reported: table.clone(),
                table,
                problem: None,
            }),
            path,
            scv_home: scv_home.to_path_buf(),
            launch_env: launch_env.into(),
        }
    }

    /// The configuration new sessions use.
    pub(crate) fn current(&self) -> Arc<Current> {
        self.lock().current.clone()
    }

    /// The file, what `reread` found changed, why it is not used (if it
    /// is not) and its warnings; `None` when there is nothing to say and
    /// `reload` did not ask (a plain status stays as it was).
    pub(crate) fn state(&self, reread: Option<Reread>) -> Option<scv_protocol::ConfigState> {
        let state = self.lock();
        let quiet = state.problem.is_none() && state.current.config.warnings.is_empty();
        if reread.is_none() && quiet {
            return None;
        }
        let reread = reread.unwrap_or_default();
        Some(scv_protocol::ConfigState {
            path: self.path.display().to_string(),
            changed: reread.changed,
            needs_restart: reread.needs_restart,
            error: state.problem.clone(),
            warnings: state.current.config.warnings.clone(),
        })
    }

    /// What a client starting a session is told about the file: its error
    /// (and that the last good configuration runs) and its warnings.
    pub(crate) fn warnings(&self) -> Vec<String> {
        let state = self.lock();
        let mut out = Vec::new();
        if let Some(problem) = &state.problem {
            out.push(format!(
                "{problem} (the server runs on with the configuration it had; fix the file and start a new session)"
            ));
        }
        out.extend(state.current.config.warnings.iter().cloned());
        out
    }

    /// Reads the file again if it changed since it was last read. Blocking
    /// (a stat, and on a change a read and the sandbox probe): call it off
    /// the async threads ([`LiveConfig::refresh`]).
    pub(crate) fn reread(&self) -> Reread {
        let now = match stamp(&self.path) {
            Ok(now) => now,
            Err(err) => {
                self.lock().problem = Some(format!("cannot read {}: {err}", self.path.display()));
                return Reread::default();
            }
        };
        if self.lock().stamp == now {
            return Reread::default();
        }
        let loaded = match now {
            None => Ok(Config::default()),
            Some(_) => Config::load_from(&self.path),
        };
        match loaded {
            Ok(config) => {
                let table = config.table.clone();
                let current = Arc::new(Current::new(config, &self.scv_home, &self.launch_env));
                let mut state = self.lock();
                let reread = diff(&state.table, &table);
                for warning in &current.config.warnings {
                    tracing::warn!("{warning}");
                }
                tracing::info!(
                    "{} read again: changed {:?}, waiting for a restart {:?}",
                    self.path.display(),
                    reread.changed,
                    reread.needs_restart
                );
                state.current = current;
                state.table = table;
                state.stamp = now;
                state.problem = None;
                reread
            }
            Err(err) => {
                let problem = format!("{err:#}");
                tracing::warn!("{problem}; the configuration in use is unchanged");
                let mut state = self.lock();
                state.stamp = now;
                state.problem = Some(problem);
                Reread::default()
            }
        }
    }

    /// For a `reload` answer: the keys changed since the previous reload
    /// (or the start), however they were applied; the next reload counts
    /// from here.
    pub(crate) fn since_reload(&self) -> Reread {
        let mut state = self.lock();
        let reread = diff(&state.reported, &state.table);
        state.reported = state.table.clone();
        reread
    }

    /// [`LiveConfig::reread`] on the blocking pool (a refused thread
    /// leaves the configuration as it was).
    pub(crate) async fn refresh(self: &Arc<Self>) -> Reread {
        let live = self.clone();
        crate::blocking::run(move || live.reread())
            .await
            .unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is replaced whole; a panic elsewhere cannot leave it
        // half-written.
        crate::sync::lock(&self.state)
    }
}

/// The top-level keys whose values differ between `old` and `new`.
fn diff(old: &toml::Table, new: &toml::Table) -> Reread {
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut reread = Reread::default();
    for key in keys
        .into_iter()
        .filter(|key| old.get(*key) != new.get(*key))
    {
        if NEEDS_RESTART.contains(&key.as_str()) {
            reread.needs_restart.push(key.clone());
        } else {
            reread.changed.push(key.clone());
        }
    }
    reread
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn a_diff_names_added_removed_and_changed_keys_and_what_waits_for_a_restart() {
        let reread = diff(
            &table("model = \"a\"\nmax_steps = 3\nworkspace = \"/x\"\n"),
            &table("model = \"b\"\nmax_steps = 3\nauto_approve = []\n"),
        );
        assert_eq!(reread.changed, ["auto_approve", "model"]);
        assert_eq!(reread.needs_restart, ["workspace"]);
        assert!(diff(&table("a = 1"), &table("a = 1")).is_empty());
    }

    #[test]
    fn an_edit_is_read_once_and_a_broken_one_keeps_the_last_good_configuration() {
        let home = tempfile::tempdir().unwrap();
        let path = home.path().join("config.toml");
        std::fs::write(&path, "max_steps = 5\n").unwrap();
        let live = LiveConfig::new(Config::load(home.path()).unwrap(), home.path(), &[]);
        assert!(live.reread().is_empty(), "nothing changed yet");
        std::fs::write(&path, "max_steps = 7\nauto_aprove = []\n").unwrap();
        let reread = live.reread();
        assert_eq!(reread.changed, ["auto_aprove", "max_steps"]);
        assert_eq!(live.current().limits.max_steps, 7);
        assert!(live.warnings()[0].contains("did you mean `auto_approve`?"));
        // A reload names what changed since the start, although the edit
        // was applied already; the next one, nothing.
        assert_eq!(live.since_reload().changed, ["auto_aprove", "max_steps"]);
        assert!(live.since_reload().is_empty());
        std::fs::write(&path, "max_steps = [\n").unwrap();
        assert!(live.reread().is_empty());
        assert_eq!(live.current().limits.max_steps, 7, "the old one runs on");
        let warnings = live.warnings();
        assert!(warnings[0].contains("config.toml"), "{warnings:?}");
        assert!(
            warnings[0].contains("line 2: invalid array"),
            "{warnings:?}"
        );
        std::fs::remove_file(&path).unwrap();
        live.reread();
        assert_eq!(live.current().limits.max_steps, 32, "the defaults");
        assert!(live.warnings().is_empty());
    }
}
