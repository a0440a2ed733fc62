//! Provider definitions: the built-in presets, `[providers.NAME]` tables
//! that add or adjust them, and the top-level keys that override the
//! selected one. Resolved once, at start-up, into [`Providers`].
//!
//! Part of the provider layer, which the configuration imports (never the
//! reverse): a definition names its wire from the model vocabulary, and
//! nothing here knows how a wire is spoken.
//!
//! Preset URLs and auth were checked against each provider's own
//! documentation (docs/DESIGN.md lists the sources).

use crate::model::Wire;
use serde::Deserialize;
use std::collections::BTreeMap;

/// One provider as a session uses it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProviderDef {
    pub name: String,
    pub wire: Wire,
    pub base_url: String,
    /// The environment variable holding the key; `None`: no key is sent.
    pub api_key_env: Option<String>,
    pub model: String,
    pub context_max_tokens: u64,
    pub max_output_tokens: u64,
    /// Extra HTTP headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Chat wire: send `reasoning_content` back on assistant messages that
    /// made tool calls (DeepSeek's thinking mode requires it).
    pub reasoning_replay: bool,
}

struct Preset {
    name: &'static str,
    wire: Wire,
    base_url: &'static str,
    api_key_env: Option<&'static str>,
    model: &'static str,
    context_max_tokens: u64,
    reasoning_replay: bool,
}

/// Whether `url` is served by one of the presets' public APIs that take a
/// key (`api.openai.com`, `api.anthropic.com`, …): a request there without
/// one is certain to be refused.
pub(crate) fn is_keyed_public_api(url: &str) -> bool {
    PRESETS
        .iter()
        .filter(|preset| preset.api_key_env.is_some())
        .any(|preset| same_origin(url, preset.base_url))
}

/// Whether `url` is OpenAI's own API, where Chat Completions take an
/// output cap as `max_completion_tokens` (its `max_tokens` is deprecated
/// and refused by its reasoning models).
pub(crate) fn is_openai(url: &str) -> bool {
    PRESETS
        .iter()
        .filter(|preset| preset.name == "openai")
        .any(|preset| same_origin(url, preset.base_url))
}

/// The built-in presets (ARCHITECTURE.md's fixed interface).
const PRESETS: &[Preset] = &[
    Preset {
        name: "openai",
        wire: Wire::Chat,
        base_url: "https://api.openai.com/v1",
        api_key_env: Some("OPENAI_API_KEY"),
        model: "gpt-4.1-mini",
        context_max_tokens: 128_000,
        reasoning_replay: false,
    },
    Preset {
        name: "openai-responses",
        wire: Wire::Responses,
        base_url: "https://api.openai.com/v1",
        api_key_env: Some("OPENAI_API_KEY"),
        model: "gpt-5-mini",
        context_max_tokens: 400_000,
        reasoning_replay: false,
    },
    Preset {
        name: "anthropic",
        wire: Wire::Anthropic,
        base_url: "https://api.anthropic.com/v1",
        api_key_env: Some("ANTHROPIC_API_KEY"),
        model: "claude-sonnet-4-5",
        context_max_tokens: 200_000,
        reasoning_replay: false,
    },
    Preset {
        name: "ollama",
        wire: Wire::Chat,
        base_url: "http://127.0.0.1:11434/v1",
        api_key_env: None,
        model: "qwen3",
        context_max_tokens: 32_768,
        reasoning_replay: false,
    },
    Preset {
        name: "lmstudio",
        wire: Wire::Chat,
        base_url: "http://127.0.0.1:1234/v1",
        api_key_env: None,
        model: "local-model",
        context_max_tokens: 32_768,
        reasoning_replay: false,
    },
    Preset {
        name: "openrouter",
        wire: Wire::Chat,
        base_url: "https://openrouter.ai/api/v1",
        api_key_env: Some("OPENROUTER_API_KEY"),
        model: "openai/gpt-4.1-mini",
        context_max_tokens: 128_000,
        reasoning_replay: false,
    },
    Preset {
        name: "deepseek",
        wire: Wire::Chat,
        base_url: "https://api.deepseek.com",
        api_key_env: Some("DEEPSEEK_API_KEY"),
        model: "deepseek-chat",
        context_max_tokens: 128_000,
        // "For turns that do perform tool calls, the reasoning_content must
        // be fully passed back to the API in all subsequent requests"
        // (DeepSeek's thinking-mode guide).
        reasoning_replay: true,
    },
    Preset {
        name: "gemini",
        wire: Wire::Chat,
        base_url: "https://generativelanguage.googleapis.com/v1beta/openai",
        api_key_env: Some("GEMINI_API_KEY"),
        model: "gemini-2.5-flash",
        context_max_tokens: 1_048_576,
        reasoning_replay: false,
    },
];

