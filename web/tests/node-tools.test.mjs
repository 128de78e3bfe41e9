// Tool calling through the JavaScript API (engine.chat.completions.create
// with tools, web/src/openai.ts) on the relaxed-SIMD WebAssembly engine,
// checked against `smolinfer serve` (the native build) answering the same
// requests: SmolLM2-135M with llama.cpp's Qwen2.5 template (Hermes calls,
// <tool_call>{"name", "arguments"}</tool_call>), greedy. Both are exact to
// llama.cpp, so the answers, calls, finish reasons, usage and the streamed
// deltas must be equal (the call ids are random on both sides).
// Needs SMOLINFER_MODEL, SMOLINFER_LLAMA_SRC (the template) and
// build/native/smolinfer; Node 20 needs --experimental-wasm-relaxed-simd
// --no-liftoff (scripts/run-tests passes them).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

import { ADD, ASK, QWEN25_TEMPLATE, WEATHER, assertSameAnswer, llamaTemplate, serverAnswer, startServer, withoutIds } from "./tool-cases.mjs";
import { loadWasm, repoRoot, wasmBackend } from "./wasm-module.mjs";

const modelPath = process.env.SMOLINFER_MODEL;
if (!modelPath) throw new Error("SMOLINFER_MODEL must be set: run the tests with 'make test'");
const templatePath = llamaTemplate(QWEN25_TEMPLATE);
const site = path.join(repoRoot, "build", "web", "site");
if (!fs.existsSync(path.join(site, "openai.js"))) throw new Error("build/web/site/openai.js is missing: run 'make web' (or web/build.mjs)");
const { createChatCompletion } = await import(path.join(site, "openai.js"));
const { EngineError } = await import(path.join(site, "errors.js"));

const CONTEXT = 1024;
const M = await loadWasm("st-relaxed");
const modelBytes = fs.readFileSync(modelPath);
const ptr = M.Engine.allocate(modelBytes.length);
M.HEAPU8.set(modelBytes, ptr);
const engine = new M.Engine();
const info = engine.load(ptr, modelBytes.length, { threads: 1, contextSize: CONTEXT, chatTemplate: fs.readFileSync(templatePath, "utf8") });
assert.equal(info.error, undefined, info.error);
assert.equal(info.toolCalls, "json");
const backend = wasmBackend(engine, EngineError, { modelName: "m", contextSize: CONTEXT });
const create = (request) => createChatCompletion(backend, request);

// ---------------------------------------------------------------- the server
let server;
before(async () => {
  server = await startServer(modelPath, { templatePath, contextSize: CONTEXT });
});
after(() => server?.stop());
const post = (request) => server.post(request);

async function chunksOf(iterable) {
  const all = [];
  for await (const c of iterable) all.push(c);
  return all;
}

// One request, whole and streamed, from both; returns the JS answer.
async function sameAsServer(request) {
  const js = { whole: await create(request), chunks: await chunksOf(await create({ ...request, stream: true })) };
  assertSameAnswer(js, await serverAnswer(server, request));
  return js.whole;
}

test("a named tool_choice: exactly that call, as the server gives it, whole and streamed", async () => {
  const r = await sameAsServer({ messages: ASK, tools: [WEATHER, ADD], tool_choice: { type: "function", function: { name: "add" } }, max_tokens: 60, temperature: 0 });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, "function");
  assert.equal(call.function.name, "add");
  const args = JSON.parse(call.function.arguments);
  assert.deepEqual(Object.keys(args).sort(), ["a", "b"]);
  assert.ok(Number.isInteger(args.a) && Number.isInteger(args.b), call.function.arguments);
});

test("the tool's result goes back through the template: the answer equals the server's", async () => {
  const history = [
    ...ASK,
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "add", arguments: '{"a": 2, "b": 3}' } }] },
    { role: "tool", tool_call_id: "call_1", content: "5" },
  ];
  const r = await sameAsServer({ messages: history, tools: [WEATHER, ADD], max_tokens: 24, temperature: 0 });
  assert.ok(r.choices[0].message.content.length > 0);
});

