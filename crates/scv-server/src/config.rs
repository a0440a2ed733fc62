//! `$SCV_HOME/config.toml` and the environment.
//!
//! Every key is optional. A malformed file is a startup error naming the
//! file and the line; an unknown key is reported on stderr and ignored, so a
//! newer config does not stop an older server.

use crate::model::Effort;
use crate::provider::presets::{Overrides, ProviderTable, Providers};
use anyhow::{anyhow, Context, Result};
use scv_protocol::Risk;
use scv_sandbox::Mode as SandboxMode;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file as written: every key optional.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
struct Raw {
    provider: String,
    model: Option<String>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    context_max_tokens: Option<u64>,
    max_output_tokens: Option<u64>,
    reasoning_effort: Option<Effort>,
    prompt_cache: bool,
    providers: BTreeMap<String, ProviderTable>,
    compact_threshold_percent: u64,
    max_steps: u32,
    auto_approve: Vec<Risk>,
    bash_timeout_ms: u64,
    bash_max_timeout_ms: u64,
    tool_output_max_bytes: usize,
    max_history_bytes: usize,
    stream_idle_timeout_ms: u64,
    max_response_bytes: usize,
    provider_max_retries: u32,
    workspace: Option<PathBuf>,
    clawbot_approval_timeout_ms: u64,
    initialize_timeout_ms: u64,
    max_connections: usize,
    sandbox: SandboxMode,
    sandbox_network: scv_sandbox::Network,
    sandbox_allowed_domains: Option<Vec<String>>,
    web_fetch_max_bytes: usize,
    web_fetch_timeout_ms: u64,
    sandbox_writable_roots: Vec<PathBuf>,
    sandbox_readable_roots: Vec<PathBuf>,
    additional_directories_writable: Vec<PathBuf>,
    sandbox_unix_sockets: Vec<PathBuf>,
    sandbox_protect_git: bool,
    sandbox_max_processes: u32,
    tool_env_passthrough: Vec<String>,
    trusted_workspaces: Vec<PathBuf>,
    session_store: bool,
    session_retention_days: u64,
    max_session_store_bytes: u64,
    checkpoints: bool,
    max_checkpoint_store_bytes: u64,
    /// Keys with their place in the file, so an error can name the line
    /// however the table is written (`[mcp_servers.NAME]`, quoted, inline,
    /// dotted).
    mcp_servers: BTreeMap<toml::Spanned<String>, scv_mcp::RawServer>,
    /// `[pricing."MODEL"]`, with its place in the file.
    pricing: BTreeMap<toml::Spanned<String>, RawPrice>,
    max_session_cost_usd: Option<f64>,
    max_daily_cost_usd: Option<f64>,
    max_turn_tokens: Option<u64>,
    otel_endpoint: Option<String>,
    otel_log_content: bool,
    max_subagents: u32,
    max_subagent_depth: u32,
    subagent_max_steps: u32,
    subagent_timeout_ms: u64,
    max_background_processes: u32,
}

/// A `[pricing."MODEL"]` table: USD per million tokens. `cached_input` and
/// `cache_write` default to `input`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrice {
    input: f64,
    cached_input: Option<f64>,
    cache_write: Option<f64>,
    output: f64,
}

impl Default for Raw {
    fn default() -> Self {
        Raw {
            provider: "openai".into(),
            model: None,
            base_url: None,
            api_key_env: None,
            context_max_tokens: None,
            max_output_tokens: None,
            reasoning_effort: None,
            prompt_cache: true,
            providers: BTreeMap::new(),
            compact_threshold_percent: 80,
            max_steps: 32,
            auto_approve: vec![Risk::Read],
            bash_timeout_ms: 120_000,
            bash_max_timeout_ms: 600_000,
            tool_output_max_bytes: 64 * 1024,
            max_history_bytes: 16 * 1024 * 1024,
            stream_idle_timeout_ms: 300_000,
            max_response_bytes: scv_protocol::limits::MAX_RESPONSE_BYTES,
            provider_max_retries: 3,
            workspace: None,
            clawbot_approval_timeout_ms: 600_000,
            initialize_timeout_ms: 10_000,
            max_connections: 2048,
            sandbox: SandboxMode::WorkspaceWrite,
            sandbox_network: scv_sandbox::Network::On,
            sandbox_allowed_domains: None,
            web_fetch_max_bytes: 256 * 1024,
            web_fetch_timeout_ms: 30_000,
            sandbox_writable_roots: Vec::new(),
            sandbox_readable_roots: Vec::new(),
            additional_directories_writable: Vec::new(),
            sandbox_unix_sockets: Vec::new(),
            sandbox_protect_git: true,
            sandbox_max_processes: 1024,
            tool_env_passthrough: Vec::new(),
            trusted_workspaces: Vec::new(),
            session_store: true,
            session_retention_days: 30,
            max_session_store_bytes: 1 << 30,
            checkpoints: true,
            max_checkpoint_store_bytes: 2 << 30,
            mcp_servers: BTreeMap::new(),
            pricing: BTreeMap::new(),
            max_session_cost_usd: None,
            max_daily_cost_usd: None,
            max_turn_tokens: None,
            otel_endpoint: None,
            otel_log_content: false,
            max_subagents: 4,
            max_subagent_depth: 1,
            subagent_max_steps: 24,
            subagent_timeout_ms: 600_000,
            max_background_processes: 8,
        }
    }
}

