#!/usr/bin/env node
// ACP v1's later methods, driven by the official TypeScript SDK's client
// (@agentclientprotocol/sdk) against `scv acp`: one scenario per run,
// named on the command line. Run by crates/scv-tui/tests/acp_v1.rs,
// which scripts the mock provider for the scenario and sets SCV_HOME and
// SCV_SERVER_BIN.
//
//   node v1.mjs /path/to/scv /path/to/workspace SCENARIO
//
// Prints one line per check on stderr ("ok: …" or "FAIL: …"); exits 1
// when one failed.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [scv, workspace, scenario] = process.argv.slice(2);

let failed = false;
const check = (ok, what) => {
  if (!ok) failed = true;
  console.error(`${ok ? "ok" : "FAIL"}: ${what}`);
};

// Permission requests are allowed (else cancelled); the questions asked.
let allowTools = false;
const elicitations = [];
let clientCapabilities = { fs: { readTextFile: false, writeTextFile: false }, terminal: false };

// Every `session/update`, by session, and a hook run at each.
const updates = [];
let onUpdate = () => {};
const app = acp
  .client({ name: "scv-interop-v1" })
  .onNotification(acp.methods.client.session.update, ({ params, agent }) => {
    updates.push(params);
    onUpdate(params, agent);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) =>
    allowTools
      ? { outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === "allow_once").optionId } }
      : { outcome: { outcome: "cancelled" } },
  )
  .onRequest(acp.methods.client.elicitation.create, ({ params }) => {
    elicitations.push(params);
    if (params.requestedSchema?.properties?.trust) return { action: "accept", content: { trust: true } };
    return params.mode === "form" ? { action: "accept", content: { name: "Ada", age: 36 } } : { action: "decline" };
  });

const of = (sessionId, kind) =>
  updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind).map((u) => u.update);
const text = (sessionId) =>
  of(sessionId, "agent_message_chunk")
    .map((u) => u.content.text)
    .join("");

// Resolves at the next update `pred` accepts.
const next = (pred) =>
  new Promise((resolve) => {
    onUpdate = (params, agent) => {
      if (pred(params)) {
        onUpdate = () => {};
        resolve(agent);
      }
    };
  });

const fails = async (what, code, promise) => {
  try {
    await promise;
    check(false, `${what}: no error`);
  } catch (err) {
    check(err instanceof acp.RequestError && err.code === code, `${what}: ${err?.code} ${err?.message}`);
  }
};

// One `scv acp` and an initialized connection to it, for `body`.
async function withAgent(body) {
  const child = spawn(scv, ["acp"], { cwd: workspace, stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  try {
    await app.connectWith(stream, async (agent) => {
      const init = await agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities,
        clientInfo: { name: "scv-interop-v1", version: "0.0.1" },
      });
      await body(agent, init);
    });
  } catch (err) {
    check(false, `the connection failed: ${err?.stack ?? err}`);
  } finally {
    child.stdin.end();
  }
  const code = await exited;
  check(code === 0, `scv acp exited ${code}`);
}

const open = async (agent) => (await agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] })).sessionId;
const prompt = (agent, sessionId, words, options) =>
  agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: words }] }, options);

