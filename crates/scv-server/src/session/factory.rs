//! Making a session: the workspace checked, the provider definition and
//! model resolved (with a session's `base_url`, which never gets the
//! definition's key unless it is that provider's own server), the
//! session's own MCP servers started, and the settings its turns run with.
//! What the session host does with the result is its business.

use crate::agent::SessionSettings;
use crate::config::Config;
use crate::live::Current;
use crate::provider::presets::{check_url, same_origin, ProviderDef};
use crate::provider::Provider;
use crate::sandbox::Sandbox;
use crate::server::Shared;
use crate::session::reject::{invalid, Reject};
use crate::tools::Registry;
use scv_protocol::limits::{
    MAX_PROMPT_HISTORY_BYTES, MAX_PROMPT_HISTORY_ITEMS, MAX_SERVER_FRAME_BYTES,
    MAX_TRANSCRIPT_BYTES, MAX_TRANSCRIPT_ITEMS,
};
use scv_protocol::{ErrorCode, EventBody, SessionStart, SessionStarted};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A session made from `session.start`.
pub(crate) struct Made {
    pub settings: SessionSettings,
    /// The session's own MCP hub, when it brought servers.
    pub mcp: Option<Arc<scv_mcp::Hub>>,
    /// `session.started`'s body.
    pub started: SessionStarted,
    /// Its custom commands and skills (`session.started.commands`, for a
    /// connection with capability `commands`).
    pub commands: Vec<scv_protocol::CommandInfo>,
}

/// A session's transcript, sandbox and tool environment (`hook_files`).
pub(super) type HookFiles = (
    Option<Arc<crate::transcript::Transcript>>,
    Option<crate::sandbox::SandboxView>,
    Arc<[(std::ffi::OsString, std::ffi::OsString)]>,
);

pub(crate) struct SessionFactory<'a> {
    shared: &'a Shared,
}

