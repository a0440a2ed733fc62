//! OAuth for HTTP MCP servers: the credential store under
//! `$SCV_HOME/mcp-auth/` ([`store`]), the login ([`login`]), the
//! daemon's authorized client and login watch ([`client`]), and the
//! `[mcp_servers]` tables as the CLI reads them ([`configured`]).

pub(crate) mod client;
pub mod login;
pub mod store;
pub(crate) mod watched;

use crate::spec::RawServer;
use std::collections::BTreeMap;
use std::path::Path;

/// What a server that needs a login says, naming the command.
pub fn needs_login(name: &str) -> String {
    format!("needs a login: run `scv mcp login {name}`")
}

/// Whether a connection's failure was the server asking for credentials
/// (HTTP 401) or the authorization server refusing the refresh (an error
/// answer, such as `invalid_grant` or `invalid_client`: not a network
/// failure, which is retried), as rmcp words them.
pub(crate) fn is_auth_required(why: &str) -> bool {
    why.contains("Auth required")
        || why.contains("authorization required")
        || why.contains("401 Unauthorized")
        || why.contains("refresh token was rejected")
        || (why.contains("token refresh failed") && why.contains("Server returned error response"))
}

/// The `[mcp_servers]` tables of `$SCV_HOME/config.toml`, as written (the
/// daemon checks them; this is for `scv mcp login`, `logout` and `list`).
pub fn configured(home: &Path) -> Result<BTreeMap<String, RawServer>, String> {
    #[derive(serde::Deserialize)]
    struct Only {
        #[serde(default)]
        mcp_servers: BTreeMap<String, toml::Value>,
    }
    let file = home.join("config.toml");
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(err) => return Err(format!("cannot read {}: {err}", file.display())),
    };
    let only: Only =
        toml::from_str(&text).map_err(|err| format!("{}: {}", file.display(), err.message()))?;
    let mut servers = BTreeMap::new();
    for (name, value) in only.mcp_servers {
        // A table this SCV cannot read is left to the daemon to report.
        if let Ok(raw) = value.try_into::<RawServer>() {
            servers.insert(name, raw);
        }
    }
    Ok(servers)
}

/// Whether `name` (an HTTP server) is logged in; `None` for a server
/// that is not an HTTP server.
pub fn logged_in(home: &Path, name: &str, raw: &RawServer) -> Option<bool> {
    let url = raw.url.as_deref()?;
    Some(store::FileStore::new(home, name, url).login_id().is_some())
}
