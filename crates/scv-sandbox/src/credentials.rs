//! Credentials inside the trees a sandboxed command is shown: files it
//! sees empty ([`MASKED`]) and configuration files it sees with every line
//! that holds a credential taken out ([`FILTERED`], [`filter`]).
//!
//! The home a command sees is built up from an allow-list of toolchain and
//! cache trees (`policy::HOME_READABLE`); these lists cover what such trees
//! are known to hold beside the toolchains — a registry token in
//! `~/.cargo/config.toml`, a Hugging Face token under `~/.cache` — and the
//! host's own secrets under `/etc` (readable to root, whose sandboxed
//! commands keep its uid). Kept current as tools add places: each entry
//! names the tool that writes it.

use std::path::{Path, PathBuf};

/// Credential files and folders relative to the home, shown empty. A `*`
/// component matches any one name.
pub const MASKED: &[&str] = &[
    ".cargo/credentials",               // cargo login (old name)
    ".cargo/credentials.toml",          // cargo login
    ".m2/settings.xml",                 // Maven: server passwords
    ".m2/settings-security.xml",        // Maven: the master password
    ".gem/credentials",                 // gem push
    ".cache/huggingface/token",         // huggingface-cli login
    ".cache/huggingface/stored_tokens", // huggingface-cli login (several)
    ".config/git/credentials",          // git credential-store (XDG)
    ".pub-cache/credentials.json",      // dart pub
    ".local/share/pnpm/.npmrc",         // pnpm's global npmrc
    ".yarn/berry/.yarnrc.yml",          // yarn berry's global rc
    ".ivy2/.credentials",               // sbt / ivy
    ".sbt/.credentials",                // sbt
    ".sbt/credentials",                 // sbt
    ".sbt/1.0/credentials.sbt",         // sbt
    ".stack/upload/credentials.json",   // stack upload
    ".julia/servers/*/auth.toml",       // Julia package servers
    ".local/share/uv/credentials",      // uv auth login
    ".gradle/init.d",                   // init scripts often carry tokens
];

/// Host secrets under `/etc`, shown empty: readable to root, and a
/// sandboxed command run by root keeps its uid (only its capabilities go).
pub const MASKED_SYSTEM: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/ssh_host_*_key",
    "/etc/ssl/private",
    "/etc/pki/tls/private",
    "/etc/security/opasswd",
    "/etc/krb5.keytab",
    "/etc/NetworkManager/system-connections",
    "/etc/netplan",
    "/etc/wireguard",
    "/etc/letsencrypt",
    "/etc/openvpn",
    "/etc/ipsec.secrets",
    "/etc/ppp/chap-secrets",
    "/etc/ppp/pap-secrets",
    "/etc/docker/key.json",
    "/etc/containers/auth.json",
    "/etc/rancher",
    "/etc/kubernetes",
    "/etc/ldap.secret",
    "/etc/pam_ldap.secret",
    "/etc/sasldb2",
];

/// System trees shown to commands whose files the host may keep from
/// other users (`/etc/apt/auth.conf.d`, `/etc/credstore`, debconf's
/// passwords): every such file or folder there is shown empty
/// ([`guarded`]).
pub const GUARDED_TREES: &[&str] = &[
    "/etc",
    "/opt",
    "/var/cache",
    "/var/lib/dpkg",
    "/var/lib/apt",
];

/// The most entries [`guarded`] looks at under one tree.
const MAX_GUARDED_ENTRIES: usize = 50_000;

/// Every file and folder under `trees` that is not readable by "others"
/// (mode bit 0o004; for a folder also 0o001), with whether it is a folder:
/// what the host keeps from other users. Links are not followed; a
/// guarded folder is not entered.
pub fn guarded(trees: &[&str]) -> Vec<(PathBuf, bool)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    for tree in trees {
        let mut stack = vec![PathBuf::from(tree)];
        let mut seen = 0usize;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                let Ok(meta) = entry.metadata() else {
                    continue;
                };
                let mode = meta.permissions().mode();
                if meta.is_dir() {
                    if mode & 0o005 != 0o005 {
                        found.push((entry.path(), true));
                    } else {
                        stack.push(entry.path());
                    }
                } else if meta.is_file() && mode & 0o004 == 0 {
                    found.push((entry.path(), false));
                }
            }
            if seen > MAX_GUARDED_ENTRIES {
                break;
            }
        }
    }
    found
}

