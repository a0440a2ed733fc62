"""An MCP server for headless use, for SCV's tests: FastMCP (official
Python SDK, mcp 1.30) as an OAuth resource server with the SDK's
`TokenVerifier` and protected-resource metadata, and beside it a minimal
authorization server (RFC 8414 metadata, a token endpoint for the
`client_credentials` grant with `client_secret_post`, RFC 8707
`resource`), written here because the SDK's own authorization server
routes do not offer that grant.

Usage: python cc_server.py AS_PORT RS_PORT
Environment: SCV_MCP_LOG (JSON lines: token, token_refused, call).
The client is `ci-bot` with secret `s3cret`.
"""
import json
import os
import secrets
import sys
import time

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import FastMCP
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

LOG = os.environ.get("SCV_MCP_LOG", os.devnull)
AS_PORT, RS_PORT = int(sys.argv[1]), int(sys.argv[2])
ISSUER = f"http://127.0.0.1:{AS_PORT}"
RESOURCE = f"http://127.0.0.1:{RS_PORT}/mcp"
TOKENS: dict[str, AccessToken] = {}


def record(event: str, **fields):
    with open(LOG, "a") as f:
        f.write(json.dumps({"event": event, **fields}) + "\n")


async def metadata(request: Request):
    return JSONResponse({
        "issuer": f"{ISSUER}/",
        "authorization_endpoint": f"{ISSUER}/authorize",
        "token_endpoint": f"{ISSUER}/token",
        "response_types_supported": ["code"],
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
    })


async def token(request: Request):
    form = await request.form()
    ok = (form.get("grant_type") == "client_credentials" and form.get("client_id") == "ci-bot"
          and form.get("client_secret") == "s3cret")
    if not ok:
        record("token_refused", grant=form.get("grant_type"), client_id=form.get("client_id"))
        return JSONResponse({"error": "invalid_client"}, status_code=401)
    value = "cc-" + secrets.token_hex(16)
    TOKENS[value] = AccessToken(token=value, client_id="ci-bot", scopes=[], expires_at=int(time.time()) + 3600,
                                resource=form.get("resource"))
    record("token", resource=form.get("resource"))
    return JSONResponse({"access_token": value, "token_type": "Bearer", "expires_in": 3600})


class Verifier:
    async def verify_token(self, value: str):
        return TOKENS.get(value)


authorization = Starlette(routes=[
    Route("/.well-known/oauth-authorization-server", metadata),
    Route("/token", token, methods=["POST"]),
])

mcp = FastMCP(
    "scv-cc-test",
    host="127.0.0.1",
    port=RS_PORT,
    log_level="WARNING",
    token_verifier=Verifier(),
    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=RESOURCE, validate_token_resource=True),
)


@mcp.tool(structured_output=False)
def whoami() -> str:
    """Which client this call came from."""
    access = get_access_token()
    record("call", client=access.client_id if access else None)
    return f"client {access.client_id}" if access else "nobody"


async def main():
    servers = [
        uvicorn.Server(uvicorn.Config(authorization, host="127.0.0.1", port=AS_PORT, log_level="warning")),
        uvicorn.Server(uvicorn.Config(mcp.streamable_http_app(), host="127.0.0.1", port=RS_PORT,
                                      log_level="warning")),
    ]
    async with anyio.create_task_group() as group:
        for server in servers:
            group.start_soon(server.serve)


anyio.run(main)
