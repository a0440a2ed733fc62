"""An MCP server for SCV's tests, written with the official Python SDK
(mcp 1.30, FastMCP), that records the `_meta` of each tool call it gets.
Usage: python meta_server.py   (stdio)
Its one tool, `meta`, answers with that `_meta` as JSON (sorted keys; `{}`
when the request had none).
"""
import json

from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("scv-meta", log_level="WARNING")


@mcp.tool(structured_output=False)
def meta(ctx: Context) -> str:
    """The _meta this call carried."""
    received = ctx.request_context.meta
    fields = received.model_dump(exclude_none=True) if received is not None else {}
    return json.dumps(fields, sort_keys=True)


mcp.run("stdio")
