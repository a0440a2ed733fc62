//! The first-run note: started with the default provider and its key
//! variable unset, `scv` says which variable to set or how to use a local
//! server, naming the models of one that answers on Ollama's or LM
//! Studio's default port and the exact command and config lines that use
//! it. Nothing is written on the user's behalf.

use serde_json::Value;
use std::path::Path;
use std::time::Duration;

/// How long a local server has to answer `/v1/models`.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(400);

/// Local servers probed, as (name, preset, base URL without `/v1`).
pub const LOCAL_SERVERS: &[(&str, &str, &str)] = &[
    ("Ollama", "ollama", "http://127.0.0.1:11434"),
    ("LM Studio", "lmstudio", "http://127.0.0.1:1234"),
];

/// Providers other than the default, by the key variable that serves
/// them (`scv-server`'s presets).
pub const KEYED_PROVIDERS: &[(&str, &str)] = &[
    ("anthropic", "ANTHROPIC_API_KEY"),
    ("openrouter", "OPENROUTER_API_KEY"),
    ("deepseek", "DEEPSEEK_API_KEY"),
    ("gemini", "GEMINI_API_KEY"),
];

/// The other providers whose key variable is set here, as (provider,
/// variable).
pub fn keys_set() -> Vec<(&'static str, &'static str)> {
    KEYED_PROVIDERS
        .iter()
        .filter(|(_, var)| std::env::var_os(var).is_some_and(|v| !v.is_empty()))
        .copied()
        .collect()
}

/// A local server that answered, with its models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Local {
    pub name: String,
    pub preset: String,
    pub models: Vec<String>,
}

/// The key variable the note is about, when the session will use the
/// default provider (no `--provider`; no `provider`, `base_url` in the
/// config) and that variable is unset or empty here.
pub fn missing_key(home: &Path, provider_flag: Option<&str>) -> Option<String> {
    if provider_flag.is_some() {
        return None;
    }
    let config = match std::fs::read_to_string(home.join("config.toml")) {
        Ok(text) => text.parse::<toml::Table>().ok()?,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => toml::Table::new(),
        Err(_) => return None,
    };
    if config.contains_key("provider") || config.contains_key("base_url") {
        return None;
    }
    let key = config
        .get("api_key_env")
        .and_then(|v| v.as_str())
        .unwrap_or("OPENAI_API_KEY")
        .to_string();
    match std::env::var_os(&key) {
        Some(value) if !value.is_empty() => None,
        _ => Some(key),
    }
}

/// The model ids `{base}/v1/models` lists, if it answers in time.
pub async fn probe(base: &str, timeout: Duration) -> Option<Vec<String>> {
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .no_proxy()
        .build()
        .ok()?;
    let response = client.get(format!("{base}/v1/models")).send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body: Value = response.json().await.ok()?;
    let models = body
        .get("data")?
        .as_array()?
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    Some(models)
}

/// Probes the local servers at once (bounded by [`PROBE_TIMEOUT`]).
pub async fn probe_locals() -> Vec<Local> {
    let probes = LOCAL_SERVERS.iter().map(|(name, preset, base)| async move {
        probe(base, PROBE_TIMEOUT).await.map(|models| Local {
            name: name.to_string(),
            preset: preset.to_string(),
            models,
        })
    });
    futures_util::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The note's lines, for `key` unset, the other providers whose key is set
/// (`set`: provider, variable) and the local servers that answered. Lines
/// starting with four spaces are a command or config lines to copy.
pub fn note(key: &str, home: &Path, set: &[(&str, &str)], locals: &[Local]) -> Vec<String> {
    let config = home.join("config.toml");
    let mut lines = vec![format!(
        "First run? {key} is not set: the default provider (OpenAI) needs it."
    )];
    // A key that is set names its provider, once, before anything else.
    if let Some((provider, var)) = set.first() {
        lines.push(format!("{var} is set: use {provider} with"));
        lines.push(format!("    scv --provider {provider}"));
        lines.push(format!("or put this line in {}:", config.display()));
        lines.push(format!("    provider = \"{provider}\""));
        for (other, var) in &set[1..] {
            lines.push(format!("({var} is set too: scv --provider {other})"));
        }
        lines.push("Nothing was changed for you. /help lists keys and commands.".into());
        return lines;
    }
    lines.push(
        "Set it, stop the daemon that started without it (scv daemon stop), start scv:".to_string(),
    );
    lines.push(format!("    export {key}=…"));
    if locals.is_empty() {
        lines.push(
            "Or use a local server: none answered on Ollama's port (127.0.0.1:11434) or \
             LM Studio's (127.0.0.1:1234). With one running:"
                .into(),
        );
        lines.push("    scv --provider ollama --model MODEL".into());
    }
    for local in locals {
        let Some(first) = local.models.first() else {
            lines.push(format!(
                "Or use {}: it answers here but lists no models; load one, then:",
                local.name
            ));
            lines.push(format!("    scv --provider {} --model MODEL", local.preset));
            continue;
        };
        let shown: Vec<&str> = local.models.iter().take(6).map(String::as_str).collect();
        let more = local.models.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        lines.push(format!(
            "Or use {}, which answers here with {}{more}:",
            local.name,
            shown.join(", ")
        ));
        lines.push(format!(
            "    scv --provider {} --model {first}",
            local.preset
        ));
        lines.push(format!("or put these lines in {}:", config.display()));
        lines.push(format!("    provider = \"{}\"", local.preset));
        lines.push(format!("    model = \"{first}\""));
    }
    lines.push("Nothing was changed for you. /help lists keys and commands.".into());
    lines
}

/// A daemon's warning that a provider key "is not set in the server's
/// environment", when this shell has that variable set: said exactly,
/// with when the daemon started (`daemon_started`: "HH:MM UTC") and how to
/// give it the key.
pub fn key_in_shell_only(warning: &str, daemon_started: Option<&str>) -> Option<String> {
    let var = warning
        .split_once("needs a key: ")?
        .1
        .split_once(" is not set in the server's environment")?
        .0;
    if var.is_empty() || std::env::var_os(var).is_none_or(|v| v.is_empty()) {
        return None;
    }
    let when = daemon_started
        .map(|at| format!(" started at {at}"))
        .unwrap_or_default();
    Some(format!(
        "{var} is set in this shell, not in the daemon{when}: `scv daemon restart`, then /new"
    ))
}

/// When the daemon on `socket` started, as "HH:MM UTC": its socket is
/// made as it starts.
pub fn daemon_started(socket: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let made = std::fs::symlink_metadata(socket).ok()?.mtime();
    let utc = scv_client::time::utc(u64::try_from(made).ok()?);
    utc.split_once(' ').map(|(_, time)| time.to_string())
}

/// How to install the daemon, when `err` is that `scv-server` could not be
/// started because there is none (not beside `scv`, not on `PATH`, not
/// at `$SCV_SERVER_BIN`).
pub fn missing_server(err: &anyhow::Error) -> Option<String> {
    let not_found = err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
    });
    let starting = err.chain().any(|cause| {
        let text = cause.to_string();
        text.starts_with("cannot start ") && text.contains("scv-server")
    });
    (not_found && starting).then(|| {
        format!(
            "scv needs scv-server, the daemon it starts: put it beside {} or on PATH (or name it with SCV_SERVER_BIN). From the SCV repository: cargo install --path crates/scv-server && cargo install --path crates/scv-tui (installs both), or cargo build --release (both in target/release).",
            std::env::current_exe()
                .map(|exe| exe.display().to_string())
                .unwrap_or_else(|_| "scv".into())
        )
    })
}
