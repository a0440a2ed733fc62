//! The daemon's side of OAuth: the HTTP client an OAuth server's
//! connection sends through, and the watch on its login.
//!
//! Every request asks the authorization manager for the access token,
//! which reads the [`FileStore`] (so a logout stops the token's use at
//! once) and refreshes it when it is about to expire. The manager sits
//! behind one mutex per connection, and a server has one connection in
//! the daemon, shared by every session: callers that find the token
//! expired at the same moment wait on that mutex, the first refreshes,
//! the rest read the refreshed token from the store — one refresh. The
//! refresh itself holds the store's file lock, so a login in another
//! process never interleaves with it. A token the server rejects (401)
//! gets one refresh and one retry (rmcp's `AuthClient`). Redirects are
//! not followed, so a token is never sent to another origin.

use super::store::FileStore;
use rmcp::transport::auth::{
    AuthClient, AuthorizationManager, ClientCredentialsConfig, OAuthState,
};
use std::time::Duration;

/// How often a connection's login is looked at.
const LOGIN_POLL: Duration = Duration::from_millis(500);

/// The HTTP client for an OAuth server whose login is in `store`, or
/// which gets its tokens itself with `credentials` (client id, secret:
/// the client credentials grant, a new token each connection, kept in
/// `store` like a login's).
pub(crate) async fn authorized_client(
    store: FileStore,
    url: &str,
    credentials: Option<(String, String)>,
) -> Result<AuthClient<reqwest013::Client>, String> {
    let mut manager = AuthorizationManager::new_allowing_private_addresses(url)
        .await
        .map_err(|err| format!("cannot prepare the OAuth client: {err}"))?;
    manager.set_credential_store(store);
    let manager = match credentials {
        Some((client_id, client_secret)) => {
            let mut state = OAuthState::Unauthorized(manager);
            let config = ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret,
                scopes: Vec::new(),
                resource: Some(url.to_string()),
            };
            state
                .authenticate_client_credentials(config)
                .await
                .map_err(|err| format!("the client credentials were refused: {err}"))?;
            state
                .into_authorization_manager()
                .ok_or("the client credentials grant left no client")?
        }
        None => {
            // Discovery, and the stored client configured (credentials
            // whose issuer is not the discovered one are discarded).
            manager
                .initialize_from_store()
                .await
                .map_err(|err| format!("OAuth discovery failed: {err}"))?;
            manager
        }
    };
    let http = reqwest013::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(reqwest013::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(15))
        .build()
        .map_err(|err| format!("cannot build the HTTP client: {err}"))?;
    Ok(AuthClient::new(http, manager))
}

/// Resolves when the login in `store` is no longer `since` (a new login,
/// a logout, a first login); never for a server without OAuth.
pub(crate) async fn login_changed(store: Option<FileStore>, since: Option<String>) {
    let Some(store) = store else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(LOGIN_POLL).await;
        let probe = store.clone();
        let now = tokio::task::spawn_blocking(move || probe.login_id())
            .await
            .ok()
            .flatten();
        if now != since {
            return;
        }
    }
}