/// The configuration, resolved: provider definitions are typed and final.
/// Grouped by who reads it; every field says which key it comes from (the
/// file stays flat: keys, defaults and messages are the first round's).
#[derive(Debug, Clone)]
pub struct Config {
    pub(crate) provider: ProviderConfig,
    pub(crate) limits: TurnLimits,
    pub(crate) sandbox: SandboxConfig,
    /// `trusted_workspaces`: directories whose repository configuration
    /// (hooks, MCP servers, rules) may run or apply (`scv_client::trust`).
    pub(crate) trusted_workspaces: Vec<PathBuf>,
    pub daemon: DaemonConfig,
    pub(crate) store: StoreConfig,
    /// `[mcp_servers.NAME]`, checked.
    pub(crate) mcp_servers: Vec<scv_mcp::ServerSpec>,
    /// `[pricing."MODEL"]` over the built-in prices, and the budgets.
    pub(crate) cost: CostConfig,
    /// `otel_endpoint` (an `http://` or `https://` URL, its `/v1/traces`).
    pub(crate) otel_endpoint: Option<String>,
    /// `otel_log_content`: export prompts, answers and tool contents.
    pub(crate) otel_log_content: bool,
    /// What was wrong with the file but did not stop it (unknown keys),
    /// in words with the file and line.
    pub(crate) warnings: Vec<String>,
    /// The file's top-level table as read (empty for the defaults), so a
    /// later reading can say which keys changed.
    pub(crate) table: toml::Table,
}

/// What tokens cost and what may be spent.
#[derive(Debug, Clone, Default)]
pub(crate) struct CostConfig {
    pub pricing: crate::cost::Pricing,
    /// `max_session_cost_usd`, `max_daily_cost_usd`, `max_turn_tokens`.
    pub budgets: crate::cost::Budgets,
}

/// Which model a session talks to, and how its requests go.
#[derive(Debug, Clone)]
pub(crate) struct ProviderConfig {
    /// Every definition and the default one: the presets, `[providers.NAME]`
    /// and `provider`, with `model`, `base_url`, `api_key_env`,
    /// `context_max_tokens` and `max_output_tokens` applied.
    pub defs: Providers,
    /// `reasoning_effort`.
    pub reasoning_effort: Option<Effort>,
    /// `prompt_cache`.
    pub prompt_cache: bool,
    /// `stream_idle_timeout_ms`.
    pub stream_idle_timeout_ms: u64,
    /// `max_response_bytes`: the cap on one provider response's bytes as
    /// they come over the wire (default the protocol's 4 MiB; at least 1).
    pub max_response_bytes: usize,
    /// `provider_max_retries`: retries of a transient provider failure
    /// (429/5xx before any output).
    pub max_retries: u32,
}

/// What one turn may do (`agent::Limits` is built from this).
#[derive(Debug, Clone)]
pub(crate) struct TurnLimits {
    /// `max_steps`.
    pub max_steps: u32,
    /// `compact_threshold_percent`: compaction starts when the estimated
    /// prompt passes this share of the context window, in percent.
    pub compact_threshold_percent: u64,
    /// `max_history_bytes`.
    pub max_history_bytes: usize,
    /// `auto_approve`.
    pub auto_approve: Vec<Risk>,
    /// `bash_timeout_ms`.
    pub bash_timeout_ms: u64,
    /// `bash_max_timeout_ms`: cap on the `timeout_ms` a model asks for.
    pub bash_max_timeout_ms: u64,
    /// `tool_output_max_bytes`.
    pub tool_output_max_bytes: usize,
    /// `max_subagents`: a turn's subagents running at once (0: no `task`
    /// tool).
    pub max_subagents: u32,
    /// `max_subagent_depth`: how deep subagents nest.
    pub max_subagent_depth: u32,
    /// `subagent_max_steps`: a subagent's `max_steps`.
    pub subagent_max_steps: u32,
    /// `subagent_timeout_ms`: a subagent's wall-clock cap.
    pub subagent_timeout_ms: u64,
    /// `max_background_processes`: `bash {background: true}` processes a
    /// session may have running at once (8; 0 refuses every one; at most
    /// 64).
    pub max_background_processes: u32,
}

