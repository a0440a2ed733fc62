//! `$SCV_HOME/config.toml` and the environment.
//!
//! Every key is optional. A malformed file is a startup error naming the
//! file and the line; an unknown key is reported on stderr and ignored, so a
//! newer config does not stop an older server.

use anyhow::{anyhow, Context, Result};
use scv_protocol::Risk;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct Config {
    pub provider: String,
    pub model: String,
    pub base_url: String,
    pub api_key_env: String,
    pub context_max_tokens: u64,
    /// Compaction starts when the estimated prompt passes this share of
    /// `context_max_tokens`, in percent.
    pub compact_threshold_percent: u64,
    pub max_steps: u32,
    pub auto_approve: Vec<Risk>,
    pub bash_timeout_ms: u64,
    /// Cap on the `timeout_ms` a model asks for.
    pub bash_max_timeout_ms: u64,
    pub tool_output_max_bytes: usize,
    pub max_history_bytes: usize,
    pub stream_idle_timeout_ms: u64,
    /// Retries of a transient provider failure (429/5xx before any output).
    pub provider_max_retries: u32,
    /// The daemon workspace (ClawBot sessions without their own).
    pub workspace: Option<PathBuf>,
    pub ilink_base_url: Option<String>,
    /// How long a ClawBot approval waits for the owner's y/n (10 minutes).
    pub clawbot_approval_timeout_ms: u64,
    /// A daemon connection that sends no `initialize` within this is closed.
    pub initialize_timeout_ms: u64,
    /// Connections the daemon serves at once (lowered to fit the
    /// descriptor limit).
    pub max_connections: usize,
}

const KNOWN_KEYS: &[&str] = &[
    "provider",
    "model",
    "base_url",
    "api_key_env",
    "context_max_tokens",
    "compact_threshold_percent",
    "max_steps",
    "auto_approve",
    "bash_timeout_ms",
    "bash_max_timeout_ms",
    "tool_output_max_bytes",
    "max_history_bytes",
    "stream_idle_timeout_ms",
    "provider_max_retries",
    "workspace",
    "ilink_base_url",
    "clawbot_approval_timeout_ms",
    "initialize_timeout_ms",
    "max_connections",
];

impl Default for Config {
    fn default() -> Self {
        Config {
            provider: "openai".into(),
            model: "gpt-4.1-mini".into(),
            base_url: "https://api.openai.com/v1".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            context_max_tokens: 128_000,
            compact_threshold_percent: 80,
            max_steps: 32,
            auto_approve: vec![Risk::Read],
            bash_timeout_ms: 120_000,
            bash_max_timeout_ms: 600_000,
            tool_output_max_bytes: 64 * 1024,
            max_history_bytes: 16 * 1024 * 1024,
            stream_idle_timeout_ms: 300_000,
            provider_max_retries: 3,
            workspace: None,
            ilink_base_url: None,
            clawbot_approval_timeout_ms: 600_000,
            initialize_timeout_ms: 10_000,
            max_connections: 2048,
        }
    }
}

impl Config {
    /// Reads `home/config.toml`; a missing file means the defaults.
    pub fn load(home: &Path) -> Result<Config> {
        let path = home.join("config.toml");
        match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&text, &path),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    pub fn parse(text: &str, path: &Path) -> Result<Config> {
        let table: toml::Table = text
            .parse()
            .map_err(|err| anyhow!("{}: {}", path.display(), located(text, &err)))?;
        for key in table.keys().filter(|k| !KNOWN_KEYS.contains(&k.as_str())) {
            tracing::warn!("{}: unknown key `{key}` ignored", path.display());
        }
        let config: Config = toml::from_str(text)
            .map_err(|err| anyhow!("{}: {}", path.display(), located(text, &err)))?;
        config
            .validate()
            .map_err(|err| anyhow!("{}: {err}", path.display()))?;
        Ok(config)
    }

    fn validate(&self) -> Result<()> {
        if self.provider != "openai" {
            return Err(anyhow!(
                "unknown provider `{}` (supported: openai)",
                self.provider
            ));
        }
        if self.max_steps == 0 {
            return Err(anyhow!("max_steps must be at least 1"));
        }
        if self.context_max_tokens == 0 {
            return Err(anyhow!("context_max_tokens must be at least 1"));
        }
        if !(1..=100).contains(&self.compact_threshold_percent) {
            return Err(anyhow!("compact_threshold_percent must be 1 to 100"));
        }
        Ok(())
    }

    /// The API key from the variable named by `api_key_env`, if set.
    pub fn api_key(&self) -> Option<String> {
        std::env::var(&self.api_key_env)
            .ok()
            .filter(|key| !key.is_empty())
    }

    pub fn stream_idle_timeout(&self) -> Duration {
        Duration::from_millis(self.stream_idle_timeout_ms.max(1))
    }
}

/// The error with its line number in front, e.g. `line 3: invalid type`.
fn located(text: &str, err: &toml::de::Error) -> String {
    match err.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("line {line}: {}", err.message())
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
        assert_eq!(config.max_steps, 32);
        assert_eq!(config.auto_approve, vec![Risk::Read]);
        assert_eq!(config.api_key_env, "OPENAI_API_KEY");
    }

    #[test]
    fn keys_are_read() {
        let config = Config::parse(
            "model = \"m\"\nmax_steps = 3\nauto_approve = [\"read\", \"write\"]\n",
            Path::new("config.toml"),
        )
        .unwrap();
        assert_eq!(config.model, "m");
        assert_eq!(config.max_steps, 3);
        assert_eq!(config.auto_approve, vec![Risk::Read, Risk::Write]);
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
}
