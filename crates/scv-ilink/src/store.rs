//! The ClawBot account store under `$SCV_HOME/clawbot/<account>/`:
//! `credentials.json` (mode 0600), `settings.json` and `delivery.json`.
//! Every write goes to a temporary file in the same directory, is synced,
//! and is renamed over the old one, so a crash leaves each file old or new.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// How many recent message ids are kept for dedupe.
pub const RECENT_IDS: usize = 512;
/// How many senders' last sessions are kept for `/resume`.
pub const CHAT_SESSIONS: usize = 256;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Credentials {
    pub bot_token: String,
    pub bot_id: String,
    /// The owner: who scanned the QR code. Unknown for legacy logins.
    pub user_id: Option<String>,
    pub base_url: String,
    pub saved_at: u64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Settings {
    #[serde(default)]
    pub enabled: bool,
    #[serde(default)]
    pub workspace: Option<String>,
    /// `"none"` or `"owner"`.
    #[serde(default = "default_remote_tools")]
    pub remote_tools: String,
}

fn default_remote_tools() -> String {
    "none".into()
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Delivery {
    /// The `get_updates_buf` cursor.
    #[serde(default)]
    pub cursor: String,
    /// Latest context token per user.
    #[serde(default)]
    pub context_tokens: BTreeMap<String, String>,
    /// Recent message ids, oldest first.
    #[serde(default)]
    pub recent_ids: VecDeque<String>,
    /// Each sender's last session that ran a turn, least recent first:
    /// what `/resume` continues after a restart.
    #[serde(default)]
    pub chat_sessions: VecDeque<ChatSession>,
}

/// A sender's stored SCV session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatSession {
    pub user_id: String,
    pub session_id: String,
    /// It was started with tools (the owner's, with `remote_tools = "owner"`).
    pub tools: bool,
}

impl Delivery {
    /// Remembers an id; false when it was seen already.
    pub fn remember(&mut self, message_id: &str) -> bool {
        if message_id.is_empty() {
            return true;
        }
        if self.recent_ids.iter().any(|id| id == message_id) {
            return false;
        }
        self.recent_ids.push_back(message_id.to_string());
        while self.recent_ids.len() > RECENT_IDS {
            self.recent_ids.pop_front();
        }
        true
    }

    /// Makes `session` its sender's last one (the least recent sender is
    /// forgotten past [`CHAT_SESSIONS`]).
    pub fn remember_session(&mut self, session: ChatSession) {
        self.chat_sessions.retain(|s| s.user_id != session.user_id);
        self.chat_sessions.push_back(session);
        while self.chat_sessions.len() > CHAT_SESSIONS {
            self.chat_sessions.pop_front();
        }
    }

    /// `user`'s last session, if one is remembered.
    pub fn session_of(&self, user: &str) -> Option<&ChatSession> {
        self.chat_sessions.iter().find(|s| s.user_id == user)
    }
}

#[derive(Debug, Clone)]
pub struct AccountStore {
    root: PathBuf,
}

impl AccountStore {
    /// The store under `scv_home/clawbot`.
    pub fn new(scv_home: &Path) -> AccountStore {
        AccountStore {
            root: scv_home.join("clawbot"),
        }
    }

    pub fn dir(&self, account: &str) -> PathBuf {
        self.root.join(account)
    }

    /// Account names with a directory, sorted.
    pub fn accounts(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| valid_account(n))
            .collect();
        names.sort();
        names
    }

    pub fn credentials(&self, account: &str) -> Option<Credentials> {
        read(&self.dir(account).join("credentials.json"))
    }

    pub fn settings(&self, account: &str) -> Settings {
        read(&self.dir(account).join("settings.json")).unwrap_or_default()
    }

    pub fn delivery(&self, account: &str) -> Delivery {
        read(&self.dir(account).join("delivery.json")).unwrap_or_default()
    }

    pub fn save_credentials(
        &self,
        account: &str,
        credentials: &Credentials,
    ) -> std::io::Result<()> {
        self.write(account, "credentials.json", credentials, 0o600, Dir::Create)
    }

    pub fn save_settings(&self, account: &str, settings: &Settings) -> std::io::Result<()> {
        self.write(account, "settings.json", settings, 0o600, Dir::Create)
    }

    /// Saves the delivery state of an account that still exists: a poll
    /// finishing after a logout removed the account must not bring its
    /// directory back (NotFound then).
    pub fn save_delivery(&self, account: &str, delivery: &Delivery) -> std::io::Result<()> {
        self.write(account, "delivery.json", delivery, 0o600, Dir::MustExist)
    }

    /// Removes credentials, delivery state and settings, all at once: the
    /// directory is first renamed out of sight (a name [`valid_account`]
    /// refuses), so a process killed mid-removal leaves either the whole
    /// account or none of it, never settings without credentials or the
    /// reverse. What a killed removal left behind is swept here too.
    pub fn remove(&self, account: &str) -> std::io::Result<()> {
        if !valid_account(account) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "invalid account name",
            ));
        }
        // Leftovers of an earlier removal cut short go first; the new name
        // is unique (a reused pid must not collide with one of them).
        self.sweep_removed();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let doomed = self
            .root
            .join(format!(".removed-{account}.{}.{nanos}", std::process::id()));
        match std::fs::rename(self.dir(account), &doomed) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
            Ok(()) => {
                if let Ok(root) = std::fs::File::open(&self.root) {
                    let _ = root.sync_all();
                }
            }
        }
        self.sweep_removed();
        Ok(())
    }

    /// Deletes what removals renamed out of sight (see [`Self::remove`]).
    fn sweep_removed(&self) {
        for entry in std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry.file_name().to_string_lossy().starts_with(".removed-") {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }

    /// The account that holds `bot_id`, if any.
    pub fn account_with_bot(&self, bot_id: &str) -> Option<String> {
        self.accounts()
            .into_iter()
            .find(|a| self.credentials(a).is_some_and(|c| c.bot_id == bot_id))
    }

    fn write<T: Serialize>(
        &self,
        account: &str,
        name: &str,
        value: &T,
        mode: u32,
        dir_policy: Dir,
    ) -> std::io::Result<()> {
        if !valid_account(account) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "invalid account name",
            ));
        }
        let dir = self.dir(account);
        if dir_policy == Dir::Create {
            // Credentials live here: every directory made on the way is 0700.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)?;
        }
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        let bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, dir.join(name))?;
        // The rename itself is durable once the directory is synced.
        if let Ok(dir) = std::fs::File::open(&dir) {
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

/// Whether a write may create the account's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Create,
    /// The account must still exist (its directory is not brought back).
    MustExist,
}

