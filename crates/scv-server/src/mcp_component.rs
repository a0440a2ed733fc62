//! The daemon's MCP servers as a component: started with the daemon, made
//! to match `[mcp_servers]` again on `reload` and when `config.toml` was
//! edited (a file that no longer parses changes nothing), one status per
//! server.

use crate::component::{BoxFuture, Component, Context};
use scv_protocol::{ComponentKind, ComponentState, ComponentStatus};

pub(crate) struct McpServers;

impl Component for McpServers {
    fn kind(&self) -> ComponentKind {
        ComponentKind::Mcp
    }

    fn start<'a>(&'a self, cx: &'a Context) -> BoxFuture<'a, ()> {
        // Servers start in the background; sessions share them.
        Box::pin(cx.shared.start_mcp(std::slice::from_ref(&cx.workspace)))
    }

    fn reconcile<'a>(&'a self, cx: &'a Context, reload: bool) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if !reload {
                return;
            }
            // The supervisor read config.toml again just before (an
            // edit that does not parse left the last good one current).
            let config = cx.shared.config();
            cx.shared
                .mcp
                .reconcile(&config.mcp_servers, std::slice::from_ref(&cx.workspace))
                .await
        })
    }

    fn status<'a>(&'a self, cx: &'a Context) -> BoxFuture<'a, Vec<ComponentStatus>> {
        Box::pin(async move {
            cx.shared
                .mcp
                .status()
                .await
                .into_iter()
                .map(status)
                .collect()
        })
    }

    fn stop<'a>(&'a self, cx: &'a Context) -> BoxFuture<'a, ()> {
        Box::pin(cx.shared.mcp.shutdown())
    }
}

/// An MCP server as a `daemon.status` component.
fn status(server: scv_mcp::ServerStatus) -> ComponentStatus {
    let state = match server.state {
        scv_mcp::State::Disabled => ComponentState::Disabled,
        scv_mcp::State::Starting => ComponentState::Starting,
        scv_mcp::State::Connected => ComponentState::Connected,
        scv_mcp::State::Backoff => ComponentState::Backoff,
        scv_mcp::State::Failed => ComponentState::Failed,
        scv_mcp::State::Stopped => ComponentState::Stopped,
    };
    ComponentStatus {
        id: ComponentKind::Mcp.id(&server.name),
        account: None,
        bot_id: None,
        user_id: None,
        enabled: server.enabled,
        state,
        last_success_unix_seconds: server.last_success_unix_seconds,
        error: server.error,
        restarts: server.restarts,
        remote_tools: None,
        tools: Some(server.tools as u64),
        tool_names: Some(server.tool_names),
    }
}
