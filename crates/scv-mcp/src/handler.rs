//! What SCV answers when a server asks something of it: roots (the
//! workspace), "not supported" for sampling and elicitation; log notices
//! go to the daemon log; a tools-list-changed notice wakes the server's
//! supervisor to list them again.
#![allow(deprecated)] // sampling, roots and logging are marked deprecated in rmcp 3 (SEP-2577)

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ErrorCode, Implementation, ListRootsResult,
    LoggingMessageNotificationParam, ProtocolVersion, Root, RootsCapabilities,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Notify;

#[derive(Clone)]
pub(crate) struct Handler {
    pub server: String,
    /// What `roots/list` answers.
    pub roots: Vec<PathBuf>,
    pub tools_changed: Arc<Notify>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = Some(RootsCapabilities::default());
        ClientConfig::new(
            capabilities,
            Implementation::new("scv", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        tracing::info!(target: "scv::mcp", server = %self.server, "refused a sampling request");
        Err(not_supported("sampling"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        tracing::info!(target: "scv::mcp", server = %self.server, "refused an elicitation request");
        Err(not_supported("elicitation"))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(
            self.roots
                .iter()
                .map(|root| Root::new(file_url(root)).with_name("workspace"))
                .collect(),
        ))
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let logger = params.logger.as_deref().unwrap_or("-");
        let data = params.data.to_string();
        let data: String = data
            .chars()
            .take(crate::limits::MAX_STDERR_LINE_BYTES)
            .collect();
        tracing::info!(target: "scv::mcp", server = %self.server, level = ?params.level, logger, "{data}");
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }
}

fn not_supported(what: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{what} is not supported by SCV"),
        None,
    )
}

/// `file://` and the path, with what a URL cannot hold percent-encoded.
fn file_url(path: &std::path::Path) -> String {
    let mut url = String::from("file://");
    for byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                url.push(char::from(*byte))
            }
            _ => url.push_str(&format!("%{byte:02X}")),
        }
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_file_urls() {
        assert_eq!(
            file_url(std::path::Path::new("/home/me/my project")),
            "file:///home/me/my%20project"
        );
    }
}