/// Configuration files (relative to the home) that builds read and that
/// may also hold credentials: shown with those lines taken out
/// ([`filter`]). `~/.gitconfig` keeps the user's name and aliases and loses
/// `http.extraHeader` and tokens in URLs; `~/.cargo/config.toml` keeps
/// source replacement and loses `registries.*.token`; `~/.npmrc` keeps the
/// registry and loses `_authToken`.
pub const FILTERED: &[&str] = &[
    ".gitconfig",
    ".config/git/config",
    ".cargo/config.toml",
    ".cargo/config",
    ".npmrc",
    ".yarnrc",
    ".cabal/config",
    ".gradle/gradle.properties",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".condarc",
    ".bunfig.toml",
];

/// The largest configuration file shown filtered; a bigger one is shown
/// empty.
pub const MAX_FILTERED_BYTES: u64 = 256 * 1024;

/// Key names that hold a credential whatever the format (compared
/// lowercase, with `-` and `_` ignored, on the last part of a dotted or
/// colon-separated key).
const SECRET_KEYS: &[&str] = &[
    "token",
    "authtoken",
    "auth",
    "key",
    "login",
    "ident",
    "password",
    "passwd",
    "pass",
    "secret",
    "extraheader",
    "credential",
    "credentials",
    "apikey",
    "accesskey",
    "privatekey",
    "signingkey",
    "bearer",
    "cookie",
    "sessiontoken",
];

/// Every credential or configuration file of the lists that exists now,
/// for a home `home`: what a machine built now would mask or filter. A
/// machine kept for a session is built again when this changes (a
/// `cargo login` in the user's terminal mid-session).
pub fn present(home: Option<&Path>) -> Vec<PathBuf> {
    let mut found = Vec::new();
    if let Some(home) = home {
        for name in MASKED.iter().chain(FILTERED) {
            found.extend(expand(&home.join(name)));
        }
    }
    for pattern in MASKED_SYSTEM {
        found.extend(expand(Path::new(pattern)));
    }
    found
}

/// Paths matching `pattern` (absolute; a `*` component matches any one
/// name), existing now, without following a link at the last component.
pub fn expand(pattern: &Path) -> Vec<PathBuf> {
    let mut found = vec![PathBuf::from("/")];
    let parts: Vec<_> = pattern.components().skip(1).collect();
    for (at, part) in parts.iter().enumerate() {
        let last = at + 1 == parts.len();
        let name = part.as_os_str();
        let mut next = Vec::new();
        for dir in found {
            if name == "*" {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    next.push(dir.join(entry.file_name()));
                }
            } else {
                next.push(dir.join(name));
            }
        }
        found = next
            .into_iter()
            .filter(|path| match std::fs::symlink_metadata(path) {
                Ok(meta) => last || meta.is_dir(),
                Err(_) => false,
            })
            .collect();
        if found.is_empty() {
            break;
        }
    }
    found
}

