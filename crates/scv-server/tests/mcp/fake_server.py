"""An MCP server for SCV's tests, written with the official Python SDK
(mcp 1.30, FastMCP). Usage:
    python fake_server.py stdio
    python fake_server.py http PORT
Events (start, cancellations, ...) are appended as JSON lines to the file
named by SCV_MCP_LOG.
"""
import asyncio
import base64
import json
import os
import sys

import anyio
from mcp.server.fastmcp import Context, FastMCP, Image
from mcp.types import CallToolResult, SamplingMessage, TextContent, ToolAnnotations

LOG = os.environ.get("SCV_MCP_LOG", os.devnull)


def record(event: str, **fields):
    # Plain synchronous I/O: it works even inside a cancelled scope.
    with open(LOG, "a") as f:
        f.write(json.dumps({"event": event, **fields}) + "\n")


transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
port = int(sys.argv[2]) if len(sys.argv) > 2 else 8765
mcp = FastMCP("scv-test", host="127.0.0.1", port=port, log_level="INFO")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def echo(text: str, times: int = 1) -> str:
    """Echo text back."""
    return text * times


@mcp.tool(name="dotted.name", structured_output=False)
def dotted(x: int) -> str:
    """A tool whose name model APIs would refuse."""
    return f"dotted {x}"


@mcp.tool(structured_output=False)
def fail(message: str) -> str:
    """Always raises, so the result has isError: true."""
    raise ValueError(message)


@mcp.tool()
def image() -> Image:
    """A 1x1 PNG."""
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
    )
    return Image(data=png, format="png")


@mcp.tool(structured_output=False)
def big(n: int) -> str:
    """n bytes of text."""
    return "x" * n


@mcp.tool(structured_output=False)
async def slow(seconds: float, ctx: Context) -> str:
    """Sleeps; records whether it was cancelled."""
    record("slow_started", id=str(ctx.request_id))
    try:
        await anyio.sleep(seconds)
    except asyncio.CancelledError:
        record("cancelled", id=str(ctx.request_id))
        raise
    return "slept"


@mcp.tool(structured_output=False)
def exit_now() -> str:
    """The server dies in the middle of the call."""
    record("exiting")
    os._exit(3)


@mcp.tool(structured_output=False)
async def ask_llm(question: str, ctx: Context) -> str:
    """Asks the client's model (sampling)."""
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=question))],
        max_tokens=100,
        related_request_id=ctx.request_id,
    )
    return f"sampled: {result.content}"


@mcp.tool(structured_output=False)
async def ask_user(question: str, ctx: Context) -> str:
    """Asks the user (elicitation)."""
    from pydantic import BaseModel

    class Answer(BaseModel):
        ok: bool

    result = await ctx.elicit(message=question, schema=Answer)
    return f"elicited: {result.action}"


@mcp.tool(structured_output=False)
async def ask_form(question: str, ctx: Context) -> str:
    """Asks the user to fill in a form (elicitation, form mode)."""
    from pydantic import BaseModel, Field

    class Person(BaseModel):
        name: str = Field(min_length=2)
        age: int = Field(ge=0, le=150)

    result = await ctx.elicit(message=question, schema=Person)
    data = result.data.model_dump() if result.action == "accept" else None
    return f"form: {result.action} {json.dumps(data, sort_keys=True)}"


@mcp.tool(structured_output=False)
async def ask_url(ctx: Context) -> str:
    """Sends the user to a page (elicitation, URL mode)."""
    result = await ctx.elicit_url(
        message="Connect your account", url="https://example.com/connect?id=7", elicitation_id="e-7"
    )
    return f"url: {result.action}"


@mcp.prompt()
def review(path: str, tone: str = "kind") -> str:
    """Review a file."""
    return f"Review {path} in a {tone} tone."


@mcp.resource("guide://intro", mime_type="text/plain")
def intro() -> str:
    """The guide's introduction."""
    return "The intro text: read the guide first."


@mcp.tool(structured_output=False)
async def add_prompt(name: str, ctx: Context) -> str:
    """Adds a prompt and says the list changed."""
    from mcp.server.fastmcp.prompts import Prompt

    def added(topic: str) -> str:
        return f"Write about {topic}."

    mcp.add_prompt(Prompt.from_function(added, name=name, description="added at run time"))
    await ctx.session.send_prompt_list_changed()
    return f"added prompt {name}"


@mcp.tool(structured_output=False)
async def roots(ctx: Context) -> str:
    """The client's roots."""
    result = await ctx.session.list_roots()
    return "\n".join(str(root.uri) for root in result.roots)


@mcp.tool(structured_output=False)
async def log_things(ctx: Context) -> str:
    """Sends log notices."""
    await ctx.info("info from the tool")
    return "logged"


@mcp.tool(structured_output=False)
async def add_tool(name: str, ctx: Context) -> str:
    """Adds a tool and says the list changed."""

    def added(x: int) -> str:
        return f"added tool got {x}"

    mcp.add_tool(added, name=name, description="added at run time", structured_output=False)
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@mcp.tool(structured_output=False)
def whoami(ctx: Context) -> str:
    """The Authorization header of this HTTP request."""
    request = ctx.request_context.request
    return request.headers.get("authorization", "none") if request is not None else "stdio"


if __name__ == "__main__":
    record("start", pid=os.getpid())
    print("fake server starting", file=sys.stderr, flush=True)
    mcp.run(transport="stdio" if transport == "stdio" else "streamable-http")
