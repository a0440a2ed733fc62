//! The sandbox as the server sees it: the effective mode (the kernel is
//! probed once, at start-up), what of the second wall this machine lacks,
//! the policy each `bash` call carries to its tool process, and the
//! environment every tool process gets. Enforcement happens in the tool
//! process (`reaper`), never here.

use crate::config::Config;
use scv_sandbox::{Mode, Policy, Settings, Support};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

pub(crate) struct Sandbox {
    configured: Mode,
    /// Whether the kernel enforces it (probed only when not `off`).
    enforced: bool,
    /// What of the second wall is missing here, in words; `sandboxed`
    /// auto-approval needs none.
    gaps: Vec<String>,
    settings: Settings,
    /// `sandbox_writable_roots` entries that let a command plant code the
    /// user runs later, said at every session's start.
    planting_roots: Vec<String>,
    /// What every tool process sees: the server's environment at start
    /// minus credentials and doors (`scv_sandbox::env`).
    env: Arc<[(OsString, OsString)]>,
    /// The policies live sessions hold, one copy of each (`shared`).
    held: Mutex<Vec<Weak<Policy>>>,
    /// `sandbox_allowed_domains`, for each session's proxy.
    allowed: Arc<crate::egress::allowlist::Allowlist>,
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
                    mut gaps,
                    ..
                } => {
                    if config.sandbox.max_processes > 0 {
                        if let Err(why) = cgroups() {
                            gaps.push(format!("a session's processes are not bounded: {why}"));
                        }
                    }
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
        let path: Vec<PathBuf> = launch_env
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| std::env::split_paths(value).collect())
            .unwrap_or_default();
        let planting_roots = config
            .sandbox
            .writable_roots
            .iter()
            .filter_map(|root| {
                let what = scv_sandbox::plants_code(root, user_home.as_deref(), &path)?;
                Some(format!(
                    "sandbox_writable_roots has {}, where a sandboxed command can plant code that runs outside the sandbox later: {what}; list a narrower directory, or a project-local one (CARGO_HOME, npm's --cache, PIP_CACHE_DIR in the workspace)",
                    root.display()
                ))
            })
            .collect();
        Sandbox {
            planting_roots,
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
            allowed: config.sandbox.web.allowed.clone(),
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
        let mut warnings: Vec<String> = self.holds_home(workspace).into_iter().collect();
        warnings.extend(self.planting_roots.iter().cloned());
        if self.enforced
            && self.settings.network == scv_sandbox::Network::Allowlist
            && !self.settings.mount_namespace
        {
            warnings.push(
                "sandbox_network = \"allowlist\" needs user namespaces, which this machine does not give: sandboxed commands get no network at all (as with sandbox_network = false); web_fetch still follows sandbox_allowed_domains".into(),
            );
        }
        warnings
    }

    /// Why the workspace is not made writable: it holds the user's home.
    fn holds_home(&self, workspace: &Path) -> Option<String> {
        (self.enforced
            && self.configured == Mode::WorkspaceWrite
            && scv_sandbox::holds_home(workspace, self.settings.user_home.as_deref()))
        .then(|| format!(
            "the workspace {} holds your home directory, so sandboxed commands may not write in it (they could rewrite ~/.bashrc, ~/.ssh and SCV's own settings); start SCV in a project directory",
            workspace.display()
        ))
    }

    /// The policy of a command in `workspace`; `None` when commands run
    /// unconfined (`off`, or unavailable). A workspace that holds the
    /// user's home is not made writable.
    pub(crate) fn policy(&self, workspace: &Path) -> Option<Policy> {
        if !self.enforced {
            return None;
        }
        let mut policy = Policy::new(&self.settings, workspace);
        if self.holds_home(workspace).is_some() {
            policy.mode = Mode::ReadOnly;
        }
        if policy.own_network() {
            policy.no_proxy = Some(crate::egress::allowlist::direct(&self.allowed));
        }
        Some(policy)
    }

    /// The sandbox of a session in `workspace`; `None` when its commands
    /// run unconfined. What it needs of its own (its temp directories,
    /// the repositories under its writable roots, its pids cgroup) is made
    /// at its first sandboxed command ([`SessionSandbox::policy`]).
    pub(crate) fn session(&self, workspace: &Path) -> Option<SandboxView> {
        let policy = self.policy(workspace)?;
        let egress = policy
            .own_network()
            .then(|| crate::egress::Proxy::new(self.allowed.clone()));
        Some(SandboxView {
            session: Arc::new(SessionSandbox {
                base: self.shared(policy),
                scv_home: self.settings.scv_home.clone(),
                ready: tokio::sync::OnceCell::new(),
                host: tokio::sync::OnceCell::new(),
                egress,
            }),
            read_only: false,
        })
    }

    /// `policy`, shared with the live sessions that hold an equal one. A
    /// session's two policies (its own and plan mode's, ~3 KiB each) were
    /// half of what an idle session kept, and sessions in one workspace
    /// hold equal ones. Each is still built anew at its session's start
    /// (the repository around the workspace may have changed since), so
    /// sharing never hands out a stale one. Bounded by the distinct
    /// policies live sessions hold: the dead are dropped at each call.
    pub(crate) fn shared(&self, policy: Policy) -> Arc<Policy> {
        let mut held = crate::sync::lock(&self.held);
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

/// A session's sandbox as its turns, subagents and hooks use it: the
/// session's own, or its read-only form (plan mode, read-only subagents).
#[derive(Clone)]
pub(crate) struct SandboxView {
    session: Arc<SessionSandbox>,
    read_only: bool,
}

/// Which policy a process of the session gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runs {
    /// A tool command (`bash`) or a hook of the repository's.
    Command,
    /// A hook of the user's own: the folders their scripts live in
    /// (`$SCV_HOME/hooks/`, `~/.claude/hooks/`) are shown too, read-only.
    UserHook,
}

