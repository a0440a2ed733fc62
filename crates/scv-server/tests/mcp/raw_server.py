"""A misbehaving MCP server for SCV's tests: raw JSON-RPC on stdio, no SDK,
since the SDKs will not misbehave on purpose. Usage: python raw_server.py MODE
  garbage      non-JSON lines before its initialize answer
  unknown_id   a response to an id nobody asked about before each result
  no_init      never answers initialize
  huge         answers tools/call with a 20 MB line
  ok           behaves
"""
import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "ok"


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    message = json.loads(line)
    mid, method = message.get("id"), message.get("method")
    if method == "initialize":
        if mode == "no_init":
            continue
        if mode == "garbage":
            print("hello, I am not JSON", flush=True)
            sys.stdout.write("{broken json\n")
            sys.stdout.flush()
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "raw", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [
            {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}})
    elif method == "tools/call":
        if mode == "unknown_id":
            send({"jsonrpc": "2.0", "id": 999999, "result": {"content": [{"type": "text", "text": "stray"}]}})
        if mode == "huge":
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "x" * (20 * 1024 * 1024)}]}})
            continue
        text = message["params"].get("arguments", {}).get("text", "")
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": f"raw echo {text}"}]}})
    elif mid is not None and method is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"no {method}"}})
