//! `scv mcp login NAME`: the OAuth 2.1 authorization-code flow with PKCE
//! (S256) against the server's authorization server, as the MCP
//! authorization specification describes it, carried out by rmcp's
//! authorization manager: protected-resource metadata (RFC 9728, from the
//! server's 401 or its well-known URL), authorization-server metadata
//! (RFC 8414 / OpenID discovery), the client ID metadata document
//! (`client_metadata_url`) when the authorization server supports them,
//! else dynamic client registration (RFC 7591), the `resource` indicator (RFC 8707) on
//! every token request, `state` checked and the response's `iss`
//! validated (RFC 9207). The redirect comes back to a loopback listener
//! on 127.0.0.1 only; the credentials land in the [`FileStore`] with a
//! new login id, which a running daemon notices within a second.

use super::store::FileStore;
use rmcp::transport::auth::{AuthorizationManager, AuthorizationRequest, OAuthState};
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The longest request line (and headers) the loopback listener reads.
const MAX_CALLBACK_BYTES: usize = 16 * 1024;
/// Connections to the loopback listener answered before giving up (a
/// browser also asks for a favicon).
const MAX_CALLBACK_CONNECTIONS: usize = 32;

/// What a login did.
pub struct LoggedIn {
    /// Where the credentials are.
    pub file: std::path::PathBuf,
}

/// How SCV identifies itself to the authorization server.
#[derive(Debug, Clone, Default)]
pub struct Client {
    /// `client_metadata_url`: the client id when the authorization server
    /// supports client ID metadata documents (dynamic registration
    /// otherwise).
    pub metadata_url: Option<String>,
}

/// Logs in to the server `name` at `url`: `show` gets the authorization
/// URL to open; the redirect is awaited for at most `wait`.
pub async fn login(
    home: &Path,
    name: &str,
    url: &str,
    client: &Client,
    wait: Duration,
    show: impl FnOnce(&str),
) -> Result<LoggedIn, String> {
    // rmcp's HTTP client (rustls without a built-in provider) needs one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|err| format!("cannot listen on 127.0.0.1 for the redirect: {err}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let store = FileStore::new(home, name, url);
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|err| format!("cannot prepare the login: {err}"))?;
    manager.set_credential_store(store.clone());
    let mut state = OAuthState::Unauthorized(manager);
    let mut request = AuthorizationRequest::new(redirect.clone()).with_client_name("SCV");
    // The server's own 401 names where its metadata is and what scope it
    // wants; without one, rmcp probes the well-known URLs.
    if let Some(challenge) = challenge(url).await {
        request = request.with_challenge(challenge);
    }
    // A metadata document first, when the server supports them; rmcp
    // registers dynamically otherwise.
    if let Some(document) = &client.metadata_url {
        request = request.with_client_metadata_url(document.clone());
    }
    state
        .start_authorization(request)
        .await
        .map_err(|err| format!("cannot start the login with {url}: {err}"))?;
    let auth_url = state
        .get_authorization_url()
        .await
        .map_err(|err| err.to_string())?;
    show(&auth_url);
    let path = tokio::time::timeout(wait, callback(&listener))
        .await
        .map_err(|_| {
            format!(
                "no redirect came back within {} s; run the login again",
                wait.as_secs()
            )
        })??;
    state
        .handle_callback_url(&format!("http://127.0.0.1:{port}{path}"))
        .await
        .map_err(|err| format!("the authorization server's answer was refused: {err}"))?;
    // A new login: the same credentials, a new login id.
    let file = store.clone();
    tokio::task::spawn_blocking(move || {
        let _lock = file.lock_blocking()?;
        let record = file
            .read()?
            .ok_or_else(|| "the token was not saved".to_string())?;
        file.write(record.credentials, true)
    })
    .await
    .map_err(|e| e.to_string())??;
    Ok(LoggedIn {
        file: store.path().to_path_buf(),
    })
}

/// The `WWW-Authenticate` challenge the server answers an unauthenticated
/// MCP request with (an `initialize`, as a client's first request), if it
/// answers 401 with one within 10 s.
async fn challenge(url: &str) -> Option<String> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "scv", "version": env!("CARGO_PKG_VERSION")}}});
    let answer = reqwest013::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .ok()?;
    if answer.status() != reqwest013::StatusCode::UNAUTHORIZED {
        return None;
    }
    let header = answer.headers().get("www-authenticate")?.to_str().ok()?;
    Some(header.to_string())
}

/// Waits for `GET /callback?…` on the loopback listener and answers it;
/// the path and query. An `error` in the redirect fails the login with
/// the authorization server's words.
async fn callback(listener: &TcpListener) -> Result<String, String> {
    for _ in 0..MAX_CALLBACK_CONNECTIONS {
        let (mut stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = [0u8; 2048];
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_CALLBACK_BYTES {
                let n = stream.read(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            Ok::<_, std::io::Error>(())
        })
        .await;
        if !matches!(read, Ok(Ok(()))) {
            continue;
        }
        let text = String::from_utf8_lossy(&buf);
        let target = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("");
        if !target.starts_with("/callback?") {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let error = query_value(target, "error");
        let body = match &error {
            Some(_) => "SCV: the login was refused. You can close this tab.",
            None => "SCV: logged in. You can close this tab.",
        };
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        if let Some(error) = error {
            let description = query_value(target, "error_description").unwrap_or_default();
            return Err(format!(
                "the authorization server refused: {error} {description}"
            ));
        }
        return Ok(target.to_string());
    }
    Err("too many requests reached the login's redirect listener".into())
}

/// A query parameter's value, percent-decoded.
fn query_value(target: &str, key: &str) -> Option<String> {
    let query = target.split_once('?')?.1;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}
