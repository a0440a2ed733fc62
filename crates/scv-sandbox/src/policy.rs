//! What a sandboxed command may touch. The server builds one per call; it
//! travels to the tool process as one JSON argument.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Config `sandbox`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Read everything but the user's home (bar its toolchains and
    /// caches) and `$SCV_HOME`; write the workspace, the temp directories
    /// and `sandbox_writable_roots`.
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

/// Config `sandbox_network`: `true` (the host's network), `false` (no IP
/// socket at all) or `"allowlist"` (a network namespace of the session's
/// own holding only loopback, where the daemon's proxy is the one way
/// out: `egress`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Network {
    #[default]
    On,
    Off,
    Allowlist,
}

impl Network {
    /// Whether commands may open IP sockets at all.
    pub fn sockets(self) -> bool {
        self != Network::Off
    }

    /// As the configuration writes it.
    pub fn as_config(self) -> &'static str {
        match self {
            Network::On => "true",
            Network::Off => "false",
            Network::Allowlist => "\"allowlist\"",
        }
    }
}

impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::On => serializer.serialize_bool(true),
            Network::Off => serializer.serialize_bool(false),
            Network::Allowlist => serializer.serialize_str("allowlist"),
        }
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Flag(bool),
            Word(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Flag(true) => Ok(Network::On),
            Raw::Flag(false) => Ok(Network::Off),
            Raw::Word(word) if word == "allowlist" => Ok(Network::Allowlist),
            Raw::Word(word) => Err(serde::de::Error::custom(format!(
                "sandbox_network is true, false or \"allowlist\", not \"{word}\""
            ))),
        }
    }
}

/// Entries of the user's home a sandboxed command is shown (read-only):
/// toolchains, package caches and the configuration builds read. Nothing
/// else of the home exists for it (on the made-up machine not even its
/// names); `sandbox_readable_roots` adds more. Credential files inside
/// these are shown empty or filtered (`credentials`).
pub const HOME_READABLE: &[&str] = &[
    // Toolchains and version managers.
    ".cargo",
    ".rustup",
    ".pyenv",
    ".rbenv",
    ".nvm",
    ".volta",
    ".asdf",
    ".sdkman",
    ".bun",
    ".deno",
    ".ghcup",
    ".cabal",
    ".stack",
    ".elan",
    ".opam",
    ".juliaup",
    ".julia",
    ".dotnet",
    ".swiftpm",
    ".local/bin",
    ".local/lib",
    ".local/pipx",
    ".local/share/mise",
    ".local/share/uv",
    ".local/share/pnpm",
    ".local/share/virtualenvs",
    ".local/share/fnm",
    "go",
    "miniconda3",
    "anaconda3",
    "miniforge3",
    ".conda",
    // Package caches.
    ".cache",
    ".npm",
    ".yarn",
    ".pnpm-store",
    ".gradle",
    ".m2",
    ".ivy2",
    ".sbt",
    ".nuget/packages",
    ".gem",
    ".pub-cache",
    ".mix",
    ".hex",
    ".konan",
    // Configuration builds and git read (no credentials in these).
    ".gitconfig",
    ".config/git",
    ".gitignore",
    ".gitignore_global",
    ".editorconfig",
    ".clang-format",
    ".terminfo",
];

/// What the server's configuration says about every command's sandbox;
/// [`Policy::new`] adds the workspace of one call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Settings {
    pub mode: Mode,
    /// Config `sandbox_writable_roots` (absolute).
    pub writable_roots: Vec<PathBuf>,
    /// Config `sandbox_readable_roots` (absolute): more to read in the home.
    pub readable_roots: Vec<PathBuf>,
    /// Config `sandbox_network`.
    pub network: Network,
    /// Config `sandbox_unix_sockets`: socket paths (or directories of
    /// them) a command may connect to, where the kernel can say so.
    pub unix_sockets: Vec<PathBuf>,
    /// Config `sandbox_protect_git`: every git directory under a writable
    /// root stays read-only.
    pub protect_git: bool,
    /// Config `sandbox_max_processes`: tasks a session's commands and
    /// hooks may have at once.
    pub max_processes: u32,
    /// The probe found user namespaces usable: commands run on the
    /// made-up machine (`machine`).
    pub mount_namespace: bool,
    pub scv_home: PathBuf,
    pub user_home: Option<PathBuf>,
}

