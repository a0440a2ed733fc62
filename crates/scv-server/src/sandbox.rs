//! The sandbox as the server sees it: the effective mode (the kernel is
//! probed once, at start-up), what of the second wall this machine lacks,
//! the policy each `bash` call carries to its tool process, and the
//! environment every tool process gets. Enforcement happens in the tool
//! process (`reaper`), never here.

use crate::config::Config;
use scv_sandbox::{Mode, Policy, Settings, Support};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

pub(crate) struct Sandbox {
    configured: Mode,
    /// Whether the kernel enforces it (probed only when not `off`).
    enforced: bool,
    /// What of the second wall is missing here, in words; `sandboxed`
    /// auto-approval needs none.
    gaps: Vec<String>,
    settings: Settings,
    /// What every tool process sees: the server's environment at start
    /// minus credentials and doors (`scv_sandbox::env`).
    env: Arc<[(OsString, OsString)]>,
    /// The policies live sessions hold, one copy of each (`shared`).
    held: Mutex<Vec<Weak<Policy>>>,
}

impl Sandbox {
    pub(crate) fn new(
        config: &Config,
        scv_home: &Path,
        launch_env: &[(OsString, OsString)],
    ) -> Sandbox {
        let (enforced, mount_namespace, gaps) = match config.sandbox.mode {
            Mode::Off => (false, false, Vec::new()),
            mode => match scv_sandbox::probe() {
                Support::Enforced {
                    mount_namespace,
                    gaps,
                    ..
                } => {
                    for gap in &gaps {
                        tracing::warn!("sandbox: {gap}; `sandboxed` calls are not auto-approved");
                    }
                    (true, mount_namespace, gaps)
                }
                Support::Unavailable(why) => {
                    tracing::warn!(
                        "sandbox `{}` unavailable: {why}; tool commands run unconfined and none is auto-approved as sandboxed",
                        mode.as_str()
                    );
                    (false, false, Vec::new())
                }
            },
        };
        let keys: Vec<String> = config.secret_variables().map(String::from).collect();
        let env = scv_sandbox::env::tool_environment(
            launch_env,
            &keys,
            &config.sandbox.tool_env_passthrough,
        );
        let user_home = launch_env
            .iter()
            .find(|(name, _)| name == "HOME")
            .map(|(_, value)| PathBuf::from(value))
            .filter(|home| home.is_absolute());
        Sandbox {
            configured: config.sandbox.mode,
            enforced,
            gaps,
            settings: Settings {
                mode: config.sandbox.mode,
                writable_roots: config.sandbox.writable_roots.clone(),
                readable_roots: config.sandbox.readable_roots.clone(),
                network: config.sandbox.network,
                unix_sockets: config.sandbox.unix_sockets.clone(),
                protect_git: config.sandbox.protect_git,
                max_processes: config.sandbox.max_processes,
                mount_namespace,
                scv_home: scv_sandbox_home(scv_home),
                user_home,
            },
            env: env.into(),
            held: Mutex::new(Vec::new()),
        }
    }

    /// `session.started.sandbox`: the effective mode, or `unavailable`.
    pub(crate) fn status(&self) -> &'static str {
        match (self.configured, self.enforced) {
            (Mode::Off, _) => "off",
            (mode, true) => mode.as_str(),
            (_, false) => "unavailable",
        }
    }

    /// `session.started.sandbox_gaps`: what of the second wall this
    /// machine lacks (empty: all of it holds, or there is no sandbox).
    pub(crate) fn gaps(&self) -> &[String] {
        &self.gaps
    }

    /// Whether a sandboxed call may run without asking under `sandboxed`:
    /// the sandbox is enforced and its second wall whole.
    pub(crate) fn trusted(&self) -> bool {
        self.enforced && self.gaps.is_empty()
    }

    /// `session.started.sandbox_warnings` for a session in `workspace`.
    pub(crate) fn warnings(&self, workspace: &Path) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.enforced
            && self.configured == Mode::WorkspaceWrite
            && scv_sandbox::holds_home(workspace, self.settings.user_home.as_deref())
        {
            warnings.push(format!(
                "the workspace {} holds your home directory, so sandboxed commands may not write in it (they could rewrite ~/.bashrc, ~/.ssh and SCV's own settings); start SCV in a project directory",
                workspace.display()
            ));
        }
        warnings
    }

    /// The policy of a command in `workspace`; `None` when commands run
    /// unconfined (`off`, or unavailable). A workspace that holds the
    /// user's home is not made writable.
    pub(crate) fn policy(&self, workspace: &Path) -> Option<Policy> {
        if !self.enforced {
            return None;
        }
        let mut policy = Policy::new(&self.settings, workspace);
        if !self.warnings(workspace).is_empty() {
            policy.mode = Mode::ReadOnly;
        }
        Some(policy)
    }

    /// `policy`, shared with the live sessions that hold an equal one. A
    /// session's two policies (its own and plan mode's, ~3 KiB each) were
    /// half of what an idle session kept, and sessions in one workspace
    /// hold equal ones. Each is still built anew at its session's start
    /// (the repository around the workspace may have changed since), so
    /// sharing never hands out a stale one. Bounded by the distinct
    /// policies live sessions hold: the dead are dropped at each call.
    pub(crate) fn shared(&self, policy: Policy) -> Arc<Policy> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.retain(|weak| weak.strong_count() > 0);
        if let Some(same) = held
            .iter()
            .filter_map(Weak::upgrade)
            .find(|held| **held == policy)
        {
            return same;
        }
        let policy = Arc::new(policy);
        held.push(Arc::downgrade(&policy));
        policy
    }

    pub(crate) fn env(&self) -> Arc<[(OsString, OsString)]> {
        self.env.clone()
    }
}

/// `$SCV_HOME`, absolute (it may be given relative to where the server
/// started).
fn scv_sandbox_home(home: &Path) -> PathBuf {
    std::path::absolute(home).unwrap_or_else(|_| home.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sessions in one workspace hold one copy of their policy; another
    /// workspace or mode gets its own; a policy no session holds is
    /// forgotten.
    #[test]
    fn equal_policies_are_held_once() {
        let home = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(&Config::default(), home.path(), &[]);
        let (one, two) = (home.path().join("one"), home.path().join("two"));
        let policy = |ws: &Path| Policy::new(&sandbox.settings, ws);
        let first = sandbox.shared(policy(&one));
        let again = sandbox.shared(policy(&one));
        assert!(Arc::ptr_eq(&first, &again));
        let other = sandbox.shared(policy(&two));
        assert!(!Arc::ptr_eq(&first, &other));
        let read_only = sandbox.shared(Policy {
            mode: Mode::ReadOnly,
            ..policy(&one)
        });
        assert!(!Arc::ptr_eq(&first, &read_only));
        assert_eq!(sandbox.held.lock().unwrap().len(), 3);
        drop((first, again, other));
        let _kept = sandbox.shared(policy(&two));
        assert_eq!(
            sandbox.held.lock().unwrap().len(),
            2,
            "the dead are dropped"
        );
    }
}