/// Account names are path components: letters, digits, `-`, `_`, `.`.
pub fn valid_account(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn round_trips_and_removes_accounts() {
        let home = tempfile::tempdir().unwrap();
        let store = AccountStore::new(home.path());
        let creds = Credentials {
            bot_token: "t".into(),
            bot_id: "b@im.bot".into(),
            user_id: Some("u@im.wechat".into()),
            base_url: "http://x".into(),
            saved_at: 1,
        };
        store.save_credentials("default", &creds).unwrap();
        let mode = std::fs::metadata(store.dir("default").join("credentials.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(store.credentials("default"), Some(creds));
        assert_eq!(
            store.account_with_bot("b@im.bot").as_deref(),
            Some("default")
        );
        assert_eq!(store.accounts(), ["default"]);
        let leftovers: Vec<_> = std::fs::read_dir(store.dir("default"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
        store.remove("default").unwrap();
        assert!(store.accounts().is_empty());
        assert!(store
            .save_settings("../evil", &Settings::default())
            .is_err());
    }

    #[test]
    fn each_sender_keeps_one_last_session_within_the_bound() {
        let mut delivery = Delivery::default();
        let session = |user: &str, id: &str| ChatSession {
            user_id: user.into(),
            session_id: id.into(),
            tools: false,
        };
        delivery.remember_session(session("u1", "s1"));
        delivery.remember_session(session("u2", "s2"));
        delivery.remember_session(session("u1", "s3"));
        assert_eq!(delivery.session_of("u1").unwrap().session_id, "s3");
        assert_eq!(delivery.chat_sessions.len(), 2);
        for i in 0..CHAT_SESSIONS {
            delivery.remember_session(session(&format!("x{i}"), "s"));
        }
        assert_eq!(delivery.chat_sessions.len(), CHAT_SESSIONS);
        assert!(delivery.session_of("u1").is_none(), "the least recent goes");
        // An old delivery.json (no chat_sessions) still reads.
        let old: Delivery = serde_json::from_str(r#"{"cursor":"c"}"#).unwrap();
        assert!(old.chat_sessions.is_empty());
    }

    #[test]
    fn a_removal_cut_short_leaves_no_half_account_and_is_swept_later() {
        let dir = tempfile::tempdir().unwrap();
        let store = AccountStore::new(dir.path());
        store.save_settings("a", &Settings::default()).unwrap();
        store.save_settings("b", &Settings::default()).unwrap();
        // What a removal killed after its rename leaves: invisible.
        std::fs::rename(store.dir("a"), dir.path().join("clawbot/.removed-a.1")).unwrap();
        assert_eq!(store.accounts(), ["b"]);
        store.remove("b").unwrap();
        assert!(store.accounts().is_empty());
        let left: Vec<_> = std::fs::read_dir(dir.path().join("clawbot"))
            .unwrap()
            .flatten()
            .collect();
        assert!(left.is_empty(), "leftovers swept: {left:?}");
        assert!(store.remove("../b").is_err());
        store.remove("never-was").unwrap();
        // A poll that ends after the removal does not bring the account back.
        assert!(store.save_delivery("b", &Delivery::default()).is_err());
        assert!(store.accounts().is_empty());
    }

    #[test]
    fn dedupe_remembers_a_bounded_window() {
        let mut delivery = Delivery::default();
        assert!(delivery.remember("1"));
        assert!(!delivery.remember("1"));
        for i in 0..RECENT_IDS {
            delivery.remember(&format!("x{i}"));
        }
        assert!(delivery.remember("1"), "old ids fall out of the window");
    }
}