/// One command's sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// `WorkspaceWrite` or `ReadOnly`; `Off` is no policy at all.
    pub mode: Mode,
    /// The session workspace (canonical).
    pub workspace: PathBuf,
    /// The repository around the workspace that lies outside it (git
    /// reads a `.git` above a subdirectory, or a worktree's): readable.
    pub repository: Vec<PathBuf>,
    /// The system temp directories: `$TMPDIR`, `/tmp`, `/var/tmp` (the
    /// shared ones a command never sees).
    pub temp_dirs: Vec<PathBuf>,
    /// Config `sandbox_writable_roots` (absolute).
    pub writable_roots: Vec<PathBuf>,
    /// Config `sandbox_readable_roots` (absolute): more to read.
    pub readable_roots: Vec<PathBuf>,
    /// Trees nothing may read or write (`$SCV_HOME`).
    pub denied: Vec<PathBuf>,
    /// The user's home: nothing in it is shown but its toolchain and cache
    /// trees ([`HOME_READABLE`]), the readable roots and the writable
    /// roots inside it.
    pub home: Option<PathBuf>,
    /// Config `sandbox_network`: `Off` forbids IPv4 and IPv6 sockets;
    /// `Allowlist` gives the commands a network namespace of their own.
    pub network: Network,
    /// Unix sockets a command may connect to (Landlock ABI 9 only; below
    /// that no Unix socket can be opened at all).
    pub unix_sockets: Vec<PathBuf>,
    /// Every git directory under a writable root is read-only.
    pub protect_git: bool,
    /// Tasks (processes and threads) a session's commands may have at
    /// once; 0: no bound.
    pub max_processes: u32,
    /// The command runs in a user and mount namespace of its own, on the
    /// made-up machine (`machine`).
    pub mount_namespace: bool,
    /// The session's own directory: `tmp/` is its `/tmp` and `/var/tmp`,
    /// `shm/` its `/dev/shm`. `None`: fresh, empty ones per call.
    #[serde(default)]
    pub session_dir: Option<PathBuf>,
    /// Every git directory, `.git` file and bare repository under the
    /// writable roots (found once per session, [`crate::repositories`]).
    #[serde(default)]
    pub git: Vec<PathBuf>,
    /// Files under the writable roots that are hard links with a name
    /// outside them: read-only (found with `git`).
    #[serde(default)]
    pub shared_files: Vec<PathBuf>,
    /// The session's pids cgroup (a directory) every command joins; `None`:
    /// `RLIMIT_NPROC` in the command's own user namespace.
    #[serde(default)]
    pub pids_cgroup: Option<PathBuf>,
    /// `sandbox_network = "allowlist"`: what commands reach without the
    /// proxy (their `NO_PROXY`: their own loopback, less the loopback
    /// names the allowlist lists, which then go through the proxy to the
    /// host's). `None`: [`crate::egress::DIRECT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_proxy: Option<String>,
}

impl Policy {
    pub fn new(settings: &Settings, workspace: &Path) -> Policy {
        // A workspace that holds the home (the home itself, `/`) leaves
        // nothing to hide there: the server refuses to make it writable.
        let home = settings
            .user_home
            .clone()
            .filter(|home| home.parent().is_some());
        Policy {
            mode: settings.mode,
            workspace: workspace.to_path_buf(),
            repository: repository_of(workspace, settings.user_home.as_deref()),
            temp_dirs: system_temp_dirs(),
            writable_roots: settings.writable_roots.clone(),
            readable_roots: settings.readable_roots.clone(),
            denied: vec![settings.scv_home.clone()],
            home,
            network: settings.network,
            unix_sockets: settings.unix_sockets.clone(),
            protect_git: settings.protect_git,
            max_processes: settings.max_processes,
            mount_namespace: settings.mount_namespace,
            session_dir: None,
            git: Vec::new(),
            shared_files: Vec::new(),
            pids_cgroup: None,
            no_proxy: None,
        }
    }

    /// Whether commands may open no IP socket at all: `sandbox_network =
    /// false`, or `"allowlist"` where there is no network namespace to
    /// give them (no user namespaces): the proxy's port alone cannot be
    /// told from the same port on any other host (Landlock rules ports,
    /// not addresses), so the allowlist fails closed.
    pub fn refuses_ip(&self) -> bool {
        match self.network {
            Network::On => false,
            Network::Off => true,
            Network::Allowlist => !self.mount_namespace,
        }
    }

