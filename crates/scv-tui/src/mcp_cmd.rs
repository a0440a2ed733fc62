//! `scv mcp list`: the daemon's MCP servers (its `mcp:NAME` components).

use anyhow::Result;
use scv_protocol::{ComponentStatus, DaemonCommand, Event, EventBody};
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
            scv_client::text::visible(&describe(&status.components, home))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per server, after a header.
pub fn describe(servers: &[ComponentStatus], home: &Path) -> String {
    if servers.is_empty() {
        return format!(
            "no MCP servers configured (add [mcp_servers.NAME] to {})\n",
            home.join("config.toml").display()
        );
    }
    let mut out = format!(
        "{:<24} {:<10} {:>5} {:>8}  {}\n",
        "NAME", "STATE", "TOOLS", "RESTARTS", "ERROR"
    );
    for server in servers {
        let name = server.name();
        let state = serde_json::to_value(server.state)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        out.push_str(&format!(
            "{:<24} {:<10} {:>5} {:>8}  {}\n",
            name,
            state,
            server.tools.unwrap_or(0),
            server.restarts,
            scv_client::text::visible(server.error.as_deref().unwrap_or("")),
        ));
    }
    out
}
