//! Which environment variables a tool process sees, and keeping secrets
//! out of the server's own environment block.
//!
//! A tool's environment (every sandbox mode, `off` included) is built up
//! from an allow-list ([`is_allowed_name`]): what shells and builds need —
//! `PATH`, `HOME`, the locale, the terminal, toolchain variables such as
//! `CARGO_HOME` or `JAVA_HOME` — and nothing else, unless
//! `tool_env_passthrough` names it. A credential's name cannot be
//! predicted (`TF_TOKEN_app_terraform_io`, `BUNDLE_GEMS__EXAMPLE__COM`,
//! `OTEL_EXPORTER_OTLP_HEADERS`), so a deny-list of names would always miss
//! one. Within the allow-list a tool still never sees a provider's API
//! key, a variable named like a credential, a value that is one (a URL with
//! a password, a known token format, a private key), or a variable that
//! leads to a local agent or multiplexer (`SSH_AUTH_SOCK`, `TMUX`, the
//! D-Bus bus, an editor's IPC socket). Scrubbing the tool's environment is not enough: a tool could
//! read the server's `/proc/<pid>/environ`, which shows the block the
//! kernel placed at `exec`, so the server moves its environment out of
//! that block and wipes it ([`seal_own_environment`]).

use std::ffi::{CStr, OsStr, OsString};

/// Variables a tool process may get, by exact name: what a shell, a
/// terminal program and the common toolchains read.
const ALLOWED_NAMES: &[&str] = &[
    // Shell and terminal.
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "TERMINFO",
    "TERMINFO_DIRS",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "COLUMNS",
    "LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "LESS",
    "CI",
    "DEBIAN_FRONTEND",
    "HOSTNAME",
    // Certificates (a company's TLS-inspecting proxy, a test CA).
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    // Proxies (a value with a password is withheld all the same).
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    // Git's identity.
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    // C and C++ builds.
    "CC",
    "CXX",
    "AR",
    "LD",
    "CPP",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "MAKEFLAGS",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    // Python.
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PYTHONIOENCODING",
    "VIRTUAL_ENV",
    // JavaScript.
    "NODE_PATH",
    "NODE_OPTIONS",
    "NODE_ENV",
    "PNPM_HOME",
    "VOLTA_HOME",
    "BUN_INSTALL",
    "DENO_DIR",
    "DENO_INSTALL",
    // Ruby.
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_PATH",
    "BUNDLE_GEMFILE",
    "BUNDLE_WITHOUT",
    "BUNDLE_FROZEN",
    "BUNDLE_DEPLOYMENT",
    // Go.
    "GOPATH",
    "GOROOT",
    "GOBIN",
    "GOFLAGS",
    "GOPROXY",
    "GOPRIVATE",
    "GONOPROXY",
    "GONOSUMDB",
    "GONOSUMCHECK",
    "GOSUMDB",
    "GOMODCACHE",
    "GOCACHE",
    "GOTOOLCHAIN",
    "GO111MODULE",
    "CGO_ENABLED",
    "GOOS",
    "GOARCH",
    // JVM and .NET.
    "JAVA_HOME",
    "JDK_HOME",
    "JAVA_TOOL_OPTIONS",
    "MAVEN_HOME",
    "M2_HOME",
    "MAVEN_OPTS",
    "GRADLE_HOME",
    "GRADLE_USER_HOME",
    "GRADLE_OPTS",
    "ANDROID_HOME",
    "ANDROID_SDK_ROOT",
    "ANDROID_NDK_HOME",
    "KOTLIN_HOME",
    "SCALA_HOME",
    "SBT_OPTS",
    "DOTNET_ROOT",
    "NUGET_PACKAGES",
    // Others.
    "CABAL_DIR",
    "STACK_ROOT",
    "GHCUP_INSTALL_BASE_PREFIX",
    "ELAN_HOME",
    "OPAMROOT",
    "OPAM_SWITCH_PREFIX",
    "JULIA_DEPOT_PATH",
    "JULIA_PROJECT",
    "JULIAUP_DEPOT_PATH",
    "SWIFTLY_HOME_DIR",
    "ZIG_GLOBAL_CACHE_DIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_DIRS",
];

/// Variables a tool process may get, by prefix: families whose members a
/// toolchain documents (`LC_ALL`, `CARGO_TARGET_DIR`, `PYENV_VERSION`, …).
/// A member named like a credential (`CARGO_REGISTRIES_X_TOKEN`,
/// `npm_config__authToken`) is withheld all the same.
const ALLOWED_PREFIXES: &[&str] = &[
    "LC_",
    "CARGO_",
    "RUSTUP_",
    "RUST_",
    "RUSTC",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "PYENV_",
    "CONDA_",
    "PIP_",
    "PIPX_",
    "UV_",
    "POETRY_",
    "NVM_",
    "NPM_CONFIG_",
    "npm_config_",
    "COREPACK_",
    "YARN_",
    "RBENV_",
    "RUBY",
    "SDKMAN_",
    "ASDF_",
    "MISE_",
    "CMAKE_",
    "DOTNET_",
];

