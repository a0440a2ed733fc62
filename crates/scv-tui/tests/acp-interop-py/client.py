#!/usr/bin/env python3
"""ACP v1 driven by the official Python SDK's client (PyPI
`agent-client-protocol`, module `acp`) against `scv acp`: one scenario
per run, named on the command line. Run by crates/scv-tui/tests/acp_python.rs,
which scripts the mock provider for the scenario and sets SCV_HOME and
SCV_SERVER_BIN.

    python client.py /path/to/scv /path/to/workspace SCENARIO

Prints one line per check on stderr ("ok: ..." or "FAIL: ..."); exits 1
when one failed.
"""

import asyncio
import os
import sys

import acp
from acp import RequestError, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    RequestPermissionResponse,
)

SCV, WORKSPACE, SCENARIO = sys.argv[1:4]
PASSED_ENV = ("HOME", "SCV_HOME", "SCV_SERVER_BIN", "CLAUDE_CONFIG_DIR")
failed = False


def check(ok, what):
    global failed
    if not ok:
        failed = True
    print(f"{'ok' if ok else 'FAIL'}: {what}", file=sys.stderr, flush=True)


class Editor:
    """The editor's side: records every update; answers permission
    requests as `allow` says."""

    def __init__(self):
        self.updates = []
        self.permissions = []
        self.allow = True
        self.on_update = None

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permissions.append((session_id, tool_call, options))
        kind = "allow_once" if self.allow else "reject_once"
        chosen = next(o for o in options if o.kind == kind)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append((session_id, update))
        if self.on_update is not None:
            self.on_update(session_id, update)

    def of(self, session_id, kind):
        return [u for s, u in self.updates if s == session_id and u.session_update == kind]

    def text(self, session_id):
        return "".join(u.content.text for u in self.of(session_id, "agent_message_chunk"))

    def next(self, pred):
        """A future resolved at the next update `pred` accepts."""
        future = asyncio.get_running_loop().create_future()

        def seen(session_id, update):
            if not future.done() and pred(session_id, update):
                self.on_update = None
                future.set_result(update)

        self.on_update = seen
        return future


async def fails(what, code, awaitable):
    try:
        await awaitable
        check(False, f"{what}: no error")
    except RequestError as err:
        check(err.code == code, f"{what}: {err.code} {err}")


async def with_agent(editor, body):
    # The SDK hands the agent a trimmed environment (as editors do): what
    # the test's home needs is passed on by name.
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    async with acp.spawn_agent_process(
        editor,
        SCV,
        "acp",
        cwd=WORKSPACE,
        env=env,
        transport_kwargs={"stderr": None, "shutdown_timeout": 30.0},
    ) as (conn, process):
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                terminal=False,
            ),
            client_info=Implementation(name="scv-interop-py", version="0.0.1"),
        )
        await body(conn, init)
    code = await process.wait()
    check(code == 0, f"scv acp exited {code}")


async def open_session(conn):
    return (await conn.new_session(cwd=WORKSPACE, mcp_servers=[])).session_id


def prompt(conn, session_id, words):
    return conn.prompt(session_id=session_id, prompt=[text_block(words)])