/// `text` without the lines that hold a credential: a key named like one
/// (`token`, `password`, `_authToken`, `extraHeader`, …), a value that is
/// one (a URL with a password or a token as its user, a known token
/// format, `Bearer …`), and — in a git or TOML file — every line of a
/// section whose header carries one (`[url "https://TOKEN@host/"]`).
pub fn filter(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut section_dropped = false;
    // What a dropped line leaves open: a TOML multi-line string, a git
    // continuation line.
    let mut open_quote: Option<&str> = None;
    let mut continued = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(quote) = open_quote {
            if trimmed.contains(quote) {
                open_quote = None;
            }
            continue;
        }
        if continued {
            continued = trimmed.ends_with('\\');
            continue;
        }
        let drop = if trimmed.starts_with('[') && !trimmed.contains('=') {
            section_dropped = holds_secret_value(trimmed);
            section_dropped
        } else {
            section_dropped || line_holds_secret(trimmed)
        };
        if drop {
            open_quote = ["\"\"\"", "\'\'\'"]
                .into_iter()
                .find(|quote| trimmed.matches(quote).count() % 2 == 1);
            continued = trimmed.ends_with('\\');
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn line_holds_secret(line: &str) -> bool {
    if line.starts_with('#') || line.starts_with(';') || line.starts_with("--") {
        return false;
    }
    let (key, value) = match line.split_once('=') {
        Some((key, value)) => (key, value),
        // `key: value` (cabal, YAML-like rc files).
        None => line.split_once(':').unwrap_or((line, "")),
    };
    // Keys of an inline table (`"@corp" = { token = "…" }`) count too.
    let inline_key = value.split(['{', ',', '}']).any(|part| {
        part.split_once(['=', ':'])
            .is_some_and(|(key, _)| !key.trim().is_empty() && secret_key(key))
    });
    secret_key(key) || inline_key || holds_secret_value(value) || holds_secret_value(line)
}

/// Whether `key` names a credential: one of the words anywhere in it
/// (`githubToken`, `ossrhPassword`, `_authToken`), or a last part that is
/// one on its own (`gradle.publish.key`, `sonar.login`).
fn secret_key(key: &str) -> bool {
    let key = key.trim().trim_matches('"').trim_matches('\'');
    let flat = key.to_ascii_lowercase().replace(['-', '_', '.'], "");
    let last = key
        .rsplit(['.', ':', '/'])
        .next()
        .unwrap_or(key)
        .to_ascii_lowercase()
        .replace(['-', '_'], "");
    SECRET_KEYS.contains(&last.as_str())
        || SECRET_KEY_PARTS.iter().any(|part| flat.contains(part))
        || crate::env::is_secret_name(key)
}

/// Words that make a key a credential's wherever they stand in it.
const SECRET_KEY_PARTS: &[&str] = &[
    "token",
    "password",
    "passwd",
    "secret",
    "credential",
    "apikey",
    "accesskey",
    "privatekey",
    "passphrase",
    "cookie",
];

/// A credential anywhere in `text`: a secret value as a whole or as any
/// of its whitespace- or quote-separated words, or a URL whose user part
/// is a token.
fn holds_secret_value(text: &str) -> bool {
    let text = text.trim().trim_matches('"');
    if crate::env::is_secret_value(text) {
        return true;
    }
    text.split(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .filter(|word| !word.is_empty())
        .any(|word| crate::env::is_secret_value(word) || url_user_is_token(word))
}

/// `scheme://USER@host` where USER is a token (`https://ghp_…@github.com`).
fn url_user_is_token(word: &str) -> bool {
    let Some((_, rest)) = word.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority.rsplit_once('@').is_some_and(|(user, _)| {
        crate::env::is_secret_value(user) || (user.len() >= 20 && !user.contains(':'))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_gitconfig_keeps_its_settings_and_loses_its_credentials() {
        let text = "[user]\n\tname = Ada\n\temail = ada@example.com\n[http \"https://git.corp\"]\n\textraHeader = AUTHORIZATION: basic eDp5\n[url \"https://x-access-token:ghp_0123456789abcdefghijklmnopqrstuvwxyzAB@github.com/\"]\n\tinsteadOf = https://github.com/\n[url \"https://ghp_0123456789abcdefghijklmnopqrstuvwxyzAB@github.com/\"]\n\tinsteadOf = gh:\n[alias]\n\tst = status\n[credential]\n\thelper = store\n";
        let shown = filter(text);
        assert!(shown.contains("name = Ada"), "{shown}");
        assert!(shown.contains("st = status"), "{shown}");
        assert!(!shown.contains("ghp_"), "{shown}");
        assert!(!shown.contains("extraHeader"), "{shown}");
        assert!(!shown.contains("insteadOf"), "{shown}");
    }

    #[test]
    fn registry_tokens_leave_cargo_npm_and_cabal_files() {
        let cargo = "[source.crates-io]\nreplace-with = \"mirror\"\n[registries.corp]\nindex = \"sparse+https://corp/index/\"\ntoken = \"corp-token-123\"\n[registry]\ntoken = \"abc\"\n";
        let shown = filter(cargo);
        assert!(shown.contains("replace-with"), "{shown}");
        assert!(shown.contains("index = "), "{shown}");
        assert!(!shown.contains("token"), "{shown}");
        let npmrc = "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=npm_abcdefghijklmnopqrstuvwxyz0123456789\n_auth=dXNlcjpwYXNz\nalways-auth=true\n";
        let shown = filter(npmrc);
        assert_eq!(shown, "registry=https://registry.npmjs.org/\n");
        let cabal = "repository hackage.haskell.org\n  url: http://hackage.haskell.org/\nusername: ada\npassword: hunter2\n";
        let shown = filter(cabal);
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("username: ada"), "{shown}");
        let pip = "[global]\nindex-url = https://user:pw@pypi.corp/simple\ntimeout = 60\n";
        assert_eq!(filter(pip), "[global]\ntimeout = 60\n");
    }

    #[test]
    fn what_other_users_may_not_read_is_found() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("apt/auth.conf.d")).unwrap();
        std::fs::write(root.join("apt/auth.conf.d/corp.conf"), "password x").unwrap();
        std::fs::set_permissions(
            root.join("apt/auth.conf.d/corp.conf"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        std::fs::create_dir_all(root.join("credstore")).unwrap();
        std::fs::set_permissions(
            root.join("credstore"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        std::fs::write(root.join("hosts"), "public").unwrap();
        std::fs::set_permissions(root.join("hosts"), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        let root_str = root.display().to_string();
        let mut found = guarded(&[root_str.as_str()]);
        found.sort();
        assert_eq!(
            found,
            [
                (root.join("apt/auth.conf.d/corp.conf"), false),
                (root.join("credstore"), true)
            ]
        );
    }

    /// F8 of the fourth pass: the formats that got through.
    #[test]
    fn tokens_in_every_format_seen_are_taken_out() {
        let gradle = "org.gradle.jvmargs=-Xmx2g\ngradle.publish.key=PUB-1\ngithubToken=GH-2\nossrhToken=OS-3\naccessToken=AC-4\nsonar.login=SQ-5\n";
        assert_eq!(filter(gradle), "org.gradle.jvmargs=-Xmx2g\n");
        let yarn = "registry \"https://registry.yarnpkg.com\"\n_authToken \"YARN-6\"\n";
        assert!(!filter(yarn).contains("YARN-6"));
        let bun =
            "[install.scopes]\n\"@corp\" = { token = \"BUN-7\", url = \"https://npm.corp/\" }\n";
        assert!(!filter(bun).contains("BUN-7"));
        let cargo = "[registries.corp]\ntoken = \"\"\"\nCARGO-8\n\"\"\"\nindex = \"sparse+https://corp/\"\n";
        let shown = filter(cargo);
        assert!(
            !shown.contains("CARGO-8") && shown.contains("index"),
            "{shown}"
        );
        let git = "[http]\n\textraHeader = Authorization: \\\n\t\tBasic GIT-9\n[credential]\n\thelper = \"!f() { echo password=GIT-10; }; f\"\n[user]\n\tname = kept\n";
        let shown = filter(git);
        assert!(
            !shown.contains("GIT-9") && !shown.contains("GIT-10"),
            "{shown}"
        );
        assert!(shown.contains("name = kept"), "{shown}");
        let conda =
            "channel_alias: https://conda.corp/t/abcdefghijklmnop0123/\nchannels:\n  - defaults\n";
        assert!(!filter(conda).contains("abcdefghijklmnop0123"));
    }

    #[test]
    fn patterns_expand_to_what_exists() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("servers/a")).unwrap();
        std::fs::create_dir_all(root.join("servers/b")).unwrap();
        std::fs::write(root.join("servers/a/auth.toml"), "x").unwrap();
        let found = expand(&root.join("servers/*/auth.toml"));
        assert_eq!(found, [root.join("servers/a/auth.toml")]);
        assert!(expand(&root.join("missing/*/x")).is_empty());
    }
}