impl<'a> SessionFactory<'a> {
    pub(super) fn new(shared: &'a Shared) -> SessionFactory<'a> {
        SessionFactory { shared }
    }

    /// What `session.start` asks for, made; `source` is what its
    /// `SessionStart` hooks are told (`startup`, `resume`).
    pub(super) async fn start(
        &self,
        start: SessionStart,
        source: &'static str,
    ) -> Result<Made, Reject> {
        let cwd = start.cwd.clone();
        let cwd = crate::blocking::run(move || canonical_workspace(&cwd))
            .await
            .map_err(|err| Reject::new(ErrorCode::InternalError, err.to_string()))??;
        // What config.toml says now (read again if it was edited).
        self.shared.live.refresh().await;
        let current = self.shared.current();
        let custom = self.customization(&current, &cwd, source).await?;
        let extra = self.additional(&start, &cwd, &current).await?;
        let config = &current.config;
        let def = definition(config, start.provider.as_deref())?;
        let provider = self.provider(&current, def, start.model, start.base_url)?;
        // The workspace's `.mcp.json` (trusted), then the client's own.
        let (mut servers, mcp_warnings) = workspace_servers(config, &custom, &cwd);
        servers.extend(start.mcp_servers.clone().unwrap_or_default());
        let session_servers = match servers.is_empty() {
            false => Some(session_servers(config, &servers)?),
            true => None,
        };
        // `--stdio` starts its MCP servers with its first session.
        self.shared.start_mcp(std::slice::from_ref(&cwd)).await;
        let mcp = match session_servers {
            Some(specs) => {
                let hub = Arc::new(self.shared.session_hub());
                hub.reconcile(&specs, std::slice::from_ref(&cwd)).await;
                Some(hub)
            }
            None => None,
        };
        let mode = start.mode.unwrap_or_default();
        let mut started = started(&current.sandbox, &cwd, &provider.model, def);
        started.mode = Some(mode);
        started.command_diagnostics = custom.diagnostics();
        let workspace = cwd.clone();
        started.instructions = crate::blocking::run(move || {
            crate::instructions::load(&workspace)
                .into_iter()
                .map(|file| file.path.display().to_string())
                .collect()
        })
        .await
        .ok();
        started.config_warnings = self.shared.live.warnings();
        started.config_warnings.extend(
            custom
                .hooks
                .warnings()
                .iter()
                .chain(&custom.warnings)
                .chain(&mcp_warnings)
                .cloned(),
        );
        // An MCP server whose login is gone: said as the session opens.
        started
            .config_warnings
            .extend(self.shared.mcp.logins_needed().await);
        if let Some(decision) = &custom.trust {
            started
                .config_warnings
                .extend(crate::trust::warnings(decision));
            started.trust = crate::trust::info(decision).map(Box::new);
        }
        // The session starts (a first-run client explains what to set),
        // but its turns fail before sending until the key is there.
        started
            .config_warnings
            .extend(provider.missing_key_message("turns fail until it is set"));
        let commands = custom.infos();
        // A plugin's hooks read their own folder (`CLAUDE_PLUGIN_ROOT`);
        // the session's additional directories are shown as config.toml
        // says (read-only, or writable).
        let mut roots: Vec<PathBuf> = custom.plugins.iter().map(|p| p.root.clone()).collect();
        roots.extend(extra.iter().filter(|r| !r.writable).map(|r| r.path.clone()));
        let writable: Vec<PathBuf> = extra
            .iter()
            .filter(|r| r.writable)
            .map(|r| r.path.clone())
            .collect();
        let sandbox = current.sandbox.session(&cwd);
        let sandbox = sandbox.map(|view| match roots.is_empty() && writable.is_empty() {
            true => view,
            false => view.with_roots(&roots, &writable),
        });
        let (transcript, sandbox, tool_env) = self
            .hook_files(!custom.hooks.is_empty(), sandbox, current.sandbox.env())
            .await;
        started.sandbox_network = sandbox.as_ref().map(|view| view.network());
        let settings = SessionSettings {
            sandbox,
            mode: Arc::new(crate::agent::plan::ModeCell::new(mode)),
            custom: Arc::new(custom),
            scv_home: self.shared.scv_home.clone(),
            cwd: cwd.clone(),
            provider,
            context_max_tokens: def.context_max_tokens,
            tools: Registry::builtins(),
            no_tools: start.no_tools,
            submitter: "client".into(),
            sandbox_trusted: current.sandbox.trusted(),
            tool_env,
            config: current.config.clone(),
            limits: current.limits.clone(),
            transcript,
            background: crate::background::Background::new(
                current.config.limits.max_background_processes,
            ),
            roots: extra.into(),
        };
        Ok(Made {
            settings,
            mcp,
            started,
            commands,
        })
    }

    /// The session's additional directories, checked (`tools::roots`):
    /// a hostile one is `invalid_request`.
    async fn additional(
        &self,
        start: &SessionStart,
        cwd: &Path,
        current: &Current,
    ) -> Result<Vec<crate::tools::roots::Root>, Reject> {
        if start.additional_directories.is_empty() {
            return Ok(Vec::new());
        }
        let dirs = start.additional_directories.clone();
        let (cwd, home) = (cwd.to_path_buf(), self.shared.scv_home.to_path_buf());
        let writable = current.config.sandbox.writable_additional.clone();
        crate::blocking::run(move || crate::tools::roots::check(&dirs, &cwd, &home, &writable))
            .await
            .map_err(|err| Reject::new(ErrorCode::InternalError, err.to_string()))?
            .map_err(invalid)
    }

    /// For a session with hooks: its transcript (`transcript_path`), and
    /// its sandbox and tool environment made to show the transcript's
    /// folder and `CLAUDE_ENV_FILE`. Without hooks, `sandbox` and `env`
    /// as they are.
    pub(super) async fn hook_files(
        &self,
        hooks: bool,
        sandbox: Option<crate::sandbox::SandboxView>,
        env: Arc<[(std::ffi::OsString, std::ffi::OsString)]>,
    ) -> HookFiles {
        if !hooks {
            return (None, sandbox, env);
        }
        let home = self.shared.scv_home.to_path_buf();
        let Some(transcript) =
            crate::blocking::run(move || crate::transcript::Transcript::create(&home))
                .await
                .ok()
                .flatten()
        else {
            return (None, sandbox, env);
        };
        let sandbox = sandbox
            .map(|view| view.with_roots(&[transcript.dir().into()], &[transcript.env_dir()]));
        let file = ("CLAUDE_ENV_FILE".into(), transcript.env_file().into());
        let env = env.iter().cloned().chain([file]).collect();
        (Some(Arc::new(transcript)), sandbox, env)
    }

    /// What the user's files, and the repository's where it is trusted,
    /// add to a session in `cwd` (read off the async threads), its
    /// subagent definitions checked against `current`'s models.
    pub(super) async fn customization(
        &self,
        current: &Current,
        cwd: &Path,
        source: &'static str,
    ) -> Result<crate::customize::Customization, Reject> {
        let (home, cwd) = (self.shared.scv_home.clone(), cwd.to_path_buf());
        let trusted = current.config.trusted_workspaces.clone();
        let (plugins, plugin_warnings) = crate::plugins::configured(&current.config.table);
        let mut custom = crate::blocking::run(move || {
            crate::customize::load(&home, &cwd, &trusted, &plugins, source)
        })
                .await
                .map_err(|err| Reject::new(ErrorCode::InternalError, err.to_string()))?
                .map_err(|err| {
                    invalid(format!(
                        "hooks: {err} (the session does not start without the hooks you wrote or trusted; fix the file or move it away)"
                    ))
                })?;
        custom.warnings.extend(plugin_warnings);
        let config = &current.config;
        custom.check_agents(|model| {
            config.cost.pricing.price(model).is_some() || config.provider.defs.has_model(model)
        });
        Ok(custom)
    }

    /// `session.configure` (extension): the settings of `current` with
    /// another provider and/or model, and `session.configured`'s body. A
    /// model alone keeps the provider (and its base URL); a provider alone
    /// takes that provider's model.
    pub(super) fn configure(
        &self,
        current: &SessionSettings,
        provider: Option<String>,
        model: Option<String>,
    ) -> Result<(SessionSettings, EventBody), Reject> {
        // A switch takes what config.toml says now.
        let now = self.shared.current();
        let defs = &now.config.provider.defs;
        let def = match provider.as_deref() {
            Some(name) => definition(&now.config, Some(name))?,
            None => defs
                .get(&current.provider.name)
                .unwrap_or_else(|| defs.default_def()),
        };
        let base_url = provider
            .is_none()
            .then(|| current.provider.base_url.clone());
        let model = model.or_else(|| provider.is_none().then(|| current.provider.model.clone()));
        let next = self.provider(&now, def, model, base_url)?;
        // A switch to a provider whose key is missing is refused: the
        // session keeps the one that works.
        if let Some(message) = next.missing_key_message("the session keeps its provider") {
            return Err(invalid(message));
        }
        let configured = EventBody::SessionConfigured {
            provider: def.name.clone(),
            model: next.model.clone(),
            context_max_tokens: def.context_max_tokens,
            max_session_cost_usd: None,
            mode: Some(current.mode.get()),
        };
        let settings = SessionSettings {
            mode: current.mode.clone(),
            custom: current.custom.clone(),
            scv_home: current.scv_home.clone(),
            cwd: current.cwd.clone(),
            provider: next,
            context_max_tokens: def.context_max_tokens,
            tools: current.tools.clone(),
            no_tools: current.no_tools,
            submitter: current.submitter.clone(),
            sandbox: current.sandbox.clone(),
            sandbox_trusted: current.sandbox_trusted,
            tool_env: current.tool_env.clone(),
            config: now.config.clone(),
            limits: now.limits.clone(),
            transcript: current.transcript.clone(),
            background: current.background.clone(),
            roots: current.roots.clone(),
        };
        Ok((settings, configured))
    }

    /// A provider for `def`, with a session's `model` / `base_url` on top.
    fn provider(
        &self,
        current: &Current,
        def: &ProviderDef,
        model: Option<String>,
        base_url: Option<String>,
    ) -> Result<Provider, Reject> {
        let config = &current.config;
        let model = match model {
            Some(model) if model.trim().is_empty() => return Err(invalid("model is empty")),
            Some(model) => model,
            None => def.model.clone(),
        };
        let base_url = match base_url {
            Some(url) => {
                check_url(&url).map_err(invalid)?;
                url
            }
            None => def.base_url.clone(),
        };
        // The key and headers were configured for the definition's own
        // server; a session's URL elsewhere gets neither (put it in a
        // `[providers.NAME]` table to give it a key).
        let own = same_origin(&base_url, &def.base_url);
        if !own {
            tracing::info!(
                "session base_url {base_url} is not provider `{}`'s server: sending no key or configured headers there",
                def.name
            );
        }
        let api_key = own.then(|| current.api_key(def)).flatten();
        Ok(Provider {
            http: self.shared.http(),
            name: def.name.clone(),
            wire: def.wire,
            base_url,
            model,
            api_key,
            api_key_env: def.api_key_env.clone(),
            headers: if own {
                def.headers.clone()
            } else {
                Default::default()
            },
            max_output_tokens: def.max_output_tokens,
            reasoning_effort: config.provider.reasoning_effort,
            prompt_cache: config.provider.prompt_cache,
            reasoning_replay: def.reasoning_replay,
            idle_timeout: config.provider.stream_idle_timeout(),
            max_response_bytes: config.provider.max_response_bytes,
            max_retries: config.provider.max_retries,
        })
    }
}

/// `session.started` for a session in `cwd` with `model` of `def`.
fn started(sandbox: &Sandbox, cwd: &Path, model: &str, def: &ProviderDef) -> SessionStarted {
    SessionStarted {
        cwd: cwd.display().to_string(),
        model: model.to_string(),
        context_max_tokens: def.context_max_tokens,
        max_server_frame_bytes: MAX_SERVER_FRAME_BYTES as u64,
        max_transcript_bytes: MAX_TRANSCRIPT_BYTES as u64,
        max_transcript_items: MAX_TRANSCRIPT_ITEMS as u64,
        max_prompt_history_bytes: MAX_PROMPT_HISTORY_BYTES as u64,
        max_prompt_history_items: MAX_PROMPT_HISTORY_ITEMS as u64,
        provider: Some(def.name.clone()),
        sandbox: Some(sandbox.status().to_string()),
        sandbox_gaps: sandbox.gaps().to_vec(),
        sandbox_warnings: sandbox.warnings(cwd),
        max_session_cost_usd: None,
        spent: None,
        resumed: false,
        unsent_prompts: None,
        forked_from: None,
        mode: None,
        commands: None,
        command_diagnostics: Vec::new(),
        instructions: None,
        config_warnings: Vec::new(),
        sandbox_network: None,
        trust: None,
    }
}

/// The provider definition named `name` (the configured one without).
fn definition<'c>(config: &'c Config, name: Option<&str>) -> Result<&'c ProviderDef, Reject> {
    let defs = &config.provider.defs;
    match name {
        None => Ok(defs.default_def()),
        Some(name) => defs.get(name).ok_or_else(|| {
            invalid(format!(
                "unknown provider `{name}` (known: {})",
                defs.names()
            ))
        }),
    }
}

