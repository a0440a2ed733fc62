//! `scv mcp list`: the daemon's MCP servers (its `mcp:NAME` components),
//! with whether each HTTP server is logged in; `scv mcp login NAME` and
//! `scv mcp logout NAME`: its OAuth login, in `$SCV_HOME/mcp-auth/`.

use anyhow::Result;
use scv_protocol::{ComponentStatus, DaemonCommand, Event, EventBody};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

pub async fn list(home: &Path, socket: &Path, json: bool) -> Result<ExitCode> {
    // The daemon runs the servers; start it if it is not running.
    drop(scv_client::ensure_daemon(home, socket).await?);
    let mut status = crate::control::control(socket, DaemonCommand::Status).await?;
    status
        .components
        .retain(|c| c.kind() == scv_protocol::ComponentKind::Mcp);
    if json {
        let event = Event::reply(None, EventBody::DaemonStatus { status });
        println!("{}", serde_json::to_string(&event)?);
    } else {
        print!(
            "{}",
            scv_client::text::visible(&describe(&status.components, home, &logins(home)))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Each configured HTTP server's login: `yes`, `no` (a server with
/// `auth = "oauth"`, or one whose error asks for a login), or `-`.
fn logins(home: &Path) -> BTreeMap<String, Login> {
    let Ok(servers) = scv_mcp::auth::configured(home) else {
        return BTreeMap::new();
    };
    servers
        .iter()
        .filter_map(|(name, raw)| {
            let logged_in = scv_mcp::auth::logged_in(home, name, raw)?;
            Some((
                name.clone(),
                Login {
                    logged_in,
                    oauth: raw.auth.as_deref() == Some("oauth"),
                },
            ))
        })
        .collect()
}

/// An HTTP server's login, as `scv mcp list` shows it.
pub struct Login {
    pub logged_in: bool,
    /// Configured with `auth = "oauth"`.
    pub oauth: bool,
}

/// One line per server, after a header.
pub fn describe(
    servers: &[ComponentStatus],
    home: &Path,
    logins: &BTreeMap<String, Login>,
) -> String {
    if servers.is_empty() {
        return format!(
            "no MCP servers configured (add [mcp_servers.NAME] to {})\n",
            home.join("config.toml").display()
        );
    }
    let mut out = format!(
        "{:<24} {:<10} {:<6} {:>5} {:>8}  {}\n",
        "NAME", "STATE", "LOGIN", "TOOLS", "RESTARTS", "ERROR"
    );
    for server in servers {
        let name = server.name();
        let state = serde_json::to_value(server.state)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let asks = server
            .error
            .as_deref()
            .is_some_and(|e| e.contains("scv mcp login"));
        let login = match logins.get(name) {
            Some(login) if login.logged_in => "yes",
            Some(login) if login.oauth || asks => "no",
            _ if asks => "no",
            _ => "-",
        };
        out.push_str(&format!(
            "{:<24} {:<10} {:<6} {:>5} {:>8}  {}\n",
            name,
            state,
            login,
            server.tools.unwrap_or(0),
            server.restarts,
            scv_client::text::visible(server.error.as_deref().unwrap_or("")),
        ));
    }
    out
}

/// The URL of the configured HTTP server `name`.
fn server_url(home: &Path, name: &str) -> Result<String> {
    Ok(server(home, name)?.0)
}

/// The URL of the configured HTTP server `name`, and how SCV identifies
/// itself to its authorization server.
fn server(home: &Path, name: &str) -> Result<(String, scv_mcp::auth::login::Client)> {
    let servers = scv_mcp::auth::configured(home).map_err(anyhow::Error::msg)?;
    let Some(raw) = servers.get(name) else {
        anyhow::bail!(
            "no MCP server `{name}` in {} (add [mcp_servers.{name}] with a `url`)",
            home.join("config.toml").display()
        );
    };
    let client = scv_mcp::auth::login::Client {
        metadata_url: raw.client_metadata_url.clone(),
    };
    match &raw.url {
        Some(url) => Ok((url.clone(), client)),
        None => anyhow::bail!("`{name}` is a `command` server; only `url` servers log in"),
    }
}

/// How long `scv mcp login` waits for the browser's redirect.
const LOGIN_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

pub async fn login(home: &Path, name: &str) -> Result<ExitCode> {
    let (url, client) = server(home, name)?;
    let done = scv_mcp::auth::login::login(home, name, &url, &client, LOGIN_WAIT, |auth_url| {
        println!("Open this URL in a browser to log in to `{name}`:\n\n  {auth_url}\n");
        println!(
            "Waiting for the redirect to 127.0.0.1 (at most {} minutes)…",
            LOGIN_WAIT.as_secs() / 60
        );
        use std::io::Write;
        let _ = std::io::stdout().flush();
    })
    .await
    .map_err(anyhow::Error::msg)?;
    println!(
        "Logged in to `{name}` (credentials in {}); a running daemon uses the login within a second.",
        done.file.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn logout(home: &Path, name: &str) -> Result<ExitCode> {
    let url = server_url(home, name)?;
    let store = scv_mcp::auth::store::FileStore::new(home, name, &url);
    if store.remove().map_err(anyhow::Error::msg)? {
        println!("Logged out of `{name}`; the daemon no longer sends its token.");
    } else {
        println!("`{name}` was not logged in.");
    }
    Ok(ExitCode::SUCCESS)
}
