//! MCP servers an editor passes in `session/new`. The daemon does not take
//! MCP servers from its clients yet (the MCP issue is built in parallel),
//! so they are ignored, and the log says so. This is the one place that
//! will turn them into `session.start` fields when it does.

use agent_client_protocol::v1::schema::McpServer;

/// What `session.start` gets from the editor's MCP servers: nothing yet.
pub fn for_session(servers: &[McpServer]) {
    if servers.is_empty() {
        return;
    }
    let names: Vec<&str> = servers
        .iter()
        .map(|server| match server {
            McpServer::Stdio(s) => s.name.as_str(),
            McpServer::Http(s) => s.name.as_str(),
            McpServer::Sse(s) => s.name.as_str(),
            _ => "?",
        })
        .collect();
    tracing::warn!(
        "ignoring {} MCP server(s) from the editor ({}): SCV does not take MCP servers over ACP yet",
        servers.len(),
        names.join(", ")
    );
}
