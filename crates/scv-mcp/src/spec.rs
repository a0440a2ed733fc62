//! `[mcp_servers.NAME]` tables: as written ([`RawServer`]) and checked
//! ([`ServerSpec`]).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// One table as written; every key optional, unknown keys refused.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table of server settings")]
pub struct RawServer {
    pub command: Option<String>,
    pub args: Option<Vec<String>>,
    pub env: Option<BTreeMap<String, String>>,
    pub cwd: Option<PathBuf>,
    pub url: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    pub bearer_token_env: Option<String>,
    /// `"oauth"`: the server is reached with an OAuth login (`scv mcp
    /// login NAME`).
    pub auth: Option<String>,
    /// With `auth = "oauth"`: a client of the authorization server that
    /// gets tokens itself (the client credentials grant, for headless
    /// and CI use), with the secret in the variable `client_secret_env`.
    pub client_id: Option<String>,
    pub client_secret_env: Option<String>,
    /// With `auth = "oauth"`: the https URL of SCV's client ID metadata
    /// document, `scv mcp login`'s client id when the authorization
    /// server supports such documents (dynamic registration otherwise).
    pub client_metadata_url: Option<String>,
    pub enabled: Option<bool>,
    pub startup_timeout_ms: Option<u64>,
    pub tool_timeout_ms: Option<u64>,
    pub tools: Option<Vec<String>>,
    pub auto_approve: Option<bool>,
}

/// How SCV reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking over its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// The variable holding a bearer token.
        bearer_token_env: Option<String>,
        /// `auth = "oauth"`: a login is needed (a server without it that
        /// answers 401 is also sent its login, when there is one).
        oauth: bool,
        /// `client_id` and the variable holding its secret: tokens by
        /// the client credentials grant, no login.
        client_credentials: Option<(String, String)>,
    },
}

/// An https URL with a path past `/`, as a client ID metadata document's.
fn is_document_url(text: &str) -> bool {
    url::Url::parse(text)
        .is_ok_and(|url| url.scheme() == "https" && url.host().is_some() && url.path() != "/")
}

/// A server, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: Transport,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Only these tools are offered, when set.
    pub tools: Option<Vec<String>>,
    /// Calls run without asking.
    pub auto_approve: bool,
}