/// `session.start.mcp_servers` (extension), checked as config tables
/// are: the configured servers plus these, names unique, at most
/// `scv_mcp::MAX_SERVERS` in all.
fn session_servers(
    config: &Config,
    servers: &std::collections::BTreeMap<String, serde_json::Value>,
) -> Result<Vec<scv_mcp::ServerSpec>, Reject> {
    let mut specs = config.mcp_servers.clone();
    if specs.len() + servers.len() > scv_mcp::MAX_SERVERS {
        return Err(invalid(format!(
            "at most {} MCP servers in all (the daemon's and the session's)",
            scv_mcp::MAX_SERVERS
        )));
    }
    for (name, value) in servers {
        if specs.iter().any(|spec| spec.name == *name) {
            return Err(invalid(format!(
                "mcp_servers.{name}: the daemon already has a server of that name"
            )));
        }
        let raw: scv_mcp::RawServer = serde_json::from_value(value.clone())
            .map_err(|err| invalid(format!("mcp_servers.{name}: {err}")))?;
        let spec = scv_mcp::ServerSpec::new(name, raw)
            .map_err(|err| invalid(format!("mcp_servers.{name}: {err}")))?;
        specs.push(spec);
    }
    Ok(specs)
}

/// The MCP servers of the workspace's `.mcp.json` when it is trusted
/// (`mcp_json`), each checked as a session's server; one that is not
/// valid, or whose name the daemon's servers have, is a warning.
fn workspace_servers(
    config: &Config,
    custom: &crate::customize::Customization,
    cwd: &Path,
) -> (
    std::collections::BTreeMap<String, serde_json::Value>,
    Vec<String>,
) {
    let text = custom
        .trust
        .as_ref()
        .and_then(|trust| trust.usable(".mcp.json"))
        .and_then(|bytes| std::str::from_utf8(bytes).ok());
    let path = cwd.join(".mcp.json");
    let env = |name: &str| std::env::var(name).ok();
    let (mut servers, mut warnings) = match text {
        Some(text) => crate::mcp_json::servers(&path, text, &env),
        None => Default::default(),
    };
    // The plugins' (`${CLAUDE_PLUGIN_ROOT}` is the plugin's folder).
    for plugin in &custom.plugins {
        let Some(text) = plugin.mcp_json() else {
            continue;
        };
        let root = plugin.root.display().to_string();
        let env = |name: &str| match name {
            "CLAUDE_PLUGIN_ROOT" => Some(root.clone()),
            _ => std::env::var(name).ok(),
        };
        let (found, skipped) =
            crate::mcp_json::servers(&plugin.root.join(".mcp.json"), &text, &env);
        warnings.extend(skipped);
        for (name, server) in found {
            match servers.entry(name) {
                std::collections::btree_map::Entry::Occupied(taken) => warnings.push(format!(
                    "plugin {}: MCP server `{}` is skipped: another has that name",
                    plugin.name,
                    taken.key()
                )),
                std::collections::btree_map::Entry::Vacant(room) => {
                    room.insert(server);
                }
            }
        }
    }
    servers.retain(|name, value| {
        let why = if config.mcp_servers.iter().any(|spec| spec.name == *name) {
            Some("config.toml has a server of that name".to_string())
        } else {
            serde_json::from_value::<scv_mcp::RawServer>(value.clone())
                .map_err(|err| err.to_string())
                .and_then(|raw| scv_mcp::ServerSpec::new(name, raw))
                .err()
        };
        if let Some(why) = &why {
            warnings.push(format!(
                "{}: MCP server `{name}` is skipped: {why}",
                path.display()
            ));
        }
        why.is_none()
    });
    (servers, warnings)
}

/// The canonical workspace for `cwd`, or an `invalid_request` naming why not.
fn canonical_workspace(cwd: &str) -> Result<PathBuf, Reject> {
    if cwd.is_empty() {
        return Err(invalid("cwd is empty; give an absolute path"));
    }
    let path = Path::new(cwd);
    if !path.is_absolute() {
        return Err(invalid(format!("cwd `{cwd}` is not an absolute path")));
    }
    let canonical = path.canonicalize().map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => invalid(format!("cwd `{cwd}` does not exist")),
        _ => invalid(format!("cwd `{cwd}` cannot be used: {err}")),
    })?;
    if !canonical.is_dir() {
        return Err(invalid(format!("cwd `{cwd}` is not a directory")));
    }
    Ok(canonical)
}