async def turn():
    """initialize, session/new, a streamed answer, a tool call the
    editor allows and one it refuses."""
    editor = Editor()

    async def body(conn, init):
        check(init.protocol_version == 1, f"protocol version {init.protocol_version}")
        caps = init.agent_capabilities
        check(caps.load_session is True, "loadSession")
        sessions = caps.session_capabilities
        check(
            sessions is not None and sessions.close is not None and sessions.resume is not None,
            "sessionCapabilities close and resume",
        )
        check(init.agent_info is not None and init.agent_info.name == "scv", f"agentInfo {init.agent_info}")
        s = await open_session(conn)
        answered = await prompt(conn, s, "PY-HELLO")
        check(answered.stop_reason == "end_turn", f"first prompt {answered.stop_reason}")
        check(editor.text(s) == "Hello from the mock.", f"streamed text {editor.text(s)!r}")
        chunks = editor.of(s, "agent_message_chunk")
        check(len({c.message_id for c in chunks}) == 1, "one message id for the answer")

        allowed = await prompt(conn, s, "PY-TOOL")
        check(allowed.stop_reason == "end_turn", f"tool prompt {allowed.stop_reason}")
        check(len(editor.permissions) == 1, f"one permission asked: {len(editor.permissions)}")
        starts = editor.of(s, "tool_call")
        check(len(starts) == 1 and starts[0].kind == "execute", f"the tool call {starts}")
        done = [u for u in editor.of(s, "tool_call_update") if u.status == "completed"]
        check(len(done) == 1 and done[0].tool_call_id == starts[0].tool_call_id, "the tool call completed")
        shown = "".join(
            c.content.text
            for c in (done[0].content or []) if getattr(c, "type", None) == "content" and hasattr(c.content, "text")
        )
        check("ran-in-py" in shown, f"the tool's output is shown {shown!r}")

        editor.allow = False
        refused = await prompt(conn, s, "PY-REFUSED")
        check(refused.stop_reason == "end_turn", f"refused prompt {refused.stop_reason}")
        failed_calls = [u for u in editor.of(s, "tool_call_update") if u.status == "failed"]
        check(len(failed_calls) == 1, f"the refused call failed: {len(failed_calls)}")
        check(editor.text(s).endswith("Not run."), f"the answer after it {editor.text(s)!r}")

    await with_agent(editor, body)


async def lifecycle():
    """session/list, set_config_option, cancel, close, resume and load,
    with their errors in JSON-RPC codes."""
    editor = Editor()
    kept = {}

    async def first(conn, init):
        s = await open_session(conn)
        kept["s"] = s
        await prompt(conn, s, "PY-FIRST")
        listed = await conn.list_sessions(cwd=WORKSPACE)
        check(any(x.session_id == s for x in listed.sessions), "session/list names it")
        mode = await conn.set_config_option(session_id=s, config_id="mode", value="plan")
        current = {o.id: o.current_value for o in mode.config_options}
        check(current.get("mode") == "plan", f"mode set {current}")
        await fails(
            "an unknown option", -32602, conn.set_config_option(session_id=s, config_id="nope", value="x")
        )
        back = await conn.set_config_option(session_id=s, config_id="mode", value="default")
        check({o.id: o.current_value for o in back.config_options}.get("mode") == "default", "mode back")

        streaming = editor.next(lambda sid, u: sid == s and u.session_update == "agent_message_chunk")
        running = asyncio.ensure_future(prompt(conn, s, "PY-SLOW"))
        await streaming
        await conn.cancel(session_id=s)
        answered = await running
        check(answered.stop_reason == "cancelled", f"cancelled prompt {answered.stop_reason}")

        await conn.close_session(session_id=s)
        await fails("a prompt to the closed session", -32002, prompt(conn, s, "hi"))
        await fails("an unknown session", -32002, conn.resume_session(cwd=WORKSPACE, session_id="nope-nope"))
        await fails("a relative cwd", -32602, conn.new_session(cwd="relative", mcp_servers=[]))
        await fails("an unknown method", -32601, conn._conn.send_request("scv/nothing", {}))

    await with_agent(editor, first)

    later = Editor()

    async def second(conn, init):
        s = kept["s"]
        await conn.load_session(cwd=WORKSPACE, session_id=s, mcp_servers=[])
        replayed = "".join(
            u.content.text for u in later.of(s, "user_message_chunk") if hasattr(u.content, "text")
        )
        check("PY-FIRST" in replayed, f"session/load replays the prompt {replayed!r}")
        check("First." in later.text(s), f"and the answer {later.text(s)!r}")
        later.updates.clear()
        again = await prompt(conn, s, "PY-AFTER-LOAD")
        check(again.stop_reason == "end_turn" and later.text(s) == "Again.", f"the next prompt {later.text(s)!r}")

    await with_agent(later, second)


async def main():
    scenarios = {"turn": turn, "lifecycle": lifecycle}
    run = scenarios.get(SCENARIO)
    if run is None:
        check(False, f"unknown scenario {SCENARIO}")
    else:
        await run()
    sys.exit(1 if failed else 0)


asyncio.run(main())
