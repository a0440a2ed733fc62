//! What a hub and its servers' supervisor tasks share: the environment
//! servers run in, each server's status and live connection, and the
//! status types `daemon.status` shows. A leaf: it imports no other module
//! of the crate but the specs and tool types it holds.

use crate::spec::ServerSpec;
use crate::tools::McpTool;
use rmcp::{Peer, RoleClient};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Builds the command that runs a stdio server (program, arguments); the
/// hub sets its environment, directory and pipes.
pub(crate) type CommandBuilder = dyn Fn(&OsStr, &[String]) -> tokio::process::Command + Send + Sync;

/// What the hub needs from the process around it.
pub struct HubEnv {
    /// The environment of stdio servers (credentials already removed).
    pub env: Arc<[(OsString, OsString)]>,
    /// Values of the variables servers name for secrets (`bearer_token_env`).
    pub secrets: HashMap<String, String>,
    pub command: Box<CommandBuilder>,
    /// `$SCV_HOME`, whose `mcp-auth/` holds the OAuth logins (none: HTTP
    /// servers get no login).
    pub home: Option<std::path::PathBuf>,
}

impl HubEnv {
    /// `message` without any secret or configured header value it may
    /// quote, and without URL query strings.
    pub(crate) fn sanitize(&self, message: &str, spec: &ServerSpec) -> String {
        let mut clean = message.to_string();
        let headers = match &spec.transport {
            crate::spec::Transport::Http { headers, .. } => headers.values().collect(),
            crate::spec::Transport::Stdio { .. } => Vec::new(),
        };
        for secret in self
            .secrets
            .values()
            .chain(headers)
            .filter(|s| s.len() >= 4)
        {
            clean = clean.replace(secret.as_str(), "[redacted]");
        }
        let mut out = String::with_capacity(clean.len());
        let mut in_query = false;
        for c in clean.chars() {
            if c == '?' && !in_query {
                in_query = true;
                out.push_str("?[…]");
                continue;
            }
            if in_query && (c.is_whitespace() || c == ')' || c == '"' || c == '\'') {
                in_query = false;
            }
            if !in_query {
                out.push(c);
            }
        }
        out.chars().take(500).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Disabled,
    Starting,
    Connected,
    Backoff,
    Failed,
    Stopped,
}

/// A server as `daemon.status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    pub name: String,
    pub enabled: bool,
    pub state: State,
    pub last_success_unix_seconds: Option<u64>,
    /// Sanitized: never a header value or a token.
    pub error: Option<String>,
    pub restarts: u32,
    pub tools: usize,
    /// The tools' names as the server knows them (at most
    /// [`crate::limits::MAX_TOOLS_PER_SERVER`]).
    pub tool_names: Vec<String>,
}

/// One connection of a server, as calls see it.
#[derive(Clone)]
pub(crate) struct Link {
    pub peer: Peer<RoleClient>,
    /// What answers the server's questions (asked mid-call in 2025-11-25,
    /// in an `input_required` result in 2026-07-28: `crate::rounds`).
    pub handler: crate::handler::Handler,
    /// Set when the connection ended on a message over the cap.
    pub oversized: Arc<AtomicBool>,
    /// Set when the server refused the OAuth login.
    pub auth_refused: Arc<AtomicBool>,
    /// Cancelled by a call that saw this connection break; the supervisor
    /// restarts. One per connection, so a late report from a call on an
    /// earlier one cannot end its successor.
    pub broken: CancellationToken,
}

/// A connected server's link and tools (none while it is not connected).
#[derive(Default)]
pub(crate) struct Live {
    pub link: Option<Link>,
    pub tools: Arc<[Arc<McpTool>]>,
}

/// What a server's supervisor shares with sessions.
pub(crate) struct Shared {
    pub status: Mutex<ServerStatus>,
    pub connection: Mutex<Live>,
    /// The names the server's tools were last offered under (tool →
    /// name), kept across restarts so a name stays with its tool.
    pub names: Mutex<BTreeMap<String, String>>,
    pub changed: watch::Sender<u64>,
    /// The elicitors of the running calls (a question goes to the latest).
    pub askers: Arc<crate::elicit::Askers>,
    /// Whether it showed it speaks only 2025-11-25 (`crate::revision`).
    pub initialize_only: Arc<std::sync::atomic::AtomicBool>,
}

impl Shared {
    pub(crate) fn update(&self, change: impl FnOnce(&mut ServerStatus)) {
        change(&mut lock(&self.status));
        self.changed.send_modify(|v| *v += 1);
    }

    pub(crate) fn set_connection(&self, live: Live) {
        let count = live.tools.len();
        let names: Vec<String> = live.tools.iter().map(|t| t.tool.clone()).collect();
        *lock(&self.connection) = live;
        self.update(|s| {
            s.tools = count;
            s.tool_names = names;
        });
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Disabled => "disabled",
            State::Starting => "starting",
            State::Connected => "connected",
            State::Backoff => "backoff",
            State::Failed => "failed",
            State::Stopped => "stopped",
        }
    }
}

pub(crate) fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::spec::RawServer;

    #[test]
    fn errors_never_quote_a_token_a_header_or_a_query() {
        let env = HubEnv {
            env: Arc::from(Vec::new()),
            secrets: [("PAT".to_string(), "pat-secret-123".to_string())].into(),
            command: Box::new(|program, _| tokio::process::Command::new(program)),
            home: None,
        };
        let spec = ServerSpec::new(
            "web",
            RawServer {
                url: Some("https://example.com/mcp".into()),
                headers: Some([("X-Api".to_string(), "header-secret".to_string())].into()),
                ..Default::default()
            },
        )
        .unwrap();
        let clean = env.sanitize(
            "error sending request for url (https://example.com/mcp?key=abc): Bearer pat-secret-123 header-secret",
            &spec,
        );
        assert_eq!(
            clean,
            "error sending request for url (https://example.com/mcp?[…]): Bearer [redacted] [redacted]"
        );
    }
}
