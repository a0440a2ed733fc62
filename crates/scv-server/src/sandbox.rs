//! The sandbox as the server sees it: the effective mode (the kernel is
//! probed once, at start-up), the policy each `bash` call carries to its
//! tool process, and the environment every tool process gets. Enforcement
//! happens in the tool process (`tools::reaper`), never here.

use crate::config::Config;
use scv_sandbox::{Mode, Policy, Support};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) struct Sandbox {
    configured: Mode,
    /// Whether the kernel enforces it (probed only when not `off`).
    enforced: bool,
    network: bool,
    writable_roots: Vec<PathBuf>,
    scv_home: PathBuf,
    user_home: Option<PathBuf>,
    /// What every tool process sees: the server's environment at start
    /// minus credentials (`scv_sandbox::env`).
    env: Arc<[(OsString, OsString)]>,
}

impl Sandbox {
    pub fn new(config: &Config, scv_home: &Path, launch_env: &[(OsString, OsString)]) -> Sandbox {
        let enforced = match config.sandbox {
            Mode::Off => false,
            mode => match scv_sandbox::probe() {
                Support::Enforced { scoped } => {
                    if !scoped {
                        tracing::info!("sandbox: signals and abstract sockets are not scoped (Linux 6.12 does that)");
                    }
                    true
                }
                Support::Unavailable(why) => {
                    tracing::warn!(
                        "sandbox `{}` unavailable: {why}; tool commands run unconfined and none is auto-approved as sandboxed",
                        mode.as_str()
                    );
                    false
                }
            },
        };
        let keys: Vec<String> = config.secret_variables().map(String::from).collect();
        let env =
            scv_sandbox::env::tool_environment(launch_env, &keys, &config.tool_env_passthrough);
        let user_home = launch_env
            .iter()
            .find(|(name, _)| name == "HOME")
            .map(|(_, value)| PathBuf::from(value))
            .filter(|home| home.is_absolute());
        Sandbox {
            configured: config.sandbox,
            enforced,
            network: config.sandbox_network,
            writable_roots: config.sandbox_writable_roots.clone(),
            scv_home: scv_sandbox_home(scv_home),
            user_home,
            env: env.into(),
        }
    }

    /// `session.started.sandbox`: the effective mode, or `unavailable`.
    pub fn status(&self) -> &'static str {
        match (self.configured, self.enforced) {
            (Mode::Off, _) => "off",
            (mode, true) => mode.as_str(),
            (_, false) => "unavailable",
        }
    }

    /// The policy of a command in `workspace`; `None` when commands run
    /// unconfined (`off`, or unavailable).
    pub fn policy(&self, workspace: &Path) -> Option<Policy> {
        self.enforced.then(|| {
            Policy::new(
                self.configured,
                workspace,
                &self.writable_roots,
                self.network,
                &self.scv_home,
                self.user_home.as_deref(),
            )
        })
    }

    pub fn env(&self) -> Arc<[(OsString, OsString)]> {
        self.env.clone()
    }
}

/// `$SCV_HOME`, absolute (it may be given relative to where the server
/// started).
fn scv_sandbox_home(home: &Path) -> PathBuf {
    std::path::absolute(home).unwrap_or_else(|_| home.to_path_buf())
}
