//! What SCV answers when a server asks something of it: roots (the
//! workspace), "not supported" for sampling, elicitation through the
//! running call's session ([`crate::elicit`]); log notices
//! go to the daemon log; a tools-list-changed notice wakes the server's
//! supervisor to list them again.
#![allow(deprecated)] // sampling, roots and logging are marked deprecated in rmcp 3 (SEP-2577)

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ErrorCode,
    FormElicitationCapability, Implementation, ListRootsResult, LoggingMessageNotificationParam,
    ProtocolVersion, Root, RootsCapabilities, UrlElicitationCapability,
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
    /// The elicitors of the server's running calls.
    pub askers: Arc<crate::elicit::Askers>,
    /// Set once the server showed it speaks only 2025-11-25 (kept across
    /// its restarts: `crate::revision`).
    pub initialize_only: Arc<std::sync::atomic::AtomicBool>,
}

impl Handler {
    /// Asks the running call's session what the server asks (declined
    /// when no client of it can be asked, or the question is too big).
    pub(crate) async fn ask(&self, request: ElicitRequestParams) -> ElicitResult {
        use crate::elicit::{ElicitAction, ElicitationRequest, ELICITATION_TIMEOUT};
        let (message, schema, url) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (message, serde_json::to_value(&requested_schema).ok(), None),
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                (message, None, Some(url))
            }
            _ => return ElicitResult::new(ElicitationAction::Decline),
        };
        let oversized = schema.as_ref().is_some_and(|schema| {
            schema.to_string().len() > crate::elicit::MAX_ELICITATION_SCHEMA_BYTES
        });
        let Some(elicitor) = self.askers.current().filter(|_| !oversized) else {
            tracing::info!(target: "scv::mcp", server = %self.server, "declined an elicitation: no client to ask");
            return ElicitResult::new(ElicitationAction::Decline);
        };
        let mut message = message;
        if message.len() > crate::elicit::MAX_ELICITATION_MESSAGE_BYTES {
            let mut cut = crate::elicit::MAX_ELICITATION_MESSAGE_BYTES;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        let asked = elicitor(ElicitationRequest {
            server: self.server.clone(),
            message,
            schema,
            url,
        });
        let answer = tokio::time::timeout(ELICITATION_TIMEOUT, asked)
            .await
            .unwrap_or_else(|_| crate::elicit::ElicitAnswer::cancel());
        let action = match answer.action {
            ElicitAction::Accept => ElicitationAction::Accept,
            ElicitAction::Decline => ElicitationAction::Decline,
            ElicitAction::Cancel => ElicitationAction::Cancel,
        };
        let mut result = ElicitResult::new(action);
        if answer.action == ElicitAction::Accept {
            result.content = answer.content;
        }
        result
    }

    /// What `roots/list` answers: the workspace.
    pub(crate) fn roots(&self) -> ListRootsResult {
        ListRootsResult::new(
            self.roots
                .iter()
                .map(|root| Root::new(file_url(root)).with_name("workspace"))
                .collect(),
        )
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = Some(RootsCapabilities::default());
        // Form and URL mode; a question with no client to ask is declined.
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::default())
                .with_url(UrlElicitationCapability::default()),
        );
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
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.ask(request).await)
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(self.roots())
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

pub(crate) fn not_supported(what: &str) -> ErrorData {
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
