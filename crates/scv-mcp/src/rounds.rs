//! Multi-round-trip results (2026-07-28, SEP-2322): a server that needs
//! something of the client in the middle of a call answers
//! `input_required` with its questions instead of sending requests of its
//! own. SCV answers each as it answers the same request sent on its own
//! (the handler: the question to the call's session, the workspace as
//! roots, sampling refused) and calls again with the answers and the
//! server's `request_state`, echoed untouched, at most [`MAX_ROUNDS`]
//! times. A 2025-11-25 server never answers this way.

use crate::handler::Handler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, InputRequest, InputRequiredResult,
    InputResponses,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use std::time::Duration;

/// The most `input_required` answers one call may take.
pub(crate) const MAX_ROUNDS: usize = 8;

/// `tools/call`, with its `input_required` rounds answered.
pub(crate) async fn call_tool(
    peer: &Peer<RoleClient>,
    handler: &Handler,
    mut params: CallToolRequestParams,
) -> Result<CallToolResult, ServiceError> {
    for round in 0..MAX_ROUNDS {
        match peer.call_tool_once(params.clone()).await? {
            CallToolResponse::Complete(result) => return Ok(result),
            CallToolResponse::InputRequired(asked) => {
                let (responses, state) = answer(handler, asked, round).await?;
                params.input_responses = responses;
                params.request_state = state;
            }
            // SCV declares no tasks extension: a server that makes a task
            // of the call anyway is answered as a protocol error.
            _ => return Err(ServiceError::UnexpectedResponse),
        }
    }
    Err(ServiceError::InputRequiredRoundsExceeded {
        max_rounds: MAX_ROUNDS,
    })
}

/// The answers to one `input_required`, and the state to echo.
async fn answer(
    handler: &Handler,
    asked: InputRequiredResult,
    round: usize,
) -> Result<(Option<InputResponses>, Option<String>), ServiceError> {
    let requests = asked.input_requests.unwrap_or_default();
    if requests.is_empty() {
        if asked.request_state.is_none() {
            return Err(ServiceError::UnexpectedResponse);
        }
        // Only state: the server is not ready yet; a short, growing pause.
        let millis = (50u64 << round.min(3)).min(250);
        tokio::time::sleep(Duration::from_millis(millis)).await;
        return Ok((None, asked.request_state));
    }
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let value = match request {
            InputRequest::Elicitation(request) => json(handler.ask(request.params).await)?,
            InputRequest::ListRoots(_) => json(handler.roots())?,
            InputRequest::CreateMessage(_) => {
                return Err(ServiceError::McpError(crate::handler::not_supported(
                    "sampling",
                )))
            }
            _ => return Err(ServiceError::UnexpectedResponse),
        };
        responses.insert(key, value);
    }
    Ok((Some(responses), asked.request_state))
}

fn json(value: impl serde::Serialize) -> Result<serde_json::Value, ServiceError> {
    serde_json::to_value(value).map_err(|err| {
        ServiceError::McpError(rmcp::ErrorData::internal_error(
            format!("cannot encode an answer: {err}"),
            None,
        ))
    })
}
