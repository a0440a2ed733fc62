"""An OAuth-protected MCP server for SCV's tests, written with the official
Python SDK (mcp 1.30): FastMCP as the resource server and, through the
SDK's `OAuthAuthorizationServerProvider` and its auth routes, as its own
authorization server (RFC 8414 metadata, RFC 7591 dynamic registration,
/authorize, /token, RFC 9728 protected-resource metadata, 401 with
`WWW-Authenticate`). The provider is in memory, modelled on the SDK's
`examples/servers/simple-auth`; its /authorize approves at once (the
"user" always consents) and redirects with `code`, `state` and `iss`.
Refresh tokens rotate: each refresh revokes the one it used.

Client ID metadata documents (MCP authorization 2025-11-25): with
SCV_CIMD_URL set, the authorization-server metadata says
`client_id_metadata_document_supported` and a client whose `client_id` is
that URL is known by its metadata document (a native client, no secret,
redirect to the loopback on any port, RFC 8252 §7.3). The document is
resolved from the copy below, not fetched: there is no TLS server in the
test sandbox to host it at an https URL.

Usage: python oauth_server.py PORT
Environment: SCV_MCP_LOG (JSON lines: register, cimd, authorize, token,
refresh, refresh_refused, call), SCV_TOKEN_TTL (access token lifetime in
seconds, default 3600), SCV_REFRESH_DELAY (seconds a refresh takes),
SCV_CIMD_URL (see above).
"""
import json
import os
import secrets
import sys
import time

import anyio
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.fastmcp import FastMCP
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

LOG = os.environ.get("SCV_MCP_LOG", os.devnull)
TTL = int(os.environ.get("SCV_TOKEN_TTL", "3600"))
REFRESH_DELAY = float(os.environ.get("SCV_REFRESH_DELAY", "0"))
CIMD_URL = os.environ.get("SCV_CIMD_URL")
port = int(sys.argv[1])
BASE = f"http://127.0.0.1:{port}"


def record(event: str, **fields):
    with open(LOG, "a") as f:
        f.write(json.dumps({"event": event, **fields}) + "\n")


class LoopbackClient(OAuthClientInformationFull):
    """A metadata-document client: its loopback redirect on any port."""

    def validate_redirect_uri(self, redirect_uri):
        if redirect_uri is not None and redirect_uri.host == "127.0.0.1" and redirect_uri.path == "/callback":
            return redirect_uri
        return super().validate_redirect_uri(redirect_uri)


if CIMD_URL:
    import mcp.server.auth.routes as routes

    plain_metadata = routes.build_metadata

    def build_metadata(*args, **kwargs):
        metadata = plain_metadata(*args, **kwargs)
        metadata.client_id_metadata_document_supported = True
        return metadata

    routes.build_metadata = build_metadata


class Provider:
    def __init__(self):
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id):
        if CIMD_URL and client_id == CIMD_URL:
            record("cimd", client_id=client_id)
            return LoopbackClient(
                client_id=client_id, client_name="SCV",
                redirect_uris=["http://127.0.0.1/callback"],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"], token_endpoint_auth_method="none", scope="mcp")
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info
        record("register", client_id=client_info.client_id,
               redirect_uris=[str(u) for u in client_info.redirect_uris or []],
               auth_method=client_info.token_endpoint_auth_method)

    async def authorize(self, client, params: AuthorizationParams) -> str:
        code = secrets.token_hex(16)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["mcp"], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource)
        record("authorize", client_id=client.client_id, resource=params.resource,
               state_sent=params.state is not None, redirect_uri=str(params.redirect_uri))
        issuer = str(mcp.settings.auth.issuer_url)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=issuer)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def issue(self, client_id, scopes, resource) -> OAuthToken:
        access = "at-" + secrets.token_hex(16)
        refresh = "rt-" + secrets.token_hex(16)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + TTL, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=TTL,
                          refresh_token=refresh, scope=" ".join(scopes))

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        record("token", grant="authorization_code", resource=authorization_code.resource)
        return self.issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        found = self.refresh.get(refresh_token)
        if found is None:
            record("refresh_refused", token=refresh_token[:6])
        return found

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        if REFRESH_DELAY:
            await anyio.sleep(REFRESH_DELAY)
        if self.refresh.pop(refresh_token.token, None) is None:
            record("refresh_refused", token=refresh_token.token[:6])
            raise TokenError("invalid_grant", "refresh token already used")
        record("refresh", resource=refresh_token.resource)
        return self.issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


mcp = FastMCP(
    "scv-oauth-test",
    host="127.0.0.1",
    port=port,
    log_level="WARNING",
    auth_server_provider=Provider(),
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=f"{BASE}/mcp",
        validate_token_resource=True,
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]),
        required_scopes=["mcp"],
    ),
)


@mcp.tool(structured_output=False)
def whoami() -> str:
    """Which token this call carried."""
    token = get_access_token()
    record("call", token=token.token[:6] if token else None)
    return f"client {token.client_id}" if token else "nobody"


@mcp.tool(structured_output=False)
def echo(text: str) -> str:
    """Echo text back."""
    return text


mcp.run("streamable-http")
