#!/usr/bin/env python3
"""ACP v1 methods driven by the official Python SDK (`agent-client-protocol`
on PyPI, module `acp`) against `scv acp`. Run by
crates/scv-tui/tests/acp_python.rs, which scripts the mock provider and
sets SCV_HOME, SCV_SERVER_BIN, IMAGE_B64 (a PNG it knows byte for byte)
and EXTRA_DIR (a directory outside the workspace).

    python3 python_v1.py /path/to/scv /path/to/workspace

Prints one line per check on stderr ("ok: ..." or "FAIL: ..."); exits 1
when one failed.
"""

import asyncio
import os
import sys

import acp
from acp import RequestError, image_block, text_block
from acp.stdio import spawn_agent_process

failed = False


def check(ok, what):
    global failed
    if not ok:
        failed = True
    print(f"{'ok' if ok else 'FAIL'}: {what}", file=sys.stderr, flush=True)


class Editor:
    """The editor's side: collects updates, cancels permission requests."""

    def __init__(self):
        self.updates = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        return {"outcome": {"outcome": "cancelled"}}

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append((session_id, update))

    def text(self, session_id):
        return "".join(
            u.content.text
            for s, u in self.updates
            if s == session_id and getattr(u, "session_update", "") == "agent_message_chunk"
        )


async def fails(what, code, coro):
    try:
        await coro
        check(False, f"{what}: no error")
    except RequestError as err:
        check(err.code == code, f"{what}: {err.code} {err}")


async def main(scv, workspace):
    editor = Editor()
    env = {k: os.environ[k] for k in ("SCV_HOME", "SCV_SERVER_BIN", "CLAUDE_CONFIG_DIR", "PATH", "HOME") if k in os.environ}
    png = os.environ["IMAGE_B64"]
    extra = os.environ["EXTRA_DIR"]
    async with spawn_agent_process(
        lambda _agent: editor, scv, "acp", env=env, cwd=workspace, transport_kwargs={"stderr": None}
    ) as (conn, process):
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        caps = init.agent_capabilities
        check(init.protocol_version == 1, f"protocol version {init.protocol_version}")
        check(caps.prompt_capabilities.image is True, "promptCapabilities.image")
        check(caps.session_capabilities.additional_directories is not None, "sessionCapabilities.additionalDirectories")
        check(caps.session_capabilities.close is not None, "sessionCapabilities.close")

        await fails("session/new with a relative directory", -32602, conn.new_session(cwd=workspace, additional_directories=["rel/dir"]))
        session = await conn.new_session(cwd=workspace, additional_directories=[extra])
        sid = session.session_id
        check(bool(sid), "session/new with an additional directory")

        answer = await conn.prompt(
            session_id=sid, prompt=[text_block("PY-IMAGE what is this?"), image_block(png, "image/png")]
        )
        check(answer.stop_reason == "end_turn", f"image prompt: {answer.stop_reason}")
        check(editor.text(sid) == "A picture.", f"answer text {editor.text(sid)!r}")
        await fails("an image that is none", -32602, conn.prompt(session_id=sid, prompt=[image_block("AAAA", "image/png")]))

        listed = await conn.list_sessions(cwd=workspace)
        check(any(s.session_id == sid for s in listed.sessions), "session/list holds it")
        await conn.set_session_mode(session_id=sid, mode_id="plan")
        check(True, "session/set_mode plan")

        await conn.close_session(session_id=sid)
        await fails("a prompt to the closed session", -32002, conn.prompt(session_id=sid, prompt=[text_block("hi")]))
        resumed = await conn.resume_session(session_id=sid, cwd=workspace, additional_directories=[extra])
        check(resumed.modes is not None, "session/resume answers with modes")
        again = await conn.prompt(session_id=sid, prompt=[text_block("PY-AFTER")])
        check(again.stop_reason == "end_turn", f"resumed prompt: {again.stop_reason}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2])))
