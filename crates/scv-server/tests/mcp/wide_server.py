"""An MCP server (official Python SDK, FastMCP) with 100 tools whose
definitions together weigh about 90 KiB, over SCV's threshold for loading
MCP tools through `mcp_tool_search`. Usage: python wide_server.py"""
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("scv-wide", log_level="WARNING")

NOUNS = ["invoice", "customer", "ticket", "project", "deploy", "metric", "alert", "page", "user", "team"]
VERBS = ["create", "get", "list", "update", "delete", "archive", "restore", "export", "import", "search"]
FILLER = (
    " It takes the identifier of the record and returns the record as JSON, with every field"
    " the tracker keeps: names, dates, owners, labels, links and the history of its changes."
) * 4


def make(verb: str, noun: str):
    def tool(x: int = 0) -> str:
        return f"{verb} {noun} {x}"

    return tool


for noun in NOUNS:
    for verb in VERBS:
        mcp.add_tool(
            make(verb, noun),
            name=f"{noun}_{verb}",
            description=f"{verb.capitalize()} {noun} records.{FILLER}",
            structured_output=False,
        )

mcp.run("stdio")
