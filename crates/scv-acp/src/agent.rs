//! The ACP side: one connection on stdin/stdout (the official
//! `agent-client-protocol` crate), its handlers and `initialize`.
//!
//! Handlers run inside the SDK's dispatch loop one message at a time, so
//! none of them waits for the daemon: each hands its request (with the
//! responder) to the [`Bridge`](crate::bridge::Bridge) and returns. The
//! bridge runs beside the dispatch loop as the connection's main task and
//! answers when the daemon has. Methods without a handler (`authenticate`
//! …) get the SDK's "Method not found";
//! requests before `initialize` its "Invalid request".

use crate::bridge::{Bridge, Command, EditorElicitation};
use crate::options::Options;
use crate::stdio::{self, Outflow};
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, SessionAdditionalDirectoriesCapabilities, SessionCapabilities,
    SessionListCapabilities, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionCloseCapabilities,
    SessionDeleteCapabilities, SessionResumeCapabilities, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Commands waiting for the bridge. When full, the dispatch loop waits,
/// and with it the reading of stdin.
pub const COMMAND_QUEUE: usize = 64;

/// The answer to `initialize`: protocol version 1 (the SDK stamps the
/// negotiated version too), stored sessions loaded and listed, prompts of text and
/// embedded resources and images (sent to the provider as image content;
/// `crate::prompt` checks them). No audio.
pub fn initialize_response() -> InitializeResponse {
    InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                // An editor's HTTP MCP servers run for the session
                // (`mcp::for_session`); SSE ones (deprecated) are skipped.
                .mcp_capabilities(McpCapabilities::new().http(true).sse(false))
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .close(SessionCloseCapabilities::new())
                        .delete(SessionDeleteCapabilities::new())
                        // Readable roots for the tools (writable where
                        // config.toml's `additional_directories_writable`
                        // says).
                        .additional_directories(SessionAdditionalDirectoriesCapabilities::new()),
                )
                .prompt_capabilities(
                    PromptCapabilities::new()
                        .embedded_context(true)
                        .image(true)
                        .audio(false),
                ),
        )
        .agent_info(Implementation::new("scv", env!("CARGO_PKG_VERSION")).title("SCV".to_string()))
}

/// A handler that hands `REQUEST` with its responder to the bridge as
/// `Command::VARIANT`.
macro_rules! forwards {
    ($tx:ident, $request:ty, $response:ty, $variant:ident) => {{
        let tx = $tx.clone();
        async move |request: $request,
                    responder: Responder<$response>,
                    _cx: ConnectionTo<Client>| {
            forward(&tx, Command::$variant { request, responder }).await
        }
    }};
}

/// Serves ACP on stdin/stdout until stdin ends.
pub async fn serve(options: Options) -> Result<(), Error> {
    let outflow = Arc::new(Outflow::default());
    let (tx, rx) = mpsc::channel::<Command>(COMMAND_QUEUE);
    let transport = stdio::transport(outflow.clone());
    let bridge_tx = tx.clone();
    Agent
        .v1()
        .name("scv")
        .on_receive_request(
            {
                let tx = tx.clone();
                async move |request: InitializeRequest,
                            responder: Responder<InitializeResponse>,
                            _cx: ConnectionTo<Client>| {
                    if let Some(info) = &request.client_info {
                        tracing::info!("ACP client {} {}", info.name, info.version);
                    }
                    let asks = request.client_capabilities.elicitation.as_ref();
                    let editor = EditorElicitation {
                        form: asks.is_some_and(|e| e.form.is_some()),
                        url: asks.is_some_and(|e| e.url.is_some()),
                    };
                    forward(&tx, Command::Editor(editor)).await?;
                    responder.respond(initialize_response())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            forwards!(tx, NewSessionRequest, NewSessionResponse, NewSession),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            forwards!(tx, LoadSessionRequest, LoadSessionResponse, LoadSession),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            forwards!(tx, ListSessionsRequest, ListSessionsResponse, ListSessions),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            forwards!(tx, PromptRequest, PromptResponse, Prompt),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            forwards!(tx, SetSessionModeRequest, SetSessionModeResponse, SetMode),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            forwards!(
                tx,
                ResumeSessionRequest,
                ResumeSessionResponse,
                ResumeSession
            ),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            forwards!(
                tx,
                SetSessionConfigOptionRequest,
                SetSessionConfigOptionResponse,
                SetConfigOption
            ),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            forwards!(tx, CloseSessionRequest, CloseSessionResponse, CloseSession),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            forwards!(
                tx,
                DeleteSessionRequest,
                DeleteSessionResponse,
                DeleteSession
            ),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let tx = tx.clone();
                async move |cancel: CancelNotification, _cx: ConnectionTo<Client>| {
                    let session_id = cancel.session_id.0.to_string();
                    forward(&tx, Command::Cancel { session_id }).await
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Client>| {
            Bridge::new(options, cx, bridge_tx, outflow).run(rx).await
        })
        .await
}

/// Hands a command to the bridge. If the bridge has stopped (the
/// connection is ending), the responder inside is dropped and the SDK
/// answers with an internal error.
async fn forward(tx: &mpsc::Sender<Command>, command: Command) -> Result<(), Error> {
    if tx.send(command).await.is_err() {
        tracing::debug!("a request arrived while shutting down");
    }
    Ok(())
}
