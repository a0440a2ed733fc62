"""An MCP server (official Python SDK, low-level API) with 200 tools, one
whose input schema is not an object and one whose schema is of the wrong
type. Usage: python many_tools_server.py"""
import anyio
import mcp.server.stdio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server

server = Server("scv-many")


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    tools = [
        types.Tool(
            name=f"t{i:03}",
            description=f"tool {i}",
            inputSchema={"type": "object", "properties": {"x": {"type": "integer"}}},
        )
        for i in range(200)
    ]
    tools.insert(0, types.Tool.model_construct(name="schema_is_string", inputSchema="oops"))
    tools.insert(0, types.Tool(name="schema_not_object", inputSchema={"type": "string"}))
    return tools


@server.call_tool(validate_input=False)
async def call_tool(name: str, arguments: dict) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=f"{name} got {arguments}")]


async def main():
    async with mcp.server.stdio.stdio_server() as (read, write):
        await server.run(
            read,
            write,
            server.create_initialization_options(
                notification_options=NotificationOptions(tools_changed=True)
            ),
        )


anyio.run(main)
