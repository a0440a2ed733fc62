//! The one store of MCP OAuth credentials: `$SCV_HOME/mcp-auth/`, a
//! directory of mode 0700 holding one file (mode 0600) per protected
//! resource (the server's URL), named by a digest of that URL. Each file
//! holds the credentials as rmcp keeps them — with the issuer that
//! minted them, so a token is used only with the authorization server
//! that issued it (rmcp discards credentials whose issuer no longer
//! matches the discovered one) — plus the resource, the server's name and
//! a login id that a refresh keeps and a new login changes.
//!
//! Writes go to a temporary file in the same directory, synced, then
//! renamed over the old one: a reader sees the old credentials or the
//! new, never half of either, and a rotated refresh token is never lost
//! to a crash. A refresh holds an exclusive `flock` on the file's
//! `.lock` companion from the load to the save, so a login from the CLI
//! and a refresh in the daemon never interleave.

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A credentials file larger than this is refused (a token response is a
/// few KiB).
pub const MAX_CREDENTIAL_FILE_BYTES: u64 = 256 * 1024;

/// One file's contents.
#[derive(Serialize, Deserialize)]
pub(crate) struct Record {
    /// The protected resource: the server's URL as configured.
    pub resource: String,
    /// The server's name when it was logged in (for people reading it).
    pub server: String,
    /// Changes with every login, kept by refreshes: a daemon connected
    /// with one login reconnects when it changes.
    pub login: String,
    pub credentials: StoredCredentials,
}

/// The credentials of one resource, as a [`CredentialStore`].
#[derive(Clone)]
pub struct FileStore {
    file: PathBuf,
    resource: String,
    server: String,
}

/// `$SCV_HOME/mcp-auth`.
pub fn auth_dir(home: &Path) -> PathBuf {
    home.join("mcp-auth")
}

impl FileStore {
    pub fn new(home: &Path, server: &str, resource: &str) -> FileStore {
        let digest = Sha256::digest(resource.as_bytes());
        let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        FileStore {
            file: auth_dir(home).join(format!("{name}.json")),
            resource: resource.to_string(),
            server: server.to_string(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.file
    }

    /// The record, if there is one for this resource; a file that is not
    /// ours (another resource, too large, not JSON) is no record.
    pub(crate) fn read(&self) -> Result<Option<Record>, String> {
        let meta = match std::fs::metadata(&self.file) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(format!("cannot read {}: {err}", self.file.display())),
        };
        if meta.len() > MAX_CREDENTIAL_FILE_BYTES {
            return Err(format!(
                "{} is over {} KiB",
                self.file.display(),
                MAX_CREDENTIAL_FILE_BYTES / 1024
            ));
        }
        let text = match std::fs::read(&self.file) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(format!("cannot read {}: {err}", self.file.display())),
        };
        let record: Record = serde_json::from_slice(&text)
            .map_err(|err| format!("{} is not a credentials file: {err}", self.file.display()))?;
        Ok((record.resource == self.resource).then_some(record))
    }

    /// The login id, if logged in (a token is stored).
    pub fn login_id(&self) -> Option<String> {
        self.read()
            .ok()
            .flatten()
            .filter(|r| r.credentials.token_response.is_some())
            .map(|r| r.login)
    }

    /// Writes `credentials` atomically, keeping the login id unless
    /// `new_login`.
    pub(crate) fn write(
        &self,
        credentials: StoredCredentials,
        new_login: bool,
    ) -> Result<(), String> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        make_private_dir(dir)?;
        let login = match (new_login, self.read().ok().flatten()) {
            (false, Some(old)) => old.login,
            _ => fresh_login_id(),
        };
        let record = Record {
            resource: self.resource.clone(),
            server: self.server.clone(),
            login,
            credentials,
        };
        let text = serde_json::to_vec_pretty(&record).map_err(|e| e.to_string())?;
        let tmp = dir.join(format!(
            ".{}.{}.tmp",
            self.file
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("x"),
            std::process::id()
        ));
        let result = (|| -> std::io::Result<()> {
            let _ = std::fs::remove_file(&tmp);
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            file.write_all(&text)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &self.file)?;
            if let Ok(dir) = std::fs::File::open(dir) {
                let _ = dir.sync_all();
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(|err| format!("cannot write {}: {err}", self.file.display()))
    }

    /// Removes the credentials; whether there were any.
    pub fn remove(&self) -> Result<bool, String> {
        let _lock = self.lock_blocking()?;
        match std::fs::remove_file(&self.file) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(err) => Err(format!("cannot remove {}: {err}", self.file.display())),
        }
    }

    /// The exclusive lock on this resource's credentials (blocking).
    pub(crate) fn lock_blocking(&self) -> Result<std::fs::File, String> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        make_private_dir(dir)?;
        let lock = self.file.with_extension("lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock)
            .map_err(|err| format!("cannot open {}: {err}", lock.display()))?;
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own; released when it closes.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(format!(
                "cannot lock {}: {}",
                lock.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(file)
    }
}

/// Creates `dir` (mode 0700) or makes an existing one 0700.
fn make_private_dir(dir: &Path) -> Result<(), String> {
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir);
    made.map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|err| format!("cannot restrict {}: {err}", dir.display()))
}

fn fresh_login_id() -> String {
    let bytes: [u8; 12] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn store_error(why: String) -> AuthError {
    AuthError::CredentialStoreError(why)
}

#[async_trait::async_trait]
impl CredentialStore for FileStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let this = self.clone();
        let record = tokio::task::spawn_blocking(move || this.read())
            .await
            .map_err(|e| store_error(e.to_string()))?
            .map_err(store_error)?;
        Ok(record.map(|r| r.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.write(credentials, false))
            .await
            .map_err(|e| store_error(e.to_string()))?
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || match std::fs::remove_file(&this.file) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(err) => Err(format!("cannot remove {}: {err}", this.file.display())),
        })
        .await
        .map_err(|e| store_error(e.to_string()))?
        .map_err(store_error)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let this = self.clone();
        let lock = tokio::task::spawn_blocking(move || this.lock_blocking())
            .await
            .map_err(|e| store_error(e.to_string()))?
            .map_err(store_error)?;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn credentials_are_private_atomic_and_keep_their_login_across_refreshes() {
        let home = tempfile::tempdir().unwrap();
        let store = FileStore::new(home.path(), "web", "https://mcp.example.com/mcp");
        assert!(store.load().await.unwrap().is_none());
        assert_eq!(store.login_id(), None);
        let creds = StoredCredentials::new("client-1".into(), None, vec![], Some(1))
            .with_issuer(Some("https://as.example.com".into()));
        store.write(creds.clone(), true).unwrap();
        let meta = std::fs::metadata(store.path()).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let dir = std::fs::metadata(auth_dir(home.path())).unwrap();
        assert_eq!(dir.permissions().mode() & 0o777, 0o700);
        let first = store.read().unwrap().unwrap().login;
        store.save(creds.clone()).await.unwrap();
        assert_eq!(store.read().unwrap().unwrap().login, first);
        store.write(creds, true).unwrap();
        assert_ne!(store.read().unwrap().unwrap().login, first);
        let loaded = store.load().await.unwrap().unwrap();
        assert_eq!(loaded.issuer.as_deref(), Some("https://as.example.com"));
        // Another resource never reads these.
        let other = FileStore::new(home.path(), "web", "https://other.example.com/mcp");
        assert!(other.load().await.unwrap().is_none());
        assert!(store.remove().unwrap());
        assert!(!store.remove().unwrap());
        assert!(store.load().await.unwrap().is_none());
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(auth_dir(home.path()))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }
}