impl SandboxView {
    /// The same session's read-only form.
    pub(crate) fn read_only(&self) -> SandboxView {
        SandboxView {
            session: self.session.clone(),
            read_only: true,
        }
    }

    /// Whether this is the read-only form (plan mode, an agent that only
    /// reads): no write, and no `unsandboxed`, is allowed.
    pub(crate) fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// This view, or its read-only form when `read_only`.
    pub(crate) fn with_read_only(&self, read_only: bool) -> SandboxView {
        if read_only {
            self.read_only()
        } else {
            self.clone()
        }
    }

    /// The same session's sandbox showing `read` too, read-only, and
    /// `write` writable (in `workspace-write`), to every process: the
    /// session's transcript and `CLAUDE_ENV_FILE` folder for its hooks,
    /// its plugins' folders. Call before its first command.
    pub(crate) fn with_roots(&self, read: &[PathBuf], write: &[PathBuf]) -> SandboxView {
        let mut base = Policy::clone(&self.session.base);
        base.readable_roots.extend(read.iter().cloned());
        base.writable_roots.extend(write.iter().cloned());
        SandboxView {
            session: Arc::new(SessionSandbox {
                egress: self
                    .session
                    .egress
                    .as_ref()
                    .map(crate::egress::Proxy::same_list),
                base: Arc::new(base),
                scv_home: self.session.scv_home.clone(),
                ready: tokio::sync::OnceCell::new(),
                host: tokio::sync::OnceCell::new(),
            }),
            read_only: self.read_only,
        }
    }

    /// Whether its commands may use the network (through the proxy, for
    /// the allowlist).
    pub(crate) fn network(&self) -> bool {
        self.session.base.network.sockets()
    }

    /// The hosts its proxy refused since the last call, each with the
    /// line that allows it.
    pub(crate) fn egress_refused(&self) -> Vec<String> {
        self.session
            .egress
            .as_ref()
            .map(crate::egress::Proxy::take_refused)
            .unwrap_or_default()
    }

