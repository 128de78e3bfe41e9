// The single-threaded WebAssembly engine under Node: the same API the worker
// uses, checked against llama.cpp's golden outputs and for clear errors.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";

import { loadWasm, repoRoot } from "./wasm-module.mjs";

const modelPath = process.env.SMOLINFER_MODEL;
if (!modelPath) throw new Error("SMOLINFER_MODEL is not set: run the tests with 'make test', which fetches the model");
const golden = (name) => JSON.parse(fs.readFileSync(path.join(repoRoot, "tests", "golden", name), "utf8"));

const M = await loadWasm("st");
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

test("greedy chat continuations match llama.cpp token for token", () => {
  for (const c of golden("Q4_1/generation.json").cases.filter((c) => c.mode === "chat").slice(0, 3)) {
    const messages = [...(c.system ? [{ role: "system", content: c.system }] : []), { role: "user", content: c.text }];
    const prompt = engine.chatTokens(messages, true);
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
});

test("a second chat turn reuses the cached conversation", () => {
  const first = [{ role: "user", content: "Name a color." }];
  const p1 = engine.chatTokens(first, true).ids;
  engine.start(p1, { maxTokens: 8, temperature: 0 });
  let answer = "";
  let r;
  while (!(r = engine.next()).done) answer += r.text;
  const second = [...first, { role: "assistant", content: answer }, { role: "user", content: "Another one?" }];
  const stats = engine.start(engine.chatTokens(second, true).ids, { maxTokens: 4, temperature: 0 });
  assert.ok(stats.reusedTokens >= p1.length, `reused ${stats.reusedTokens} of ${p1.length}`);
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
  assert.match(engine.chatTokens([{ role: "robot", content: "x" }], true).error, /role 'robot'/);
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
  const fresh = await loadWasm("st"); // a trap leaves a module unusable: not the shared one
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