/// A `[providers.NAME]` table: a new provider (with `wire` and
/// `base_url`), or changes to a preset.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProviderTable {
    pub wire: Option<Wire>,
    pub base_url: Option<String>,
    /// An empty string: send no key.
    pub api_key_env: Option<String>,
    pub model: Option<String>,
    pub context_max_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub reasoning_replay: Option<bool>,
}

/// The top-level keys that override the selected provider.
#[derive(Debug, Clone, Default)]
pub(crate) struct Overrides {
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub context_max_tokens: Option<u64>,
}

/// Every provider a session can name, and the one sessions use by default.
#[derive(Debug, Clone)]
pub(crate) struct Providers {
    defs: BTreeMap<String, ProviderDef>,
    default: String,
}

/// Output tokens asked for when nothing says otherwise.
pub(crate) const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 32_000;

impl Providers {
    /// Presets, adjusted and extended by `tables`; `selected` gets the
    /// top-level `overrides`. Errors name the provider and the problem.
    pub(crate) fn resolve(
        tables: &BTreeMap<String, ProviderTable>,
        selected: &str,
        overrides: &Overrides,
        max_output_tokens: Option<u64>,
    ) -> Result<Providers, String> {
        let mut defs = BTreeMap::new();
        for preset in PRESETS {
            defs.insert(
                preset.name.to_string(),
                ProviderDef {
                    name: preset.name.into(),
                    wire: preset.wire,
                    base_url: preset.base_url.into(),
                    api_key_env: preset.api_key_env.map(Into::into),
                    model: preset.model.into(),
                    context_max_tokens: preset.context_max_tokens,
                    max_output_tokens: max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
                    headers: Vec::new(),
                    reasoning_replay: preset.reasoning_replay,
                },
            );
        }
        for (name, table) in tables {
            valid_name(name)?;
            let def = match defs.remove(name) {
                Some(def) => def,
                None => {
                    let (Some(wire), Some(base_url)) = (table.wire, &table.base_url) else {
                        return Err(format!(
                            "provider `{name}` is not a preset, so it needs `wire` and `base_url`"
                        ));
                    };
                    ProviderDef {
                        name: name.clone(),
                        wire,
                        base_url: base_url.clone(),
                        api_key_env: None,
                        model: String::new(),
                        context_max_tokens: 128_000,
                        max_output_tokens: max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
                        headers: Vec::new(),
                        reasoning_replay: false,
                    }
                }
            };
            let def = apply(def, table);
            if def.model.trim().is_empty() {
                return Err(format!("provider `{name}` needs a `model`"));
            }
            check_url(&def.base_url).map_err(|err| format!("provider `{name}`: {err}"))?;
            defs.insert(name.clone(), def);
        }
        let Some(def) = defs.get_mut(selected) else {
            let known: Vec<&str> = defs.keys().map(String::as_str).collect();
            return Err(format!(
                "unknown provider `{selected}` (known: {})",
                known.join(", ")
            ));
        };
        if let Some(model) = &overrides.model {
            def.model = model.clone();
        }
        if let Some(url) = &overrides.base_url {
            check_url(url)?;
            def.base_url = url.clone();
        }
        if let Some(env) = &overrides.api_key_env {
            def.api_key_env = (!env.is_empty()).then(|| env.clone());
        }
        if let Some(tokens) = overrides.context_max_tokens {
            def.context_max_tokens = tokens;
        }
        Ok(Providers {
            defs,
            default: selected.to_string(),
        })
    }

    pub(crate) fn get(&self, name: &str) -> Option<&ProviderDef> {
        self.defs.get(name)
    }

    /// The provider sessions use unless they name another.
    pub(crate) fn default_def(&self) -> &ProviderDef {
        // `resolve` made sure the default is defined.
        self.defs
            .get(&self.default)
            .or_else(|| self.defs.values().next())
            .unwrap_or_else(|| unreachable!("there are always presets"))
    }

    /// Whether some definition's model is `model`.
    pub(crate) fn has_model(&self, model: &str) -> bool {
        self.defs.values().any(|d| d.model == model)
    }