    /// Starts a process of this session through its tool host (started
    /// at its first one): the policy it runs under, and its reaper.
    pub(crate) async fn spawn(
        &self,
        runs: Runs,
        request: &crate::reaper::host::Request,
        fds: [std::os::fd::OwnedFd; 4],
    ) -> Result<(CallPolicy, crate::reaper::client::Hosted), String> {
        let policy = self.policy(runs).await?;
        let host = self
            .session
            .host
            .get_or_init(|| async {
                let args: Vec<Arc<str>> = match self.session.ready.get() {
                    Some(Ok(ready)) => ready.policies.iter().map(|p| p.arg.clone()).collect(),
                    _ => return Err("the sandbox was not prepared".to_string()),
                };
                crate::reaper::ToolHost::start(&args)
                    .map_err(|err| format!("cannot start the session's tool host: {err}"))
            })
            .await
            .as_ref()
            .map_err(Clone::clone)?;
        let mut hosted = host.spawn(self.index(runs), request, fds).await?;
        if let (Some(listener), Some(proxy)) = (hosted.listener.take(), &self.session.egress) {
            proxy.serve(listener);
        }
        Ok((policy, hosted))
    }

    /// Which of the session's policies `runs` gets in this view.
    fn index(&self, runs: Runs) -> usize {
        usize::from(self.read_only) * 2 + usize::from(runs == Runs::UserHook)
    }

    /// The policy a process of this session runs under, made ready at the
    /// session's first one (off the async threads).
    pub(crate) async fn policy(&self, runs: Runs) -> Result<CallPolicy, String> {
        let ready = self
            .session
            .ready
            .get_or_init(|| {
                let session = self.session.clone();
                async move {
                    crate::blocking::run(move || Ready::make(&session))
                        .await
                        .map_err(|err| err.to_string())
                        .and_then(|made| made)
                }
            })
            .await;
        let ready = ready.as_ref().map_err(Clone::clone)?;
        Ok(ready.policies[self.index(runs)].clone())
    }
}

/// The policy of one process, and the tool process's argument naming it.
#[derive(Clone)]
pub(crate) struct CallPolicy {
    pub policy: Arc<Policy>,
    /// `@PATH` of the session's policy file.
    pub arg: Arc<str>,
}

/// One session's sandbox.
pub(crate) struct SessionSandbox {
    /// What its configuration says (shared with equal sessions).
    base: Arc<Policy>,
    scv_home: PathBuf,
    /// The process that starts its commands and hooks (`reaper::host`);
    /// before `ready`, so it goes first when the session ends (its
    /// reapers kill what they started), then the folder and cgroup.
    host: tokio::sync::OnceCell<Result<crate::reaper::ToolHost, String>>,
    ready: tokio::sync::OnceCell<Result<Ready, String>>,
    /// Its proxy (`sandbox_network = "allowlist"`): serves the listener
    /// of each network namespace its tool host makes; dropped with it.
    egress: Option<crate::egress::Proxy>,
}

/// What a session's sandbox makes of its own at its first command.
struct Ready {
    /// Command, user hook; then their read-only forms.
    policies: [CallPolicy; 4],
    /// Its folder (temp directories, policy files), removed when the
    /// session ends.
    dir: Option<tempfile::TempDir>,
    /// Its pids cgroup; what is left in it is killed when it ends.
    _cgroup: Option<scv_sandbox::SessionCgroup>,
}