const scenarios = {
  // session/close: a running prompt answers `cancelled`, the session is
  // gone here (-32002), another session goes on, and the closed one
  // can be resumed at once (the daemon let go of it).
  async close() {
    await withAgent(async (agent, init) => {
      check(typeof init.agentCapabilities?.sessionCapabilities?.close === "object", "sessionCapabilities.close");
      // Advertised where it works: extra roots; images.
      check(typeof init.agentCapabilities?.sessionCapabilities?.additionalDirectories === "object", "additionalDirectories");
      check(init.agentCapabilities?.promptCapabilities?.image === true, "images");
      const a = await open(agent);
      const b = await open(agent);
      const streaming = next((p) => p.sessionId === a && p.update.sessionUpdate === "agent_message_chunk");
      const running = prompt(agent, a, "CLOSE-A");
      await streaming;
      const closed = await agent.request(acp.methods.agent.session.close, { sessionId: a });
      check(JSON.stringify(closed) === "{}", `close answered ${JSON.stringify(closed)}`);
      const answered = await running;
      check(answered.stopReason === "cancelled", `the running prompt: ${answered.stopReason}`);
      await fails("a prompt to the closed session", -32002, prompt(agent, a, "hi"));
      // -32002, which the SDK takes as success for session/close.
      const again = await agent.request(acp.methods.agent.session.close, { sessionId: a });
      check(JSON.stringify(again) === "{}", "closing it again ends the same");
      const other = await prompt(agent, b, "CLOSE-B");
      check(other.stopReason === "end_turn" && text(b) === "B goes on.", `the other session: ${other.stopReason} "${text(b)}"`);
      const resumed = await agent.request(acp.methods.agent.session.resume, { sessionId: a, cwd: workspace });
      check(resumed.modes?.currentModeId === "default", `the closed session resumes here: ${JSON.stringify(resumed.modes?.currentModeId)}`);
    });
  },

  // session/resume: a stored session live again in the next process,
  // nothing replayed, the next prompt answered (with its history, which
  // the Rust side checks in the provider request).
  async resume() {
    let sessionId;
    await withAgent(async (agent) => {
      sessionId = await open(agent);
      await prompt(agent, sessionId, "RESUME-FIRST");
    });
    updates.length = 0;
    await withAgent(async (agent, init) => {
      check(typeof init.agentCapabilities?.sessionCapabilities?.resume === "object", "sessionCapabilities.resume");
      const resumed = await agent.request(acp.methods.agent.session.resume, { sessionId, cwd: workspace, mcpServers: [] });
      check(Array.isArray(resumed.modes?.availableModes), `modes ${JSON.stringify(resumed.modes)}`);
      const again = await prompt(agent, sessionId, "RESUME-SECOND");
      check(again.stopReason === "end_turn", `resumed prompt ${again.stopReason}`);
      check(of(sessionId, "user_message_chunk").length === 0, "nothing replayed");
      check(text(sessionId) === "Resumed.", `resumed text "${text(sessionId)}"`);
      const same = await agent.request(acp.methods.agent.session.resume, { sessionId, cwd: workspace });
      check(typeof same === "object", "resuming a session live here answers");
      await fails("an unknown session", -32002, agent.request(acp.methods.agent.session.resume, { sessionId: "nope-nope", cwd: workspace }));
      await fails("a relative cwd", -32602, agent.request(acp.methods.agent.session.resume, { sessionId, cwd: "rel" }));
    });
  },

  // session/delete: a live session is closed and deleted; it leaves the
  // list; an unknown one succeeds silently.
  async delete() {
    await withAgent(async (agent, init) => {
      check(typeof init.agentCapabilities?.sessionCapabilities?.delete === "object", "sessionCapabilities.delete");
      const s = await open(agent);
      await prompt(agent, s, "DELETE-ME");
      const before = await agent.request(acp.methods.agent.session.list, { cwd: workspace });
      check(before.sessions.some((x) => x.sessionId === s), "listed before");
      const deleted = await agent.request(acp.methods.agent.session.delete, { sessionId: s });
      check(JSON.stringify(deleted) === "{}", `delete answered ${JSON.stringify(deleted)}`);
      const after = await agent.request(acp.methods.agent.session.list, { cwd: workspace });
      check(!after.sessions.some((x) => x.sessionId === s), "gone from the list");
      await fails("a prompt to the deleted session", -32002, prompt(agent, s, "hi"));
      const unknown = await agent.request(acp.methods.agent.session.delete, { sessionId: "never-was" });
      check(JSON.stringify(unknown) === "{}", "an unknown session deletes silently");
    });
  },

  // usage_update after each provider step and at the turn's end,
  // session_info_update with the title at the first prompt, message ids
  // on chunks. The usage figures are printed for the Rust side.
  async usage() {
    await withAgent(async (agent) => {
      const s = await open(agent);
      const first = await prompt(agent, s, "USAGE-TITLE first line\nsecond line");
      check(first.stopReason === "end_turn", `first ${first.stopReason}`);
      for (const u of of(s, "usage_update")) {
        console.error(`usage ${u.used}/${u.size} ${u.cost ? `${u.cost.amount.toFixed(4)} ${u.cost.currency}` : "-"}`);
      }
      const infos = of(s, "session_info_update");
      check(infos.length === 1 && infos[0].title === "USAGE-TITLE first line", `title ${JSON.stringify(infos)}`);
      check(!Number.isNaN(Date.parse(infos[0]?.updatedAt)), `updatedAt ${infos[0]?.updatedAt}`);
      const chunks = of(s, "agent_message_chunk");
      const ids = new Set(chunks.map((c) => c.messageId));
      check(chunks.length === 2 && ids.size === 1 && typeof chunks[0].messageId === "string", `one message, one id: ${JSON.stringify([...ids])}`);
      updates.length = 0;
      await prompt(agent, s, "USAGE-AGAIN");
      const again = of(s, "agent_message_chunk");
      check(again.length > 0 && !ids.has(again[0].messageId), `the next message has its own id ${again[0]?.messageId}`);
      check(of(s, "session_info_update").length === 0, "the title is told once");
    });
  },

  // Config options: model (the provider's list, told when it arrives)
  // and mode, changed by session/set_config_option; refusals in
  // JSON-RPC codes.
  async config() {
    await withAgent(async (agent) => {
      const listed = next((p) => p.update.sessionUpdate === "config_option_update");
      const created = await agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
      const s = created.sessionId;
      const opt = (options, id) => options?.find((o) => o.id === id);
      check(opt(created.configOptions, "model")?.currentValue === "mock-model", `model ${JSON.stringify(opt(created.configOptions, "model"))}`);
      check(opt(created.configOptions, "model")?.category === "model", "model category");
      check(opt(created.configOptions, "mode")?.currentValue === "default" && opt(created.configOptions, "mode")?.category === "mode", "mode option");
      await listed;
      const update = of(s, "config_option_update").at(-1);
      const ids = opt(update?.configOptions, "model")?.options.map((o) => o.value);
      check(JSON.stringify(ids) === JSON.stringify(["alpha-model", "beta-model", "mock-model"]), `the provider's models ${JSON.stringify(ids)}`);
      const set = await agent.request(acp.methods.agent.session.setConfigOption, { sessionId: s, configId: "model", value: "beta-model" });
      check(opt(set.configOptions, "model")?.currentValue === "beta-model", "model set");
      await prompt(agent, s, "CONFIG-MODEL");
      const plan = await agent.request(acp.methods.agent.session.setConfigOption, { sessionId: s, configId: "mode", value: "plan" });
      check(opt(plan.configOptions, "mode")?.currentValue === "plan", "mode set");
      check(of(s, "current_mode_update").at(-1)?.currentModeId === "plan", "current_mode_update plan");
      check(opt(plan.configOptions, "reasoning")?.category === "thought_level" && opt(plan.configOptions, "reasoning")?.currentValue === "default", "reasoning option");
      const effort = await agent.request(acp.methods.agent.session.setConfigOption, { sessionId: s, configId: "reasoning", value: "high" });
      check(opt(effort.configOptions, "reasoning")?.currentValue === "high", "reasoning set");
      await fails("an unknown effort", -32602, agent.request(acp.methods.agent.session.setConfigOption, { sessionId: s, configId: "reasoning", value: "max" }));
      await prompt(agent, s, "CONFIG-PLAN");
      await fails("an unknown option", -32602, agent.request(acp.methods.agent.session.setConfigOption, { sessionId: s, configId: "nope", value: "x" }));
      await fails("an unknown model", -32602, agent.request(acp.methods.agent.session.setConfigOption, { sessionId: s, configId: "model", value: "gamma" }));
      await fails("an unknown session", -32002, agent.request(acp.methods.agent.session.setConfigOption, { sessionId: "nope", configId: "mode", value: "plan" }));
      // session/set_mode is told as a config_option_update too.
      await agent.request(acp.methods.agent.session.setMode, { sessionId: s, modeId: "default" });
      check(opt(of(s, "config_option_update").at(-1)?.configOptions, "mode")?.currentValue === "default", "set_mode told as config_option_update");
    });
  },

  // An MCP server's questions (the editor's server, FastMCP's
  // ctx.elicit / ctx.elicit_url): form mode accepted with content, URL
  // mode declined; both reach the tool's result.
  async elicit() {
    allowTools = true;
    clientCapabilities = { ...clientCapabilities, elicitation: { form: {}, url: {} } };
    const [python, server] = [process.env.SCV_TEST_PYTHON, process.env.SCV_TEST_MCP_SERVER];
    await withAgent(async (agent) => {
      const { sessionId: s } = await agent.request(acp.methods.agent.session.new, {
        cwd: workspace,
        mcpServers: [{ name: "fake", command: python, args: [server, "stdio"], env: [] }],
      });
      // The server starts in the background: ask until its tools are offered.
      let called = false;
      for (let i = 0; i < 40 && !called; i++) {
        updates.length = 0;
        await prompt(agent, s, "ASK-FORM");
        called = of(s, "tool_call").length > 0;
        if (!called) await new Promise((r) => setTimeout(r, 200));
      }
      check(called, "the server's tool was called");
      const form = elicitations.find((e) => e.mode === "form");
      check(form?.sessionId === s, `form asked in the session ${JSON.stringify(form)}`);
      check(form?.requestedSchema?.properties?.name?.type === "string", "the form's schema");
      check(text(s).includes('form: accept {"age": 36, "name": "Ada"}'), `the tool's result "${text(s)}"`);
      updates.length = 0;
      await prompt(agent, s, "ASK-URL");
      const url = elicitations.find((e) => e.mode === "url");
      check(url?.url === "https://example.com/connect?id=7" && typeof url?.elicitationId === "string", `url asked ${JSON.stringify(url)}`);
      check(text(s).includes("url: decline"), `the url tool's result "${text(s)}"`);
    });
  },

  // The workspace trust prompt as a form: accepted, the workspace is
  // trusted and that is said in the conversation.
  async trust() {
    clientCapabilities = { ...clientCapabilities, elicitation: { form: {} } };
    await withAgent(async (agent) => {
      const said = next((p) => p.update.sessionUpdate === "agent_message_chunk" && p.update.content.text.includes("run and apply from the next turn"));
      const s = await open(agent);
      await said;
      const asked = elicitations.find((e) => e.requestedSchema?.properties?.trust);
      check(asked?.sessionId === s && asked?.mode === "form", `trust asked ${JSON.stringify(asked)}`);
      check(asked?.message.includes(".mcp.json (untrusted"), `the message names the file: ${asked?.message}`);
      check(text(s).includes(".mcp.json run and apply from the next turn"), `said "${text(s)}"`);
    });
  },

  // $/cancel_request for a running prompt: its turn stops, it answers
  // `cancelled`, and the session takes the next prompt.
  async cancelRequest() {
    await withAgent(async (agent) => {
      const s = await open(agent);
      const abort = new AbortController();
      const streaming = next((p) => p.sessionId === s && p.update.sessionUpdate === "agent_message_chunk");
      const running = prompt(agent, s, "CANCEL-ME", { cancellationSignal: abort.signal });
      await streaming;
      await fails(
        "a model switch while the turn runs",
        -32600,
        agent.request(acp.methods.agent.session.setConfigOption, { sessionId: s, configId: "model", value: "other-model" }),
      );
      abort.abort();
      const answered = await running;
      check(answered.stopReason === "cancelled", `the prompt: ${answered.stopReason}`);
      const after = await prompt(agent, s, "AFTER");
      check(after.stopReason === "end_turn", `the next prompt: ${after.stopReason}`);
    });
  },

  // Images in prompts: an image block (IMAGE_B64, a PNG the Rust side
  // knows byte for byte) reaches the provider with the text; refusals are
  // -32602 in words, and the connection carries on.
  async images() {
    await withAgent(async (agent, init) => {
      check(init.agentCapabilities?.promptCapabilities?.image === true, "promptCapabilities.image");
      const sessionId = await open(agent);
      const png = process.env.IMAGE_B64;
      const sent = await agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: [
          { type: "text", text: "IMAGE-PROMPT what is this?" },
          { type: "image", mimeType: "image/png", data: png },
        ],
      });
      check(sent.stopReason === "end_turn", `the image prompt: ${sent.stopReason}`);
      const image = (mimeType, data) =>
        agent.request(acp.methods.agent.session.prompt, {
          sessionId,
          prompt: [{ type: "text", text: "look" }, { type: "image", mimeType, data }],
        });
      await fails("a PNG said to be a JPEG", -32602, image("image/jpeg", png));
      await fails("text said to be an image", -32602, image("image/png", Buffer.from("not an image").toString("base64")));
      await fails("nine images", -32602, agent.request(acp.methods.agent.session.prompt, {
        sessionId,
        prompt: Array.from({ length: 9 }, () => ({ type: "image", mimeType: "image/png", data: png })),
      }));
      // A model known to take text only refuses them in words.
      await agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "model", value: "deepseek-chat" });
      try {
        await image("image/png", png);
        check(false, "a text-only model: no error");
      } catch (err) {
        check(err.code === -32602 && /does not take images/.test(err.message), `a text-only model: ${err.code} ${err.message}`);
      }
      const after = await prompt(agent, sessionId, "IMAGE-AFTER");
      check(after.stopReason === "end_turn", `the next prompt: ${after.stopReason}`);
    });
  },

  // additionalDirectories (EXTRA_DIR, a directory outside the
  // workspace): hostile ones refused -32602 on session/new and
  // session/resume; a session with it reads a file there (the mock's
  // read_file call; the Rust side checks the tool result).
  async dirs() {
    const extra = process.env.EXTRA_DIR;
    await withAgent(async (agent, init) => {
      check(typeof init.agentCapabilities?.sessionCapabilities?.additionalDirectories === "object", "sessionCapabilities.additionalDirectories");
      const newWith = (dirs) => agent.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [], additionalDirectories: dirs });
      await fails("a relative directory", -32602, newWith(["relative/dir"]));
      await fails("a missing directory", -32602, newWith([`${extra}/missing`]));
      await fails("the whole file system", -32602, newWith([process.env.ROOT_LINK]));
      await fails("SCV_HOME itself", -32602, newWith([process.env.SCV_HOME]));
      const sessionId = (await newWith([extra])).sessionId;
      const answered = await prompt(agent, sessionId, "DIRS-READ");
      check(answered.stopReason === "end_turn", `the prompt: ${answered.stopReason}`);
      await fails(
        "a resume with a relative directory",
        -32602,
        agent.request(acp.methods.agent.session.resume, { sessionId: "00000000-0000-0000-0000-000000000000", cwd: workspace, additionalDirectories: ["rel"] }),
      );
    });
  },
};

const run = scenarios[scenario];
if (!run) {
  check(false, `unknown scenario ${scenario}`);
} else {
  await run();
}
process.exit(failed ? 1 : 0);