    /// Whether commands get a network namespace of their own, reaching
    /// out only through the session's proxy.
    pub fn own_network(&self) -> bool {
        self.network == Network::Allowlist && self.mount_namespace
    }

    /// The policy as the tool process's argument.
    pub fn to_arg(&self) -> Result<String, crate::Error> {
        Ok(serde_json::to_string(self)?)
    }

    /// The policy from the tool process's argument: its JSON, or `@PATH`
    /// of a file holding it (a session's policies are written once, to
    /// its private directory).
    pub fn from_arg(arg: &str) -> Result<Policy, crate::Error> {
        match arg.strip_prefix('@') {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    crate::Error::io(format!("cannot read the sandbox policy {path}"), e)
                })?;
                Ok(serde_json::from_str(&text)?)
            }
            None => Ok(serde_json::from_str(arg)?),
        }
    }

    /// The trees of the home a command is shown (read-only).
    pub fn home_trees(&self) -> Vec<PathBuf> {
        match &self.home {
            Some(home) => {
                let home = crate::paths::canonical(home);
                HOME_READABLE.iter().map(|name| home.join(name)).collect()
            }
            None => Vec::new(),
        }
    }

    /// Every tree a command may read beside the system's: the home's
    /// allow-listed trees, the readable roots, the workspace and the
    /// repository around it.
    pub fn readable(&self) -> Vec<PathBuf> {
        let mut readable = self.home_trees();
        readable.extend(self.readable_roots.iter().cloned());
        readable.push(self.workspace.clone());
        readable.extend(self.repository.iter().cloned());
        readable
    }

    /// The session's temp directory (its `/tmp`), on the host.
    pub fn session_tmp(&self) -> Option<PathBuf> {
        self.session_dir.as_ref().map(|dir| dir.join("tmp"))
    }

    /// Every root a command may write, on the host, canonical and without
    /// repeats: the workspace and the configured roots (workspace-write),
    /// and the session's temp directories — or `private_tmp`.
    pub(crate) fn writable(&self, private_tmp: Option<&Path>) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> = Vec::new();
        if self.mode == Mode::WorkspaceWrite {
            roots.push(self.workspace.clone());
            roots.extend(self.writable_roots.iter().cloned());
        }
        if let Some(session) = &self.session_dir {
            roots.push(session.join("tmp"));
            roots.push(session.join("shm"));
        }
        roots.extend(private_tmp.map(Path::to_path_buf));
        let mut seen = Vec::new();
        for root in roots {
            let root = crate::paths::canonical(&root);
            if !seen.contains(&root) {
                seen.push(root);
            }
        }
        seen
    }
}

/// The repository around `workspace` that lies outside it: the directory
/// holding the nearest `.git` above it, and for a `.git` file (a worktree
/// or submodule) the git directory it names and that one's common
/// directory — only where that git directory points back here (a
/// worktree's `gitdir` file names this `.git` file; a submodule's
/// `core.worktree` names this directory), so a planted `gitdir: $HOME`
/// shows nothing. A repository that holds the home (a dotfiles repository
/// in `~`) shows nothing either: its tree and its history are the home's.
fn repository_of(workspace: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in workspace.ancestors() {
        let git = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&git) else {
            continue;
        };
        if home.is_some_and(|home| crate::paths::canonical(home).starts_with(dir)) {
            return Vec::new();
        }
        if meta.is_file() {
            match linked_gitdir(&git) {
                Some(linked) => found.extend(linked),
                None => return Vec::new(),
            }
        }
        if dir != workspace {
            found.push(dir.to_path_buf());
        }
        break;
    }
    found.retain(|path| !home.is_some_and(|home| crate::paths::canonical(home).starts_with(path)));
    found
}