/// The sandbox under tool processes.
#[derive(Debug, Clone)]
pub(crate) struct SandboxConfig {
    /// `sandbox`.
    pub mode: SandboxMode,
    /// `sandbox_network`.
    pub network: scv_sandbox::Network,
    /// `sandbox_allowed_domains` (default: the package registries),
    /// `web_fetch_max_bytes` and `web_fetch_timeout_ms`.
    pub web: crate::egress::fetch::WebLimits,
    /// `sandbox_writable_roots`.
    pub writable_roots: Vec<PathBuf>,
    /// `sandbox_readable_roots`: more to read in the home.
    pub readable_roots: Vec<PathBuf>,
    /// `additional_directories_writable`: a session's additional
    /// directory (ACP `additionalDirectories`) beneath one of these is
    /// writable by its tools and commands; any other is read-only.
    pub writable_additional: Vec<PathBuf>,
    /// `sandbox_unix_sockets`: Unix sockets commands may connect to
    /// (Landlock ABI 9 only).
    pub unix_sockets: Vec<PathBuf>,
    /// `sandbox_protect_git`: `.git/config`, hooks and info stay read-only.
    pub protect_git: bool,
    /// `sandbox_max_processes`: tasks one sandboxed call may have at once.
    pub max_processes: u32,
    /// `tool_env_passthrough`: variables a tool process sees even though
    /// they look like credentials.
    pub tool_env_passthrough: Vec<String>,
}

/// The daemon's own settings, ClawBot's included.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// `workspace`: the daemon workspace (ClawBot sessions without their
    /// own).
    pub workspace: Option<PathBuf>,
    /// `clawbot_approval_timeout_ms`: how long a ClawBot approval waits
    /// for the owner's y/n (10 minutes).
    pub(crate) clawbot_approval_timeout_ms: u64,
    /// `initialize_timeout_ms`: a daemon connection that sends no
    /// `initialize` within this is closed.
    pub(crate) initialize_timeout_ms: u64,
    /// `max_connections`: connections the daemon serves at once (lowered
    /// to fit the descriptor limit).
    pub(crate) max_connections: usize,
}

/// The session store (`$SCV_HOME/sessions`).
#[derive(Debug, Clone)]
pub(crate) struct StoreConfig {
    /// `session_store`: journal every session (true); false writes nothing.
    pub enabled: bool,
    /// `session_retention_days`: sessions not updated for this long are
    /// deleted (30; 0 keeps them forever).
    pub retention_days: u64,
    /// `max_session_store_bytes`: the store's bound; the oldest sessions
    /// go first, never an open one (1 GiB).
    pub max_bytes: u64,
    /// `checkpoints`: record the workspace before each turn that may
    /// change files (true).
    pub checkpoints: bool,
    /// `max_checkpoint_store_bytes`: the checkpoint store's bound; the
    /// oldest checkpoints go first, never the newest of an open session
    /// (2 GiB).
    pub max_checkpoint_bytes: u64,
    /// What a session's journal may lack while the disk is full, kept in
    /// memory until it can be written: `max_history_bytes`, what the
    /// session may hold as history anyway.
    pub backlog_bytes: u64,
}

