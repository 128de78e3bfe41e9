// The single-threaded WebAssembly engine under Node: the same API the worker
// uses, checked against llama.cpp's golden outputs and for clear errors.
// The relaxed-SIMD build, as Chromium and Firefox run it (bit-exact and three
// times the exact plain SIMD128 build's speed; that one's kernels are
// checked by the wasm kernel suites and its whole engine in the browser
// tests). Node 20 needs --experimental-wasm-relaxed-simd --no-liftoff
// (scripts/run-tests passes them; see wasm-gtest.mjs for why).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { loadWasm, repoRoot, wasmBackend } from "./wasm-module.mjs";

const modelPath = process.env.SMOLINFER_MODEL;
if (!modelPath) throw new Error("SMOLINFER_MODEL is not set: run the tests with 'make test', which fetches the model");
const golden = (name) => JSON.parse(fs.readFileSync(path.join(repoRoot, "tests", "golden", name), "utf8"));

const BUILD = "st-relaxed";
const M = await loadWasm(BUILD);
const modelBytes = fs.readFileSync(modelPath);

function copyIn(bytes) {
  const ptr = M.Engine.allocate(bytes.length);
  assert.ok(ptr > 0, "allocation failed");
  M.HEAPU8.set(bytes, ptr);
  return ptr;
}

const engine = new M.Engine();
const info = engine.load(copyIn(modelBytes), modelBytes.length, { threads: 1, contextSize: 1024 });

test("the model loads and describes itself", () => {
  assert.equal(info.error, undefined, info.error);
  assert.equal(info.architecture, "llama");
  assert.equal(info.vocabSize, 49152);
  assert.equal(info.layers, 30);
  assert.equal(info.contextSize, 1024);
  assert.equal(info.flashAttention, true); // llama.cpp's default on the CPU
  assert.equal(info.fileBytes, modelBytes.length);
  assert.equal(info.parts, 1);
  assert.equal(info.quantization, "Q4_1");
  assert.equal(info.fileType, "Q4_1");
  assert.equal(info.dominantType, "Q4_1");
  assert.equal(Math.round(info.parameters / 1e4), 13452); // llama.cpp: "model params = 134.52 M"
});

