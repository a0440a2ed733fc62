//! `daemon.control` for the CLI's own commands (`scv daemon status|reload`,
//! `scv mcp list`): [`scv_client::control`]'s one bounded exchange, never
//! retried, asking for capability `daemon_status`, so the answer carries
//! the extension fields (`status.config`, MCP servers' `tools` /
//! `tool_names`) a client that asked for nothing never gets.

use scv_client::control::{control_asking, CONTROL_TIMEOUT};
use scv_client::ControlError;
use scv_protocol::{Capabilities, DaemonCommand, DaemonStatus};
use std::path::Path;

/// Sends `command` to the daemon at `socket`; its status, extensions
/// included.
pub async fn control(socket: &Path, command: DaemonCommand) -> Result<DaemonStatus, ControlError> {
    let capabilities = Capabilities {
        daemon_status: true,
        ..Capabilities::default()
    };
    control_asking(socket, command, Some(capabilities), CONTROL_TIMEOUT).await
}