const KNOWN_KEYS: &[&str] = &[
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "context_max_tokens",
    "max_output_tokens",
    "reasoning_effort",
    "prompt_cache",
    "providers",
    "compact_threshold_percent",
    "max_steps",
    "auto_approve",
    "bash_timeout_ms",
    "bash_max_timeout_ms",
    "tool_output_max_bytes",
    "max_history_bytes",
    "stream_idle_timeout_ms",
    "max_response_bytes",
    "provider_max_retries",
    "workspace",
    // Read by `scv clawbot login`.
    "ilink_base_url",
    "clawbot_approval_timeout_ms",
    "initialize_timeout_ms",
    "max_connections",
    "sandbox",
    "sandbox_network",
    "sandbox_allowed_domains",
    "web_fetch_max_bytes",
    "web_fetch_timeout_ms",
    "sandbox_writable_roots",
    "sandbox_readable_roots",
    "additional_directories_writable",
    "sandbox_unix_sockets",
    "sandbox_protect_git",
    "sandbox_max_processes",
    "tool_env_passthrough",
    "trusted_workspaces",
    "plugins",
    "session_store",
    "session_retention_days",
    "max_session_store_bytes",
    "checkpoints",
    "max_checkpoint_store_bytes",
    "mcp_servers",
    "pricing",
    "max_session_cost_usd",
    "max_daily_cost_usd",
    "max_turn_tokens",
    "otel_endpoint",
    "otel_log_content",
    "max_subagents",
    "max_background_processes",
    "max_subagent_depth",
    "subagent_max_steps",
    "subagent_timeout_ms",
];

impl Default for Config {
    fn default() -> Self {
        // The presets alone always resolve.
        Config::resolve(Raw::default(), "")
            .unwrap_or_else(|err| unreachable!("the presets resolve: {err}"))
    }
}

impl Config {
    /// Reads `home/config.toml`; a missing file means the defaults.
    pub fn load(home: &Path) -> Result<Config> {
        Config::load_from(&home.join("config.toml"))
    }

