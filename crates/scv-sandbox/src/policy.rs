//! What a sandboxed command may touch. The server builds one per call; it
//! travels to the tool process as one JSON argument.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Config `sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Read everything but the denied trees; write the workspace, the temp
    /// directories and `sandbox_writable_roots`.
    #[default]
    WorkspaceWrite,
    /// Read the same; write nothing but a private temp directory.
    ReadOnly,
    /// No sandbox.
    Off,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::WorkspaceWrite => "workspace-write",
            Mode::ReadOnly => "read-only",
            Mode::Off => "off",
        }
    }
}

/// Credential stores under the user's home whose contents no sandboxed
/// command may read (their names stay listable). `$SCV_HOME` is denied too.
pub const DENIED_IN_HOME: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".netrc",
    ".git-credentials",
];

/// One command's sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// `WorkspaceWrite` or `ReadOnly`; `Off` is no policy at all.
    pub mode: Mode,
    /// The session workspace (canonical).
    pub workspace: PathBuf,
    /// The system temp directories: `$TMPDIR`, `/tmp`, `/var/tmp`.
    pub temp_dirs: Vec<PathBuf>,
    /// Config `sandbox_writable_roots` (absolute).
    pub writable_roots: Vec<PathBuf>,
    /// Trees nothing may read or write.
    pub denied: Vec<PathBuf>,
    /// Config `sandbox_network`: false forbids IPv4 and IPv6 sockets.
    pub network: bool,
}

impl Policy {
    pub fn new(
        mode: Mode,
        workspace: &Path,
        writable_roots: &[PathBuf],
        network: bool,
        scv_home: &Path,
        user_home: Option<&Path>,
    ) -> Policy {
        let mut denied = vec![scv_home.to_path_buf()];
        if let Some(home) = user_home {
            denied.extend(DENIED_IN_HOME.iter().map(|name| home.join(name)));
        }
        Policy {
            mode,
            workspace: workspace.to_path_buf(),
            temp_dirs: system_temp_dirs(),
            writable_roots: writable_roots.to_vec(),
            denied,
            network,
        }
    }

    /// The policy as the tool process's argument.
    pub fn to_arg(&self) -> Result<String, crate::Error> {
        Ok(serde_json::to_string(self)?)
    }

    pub fn from_arg(arg: &str) -> Result<Policy, crate::Error> {
        Ok(serde_json::from_str(arg)?)
    }
}

/// `$TMPDIR` (else `/tmp`), `/tmp` and `/var/tmp`, without repeats.
pub fn system_temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![std::env::temp_dir()];
    for dir in ["/tmp", "/var/tmp"] {
        let dir = PathBuf::from(dir);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_policy_round_trips_through_its_argument() {
        let policy = Policy::new(
            Mode::ReadOnly,
            Path::new("/w"),
            &[PathBuf::from("/cache")],
            false,
            Path::new("/h/.scv"),
            Some(Path::new("/h")),
        );
        assert_eq!(Policy::from_arg(&policy.to_arg().unwrap()).unwrap(), policy);
        assert!(policy.denied.contains(&PathBuf::from("/h/.ssh")));
        assert!(policy.denied.contains(&PathBuf::from("/h/.scv")));
        assert_eq!(Mode::WorkspaceWrite.as_str(), "workspace-write");
    }
}
