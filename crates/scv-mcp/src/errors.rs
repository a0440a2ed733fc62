//! rmcp's errors as a person reads them. Their `Display` names Rust types
//! (`Transport [rmcp::transport::async_rw::AsyncRwTransport<…>] error: …`)
//! and dumps whole messages with `Debug`; what SCV logs and shows says
//! what happened instead.

use rmcp::service::ClientInitializeError;
use rmcp::transport::DynamicTransportError;
use rmcp::ServiceError;

/// A failed request (`tools/list`, `tools/call`).
pub(crate) fn service(err: &ServiceError) -> String {
    match err {
        ServiceError::McpError(error) => {
            format!("the server answered with an error: {}", error.message)
        }
        ServiceError::TransportSend(error) => {
            format!("cannot send to the server: {}", transport(error))
        }
        ServiceError::TransportClosed => "the connection to the server closed".into(),
        ServiceError::UnexpectedResponse => "the server answered with something else".into(),
        ServiceError::Cancelled { reason } => match reason {
            Some(reason) => format!("cancelled: {reason}"),
            None => "cancelled".into(),
        },
        ServiceError::Timeout { timeout } => {
            format!("no answer within {} ms", timeout.as_millis())
        }
        other => other.to_string(),
    }
}

/// A failed `initialize`.
pub(crate) fn initialize(err: &ClientInitializeError) -> String {
    match err {
        ClientInitializeError::ExpectedInitResponse(None)
        | ClientInitializeError::ConnectionClosed(_) => {
            "the server closed the connection before answering".into()
        }
        ClientInitializeError::ExpectedInitResponse(Some(_)) => {
            "the server sent something else instead of its answer".into()
        }
        ClientInitializeError::ExpectedInitResult(_) => {
            "the server answered with something other than an initialize result".into()
        }
        ClientInitializeError::ConflictInitResponseId(expected, got) => {
            format!("the server answered request {got}, not {expected}")
        }
        ClientInitializeError::TransportError { error, context } => {
            format!("{} (when trying to {context})", transport(error))
        }
        ClientInitializeError::JsonRpcError(error) => {
            format!("the server refused: {}", error.message)
        }
        ClientInitializeError::NoCompatibleProtocolVersion {
            client_supported,
            server_supported,
        } => {
            let list = |versions: &[rmcp::model::ProtocolVersion]| {
                versions
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!(
                "no protocol version in common (SCV: {}; the server: {})",
                list(client_supported),
                list(server_supported)
            )
        }
        ClientInitializeError::Cancelled => "cancelled".into(),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => initialize(fallback),
        other => other.to_string(),
    }
}

/// The transport's own error, without the transport's type name.
fn transport(error: &DynamicTransportError) -> String {
    let inner: &(dyn std::error::Error + 'static) = error.error.as_ref();
    let mut source = Some(inner);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return io_text(io);
        }
        source = err.source();
    }
    inner.to_string()
}

/// An I/O error as a person reads it: `no such file or directory`, not
/// `No such file or directory (os error 2)`.
pub(crate) fn io_text(err: &std::io::Error) -> String {
    let text = match err.raw_os_error() {
        Some(code) => std::io::Error::from_raw_os_error(code).to_string(),
        None => err.kind().to_string(),
    };
    let text = match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::any::TypeId;

    fn dynamic(error: std::io::Error) -> DynamicTransportError {
        DynamicTransportError::from_parts(
            "rmcp::transport::async_rw::AsyncRwTransport<rmcp::service::RoleClient, scv_mcp::transport::LineCap<tokio::process::ChildStdout>, tokio::process::ChildStdin>",
            TypeId::of::<()>(),
            Box::new(error),
        )
    }

    #[test]
    fn no_type_name_and_no_debug_dump_reaches_the_text() {
        let send = ClientInitializeError::TransportError {
            error: dynamic(std::io::Error::from_raw_os_error(libc::EPIPE)),
            context: "send initialize request".into(),
        };
        // What rmcp says, for the record.
        assert!(send.to_string().contains("AsyncRwTransport<"), "{send}");
        assert_eq!(
            initialize(&send),
            "broken pipe (when trying to send initialize request)"
        );
        let closed = ClientInitializeError::ConnectionClosed("initialize response".into());
        assert_eq!(
            initialize(&closed),
            "the server closed the connection before answering"
        );
        let call =
            ServiceError::TransportSend(dynamic(std::io::Error::from_raw_os_error(libc::EPIPE)));
        assert_eq!(service(&call), "cannot send to the server: broken pipe");
        assert_eq!(
            service(&ServiceError::TransportClosed),
            "the connection to the server closed"
        );
    }
}