// The parts of `smolinfer split` (llama-gguf-split's bytes, test_split_model),
// each in a buffer of its own as the worker hands them over.
test("a split model's parts load as one model and compute the same tokens", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "smolinfer-split-"));
  try {
    const cli = path.join(repoRoot, "build", "native", "smolinfer");
    execFileSync(cli, ["split", "--split-max-tensors", "100", modelPath, path.join(dir, "m")], { stdio: "ignore" });
    const parts = [1, 2, 3].map((i) => fs.readFileSync(path.join(dir, `m-0000${i}-of-00003.gguf`)));
    const split = new M.Engine();
    const r = split.loadParts(parts.map(copyIn), parts.map((p) => p.length), { threads: 1, contextSize: 256 });
    assert.equal(r.error, undefined, r.error);
    assert.equal(r.parts, 3);
    assert.equal(r.fileBytes, parts.reduce((n, p) => n + p.length, 0));
    assert.equal(r.parameters, info.parameters);
    const greedy = (e) => {
      assert.equal(e.start(e.tokenize("The capital of France is", true, true).ids, { maxTokens: 16, temperature: 0 }).error, undefined);
      const ids = [];
      for (let n; !(n = e.next()).done; ) if (n.token >= 0) ids.push(n.token);
      return ids;
    };
    assert.deepEqual(greedy(split), greedy(engine));
    split.unload();
    // Out of order: the engine names the part.
    const wrong = split.loadParts([parts[0], parts[2], parts[1]].map(copyIn), [parts[0], parts[2], parts[1]].map((p) => p.length), { threads: 1 });
    assert.match(wrong.error, /part 2 of 3: split\.no = 2/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("SHA-256 of the model in engine memory matches the recorded digest", () => {
  const ptr = copyIn(modelBytes);
  try {
    assert.equal(M.Engine.sha256(ptr, modelBytes.length), "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53");
  } finally {
    M.Engine.release(ptr);
  }
});

test("tokenization matches llama.cpp on every golden string", () => {
  let checked = 0;
  for (const c of golden("Q4_1/tokenizer.json").cases) {
    const r = engine.tokenize(c.text, false, c.parse_special);
    assert.equal(r.error, undefined);
    assert.deepEqual(Array.from(r.ids), c.ids, JSON.stringify(c.text));
    checked++;
  }
  assert.ok(checked >= 300);
});

// By default against llama.cpp's default run (flash attention on), and with
// flashAttention "off" against its -fa off run.
function expectGoldenChats(engine, file) {
  for (const c of golden(file).cases.filter((c) => c.mode === "chat").slice(0, 3)) {
    const messages = [...(c.system ? [{ role: "system", content: c.system }] : []), { role: "user", content: c.text }];
    const prompt = engine.chatTokens(messages, true, []);
    assert.deepEqual(Array.from(prompt.ids), c.prompt_ids, c.name);
    const n = 24;
    assert.equal(engine.start(prompt.ids, { maxTokens: n, temperature: 0 }).error, undefined);
    const ids = [];
    for (;;) {
      const r = engine.next();
      assert.equal(r.error, undefined);
      if (r.done) break;
      if (r.token >= 0) ids.push(r.token);
    }
    assert.deepEqual(ids, c.ids.slice(0, n), c.name);
  }
}

test("greedy chat continuations match llama.cpp's default run token for token", () => {
  expectGoldenChats(engine, "Q4_1/flash-attn/generation.json");
});

test("with flashAttention off they match llama.cpp's -fa off run", () => {
  const off = new M.Engine();
  const r = off.load(copyIn(modelBytes), modelBytes.length, { threads: 1, contextSize: 1024, flashAttention: "off" });
  assert.equal(r.error, undefined, r.error);
  assert.equal(r.flashAttention, false);
  expectGoldenChats(off, "Q4_1/generation.json");
  off.unload();
  const bad = new M.Engine();
  assert.match(bad.load(copyIn(modelBytes), modelBytes.length, { flashAttention: "yes" }).error, /flashAttention must be/);
});

test("a second chat turn reuses the cached conversation", () => {
  const first = [{ role: "user", content: "Name a color." }];
  const p1 = engine.chatTokens(first, true, []).ids;
  engine.start(p1, { maxTokens: 8, temperature: 0 });
  let answer = "";
  let r;
  while (!(r = engine.next()).done) answer += r.text;
  const second = [...first, { role: "assistant", content: answer }, { role: "user", content: "Another one?" }];
  const stats = engine.start(engine.chatTokens(second, true, []).ids, { maxTokens: 4, temperature: 0 });
  // The first prompt's cells, not the answer's (decoded one at a time: a
  // fresh run reads them in a batch).
  assert.ok(stats.reusedTokens > 0 && stats.reusedTokens <= p1.length, `reused ${stats.reusedTokens} of ${p1.length}`);
  while (!engine.next().done);
});

test("detokenize turns ids back into text and rejects unknown ids", () => {
  const ids = engine.tokenize("Hello, world!", false, true).ids;
  assert.equal(engine.detokenize(Array.from(ids), false).text, "Hello, world!");
  assert.match(engine.detokenize([1, 999999], false).error, /outside the vocabulary/);
});

test("bad options and prompts are errors, not crashes", () => {
  const ids = engine.tokenize("Hi", false, true).ids;
  assert.match(engine.start(ids, { temperature: -1 }).error, /temperature/);
  assert.match(engine.start(new Int32Array([]), {}).error, /empty/);
  assert.match(engine.start(new Int32Array(2000).fill(100), {}).error, /context holds 1024/);
  assert.match(engine.chatTokens([{ role: "robot", content: "x" }], true, []).error, /role 'robot'/);
});

test("a file that is not GGUF is a clear error and the engine stays usable", () => {
  const junk = new Uint8Array(4096).map((_, i) => (i * 7) & 255);
  const other = new M.Engine();
  const r = other.load(copyIn(junk), junk.length, { threads: 1 });
  assert.match(r.error, /not a GGUF file/);
  assert.equal(other.loaded(), false);
  assert.match(other.tokenize("x", false, true).error, /no model is loaded/);
  assert.match(other.start(new Int32Array([1]), {}).error, /no model is loaded/);
  // A truncated copy of the real model names the tensor that does not fit.
  const half = modelBytes.subarray(0, modelBytes.length >> 1);
  const t = other.load(copyIn(half), half.length, { threads: 1 });
  assert.match(t.error, /truncated GGUF file: tensor '/);
});

test("memory that WebAssembly cannot have is refused, and the engine keeps working", () => {
  assert.equal(M.Engine.allocate(5e9), 0, "more than 32-bit addresses reach");
  assert.equal(M.Engine.allocate(2 ** 32), 0);
  assert.equal(M.Engine.allocate(4.2e9), 0, "memory cannot grow that far");
  assert.equal(M.Engine.allocate(0), 0);
  assert.equal(M.Engine.allocate(-1), 0);
  const ids = engine.tokenize("The capital of France is", true, true).ids;
  assert.equal(engine.start(ids, { maxTokens: 2, temperature: 0 }).error, undefined);
  while (!engine.next().done);
});

// A model that claims a huge training context, asked for a context whose KV
// cache size overflows 32-bit size_t: 30 layers x 745655 positions x 192
// values is 2^32 + 5504. The load must fail with an error, or the model must
// work; a cache sized from the wrapped product would write out of bounds on
// the first token (a trap). KvCache computes sizes in 64 bits.
test("a context whose KV cache size overflows 32 bits is an error, not a trap", async () => {
  const fresh = await loadWasm(BUILD); // a trap leaves a module unusable: not the shared one
  const bytes = Buffer.from(modelBytes);
  const key = Buffer.from("llama.context_length");
  const at = bytes.indexOf(key) + key.length;
  assert.equal(bytes.readUInt32LE(at), 4, "context_length is a uint32");
  bytes.writeUInt32LE(1 << 24, at + 4);
  const ptr = fresh.Engine.allocate(bytes.length);
  fresh.HEAPU8.set(bytes, ptr);
  const e = new fresh.Engine();
  const r = e.load(ptr, bytes.length, { threads: 1, contextSize: 745655 });
  if (r.error !== undefined) return; // refused: fine
  assert.equal(e.start(e.tokenize("Hello", true, true).ids, { maxTokens: 2 }).error, undefined);
  while (!e.next().done);
});

// ---------------------------------------------------------------- OpenAI shape
// engine.chat.completions.create / engine.completions.create (web/src/openai.ts,
// compiled by web/build.mjs into build/web/site) on this WebAssembly engine,
// driven the way the worker drives it (web/src/worker.ts).

const site = path.join(repoRoot, "build", "web", "site");
if (!fs.existsSync(path.join(site, "openai.js"))) throw new Error("build/web/site/openai.js is missing: run 'make web' (or web/build.mjs)");
const { createChatCompletion, createCompletion } = await import(path.join(site, "openai.js"));
const { EngineError } = await import(path.join(site, "errors.js"));

const backend = wasmBackend(engine, EngineError, { modelName: "SmolLM2-135M-Instruct", contextSize: 1024 });
const chatCreate = (request, options) => createChatCompletion(backend, request, options);
const completionCreate = (request, options) => createCompletion(backend, request, options);

// What chat() streams for these messages (greedy): the worker's loop.
function rawGreedy(ids, maxTokens, extra = {}) {
  assert.equal(engine.start(ids, { maxTokens, temperature: 0, ...extra }).error, undefined);
  const out = { ids: [], text: "" };
  for (let r; !(r = engine.next()).done; ) {
    if (r.token >= 0) out.ids.push(r.token);
    out.text += r.text;
  }
  return out;
}

const hello = [{ role: "user", content: "What is the capital of France?" }];
const sortedKeys = (o) => Object.keys(o).sort();
async function chunksOf(iterable) {
  const all = [];
  for await (const c of iterable) all.push(c);
  return all;
}

test("chat.completions.create: a completion of OpenAI's shape, greedy text as chat()'s, usage", async () => {
  const promptIds = engine.chatTokens(hello, true, []).ids;
  const raw = rawGreedy(promptIds, 12);
  const c = await chatCreate({ model: "smol", messages: hello, max_tokens: 12, temperature: 0 });
  assert.deepEqual(sortedKeys(c), ["choices", "created", "id", "model", "object", "usage"]);
  assert.match(c.id, /^chatcmpl-[0-9a-f]{24}$/);
  assert.equal(c.object, "chat.completion");
  assert.ok(Number.isInteger(c.created) && Math.abs(c.created - Date.now() / 1000) < 600);
  assert.equal(c.model, "smol");
  assert.equal(c.choices.length, 1);
  assert.deepEqual(sortedKeys(c.choices[0]), ["finish_reason", "index", "logprobs", "message"]);
  assert.deepEqual(c.choices[0].message, { role: "assistant", content: raw.text, refusal: null });
  assert.equal(c.choices[0].logprobs, null);
  assert.equal(c.choices[0].finish_reason, "length");
  assert.deepEqual(c.usage, { prompt_tokens: promptIds.length, completion_tokens: 12, total_tokens: promptIds.length + 12 });
  // max_completion_tokens is the same limit; without a model name the loaded model's is used.
  const d = await chatCreate({ messages: hello, max_completion_tokens: 12, temperature: 0 });
  assert.equal(d.choices[0].message.content, raw.text);
  assert.equal(d.model, "SmolLM2-135M-Instruct");
});

test("chat.completions.create: an answer that ends by itself finishes with 'stop'", async () => {
  const c = await chatCreate({ messages: [{ role: "user", content: "Reply with one word: yes or no?" }], max_tokens: 60, temperature: 0 });
  assert.equal(c.choices[0].finish_reason, "stop", JSON.stringify(c.choices[0].message.content));
  assert.ok(c.usage.completion_tokens < 60);
});

// SmolLM2's own template shows no tool calls: llama-server neither describes
// the tools nor reads calls (tests/server/test_tools.py checks the server
// does the same), so the answer is the one without tools, as text.
test("chat.completions.create with tools on a template without calls: the answer without tools", async () => {
  const add = { type: "function", function: { name: "add", parameters: { type: "object", properties: { a: { type: "integer" } } } } };
  const plain = await chatCreate({ messages: hello, max_tokens: 12, temperature: 0 });
  const withTools = await chatCreate({ messages: hello, tools: [add], tool_choice: "required", max_tokens: 12, temperature: 0 });
  assert.deepEqual(withTools.choices, plain.choices);
  assert.deepEqual(withTools.usage, plain.usage);
  const chunks = await chunksOf(await chatCreate({ messages: hello, tools: [add], max_tokens: 12, temperature: 0, stream: true }));
  assert.equal(chunks.map((c) => c.choices[0].delta.content ?? "").join(""), plain.choices[0].message.content);
  assert.ok(chunks.every((c) => !("tool_calls" in c.choices[0].delta)));
});

test("chat.completions.create with stream: role chunk, content deltas, finish chunk, usage chunk", async () => {
  const whole = await chatCreate({ messages: hello, max_tokens: 12, temperature: 0 });
  const chunks = await chunksOf(await chatCreate({ messages: hello, max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true } }));
  assert.ok(chunks.length >= 4);
  const ids = new Set(chunks.map((c) => c.id));
  assert.equal(ids.size, 1);
  for (const c of chunks) {
    assert.deepEqual(sortedKeys(c), ["choices", "created", "id", "model", "object", "usage"]);
    assert.equal(c.object, "chat.completion.chunk");
  }
  assert.deepEqual(chunks[0].choices[0].delta, { role: "assistant", content: "" });
  const finish = chunks[chunks.length - 2];
  assert.equal(finish.choices[0].finish_reason, "length");
  assert.deepEqual(finish.choices[0].delta, {});
  let text = "";
  for (const c of chunks.slice(1, -2)) {
    assert.deepEqual(sortedKeys(c.choices[0]), ["delta", "finish_reason", "index", "logprobs"]);
    assert.deepEqual(Object.keys(c.choices[0].delta), ["content"]);
    assert.equal(c.choices[0].finish_reason, null);
    assert.equal(c.usage, null);
    text += c.choices[0].delta.content;
  }
  assert.equal(text, whole.choices[0].message.content);
  const last = chunks[chunks.length - 1];
  assert.deepEqual(last.choices, []);
  assert.deepEqual(last.usage, whole.usage);
  // Without include_usage: no usage key at all, and no usage chunk.
  const plain = await chunksOf(await chatCreate({ messages: hello, max_tokens: 3, temperature: 0, stream: true }));
  assert.ok(plain.every((c) => !("usage" in c) && c.choices.length === 1));
  assert.equal(plain[plain.length - 1].choices[0].finish_reason, "length");
});

test("stop strings end the answer before them and never appear, also across chunks", async () => {
  const prompt = "Count: one, two, three,";
  const full = rawGreedy(engine.tokenize(prompt, true, true).ids, 16).text;
  assert.ok(full.startsWith(" four, five, six, seven"), full);
  for (const [stop, want] of [
    [" six", " four, five,"],
    ["ve, s", " four, fi"], // spans the tokens " five", ",", " six"
    [["zzz", "e, s", "our"], " f"], // the first one completed wins
  ]) {
    const c = await completionCreate({ prompt, max_tokens: 16, temperature: 0, stop });
    assert.equal(c.choices[0].text, want, JSON.stringify(stop));
    assert.equal(c.choices[0].finish_reason, "stop");
    const chunks = await chunksOf(await completionCreate({ prompt, max_tokens: 16, temperature: 0, stop, stream: true }));
    let streamed = "";
    for (const ch of chunks) {
      streamed += ch.choices[0].text;
      assert.ok(want.startsWith(streamed), `streamed ${JSON.stringify(streamed)} past ${JSON.stringify(want)}`);
    }
    assert.equal(streamed, want);
    assert.equal(chunks[chunks.length - 1].choices[0].finish_reason, "stop");
  }
  // In a chat too.
  const c = await chatCreate({ messages: hello, max_tokens: 12, temperature: 0, stop: "Paris" });
  assert.ok(!c.choices[0].message.content.includes("Paris"), c.choices[0].message.content);
});

test("logprobs: one entry per token, the chosen token first in greedy, alternatives sorted", async () => {
  const c = await chatCreate({ messages: hello, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 3 });
  const entries = c.choices[0].logprobs.content;
  assert.equal(entries.length, 10);
  assert.equal(entries.map((e) => e.token).join(""), c.choices[0].message.content);
  for (const e of entries) {
    assert.deepEqual(sortedKeys(e), ["bytes", "logprob", "token", "top_logprobs"]);
    assert.deepEqual(e.bytes, Array.from(Buffer.from(e.token, "utf8")));
    assert.ok(e.logprob <= 0);
    assert.equal(e.top_logprobs.length, 3);
    assert.equal(e.top_logprobs[0].token, e.token); // greedy takes the most likely
    assert.equal(e.top_logprobs[0].logprob, e.logprob);
    for (let k = 1; k < 3; k++) assert.ok(e.top_logprobs[k].logprob <= e.top_logprobs[k - 1].logprob);
    const mass = e.top_logprobs.reduce((s, t) => s + Math.exp(t.logprob), 0);
    assert.ok(mass <= 1 + 1e-5 && mass > 0.05, `top-3 mass ${mass}`);
  }
  // Sampled with top_k 3: the distribution drawn from has 3 tokens at most and sums to 1.
  const s = await chatCreate({ messages: hello, max_tokens: 6, temperature: 1, top_k: 3, seed: 5, logprobs: true, top_logprobs: 20 });
  for (const e of s.choices[0].logprobs.content) {
    assert.ok(e.top_logprobs.length >= 1 && e.top_logprobs.length <= 3);
    assert.ok(e.top_logprobs.some((t) => t.token === e.token && t.logprob === e.logprob));
    const mass = e.top_logprobs.reduce((sum, t) => sum + Math.exp(t.logprob), 0);
    assert.ok(Math.abs(mass - 1) < 1e-4, `mass ${mass}`);
  }
  // Streaming: the chunks' entries add up to the same list.
  const chunks = await chunksOf(await chatCreate({ messages: hello, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 3, stream: true }));
  const streamed = chunks.flatMap((ch) => ch.choices[0]?.logprobs?.content ?? []);
  assert.deepEqual(streamed, entries);
  // Legacy completions: tokens, token_logprobs, top_logprobs, text_offset.
  const l = await completionCreate({ prompt: "Count: one, two, three,", max_tokens: 4, temperature: 0, logprobs: 2 });
  const lp = l.choices[0].logprobs;
  assert.deepEqual(sortedKeys(lp), ["text_offset", "token_logprobs", "tokens", "top_logprobs"]);
  assert.equal(lp.tokens.join(""), l.choices[0].text);
  assert.deepEqual(lp.text_offset, [0, ...lp.tokens.slice(0, -1).map((_, i) => lp.tokens.slice(0, i + 1).join("").length)]);
  assert.ok(lp.top_logprobs.every((m, i) => Object.keys(m).length <= 2 && m[lp.tokens[i]] === lp.token_logprobs[i]));
});

test("logit_bias bans a token; penalties are accepted in OpenAI's ranges", async () => {
  const prompt = "Count: one, two, three,";
  const first = rawGreedy(engine.tokenize(prompt, true, true).ids, 1).ids[0];
  const c = await completionCreate({ prompt, max_tokens: 1, temperature: 0, logit_bias: { [first]: -100 }, logprobs: 0 });
  assert.notEqual(c.choices[0].logprobs.tokens[0], engine.detokenize([first], false).text);
  const p = await completionCreate({ prompt, max_tokens: 8, temperature: 0, frequency_penalty: 2, presence_penalty: 2 });
  assert.ok(!p.choices[0].text.startsWith(" four, five, six"), p.choices[0].text); // the commas are penalized
});

test("bad requests are bad_input errors naming the field", async () => {
  const cases = [
    [{ messages: hello, temprature: 0.5 }, "unknown field 'temprature'"],
    [{ messages: hello, temperature: 3 }, "'temperature' must be a number in [0, 2]"],
    [{ messages: hello, temperature: "0" }, "'temperature' must be a number in [0, 2]"],
    [{ messages: hello, n: 2 }, "'n' must be 1"],
    [{ messages: hello, top_logprobs: 2 }, "'top_logprobs' must be left out unless logprobs is true"],
    [{ messages: hello, logprobs: true, top_logprobs: 21 }, "'top_logprobs' must be an integer in [0, 20]"],
    [{ messages: hello, stop: ["a", "b", "c", "d", "e"] }, "'stop' must be"],
    [{ messages: hello, stop: [""] }, "'stop' must be"],
    [{ messages: hello, logit_bias: { x: 1 } }, "'logit_bias.x' must be keyed by a token id"],
    [{ messages: hello, logit_bias: { 5: 101 } }, "'logit_bias.5' must be a number in [-100, 100]"],
    [{ messages: hello, frequency_penalty: -2.5 }, "'frequency_penalty' must be a number in [-2, 2]"],
    [{ messages: hello, response_format: { type: "xml" } }, "'response_format.type' must be"],
    [{ messages: hello, response_format: { type: "json_schema", json_schema: { name: "x" } } }, "'response_format.json_schema.schema' must be a JSON Schema object"],
    [{ messages: hello, response_format: { type: "json_object" }, grammar: "root ::= \"a\"" }, "'grammar' must be left out"],
    [{ messages: hello, stream_options: { include_usage: true } }, "'stream_options' must be left out unless stream is true"],
    [{ messages: [{ role: "robot", content: "x" }] }, "'messages[0].role' must be \"system\", \"user\", \"assistant\" or \"tool\""],
    [{ messages: [{ role: "tool", content: "x" }] }, "'messages[0].tool_call_id' must be the id of the call"],
    [{ messages: [{ role: "user", content: [{ type: "image_url", image_url: {} }] }] }, "'messages[0].content[0]' must be"],
    [{ messages: [] }, "'messages' must be a non-empty array"],
    [{ messages: hello, max_tokens: -1 }, "'max_tokens' must be an integer"],
    [{ messages: hello, seed: 1.5 }, "'seed' must be an integer >= 0"],
  ];
  for (const [request, message] of cases) {
    await assert.rejects(chatCreate(request), (e) => {
      assert.ok(e instanceof EngineError, String(e));
      assert.equal(e.code, "bad_input");
      assert.ok(e.message.startsWith("chat.completions.create: "), e.message);
      assert.ok(e.message.includes(message), `${e.message} lacks ${message}`);
      return true;
    });
  }
  await assert.rejects(completionCreate({ prompt: "x", echo: true }), /completions.create: unknown field 'echo'/);
  await assert.rejects(completionCreate({ prompt: 5 }), /'prompt' must be a string/);
  // The engine's own checks arrive as bad_input too: a token id outside the vocabulary.
  await assert.rejects(chatCreate({ messages: hello, logit_bias: { 49152: 5 } }), (e) => e.code === "bad_input" && /logit bias token id 49152/.test(e.message));
});

// The grammar and the schema constrain the output in the engine itself.
test("grammar and response_format constrain the output", async () => {
  const yes = await chatCreate({ messages: hello, grammar: 'root ::= "yes" | "no"', temperature: 0, max_tokens: 8 });
  assert.ok(["yes", "no"].includes(yes.choices[0].message.content), yes.choices[0].message.content);
  assert.equal(yes.choices[0].finish_reason, "stop");
  const schema = { type: "object", properties: { city: { type: "string", maxLength: 20 }, population: { type: "integer" } }, required: ["city", "population"], additionalProperties: false };
  const c = await chatCreate({
    messages: [{ role: "user", content: "Name a city and its population as JSON." }],
    response_format: { type: "json_schema", json_schema: { name: "city", schema } },
    temperature: 0,
    max_tokens: 64,
  });
  const value = JSON.parse(c.choices[0].message.content);
  assert.deepEqual(Object.keys(value).sort(), ["city", "population"]);
  assert.equal(typeof value.city, "string");
  assert.ok(Number.isInteger(value.population));
  // Any object: no text before it, and an object once complete (this model
  // may keep adding keys until max_tokens).
  const o = await chatCreate({ messages: hello, response_format: { type: "json_object" }, temperature: 0, max_tokens: 48 });
  const content = o.choices[0].message.content;
  assert.ok(content.startsWith("{"), content);
  if (o.choices[0].finish_reason === "stop") {
    const parsed = JSON.parse(content);
    assert.ok(parsed !== null && typeof parsed === "object" && !Array.isArray(parsed));
  } else {
    assert.equal(o.choices[0].finish_reason, "length");
  }
  // Engine-side errors arrive as bad_input naming the problem.
  await assert.rejects(chatCreate({ messages: hello, grammar: "root ::= [a-" }), (e) => e.code === "bad_input" && /grammar: line 1/.test(e.message));
  await assert.rejects(
    chatCreate({ messages: hello, response_format: { type: "json_schema", json_schema: { name: "a", schema: { not: {} } } } }),
    (e) => e.code === "bad_input" && /unsupported keyword 'not'/.test(e.message),
  );
  // type "text" is plain output.
  const t = await chatCreate({ messages: hello, max_tokens: 2, temperature: 0, response_format: { type: "text" } });
  assert.equal(t.usage.completion_tokens, 2);
});

test("a signal aborts a request, before it starts and mid-stream", async () => {
  await assert.rejects(chatCreate({ messages: hello, max_tokens: 4 }, { signal: AbortSignal.abort() }), (e) => e.code === "aborted");
  const controller = new AbortController();
  const stream = await chatCreate({ messages: hello, max_tokens: 40, temperature: 0, stream: true }, { signal: controller.signal });
  let seen = 0;
  await assert.rejects(
    (async () => {
      for await (const _ of stream) if (++seen === 3) controller.abort();
    })(),
    (e) => e.code === "aborted",
  );
  assert.equal(seen, 3);
  // Leaving the loop early stops the generation too; the engine is free again.
  for await (const _ of await chatCreate({ messages: hello, max_tokens: 40, temperature: 0, stream: true })) break;
  const after = await chatCreate({ messages: hello, max_tokens: 2, temperature: 0 });
  assert.equal(after.usage.completion_tokens, 2);
});

// ---------------------------------------------------------------- embeddings
// engine.embeddings.create (web/src/openai-embeddings.ts) on this engine,
// against the native CLI's vectors (smolinfer embed; the C++ golden suite
// holds those to llama.cpp's): the same numbers, bit for bit.
const { createEmbeddings, base64Floats } = await import(path.join(site, "openai-embeddings.js"));
const embedder = {
  model: () => ({ name: "SmolLM2-135M-Instruct", embeddingSize: info.embeddingSize }),
  async embed(inputs) {
    const out = { vectors: [], promptTokens: 0 };
    for (const [i, input] of inputs.entries()) {
      const r = engine.embed(input, true);
      if (r.error) throw new EngineError("bad_input", inputs.length > 1 ? `input[${i}]: ${r.error}` : r.error);
      out.vectors.push(r.vector);
      out.promptTokens += r.tokens;
    }
    return out;
  },
};
const cliEmbedding = (text) =>
  JSON.parse(execFileSync(path.join(repoRoot, "build", "native", "smolinfer"), ["embed", "-m", modelPath, "-c", "1024", "-p", text], { encoding: "utf8" }));

test("embeddings.create: OpenAI's shape, the native CLI's vectors bit for bit, base64 and dimensions", async () => {
  assert.equal(info.pooling, "none");
  assert.equal(info.embeddingSize, 576);
  assert.equal(info.encoder, false);
  const texts = ["The cat sat on the mat.", "Ein Hund läuft über die Straße, schnell."];
  const r = await createEmbeddings(embedder, { input: texts, model: "m" });
  assert.deepEqual(sortedKeys(r), ["data", "model", "object", "usage"]);
  assert.equal(r.object, "list");
  assert.equal(r.model, "m");
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.total_tokens === r.usage.prompt_tokens);
  for (const [i, text] of texts.entries()) {
    assert.deepEqual(r.data[i], { object: "embedding", index: i, embedding: r.data[i].embedding });
    assert.deepEqual(Float32Array.from(r.data[i].embedding), Float32Array.from(cliEmbedding(text)), `input ${i}`);
  }
  const b = await createEmbeddings(embedder, { input: texts[0], encoding_format: "base64" });
  assert.equal(b.data[0].embedding, base64Floats(Float32Array.from(cliEmbedding(texts[0]))));
  const short = (await createEmbeddings(embedder, { input: texts[0], dimensions: 32 })).data[0].embedding;
  assert.equal(short.length, 32);
  assert.ok(Math.abs(short.reduce((s, x) => s + x * x, 0) - 1) < 1e-5);
});

test("embeddings.create: bad requests are bad_input errors naming the field and the limit", async () => {
  const bad = async (request, pattern) =>
    assert.rejects(createEmbeddings(embedder, request), (e) => e.code === "bad_input" && pattern.test(e.message), JSON.stringify(request));
  await bad({}, /'input' is required/);
  await bad({ input: "" }, /empty string/);
  await bad({ input: ["a", ""] }, /empty string \(input\[1\]\)/);
  await bad({ input: [] }, /empty array/);
  await bad({ input: ["a", [1, 2]] }, /mixes texts and token ids/);
  await bad({ input: "a", dimensions: 577 }, /'dimensions' is 577; the model's embeddings have 576/);
  await bad({ input: "a", encoding_format: "int8" }, /encoding_format/);
  await bad({ input: "a", temperature: 1 }, /unknown field 'temperature'/);
  await bad({ input: Array(2049).fill("a") }, /at most 2048/);
  await bad({ input: "word ".repeat(1100) }, /\d+ tokens; the context holds 1024/);
});