/// The git directory a `.git` file names, and its common directory, when
/// they point back to that file: a linked worktree's (`G/gitdir` names
/// the `.git` file, `G` lies in `C/worktrees/`) or a submodule's (`G`
/// lies in a `modules` folder and its `core.worktree` names the folder
/// holding the `.git` file). `None` for anything else.
fn linked_gitdir(git_file: &Path) -> Option<Vec<PathBuf>> {
    let text = std::fs::read_to_string(git_file).ok()?;
    let target = text.trim().strip_prefix("gitdir:")?.trim();
    let base = git_file.parent()?;
    let gitdir = base.join(target).canonicalize().ok()?;
    let git_file = git_file.canonicalize().ok()?;
    let base = base.canonicalize().ok()?;
    // A linked worktree.
    if let Ok(back) = std::fs::read_to_string(gitdir.join("gitdir")) {
        let back = gitdir.join(back.trim()).canonicalize().ok()?;
        let common = std::fs::read_to_string(gitdir.join("commondir")).ok()?;
        let common = gitdir.join(common.trim()).canonicalize().ok()?;
        return (back == git_file && gitdir.starts_with(common.join("worktrees")))
            .then(|| vec![gitdir, common]);
    }
    // A submodule.
    let in_modules = gitdir.components().any(|c| c.as_os_str() == "modules");
    let config = std::fs::read_to_string(gitdir.join("config")).ok()?;
    let worktree = config.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "worktree").then(|| value.trim().trim_matches('"').to_string())
    })?;
    let worktree = gitdir.join(worktree).canonicalize().ok()?;
    (in_modules && worktree == base).then(|| vec![gitdir])
}

/// Whether `workspace` holds the user's home (is it, or one of its
/// ancestors): a workspace-write sandbox there could rewrite `~/.bashrc`,
/// `~/.ssh` and `$SCV_HOME`, so the server does not make it writable.
pub fn holds_home(workspace: &Path, user_home: Option<&Path>) -> bool {
    user_home.is_some_and(|home| {
        let home = crate::paths::canonical(home);
        home.starts_with(crate::paths::canonical(workspace))
    })
}