/// Whether a tool process may get a variable of this name (before the
/// credential checks and `tool_env_passthrough`).
pub fn is_allowed_name(name: &str) -> bool {
    ALLOWED_NAMES.contains(&name)
        || ALLOWED_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

/// Suffixes of credential names (any case).
const SECRET_SUFFIXES: &[&str] = &[
    "_KEY",
    "_APIKEY",
    "_TOKEN",
    "AUTHTOKEN",
    "_SECRET",
    "_CREDENTIALS",
    "_CREDENTIAL",
    "_PAT",
    "_PASS",
    "_PASSWD",
    "_PWD",
    "_PASSPHRASE",
    "_AUTH",
    "_DSN",
    "_COOKIE",
];

/// Parts of credential names anywhere in them (any case).
const SECRET_PARTS: &[&str] = &["PASSWORD", "SECRET", "PRIVATE_KEY", "ACCESS_KEY"];

/// Prefixes of names that are all credentials or session tokens.
const SECRET_PREFIXES: &[&str] = &["AWS_", "AZURE_CLIENT_", "ARM_CLIENT_", "VAULT_"];

/// Variables that lead to a local agent, multiplexer, desktop session or
/// editor that acts on what it is told: a way out of the sandbox.
const DOOR_NAMES: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "SSH_ASKPASS",
    "GPG_AGENT_INFO",
    "GIT_ASKPASS",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "KRB5CCNAME",
    "VSCODE_IPC_HOOK",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    "VSCODE_GIT_ASKPASS_MAIN",
    "VSCODE_GIT_ASKPASS_NODE",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "ALACRITTY_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "EMACS_SOCKET_NAME",
    "I3SOCK",
    "SWAYSOCK",
    "HYPRLAND_INSTANCE_SIGNATURE",
    "PULSE_SERVER",
    "JUPYTER_TOKEN",
];

/// Credential-looking names: `*_KEY`, `*_TOKEN`, `*_SECRET`, `*_PAT`,
/// `*_PASS`, `*PASSWORD*`, `AWS_*`, … (any case).
pub fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    SECRET_SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
        || SECRET_PARTS.iter().any(|part| name.contains(part))
        || SECRET_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix))
        || name
            .split(['_', '-', '.'])
            .any(|word| SECRET_WORDS.contains(&word))
}

/// Words of a name (between `_`, `-`, `.`) that make it a credential's
/// wherever they stand: `POETRY_PYPI_TOKEN_CORP`, `YARN_NPM_AUTH_IDENT`.
const SECRET_WORDS: &[&str] = &[
    "TOKEN",
    "TOKENS",
    "AUTHTOKEN",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "AUTH",
    "IDENT",
    "CREDENTIAL",
    "CREDENTIALS",
    "APIKEY",
    "KEY",
    "PAT",
    "COOKIE",
    "PASSPHRASE",
    "SESSION",
];

/// Variables that lead to a local agent, multiplexer or session bus.
pub fn is_door_name(name: &str) -> bool {
    DOOR_NAMES.contains(&name)
}

/// `HTTP_PROXY`, `https_proxy`, `ALL_PROXY`, … (whose URL may carry a
/// password the server itself needs).
pub fn is_proxy_name(name: &str) -> bool {
    name.to_ascii_uppercase().ends_with("_PROXY")
}

/// Token formats whose value is a credential whatever the name (each with
/// the shortest length a real one has).
const TOKEN_PREFIXES: &[(&str, usize)] = &[
    ("ghp_", 36),
    ("gho_", 36),
    ("ghu_", 36),
    ("ghs_", 36),
    ("ghr_", 36),
    ("github_pat_", 40),
    ("glpat-", 20),
    ("xoxb-", 20),
    ("xoxp-", 20),
    ("xoxa-", 20),
    ("xoxs-", 20),
    ("sk-", 20),
    ("sk_live_", 20),
    ("rk_live_", 20),
    ("npm_", 36),
    ("pypi-", 40),
    ("hf_", 30),
    ("AKIA", 20),
    ("ASIA", 20),
    ("AIza", 39),
    ("dop_v1_", 40),
];