    /// Reads the configuration file at `path`; a missing file means the
    /// defaults.
    pub(crate) fn load_from(path: &Path) -> Result<Config> {
        match std::fs::read_to_string(path) {
            Ok(text) => Config::parse(&text, path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        let table: toml::Table = text
            .parse()
            .map_err(|err| anyhow!("{}: {}", path.display(), located(text, &err)))?;
        let warnings: Vec<String> = table
            .keys()
            .filter(|k| !KNOWN_KEYS.contains(&k.as_str()))
            .map(|key| format!("{}: {}", path.display(), unknown_key(text, key)))
            .collect();
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        let raw: Raw = toml::from_str(text)
            .map_err(|err| anyhow!("{}: {}", path.display(), located(text, &err)))?;
        let mut config =
            Config::resolve(raw, text).map_err(|err| anyhow!("{}: {err}", path.display()))?;
        config.warnings = warnings;
        config.table = table;
        Ok(config)
    }

    fn resolve(raw: Raw, text: &str) -> Result<Config> {
        check_bounds(&raw, text)?;
        let web = egress_config(&raw, text)?;
        if raw.mcp_servers.len() > scv_mcp::MAX_SERVERS {
            return Err(anyhow!(
                "{}at most {} MCP servers can be configured",
                at(text, "mcp_servers"),
                scv_mcp::MAX_SERVERS
            ));
        }
        let cost = cost_config(&raw, text)?;
        if let Some(endpoint) = &raw.otel_endpoint {
            let scheme_ok = endpoint.starts_with("http://") || endpoint.starts_with("https://");
            if !scheme_ok || reqwest::Url::parse(endpoint).is_err() {
                return Err(anyhow!(
                    "{}otel_endpoint `{endpoint}` is not an http:// or https:// URL",
                    at(text, "otel_endpoint")
                ));
            }
        }
        let mut mcp_servers = Vec::new();
        for (name, table) in raw.mcp_servers {
            let line = line_at(text, name.span().start);
            let name = name.into_inner();
            let spec = scv_mcp::ServerSpec::new(&name, table)
                .map_err(|err| anyhow!("{line}mcp_servers.{name}: {err}"))?;
            mcp_servers.push(spec);
        }
        let overrides = Overrides {
            model: raw.model,
            base_url: raw.base_url,
            api_key_env: raw.api_key_env,
            context_max_tokens: raw.context_max_tokens,
        };
        let providers = Providers::resolve(
            &raw.providers,
            &raw.provider,
            &overrides,
            raw.max_output_tokens,
        )
        .map_err(|err| {
            // Point at the table the error is about, else at `provider`.
            let line = raw
                .providers
                .keys()
                .find(|name| err.contains(&format!("`{name}`")))
                .map(|name| at_table(text, &format!("providers.{name}")))
                .unwrap_or_else(|| at(text, "provider"));
            anyhow!("{line}{err}")
        })?;
        Ok(Config {
            provider: ProviderConfig {
                defs: providers,
                reasoning_effort: raw.reasoning_effort,
                prompt_cache: raw.prompt_cache,
                stream_idle_timeout_ms: raw.stream_idle_timeout_ms,
                max_response_bytes: raw.max_response_bytes.max(1),
                max_retries: raw.provider_max_retries,
            },
            limits: TurnLimits {
                max_steps: raw.max_steps,
                compact_threshold_percent: raw.compact_threshold_percent,
                max_history_bytes: raw.max_history_bytes,
                auto_approve: raw.auto_approve,
                bash_timeout_ms: raw.bash_timeout_ms,
                bash_max_timeout_ms: raw.bash_max_timeout_ms,
                tool_output_max_bytes: raw.tool_output_max_bytes,
                max_subagents: raw.max_subagents,
                max_subagent_depth: raw.max_subagent_depth,
                subagent_max_steps: raw.subagent_max_steps,
                subagent_timeout_ms: raw.subagent_timeout_ms,
                max_background_processes: raw.max_background_processes,
            },
            sandbox: SandboxConfig {
                mode: raw.sandbox,
                network: raw.sandbox_network,
                web,
                writable_roots: raw.sandbox_writable_roots,
                readable_roots: raw.sandbox_readable_roots,
                writable_additional: raw.additional_directories_writable,
                unix_sockets: raw.sandbox_unix_sockets,
                protect_git: raw.sandbox_protect_git,
                max_processes: raw.sandbox_max_processes,
                tool_env_passthrough: raw.tool_env_passthrough,
            },
            trusted_workspaces: raw.trusted_workspaces,
            daemon: DaemonConfig {
                workspace: raw.workspace,
                clawbot_approval_timeout_ms: raw.clawbot_approval_timeout_ms,
                initialize_timeout_ms: raw.initialize_timeout_ms,
                max_connections: raw.max_connections,
            },
            store: StoreConfig {
                enabled: raw.session_store,
                retention_days: raw.session_retention_days,
                max_bytes: raw.max_session_store_bytes,
                checkpoints: raw.checkpoints,
                max_checkpoint_bytes: raw.max_checkpoint_store_bytes,
                backlog_bytes: raw.max_history_bytes as u64,
            },
            mcp_servers,
            cost,
            otel_endpoint: raw.otel_endpoint,
            otel_log_content: raw.otel_log_content,
            warnings: Vec::new(),
            table: toml::Table::new(),
        })
    }

    /// Every configured provider's key, by variable name, from `env` (the
    /// environment the server started with).
    pub(crate) fn api_keys(&self, env: &[(OsString, OsString)]) -> HashMap<String, String> {
        self.provider
            .defs
            .key_variables()
            .filter_map(|var| {
                let (_, key) = env.iter().find(|(name, _)| name == var)?;
                let key = key.to_str().filter(|k| !k.is_empty())?;
                Some((var.to_string(), key.to_string()))
            })
            .collect()
    }

    /// Whether the server keeps variable `name` out of its own environment
    /// once started: a provider key or anything named like a credential.
    pub fn is_secret(&self, name: &str) -> bool {
        scv_sandbox::env::is_secret_name(name) || self.secret_variables().any(|var| var == name)
    }

    /// The variables holding provider keys and MCP bearer tokens.
    pub(crate) fn secret_variables(&self) -> impl Iterator<Item = &str> {
        self.provider
            .defs
            .key_variables()
            .chain(self.mcp_servers.iter().filter_map(|s| s.secret_variable()))
    }
}

impl ProviderConfig {
    pub(crate) fn stream_idle_timeout(&self) -> Duration {
        Duration::from_millis(self.stream_idle_timeout_ms.max(1))
    }
}

/// `[pricing."MODEL"]` and the budgets, checked: a price is a finite
/// number ≥ 0, a budget one > 0.
/// `sandbox_allowed_domains` parsed (the default list when absent), and
/// `web_fetch`'s bounds checked.
fn egress_config(raw: &Raw, text: &str) -> Result<crate::egress::fetch::WebLimits> {
    let allowed = match &raw.sandbox_allowed_domains {
        Some(entries) => crate::egress::allowlist::Allowlist::parse(entries)
            .map_err(|why| anyhow!("{}{why}", at(text, "sandbox_allowed_domains")))?,
        None => crate::egress::allowlist::Allowlist::default_list(),
    };
    if !(1024..=64 << 20).contains(&raw.web_fetch_max_bytes) {
        return Err(anyhow!(
            "{}web_fetch_max_bytes must be 1024 to 67108864",
            at(text, "web_fetch_max_bytes")
        ));
    }
    if !(100..=600_000).contains(&raw.web_fetch_timeout_ms) {
        return Err(anyhow!(
            "{}web_fetch_timeout_ms must be 100 to 600000",
            at(text, "web_fetch_timeout_ms")
        ));
    }
    Ok(crate::egress::fetch::WebLimits {
        allowed: std::sync::Arc::new(allowed),
        max_bytes: raw.web_fetch_max_bytes,
        timeout: std::time::Duration::from_millis(raw.web_fetch_timeout_ms),
    })
}

fn cost_config(raw: &Raw, text: &str) -> Result<CostConfig> {
    let mut configured = BTreeMap::new();
    for (model, price) in &raw.pricing {
        let line = line_at(text, model.span().start);
        let name = model.get_ref();
        let cached_input = price.cached_input.unwrap_or(price.input);
        let cache_write = price.cache_write.unwrap_or(price.input);
        for (key, value) in [
            ("input", price.input),
            ("cached_input", cached_input),
            ("cache_write", cache_write),
            ("output", price.output),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(anyhow!(
                    "{line}pricing.\"{name}\".{key} must be a number of USD per million tokens, 0 or more (got {value})"
                ));
            }
        }
        configured.insert(
            name.clone(),
            crate::cost::Price {
                input: price.input,
                cached_input,
                cache_write,
                output: price.output,
            },
        );
    }
    for (key, value) in [
        ("max_session_cost_usd", raw.max_session_cost_usd),
        ("max_daily_cost_usd", raw.max_daily_cost_usd),
    ] {
        if let Some(value) = value.filter(|v| !v.is_finite() || *v <= 0.0) {
            return Err(anyhow!(
                "{}{key} must be a positive number of USD (got {value})",
                at(text, key)
            ));
        }
    }
    if raw.max_turn_tokens == Some(0) {
        return Err(anyhow!(
            "{}max_turn_tokens must be at least 1",
            at(text, "max_turn_tokens")
        ));
    }
    Ok(CostConfig {
        pricing: crate::cost::Pricing::new(configured),
        budgets: crate::cost::Budgets {
            max_session_cost_usd: raw.max_session_cost_usd,
            max_daily_cost_usd: raw.max_daily_cost_usd,
            max_turn_tokens: raw.max_turn_tokens,
        },
    })
}

/// `line N: ` for the line where top-level `key` is set ("" if absent).
/// An unknown top-level key in words, with the known key nearest to it
/// when one is near ("line 3: unknown key `auto_aprove` ignored (did you
/// mean `auto_approve`?)").
fn unknown_key(text: &str, key: &str) -> String {
    let nearest = KNOWN_KEYS
        .iter()
        .map(|known| (strsim::damerau_levenshtein(key, known), *known))
        .min()
        .filter(|(distance, known)| *distance <= (known.len() / 3).max(2));
    let line = at(text, key);
    match nearest {
        Some((_, known)) => {
            format!("{line}unknown key `{key}` ignored (did you mean `{known}`?)")
        }
        None => format!("{line}unknown key `{key}` ignored"),
    }
}

/// The keys with an upper bound: the first one past it, named with its
/// line.
/// The bounds `raw` must keep that no other part checks: steps and
/// timeouts at least 1, the limits `at_most` names, a context of at least
/// one token, a compaction threshold in percent, absolute sandbox and
/// trust paths.
fn check_bounds(raw: &Raw, text: &str) -> Result<()> {
    if raw.max_steps == 0 {
        return Err(anyhow!(
            "{}max_steps must be at least 1",
            at(text, "max_steps")
        ));
    }
    if raw.subagent_max_steps == 0 || raw.subagent_timeout_ms == 0 {
        let key = if raw.subagent_max_steps == 0 {
            "subagent_max_steps"
        } else {
            "subagent_timeout_ms"
        };
        return Err(anyhow!("{}{key} must be at least 1", at(text, key)));
    }
    at_most(raw, text)?;
    if raw.context_max_tokens == Some(0) {
        return Err(anyhow!(
            "{}context_max_tokens must be at least 1",
            at(text, "context_max_tokens")
        ));
    }
    if !(1..=100).contains(&raw.compact_threshold_percent) {
        return Err(anyhow!(
            "{}compact_threshold_percent must be 1 to 100",
            at(text, "compact_threshold_percent")
        ));
    }
    for (key, paths) in [
        ("sandbox_writable_roots", &raw.sandbox_writable_roots),
        ("sandbox_readable_roots", &raw.sandbox_readable_roots),
        (
            "additional_directories_writable",
            &raw.additional_directories_writable,
        ),
        ("sandbox_unix_sockets", &raw.sandbox_unix_sockets),
        ("trusted_workspaces", &raw.trusted_workspaces),
    ] {
        if let Some(root) = paths.iter().find(|r| !r.is_absolute()) {
            return Err(anyhow!(
                "{}{key}: `{}` is not an absolute path",
                at(text, key),
                root.display()
            ));
        }
    }
    Ok(())
}

fn at_most(raw: &Raw, text: &str) -> Result<()> {
    let bounded = [
        ("max_subagents", u64::from(raw.max_subagents), 64),
        ("max_subagent_depth", u64::from(raw.max_subagent_depth), 4),
        (
            "max_background_processes",
            u64::from(raw.max_background_processes),
            64,
        ),
    ];
    match bounded.iter().find(|(_, value, max)| value > max) {
        Some((key, _, max)) => Err(anyhow!("{}{key} is at most {max}", at(text, key))),
        None => Ok(()),
    }
}

fn at(text: &str, key: &str) -> String {
    let mut in_table = false;
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.starts_with('[') {
            in_table = true;
        }
        let sets = line
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='));
        if !in_table && sets {
            return format!("line {}: ", index + 1);
        }
    }
    String::new()
}

