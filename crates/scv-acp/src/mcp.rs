//! MCP servers an editor passes in `session/new`, as the daemon's
//! `session.start.mcp_servers` extension takes them: each becomes what a
//! `[mcp_servers.NAME]` table holds (`command`, `args`, `env` for stdio;
//! `url`, `headers` for HTTP) and runs for that session only. SSE servers
//! (deprecated in MCP) are skipped, and the log says so.

use agent_client_protocol::v1::schema::McpServer;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// `session.start.mcp_servers` for the editor's servers; `None` for none.
pub fn for_session(servers: &[McpServer]) -> Option<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    for server in servers {
        let (name, table) = match server {
            McpServer::Stdio(s) => {
                let env: Map<String, Value> = s
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), json!(v.value)))
                    .collect();
                (
                    &s.name,
                    json!({"command": s.command.to_string_lossy(), "args": s.args, "env": env}),
                )
            }
            McpServer::Http(s) => {
                let headers: Map<String, Value> = s
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), json!(h.value)))
                    .collect();
                (&s.name, json!({"url": s.url, "headers": headers}))
            }
            McpServer::Sse(s) => {
                tracing::warn!(
                    "skipping MCP server `{}` from the editor: SSE servers are not supported",
                    s.name
                );
                continue;
            }
            _ => {
                tracing::warn!("skipping an MCP server of an unknown kind from the editor");
                continue;
            }
        };
        out.insert(name.clone(), table);
    }
    if out.is_empty() {
        return None;
    }
    let names: Vec<&str> = out.keys().map(String::as_str).collect();
    tracing::info!(
        "MCP servers from the editor for this session: {}",
        names.join(", ")
    );
    Some(out)
}