/// Values that are credentials whatever the variable's name: a URL or DSN
/// with a password (`postgres://u:pw@host`) or a token as its user
/// (`https://TOKEN@host`), a conda token URL (`/t/TOKEN/`), a known token
/// format, a JWT, a private key, an `Authorization` value, or options that
/// carry one (`-Dpassword=…`, `token=…`).
pub fn is_secret_value(value: &str) -> bool {
    let value = value.trim();
    if value.contains("-----BEGIN") {
        return true;
    }
    if value
        .split_whitespace()
        .any(|word| url_user_is_token(word) || conda_token(word) || option_with_secret(word))
    {
        return true;
    }
    if let Some(rest) = value
        .strip_prefix("Bearer ")
        .or(value.strip_prefix("Basic "))
    {
        return !rest.trim().is_empty();
    }
    if url_with_password(value) {
        return true;
    }
    if value.contains(char::is_whitespace) {
        return false;
    }
    let jwt = value.starts_with("eyJ") && value.len() >= 30 && value.matches('.').count() == 2;
    jwt || TOKEN_PREFIXES
        .iter()
        .any(|(prefix, min)| value.starts_with(prefix) && value.len() >= *min)
}

/// `scheme://USER@host` where USER looks like a token (a known format, or
/// 20 characters and more without a `:`).
fn url_user_is_token(word: &str) -> bool {
    word.match_indices("://").any(|(at, _)| {
        let rest = &word[at + 3..];
        let authority = rest.split(['/', '?', '#', ',']).next().unwrap_or("");
        authority.rsplit_once('@').is_some_and(|(user, _)| {
            !user.contains(':')
                && (user.len() >= 20
                    || TOKEN_PREFIXES
                        .iter()
                        .any(|(prefix, min)| user.starts_with(prefix) && user.len() >= *min))
        })
    })
}

/// Conda's token URLs: `…/t/TOKEN/…`.
fn conda_token(word: &str) -> bool {
    word.contains("://")
        && word
            .split('/')
            .collect::<Vec<_>>()
            .windows(2)
            .any(|pair| pair[0] == "t" && pair[1].len() >= 16)
}

/// `-Dname=value` or `name=value` whose name is a credential's
/// (`-Dsigning.password=…` in `JAVA_TOOL_OPTIONS`, `MAVEN_OPTS`, …).
fn option_with_secret(word: &str) -> bool {
    let word = word.trim_start_matches('-').trim_start_matches('D');
    let Some((name, value)) = word.split_once('=') else {
        return false;
    };
    !value.is_empty()
        && name
            .to_ascii_uppercase()
            .split(['_', '-', '.'])
            .any(|part| {
                SECRET_WORDS.contains(&part)
                    || part.ends_with("PASSWORD")
                    || part.ends_with("TOKEN")
            })
}

/// `scheme://user:password@host…` anywhere in `value` (a list of URLs,
/// a DSN in a connection string).
fn url_with_password(value: &str) -> bool {
    value.match_indices("://").any(|(at, _)| {
        let rest = &value[at + 3..];
        let authority = rest.split(['/', '?', '#', ' ', ',']).next().unwrap_or("");
        authority.rsplit_once('@').is_some_and(|(userinfo, _)| {
            userinfo
                .split_once(':')
                .is_some_and(|(_, pw)| !pw.is_empty())
        })
    })
}

/// Whether a tool process must not see variable `name` = `value` (the
/// provider key variables `keys` and credentials by name or value, and the
/// doors), before `tool_env_passthrough`.
pub fn withheld(name: &str, value: &OsStr, keys: &[String]) -> bool {
    is_secret_name(name)
        || is_door_name(name)
        || keys.iter().any(|k| k == name)
        || value.to_str().is_some_and(is_secret_value)
}

/// The variables of `vars` a tool process gets: those the allow-list
/// names ([`is_allowed_name`]) but what [`withheld`] names, and those
/// listed in `passthrough` whatever they are.
pub fn tool_environment(
    vars: &[(OsString, OsString)],
    keys: &[String],
    passthrough: &[String],
) -> Vec<(OsString, OsString)> {
    vars.iter()
        .filter(|(name, value)| {
            let name = name.to_string_lossy();
            passthrough.iter().any(|p| *p == name)
                || (is_allowed_name(&name) && !withheld(&name, value, keys))
        })
        .cloned()
        .collect()
}

/// Reads the process's environment, then takes the variables `secret`
/// names out of it and moves the rest out of the block the kernel shows
/// as `/proc/<pid>/environ`, which it then overwrites with zeros. Returns
/// the environment as it was, for the caller to keep what it needs.
///
/// Call it while the process still has one thread (first thing in
/// `main`): the C environment is not safe to change concurrently.
pub fn seal_own_environment(secret: impl Fn(&str, &OsStr) -> bool) -> Vec<(OsString, OsString)> {
    let originals = original_strings();
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (name, value) in &vars {
        if secret(&name.to_string_lossy(), value) {
            std::env::remove_var(name);
        } else {
            // A fresh copy on the heap; the variable no longer points
            // into the block.
            std::env::set_var(name, value);
        }
    }
    for (start, len) in originals {
        // SAFETY: each string was in the C environment; after the loop
        // above nothing refers to it any more (libc never frees replaced
        // strings), so zeroing it in place changes only what /proc shows.
        unsafe { std::ptr::write_bytes(start, 0, len) };
    }
    vars
}