impl Ready {
    fn make(session: &SessionSandbox) -> Result<Ready, String> {
        let base = &session.base;
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        sweep_once();
        // Private to the user: its /tmp is the session's, its policy files
        // say what the sandbox shows.
        let dir = tempfile::Builder::new()
            .prefix(&format!("scv-{}-", std::process::id()))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|err| format!("cannot make the session's temp directory: {err}"))?;
        for sub in ["tmp", "shm"] {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir.path().join(sub))
                .map_err(|err| format!("cannot make the session's temp directory: {err}"))?;
        }
        let mut policy = Policy::clone(base);
        policy.session_dir = Some(dir.path().to_path_buf());
        if policy.mode == Mode::WorkspaceWrite {
            let mut roots = vec![policy.workspace.clone()];
            roots.extend(policy.writable_roots.iter().cloned());
            let found = scv_sandbox::repositories(&roots);
            for root in &found.cut_short {
                tracing::warn!(
                    "sandbox: {} holds more than {} entries; repositories and hard links below that were not looked for",
                    root.display(),
                    scv_sandbox::MAX_ENTRIES
                );
            }
            if found.shared_unprotected > 0 {
                tracing::warn!(
                    "sandbox: {} more files under the writable roots are hard links to files outside them (pnpm's store?); past {} they are not made read-only, so a sandboxed command can change those outside files through them",
                    found.shared_unprotected,
                    scv_sandbox::MAX_SHARED_FILES
                );
            }
            if policy.protect_git {
                policy.git = found.git;
            }
            policy.shared_files = found.shared;
        }
        let cgroup = match (cgroups(), policy.max_processes) {
            (Ok(Some(tree)), max) if max > 0 => {
                let name = uuid::Uuid::new_v4().simple().to_string();
                let cgroup = tree
                    .session(&name, max)
                    .map_err(|err| format!("cannot make the session's pids cgroup: {err}"))?;
                policy.pids_cgroup = Some(cgroup.path().to_path_buf());
                Some(cgroup)
            }
            _ => None,
        };
        let user_hook = |mut policy: Policy| {
            policy.readable_roots.push(session.scv_home.join("hooks"));
            if let Some(home) = &policy.home {
                policy
                    .readable_roots
                    .push(home.join(".claude").join("hooks"));
            }
            // `$CLAUDE_CONFIG_DIR`, when it moves Claude Code's folder.
            if let Some(dir) = crate::claude::user_dir() {
                let hooks = dir.join("hooks");
                if !policy.readable_roots.contains(&hooks) {
                    policy.readable_roots.push(hooks);
                }
            }
            policy
        };
        let read_only = |mut policy: Policy| {
            policy.mode = Mode::ReadOnly;
            policy
        };
        let forms = [
            policy.clone(),
            user_hook(policy.clone()),
            read_only(policy.clone()),
            read_only(user_hook(policy)),
        ];
        let mut policies = Vec::with_capacity(4);
        for (i, form) in forms.into_iter().enumerate() {
            // Written once; each process reads its file (`--sandbox @PATH`).
            let path = dir.path().join(format!("policy-{i}.json"));
            let json = form
                .to_arg()
                .map_err(|err| format!("cannot write the sandbox policy: {err}"))?;
            std::fs::write(&path, json)
                .map_err(|err| format!("cannot write the sandbox policy: {err}"))?;
            policies.push(CallPolicy {
                policy: Arc::new(form),
                arg: format!("@{}", path.display()).into(),
            });
        }
        let policies: [CallPolicy; 4] = policies
            .try_into()
            .map_err(|_| "the sandbox policies were not made".to_string())?;
        Ok(Ready {
            policies,
            dir: Some(dir),
            _cgroup: cgroup,
        })
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        // A session's /tmp may hold a build tree: removed off the async
        // threads where there are some.
        if let Some(dir) = self.dir.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => drop(handle.spawn_blocking(move || drop(dir))),
                Err(_) => drop(dir),
            }
        }
    }
}

/// The server's pids subtree (made once per process, removed at its end:
/// [`release`]).
fn cgroups() -> &'static Result<Option<scv_sandbox::CgroupTree>, String> {
    TREE.get_or_init(scv_sandbox::CgroupTree::open)
}

static TREE: std::sync::OnceLock<Result<Option<scv_sandbox::CgroupTree>, String>> =
    std::sync::OnceLock::new();

/// Removes what the server made for its sandboxes that outlives its
/// sessions: its pids subtree. Called as the server ends.
pub fn release() {
    if let Some(Ok(Some(tree))) = TREE.get() {
        tree.remove();
    }
}

/// Session folders (`$TMPDIR/scv-PID-…`) of servers that are gone (killed
/// before they could remove them), removed once per process, at most 64.
fn sweep_once() {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        let stale = entries.flatten().filter(|entry| {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix("scv-"))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok());
            pid.is_some_and(|pid| {
                pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists()
            }) && entry.file_type().is_ok_and(|t| t.is_dir())
        });
        for entry in stale.take(64) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    });
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
