#!/usr/bin/env node
// Drives `scv acp` with the official ACP TypeScript SDK's client
// (@agentclientprotocol/sdk, pinned in package.json): handshake, a prompt,
// a permission request answered "Allow", a cancel; then a second `scv acp`
// lists the stored session, loads it (the conversation replayed) and
// prompts it again. Run by
// crates/scv-tui/tests/acp.rs, which scripts the mock provider in this
// order and sets SCV_HOME and SCV_SERVER_BIN.
//
//   node interop.mjs /path/to/scv /path/to/workspace
//
// Prints one line per check on stderr; exits 1 when one failed.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [scv, workspace] = process.argv.slice(2);
const start = () => {
  const child = spawn(scv, ["acp"], { cwd: workspace, stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { child, exited, stream };
};
const { child, exited, stream } = start();

let failed = false;
const check = (ok, what) => {
  if (!ok) failed = true;
  console.error(`${ok ? "ok" : "FAIL"}: ${what}`);
};

let updates = [];
let sessionId = null;
const permissions = [];
// Set during the prompt to cancel: cancel at its first answer chunk.
let cancelOnChunk = null;

const app = acp
  .client({ name: "scv-interop" })
  .onNotification(acp.methods.client.session.update, ({ params, agent }) => {
    updates.push(params.update);
    if (cancelOnChunk && params.update.sessionUpdate === "agent_message_chunk") {
      const sessionId = cancelOnChunk;
      cancelOnChunk = null;
      agent.notify(acp.methods.agent.session.cancel, { sessionId });
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params);
    const allow = params.options.find((o) => o.kind === "allow_once");
    return allow
      ? { outcome: { outcome: "selected", optionId: allow.optionId } }
      : { outcome: { outcome: "cancelled" } };
  });

const text = (kind) =>
  updates
    .filter((u) => u.sessionUpdate === kind)
    .map((u) => u.content.text)
    .join("");

try {
  await app.connectWith(stream, async (agent) => {
    const init = await agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "scv-interop", version: "0.0.1" },
    });
    check(init.protocolVersion === 1, `protocolVersion ${init.protocolVersion}`);
    check(init.agentInfo?.name === "scv", `agentInfo.name ${init.agentInfo?.name}`);
    check(init.agentCapabilities?.promptCapabilities?.embeddedContext === true, "embeddedContext");
    check(init.agentCapabilities?.loadSession === true, "loadSession true");
    check(typeof init.agentCapabilities?.sessionCapabilities?.list === "object", "sessionCapabilities.list");

    ({ sessionId } = await agent.request(acp.methods.agent.session.new, {
      cwd: workspace,
      mcpServers: [],
    }));
    check(typeof sessionId === "string" && sessionId.length > 0, `session ${sessionId}`);

    // A prompt and its streamed answer.
    updates = [];
    const hello = await agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "INTEROP-HELLO" }],
    });
    check(hello.stopReason === "end_turn", `hello stopReason ${hello.stopReason}`);
    check(text("agent_message_chunk") === "Hello from SCV.", `hello text "${text("agent_message_chunk")}"`);

    // An edit behind a permission request.
    updates = [];
    const edit = await agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [
        { type: "text", text: "INTEROP-EDIT" },
        { type: "resource", resource: { uri: `file://${join(workspace, "f.txt")}`, mimeType: "text/plain", text: "before\n" } },
      ],
    });
    check(edit.stopReason === "end_turn", `edit stopReason ${edit.stopReason}`);
    check(permissions.length === 1, `${permissions.length} permission request(s)`);
    const asked = permissions[0];
    check(asked?.sessionId === sessionId, "permission for the session");
    check(
      JSON.stringify(asked?.options.map((o) => [o.optionId, o.name, o.kind])) ===
        JSON.stringify([
          ["allow_once", "Allow", "allow_once"],
          ["allow_always", "Always allow edits to files in this workspace (write_file, edit_file) in this session", "allow_always"],
          ["reject_once", "Reject", "reject_once"],
        ]),
      "Allow / Always allow / Reject options",
    );
    const call = updates.find((u) => u.sessionUpdate === "tool_call");
    check(call?.kind === "edit" && asked?.toolCall.toolCallId === call?.toolCallId, "the edit's tool call was asked about");
    const done = updates.filter((u) => u.sessionUpdate === "tool_call_update").at(-1);
    const diff = done?.content?.find((c) => c.type === "diff");
    check(done?.status === "completed", `edit status ${done?.status}`);
    check(diff?.oldText === "before\n" && diff?.newText === "after\n", `diff ${JSON.stringify(diff)}`);
    check(readFileSync(join(workspace, "f.txt"), "utf8") === "after\n", "the file changed");

    // A cancel during a streamed answer.
    updates = [];
    cancelOnChunk = sessionId;
    const cancelled = await agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "INTEROP-CANCEL" }],
    });
    check(cancelled.stopReason === "cancelled", `cancel stopReason ${cancelled.stopReason}`);

    // Errors arrive as RequestError with the JSON-RPC code.
    try {
      await agent.request(acp.methods.agent.session.prompt, {
        sessionId: "no-such-session",
        prompt: [{ type: "text", text: "hi" }],
      });
      check(false, "an unknown session is refused");
    } catch (err) {
      check(err instanceof acp.RequestError && err.code === -32002, `unknown session: ${err.code}`);
    }
  });
} catch (err) {
  check(false, `the connection failed: ${err?.stack ?? err}`);
} finally {
  child.stdin.end();
}
const code = await exited;
check(code === 0, `scv acp exited ${code} after stdin closed`);

// The editor comes back: the session is listed, loads with its
// conversation replayed before the answer, and takes the next prompt.
const second = start();
try {
  await app.connectWith(second.stream, async (agent) => {
    await agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      clientInfo: { name: "scv-interop", version: "0.0.1" },
    });
    const listed = await agent.request(acp.methods.agent.session.list, { cwd: workspace });
    const found = listed.sessions.find((s) => s.sessionId === sessionId);
    check(found?.title === "INTEROP-HELLO", `listed title ${found?.title}`);
    check(typeof found?.updatedAt === "string" && !Number.isNaN(Date.parse(found.updatedAt)), `updatedAt ${found?.updatedAt}`);
    updates = [];
    await agent.request(acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] });
    const prompts = updates.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text);
    check(
      JSON.stringify(prompts.map((p) => p.split("\n")[0])) === JSON.stringify(["INTEROP-HELLO", "INTEROP-EDIT", "INTEROP-CANCEL"]),
      `replayed prompts ${JSON.stringify(prompts)}`,
    );
    check(text("agent_message_chunk").startsWith("Hello from SCV."), "replayed answer");
    check(updates.some((u) => u.sessionUpdate === "tool_call" && u.status === "completed"), "replayed edit");
    updates = [];
    const again = await agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "INTEROP-AGAIN" }],
    });
    check(again.stopReason === "end_turn", `loaded session stopReason ${again.stopReason}`);
    check(text("agent_message_chunk") === "Back again.", `loaded session text "${text("agent_message_chunk")}"`);
  });
} catch (err) {
  check(false, `the second connection failed: ${err?.stack ?? err}`);
} finally {
  second.child.stdin.end();
}
const secondCode = await second.exited;
check(secondCode === 0, `the second scv acp exited ${secondCode}`);
process.exit(failed ? 1 : 0);
