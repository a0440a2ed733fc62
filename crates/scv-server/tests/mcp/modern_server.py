"""An MCP server on the official Python SDK 2.x (`mcp==2.3.0`, its
`MCPServer`), which serves both eras: the 2026-07-28 revision (no
`initialize`; the version and capabilities in each request's `_meta`;
`server/discover`) and 2025-11-25 with its handshake. Used by
crates/scv-server/tests/mcp_revision.rs.

    python modern_server.py stdio
    python modern_server.py http PORT
"""

import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve

server = MCPServer("modern")


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
def era(ctx: Context) -> str:
    """Says which protocol revision this call came in."""
    return f"era: {ctx.protocol_version}"


@server.tool()
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greets whoever the user says they are (asked mid-call: at
    2026-07-28 an `input_required` result, at 2025-11-25 a request)."""
    return f"hello {who.name}"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool called `name` and says the tools list changed (at
    2026-07-28, on the client's `subscriptions/listen` stream)."""

    def added() -> str:
        return f"{name} is here"

    server.add_tool(added, name=name, description="added at run time")
    await ctx.notify_tools_changed()
    return f"added {name}"


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