/// The strings of the C environment as they are now: start and length.
fn original_strings() -> Vec<(*mut u8, usize)> {
    extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    let mut strings = Vec::new();
    // SAFETY: `environ` is a null-terminated array of C strings; we only
    // read it, in a single-threaded process.
    unsafe {
        let mut entry = environ;
        if entry.is_null() {
            return strings;
        }
        while !(*entry).is_null() {
            let len = CStr::from_ptr(*entry).to_bytes().len();
            strings.push(((*entry).cast::<u8>(), len));
            entry = entry.add(1);
        }
    }
    strings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_recognized_by_name() {
        for name in [
            "OPENAI_API_KEY",
            "github_token",
            "AWS_SECRET",
            "DB_PASSWORD_FILE",
            "mypassword",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "GITHUB_PAT",
            "AWS_ACCESS_KEY_ID",
            "AWS_REGION",
            "STRIPE_APIKEY",
            "SMTP_PASS",
            "MYSQL_PWD",
            "SENTRY_DSN",
            "CLIENT_SECRET_ID",
            "DEPLOY_PRIVATE_KEY_PATH",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM",
            "LANG",
            "PWD",
            "OLDPWD",
            "PASSAGE",
            "COMPASS",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn credentials_are_recognized_by_value() {
        for value in [
            "postgres://app:hunter2@db.internal:5432/app",
            "mysql://root:pw@localhost/db",
            "https://alice:tok@git.example.com/repo.git",
            "redis://default:s3cret@cache:6379,redis://x:y@other",
            "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-1234-5678-abcdefghijkl",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nature_here",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nabc",
            "Bearer abc.def",
        ] {
            assert!(is_secret_value(value), "{value}");
        }
        for value in [
            "/usr/bin:/bin",
            "https://example.com/path?x=1",
            "https://user@example.com/",
            "postgres://localhost/app",
            "sk-1",
            "en_US.UTF-8",
            "xterm-256color",
            "ssh://git@github.com/org/repo",
            "http://[::1]:8080/a@b",
        ] {
            assert!(!is_secret_value(value), "{value}");
        }
    }

    #[test]
    fn doors_out_are_withheld_like_credentials() {
        for name in [
            "SSH_AUTH_SOCK",
            "TMUX",
            "DBUS_SESSION_BUS_ADDRESS",
            "NVIM",
            "DISPLAY",
        ] {
            assert!(withheld(name, OsStr::new("/run/x"), &[]), "{name}");
        }
        assert!(!withheld("TERM", OsStr::new("xterm"), &[]));
    }

    #[test]
    fn a_tool_gets_no_credential_but_what_passes_through() {
        let vars: Vec<(OsString, OsString)> = [
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk-1"),
            ("MY_LLM", "k"),
            ("GH_TOKEN", "t"),
            ("NPM_TOKEN", "n"),
            ("DATABASE_URL", "postgres://u:pw@db/app"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let env = tool_environment(&vars, &["MY_LLM".into()], &["NPM_TOKEN".into()]);
        let names: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["PATH", "NPM_TOKEN"]);
    }

    /// Credentials under names no deny-list knows stay out: only the
    /// allow-list's names (and what passes through) reach a tool.
    #[test]
    fn only_the_allow_list_reaches_a_tool() {
        let vars: Vec<(OsString, OsString)> = [
            ("PATH", "/bin"),
            ("LC_ALL", "C.UTF-8"),
            ("CARGO_TARGET_DIR", "/t"),
            ("JAVA_HOME", "/opt/jdk"),
            ("TF_TOKEN_app_terraform_io", "x"),
            ("DENO_AUTH_TOKENS", "a@deno.land"),
            ("BUNDLE_GEMS__EXAMPLE__COM", "user:pass"),
            ("BW_SESSION", "abc"),
            ("npm_config__authToken", "t"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer x"),
            ("CARGO_REGISTRIES_CORP_TOKEN", "t"),
            ("RANDOM_APP_SETTING", "1"),
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let env = tool_environment(&vars, &[], &["RANDOM_APP_SETTING".into()]);
        let names: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "PATH",
                "LC_ALL",
                "CARGO_TARGET_DIR",
                "JAVA_HOME",
                "RANDOM_APP_SETTING"
            ]
        );
    }
}