    /// Every name, for error messages.
    pub(crate) fn names(&self) -> String {
        self.defs.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// Every environment variable that holds a provider key.
    pub(crate) fn key_variables(&self) -> impl Iterator<Item = &str> {
        self.defs.values().filter_map(|d| d.api_key_env.as_deref())
    }
}

fn apply(mut def: ProviderDef, table: &ProviderTable) -> ProviderDef {
    if let Some(wire) = table.wire {
        def.wire = wire;
    }
    if let Some(url) = &table.base_url {
        def.base_url = url.clone();
    }
    if let Some(env) = &table.api_key_env {
        def.api_key_env = (!env.is_empty()).then(|| env.clone());
    }
    if let Some(model) = &table.model {
        def.model = model.clone();
    }
    if let Some(tokens) = table.context_max_tokens {
        def.context_max_tokens = tokens;
    }
    if let Some(tokens) = table.max_output_tokens {
        def.max_output_tokens = tokens;
    }
    def.headers.extend(
        table
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone())),
    );
    if let Some(replay) = table.reasoning_replay {
        def.reasoning_replay = replay;
    }
    def
}

/// A provider name: letters, digits, `_`, `-`.
fn valid_name(name: &str) -> Result<(), String> {
    if !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Ok(())
    } else {
        Err(format!(
            "provider name `{name}` must be letters, digits, `_` or `-`"
        ))
    }
}

pub(crate) fn check_url(url: &str) -> Result<(), String> {
    let parsed =
        reqwest::Url::parse(url).map_err(|err| format!("base_url `{url}` is not a URL: {err}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("base_url `{url}` must be http or https"));
    }
    Ok(())
}

/// Whether `url` is served from the same origin (scheme, host, port) as
/// `own`: a session's `base_url` elsewhere never carries the definition's
/// key or headers, which the user configured for `own`.
pub(crate) fn same_origin(url: &str, own: &str) -> bool {
    match (reqwest::Url::parse(url), reqwest::Url::parse(own)) {
        (Ok(url), Ok(own)) => url.origin() == own.origin(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert!(same_origin(
            "https://api.openai.com/v2",
            "https://api.openai.com/v1"
        ));
        assert!(same_origin(
            "https://api.openai.com:443/v1",
            "https://api.openai.com/v1"
        ));
        assert!(!same_origin(
            "http://api.openai.com/v1",
            "https://api.openai.com/v1"
        ));
        assert!(!same_origin(
            "https://attacker.example/v1",
            "https://api.openai.com/v1"
        ));
        assert!(!same_origin(
            "http://127.0.0.1:9/v1",
            "http://127.0.0.1:8/v1"
        ));
        assert!(!same_origin("not a url", "https://api.openai.com/v1"));
    }

    fn resolve(tables: &str, selected: &str, overrides: Overrides) -> Result<Providers, String> {
        let tables: BTreeMap<String, ProviderTable> = toml::from_str(tables).unwrap();
        Providers::resolve(&tables, selected, &overrides, None)
    }

    #[test]
    fn presets_tables_and_overrides() {
        let providers = resolve(
            "[anthropic]\nmax_output_tokens = 8000\n[local]\nwire = \"chat\"\nbase_url = \"http://127.0.0.1:8000/v1\"\nmodel = \"qwen\"\nheaders = { X-Title = \"scv\" }\n",
            "openai",
            Overrides {
                model: Some("gpt-4o".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(providers.default_def().model, "gpt-4o");
        let anthropic = providers.get("anthropic").unwrap();
        assert_eq!(
            (
                anthropic.wire,
                anthropic.max_output_tokens,
                anthropic.model.as_str()
            ),
            (Wire::Anthropic, 8000, "claude-sonnet-4-5")
        );
        let local = providers.get("local").unwrap();
        assert_eq!(local.api_key_env, None);
        assert_eq!(local.headers, [("X-Title".to_string(), "scv".to_string())]);
        assert!(providers.get("deepseek").unwrap().reasoning_replay);
    }

    #[test]
    fn unknown_and_incomplete_providers_are_errors() {
        let err = resolve("", "nope", Overrides::default()).unwrap_err();
        assert!(err.starts_with("unknown provider `nope` (known: anthropic, deepseek, gemini, lmstudio, ollama, openai, openai-responses, openrouter)"), "{err}");
        let err = resolve("[mine]\nmodel = \"m\"\n", "openai", Overrides::default()).unwrap_err();
        assert!(err.contains("needs `wire` and `base_url`"), "{err}");
    }
}
