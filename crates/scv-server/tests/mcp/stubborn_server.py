"""An MCP server (official Python SDK, FastMCP) that ignores SIGTERM and
starts a helper that ignores it too, in a session of its own (like a
language server a real one starts). Usage:
    python stubborn_server.py serve      answers like any server
    python stubborn_server.py starting   never answers initialize: it is
                                         still "starting" (like `npx -y`
                                         fetching a package), not reading
                                         its stdin
    python stubborn_server.py exit       exits at once, saying why on stderr
Records {"event": "start", "pid": ..., "helper": ...} in SCV_MCP_LOG.
"""
import json
import os
import signal
import subprocess
import sys
import time

from mcp.server.fastmcp import FastMCP

LOG = os.environ.get("SCV_MCP_LOG", os.devnull)
mode = sys.argv[1] if len(sys.argv) > 1 else "serve"


def record(event: str, **fields):
    with open(LOG, "a") as f:
        f.write(json.dumps({"event": event, **fields}) + "\n")


if mode == "exit":
    print("stubborn server: no configuration, giving up", file=sys.stderr, flush=True)
    sys.exit(3)

signal.signal(signal.SIGTERM, signal.SIG_IGN)
helper = subprocess.Popen(
    [
        sys.executable,
        "-c",
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(1000)",
    ],
    start_new_session=True,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    # stderr inherited, as a real helper's is.
)
record("start", pid=os.getpid(), helper=helper.pid)

if mode == "starting":
    while True:
        time.sleep(1000)

mcp = FastMCP("scv-stubborn", log_level="WARNING")


@mcp.tool(structured_output=False)
def echo(text: str) -> str:
    """Echo text back."""
    return text


mcp.run(transport="stdio")
