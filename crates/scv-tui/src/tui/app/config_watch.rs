//! `config.toml` changed after the session in view opened (issue 43, A8).
//! An open session keeps the configuration it started with (provider,
//! model, limits, sandbox, tools); only the budgets reach it, since each
//! turn reads them again. So an edit of anything else is said on the
//! status line: "config changed: /new to use it". The local daemon's
//! file only (a remote one's is not ours to read); checked at most once a
//! second, by its size, times and inode, read whole (a config file is
//! small; past [`MAX_CONFIG_BYTES`] it is not read and nothing is said).

use super::App;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How often the file's metadata is looked at.
const EVERY: Duration = Duration::from_secs(1);

/// A larger file is not read (the server's own bound is larger still;
/// nothing is said about such a file).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The keys an open session takes from an edit (each turn's budgets).
const TAKEN_LIVE: &[&str] = &[
    "max_session_cost_usd",
    "max_daily_cost_usd",
    "max_turn_tokens",
];

/// The file as the session in view opened with it.
#[derive(Debug, Clone)]
pub(crate) struct ConfigWatch {
    path: PathBuf,
    stamp: Option<(u64, i128, u64)>,
    opened_with: Option<toml::Table>,
    next: Instant,
}

fn stamp(path: &PathBuf) -> Option<(u64, i128, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    Some((meta.len(), mtime, meta.ino()))
}

/// The file's settings an open session does not take: parsed, the live
/// keys left out; `None` for a missing, oversized or unparsable file.
fn settings(path: &PathBuf) -> Option<toml::Table> {
    if std::fs::metadata(path).ok()?.len() > MAX_CONFIG_BYTES {
        return None;
    }
    let mut table: toml::Table = std::fs::read_to_string(path).ok()?.parse().ok()?;
    for key in TAKEN_LIVE {
        table.remove(*key);
    }
    Some(table)
}

impl ConfigWatch {
    pub(crate) fn new(path: PathBuf, now: Instant) -> ConfigWatch {
        ConfigWatch {
            stamp: stamp(&path),
            opened_with: settings(&path),
            path,
            next: now + EVERY,
        }
    }

    /// Whether the file now holds settings the session did not open with
    /// (`None`: not looked at yet, or unchanged on disk).
    fn changed(&mut self, now: Instant) -> Option<bool> {
        if now < self.next {
            return None;
        }
        self.next = now + EVERY;
        let stamp = stamp(&self.path);
        if stamp == self.stamp {
            return None;
        }
        self.stamp = stamp;
        // A file that does not parse: the server runs on the last good
        // one and says so at the next session's start.
        let now_settings = settings(&self.path)?;
        Some(self.opened_with.as_ref() != Some(&now_settings))
    }
}

impl App {
    /// The session in view opened: what it took from the local daemon's
    /// `config.toml` is remembered.
    pub(super) fn watch_config(&mut self) {
        self.config_changed = false;
        self.config_watch = self
            .config_file
            .clone()
            .map(|path| ConfigWatch::new(path, self.now));
    }

    /// Looks at `config.toml` (at most once a second); true when what the
    /// status line says changed.
    pub fn check_config(&mut self, now: Instant) -> bool {
        let Some(changed) = self.config_watch.as_mut().and_then(|w| w.changed(now)) else {
            return false;
        };
        let before = self.config_changed;
        self.config_changed = changed;
        before != changed
    }
}
