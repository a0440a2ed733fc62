//! The link to the SCV daemon: one socket connection that every ACP
//! session of this process shares (the daemon keeps sessions per
//! connection). Opened at the first `session/new`, starting the daemon
//! when it is absent exactly as `scv` does, with `initialize` asking for
//! reasoning events (and stored sessions, commands and subagents); opened again by the next `session/new` after it was
//! lost.

use anyhow::{bail, Context, Result};
use scv_client::{DaemonConnection, Endpoint};
use scv_protocol::{Capabilities, ClientMessage, Event, EventBody, PeerInfo};
use std::time::Duration;

/// How long the daemon gets to answer `initialize` once connected.
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Link {
    conn: DaemonConnection,
}

impl Link {
    /// Connects (starting the daemon when absent) and initializes. A
    /// daemon killed a moment ago can still take the connection and then
    /// drop it: one more try then reaches (or starts) the next one.
    pub async fn open(endpoint: &Endpoint, elicitation: bool) -> Result<Link> {
        match Link::open_once(endpoint, elicitation).await {
            Err(err) if is_connection_lost(&err) => {
                tracing::info!("the SCV daemon dropped the connection ({err:#}); trying again");
                tokio::time::sleep(Duration::from_millis(100)).await;
                Link::open_once(endpoint, elicitation).await
            }
            other => other,
        }
    }

    /// `elicitation`: the editor takes MCP servers' questions.
    async fn open_once(endpoint: &Endpoint, elicitation: bool) -> Result<Link> {
        let mut conn = endpoint.connect(true).await?;
        let client = PeerInfo {
            name: "scv-acp".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        };
        let capabilities = Capabilities {
            reasoning: true,
            sessions: true,
            commands: true,
            // Children's events, shown in their `task` calls.
            subagents: true,
            // What a hook said (a non-blocking error's stderr), and a
            // budget's own failure code.
            hooks: true,
            budgets: true,
            // `session/load` of a live session attaches to it.
            detach: true,
            // Each provider step's tokens and each turn's cost, told as
            // `usage_update`s.
            usage: true,
            step_usage: true,
            elicitation,
            // An editor's image blocks go with the prompt.
            images: true,
            // The workspace trust prompt goes to the editor with them.
            trust: elicitation,
            ..Capabilities::default()
        };
        let initialized = tokio::time::timeout(
            INITIALIZE_TIMEOUT,
            conn.initialize(Some(client), Some(capabilities)),
        )
        .await
        .with_context(|| {
            format!(
                "the SCV daemon at {} did not answer initialize within {}s",
                endpoint.describe(),
                INITIALIZE_TIMEOUT.as_secs()
            )
        })??;
        let EventBody::Initialized {
            server,
            capabilities,
            ..
        } = initialized.body
        else {
            bail!(
                "the SCV daemon answered initialize with {}",
                initialized.body.type_name()
            );
        };
        let reasoning = capabilities.is_some_and(|c| c.reasoning);
        tracing::info!(
            "connected to {} {} at {} (reasoning events: {})",
            server.name,
            server.version,
            endpoint.describe(),
            if reasoning { "on" } else { "off" }
        );
        Ok(Link { conn })
    }

    /// Sends one message; returns its request id.
    pub async fn send(&mut self, message: ClientMessage) -> Result<String> {
        self.conn.send(message).await
    }

    /// Sends a request a session client made (it chose the id).
    pub async fn send_request(&mut self, request: &scv_client::session::Request) -> Result<()> {
        self.conn.send_request(request).await
    }

    /// The next event; `None` when the daemon closed the connection.
    /// Cancel-safe (a frame is only taken whole).
    pub async fn next_event(&mut self) -> Result<Option<Event>> {
        self.conn.next_event().await
    }
}

/// A connection reset or closed by the daemon, rather than a refusal.
fn is_connection_lost(err: &anyhow::Error) -> bool {
    // scv-client's words for a daemon that closed before answering.
    err.chain()
        .any(|cause| cause.to_string().contains("closed the connection"))
        || err.chain().any(|cause| {
            cause.downcast_ref::<std::io::Error>().is_some_and(|io| {
                matches!(
                    io.kind(),
                    std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::BrokenPipe
                        | std::io::ErrorKind::UnexpectedEof
                )
            })
        })
}