/// What a writable root lets a sandboxed command plant that runs outside
/// the sandbox later, in words; `None` when it plants nothing known.
/// `path` is the user's `PATH`.
pub fn plants_code(root: &Path, home: Option<&Path>, path: &[PathBuf]) -> Option<String> {
    let root = crate::paths::canonical(root);
    for dir in path.iter().map(|d| crate::paths::canonical(d)) {
        if dir.starts_with(&root) || root.starts_with(&dir) {
            return Some(format!(
                "programs on your PATH ({}): a `git` or `cargo` you run later",
                dir.display()
            ));
        }
    }
    let home = crate::paths::canonical(home?);
    if root == home {
        return Some("your shell's startup files and everything in your home".into());
    }
    let rel = root.strip_prefix(&home).ok()?;
    const PLANTS: &[(&str, &str)] = &[
        (".cargo", "a dependency's build.rs or a binary that your next cargo build of another project runs"),
        (".rustup", "the compiler and cargo themselves"),
        (".local/bin", "programs on your PATH"),
        (".local/lib", "Python packages every user-site `python` imports"),
        (".local/share", "programs and packages tools install there"),
        (".npm", "packages your next npm install of another project unpacks and runs"),
        (".pnpm-store", "packages every pnpm project links"),
        (".yarn", "packages your next yarn install runs"),
        (".cache", "cached packages and wheels your next install trusts (pip, go, bazel)"),
        (".m2", "jars your next Maven build of another project loads"),
        (".gradle", "init scripts and jars every Gradle build runs"),
        (".ivy2", "jars your next sbt build loads"),
        (".sbt", "plugins every sbt build runs"),
        (".gem", "gems your next bundle install runs"),
        ("go", "modules your next go build compiles"),
        (".pyenv", "the Python interpreters themselves"),
        (".nvm", "Node.js itself"),
        (".volta", "Node.js itself"),
        (".bun", "bun itself"),
        (".deno", "deno and its cache"),
        (".config", "autostart entries, systemd user units and every tool's settings"),
        (".ssh", "authorized keys and ssh configuration"),
    ];
    for (prefix, what) in PLANTS {
        let prefix = Path::new(prefix);
        if rel.starts_with(prefix) || prefix.starts_with(rel) {
            return Some((*what).to_string());
        }
    }
    None
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

    fn settings() -> Settings {
        Settings {
            mode: Mode::ReadOnly,
            writable_roots: vec![PathBuf::from("/cache")],
            readable_roots: vec![PathBuf::from("/h/tools")],
            network: Network::Off,
            unix_sockets: vec![PathBuf::from("/run/pg.sock")],
            protect_git: true,
            max_processes: 64,
            mount_namespace: true,
            scv_home: PathBuf::from("/h/.scv"),
            user_home: Some(PathBuf::from("/h")),
        }
    }

    #[test]
    fn a_policy_round_trips_through_its_argument() {
        let policy = Policy::new(&settings(), Path::new("/w"));
        assert_eq!(Policy::from_arg(&policy.to_arg().unwrap()).unwrap(), policy);
        assert!(policy.denied.contains(&PathBuf::from("/h/.scv")));
        assert!(policy.readable().contains(&PathBuf::from("/h/.cargo")));
        assert!(policy.readable().contains(&PathBuf::from("/h/tools")));
        assert_eq!(policy.home, Some(PathBuf::from("/h")));
        assert_eq!(Mode::WorkspaceWrite.as_str(), "workspace-write");
    }

    #[test]
    fn the_workspace_and_the_repository_above_it_are_readable() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("sub/dir")).unwrap();
        let ws = root.join("sub/dir");
        let policy = Policy::new(&settings(), &ws);
        assert!(policy.readable().contains(&ws));
        assert!(policy.readable().contains(&root));
        let at_root = Policy::new(&settings(), &root);
        assert_eq!(at_root.readable().iter().filter(|p| **p == root).count(), 1);
    }

    /// F1, F2 of the fourth pass: a `.git` file naming the home (or any
    /// folder that does not point back) shows nothing, nor does a
    /// repository that holds the home; a real worktree's and submodule's
    /// git directories are shown.
    #[test]
    fn only_git_directories_that_point_back_are_shown() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = base.join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let mut settings = settings();
        settings.user_home = Some(home.clone());
        // A planted pointer at the home.
        let ws = base.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join(".git"), format!("gitdir: {}\n", home.display())).unwrap();
        assert!(Policy::new(&settings, &ws).repository.is_empty());
        // A dotfiles repository in the home, a workspace below it.
        std::fs::create_dir_all(home.join(".git")).unwrap();
        let below = home.join("project");
        std::fs::create_dir_all(&below).unwrap();
        assert!(Policy::new(&settings, &below).repository.is_empty());
        // A real linked worktree.
        let main = base.join("main");
        let gitdir = main.join(".git/worktrees/wt");
        std::fs::create_dir_all(&gitdir).unwrap();
        let wt = base.join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
        std::fs::write(
            gitdir.join("gitdir"),
            format!("{}\n", wt.join(".git").display()),
        )
        .unwrap();
        std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
        assert_eq!(
            Policy::new(&settings, &wt).repository,
            [gitdir.clone(), main.join(".git")]
        );
        // A submodule.
        let sub = main.join("sub");
        let modules = main.join(".git/modules/sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(&modules).unwrap();
        std::fs::write(sub.join(".git"), "gitdir: ../.git/modules/sub\n").unwrap();
        std::fs::write(
            modules.join("config"),
            "[core]\n\tworktree = ../../../sub\n",
        )
        .unwrap();
        assert_eq!(Policy::new(&settings, &sub).repository, [modules]);
    }

    #[test]
    fn a_home_of_slash_denies_nothing_of_it() {
        let mut settings = settings();
        settings.user_home = Some(PathBuf::from("/"));
        let policy = Policy::new(&settings, Path::new("/w"));
        assert_eq!(policy.home, None);
        assert!(!policy.readable().iter().any(|p| p.starts_with("/.cargo")));
    }

    /// h06: README's old examples (`~/.cargo/registry`, `~/.cargo`) and
    /// the like plant code the user runs later; a project's scratch does
    /// not.
    #[test]
    fn writable_roots_that_plant_code_are_recognized() {
        let home = Path::new("/h/user");
        let path = [
            PathBuf::from("/opt/tools/bin"),
            PathBuf::from("/h/user/bin"),
        ];
        for root in [
            "/h/user/.cargo/registry",
            "/h/user/.cargo",
            "/h/user/.local/bin",
            "/h/user/.npm",
            "/h/user/.cache/pip",
            "/h/user",
            "/h/user/bin",
            "/opt/tools",
            "/h/user/.config/systemd",
        ] {
            assert!(
                plants_code(Path::new(root), Some(home), &path).is_some(),
                "{root}"
            );
        }
        for root in ["/h/user/scratch", "/data/out", "/h/user/projects/x/target"] {
            assert!(
                plants_code(Path::new(root), Some(home), &path).is_none(),
                "{root}"
            );
        }
    }

    #[test]
    fn a_workspace_holding_the_home_is_recognized() {
        let home = Path::new("/h/user");
        assert!(holds_home(Path::new("/h/user"), Some(home)));
        assert!(holds_home(Path::new("/h"), Some(home)));
        assert!(holds_home(Path::new("/"), Some(home)));
        assert!(!holds_home(Path::new("/h/user/project"), Some(home)));
        assert!(!holds_home(Path::new("/h/user"), None));
    }
}
