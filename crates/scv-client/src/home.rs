//! `$SCV_HOME` (default `~/.scv`) and the default socket path inside it.

use std::path::PathBuf;

/// `$SCV_HOME` when set and non-empty, else `~/.scv`.
pub fn scv_home() -> PathBuf {
    if let Some(home) = std::env::var_os("SCV_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(home);
    }
    let user_home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    user_home.join(".scv")
}

/// `$SCV_HOME/server.sock`.
pub fn default_socket_path() -> PathBuf {
    scv_home().join("server.sock")
}