impl ServerSpec {
    /// Checks one table; the error says what is wrong (the caller names
    /// the file, line and server).
    pub fn new(name: &str, raw: RawServer) -> Result<ServerSpec, String> {
        if name.is_empty()
            || name.len() > 32
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err("a server name is 1 to 32 letters, digits, `_` or `-`".into());
        }
        // The model sees `mcp__NAME__TOOL`: with `__` in NAME, or `_` at
        // its end, two servers' tools could share a name.
        if name.contains("__") || name.ends_with('_') {
            return Err(format!(
                "a server name may not contain `__` or end in `_` (its tools are offered as `mcp__{name}__TOOL`, which another server's could match)"
            ));
        }
        let transport = match (raw.command, raw.url) {
            (Some(_), Some(_)) => return Err("set either `command` or `url`, not both".into()),
            (None, None) => {
                return Err("set `command` (a stdio server) or `url` (an HTTP server)".into())
            }
            (Some(command), None) => {
                if raw.headers.is_some() || raw.bearer_token_env.is_some() || raw.auth.is_some() {
                    return Err(
                        "`headers`, `bearer_token_env` and `auth` are for `url` servers".into(),
                    );
                }
                if command.trim().is_empty() {
                    return Err("`command` is empty".into());
                }
                Transport::Stdio {
                    command,
                    args: raw.args.unwrap_or_default(),
                    env: raw.env.unwrap_or_default(),
                    cwd: raw.cwd,
                }
            }
            (None, Some(url)) => {
                if raw.args.is_some() || raw.env.is_some() || raw.cwd.is_some() {
                    return Err("`args`, `env` and `cwd` are for `command` servers".into());
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!(
                        "`url` must start with http:// or https://, not `{url}`"
                    ));
                }
                let headers = raw.headers.unwrap_or_default();
                for (name, value) in &headers {
                    http::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| format!("`headers`: `{name}` is not a header name"))?;
                    http::HeaderValue::from_str(value).map_err(|_| {
                        format!("`headers`: the value of `{name}` is not a valid header value")
                    })?;
                }
                let bearer_token_env = raw.bearer_token_env.filter(|v| !v.is_empty());
                let oauth = match raw.auth.as_deref() {
                    None => false,
                    Some("oauth") if bearer_token_env.is_some() => {
                        return Err(
                            "set either `auth = \"oauth\"` or `bearer_token_env`, not both".into(),
                        )
                    }
                    Some("oauth") => true,
                    Some(other) => {
                        return Err(format!("`auth` is \"oauth\" (or absent), not `{other}`"))
                    }
                };
                let client_credentials = match (raw.client_id, raw.client_secret_env) {
                    (None, None) => None,
                    (Some(id), Some(var)) if oauth && !id.is_empty() && !var.is_empty() => {
                        Some((id, var))
                    }
                    _ => return Err(
                        "`client_id` and `client_secret_env` go together, with `auth = \"oauth\"`"
                            .into(),
                    ),
                };
                if let Some(document) = &raw.client_metadata_url {
                    if !oauth || !is_document_url(document) {
                        return Err("`client_metadata_url` is the https URL (with a path) of a client metadata document, with `auth = \"oauth\"`".into());
                    }
                }
                Transport::Http {
                    url,
                    headers,
                    bearer_token_env,
                    oauth,
                    client_credentials,
                }
            }
        };
        let millis = |value: Option<u64>, default: u64, key: &str| match value {
            Some(0) => Err(format!("`{key}` must be at least 1")),
            Some(ms) => Ok(Duration::from_millis(ms)),
            None => Ok(Duration::from_millis(default)),
        };
        Ok(ServerSpec {
            name: name.to_string(),
            transport,
            enabled: raw.enabled.unwrap_or(true),
            startup_timeout: millis(raw.startup_timeout_ms, 10_000, "startup_timeout_ms")?,
            tool_timeout: millis(raw.tool_timeout_ms, 60_000, "tool_timeout_ms")?,
            tools: raw.tools,
            auto_approve: raw.auto_approve.unwrap_or(false),
        })
    }

    /// It gets its OAuth tokens itself (client credentials): no login to
    /// watch.
    pub fn client_credentials(&self) -> bool {
        matches!(
            &self.transport,
            Transport::Http {
                client_credentials: Some(_),
                ..
            }
        )
    }

    /// The variable holding a secret for this server (a bearer token).
    pub fn secret_variable(&self) -> Option<&str> {
        match &self.transport {
            Transport::Http {
                bearer_token_env,
                client_credentials,
                ..
            } => bearer_token_env
                .as_deref()
                .or(client_credentials.as_ref().map(|(_, var)| var.as_str())),
            Transport::Stdio { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn stdio() -> RawServer {
        RawServer {
            command: Some("npx".into()),
            ..Default::default()
        }
    }

    #[test]
    fn tables_are_checked() {
        let spec = ServerSpec::new("fs", stdio()).unwrap();
        assert_eq!(spec.tool_timeout, Duration::from_secs(60));
        assert_eq!(spec.startup_timeout, Duration::from_secs(10));
        assert!(spec.enabled && !spec.auto_approve);
        for good in ["_a", "a_b", "a-", "a-_b"] {
            assert!(ServerSpec::new(good, stdio()).is_ok(), "{good}");
        }
        assert!(ServerSpec::new("x__y", stdio())
            .unwrap_err()
            .contains("`__`"));
        for bad in ["", "has space", "a.b", &"x".repeat(33), "x__y", "a_", "__"] {
            assert!(ServerSpec::new(bad, stdio()).is_err(), "{bad}");
        }
        let both = RawServer {
            url: Some("http://x".into()),
            ..stdio()
        };
        assert!(ServerSpec::new("s", both).unwrap_err().contains("not both"));
        assert!(ServerSpec::new("s", RawServer::default()).is_err());
        let ftp = RawServer {
            url: Some("ftp://x".into()),
            ..Default::default()
        };
        assert!(ServerSpec::new("s", ftp).unwrap_err().contains("http://"));
        let zero = RawServer {
            tool_timeout_ms: Some(0),
            ..stdio()
        };
        assert!(ServerSpec::new("s", zero)
            .unwrap_err()
            .contains("tool_timeout_ms"));
        let header = RawServer {
            url: Some("https://x/mcp".into()),
            headers: Some([("bad name".to_string(), "v".to_string())].into()),
            ..Default::default()
        };
        assert!(ServerSpec::new("s", header)
            .unwrap_err()
            .contains("header name"));
        let oauth = |auth: &str, env: Option<&str>| RawServer {
            url: Some("https://x/mcp".into()),
            auth: Some(auth.into()),
            bearer_token_env: env.map(String::from),
            ..Default::default()
        };
        let spec = ServerSpec::new("s", oauth("oauth", None)).unwrap();
        assert!(matches!(
            spec.transport,
            Transport::Http { oauth: true, .. }
        ));
        assert!(ServerSpec::new("s", oauth("oauth", Some("PAT")))
            .unwrap_err()
            .contains("not both"));
        let cc = RawServer {
            client_id: Some("bot".into()),
            client_secret_env: Some("BOT_SECRET".into()),
            ..oauth("oauth", None)
        };
        assert_eq!(
            ServerSpec::new("s", cc).unwrap().secret_variable(),
            Some("BOT_SECRET")
        );
        let half = RawServer {
            client_id: Some("bot".into()),
            ..oauth("oauth", None)
        };
        assert!(ServerSpec::new("s", half)
            .unwrap_err()
            .contains("go together"));
        assert!(ServerSpec::new("s", oauth("basic", None))
            .unwrap_err()
            .contains("`basic`"));
        let document = |url: &str, auth: &str| RawServer {
            client_metadata_url: Some(url.into()),
            ..oauth(auth, None)
        };
        assert!(ServerSpec::new("s", document("https://scv.example/client.json", "oauth")).is_ok());
        for (url, auth) in [
            ("http://scv.example/client.json", "oauth"),
            ("https://scv.example/", "oauth"),
            ("https://scv.example/client.json", "none"),
        ] {
            let refused = ServerSpec::new("s", document(url, auth)).unwrap_err();
            assert!(
                refused.contains("client_metadata_url") || refused.contains("`none`"),
                "{url}: {refused}"
            );
        }
        let stdio_auth = RawServer {
            auth: Some("oauth".into()),
            ..stdio()
        };
        assert!(ServerSpec::new("s", stdio_auth)
            .unwrap_err()
            .contains("for `url` servers"));
    }
}