/// `line N: ` for the header of table `name` ("" if absent).
fn at_table(text: &str, name: &str) -> String {
    text.lines()
        .position(|line| {
            line.trim()
                .strip_prefix('[')
                .and_then(|l| l.strip_suffix(']'))
                .is_some_and(|inner| inner.trim() == name)
        })
        .map_or_else(String::new, |index| format!("line {}: ", index + 1))
}

/// `line N: ` for byte `offset` of `text` ("" without a text: defaults).
fn line_at(text: &str, offset: usize) -> String {
    if text.is_empty() {
        return String::new();
    }
    let line = text[..offset.min(text.len())].matches('\n').count() + 1;
    format!("line {line}: ")
}

/// The error with its line number in front, e.g. `line 3: invalid type`,
/// and the table it is in (`line 7: mcp_servers.fs: unknown field …`).
fn located(text: &str, err: &toml::de::Error) -> String {
    match err.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let table = before
                .lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix('[')?.strip_suffix(']').map(str::trim))
                .filter(|t| !t.starts_with('['))
                .map(|t| format!("{t}: "))
                .unwrap_or_default();
            format!("line {line}: {table}{}", err.message())
        }
        None => err.message().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.limits.max_steps, 32);
        assert_eq!(config.limits.auto_approve, vec![Risk::Read]);
        let default = config.provider.defs.default_def();
        assert_eq!(default.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert_eq!(default.model, "gpt-4.1-mini");
        assert_eq!(default.context_max_tokens, 128_000);
    }

    #[test]
    fn keys_are_read() {
        let config = Config::parse(
            "model = \"m\"\nmax_steps = 3\nauto_approve = [\"read\", \"write\"]\n",
            Path::new("config.toml"),
        )
        .unwrap();
        assert_eq!(config.provider.defs.default_def().model, "m");
        assert_eq!(config.limits.max_steps, 3);
        assert_eq!(config.limits.auto_approve, vec![Risk::Read, Risk::Write]);
    }

    #[test]
    fn provider_errors_name_the_line_and_the_known_names() {
        let err = Config::parse(
            "model = \"m\"\nprovider = \"claude\"\n",
            Path::new("/h/config.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("/h/config.toml: line 2: unknown provider `claude` (known: anthropic,"),
            "{err}"
        );
        let err = Config::parse(
            "[providers.mine]\nmodel = \"m\"\n",
            Path::new("/h/config.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("/h/config.toml: line 1: provider `mine`"),
            "{err}"
        );
    }

    #[test]
    fn malformed_file_names_file_and_line() {
        let err = Config::parse(
            "model = \"m\"\nmax_steps = \"many\"\n",
            Path::new("/h/config.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("/h/config.toml: line 2:"), "{err}");
        let err = Config::parse("model = \n", Path::new("/h/config.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("/h/config.toml: line 1:"), "{err}");
    }

    #[test]
    fn max_background_processes_defaults_to_8_and_is_bounded() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.limits.max_background_processes, 8);
        let config = Config::parse("max_background_processes = 2\n", Path::new("c")).unwrap();
        assert_eq!(config.limits.max_background_processes, 2);
        let err = Config::parse(
            "model = \"m\"\nmax_background_processes = 65\n",
            Path::new("/h/config.toml"),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "/h/config.toml: line 2: max_background_processes is at most 64"
        );
    }

    #[test]
    fn mcp_server_errors_name_the_line_however_the_table_is_written() {
        for (text, expected) in [
            (
                "model = \"m\"\n[mcp_servers.fs]\ncommand = \"x\"\nstartup_timeout_ms = 0\n",
                "line 2: mcp_servers.fs: `startup_timeout_ms` must be at least 1",
            ),
            (
                "model = \"m\"\n\n[mcp_servers.\"a b\"]\ncommand = \"x\"\n",
                "line 3: mcp_servers.a b: a server name is",
            ),
            (
                "[mcp_servers]\nok = { command = \"x\" }\nfs = { url = \"ftp://x\" }\n",
                "line 3: mcp_servers.fs: `url` must start with",
            ),
            (
                "model = \"m\"\nmcp_servers.x__y.command = \"x\"\n",
                "line 2: mcp_servers.x__y: a server name may not contain `__`",
            ),
            (
                "[mcp_servers]\nfs = 3\n",
                "line 2: mcp_servers: invalid type: integer `3`, expected a table of server settings",
            ),
        ] {
            let err = Config::parse(text, Path::new("/h/config.toml"))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("/h/config.toml: {expected}")),
                "{text}\n{err}"
            );
        }
    }

    #[test]
    fn sandbox_keys_default_parse_and_refuse_relative_roots() {
        let config = Config::parse("", Path::new("config.toml")).unwrap();
        assert_eq!(config.sandbox.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(config.sandbox.network, scv_sandbox::Network::On);
        assert_eq!(
            *config.sandbox.web.allowed,
            crate::egress::allowlist::Allowlist::default_list()
        );
        assert!(
            config.sandbox.writable_roots.is_empty()
                && config.sandbox.tool_env_passthrough.is_empty()
        );
        let config = Config::parse(
            "sandbox = \"read-only\"\nsandbox_network = false\nsandbox_writable_roots = [\"/cache\"]\ntool_env_passthrough = [\"NPM_TOKEN\"]\nauto_approve = [\"read\", \"sandboxed\"]\n",
            Path::new("config.toml"),
        )
        .unwrap();
        assert_eq!(config.sandbox.mode, SandboxMode::ReadOnly);
        assert_eq!(config.sandbox.network, scv_sandbox::Network::Off);
        assert_eq!(config.sandbox.writable_roots, [PathBuf::from("/cache")]);
        assert_eq!(config.sandbox.tool_env_passthrough, ["NPM_TOKEN"]);
        assert_eq!(config.limits.auto_approve, [Risk::Read, Risk::Sandboxed]);
        let err = Config::parse(
            "model = \"m\"\nsandbox_writable_roots = [\"cache\"]\n",
            Path::new("/h/config.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("/h/config.toml: line 2: sandbox_writable_roots"),
            "{err}"
        );
        let config = Config::parse(
            "sandbox_network = \"allowlist\"\nsandbox_allowed_domains = [\"*.corp.example\", \"10.1.2.3\"]\n",
            Path::new("config.toml"),
        )
        .unwrap();
        assert_eq!(config.sandbox.network, scv_sandbox::Network::Allowlist);
        assert!(config
            .sandbox
            .web
            .allowed
            .allows("git.corp.example")
            .is_some());
        assert!(config.sandbox.web.allowed.allows("crates.io").is_none());
        for (text, expected) in [
            (
                "sandbox_network = \"proxy\"\n",
                "line 1: sandbox_network is true, false or \"allowlist\"",
            ),
            (
                "model = \"m\"\nsandbox_allowed_domains = [\"http://x.com\"]\n",
                "line 2: sandbox_allowed_domains: `http://x.com` is not a host name",
            ),
            (
                "web_fetch_max_bytes = 10\n",
                "line 1: web_fetch_max_bytes must be 1024 to 67108864",
            ),
        ] {
            let err = Config::parse(text, Path::new("/h/config.toml"))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("/h/config.toml: {expected}")),
                "{err}"
            );
        }
        let err = Config::parse("sandbox = \"strict\"\n", Path::new("/h/config.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 1") && err.contains("workspace-write"),
            "{err}"
        );
    }

    #[test]
    fn every_config_example_in_the_readme_parses() {
        let readme = include_str!("../../../README.md");
        let mut blocks = 0;
        for block in readme.split("```toml\n").skip(1) {
            let text = block.split("```").next().unwrap();
            Config::parse(text, Path::new("README.md"))
                .unwrap_or_else(|err| panic!("{err}\n{text}"));
            blocks += 1;
        }
        assert!(blocks >= 8, "{blocks}");
    }
}