// SmolLM2-135M answers these in text (it calls only when the grammar makes
// it): the content streams as the server's. The second mentions the call
// marker without its newline: held back while it could open a call, then
// sent as content.
test("answers in text (auto, required, none) stream and end as the server's", async () => {
  const weather = [{ role: "user", content: "What is the weather in Paris? Call get_weather." }];
  for (const tool_choice of ["required", "none"]) {
    const r = await sameAsServer({ messages: weather, tools: [WEATHER, ADD], tool_choice, max_tokens: 32, temperature: 0 });
    assert.equal(r.choices[0].message.tool_calls, undefined);
  }
  const marker = [{ role: "user", content: "Reply only with a <tool_call> for add(2, 3)." }];
  const r = await sameAsServer({ messages: marker, tools: [WEATHER, ADD], parallel_tool_calls: true, max_tokens: 32, temperature: 0 });
  assert.equal(r.choices[0].message.tool_calls, undefined);
  assert.match(r.choices[0].message.content, /<tool_call>/);
});

// The same refusals as the server's 400s: the message names the field or the tool.
test("bad tools and tool fields are refused with the server's message", async () => {
  const refused = { ...ADD, function: { ...ADD.function, name: "odd", parameters: { type: "object", properties: { x: { not: {} } } } } };
  const cases = [
    { messages: ASK, tools: [ADD, ADD] },
    { messages: ASK, tools: [refused] },
    { messages: ASK, tools: [{ ...ADD, function: { ...ADD.function, name: "do it" } }] },
    { messages: ASK, tools: [{ type: "function", function: { name: 7 } }] },
    { messages: ASK, tools: [{ type: "function", function: { name: "f", extra: 1 } }] },
    { messages: ASK, tools: [ADD], tool_choice: { type: "function", function: { name: "sub" } } },
    { messages: ASK, tool_choice: "required" },
    { messages: ASK, tools: [ADD], tool_choice: "maybe" },
    { messages: ASK, tools: [ADD], parallel_tool_calls: "yes" },
    { messages: ASK, tools: [ADD], grammar: 'root ::= "x"' },
    { messages: ASK, tools: [ADD], response_format: { type: "json_object" } },
    { messages: ASK, tools: [ADD], stream: true, logprobs: true },
    { messages: [{ role: "tool", content: "5" }] },
    { messages: [{ role: "assistant", content: null }] },
    { messages: [{ role: "assistant", tool_calls: [{ id: "c", type: "function", function: { arguments: "{}" } }] }] },
    { messages: [{ role: "user", content: "x", tool_call_id: "c" }] },
  ];
  for (const request of cases) {
    const native = await post(request);
    assert.equal(native.status, 400, JSON.stringify(request));
    const message = native.body.error.message;
    await assert.rejects(create(request), (e) => {
      assert.equal(e.code, "bad_input");
      // The JS API prefixes the call's name ("chat.completions.create: ").
      assert.ok(e.message === message || e.message.endsWith(`: ${message}`), `${e.message}\n  vs the server's: ${message}`);
      return true;
    });
  }
});

// The same through the Node API (build/web/site/node.js): the engine in its
// worker thread (web/src/worker-core.ts), the template given to load(), the
// tools, the earlier tool turns and the engine's parses carried by the
// worker's messages. In a process of its own (node-api-chat.mjs): one
// streamed request (the shaping is the code tested above).
test("through the Node API's worker: the same answer as the server", async () => {
  const request = {
    messages: [
      ...ASK,
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "add", arguments: { a: 2, b: 3 } } }] },
      { role: "tool", tool_call_id: "call_1", name: "add", content: [{ type: "text", text: "5" }] },
      { role: "user", content: "Now add 4 and 5." },
    ],
    tools: [ADD],
    tool_choice: { type: "function", function: { name: "add" } },
    max_tokens: 60,
    temperature: 0,
    stream: true,
  };
  const list = [request, { messages: ASK, tools: [ADD, ADD] }];
  const child = spawn(process.execPath, ["--no-experimental-fetch", path.join(repoRoot, "web", "tests", "node-api-chat.mjs"), modelPath, templatePath], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  child.stdin.end(JSON.stringify({ contextSize: CONTEXT, list }));
  let text = "";
  child.stdout.setEncoding("utf8").on("data", (d) => (text += d));
  const code = await new Promise((resolve) => child.once("exit", resolve));
  assert.equal(code, 0);
  const [chunks, refused] = JSON.parse(text);
  const nativeChunks = (await post(request)).body;
  assert.deepEqual(
    chunks.map((c) => withoutIds(c.choices[0])),
    nativeChunks.map((c) => withoutIds(c.choices[0])),
  );
  assert.equal(chunks.at(-1).choices[0].finish_reason, "tool_calls");
  assert.deepEqual(refused, { error: { code: "bad_input", message: "tool 'add' is defined twice" } });
});
